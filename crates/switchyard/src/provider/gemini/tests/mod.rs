//! Fixture tests: request mapping feature by feature, response / event parsing and
//! classification from `tests/fixtures/gemini/` (written from Google's documented formats).

use serde_json::{json, Value};

use super::reply::finish_reason;
use super::*;
use crate::chat::{
    ChatChunk, ContentPart, FinishReason, ImageSource, Message, ResponseFormat, Tool, ToolCall,
    ToolCallDelta, ToolChoice, Usage,
};
use crate::provider::sse::SseParser;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gemini/",
            $name
        ))
    };
}

fn provider(config: GeminiConfig) -> Gemini {
    Gemini::new(config, &Transport::default()).unwrap()
}

fn body(req: &ChatRequest) -> Value {
    let bytes = provider(GeminiConfig::new("gemini-2.5-flash"))
        .build_request(req)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn build_error(req: &ChatRequest) -> ProviderError {
    provider(GeminiConfig::new("gemini-2.5-flash"))
        .build_request(req)
        .unwrap_err()
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
        cache_control: None,
    }
}

fn call(id: &str, city: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: format!(r#"{{"city":"{city}"}}"#),
    }
}

fn calling(calls: Vec<ToolCall>) -> Message {
    let mut m = Message::assistant("");
    m.content.clear();
    m.tool_calls = calls;
    m
}

mod reply;
mod request;
