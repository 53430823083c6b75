//! Hostile and careless clients through `app()` with `oneshot`: megabyte strings where names
//! belong (refused by field, or cut, in every answer, log line and dashboard entry), and the
//! request guard (`crate::http::guard`): content type, `Origin`, and `Host` without keys.

use axum::http::HeaderValue;
use switchyard::clock::Clock;

use super::*;
use crate::http::origins::AllowedOrigins;
use crate::telemetry::insight::Insight;

/// 4 MiB: the size of value the attacks used.
const HUGE: usize = 4 << 20;
/// No answer to a huge value may be larger than this.
const SMALL_ANSWER: usize = 2048;

/// Routes `smart` and `other` on one scripted provider; the insight is the log's tap, as in
/// `serve` (the tap is handed the very entry the file writer serializes). Bodies up to
/// 8 MiB, so the huge values reach the handler.
fn server(keys: &[KeyToml], origins: &[&str]) -> (AppState, Arc<ScriptedProvider>) {
    let provider = Arc::new(ScriptedProvider::new("m"));
    let metrics = Arc::new(Metrics::new());
    let insight = Arc::new(Insight::new(Clock::system()));
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", provider.clone()).price(price()))
        .route(Route::new("smart", &["primary"]))
        .route(Route::new("other", &["primary"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let origins: Vec<String> = origins.iter().map(|o| (*o).to_owned()).collect();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    shared.max_body_bytes = 8 << 20;
    shared.allowed_origins = AllowedOrigins::new(&origins);
    let state = AppState(Arc::new(shared));
    (state, provider)
}

fn team_key() -> Vec<KeyToml> {
    vec![KeyToml {
        name: "team".into(),
        sha256: hash_token("sy-team"),
        routes: vec!["other".into()],
        ..KeyToml::default()
    }]
}

/// Status and body, with the body's size checked against [`SMALL_ANSWER`].
async fn small_answer(state: &AppState, req: Request<Body>) -> (StatusCode, Value) {
    let resp = call(state, req).await;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(
        bytes.len() < SMALL_ANSWER,
        "{status}: a {}-byte answer: {}…",
        bytes.len(),
        String::from_utf8_lossy(&bytes[..300])
    );
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn a_huge_model_is_refused_by_name_and_logged_cut() {
    let (state, provider) = server(&[], &[]);
    let (status, body) = small_answer(&state, post(&chat(&"m".repeat(HUGE)))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["param"], "model");
    assert_eq!(
        body["error"]["message"],
        "model: longer than 256 characters"
    );
    let entry = last_logged(&state);
    assert_eq!(entry.status, 400);
    assert_eq!(entry.api, "chat", "the line names the dialect");
    assert!(entry.route.len() < SMALL_ANSWER, "{}", entry.route.len());
    assert!(
        entry.route.ends_with(&format!("…[+{} bytes]", HUGE - 1024)),
        "the cut is marked: {}",
        &entry.route[1000..]
    );
    assert_eq!(provider.calls(), 0);
}

/// Issue 24 item 16: every dialect checks `model` against the name bound before it is used
/// (the Messages dialect took it out of the body first and checked what was left, so a
/// 1 MiB model was looked up and answered with a 404 quoting 3.9 KB of it).
#[tokio::test]
async fn a_huge_model_is_a_400_naming_it_in_every_dialect() {
    let (state, provider) = server(&[], &[]);
    let model = "m".repeat(1 << 20);
    let hi = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (
            "/v1/chat/completions",
            json!({"model": model, "messages": hi}),
        ),
        ("/v1/responses", json!({"model": model, "input": "hi"})),
        (
            "/v1/messages",
            json!({"model": model, "max_tokens": 16, "messages": hi}),
        ),
        (
            "/v1/messages/count_tokens",
            json!({"model": model, "messages": hi}),
        ),
        ("/v1/embeddings", json!({"model": model, "input": "hi"})),
    ];
    for (path, body) in cases {
        let req = Request::post(path)
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, body) = small_answer(&state, req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(message, "model: longer than 256 characters", "{path}");
        assert!(body.to_string().len() < 512, "{path}: {body}");
        let entry = last_logged(&state);
        assert_eq!(entry.status, 400, "{path}");
        assert!(entry.route.len() <= 1100, "{path}: {}", entry.route.len());
    }
    assert_eq!(provider.calls(), 0);
}

#[tokio::test]
async fn a_name_of_256_characters_is_a_name_and_257_are_too_many() {
    let (state, _) = server(&[], &[]);
    let longest = "é".repeat(256); // 512 bytes: characters are counted, not bytes
    let (status, body) = small_answer(&state, post(&chat(&longest))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&longest));
    assert_eq!(last_logged(&state).route, longest, "kept whole");
    let (status, _) = small_answer(&state, post(&chat(&"é".repeat(257)))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_huge_user_is_refused_by_name() {
    let (state, provider) = server(&[], &[]);
    let mut body = chat("smart");
    body["user"] = json!("u".repeat(HUGE));
    let (status, body) = small_answer(&state, post(&body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"]["param"], "user");
    assert_eq!(body["error"]["message"], "user: longer than 256 characters");
    assert_eq!(provider.calls(), 0);
}

#[tokio::test]
async fn huge_values_the_parser_quotes_are_cut_in_the_400() {
    let huge = "x".repeat(HUGE);
    let mut wrong_type = chat("smart");
    wrong_type["max_tokens"] = json!(huge);
    let mut unknown_part = chat("smart");
    unknown_part["messages"][0]["content"] = json!([{"type": huge, "text": "hi"}]);
    let mut role = chat("smart");
    role["messages"][0]["role"] = json!(huge);
    let mut tool_choice = chat("smart");
    tool_choice["tool_choice"] = json!(huge);
    let cases = [
        (wrong_type, "max_tokens", "expected u32"),
        (
            unknown_part,
            "messages[0].content[0].type",
            "expected `text` or `image_url`",
        ),
        (role, "messages[0].role", "is not one of system"),
        (tool_choice, "tool_choice", "is not one of auto"),
    ];
    let (state, provider) = server(&[], &[]);
    for (request, param, says) in cases {
        let (status, body) = small_answer(&state, post(&request)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{param}: {body}");
        assert_eq!(body["error"]["param"], param, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{param}: {message}");
        assert!(message.contains("xxx…[+"), "the cut is marked: {message}");
    }
    assert_eq!(provider.calls(), 0);
}

#[tokio::test]
async fn a_huge_path_is_cut_in_the_404() {
    let (state, _) = server(&[], &[]);
    let path = format!("/{}", "p".repeat(60_000));
    let req = Request::get(path.as_str()).body(Body::empty()).unwrap();
    let (status, body) = small_answer(&state, req).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "unknown_url");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("…[+59937 bytes]"),
        "{body}"
    );
}

#[tokio::test]
async fn an_insane_request_id_is_replaced_not_kept() {
    let (state, _) = server(&[], &[]);
    let mut req = post(&chat("smart"));
    req.headers_mut().insert(
        "x-request-id",
        HeaderValue::from_str(&"i".repeat(129)).unwrap(),
    );
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let id = header(&resp, "x-request-id").to_owned();
    assert!(id.starts_with("req_") && id.len() < 64, "{id}");
    assert_eq!(last_logged(&state).id, id);
}

#[tokio::test]
async fn an_unknown_route_lists_only_the_routes_the_key_may_use() {
    let (state, _) = server(&team_key(), &[]);
    let mut req = post(&chat("nope"));
    req.headers_mut()
        .insert("authorization", HeaderValue::from_static("Bearer sy-team"));
    let (status, body) = small_answer(&state, req).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(
        body["error"]["message"],
        r#"unknown route "nope"; routes key "team" may use: other"#
    );
    let (keyless, _) = server(&[], &[]);
    let (_, body) = small_answer(&keyless, post(&chat("nope"))).await;
    assert_eq!(
        body["error"]["message"],
        r#"unknown route "nope"; configured routes: smart, other"#
    );
}

/// A chat POST with this content type (none: no header).
fn typed(content_type: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/chat/completions");
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    req.body(Body::from(chat("smart").to_string())).unwrap()
}

#[tokio::test]
async fn a_post_body_must_be_declared_json() {
    let (state, provider) = server(&[], &[]);
    for ct in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
        None,
    ] {
        let (status, body) = small_answer(&state, typed(ct)).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct:?}");
        assert_eq!(body["error"]["code"], "unsupported_media_type", "{ct:?}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Content-Type: application/json"),
            "{body}"
        );
    }
    assert_eq!(provider.calls(), 0, "no refused request reached a provider");
    for ct in ["application/json", "Application/JSON; charset=utf-8"] {
        let resp = call(&state, typed(Some(ct))).await;
        assert_eq!(resp.status(), StatusCode::OK, "{ct}");
    }
}

#[tokio::test]
async fn a_post_body_must_be_declared_json_with_keys_too() {
    let (state, provider) = server(&team_key(), &[]);
    let mut req = typed(Some("text/plain"));
    req.headers_mut()
        .insert("authorization", HeaderValue::from_static("Bearer sy-team"));
    let (status, _) = small_answer(&state, req).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(provider.calls(), 0);
}

fn from_origin(origin: &str) -> Request<Body> {
    let mut req = post(&chat("smart"));
    req.headers_mut()
        .insert("origin", HeaderValue::from_str(origin).unwrap());
    req
}

#[tokio::test]
async fn a_foreign_origin_is_refused() {
    let (state, provider) = server(&[], &[]);
    for origin in [
        "http://evil.example",
        "null",
        "http://127.0.0.1:4001",
        "http://localhost:4000",
    ] {
        let (status, body) = small_answer(&state, from_origin(origin)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}");
        assert_eq!(body["error"]["code"], "origin_not_allowed");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("allowed_origins"),
            "{body}"
        );
    }
    assert_eq!(provider.calls(), 0);
    let resp = call(&state, from_origin("http://127.0.0.1:4000")).await;
    assert_eq!(resp.status(), StatusCode::OK, "its own origin");
    assert!(resp.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn a_listed_origin_is_served_with_cors() {
    let (state, provider) = server(&[], &["http://localhost:3000"]);
    let resp = call(&state, from_origin("http://localhost:3000")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "access-control-allow-origin"),
        "http://localhost:3000"
    );
    assert!(header(&resp, "access-control-expose-headers").contains("x-switchyard-provider"));
    assert_eq!(provider.calls(), 1);
    let preflight = Request::options("/v1/chat/completions")
        .header("origin", "http://localhost:3000")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .body(Body::empty())
        .unwrap();
    let resp = call(&state, preflight).await;
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        header(&resp, "access-control-allow-origin"),
        "http://localhost:3000"
    );
    assert!(header(&resp, "access-control-allow-methods").contains("POST"));
    assert!(header(&resp, "access-control-allow-headers").contains("content-type"));
    let (status, _) = small_answer(&state, from_origin("http://localhost:3001")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only what is listed");
}

fn to_host(host: &str, path: &str) -> Request<Body> {
    let req = if path == "/v1/chat/completions" {
        post(&chat("smart"))
    } else {
        Request::get(path).body(Body::empty()).unwrap()
    };
    let (mut parts, body) = req.into_parts();
    parts
        .headers
        .insert("host", HeaderValue::from_str(host).unwrap());
    Request::from_parts(parts, body)
}

#[tokio::test]
async fn without_keys_only_loopback_names_are_answered() {
    let (state, provider) = server(&[], &[]);
    for host in ["evil.example", "evil.example:4000", "10.0.0.7:4000"] {
        for path in [
            "/v1/chat/completions",
            "/admin/overview",
            "/admin/requests",
            "/",
        ] {
            let (status, body) = small_answer(&state, to_host(host, path)).await;
            assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}{path}");
            assert_eq!(body["error"]["code"], "host_not_allowed");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(host) && message.contains("[[keys]]"),
                "{message}"
            );
        }
    }
    assert_eq!(provider.calls(), 0);
    for host in [
        "127.0.0.1:4000",
        "localhost:4000",
        "[::1]:4000",
        "localhost",
    ] {
        let resp = call(&state, to_host(host, "/v1/chat/completions")).await;
        assert_eq!(resp.status(), StatusCode::OK, "{host}");
    }
    let no_host = app(state.clone())
        .oneshot(Request::get("/v1/models").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(no_host.status(), StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn with_keys_any_host_is_answered() {
    let (state, _) = server(&team_key(), &[]);
    let mut req = post(&chat("other"));
    req.headers_mut()
        .insert("authorization", HeaderValue::from_static("Bearer sy-team"));
    req.headers_mut()
        .insert("host", HeaderValue::from_static("gateway.example:4000"));
    assert_eq!(call(&state, req).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_dashboard_and_its_same_origin_fetches_work_without_keys() {
    let (state, _) = server(&[], &[]);
    for path in [
        "/",
        "/dashboard/dashboard.js",
        "/admin/overview",
        "/admin/requests",
    ] {
        // a page navigation and the page's fetches carry no Origin on GET ...
        let resp = call(&state, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        // ... and a browser that sends one sends the page's own
        let mut req = Request::get(path).body(Body::empty()).unwrap();
        req.headers_mut()
            .insert("origin", HeaderValue::from_static("http://127.0.0.1:4000"));
        assert_eq!(call(&state, req).await.status(), StatusCode::OK, "{path}");
    }
    // a rebound name is same-origin to the browser, and still refused
    let mut rebound = to_host("evil.example:4000", "/admin/requests");
    rebound.headers_mut().insert(
        "origin",
        HeaderValue::from_static("http://evil.example:4000"),
    );
    assert_eq!(
        call(&state, rebound).await.status(),
        StatusCode::MISDIRECTED_REQUEST
    );
}
