//! The edge's fast path (`crate::http::app::FastPath`): which requests take it, and that
//! what it answers is what the router answers for the same request.

use axum::http::{HeaderValue, Method};
use switchyard::clock::Clock;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::Api;

use super::*;
use crate::http::app::FastPath;
use crate::http::edge::Shortcut as _;
use crate::http::origins::AllowedOrigins;
use crate::http::Live;
use crate::telemetry::insight::Insight;

const LISTED: &str = "http://localhost:3000";

/// A chat route `smart` and an embeddings route `vectors`, each on a scripted provider,
/// and one listed origin.
fn state() -> AppState {
    let chat = Arc::new(ScriptedProvider::new("m").otherwise(Step::text("hello there")));
    let vectors = Arc::new(ScriptedProvider::new("e"));
    let metrics = Arc::new(Metrics::new());
    let insight = Arc::new(Insight::new(Clock::system()));
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", chat).price(price()))
        .provider(ProviderSpec::new("embedder", vectors).price(price()))
        .route(Route::new("smart", &["primary"]))
        .route(Route::new("vectors", &["embedder"]).api(Api::Embeddings))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    shared.allowed_origins = AllowedOrigins::new(&[LISTED.to_owned()]);
    AppState(Arc::new(shared))
}

/// A request as a local client sends it: Host `127.0.0.1:4000`, a JSON body, and `extra`
/// headers (which may replace those).
fn request(method: Method, path: &str, body: &Value, extra: &[(&str, &str)]) -> Request<Body> {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::from(body.to_string()))
        .unwrap();
    let headers = req.headers_mut();
    headers.insert("host", HeaderValue::from_static("127.0.0.1:4000"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    for (k, v) in extra {
        let name = axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap();
        headers.insert(name, HeaderValue::from_str(v).unwrap());
    }
    req
}

fn messages_body(stream: bool) -> Value {
    json!({"model": "smart", "max_tokens": 50, "stream": stream,
           "messages": [{"role": "user", "content": "hello"}]})
}

fn responses_body(stream: bool) -> Value {
    json!({"model": "smart", "input": "hello", "store": false, "stream": stream})
}

fn embeddings_body() -> Value {
    json!({"model": "vectors", "input": "hello", "dimensions": 8})
}

#[test]
fn only_the_model_apis_posts_the_guard_lets_through_untouched_take_it() {
    let fast = FastPath::new(Live::new(state()));
    let chat = chat("smart");
    for (path, body) in [
        ("/v1/chat/completions", &chat),
        ("/v1/chat/completions?x=1", &chat),
        ("/v1/messages", &messages_body(false)),
        ("/v1/responses", &responses_body(false)),
        ("/v1/embeddings", &embeddings_body()),
    ] {
        let req = request(Method::POST, path, body, &[]);
        assert!(fast.answer(req).is_ok(), "{path} should take the fast path");
        // the request's own origin adds nothing either
        let own = request(
            Method::POST,
            path,
            body,
            &[("origin", "http://127.0.0.1:4000")],
        );
        assert!(fast.answer(own).is_ok(), "{path} from its own origin");
    }
    let refused_or_routed = [
        request(Method::GET, "/v1/chat/completions", &chat, &[]),
        request(Method::PUT, "/v1/chat/completions", &chat, &[]),
        request(Method::POST, "/v1/chat/completions/", &chat, &[]),
        request(Method::POST, "/v1/messages/count_tokens", &chat, &[]),
        request(Method::POST, "/v1/models", &chat, &[]),
        request(Method::POST, "/v1/responses/resp_1", &chat, &[]),
        // a listed origin gets CORS headers from the guard; a foreign one a 403
        request(
            Method::POST,
            "/v1/chat/completions",
            &chat,
            &[("origin", LISTED)],
        ),
        request(
            Method::POST,
            "/v1/chat/completions",
            &chat,
            &[("origin", "http://evil.example")],
        ),
        // 415 and 421 are the guard's
        request(
            Method::POST,
            "/v1/chat/completions",
            &chat,
            &[("content-type", "text/plain")],
        ),
        request(
            Method::POST,
            "/v1/embeddings",
            &chat,
            &[("host", "evil.example")],
        ),
    ];
    for req in refused_or_routed {
        let (method, uri, headers) = (
            req.method().clone(),
            req.uri().clone(),
            req.headers().clone(),
        );
        let back = fast
            .answer(req)
            .err()
            .unwrap_or_else(|| panic!("{method} {uri} {headers:?} took the fast path"));
        // handed back as it came, for the router
        assert_eq!(
            (back.method(), back.uri(), back.headers()),
            (&method, &uri, &headers)
        );
    }
}

/// Request ids, timestamps and latencies differ between two answers; nothing else may.
fn normalised(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if matches!(
                    k.as_str(),
                    "created" | "created_at" | "latency_ms" | "start_ms"
                ) {
                    *x = json!(0);
                } else {
                    normalised(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalised),
        Value::String(s) => {
            for prefix in ["chatcmpl-", "msg_", "resp_", "req_", "rs_", "fc_"] {
                if s.starts_with(prefix) {
                    *s = format!("{prefix}…");
                }
            }
        }
        _ => {}
    }
}

/// Status, content type, the names of the headers set, and the body (each JSON value, or
/// each SSE line's, normalised).
async fn seen(resp: Response) -> (StatusCode, String, Vec<String>, Vec<String>) {
    let status = resp.status();
    let content_type = header(&resp, "content-type").to_owned();
    // axum's router sets `content-length` from a body of known size; on the fast path
    // hyper writes the same header from the same size (tests/e2e/hostile.rs reads it)
    let length = resp.headers().get("content-length").cloned();
    let mut names: Vec<String> = (resp.headers().keys())
        .filter(|k| *k != "content-length")
        .map(|k| k.to_string())
        .collect();
    names.sort();
    let text = text_body(resp).await;
    if let Some(length) = length {
        assert_eq!(length.to_str().unwrap(), text.len().to_string());
    }
    let body = text
        .lines()
        .map(|line| {
            let (head, json) = match line.strip_prefix("data: ") {
                Some(rest) => ("data: ", rest),
                None => ("", line),
            };
            match serde_json::from_str::<Value>(json) {
                Ok(mut v) => {
                    normalised(&mut v);
                    format!("{head}{v}")
                }
                Err(_) => line.to_owned(),
            }
        })
        .collect();
    (status, content_type, names, body)
}

#[tokio::test]
async fn what_it_answers_is_what_the_router_answers() {
    let state = state();
    let fast = FastPath::new(Live::new(state.clone()));
    let bad_chat = json!({"model": "smart", "messages": [{"role": "user", "content": 5}]});
    let cases: Vec<(&str, Value)> = vec![
        ("/v1/chat/completions", chat("smart")),
        (
            "/v1/chat/completions",
            json!({"model": "smart", "stream": true, "stream_options": {"include_usage": true},
                   "messages": [{"role": "user", "content": "hello"}]}),
        ),
        ("/v1/chat/completions", bad_chat),
        ("/v1/chat/completions", chat("no-such-route")),
        ("/v1/chat/completions", json!("not an object")),
        ("/v1/messages", messages_body(false)),
        ("/v1/messages", messages_body(true)),
        ("/v1/messages", json!({"model": "smart", "messages": []})),
        ("/v1/responses", responses_body(false)),
        ("/v1/responses", responses_body(true)),
        ("/v1/responses", json!({"model": "smart", "input": 5})),
        ("/v1/embeddings", embeddings_body()),
        (
            "/v1/embeddings",
            json!({"model": "smart", "input": "hello"}),
        ),
    ];
    for (path, body) in cases {
        let routed = seen(call(&state, request(Method::POST, path, &body, &[])).await).await;
        let Ok(answer) = fast.answer(request(Method::POST, path, &body, &[])) else {
            panic!("{path} {body} did not take the fast path");
        };
        let fast_seen = seen(answer.await).await;
        assert_eq!(fast_seen, routed, "{path} {body}");
    }
}
