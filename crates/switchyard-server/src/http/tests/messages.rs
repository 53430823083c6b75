//! The Messages dialect on the wire (`POST /v1/messages`, `/v1/messages/count_tokens`):
//! decoding (Claude Code's request shape included), the native body an Anthropic provider
//! gets, replies, every stream event sequence (text, tool use, rescued, unrescuable), and
//! errors in Anthropic's shape and statuses.

use switchyard::chat::{ContentPart, FinishReason, ToolCall, ToolCallDelta};
use switchyard::{ChatChunk, ProviderReply, Role, Usage};

use super::*;

fn post_messages(body: &Value) -> Request<Body> {
    Request::post("/v1/messages?beta=true")
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn hello(model: &str) -> Value {
    json!({"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "hello"}]})
}

/// `(event name, data)` of every SSE frame.
fn named_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let mut name = String::new();
            let mut data = Value::Null;
            for line in f.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"));
                }
            }
            assert_eq!(
                data["type"],
                name.as_str(),
                "event name and data type agree: {f}"
            );
            (name, data)
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

/// Claude Code's request, as observed: betas, adaptive thinking, effort, context
/// management, a user id, three cached system blocks, many tools, a system turn.
fn claude_code_request() -> Value {
    let tools: Vec<Value> = (0..24)
        .map(|i| {
            json!({"name": format!("Tool{i}"), "description": format!("tool number {i}"),
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                                    "required": ["path"], "additionalProperties": false,
                                    "$schema": "http://json-schema.org/draft-07/schema#"}})
        })
        .collect();
    let mut tools = tools;
    tools[23]["cache_control"] = json!({"type": "ephemeral"});
    json!({
        "model": "smart",
        "max_tokens": 64000,
        "stream": true,
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "metadata": {"user_id": "user_0123456789abcdef_account__session_7d4c5e1a-9b2f-4c3d-8e6f-0a1b2c3d4e5f"},
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be careful with files.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Environment: linux.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>context</system-reminder>"},
                {"type": "text", "text": "list the files", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should call a tool.", "signature": "c2lnbmF0dXJl"},
                {"type": "tool_use", "id": "toolu_01", "name": "Tool3", "input": {"path": "."}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.rs\nb.rs"}]},
            {"role": "system", "content": "The user switched to plan mode."},
            {"role": "user", "content": "now summarise"}
        ],
        "tools": tools,
    })
}

const CLAUDE_CODE_BETAS: &str = "claude-code-20250219,interleaved-thinking-2025-05-14,\
context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-03-01,\
effort-2025-11-24,context-1m-2025-08-07,fine-grained-tool-streaming-2025-05-14";

#[tokio::test]
async fn a_plain_message_is_an_anthropic_message_with_the_trail() {
    let f = basic();
    let resp = call(&f.state, post_messages(&hello("smart"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert!(header(&resp, "x-request-id").starts_with("req_"));
    let body = json_body(resp).await;
    assert_eq!(body["type"], "message");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"), "{body}");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "primary-model");
    assert_eq!(
        body["content"],
        json!([{"type": "text", "text": "ok from primary-model"}])
    );
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["stop_sequence"], Value::Null);
    assert_eq!(body["usage"]["input_tokens"], 10);
    assert_eq!(body["usage"]["output_tokens"], 21);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(body["switchyard"]["provider"], "primary");
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.max_tokens, Some(64));
    assert_eq!(sent.messages[0].joined_text(), "hello");
}

#[tokio::test]
async fn cached_tokens_are_reported_apart_from_input_tokens() {
    let reply = ProviderReply {
        text: "hi".into(),
        finish_reason: Some(FinishReason::Length),
        usage: Some(Usage {
            input_tokens: 1000,
            output_tokens: 5,
            cached_input_tokens: 600,
            cache_write_tokens: 100,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        }),
        ..ProviderReply::default()
    };
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::Reply(reply)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let body = json_body(call(&f.state, post_messages(&hello("smart"))).await).await;
    assert_eq!(body["stop_reason"], "max_tokens");
    assert_eq!(
        body["usage"],
        json!({"input_tokens": 300, "output_tokens": 5,
               "cache_creation_input_tokens": 100, "cache_read_input_tokens": 600})
    );
}

#[tokio::test]
async fn a_tool_use_loop_decodes_and_replies_in_anthropic_blocks() {
    let reply = ProviderReply {
        tool_calls: vec![ToolCall {
            id: "call_9".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        ..ProviderReply::default()
    };
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::Reply(reply)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let body = json!({"model": "smart", "max_tokens": 100,
        "tools": [{"name": "get_weather", "description": "weather",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": [{"type": "text", "text": "Checking.",
                 "citations": [{"type": "char_location", "cited_text": "Paris", "document_index": 0,
                                "start_char_index": 0, "end_char_index": 5}]},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"},
                 "caller": {"type": "direct"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
                 "content": [{"type": "text", "text": "timeout"}]},
                {"type": "text", "text": "try again"}]}]});
    let resp = call(&f.state, post_messages(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    // an earlier answer's citations have no place in the shared shape: named, not dropped
    // unsaid
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "citations, tool_use.caller, tool_result.is_error"
    );
    assert_eq!(
        f.primary.requests()[0].parallel_tool_calls,
        Some(false),
        "disable_parallel_tool_use is carried"
    );
    let out = json_body(resp).await;
    assert_eq!(out["stop_reason"], "tool_use");
    assert_eq!(
        out["content"],
        json!([{"type": "tool_use", "id": "call_9", "name": "get_weather", "input": {"city": "Paris"}}])
    );
    let sent = &f.primary.requests()[0];
    assert_eq!(
        sent.tool_choice,
        Some(switchyard::chat::ToolChoice::Required)
    );
    assert_eq!(sent.tools[0].name, "get_weather");
    let roles: Vec<Role> = sent.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool, Role::User]);
    assert_eq!(
        sent.messages[1].tool_calls[0].arguments,
        r#"{"city":"Paris"}"#
    );
    assert_eq!(sent.messages[2].tool_call_id.as_deref(), Some("toolu_1"));
    assert_eq!(sent.messages[2].name.as_deref(), Some("get_weather"));
    assert_eq!(sent.messages[2].joined_text(), "timeout");
    assert_eq!(sent.messages[3].joined_text(), "try again");
}

#[tokio::test]
async fn claude_codes_request_is_accepted_and_fails_over() {
    let mut f = fixture(
        ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["Two ", "files."])),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    // the fixture's 2 KiB body limit is for other tests; Claude Code's body is larger
    Arc::get_mut(&mut f.state.0).unwrap().max_body_bytes = 1 << 20;
    let mut req = post_messages(&claude_code_request());
    let h = req.headers_mut();
    h.insert("anthropic-beta", CLAUDE_CODE_BETAS.parse().unwrap());
    h.insert("x-app", "cli".parse().unwrap());
    let resp = call(&f.state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    let ignored = header(&resp, "x-switchyard-ignored").to_owned();
    for name in [
        "thinking",
        "context_management",
        "cache_control",
        "anthropic-beta",
    ] {
        assert!(
            ignored.split(", ").any(|n| n == name),
            "{name} in {ignored:?}"
        );
    }
    assert!(!ignored.contains("effort"), "carried: {ignored:?}");
    let events = named_events(&text_body(resp).await);
    assert_eq!(events.last().unwrap().0, "message_stop");
    let sent = &f.backup.requests()[0];
    // `output_config.effort: high` is the reasoning effort (over adaptive thinking's medium)
    assert_eq!(
        sent.reasoning_effort,
        Some(switchyard::chat::ReasoningEffort::High)
    );
    assert_eq!(sent.max_tokens, Some(64000));
    assert_eq!(sent.tools.len(), 24);
    let system: Vec<String> = sent
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(switchyard::chat::Message::joined_text)
        .collect();
    assert_eq!(
        system,
        [
            "You are Claude Code.",
            "Be careful with files.",
            "Environment: linux.",
            "The user switched to plan mode."
        ]
    );
    assert!(sent.user.as_deref().unwrap().starts_with("user_0123"));
    // the thinking block is left out; the tool call and its result travel
    assert_eq!(sent.messages[4].tool_calls[0].name, "Tool3");
    assert!(sent.messages[4]
        .content
        .iter()
        .all(|p| !matches!(p, ContentPart::Text { text } if text.contains("tool"))));
    assert_eq!(sent.messages[5].name.as_deref(), Some("Tool3"));
}

#[tokio::test]
async fn a_stream_is_anthropics_event_sequence() {
    let f = basic();
    f.primary
        .push(Step::stream_words(&["Hel", "lo ", "there."]));
    let mut body = hello("smart");
    body["stream"] = json!(true);
    let resp = call(&f.state, post_messages(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "content-type"), "text/event-stream");
    let events = named_events(&text_body(resp).await);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = &events[0].1["message"];
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["role"], "assistant");
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello there.");
    assert!(events[3..6]
        .iter()
        .all(|(_, d)| d["index"] == 0 && d["delta"]["type"] == "text_delta"));
    let delta = &events[7].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], 3);
    assert_eq!(delta["switchyard"]["provider"], "primary");
}

fn tool_delta(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> StreamStep {
    StreamStep::Chunk(ChatChunk {
        tool_calls: vec![ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: args.to_owned(),
        }],
        ..ChatChunk::default()
    })
}

#[tokio::test]
async fn streamed_tool_calls_are_tool_use_blocks_with_input_json_deltas() {
    let steps = vec![
        StreamStep::Chunk(ChatChunk {
            text: "Let me look.".into(),
            ..ChatChunk::default()
        }),
        tool_delta(0, Some("call_a"), Some("read"), ""),
        tool_delta(0, None, None, r#"{"path":"#),
        tool_delta(0, None, None, r#""a.rs"}"#),
        tool_delta(1, Some("call_b"), Some("read"), r#"{"path":"b.rs"}"#),
        StreamStep::Chunk(ChatChunk {
            finish_reason: Some(FinishReason::ToolCalls),
            usage: Some(Usage {
                input_tokens: 7,
                output_tokens: 9,
                ..Usage::default()
            }),
            ..ChatChunk::default()
        }),
    ];
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::Stream(steps)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let mut body = hello("smart");
    body["stream"] = json!(true);
    let events = named_events(&text_body(call(&f.state, post_messages(&body)).await).await);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[5].1,
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "tool_use", "id": "call_a", "name": "read", "input": {}}})
    );
    let partial: String = events[6..8]
        .iter()
        .map(|(_, d)| {
            assert_eq!(d["index"], 1);
            assert_eq!(d["delta"]["type"], "input_json_delta");
            d["delta"]["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(partial, r#"{"path":"a.rs"}"#);
    assert_eq!(events[9].1["index"], 2);
    assert_eq!(events[9].1["content_block"]["id"], "call_b");
    assert_eq!(events[11].1["index"], 2);
    assert_eq!(events[12].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(events[12].1["usage"]["input_tokens"], 7);
    assert_eq!(events[12].1["usage"]["output_tokens"], 9);
}

fn cut_stream() -> Step {
    Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Hel".into(),
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            text: "lo ".into(),
            ..ChatChunk::default()
        }),
        StreamStep::End,
    ])
}

#[tokio::test]
async fn a_rescued_stream_ends_with_message_stop_and_the_whole_text() {
    let f = fixture(
        ScriptedProvider::new("p").then(cut_stream()),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["Hel", "lo ", "there."])),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = hello("smart");
    body["stream"] = json!(true);
    let events = named_events(&text_body(call(&f.state, post_messages(&body)).await).await);
    assert_eq!(events.last().unwrap().0, "message_stop", "{events:?}");
    assert!(!events.iter().any(|(n, _)| n == "error"));
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello there.");
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["switchyard"]["provider"], "backup");
    assert_eq!(delta["switchyard"]["failed_over"], true);
}

#[tokio::test]
async fn an_unrescuable_stream_ends_with_an_error_event_and_no_message_stop() {
    let f = fixture(
        ScriptedProvider::new("p").then(cut_stream()),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = hello("smart");
    body["stream"] = json!(true);
    let events = named_events(&text_body(call(&f.state, post_messages(&body)).await).await);
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "error");
    assert_eq!(data["error"]["type"], "overloaded_error", "{data}");
    assert!(data["error"]["message"]
        .as_str()
        .unwrap()
        .contains("stream closed before the finish signal"));
    assert!(!events
        .iter()
        .any(|(n, _)| n == "message_stop" || n == "message_delta"));
}

async fn error_of(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    let body = json_body(resp).await;
    assert_eq!(body["type"], "error", "{body}");
    (status, body)
}

#[tokio::test]
async fn bad_fields_are_400s_naming_the_field_in_anthropics_terms() {
    let f = basic();
    let cases = [
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "frobnicate": 1}),
            "frobnicate",
        ),
        (
            json!({"model": "smart", "messages": [{"role": "user", "content": "x"}]}),
            "max_tokens",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user", "content": "x"},
            {"role": "assistant", "content": [{"type": "hologram", "text": "x"}]}]}),
            "messages.1.content.0.type",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "wizard", "content": "x"}]}),
            "messages.0.role",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user", "content": 5}]}),
            "messages.0.content",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "temperature": 1.5, "messages": [{"role": "user", "content": "x"}]}),
            "temperature",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            "tools.0.type",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": []}),
            "messages",
        ),
        // a key Anthropic's reference does not give the block: refused by its path, never
        // dropped on the way to another vendor
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user",
            "content": [{"type": "text", "text": "x", "frob": 1}]}]}),
            "messages.0.content.0.frob",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "system": [{"type": "text", "text": "x",
            "colour": "red"}], "messages": [{"role": "user", "content": "x"}]}),
            "system.0.colour",
        ),
        (
            json!({"model": "smart", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
            "thinking": {"type": "enabled", "budget_tokens": 10}}),
            "thinking.enabled.budget_tokens",
        ),
    ];
    let misplaced = [
        (
            json!({"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}),
            "messages.0.content.0",
        ),
        (
            json!({"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]}),
            "messages.0.content.0",
        ),
    ];
    let cases = cases
        .into_iter()
        .chain(misplaced.into_iter().map(|(m, field)| {
            (
                json!({"model": "smart", "max_tokens": 5, "messages": [m]}),
                field,
            )
        }));
    for (body, field) in cases {
        let (status, err) = error_of(call(&f.state, post_messages(&body)).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(err["error"]["type"], "invalid_request_error");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{field}:")),
            "{field}: {message}"
        );
    }
    assert_eq!(f.primary.calls(), 0);
}

#[tokio::test]
async fn errors_have_anthropics_types_and_statuses() {
    // 404: no such route
    let f = basic();
    let (status, err) = error_of(call(&f.state, post_messages(&hello("nope"))).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(err["error"]["type"], "not_found_error");
    assert!(err["error"]["message"].as_str().unwrap().contains("smart"));

    // 413: over the body limit (2048 bytes in the fixture)
    let mut big = hello("smart");
    big["messages"][0]["content"] = json!("x".repeat(4096));
    let (status, err) = error_of(call(&f.state, post_messages(&big)).await).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(err["error"]["type"], "request_too_large");

    // 502 (every provider failed) is Anthropic's overloaded 529
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]).retry(switchyard::retry::RetryPolicy {
            max_attempts: 1,
            ..Default::default()
        }),
    );
    let resp = call(&f.state, post_messages(&hello("smart"))).await;
    assert!(header(&resp, "x-request-id").starts_with("req_"));
    let (status, err) = error_of(resp).await;
    assert_eq!(status.as_u16(), 529);
    assert_eq!(err["error"]["type"], "overloaded_error");
    assert_eq!(err["error"]["code"], "all_providers_failed");
    assert_eq!(err["error"]["attempts"].as_array().unwrap().len(), 2);

    // 429 with retry-after
    let f = fixture(
        ScriptedProvider::new("p").otherwise(Step::rate_limited(Duration::from_secs(7))),
        ScriptedProvider::new("b").otherwise(Step::rate_limited(Duration::from_secs(9))),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post_messages(&hello("smart"))).await;
    assert_eq!(header(&resp, "retry-after"), "7");
    let (status, err) = error_of(resp).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(err["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn keys_are_read_from_x_api_key_and_refusals_are_anthropic_shaped() {
    let keys = [KeyToml {
        name: "claude".into(),
        sha256: hash_token("sk-claude-code"),
        routes: vec!["smart".into()],
        ..KeyToml::default()
    }];
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &keys,
        Route::new("smart", &["primary", "backup"]),
    );
    let (status, err) = error_of(call(&f.state, post_messages(&hello("smart"))).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(err["error"]["type"], "authentication_error");

    let mut req = post_messages(&hello("smart"));
    req.headers_mut()
        .insert("x-api-key", "sk-claude-code".parse().unwrap());
    assert_eq!(call(&f.state, req).await.status(), StatusCode::OK);

    let mut req = post_messages(&hello("other"));
    req.headers_mut()
        .insert("authorization", "Bearer sk-claude-code".parse().unwrap());
    let (status, err) = error_of(call(&f.state, req).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(err["error"]["type"], "permission_error");
}

#[tokio::test]
async fn count_tokens_without_an_anthropic_provider_is_a_400_naming_the_route() {
    let f = basic();
    let body = json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}]});
    let req = Request::post("/v1/messages/count_tokens")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, err) = error_of(call(&f.state, req).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"smart\"") && message.contains("no Anthropic provider"),
        "{message}"
    );
    assert_eq!(f.primary.calls(), 0);
}

#[tokio::test]
async fn images_system_blocks_and_structured_output_map_into_the_shared_shape() {
    let f = basic();
    let body = json!({"model": "smart", "max_tokens": 50, "stop_sequences": ["END"],
        "temperature": 0.5, "top_p": 0.9, "top_k": 40, "service_tier": "auto",
        "system": "be brief",
        "output_config": {"format": {"type": "json_schema",
            "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}},
        "messages": [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                {"type": "text", "text": "what are these?"}]},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwKAhgB"},
                {"type": "text", "text": "Two images."}]},
            {"role": "user", "content": [
                {"type": "mid_conv_system", "content": [{"type": "text", "text": "answer in French"}]},
                {"type": "text", "text": "and now?"}]}]});
    let resp = call(&f.state, post_messages(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-ignored"), "thinking");
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.top_k, Some(40), "top_k is carried");
    assert_eq!(sent.service_tier.as_deref(), Some("auto"));
    assert_eq!(sent.stop, ["END"]);
    assert_eq!((sent.temperature, sent.top_p), (Some(0.5), Some(0.9)));
    assert!(matches!(
        &sent.response_format,
        Some(switchyard::chat::ResponseFormat::JsonSchema { schema, .. }) if schema["properties"]["a"]["type"] == "string"
    ));
    let roles: Vec<Role> = sent.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::System,
            Role::User
        ]
    );
    assert!(matches!(
        &sent.messages[1].content[0],
        ContentPart::Image { source: switchyard::chat::ImageSource::Base64 { media_type, data }, .. }
            if media_type == "image/png" && data == "iVBOR"
    ));
    assert!(matches!(
        &sent.messages[1].content[1],
        ContentPart::Image { source: switchyard::chat::ImageSource::Url { url }, .. }
            if url == "https://example.com/cat.png"
    ));
    assert_eq!(sent.messages[2].joined_text(), "Two images.");
    assert_eq!(sent.messages[3].joined_text(), "answer in French");
    assert_eq!(sent.messages[4].joined_text(), "and now?");
}

#[tokio::test]
async fn server_only_features_are_refused_by_name() {
    let f = basic();
    for (field, value) in [
        ("container", json!("container_1")),
        (
            "mcp_servers",
            json!([{"type": "url", "url": "https://mcp.example.com", "name": "x"}]),
        ),
    ] {
        let mut body = hello("smart");
        body[field] = value;
        let (status, err) = error_of(call(&f.state, post_messages(&body)).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}:")), "{message}");
    }
    let mut body = hello("smart");
    body["messages"][0]["content"] = json!([{"type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]);
    let (status, err) = error_of(call(&f.state, post_messages(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("messages.0.content.0.type:"));
    assert_eq!(f.primary.calls(), 0);
}

/// A gateway whose route `smart` has two Anthropic providers on mock upstreams.
async fn counting_fixture(
    first: wiremock::ResponseTemplate,
    second: wiremock::ResponseTemplate,
) -> (AppState, wiremock::MockServer, wiremock::MockServer) {
    counting_fixture_on(
        first,
        second,
        Route::new("smart", &["claude-a", "claude-b"]),
    )
    .await
}

/// [`counting_fixture`] with its route as given (providers `claude-a`, `claude-b`).
async fn counting_fixture_on(
    first: wiremock::ResponseTemplate,
    second: wiremock::ResponseTemplate,
    route: Route,
) -> (AppState, wiremock::MockServer, wiremock::MockServer) {
    use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
    use switchyard::provider::http::Transport;
    let mut servers = Vec::new();
    for response in [first, second] {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::path("/v1/messages/count_tokens"))
            .respond_with(response)
            .mount(&server)
            .await;
        servers.push(server);
    }
    let provider = |uri: String| {
        let config = AnthropicConfig::new("claude-test").base_url(uri);
        Arc::new(Anthropic::new(config, &Transport::default()).unwrap())
    };
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("claude-a", provider(servers[0].uri())))
        .provider(ProviderSpec::new("claude-b", provider(servers[1].uri())))
        .route(route)
        .observer(metrics.clone())
        .build()
        .unwrap();
    let state = AppState(Arc::new(Shared::for_tests(
        gateway,
        KeyStore::new(&[]),
        metrics,
    )));
    let second = servers.pop().unwrap();
    let first = servers.pop().unwrap();
    (state, first, second)
}

fn count_request(betas: Option<&str>) -> Request<Body> {
    let body = json!({"model": "smart", "system": "be brief",
                      "messages": [{"role": "user", "content": "hi"}]});
    let mut req = Request::post("/v1/messages/count_tokens")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    if let Some(b) = betas {
        req.headers_mut()
            .insert("anthropic-beta", b.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn count_tokens_fails_over_between_anthropic_providers() {
    let (state, first, second) = counting_fixture(
        wiremock::ResponseTemplate::new(529).set_body_json(json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}})),
        wiremock::ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 17})),
    )
    .await;
    let resp = call(&state, count_request(Some("context-management-2025-06-27"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude-b");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    assert_eq!(json_body(resp).await, json!({"input_tokens": 17}));
    let sent = &second.received_requests().await.unwrap()[0];
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body["model"], "claude-test",
        "the provider's model, not the route"
    );
    assert_eq!(body["system"], "be brief", "the rest as the client sent it");
    assert_eq!(
        sent.headers["anthropic-beta"],
        "context-management-2025-06-27"
    );
    assert_eq!(first.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_count_the_client_got_wrong_is_not_retried_elsewhere() {
    let (state, _first, second) = counting_fixture(
        wiremock::ResponseTemplate::new(400).set_body_json(json!({"type": "error",
            "error": {"type": "invalid_request_error", "message": "messages.0.role: bad"}})),
        wiremock::ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 17})),
    )
    .await;
    let (status, err) = error_of(call(&state, count_request(None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("messages.0.role: bad"));
    assert!(second.received_requests().await.unwrap().is_empty());
}

fn count_body(req_body: &Value, betas: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/v1/messages/count_tokens")
        .header("content-type", "application/json")
        .body(Body::from(req_body.to_string()))
        .unwrap();
    if let Some(b) = betas {
        req.headers_mut()
            .insert("anthropic-beta", b.parse().unwrap());
    }
    req
}

fn counted() -> wiremock::ResponseTemplate {
    wiremock::ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 17}))
}

#[tokio::test]
async fn count_tokens_judges_unknown_fields_as_messages_does() {
    let (state, first, _second) = counting_fixture(counted(), counted()).await;
    let hi = json!([{"role": "user", "content": "hi"}]);
    // Anthropic's own count fields pass
    let known = json!({"model": "smart", "messages": hi, "speed": "fast",
        "output_config": {"effort": "low"}, "cache_control": {"type": "ephemeral"}});
    assert_eq!(
        call(&state, count_body(&known, None)).await.status(),
        StatusCode::OK
    );
    // a field it does not define is Anthropic's 400, naming it, and nothing is sent
    let unknown = json!({"model": "smart", "messages": hi, "max_tokens": 10, "bogus": true});
    let (status, err) = error_of(call(&state, count_body(&unknown, None)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert_eq!(
        err["error"]["message"],
        "bogus, max_tokens: Extra inputs are not permitted"
    );
    assert_eq!(first.received_requests().await.unwrap().len(), 1);
    // under a beta they are Anthropic's to judge, as for /v1/messages
    let resp = call(&state, count_body(&unknown, Some("some-beta-2026-01-01"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = first.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&sent[1].body).unwrap();
    assert_eq!(body["bogus"], true);

    // a route that passes unknown fields through sends them without a beta
    let route = Route::new("smart", &["claude-a", "claude-b"]).passthrough_unknown(true);
    let (state, first, _second) = counting_fixture_on(counted(), counted(), route).await;
    let resp = call(&state, count_body(&unknown, None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = first.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
    assert_eq!(body["bogus"], true);
}

#[tokio::test]
async fn count_tokens_goes_through_the_breaker() {
    let (state, first, second) = counting_fixture(
        wiremock::ResponseTemplate::new(401).set_body_json(json!({"type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"}})),
        counted(),
    )
    .await;
    // the first count fails at claude-a (a bad key opens its circuit at once), then counts
    let resp = call(&state, count_request(None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude-b");
    let health = state.gateway.health().await;
    let a = health.iter().find(|h| h.name == "claude-a").unwrap();
    assert_eq!(
        a.state, "auth_failed",
        "the failed count opened its circuit"
    );
    // the open circuit skips claude-a: it is not asked again
    let resp = call(&state, count_request(None)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude-b");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    assert_eq!(first.received_requests().await.unwrap().len(), 1);
    assert_eq!(second.received_requests().await.unwrap().len(), 2);
}

/// A gateway whose route `smart` is an Anthropic provider (one attempt) then an OpenAI
/// one, each on a mock upstream answering `anthropic` / `openai`.
async fn native_fixture(
    anthropic: wiremock::ResponseTemplate,
) -> (AppState, wiremock::MockServer, wiremock::MockServer) {
    use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
    use switchyard::provider::http::Transport;
    use switchyard::provider::openai::{OpenAi, OpenAiConfig};
    let claude = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/v1/messages"))
        .respond_with(anthropic)
        .mount(&claude)
        .await;
    let gpt = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/chat/completions"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Two files."}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}})))
        .mount(&gpt)
        .await;
    let transport = Transport::default();
    let anthropic = AnthropicConfig::new("claude-test").base_url(claude.uri());
    let openai = OpenAiConfig::new("gpt-test").base_url(gpt.uri());
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new(
                "claude",
                Arc::new(Anthropic::new(anthropic, &transport).unwrap()),
            )
            .max_attempts(1),
        )
        .provider(ProviderSpec::new(
            "gpt",
            Arc::new(OpenAi::new(openai, &transport).unwrap()),
        ))
        .route(Route::new("smart", &["claude", "gpt"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.max_body_bytes = 1 << 20;
    (AppState(Arc::new(shared)), claude, gpt)
}

/// Claude Code's request, not streamed, with its betas.
fn claude_code_call() -> Request<Body> {
    let mut body = claude_code_request();
    body["stream"] = json!(false);
    let mut req = post_messages(&body);
    req.headers_mut()
        .insert("anthropic-beta", CLAUDE_CODE_BETAS.parse().unwrap());
    req
}

#[tokio::test]
async fn claude_codes_request_reaches_an_anthropic_provider_as_sent() {
    let (state, claude, gpt) =
        native_fixture(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [{"type": "text", "text": "Two files."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 5, "output_tokens": 3,
                      "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0}})))
        .await;
    let resp = call(&state, claude_code_call()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    assert!(
        resp.headers().get("x-switchyard-ignored").is_none(),
        "Anthropic got every field"
    );
    let body = json_body(resp).await;
    assert_eq!(body["content"][0]["text"], "Two files.");
    assert_eq!(body["usage"]["cache_read_input_tokens"], 900);
    let sent = &claude.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["anthropic-beta"], CLAUDE_CODE_BETAS);
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    let mut expected = claude_code_request();
    expected["model"] = json!("claude-test");
    expected["stream"] = json!(false);
    assert_eq!(sent, expected, "the client's body, the provider's model");
    assert!(gpt.received_requests().await.unwrap().is_empty());
}

/// Anthropic's thinking blocks reach the Messages client in front of the text, with their
/// signatures, so it can send them back with its next turn.
#[tokio::test]
async fn thinking_from_anthropic_reaches_the_client_with_its_signature() {
    let (state, _claude, _gpt) =
        native_fixture(wiremock::ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [
                {"type": "thinking", "thinking": "I should list.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "tool_use", "id": "toolu_2", "name": "Tool3", "input": {"path": "."}}],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 5, "output_tokens": 3}})))
        .await;
    let resp = call(&state, claude_code_call()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    assert_eq!(
        body["content"],
        json!([
            {"type": "thinking", "thinking": "I should list.", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "ZW5j"},
            {"type": "tool_use", "id": "toolu_2", "name": "Tool3", "input": {"path": "."}}
        ])
    );
    assert_eq!(body["stop_reason"], "tool_use");
}

#[tokio::test]
async fn failed_over_to_openai_the_body_is_translated_and_the_dropped_fields_named() {
    let (state, claude, gpt) = native_fixture(
        wiremock::ResponseTemplate::new(529).set_body_json(json!({"type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    )
    .await;
    let resp = call(&state, claude_code_call()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "gpt");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    let ignored = header(&resp, "x-switchyard-ignored").to_owned();
    for name in [
        "thinking",
        "context_management",
        "cache_control",
        "anthropic-beta",
    ] {
        assert!(
            ignored.split(", ").any(|n| n == name),
            "{name} in {ignored:?}"
        );
    }
    assert_eq!(json_body(resp).await["content"][0]["text"], "Two files.");
    let tried: Value =
        serde_json::from_slice(&claude.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(
        tried["thinking"],
        json!({"type": "adaptive"}),
        "native first"
    );
    let sent = &gpt.received_requests().await.unwrap()[0];
    assert!(sent.headers.get("anthropic-beta").is_none());
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(sent["model"], "gpt-test");
    for field in [
        "thinking",
        "context_management",
        "system",
        "output_config",
        "metadata",
    ] {
        assert!(sent.get(field).is_none(), "{field} in {sent}");
    }
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["tools"].as_array().unwrap().len(), 24);
    assert!(
        !sent.to_string().contains("I should call a tool."),
        "no thinking in history"
    );
}

/// Streamed (as Claude Code streams), the native body goes with `stream: true`, and the
/// headers sent at the commit name nothing ignored: Anthropic answered.
#[tokio::test]
async fn a_streamed_native_request_to_anthropic_names_nothing_ignored() {
    let sse = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../switchyard/tests/fixtures/anthropic/stream_text.sse"
    ))
    .unwrap();
    let (state, claude, _gpt) =
        native_fixture(wiremock::ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
            .await;
    let mut req = post_messages(&claude_code_request());
    req.headers_mut()
        .insert("anthropic-beta", CLAUDE_CODE_BETAS.parse().unwrap());
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
    let events = named_events(&text_body(resp).await);
    assert_eq!(events.last().unwrap().0, "message_stop");
    let sent = &claude.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["anthropic-beta"], CLAUDE_CODE_BETAS);
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    let mut expected = claude_code_request();
    expected["model"] = json!("claude-test");
    assert_eq!(sent, expected, "stream: true as the client sent it");
}

/// Streamed from Anthropic, a reasoning block reaches the Messages client as Anthropic
/// sends it: its own block (start with empty thinking and signature, `thinking_delta`,
/// `signature_delta`, stop) before the text block; a redacted block whole in its start.
#[tokio::test]
async fn streamed_thinking_from_anthropic_reaches_the_client_before_the_text() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [],
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Two files."}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "ZW5j"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "text_delta", "text": "a.rs and b.rs"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let (state, _claude, _gpt) =
        native_fixture(wiremock::ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
            .await;
    let resp = call(&state, post_messages(&claude_code_request())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "claude");
    let events = named_events(&text_body(resp).await);
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    assert_eq!(events[2].1["index"], 0);
    assert_eq!(
        events[3].1["delta"],
        json!({"type": "thinking_delta", "thinking": "Two files."})
    );
    assert_eq!(
        events[4].1["delta"],
        json!({"type": "signature_delta", "signature": "c2ln"})
    );
    assert_eq!(
        events[6].1["content_block"],
        json!({"type": "redacted_thinking", "data": "ZW5j"})
    );
    assert_eq!(events[6].1["index"], 1);
    assert_eq!(events[8].1["content_block"]["type"], "text");
    assert_eq!(events[8].1["index"], 2);
    assert_eq!(events[9].1["delta"]["text"], "a.rs and b.rs");
}

/// A stream broken after "Hello " is continued on an Anthropic provider with the client's
/// own body (its `cache_control` and betas kept) plus the text already sent as a prefill
/// (its trailing space trimmed, and dropped once from the reply), thinking off (Anthropic
/// takes no prefill with thinking on).
#[tokio::test]
async fn a_continuation_on_anthropic_keeps_the_clients_body_and_appends_the_prefill() {
    use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
    use switchyard::provider::http::Transport;
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [],
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": " there."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let claude = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::path("/v1/messages"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&claude)
        .await;
    let config = AnthropicConfig::new("claude-test").base_url(claude.uri());
    let anthropic = Anthropic::new(config, &Transport::default()).unwrap();
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new(
                "primary",
                Arc::new(ScriptedProvider::new("p").then(cut_stream())),
            )
            .max_attempts(1),
        )
        .provider(ProviderSpec::new("claude", Arc::new(anthropic)).supports_prefill(true))
        .route(Route::new("smart", &["primary", "claude"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.max_body_bytes = 1 << 20;
    let state = AppState(Arc::new(shared));
    let body = json!({
        "model": "smart", "max_tokens": 64, "stream": true,
        "thinking": {"type": "adaptive"},
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hello"}]
    });
    let mut req = post_messages(&body);
    req.headers_mut()
        .insert("anthropic-beta", CLAUDE_CODE_BETAS.parse().unwrap());
    let events = named_events(&text_body(call(&state, req).await).await);
    assert_eq!(events.last().unwrap().0, "message_stop", "{events:?}");
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello there.");
    let sent = &claude.received_requests().await.unwrap()[0];
    assert_eq!(sent.headers["anthropic-beta"], CLAUDE_CODE_BETAS);
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(sent["system"], body["system"], "cache_control kept");
    assert!(
        sent.get("thinking").is_none(),
        "no prefill with thinking on"
    );
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}
        ])
    );
    assert_eq!(
        (sent["model"].as_str(), sent["stream"].as_bool()),
        (Some("claude-test"), Some(true))
    );
}

/// Thinking blocks in history reach the shared shape on their assistant turn, signature
/// and redacted data kept (an Anthropic provider answering in the shared shape sends them
/// back; other vendors leave them out).
#[tokio::test]
async fn thinking_blocks_in_history_reach_the_shared_shape() {
    let f = basic();
    let mut body = hello("smart");
    body["messages"] = claude_code_request()["messages"].clone();
    body["messages"][1]["content"]
        .as_array_mut()
        .unwrap()
        .insert(1, json!({"type": "redacted_thinking", "data": "ZW5j"}));
    let resp = call(&f.state, post_messages(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = &f.primary.requests()[0];
    let turn = sent
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(turn.tool_calls[0].id, "toolu_01");
    assert_eq!(
        turn.thinking,
        vec![
            switchyard::chat::Thinking {
                text: "I should call a tool.".into(),
                signature: Some("c2lnbmF0dXJl".into()),
                redacted: None,
            },
            switchyard::chat::Thinking {
                redacted: Some("ZW5j".into()),
                ..switchyard::chat::Thinking::default()
            },
        ]
    );
}

/// Claude Code sends `thinking` on every request; failing over from Anthropic to a model
/// that does not reason (gpt-4o, marked so in the shipped price table) skips it unless
/// the route drops what a provider cannot honour, when it answers without the thinking.
#[tokio::test]
async fn claude_code_fails_over_to_a_non_reasoning_model_unless_the_route_is_strict() {
    use switchyard::provider::codec::Codec;
    use switchyard::provider::openai::OpenAiCodec;
    use switchyard::route::UnsupportedFields;

    let providers = || {
        (
            ScriptedProvider::new("claude-sonnet-4-5").otherwise(Step::fail(ErrorKind::Server)),
            ScriptedProvider::new("gpt-4o").declaring(<OpenAiCodec as Codec>::support),
        )
    };
    let mut body = hello("smart");
    body["thinking"] = json!({"type": "adaptive"});

    // a route with no field settings: thinking is degradable, dropped for gpt-4o
    let (claude, gpt4o) = providers();
    let f = fixture(
        claude,
        gpt4o,
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post_messages(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    assert_eq!(header(&resp, "x-switchyard-dropped"), "reasoning_effort");
    assert_eq!(f.backup.requests()[0].reasoning_effort, None);

    let (claude, gpt4o) = providers();
    let route =
        Route::new("smart", &["primary", "backup"]).unsupported_fields(UnsupportedFields::Strict);
    let f = fixture(claude, gpt4o, &[], route);
    let resp = call(&f.state, post_messages(&body)).await;
    assert_ne!(resp.status(), StatusCode::OK);
    assert_eq!(f.backup.calls(), 0, "gpt-4o is never sent reasoning_effort");
    let err = json_body(resp).await;
    let message = err["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("backup skipped: cannot honour reasoning_effort"),
        "{err}"
    );
}
