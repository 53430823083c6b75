//! Request mapping and event reading, feature by feature (the HTTP suite is
//! `tests/adapters/openai_responses.rs`).

use serde_json::{json, Value};

use super::*;
use crate::chat::{
    ChatChunk, ContentPart, FinishReason, ImageSource, Message, Native, ResponseFormat, Tool,
    ToolCall, ToolChoice,
};
use crate::provider::codec::StreamEvents as _;
use crate::provider::sse::{Parsed, SseEvent};

fn provider() -> OpenAiResponses {
    OpenAiResponses::new(OpenAiConfig::new("gpt-5.1-codex"), &Transport::default()).unwrap()
}

fn body(req: &ChatRequest, stream: bool) -> Value {
    serde_json::from_slice(&provider().build_request(req, stream).unwrap()).unwrap()
}

#[test]
fn the_shared_shape_becomes_instructions_and_input_items() {
    let req = ChatRequest {
        messages: vec![
            Message::system("be brief"),
            Message::system("in French"),
            Message {
                content: vec![
                    ContentPart::Text {
                        text: "what is this?".into(),
                    },
                    ContentPart::Image {
                        source: ImageSource::Base64 {
                            media_type: "image/png".into(),
                            data: "AAAA".into(),
                        },
                        detail: None,
                    },
                ],
                ..Message::user("")
            },
            Message {
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "look".into(),
                    arguments: r#"{"at":"it"}"#.into(),
                }],
                ..Message::assistant("let me look")
            },
            Message::tool_result("call_1", "look", "a cat"),
            Message::system("late rule"),
        ],
        max_tokens: Some(64),
        temperature: Some(0.5),
        top_p: Some(0.9),
        tools: vec![Tool {
            name: "look".into(),
            description: Some("Look at it".into()),
            parameters: json!({"type": "object"}),
            cache_control: None,
        }],
        tool_choice: Some(ToolChoice::Tool("look".into())),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}),
            strict: Some(true),
        }),
        user: Some("u-1".into()),
        ..ChatRequest::default()
    };
    assert_eq!(
        body(&req, true),
        json!({
            "model": "gpt-5.1-codex",
            "instructions": "be brief\n\nin French",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "what is this?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
                ]},
                {"type": "message", "role": "assistant", "content": "let me look"},
                {"type": "function_call", "call_id": "call_1", "name": "look", "arguments": "{\"at\":\"it\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
                {"type": "message", "role": "system", "content": "late rule"},
            ],
            "max_output_tokens": 64,
            "temperature": 0.5,
            "top_p": 0.9_f32,
            "tools": [{"type": "function", "name": "look", "description": "Look at it",
                "parameters": {"type": "object"}, "strict": false}],
            "tool_choice": {"type": "function", "name": "look"},
            "text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "strict": true}},
            "user": "u-1",
            "store": false,
            "stream": true,
        })
    );
}

#[test]
fn stop_sequences_cannot_be_sent() {
    let req = ChatRequest {
        stop: vec!["END".into()],
        ..ChatRequest::from_prompt("hi")
    };
    let err = provider().build_request(&req, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("stop"), "{err}");
}

#[test]
fn a_native_body_goes_as_written_with_the_calls_model_stream_and_cap() {
    let client = json!({
        "model": "route-name",
        "input": [{"role": "user", "content": "news?"}],
        "tools": [{"type": "web_search"}],
        "include": ["reasoning.encrypted_content"],
        "store": false,
    });
    let req = ChatRequest {
        native: Some(Native::new(NATIVE_KIND, client.clone()).required(true)),
        ..ChatRequest::from_prompt("news?").with_max_tokens(500)
    };
    let mut want = client;
    want["model"] = json!("gpt-5.1-codex");
    want["stream"] = json!(true);
    want["max_output_tokens"] = json!(500);
    assert_eq!(body(&req, true), want);
    // a body for another API is not this provider's
    let other = ChatRequest {
        native: Some(Native::new("anthropic", json!({"messages": []}))),
        ..ChatRequest::from_prompt("news?")
    };
    assert_eq!(body(&other, false)["input"][0]["content"], "news?");
}

fn response(status: &str, output: Value) -> Value {
    json!({
        "id": "resp_1", "object": "response", "status": status, "model": "gpt-5.1-codex-2026",
        "output": output,
        "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
        "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 8}, "total_tokens": 50},
    })
}

#[test]
fn output_items_become_text_calls_usage_and_finish() {
    let output = json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [
            {"type": "output_text", "text": "Two ", "annotations": []},
            {"type": "output_text", "text": "parts", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "f", "arguments": "{}"},
    ]);
    let body = serde_json::to_vec(&response("completed", output)).unwrap();
    let reply = parse_response(&body, false).unwrap();
    assert_eq!(reply.text, "Two parts");
    assert_eq!(reply.tool_calls[0].id, "call_9");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(reply.model.as_deref(), Some("gpt-5.1-codex-2026"));
    assert_eq!(
        reply.id.as_deref(),
        Some("resp_1"),
        "the response's id, not an item's"
    );
    let usage = reply.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens
        ),
        (30, 10, 20, 8)
    );
    assert!(reply.native.is_none());
    let native = parse_response(&body, true).unwrap().native.unwrap();
    assert_eq!(native["output"][1]["type"], "web_search_call");
}

#[test]
fn incomplete_and_failed_responses() {
    let body = serde_json::to_vec(&response("incomplete", json!([]))).unwrap();
    assert_eq!(
        parse_response(&body, false).unwrap().finish_reason,
        Some(FinishReason::Length)
    );
    let mut filtered = response("incomplete", json!([]));
    filtered["incomplete_details"]["reason"] = json!("content_filter");
    let body = serde_json::to_vec(&filtered).unwrap();
    assert_eq!(
        parse_response(&body, false).unwrap().finish_reason,
        Some(FinishReason::ContentFilter)
    );
    let mut failed = response("failed", json!([]));
    failed["error"] = json!({"code": "rate_limit_exceeded", "message": "slow down"});
    let err = parse_response(&serde_json::to_vec(&failed).unwrap(), false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited, "{err}");
    let err = parse_response(br#"{"id":"resp_1","object":"response"}"#, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}

fn event(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().unwrap_or("message").to_owned().into(),
        ..SseEvent::message(data.to_string())
    }
}

fn chunk(events: &mut Events, data: Value) -> Option<ChatChunk> {
    match events.parse_event(&event(data)).unwrap() {
        Parsed::Chunk(c) => Some(c),
        Parsed::Skip => None,
        Parsed::Done => panic!("done"),
    }
}

#[test]
fn a_native_stream_passes_on_what_the_shared_shape_cannot_carry() {
    let mut events = Events::new(true);
    assert!(chunk(
        &mut events,
        json!({"type": "response.created", "response": {}})
    )
    .is_none());
    let ws = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}});
    let piece = chunk(&mut events, ws.clone()).unwrap();
    assert_eq!(piece.native.as_deref(), Some(&ws));
    assert!(piece.has_content());
    let searching =
        json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"});
    assert!(chunk(&mut events, searching).unwrap().native.is_some());
    let msg = json!({"type": "response.output_item.added", "output_index": 1,
        "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}});
    assert!(chunk(&mut events, msg).is_none());
    let delta = json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1",
        "content_index": 0, "delta": "Hi"});
    let text = chunk(&mut events, delta).unwrap();
    assert_eq!((text.text.as_str(), text.native.is_none()), ("Hi", true));
    let call = json!({"type": "response.output_item.added", "output_index": 2,
        "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}});
    let opened = chunk(&mut events, call).unwrap();
    assert_eq!(opened.tool_calls[0].id.as_deref(), Some("call_1"));
    let args = json!({"type": "response.function_call_arguments.delta", "output_index": 2,
        "item_id": "fc_1", "delta": "{}"});
    assert_eq!(
        chunk(&mut events, args).unwrap().tool_calls[0].arguments,
        "{}"
    );
    let done = response("completed", json!([]));
    let last = chunk(
        &mut events,
        json!({"type": "response.completed", "response": done}),
    )
    .unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(last.usage.unwrap().output_tokens, 20);
    assert_eq!(last.native.as_deref(), Some(&done));

    // the same stream for a shared-shape request: the built-in item is not passed on
    let mut plain = Events::new(false);
    assert!(chunk(&mut plain, ws).is_none());
}

#[test]
fn error_events_are_classified() {
    let mut events = Events::new(false);
    let err = events
        .parse_event(&event(
            json!({"type": "error", "code": "rate_limit_exceeded",
            "message": "Rate limit reached", "param": null}),
        ))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited, "{err}");
    let failed = json!({"type": "response.failed", "response": {"status": "failed",
        "error": {"code": "server_error", "message": "boom"}, "output": []}});
    let err = events.parse_event(&event(failed)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server, "{err}");
}

/// The fields the Responses API has go under its own names; the ones it lacks are
/// declared unsupported (the gateway skips this provider for them, docs/fields.md).
#[test]
fn reasoning_parallel_calls_tier_metadata_and_developer_messages_are_sent() {
    use crate::chat::{Field, ReasoningEffort, Role, Support};
    let mut metadata = serde_json::Map::new();
    metadata.insert("team".into(), json!("search"));
    let req = ChatRequest {
        messages: vec![Message::text(Role::Developer, "terse"), Message::user("hi")],
        parallel_tool_calls: Some(false),
        service_tier: Some("flex".into()),
        reasoning_effort: Some(ReasoningEffort::High),
        metadata: Some(metadata),
        ..ChatRequest::default()
    };
    let b = body(&req, false);
    assert_eq!(b["parallel_tool_calls"], json!(false));
    assert_eq!(b["service_tier"], json!("flex"));
    assert_eq!(b["reasoning"], json!({"effort": "high"}));
    assert_eq!(b["metadata"], json!({"team": "search"}));
    assert_eq!(
        b["input"][0],
        json!({"type": "message", "role": "developer", "content": "terse"})
    );
    for field in [Field::Seed, Field::TopK, Field::Stop] {
        assert_eq!(
            <ResponsesCodec as Codec>::support(field),
            Support::Unsupported,
            "{field:?}"
        );
    }
    // no `n` either: the provider makes one call per answer
    assert_eq!(
        <ResponsesCodec as Codec>::support(Field::N),
        Support::Translated
    );
}

/// `logprobs` is the `include` entry for the output text's log probabilities (with
/// `top_logprobs`); they come back from the `output_text` parts in Chat Completions'
/// `logprobs.content` shape, and a refusal part is the reply's refusal, not its text.
#[test]
fn logprobs_are_asked_for_and_read_back_and_a_refusal_stays_apart() {
    use crate::chat::{Field, Support};
    let req = ChatRequest {
        logprobs: true,
        top_logprobs: Some(2),
        ..ChatRequest::from_prompt("hi")
    };
    let b = body(&req, false);
    assert_eq!(b["include"], json!(["message.output_text.logprobs"]));
    assert_eq!(b["top_logprobs"], json!(2));
    assert_eq!(
        <ResponsesCodec as Codec>::support(Field::Logprobs),
        Support::Translated
    );
    assert!(body(&ChatRequest::from_prompt("hi"), false)
        .get("include")
        .is_none());

    let entries = json!([{"token": "Hi", "logprob": -0.5, "bytes": [72, 105],
        "top_logprobs": [{"token": "Hi", "logprob": -0.5, "bytes": [72, 105]}]}]);
    let answer = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "gpt-5", "output": [{"type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": entries},
                        {"type": "refusal", "refusal": "but no more"}]}]});
    let reply = parse_response(answer.to_string().as_bytes(), false).unwrap();
    assert_eq!(reply.text, "Hi");
    assert_eq!(reply.refusal, "but no more");
    assert_eq!(reply.logprobs, Some(json!({ "content": entries })));

    let mut events = Events::new(false);
    let added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}});
    assert!(matches!(
        events.parse_event(&event(added)),
        Ok(Parsed::Skip)
    ));
    let delta = json!({"type": "response.output_text.delta", "output_index": 0,
        "content_index": 0, "item_id": "msg_1", "delta": "Hi", "logprobs": entries});
    let Ok(Parsed::Chunk(c)) = events.parse_event(&event(delta)) else {
        panic!("no chunk")
    };
    assert_eq!((c.text.as_str(), c.logprobs), ("Hi", Some(entries.clone())));
    let refusal = json!({"type": "response.refusal.delta", "output_index": 0,
        "content_index": 1, "item_id": "msg_1", "delta": "no"});
    let Ok(Parsed::Chunk(c)) = events.parse_event(&event(refusal)) else {
        panic!("no chunk")
    };
    assert_eq!((c.text.as_str(), c.refusal.as_str()), ("", "no"));
}
