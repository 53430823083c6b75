//! Memory amplification (`crate::http::dialects::expansion`, `docs/security.md`): a body of
//! too many tiny items or nested too deep is refused before it is parsed, on every
//! dialect; a `previous_response_id` whose stored conversation would take the request past
//! its bounds is refused naming it; and the native body a provider of the client's own
//! API gets is the client's bytes, bar the fields the gateway sets.

use super::*;
use crate::config::ExpansionLimits;

/// Routes `smart` on one scripted provider; bodies up to 8 MiB; `limits` as the bounds.
fn server(limits: ExpansionLimits) -> AppState {
    let provider = Arc::new(ScriptedProvider::new("m"));
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", provider).price(price()))
        .route(Route::new("smart", &["primary"]))
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), Arc::new(Metrics::new()));
    shared.max_body_bytes = 8 << 20;
    shared.expansion = limits;
    AppState(Arc::new(shared))
}

fn post_to(path: &str, body: String) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(Body::from(body))
        .unwrap()
}

/// `n` empty objects, comma-separated.
fn tiny(n: usize) -> String {
    vec!["{}"; n].join(",")
}

#[tokio::test]
async fn a_body_of_too_many_tiny_items_is_413_naming_the_setting_on_every_dialect() {
    let state = server(ExpansionLimits::default());
    let items = tiny(131_072);
    let bodies = [
        (
            "/v1/chat/completions",
            format!(r#"{{"model":"smart","messages":[{items}]}}"#),
        ),
        (
            "/v1/responses",
            format!(r#"{{"model":"smart","input":[{items}]}}"#),
        ),
        (
            "/v1/messages",
            format!(r#"{{"model":"smart","max_tokens":5,"messages":[{items}]}}"#),
        ),
        (
            "/v1/embeddings",
            format!(r#"{{"model":"smart","input":[{items}]}}"#),
        ),
    ];
    for (path, body) in bodies {
        let resp = call(&state, post_to(path, body)).await;
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let text = text_body(resp).await;
        // the items, the object and the array holding them, and `model` (and `max_tokens`)
        let n = if path == "/v1/messages" {
            "131,076"
        } else {
            "131,075"
        };
        let said = format!(
            "request expands to {n} JSON items, more than the 100,000 allowed ([server] \
             max_request_items)"
        );
        assert!(text.contains(&said), "{path}: {text}");
    }
    // the same request, within the bound, is answered
    let body = format!(
        r#"{{"model":"smart","input":"hi","metadata":{{}},"x":[{}]}}"#,
        tiny(10)
    );
    let resp = call(&state, post_to("/v1/responses", body)).await;
    assert_ne!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_body_nested_too_deep_is_400_naming_the_setting() {
    let state = server(ExpansionLimits::default());
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let body = format!(r#"{{"model":"smart","input":"hi","metadata":{deep}}}"#);
    let resp = call(&state, post_to("/v1/responses", body)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let got = json_body(resp).await;
    assert_eq!(
        got["error"]["message"],
        "request nests objects and arrays 101 deep, more than the 64 allowed ([server] \
         max_request_depth)"
    );
    assert_eq!(got["error"]["code"], "request_too_deep");
}

/// A stored response and a continuation of it: the continuation's own body is small, the
/// conversation it names is what passes the bound.
#[tokio::test]
async fn a_previous_response_id_past_the_bounds_is_413_naming_it() {
    let limits = ExpansionLimits {
        max_expanded_bytes: 64 << 10,
        ..ExpansionLimits::default()
    };
    let state = server(limits);
    let first = json!({"model": "smart", "input": "x".repeat(40 << 10)});
    let resp = call(&state, post_to("/v1/responses", first.to_string())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let id = json_body(resp).await["id"].as_str().unwrap().to_owned();
    let next = json!({"model": "smart", "input": "y".repeat(30 << 10),
        "previous_response_id": id});
    let resp = call(&state, post_to("/v1/responses", next.to_string())).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let message = json_body(resp).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with(&format!(
            "the stored conversation of previous_response_id {id:?} is "
        )),
        "{message}"
    );
    assert!(
        message.contains("([server] max_expanded_bytes)"),
        "{message}"
    );
    // a small continuation of it fits
    let small = json!({"model": "smart", "input": "more", "previous_response_id": id});
    let resp = call(&state, post_to("/v1/responses", small.to_string())).await;
    assert_eq!(resp.status(), StatusCode::OK);

    // items: a stored conversation of many small messages
    let state = server(ExpansionLimits {
        max_items: 2_000,
        ..ExpansionLimits::default()
    });
    let many: Vec<Value> = (0..300)
        .map(|i| json!({"role": "user", "content": format!("m{i}")}))
        .collect();
    let first = json!({"model": "smart", "input": many});
    let resp = call(&state, post_to("/v1/responses", first.to_string())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let id = json_body(resp).await["id"].as_str().unwrap().to_owned();
    let next = json!({"model": "smart", "input": many, "previous_response_id": id});
    let resp = call(&state, post_to("/v1/responses", next.to_string())).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let message = json_body(resp).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains(&format!(
            "previous_response_id {id:?} with this request expands to"
        )),
        "{message}"
    );
    assert!(message.contains("max_request_items"), "{message}");
}

/// An OpenAI provider with `api = "responses"` gets the client's body as written: key
/// order, numbers as spelled (`1E-1`, a float past f64's shortest form) and every field
/// the gateway does not set survive; `model` and `stream` are the call's.
#[tokio::test]
async fn a_native_body_reaches_the_upstream_byte_for_byte() {
    use crate::config::{build_gateway, parse, Wiring};
    use wiremock::matchers::{method, path};

    let upstream = wiremock::MockServer::start().await;
    let answer = json!({"id": "resp_up", "object": "response", "status": "completed",
        "model": "gpt-up", "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
        "usage": {"input_tokens": 9, "output_tokens": 3}});
    wiremock::Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(answer))
        .expect(1)
        .mount(&upstream)
        .await;
    let text = format!(
        "[[providers]]\nname = \"up\"\nkind = \"openai\"\nmodel = \"gpt-up\"\nbase_url = \"{}/v1\"\napi = \"responses\"\napi_key_env = \"UP_KEY\"\nprice = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n[[routes]]\nname = \"smart\"\nproviders = [\"up\"]\n",
        upstream.uri()
    );
    let config = parse(&text, "up.toml").unwrap();
    let env = |v: &str| (v == "UP_KEY").then(|| "up-key-for-test".to_owned());
    let built = build_gateway(&config, &env, false, Wiring::default()).unwrap();
    let shared = Shared::for_tests(built.gateway, KeyStore::new(&[]), Arc::new(Metrics::new()));
    let state = AppState(Arc::new(shared));
    let client = r#"{"store":false,"model":"smart","top_p":1E-1,"temperature":1.0000000000000002,"metadata":{"zeta":"1","alpha":"2"},"input":"hi \u00e9","tools":[{"type":"web_search"}]}"#;
    let resp = call(&state, post_to("/v1/responses", client.to_owned())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = &upstream.received_requests().await.unwrap()[0];
    assert_eq!(
        String::from_utf8_lossy(&sent.body),
        r#"{"store":false,"model":"gpt-up","top_p":1E-1,"temperature":1.0000000000000002,"metadata":{"zeta":"1","alpha":"2"},"input":"hi \u00e9","tools":[{"type":"web_search"}],"stream":false}"#
    );
}
