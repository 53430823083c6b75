//! Router tests: every endpoint and error through `app()` with `oneshot`, over scripted
//! providers (no sockets, paused time where timing matters).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use switchyard::provider::scripted::{ScriptedProvider, Step, StreamStep};
use switchyard::{ErrorKind, Gateway, Money, Price, ProviderSpec, Route};
use tower::ServiceExt as _;

use crate::access::keys::{hash_token, KeyStore};
use crate::config::KeyToml;
use crate::http::{app, AppState, Shared};
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;

mod admission;
mod amplification;
mod anthropic_out;
mod cache;
mod dashboard;
mod embeddings;
mod fast_path;
mod fidelity;
mod fields;
mod hostile;
mod messages;
mod messages_beta;
mod raw_items;
mod recovery;
mod responses;
mod surcharges;
mod threads;
mod wildcard;

struct Fixture {
    state: AppState,
    primary: Arc<ScriptedProvider>,
    backup: Arc<ScriptedProvider>,
}

fn price() -> Price {
    Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap()
}

fn fixture(
    primary: ScriptedProvider,
    backup: ScriptedProvider,
    keys: &[KeyToml],
    route: Route,
) -> Fixture {
    let (primary, backup) = (Arc::new(primary), Arc::new(backup));
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new("primary", primary.clone())
                .price(price())
                .max_attempts(1),
        )
        .provider(ProviderSpec::new("backup", backup.clone()).price(price()))
        .route(route)
        .route(Route::new("other", &["backup"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    shared.max_body_bytes = 2048;
    let state = AppState(Arc::new(shared));
    Fixture {
        state,
        primary,
        backup,
    }
}

fn basic() -> Fixture {
    fixture(
        ScriptedProvider::new("primary-model"),
        ScriptedProvider::new("backup-model"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    )
}

/// A client key `name` whose token is `token`, on every route.
fn key(name: &str, token: &str) -> KeyToml {
    KeyToml {
        name: name.into(),
        sha256: hash_token(token),
        routes: vec!["*".into()],
        ..KeyToml::default()
    }
}

/// The newest request-log line (the dashboard's newest entry).
fn last_logged(state: &AppState) -> crate::telemetry::log::LogEntry {
    state
        .insight
        .recent(1)
        .pop()
        .expect("the request was logged")
}

/// Send `req` as a local client would: addressed to `127.0.0.1:4000` unless it names a Host.
async fn call(state: &AppState, mut req: Request<Body>) -> Response {
    req.headers_mut()
        .entry("host")
        .or_insert(axum::http::HeaderValue::from_static("127.0.0.1:4000"));
    app(state.clone()).oneshot(req).await.unwrap()
}

fn post(body: &Value) -> Request<Body> {
    Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

async fn json_body(resp: Response) -> Value {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
}

async fn text_body(resp: Response) -> String {
    String::from_utf8(
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap()
}

fn header<'a>(resp: &'a Response, name: &str) -> &'a str {
    resp.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn plain_completion_says_who_answered() {
    let f = basic();
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "false");
    assert_eq!(header(&resp, "x-switchyard-attempts"), "1");
    // 10 input tokens at $1/MTok + 21 output at $2/MTok
    assert_eq!(header(&resp, "x-switchyard-cost-usd"), "0.000052");
    assert!(header(&resp, "x-request-id").starts_with("req_"));
    let body = json_body(resp).await;
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "primary-model");
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "ok from primary-model"
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["usage"]["prompt_tokens"], 10);
    assert_eq!(body["switchyard"]["provider"], "primary");
    assert_eq!(body["switchyard"]["attempts"][0]["outcome"], "success");
}

#[tokio::test]
async fn failover_is_visible_in_headers_and_body() {
    let f = fixture(
        ScriptedProvider::new("primary-model").then(Step::fail(ErrorKind::Overloaded)),
        ScriptedProvider::new("backup-model"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    assert_eq!(header(&resp, "x-switchyard-attempts"), "2");
    let body = json_body(resp).await;
    assert_eq!(body["model"], "backup-model", "the model that answered");
    assert_eq!(body["switchyard"]["attempts"][0]["outcome"], "failed");
    assert_eq!(body["switchyard"]["attempts"][0]["kind"], "overloaded");
    assert_eq!(f.backup.calls(), 1);
}

#[tokio::test]
async fn client_mistakes_are_400_naming_the_field() {
    let f = basic();
    let resp = call(
        &f.state,
        post(&json!({"model": "smart", "messages": [{"role": "wizard", "content": "x"}]})),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "messages[0].role");
    let bad = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Body::from("{oops"))
        .unwrap();
    let resp = call(&f.state, bad).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert!(json_body(resp).await["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert_eq!(f.primary.calls(), 0);
}

#[tokio::test]
async fn unknown_model_is_404_listing_the_routes() {
    let f = basic();
    let resp = call(&f.state, post(&chat("gpt-5"))).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], "model_not_found");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("smart") && msg.contains("other"), "{msg}");
}

#[tokio::test]
async fn oversized_body_is_413() {
    let f = basic();
    let big =
        json!({"model": "smart", "messages": [{"role": "user", "content": "x".repeat(5000)}]});
    let resp = call(&f.state, post(&big)).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json_body(resp).await["error"]["code"], "request_too_large");
}

#[tokio::test]
async fn keys_gate_access_and_routes() {
    let keys = [KeyToml {
        name: "team".into(),
        sha256: hash_token("sy-good"),
        routes: vec!["other".into()],
        ..KeyToml::default()
    }];
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &keys,
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("other"))).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        json_body(resp).await["error"]["type"],
        "authentication_error"
    );

    let with_key = |model: &str, token: &str| {
        Request::post("/v1/chat/completions")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from(chat(model).to_string()))
            .unwrap()
    };
    let resp = call(&f.state, with_key("other", "sy-bad")).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let resp = call(&f.state, with_key("smart", "sy-good")).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = call(&f.state, with_key("other", "sy-good")).await;
    assert_eq!(resp.status(), StatusCode::OK);

    let models = Request::get("/v1/models")
        .header("x-api-key", "sy-good")
        .body(Body::empty())
        .unwrap();
    let body = json_body(call(&f.state, models).await).await;
    let ids: Vec<_> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(ids, [json!("other")], "a key sees only its routes");
}

#[tokio::test]
async fn budget_refusal_is_402() {
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]).budget(Money::from_usd(0.000_001)),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED);
    assert_eq!(json_body(resp).await["error"]["code"], "budget_exceeded");
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

#[tokio::test]
async fn all_failed_is_502_with_a_per_attempt_summary() {
    let f = fixture(
        ScriptedProvider::new("p").then(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("b").then_n(2, &Step::fail(ErrorKind::Connection)),
        &[],
        Route::new("smart", &["primary", "backup"]).retry(switchyard::retry::RetryPolicy {
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            ..Default::default()
        }),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], "all_providers_failed");
    let outcomes: Vec<_> = body["error"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].clone())
        .collect();
    assert_eq!(
        outcomes,
        [
            json!("failed:server"),
            json!("failed:connection"),
            json!("failed:connection")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn deadline_is_504() {
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::Hang),
        ScriptedProvider::new("b").otherwise(Step::Hang),
        &[],
        Route::new("smart", &["primary", "backup"]).deadline(Duration::from_secs(3)),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(json_body(resp).await["error"]["code"], "deadline_exceeded");
}

#[tokio::test]
async fn content_filter_is_returned_as_itself() {
    let err =
        switchyard::ProviderError::new(ErrorKind::ContentFiltered, "flagged by the safety system")
            .with_status(400);
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Fail(err)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], "content_filter");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("flagged by the safety system"));
    assert_eq!(f.backup.calls(), 0);
}

/// Parse an SSE body into its `data:` payloads.
fn events(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn streamed_completion_ends_with_usage_and_done() {
    let f = fixture(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .otherwise(Step::stream_words(&["Hel", "lo ", "there."])),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["Hel", "lo ", "there."])),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = chat("smart");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "content-type"), "text/event-stream");
    assert_eq!(
        header(&resp, "x-switchyard-provider"),
        "backup",
        "failed over before the first token"
    );
    let ev = events(&text_body(resp).await);
    assert_eq!(ev.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello there.");
    let finish: Vec<_> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str())
        .collect();
    assert_eq!(finish, ["stop"]);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert_eq!(last["switchyard"]["provider"], "backup");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
}

#[tokio::test]
async fn broken_stream_without_rescue_ends_in_an_error_event_and_no_done() {
    let steps = vec![
        StreamStep::Chunk(switchyard::ChatChunk {
            text: "Half an ans".into(),
            ..Default::default()
        }),
        StreamStep::End,
    ];
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(steps)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = chat("smart");
    body["stream"] = json!(true);
    let ev = events(&text_body(call(&f.state, post(&body)).await).await);
    assert_ne!(ev.last().unwrap(), "[DONE]");
    let last: Value = serde_json::from_str(ev.last().unwrap()).unwrap();
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stream closed before the finish signal"),
        "{last}"
    );
    assert!(!ev.iter().any(|e| e == "[DONE]"));
}

#[tokio::test]
async fn models_health_and_readiness() {
    let f = basic();
    let body = json_body(
        call(
            &f.state,
            Request::get("/v1/models").body(Body::empty()).unwrap(),
        )
        .await,
    )
    .await;
    assert_eq!(body["object"], "list");
    assert_eq!(body["data"][0]["id"], "smart");
    let resp = call(
        &f.state,
        Request::get("/healthz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = call(
        &f.state,
        Request::get("/readyz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    f.state
        .ready
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let resp = call(
        &f.state,
        Request::get("/readyz").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    let resp = call(&f.state, Request::get("/nope").body(Body::empty()).unwrap()).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn admin_health_and_metrics_report_breakers_and_attempts() {
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Auth)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    assert_eq!(
        call(&f.state, post(&chat("smart"))).await.status(),
        StatusCode::OK
    );
    let health = json_body(
        call(
            &f.state,
            Request::get("/admin/health").body(Body::empty()).unwrap(),
        )
        .await,
    )
    .await;
    let primary = health["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "primary")
        .unwrap()
        .clone();
    assert_eq!(primary["state"], "auth_failed");
    let metrics = text_body(
        call(
            &f.state,
            Request::get("/metrics").body(Body::empty()).unwrap(),
        )
        .await,
    )
    .await;
    assert!(metrics.contains("switchyard_attempts_total"), "{metrics}");
    assert!(metrics.contains("auth"), "{metrics}");
}

fn keyed_request(token: &str) -> Request<Body> {
    Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(chat("smart").to_string()))
        .unwrap()
}

#[tokio::test]
async fn key_rate_limits_answer_429_with_retry_after() {
    let keys = [KeyToml {
        name: "tight".into(),
        sha256: hash_token("sy-tight"),
        routes: vec!["*".into()],
        rpm: Some(1),
        ..KeyToml::default()
    }];
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &keys,
        Route::new("smart", &["primary", "backup"]),
    );
    assert_eq!(
        call(&f.state, keyed_request("sy-tight")).await.status(),
        StatusCode::OK
    );
    let resp = call(&f.state, keyed_request("sy-tight")).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = header(&resp, "retry-after").parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(
        json_body(resp).await["error"]["code"],
        "rate_limit_exceeded"
    );
    assert_eq!(
        f.primary.calls(),
        1,
        "the limited request never reached a provider"
    );
}

#[tokio::test]
async fn key_token_limits_count_what_calls_used() {
    let keys = [KeyToml {
        name: "tokens".into(),
        sha256: hash_token("sy-tokens"),
        routes: vec!["*".into()],
        tpm: Some(15),
        ..KeyToml::default()
    }];
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &keys,
        Route::new("smart", &["primary", "backup"]),
    );
    // the scripted answer ("ok from p") uses 10 input + 9 output tokens: over 15 after one call
    assert_eq!(
        call(&f.state, keyed_request("sy-tokens")).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        call(&f.state, keyed_request("sy-tokens")).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

#[tokio::test]
async fn key_budgets_refuse_with_402_before_dispatch() {
    let keys = [KeyToml {
        name: "frugal".into(),
        sha256: hash_token("sy-frugal"),
        routes: vec!["*".into()],
        budget_usd: Some(0.000_001),
        budget_period: Some("day".into()),
        ..KeyToml::default()
    }];
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &keys,
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, keyed_request("sy-frugal")).await;
    assert_eq!(resp.status(), StatusCode::PAYMENT_REQUIRED);
    let body = json_body(resp).await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("key:frugal:day:"),
        "{body}"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

#[tokio::test]
async fn usage_the_vendor_did_not_report_is_absent_not_zero() {
    let no_usage = switchyard::ProviderReply {
        text: "hi".into(),
        finish_reason: Some(switchyard::chat::FinishReason::Stop),
        ..Default::default()
    };
    let chunk = switchyard::ChatChunk {
        text: "hi".into(),
        finish_reason: Some(switchyard::chat::FinishReason::Stop),
        ..Default::default()
    };
    let f = fixture(
        ScriptedProvider::new("p")
            .then(Step::Reply(no_usage))
            .then(Step::Stream(vec![StreamStep::Chunk(chunk)])),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(header(&resp, "x-switchyard-cost-usd"), "unknown");
    let body = json_body(resp).await;
    assert!(body.get("usage").is_none(), "{body}");
    assert_eq!(body["switchyard"]["cost_usd"], Value::Null);

    let mut req = chat("smart");
    req["stream"] = json!(true);
    req["stream_options"] = json!({"include_usage": true});
    let ev = events(&text_body(call(&f.state, post(&req)).await).await);
    let last: Value = serde_json::from_str(&ev[ev.len() - 2]).unwrap();
    assert_eq!(last["usage"], Value::Null, "{last}");
    assert_eq!(last["switchyard"]["cost_usd"], Value::Null, "{last}");
}

/// An answer's reasoning reaches a Chat Completions client as `reasoning_content`, as
/// OpenAI-compatible reasoning servers return it (the signature has no place there); a
/// client's `reasoning_content` in history is accepted and sent to no vendor.
#[tokio::test]
async fn reasoning_is_reasoning_content_and_history_reasoning_is_left_out() {
    let reply = switchyard::ProviderReply {
        text: "9.11 < 9.8".into(),
        thinking: vec![switchyard::chat::Thinking {
            text: "Compare the decimals.".into(),
            signature: Some("c2ln".into()),
            redacted: None,
        }],
        ..switchyard::ProviderReply::default()
    };
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::Reply(reply)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let mut body = chat("smart");
    body["messages"] = json!([
        {"role": "user", "content": "Which is larger?"},
        {"role": "assistant", "content": "Let me think.", "reasoning_content": "Earlier thoughts."},
        {"role": "user", "content": "Well?"}
    ]);
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let message = json_body(resp).await["choices"][0]["message"].clone();
    assert_eq!(message["content"], "9.11 < 9.8");
    assert_eq!(message["reasoning_content"], "Compare the decimals.");
    let sent = &f.primary.requests()[0];
    assert!(sent.messages.iter().all(|m| m.thinking.is_empty()));
    assert_eq!(sent.messages[1].joined_text(), "Let me think.");
    // no reasoning: no field
    let f = basic();
    let message = json_body(call(&f.state, post(&chat("smart"))).await).await["choices"][0]
        ["message"]
        .clone();
    assert!(message.get("reasoning_content").is_none(), "{message}");
}

#[tokio::test]
async fn streamed_reasoning_is_delta_reasoning_content_before_the_text() {
    let thinking = |text: &str, signature: Option<&str>| {
        StreamStep::Chunk(switchyard::ChatChunk {
            thinking: vec![switchyard::chat::ThinkingDelta {
                index: 0,
                text: text.into(),
                signature: signature.map(str::to_owned),
                redacted: None,
            }],
            ..Default::default()
        })
    };
    let Step::Stream(words) = Step::stream_words(&["9.11 ", "< 9.8"]) else {
        unreachable!()
    };
    let mut steps = vec![
        thinking("Compare ", None),
        thinking("the decimals.", None),
        thinking("", Some("c2ln")),
    ];
    steps.extend(words);
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(steps)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let mut body = chat("smart");
    body["stream"] = json!(true);
    let ev = events(&text_body(call(&f.state, post(&body)).await).await);
    let deltas: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).unwrap()["choices"][0]["delta"].clone())
        .collect();
    let reasoning: Vec<&str> = deltas
        .iter()
        .filter_map(|d| d["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, ["Compare ", "the decimals."]);
    assert_eq!(
        deltas.len(),
        1 + 2 + 2 + 1,
        "role, two reasoning pieces (the signature alone sends nothing), two words, finish: {deltas:?}"
    );
    assert!(deltas[1].get("content").is_none(), "{:?}", deltas[1]);
    let text: String = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "9.11 < 9.8");
}
