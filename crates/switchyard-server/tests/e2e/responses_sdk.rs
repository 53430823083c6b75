//! The official `openai` Python SDK's Responses API against two replicas sharing Redis,
//! each failing over from a broken OpenAI provider to an Anthropic one: `responses.create`,
//! `responses.stream`, a function-tool loop with `function_call_output`,
//! `previous_response_id` made on one replica and continued on the other, `retrieve`,
//! `delete`, and the SDK's typed errors; then the OpenAI Agents SDK's `Runner` with a
//! function tool. The checks live in `tests/python/test_responses_sdk.py` and
//! `tests/python/test_agents_sdk.py`; the Anthropic upstream is a mock (below) whose
//! answers reveal the conversation it was sent. Needs Redis at 127.0.0.1:6379 and the SDK
//! in `$SWITCHYARD_PYTHON` (fails with the install command, never skips).

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    anthropic_provider, client_key, key_env, openai_provider, require_python, route, run_python,
    Scratch, Server,
};
use crate::upstream::{text_of, StrictAnthropic};

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-responses-sdk-token-71c3a9";

/// An Anthropic upstream (behind [`StrictAnthropic`]): answers a tool result with what the
/// tool said, a request with tools with a `get_weather` call, and anything else with the
/// number of turns it was sent and the first one's text (so a continued conversation shows
/// its history).
struct Claude;

impl Claude {
    fn answer(body: &Value) -> Result<String, (String, Value)> {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tool_result = messages.iter().rev().find_map(|m| {
            m["content"]
                .as_array()?
                .iter()
                .find(|b| b["type"] == "tool_result")
                .map(|b| text_of(&b["content"]))
        });
        if let Some(said) = tool_result {
            // the reasoning this mock gave with the call, if it came back as it was sent
            let kept = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .and_then(|m| m["content"].get(0).cloned())
                .filter(|b| b["type"] == "thinking" && b["signature"] == SIGNATURE);
            return Ok(match kept {
                Some(b) => format!("The tool said: {said} (thinking kept: {})", b["thinking"]),
                None => format!("The tool said: {said}"),
            });
        }
        if body["tools"].as_array().is_some_and(|t| !t.is_empty()) {
            return Err(("get_weather".to_owned(), json!({"city": "Paris"})));
        }
        let first = messages
            .first()
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default();
        Ok(format!("turns={} first={first}", messages.len()))
    }
}

/// The signature of the thinking this mock gives with a tool call when asked to think.
const SIGNATURE: &str = "c2lnLXdlYXRoZXI=";

/// A request whose first turn asks to think gets a thinking block before its tool call.
fn thinks(body: &Value) -> bool {
    body["messages"]
        .get(0)
        .is_some_and(|m| text_of(&m["content"]).starts_with("Think"))
}

impl Claude {
    fn respond(body: &Value) -> ResponseTemplate {
        let answer = Claude::answer(body);
        let thinks = thinks(body) && answer.is_err();
        if body["stream"] == json!(true) {
            return ResponseTemplate::new(200)
                .set_body_raw(stream(&answer, thinks), "text/event-stream");
        }
        let (mut content, stop) = match &answer {
            Ok(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
            Err((name, input)) => (
                json!([{"type": "tool_use", "id": "toolu_01", "name": name, "input": input}]),
                "tool_use",
            ),
        };
        if thinks {
            content.as_array_mut().unwrap().insert(
                0,
                json!({"type": "thinking", "thinking": "Look it up.", "signature": SIGNATURE}),
            );
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_01", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": content,
            "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 20, "output_tokens": 8}
        }))
    }
}

fn event(out: &mut String, data: &Value) {
    out.push_str(&format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    ));
}

/// The Messages API's event stream for an answer (a thinking block first if it `thinks`).
fn stream(answer: &Result<String, (String, Value)>, thinks: bool) -> String {
    let mut out = String::new();
    event(
        &mut out,
        &json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 20, "output_tokens": 1}}}),
    );
    let at = u32::from(thinks);
    if thinks {
        for data in [
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Look it up."}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
            json!({"type": "content_block_stop", "index": 0}),
        ] {
            event(&mut out, &data);
        }
    }
    let stop = match answer {
        Ok(text) => {
            event(
                &mut out,
                &json!({"type": "content_block_start", "index": at,
                "content_block": {"type": "text", "text": ""}}),
            );
            let mid = text
                .char_indices()
                .nth(text.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            for piece in [&text[..mid], &text[mid..]] {
                event(
                    &mut out,
                    &json!({"type": "content_block_delta", "index": at,
                    "delta": {"type": "text_delta", "text": piece}}),
                );
            }
            "end_turn"
        }
        Err((name, input)) => {
            event(
                &mut out,
                &json!({"type": "content_block_start", "index": at,
                "content_block": {"type": "tool_use", "id": "toolu_01", "name": name, "input": {}}}),
            );
            event(
                &mut out,
                &json!({"type": "content_block_delta", "index": at,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            );
            "tool_use"
        }
    };
    event(
        &mut out,
        &json!({"type": "content_block_stop", "index": at}),
    );
    event(
        &mut out,
        &json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 8}}),
    );
    event(&mut out, &json!({"type": "message_stop"}));
    out
}

fn config(openai_uri: &str, claude_uri: &str, prefix: &str) -> String {
    format!(
        "{}{}{}{}[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\nprefix = \"{prefix}\"\n\
         timeout = \"500ms\"\n",
        openai_provider("gpt", openai_uri, ""),
        anthropic_provider("claude", "claude-sonnet-4-5", claude_uri),
        route(
            "assistant",
            &["gpt", "claude"],
            "retry = { max_attempts = 1 }"
        ),
        client_key("python", TOKEN),
    )
}

#[tokio::test]
async fn openai_python_sdk_responses_api_across_replicas_and_vendors() {
    require_python("openai, agents");

    let broken = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({
            "error": {"message": "overloaded", "type": "server_error", "param": null, "code": null}
        })))
        .mount(&broken)
        .await;
    let claude = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(StrictAnthropic(Claude::respond))
        .mount(&claude)
        .await;

    let prefix = format!("sy-e2e-responses-{}", std::process::id());
    let conf = config(&broken.uri(), &claude.uri(), &prefix);
    let a = Server::start(Scratch::new("e2e", "responses-a"), &conf, &key_env());
    let b = Server::start(Scratch::new("e2e", "responses-b"), &conf, &key_env());
    let (base_a, base_b) = (format!("{}/v1", a.base), format!("{}/v1", b.base));
    run_python(
        "test_responses_sdk.py",
        &[&base_a, &base_b, TOKEN],
        "all responses SDK checks passed",
        &[&a, &b],
    );
    run_python(
        "test_agents_sdk.py",
        &[&base_a, TOKEN],
        "all agents SDK checks passed",
        &[&a],
    );
    let hits = claude.received_requests().await.unwrap_or_default().len();
    assert!(
        hits >= 6,
        "every answer came from the Anthropic mock: {hits}"
    );
    assert!(
        !broken
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "the OpenAI provider was tried first"
    );
}
