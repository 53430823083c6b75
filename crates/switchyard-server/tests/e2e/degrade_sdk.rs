//! Failover on default settings with the official `openai` Python SDK (issue 23): routes
//! with no field settings, `[openai (answering 500), anthropic]` and `[anthropic, openai]`.
//! `seed` and the penalties are answered by Anthropic without them (named as dropped);
//! `logprobs` is an error naming the skipped Anthropic provider and the field;
//! `reasoning_effort: "low"` with `max_tokens: 64` is answered by Anthropic without
//! thinking. The mock Anthropic (`upstream::StrictAnthropic`) refuses what Anthropic
//! refuses (a top-level field its Messages reference does not define: `seed: Extra inputs
//! are not permitted`; a thinking budget under 1024 or not below `max_tokens`), so a
//! leaked field fails the test. The client-side checks live in
//! `tests/python/test_degrade_sdk.py`.

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    anthropic_provider, client_key, key_env, openai_provider, require_python, route, run_python,
    Scratch, Server, CHAT_PATH,
};
use crate::upstream::{anthropic_refuses, bodies, error_response, StrictAnthropic};

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-degrade-token-8c41f0a2";
const CLAUDE: &str = "claude-sonnet-4-5-20250929";

/// Anthropic's answer to every request it accepts: "Paris.".
fn paris(_: &Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_degrade", "type": "message", "role": "assistant", "model": CLAUDE,
        "content": [{"type": "text", "text": "Paris."}], "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 3,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}))
}

#[tokio::test]
async fn default_routes_fail_over_past_fields_anthropic_cannot_honour() {
    require_python("openai");
    let gpt = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(error_response(
            500,
            "The server had an error",
            "server_error",
            None,
        ))
        .mount(&gpt)
        .await;
    let claude = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(StrictAnthropic(paris))
        .mount(&claude)
        .await;
    let config = format!(
        "{}{}{}{}{}",
        openai_provider("openai-down", &gpt.uri(), ""),
        anthropic_provider("claude", CLAUDE, &claude.uri()),
        route("failover", &["openai-down", "claude"], ""),
        route("claude-first", &["claude", "openai-down"], ""),
        client_key("sdk", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "degrade"), &config, &key_env());
    let base = format!("{}/v1", server.base);
    run_python(
        "test_degrade_sdk.py",
        &[&base, TOKEN],
        "all degrade checks passed",
        &[&server],
    );

    // Anthropic answered seed, the penalties and the thinking request, each without what
    // it cannot take; it was never asked for log probabilities
    let got = bodies(&claude).await;
    assert_eq!(got.len(), 3, "{got:?}");
    for body in &got {
        assert_eq!(anthropic_refuses(body), None, "{body}");
        for field in [
            "seed",
            "frequency_penalty",
            "presence_penalty",
            "logprobs",
            "thinking",
        ] {
            assert!(body.get(field).is_none(), "{field} leaked: {body}");
        }
    }
    assert_eq!(got[2]["max_tokens"], 64);
    assert!(!bodies(&gpt).await.is_empty(), "OpenAI was tried first");
}
