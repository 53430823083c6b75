//! Fixture tests from `tests/fixtures/anthropic/` (written from Anthropic's documented
//! formats): `request.rs` maps requests feature by feature (system lifting, role merging,
//! the prefill trim and its seam, images, tools, config); `output.rs` cache breakpoints and
//! JSON output (structured outputs, the forced tool read back, plain and streamed);
//! `reply.rs` parses messages, stream events and errors. Shared helpers live here.

use serde_json::{json, Value};

use super::reply::{finish_reason, Seam};
use super::*;
use crate::chat::{
    ChatChunk, ContentPart, FinishReason, ImageSource, Message, Role, Tool, ToolCall,
    ToolCallDelta, ToolChoice, Usage,
};
use crate::provider::http::HttpFailure;
use crate::provider::sse::SseParser;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/anthropic/",
            $name
        ))
    };
}

const MODEL: &str = "claude-sonnet-4-5";

fn provider(config: AnthropicConfig) -> Anthropic {
    Anthropic::new(config, &Transport::default()).unwrap()
}

fn body(req: &ChatRequest, stream: bool) -> Value {
    body_with(AnthropicConfig::new(MODEL), req, stream)
}

fn body_with(config: AnthropicConfig, req: &ChatRequest, stream: bool) -> Value {
    let bytes = provider(config).build_request(req, stream).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn error_of(req: &ChatRequest) -> ProviderError {
    provider(AnthropicConfig::new(MODEL))
        .build_request(req, false)
        .unwrap_err()
}

fn conversation(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        cache_control: None,
    }
}

fn tool_calling(id: &str, arguments: &str) -> Message {
    let mut m = Message::assistant("");
    m.content.clear();
    m.tool_calls = vec![ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: arguments.into(),
    }];
    m
}

/// A server-sent event named `name` carrying `data`.
fn event(name: &str, data: Value) -> SseEvent {
    SseEvent {
        event: name.to_owned().into(),
        ..SseEvent::message(data.to_string())
    }
}

mod output;
mod reply;
mod request;
