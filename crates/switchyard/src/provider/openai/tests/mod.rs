//! Fixture tests: request mapping feature by feature, response / event parsing and
//! classification from `tests/fixtures/openai/` (written from OpenAI's documented formats).

use std::time::Duration;

use serde_json::{json, Value};

use super::reply::finish_reason;
use super::*;
use crate::chat::Tool;
use crate::chat::{
    ContentPart, FinishReason, ImageSource, Message, ResponseFormat, ToolCall, ToolCallDelta,
    ToolChoice, Usage,
};
use crate::cost::Money;
use crate::error::ErrorKind;
use crate::provider::sse::{Parsed, SseEvent, SseParser};

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/openai/",
            $name
        ))
    };
}

fn provider(config: OpenAiConfig) -> OpenAi {
    OpenAi::new(config, &Transport::default()).unwrap()
}

fn body(req: &ChatRequest, stream: bool) -> Value {
    body_with(OpenAiConfig::new("gpt-4o-mini"), req, stream)
}

fn body_with(config: OpenAiConfig, req: &ChatRequest, stream: bool) -> Value {
    let bytes = provider(config).build_request(req, stream).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        cache_control: None,
    }
}

mod old_reply;
mod reply;
mod request;
