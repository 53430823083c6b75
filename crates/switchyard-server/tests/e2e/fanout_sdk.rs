//! `n=2` from the official `openai` Python SDK on a route `[openai (down), anthropic]` with
//! no field settings (issue 23): OpenAI answers 500, the proxy fails over to Anthropic,
//! which has no `n`, and Anthropic answers twice — one call per answer — plain and
//! streamed. The Anthropic mock (`upstream::StrictAnthropic`) refuses any field Messages
//! does not define (`n` first) with Anthropic's 400 `<field>: Extra inputs are not
//! permitted`, so a leaked field fails the test. The client-side checks live in
//! `tests/python/test_fanout_sdk.py`; this test stands up the mocks and the proxy and
//! checks what each upstream received. Needs the SDK in `$SWITCHYARD_PYTHON` (fails with
//! the install command, never skips).

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    anthropic_provider, client_key, key_env, openai_provider, require_python, route, run_python,
    Scratch, Server, CHAT_PATH,
};
use crate::upstream::{bodies, StrictAnthropic};

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-fanout-sdk-token-5c02e1";
const CLAUDE: &str = "claude-sonnet-4-5";

/// Anthropic's Messages API streaming `text`: 7 input and 2 output tokens.
fn events(text: &str) -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_fan", "type": "message",
            "role": "assistant", "model": CLAUDE, "content": [], "stop_reason": null,
            "usage": {"input_tokens": 7, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
            "stop_sequence": null}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    (events.iter())
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Anthropic's answers to the requests it accepts: "Red." then "Blue." (alternating by
/// call), 7 input and 2 output tokens a call, plain or streamed.
fn red_then_blue() -> impl Fn(&Value) -> ResponseTemplate {
    let calls = AtomicUsize::new(0);
    move |body| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        let text = if n.is_multiple_of(2) { "Red." } else { "Blue." };
        if body["stream"] == true {
            return ResponseTemplate::new(200).set_body_raw(events(text), "text/event-stream");
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_fan", "type": "message", "role": "assistant", "model": CLAUDE,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 2}}))
    }
}

#[tokio::test]
async fn openai_sdk_n_2_fails_over_to_anthropic_answering_once_per_call() {
    require_python("openai");
    let openai = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({"error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error", "param": null, "code": null}})))
        .mount(&openai)
        .await;
    let anthropic = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(StrictAnthropic(red_then_blue()))
        .mount(&anthropic)
        .await;
    let config = format!(
        "{}{}{}{}",
        openai_provider("gpt", &openai.uri(), ""),
        anthropic_provider("claude", CLAUDE, &anthropic.uri()),
        route("fanout", &["gpt", "claude"], ""),
        client_key("python", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "fanout-sdk"), &config, &key_env());
    let base = format!("{}/v1", server.base);
    run_python(
        "test_fanout_sdk.py",
        &[&base, TOKEN],
        "all fan-out SDK checks passed",
        &[&server],
    );

    // OpenAI was asked for both answers at once (it takes `n`), and failed
    let asked = bodies(&openai).await;
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|b| b["n"] == 2), "{asked:?}");
    // Anthropic: one call per answer, none carrying `n`; two plain, two streamed
    let asked = bodies(&anthropic).await;
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked.iter().all(|b| b.get("n").is_none()), "{asked:?}");
    let streamed = asked.iter().filter(|b| b["stream"] == true).count();
    assert_eq!(streamed, 2, "{asked:?}");
}
