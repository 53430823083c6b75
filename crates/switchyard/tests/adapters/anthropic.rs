//! Anthropic in the shared suite, plus the HTTP behaviour only this adapter has (`x-api-key`
//! and `anthropic-version` headers, extra headers, the prefill sent as-is but trimmed,
//! proxies that ignore `stream: true`, an error event after content).

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::chat::{FinishReason, ImageSource, Message, Role, ToolCall, ToolChoice};
use switchyard::clock::Clock;
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::{self, RequestView, Turn, VendorHarness, ANSWER, KEY, PROMPT};

/// The Anthropic adapter, pointed at the mock as its `base_url` (it appends `/v1/messages`).
pub struct Harness;

impl VendorHarness for Harness {
    fn vendor(&self) -> &'static str {
        "anthropic"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        let config = AnthropicConfig {
            api_key: key,
            clock,
            ..AnthropicConfig::new("claude-sonnet-4-5").base_url(server_uri)
        };
        Arc::new(Anthropic::new(config, &Transport::default()).unwrap())
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/v1/messages".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/v1/models".to_owned())
    }

    fn view(&self, request: &wiremock::Request) -> RequestView {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let mut view = RequestView {
            model: body["model"].as_str().map(str::to_owned),
            system: system(&body["system"]),
            max_tokens: body["max_tokens"]
                .as_u64()
                .map(|n| u32::try_from(n).unwrap()),
            stream: body["stream"] == json!(true),
            credential: request
                .headers
                .get("x-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            tool_choice: tool_choice(&body["tool_choice"]),
            tools: body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect(),
            ..RequestView::default()
        };
        for m in body["messages"].as_array().into_iter().flatten() {
            view.turns.extend(turns(m));
        }
        view
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let kind = match status {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            500..=599 => "api_error",
            _ => "invalid_request_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011SySuite"})
    }
}

/// `system` as a string or as text blocks.
fn system(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => Some(blocks.iter().filter_map(|b| b["text"].as_str()).collect()),
        _ => None,
    }
}

/// One wire turn as suite turns: each `tool_result` block is a [`Role::Tool`] turn; the
/// rest of the turn (text, images, tool calls) is one turn of its role.
fn turns(message: &Value) -> Vec<Turn> {
    let role = match message["role"].as_str().unwrap() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => panic!("unexpected role {other}"),
    };
    let blocks = match &message["content"] {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        other => panic!("unexpected content {other}"),
    };
    let mut out = Vec::new();
    let mut rest = Turn::text(role, "");
    for block in &blocks {
        match block["type"].as_str() {
            Some("text") => rest.text.push_str(block["text"].as_str().unwrap()),
            Some("image") => rest.images.push(image(&block["source"])),
            Some("tool_use") => rest.tool_calls.push(ToolCall {
                id: block["id"].as_str().unwrap().to_owned(),
                name: block["name"].as_str().unwrap().to_owned(),
                arguments: block["input"].to_string(),
            }),
            Some("tool_result") => out.push(Turn {
                tool_result_for: block["tool_use_id"].as_str().map(str::to_owned),
                ..Turn::text(Role::Tool, &tool_result_text(&block["content"]))
            }),
            other => panic!("unexpected block {other:?}"),
        }
    }
    if !rest.text.is_empty() || !rest.images.is_empty() || !rest.tool_calls.is_empty() {
        out.push(rest);
    }
    out
}

fn tool_result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn image(source: &Value) -> ImageSource {
    match source["type"].as_str() {
        Some("url") => ImageSource::Url {
            url: source["url"].as_str().unwrap().to_owned(),
        },
        Some("base64") => ImageSource::Base64 {
            media_type: source["media_type"].as_str().unwrap().to_owned(),
            data: source["data"].as_str().unwrap().to_owned(),
        },
        other => panic!("unexpected image source {other:?}"),
    }
}

fn tool_choice(value: &Value) -> Option<ToolChoice> {
    match value["type"].as_str()? {
        "auto" => Some(ToolChoice::Auto),
        "none" => Some(ToolChoice::None),
        "any" => Some(ToolChoice::Required),
        "tool" => Some(ToolChoice::Tool(value["name"].as_str()?.to_owned())),
        other => panic!("unexpected tool_choice {other}"),
    }
}

fn build(config: AnthropicConfig) -> Anthropic {
    Anthropic::new(config, &Transport::default()).unwrap()
}

fn text_fixture() -> String {
    suite::fixture("anthropic", "completion_text.json")
}

fn json_reply(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

#[tokio::test]
async fn key_version_extra_headers_and_a_trailing_slash() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("anthropic-beta", "prompt-caching-2024-07-31"))
        .and(header("content-type", "application/json"))
        .and(header("accept", "application/json"))
        .respond_with(json_reply(text_fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let config = AnthropicConfig::new("claude-sonnet-4-5")
        .base_url(format!("{}/", server.uri()))
        .api_key(Secret::new(KEY))
        .header("anthropic-beta", "prompt-caching-2024-07-31");
    let reply = build(config)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    assert_eq!(reply.text, ANSWER);
    let request = &server.received_requests().await.unwrap()[0];
    assert!(request.headers.get("authorization").is_none());
}

#[tokio::test]
async fn no_key_sends_no_key_header_and_the_version_is_configurable() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("anthropic-version", "2025-01-01"))
        .respond_with(json_reply(text_fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let config = AnthropicConfig::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .anthropic_version("2025-01-01");
    build(config)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let request = &server.received_requests().await.unwrap()[0];
    assert!(request.headers.get("x-api-key").is_none());
}

/// Stream rescue by continuation sends the text already delivered as a final assistant
/// message; it goes out as the prefill, trailing whitespace trimmed.
#[tokio::test]
async fn a_prefill_is_sent_as_the_last_turn() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("accept", "text/event-stream"))
        .and(body_partial_json(json!({
            "stream": true,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
                {"role": "assistant", "content": [{"type": "text", "text": "The capital of France"}]}
            ]
        })))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(
                suite::fixture("anthropic", "stream_text.sse"),
                "text/event-stream",
            ),
        )
        .expect(1)
        .mount(&server)
        .await;
    let req = ChatRequest {
        messages: vec![
            Message::user(PROMPT),
            Message::assistant("The capital of France "),
        ],
        ..ChatRequest::default()
    };
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let items = suite::collect(p.stream(&req).await.unwrap()).await;
    let (text, _, finish, _) = suite::assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
}

/// The prefill's trailing space was trimmed; the reply's leading space repeats it and is
/// dropped, so the caller's prefill + reply read exactly.
#[tokio::test]
async fn a_reply_to_a_trimmed_prefill_joins_it_exactly() {
    let mut body: Value = serde_json::from_str(&text_fixture()).unwrap();
    body["content"][0]["text"] = json!(" is Paris (Île-de-France).");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_reply(body.to_string()))
        .expect(1)
        .mount(&server)
        .await;
    let prefill = "The capital of France ";
    let req = ChatRequest {
        messages: vec![Message::user(PROMPT), Message::assistant(prefill)],
        ..ChatRequest::default()
    };
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let reply = p.send(&req).await.unwrap();
    assert_eq!(format!("{prefill}{}", reply.text), ANSWER);
}

#[tokio::test]
async fn a_proxy_that_ignores_stream_answers_in_one_chunk() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(json_reply(text_fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let (text, _, finish, usage) = suite::assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, Some(suite::answer_usage()));
}

#[tokio::test]
async fn an_html_page_instead_of_a_stream_is_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>captive portal</html>", "text/html"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let Err(err) = p.stream(&ChatRequest::from_prompt(PROMPT)).await else {
        panic!("HTML is not a stream")
    };
    assert_eq!(err.kind, ErrorKind::Malformed);
}

/// `overloaded_error` after some text: the text is delivered, then the classified error
/// ends the stream (the gateway decides on a rescue).
#[tokio::test]
async fn an_error_event_after_content_ends_the_stream_classified() {
    let cut = suite::fixture("anthropic", "stream_cut.sse");
    let body = format!(
        "{cut}event: error\ndata: {}\n\n",
        Harness.error_body(529, "Overloaded")
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let (last, before) = items.split_last().unwrap();
    let text: String = before
        .iter()
        .map(|c| c.as_ref().unwrap().text.as_str())
        .collect();
    assert_eq!(text, "The capital of France is Paris");
    assert_eq!(last.as_ref().unwrap_err().kind, ErrorKind::Overloaded);
}

/// What Claude Code sends with thinking on: betas, `cache_control`, `thinking`,
/// `context_management`, `output_config`, `top_k`, `metadata`, and a thinking block (with
/// its signature) before a tool call in history.
fn claude_code_body(model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 32000,
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "c2lnbmF0dXJl"},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "France"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Paris",
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
        "thinking": {"type": "enabled", "budget_tokens": 16000},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "output_config": {"effort": "high"},
        "top_k": 40,
        "metadata": {"user_id": "user_abc"}
    })
}

const BETAS: &str = "interleaved-thinking-2025-05-14,context-management-2025-06-27";

fn native_request(client_model: &str) -> ChatRequest {
    let native = switchyard::chat::Native::new("anthropic", claude_code_body(client_model))
        .header("anthropic-beta", BETAS);
    ChatRequest {
        max_tokens: Some(32000),
        native: Some(native),
        ..ChatRequest::from_prompt(PROMPT)
    }
}

/// A native Messages body goes out as the client wrote it: only `model` (the provider's)
/// and `stream` (the call's) change, and the client's betas ride along.
#[tokio::test]
async fn a_native_body_is_sent_unchanged_but_for_model_with_its_betas() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(json_reply(text_fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let config = AnthropicConfig::new("claude-sonnet-4-5").base_url(server.uri());
    let reply = build(config)
        .send(&native_request("the-route"))
        .await
        .unwrap();
    assert_eq!(reply.text, ANSWER);
    let received = &server.received_requests().await.unwrap()[0];
    // (wiremock's header matcher splits values at commas: compared whole here)
    assert_eq!(received.headers["anthropic-beta"], BETAS);
    let sent: Value = received.body_json().unwrap();
    let mut expected = claude_code_body("claude-sonnet-4-5");
    expected["stream"] = json!(false);
    assert_eq!(sent, expected);
}

#[tokio::test]
async fn a_native_body_streams_with_stream_set_and_its_betas() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("accept", "text/event-stream"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            suite::fixture("anthropic", "stream_text.sse"),
            "text/event-stream",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let items = suite::collect(p.stream(&native_request("the-route")).await.unwrap()).await;
    assert_eq!(suite::assemble(&items).0, ANSWER);
    let received = &server.received_requests().await.unwrap()[0];
    // (wiremock's header matcher splits values at commas: compared whole here)
    assert_eq!(received.headers["anthropic-beta"], BETAS);
    let sent: Value = received.body_json().unwrap();
    let mut expected = claude_code_body(p.model());
    expected["stream"] = json!(true);
    assert_eq!(sent, expected);
}

/// A native body written for another vendor is not this adapter's: the shared shape goes.
#[tokio::test]
async fn a_native_body_for_another_kind_is_not_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_reply(text_fixture()))
        .expect(1)
        .mount(&server)
        .await;
    let mut req = native_request("the-route");
    req.native = req.native.map(|n| switchyard::chat::Native {
        kind: "openai",
        ..n
    });
    let p = Harness.provider(&server.uri(), None, Clock::system());
    p.send(&req).await.unwrap();
    let received = &server.received_requests().await.unwrap()[0];
    let sent: Value = received.body_json().unwrap();
    assert!(
        sent.get("thinking").is_none() && sent.get("top_k").is_none(),
        "{sent}"
    );
    assert_eq!(sent["messages"][0]["content"][0]["text"], PROMPT);
    assert!(received.headers.get("anthropic-beta").is_none());
}

/// A reply's thinking blocks come back with their signatures (a Messages client must
/// send them with its next tool-loop turn).
#[tokio::test]
async fn a_replys_thinking_comes_back_with_its_signature() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(json_reply(suite::fixture(
            "anthropic",
            "completion_thinking.json",
        )))
        .mount(&server)
        .await;
    let reply = Harness
        .provider(&server.uri(), None, Clock::system())
        .send(&native_request("the-route"))
        .await
        .unwrap();
    assert_eq!(reply.thinking.len(), 2);
    assert_eq!(
        reply.thinking[0].text,
        "27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231."
    );
    assert_eq!(
        reply.thinking[0].signature.as_deref(),
        Some("EqQBCgIYAhIMsyFakeSignature0000000000")
    );
    assert!(reply.thinking[1].redacted.is_some());
    assert_eq!(reply.text, "27 × 453 = 12,231");
}

/// A client's tool-loop turn without its thinking block (a client that drops them, or a
/// turn another vendor answered): Anthropic would refuse it with thinking on, so thinking
/// (and the edits that need it) is turned off for that request only.
#[tokio::test]
async fn a_tool_turn_without_its_thinking_block_is_sent_with_thinking_off() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_reply(text_fixture()))
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let mut body = claude_code_body("the-route");
    body["messages"][1]["content"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    body["context_management"]["edits"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "clear_tool_uses_20250919"}));
    let req = ChatRequest {
        native: Some(switchyard::chat::Native::new("anthropic", body.clone())),
        ..ChatRequest::from_prompt(PROMPT)
    };
    p.send(&req).await.unwrap();
    // with the thinking block in place, thinking stays on
    p.send(&native_request("the-route")).await.unwrap();
    let received = server.received_requests().await.unwrap();
    let sent: Value = received[0].body_json().unwrap();
    assert!(sent.get("thinking").is_none(), "{sent}");
    assert_eq!(
        sent["context_management"],
        json!({"edits": [{"type": "clear_tool_uses_20250919"}]})
    );
    assert_eq!(sent["messages"], body["messages"], "history as sent");
    assert_eq!(sent["top_k"], 40);
    let kept: Value = received[1].body_json().unwrap();
    assert_eq!(kept["thinking"]["type"], "enabled");
    assert_eq!(
        kept["context_management"]["edits"][0]["type"],
        "clear_thinking_20251015"
    );
}
