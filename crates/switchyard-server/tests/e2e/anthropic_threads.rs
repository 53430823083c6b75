//! The official `anthropic` SDK's `client.beta.messages.tool_runner(...)` with its
//! defaults — a message thread (`thread: create`, then `continue` with only the tool
//! result) — completing a tool loop through the gateway: across a failover from a 529ing
//! Anthropic to OpenAI on an untuned route, and across two replicas sharing Redis (turn 1
//! on one, turn 2 on the other). The client-side checks live in
//! `tests/python/test_anthropic_threads.py`; this file stands up the mock vendors and the
//! gateways and checks what each vendor saw: the whole conversation on the second turn (the
//! gateway expanded the `continue`), never `thread` or the threads beta. The mocks
//! (`upstream::StrictOpenAi`, `upstream::StrictAnthropic`) refuse what their vendor refuses
//! (fields it does not define, a tool result without its call), so a leaked field or a turn
//! sent without its history fails the test.

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::anthropic_sdk::{anthropic_provider, claude};
use crate::support::{
    client_key, key_env, openai_provider, require_python, route, run_python, Scratch, Server,
    CHAT_PATH,
};
use crate::upstream::{completion, strings, text_of, StrictAnthropic, StrictOpenAi};

const SCRIPT: &str = "test_anthropic_threads.py";
const PASSED: &str = "all anthropic threads checks passed";
/// The client token the script authenticates with (as `x-api-key`).
const TOKEN: &str = "sy-e2e-anthropic-threads-token-4d0b7e";
const BETA: &str = "message-threads-2026-08-12";

/// OpenAI's answers: a tool result gets what the tool said, a request offering
/// `get_weather` a call to it.
fn gpt_answers(body: &Value) -> ResponseTemplate {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(tool) = messages.iter().rev().find(|m| m["role"] == "tool") {
        let said = text_of(&tool["content"]);
        return ResponseTemplate::new(200)
            .set_body_json(completion(&format!("The tool says: {said}")));
    }
    if body["tools"].to_string().contains("get_weather") {
        let mut call = completion("");
        call["choices"][0]["message"] = json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_w1", "type": "function", "function":
                {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]});
        call["choices"][0]["finish_reason"] = json!("tool_calls");
        return ResponseTemplate::new(200).set_body_json(call);
    }
    ResponseTemplate::new(200).set_body_json(completion("Paris"))
}

/// Anthropic's answers: a tool result gets what the tool said, anything else a call to
/// `get_weather`.
fn claude_answers(body: &Value) -> ResponseTemplate {
    let last = body["messages"].as_array().and_then(|m| m.last().cloned());
    let said = last.as_ref().and_then(|m| {
        m["content"]
            .as_array()?
            .iter()
            .find(|b| b["type"] == "tool_result")
            .map(|b| text_of(&b["content"]))
    });
    let (content, stop) = match said {
        Some(said) => (
            json!([{"type": "text", "text": format!("The tool says: {said}")}]),
            "end_turn",
        ),
        None => (
            json!([{"type": "tool_use", "id": "toolu_w1", "name": "get_weather",
                    "input": {"city": "Paris"}}]),
            "tool_use",
        ),
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_vendor01", "type": "message", "role": "assistant",
        "model": "claude-sonnet-5-20260101", "content": content,
        "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 30, "output_tokens": 9}}))
}

/// The JSON bodies a mock received at `at`, with their `anthropic-beta` header.
async fn bodies(server: &MockServer, at: &str) -> Vec<(Value, String)> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == at)
        .map(|r| {
            let beta = r
                .headers
                .get("anthropic-beta")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            (serde_json::from_slice(&r.body).unwrap(), beta)
        })
        .collect()
}

#[tokio::test]
async fn the_sdks_default_tool_runner_fails_over_mid_thread_to_openai() {
    require_python("anthropic");
    let overloaded = claude(ResponseTemplate::new(404)).await;
    let gpt = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(StrictOpenAi(gpt_answers))
        .mount(&gpt)
        .await;
    // an untuned route, as the README writes one
    let config = format!(
        "{}{}{}{}",
        anthropic_provider("claude", &overloaded.uri()),
        openai_provider("gpt", &gpt.uri(), ""),
        route("claude-sonnet-5", &["claude", "gpt"], ""),
        client_key("sdk", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "threads-failover"), &config, &key_env());
    run_python(
        SCRIPT,
        &["failover", &server.base, TOKEN],
        PASSED,
        &[&server],
    );

    let asked = bodies(&gpt, CHAT_PATH).await;
    assert_eq!(asked.len(), 2, "{asked:?}");
    let roles = |b: &Value| strings(&b["messages"], "/role");
    assert_eq!(roles(&asked[0].0), ["user"]);
    // the continue carried the tool result alone; OpenAI got the whole conversation
    let whole = &asked[1].0;
    assert_eq!(roles(whole), ["user", "assistant", "tool"], "{whole}");
    assert_eq!(
        whole["messages"][0]["content"],
        "What is the weather in Paris?"
    );
    assert_eq!(whole["messages"][1]["tool_calls"][0]["id"], "call_w1");
    assert_eq!(whole["messages"][2]["tool_call_id"], "call_w1");
    assert_eq!(
        text_of(&whole["messages"][2]["content"]),
        "It is sunny in Paris."
    );
    assert_eq!(
        whole["tools"][0]["function"]["name"], "get_weather",
        "the thread's tools"
    );
    // the Anthropic provider was tried on both turns, never with `thread` or the beta
    let tried = bodies(&overloaded, "/v1/messages").await;
    assert!(tried.len() >= 2, "{}", tried.len());
    for (body, beta) in &tried {
        assert!(body.get("thread").is_none(), "{body}");
        assert!(!beta.contains(BETA), "{beta}");
    }
    let last = &tried.last().unwrap().0;
    assert_eq!(
        strings(&last["messages"], "/role"),
        ["user", "assistant", "user"]
    );
}

#[tokio::test]
async fn the_sdks_default_tool_runner_continues_a_thread_on_another_replica() {
    require_python("anthropic");
    let vendor = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(StrictAnthropic(claude_answers))
        .mount(&vendor)
        .await;
    let prefix = format!("sy-e2e-threads-{}", std::process::id());
    let config = format!(
        "{}{}{}[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\nprefix = \"{prefix}\"\n\
         timeout = \"500ms\"\n",
        anthropic_provider("claude", &vendor.uri()),
        route("claude-sonnet-5", &["claude"], ""),
        client_key("sdk", TOKEN),
    );
    let a = Server::start(Scratch::new("e2e", "threads-a"), &config, &key_env());
    let b = Server::start(Scratch::new("e2e", "threads-b"), &config, &key_env());
    run_python(
        SCRIPT,
        &["replicas", &a.base, &b.base, TOKEN],
        PASSED,
        &[&a, &b],
    );

    let asked = bodies(&vendor, "/v1/messages").await;
    assert_eq!(
        asked.len(),
        2,
        "the refused third continue reached no vendor: {asked:?}"
    );
    for (body, beta) in &asked {
        assert!(body.get("thread").is_none(), "{body}");
        assert!(!beta.contains(BETA), "{beta}");
    }
    // replica B, which never saw turn 1, sent the whole conversation from Redis
    let whole = &asked[1].0;
    assert_eq!(
        strings(&whole["messages"], "/role"),
        ["user", "assistant", "user"]
    );
    assert_eq!(whole["messages"][1]["content"][0]["id"], "toolu_w1");
    assert_eq!(
        whole["messages"][2]["content"][0]["tool_use_id"],
        "toolu_w1"
    );
    assert_eq!(
        whole["tools"][0]["name"], "get_weather",
        "the thread's tools"
    );
}
