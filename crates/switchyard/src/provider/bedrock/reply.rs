//! A Converse answer as a reply: `output.message.content` blocks (text, `toolUse`,
//! `reasoningContent`), `stopReason`, `usage` and `metrics.latencyMs`.

use std::time::Duration;

use serde_json::Value;

use crate::chat::{FinishReason, ProviderReply, Thinking, ToolCall, Usage};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::snippet;

/// A Converse stop reason as a finish reason.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "content_filtered" | "guardrail_intervened" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Converse's `usage` normalised: `inputTokens` counts only the uncached prompt, so the
/// cache reads and writes are added in (see [`Usage`]); `cacheDetails` (the writes per
/// TTL) gives the one-hour writes, priced apart.
pub(super) fn usage(value: &Value) -> Option<Usage> {
    let get = |name: &str| value.get(name).and_then(Value::as_u64);
    let input = get("inputTokens")?;
    let output = get("outputTokens")?;
    let read = get("cacheReadInputTokens").unwrap_or(0);
    let write = get("cacheWriteInputTokens").unwrap_or(0);
    let write_1h = value
        .get("cacheDetails")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|d| d.get("ttl").and_then(Value::as_str) == Some("1h"))
        .filter_map(|d| d.get("inputTokens").and_then(Value::as_u64))
        .fold(0u64, u64::saturating_add);
    Some(Usage {
        input_tokens: input.saturating_add(read).saturating_add(write),
        output_tokens: output,
        cached_input_tokens: read,
        cache_write_tokens: write,
        cache_write_1h_tokens: write_1h.min(write),
        ..Usage::default()
    })
}

/// The model's own latency (`metrics.latencyMs`).
pub(super) fn latency(value: &Value) -> Option<Duration> {
    value
        .pointer("/metrics/latencyMs")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

fn malformed(what: &str, body: &[u8]) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, format!("{what}: {}", snippet(body))).with_status(200)
}

/// Read a 2xx Converse body.
pub(super) fn parse(body: &[u8], model: &str) -> Result<ProviderReply, ProviderError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| malformed("Bedrock answered with a body that is not JSON", body))?;
    let Some(content) = value
        .pointer("/output/message/content")
        .and_then(Value::as_array)
    else {
        return Err(malformed(
            "Bedrock answered without output.message.content",
            body,
        ));
    };
    let Some(stop) = value.get("stopReason").and_then(Value::as_str) else {
        return Err(malformed("Bedrock answered without a stopReason", body));
    };
    let mut reply = ProviderReply {
        model: Some(model.to_owned()),
        finish_reason: Some(finish_reason(stop)),
        usage: value.get("usage").and_then(usage),
        reported_latency: latency(&value),
        ..ProviderReply::default()
    };
    for block in content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            reply.text.push_str(text);
        } else if let Some(call) = block.get("toolUse") {
            let (Some(id), Some(name)) = (
                call.get("toolUseId").and_then(Value::as_str),
                call.get("name").and_then(Value::as_str),
            ) else {
                return Err(malformed("a toolUse block without toolUseId or name", body));
            };
            let input = call
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Default::default()));
            reply.tool_calls.push(ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: input.to_string(),
            });
        } else if let Some(reasoning) = block.get("reasoningContent") {
            reply.thinking.push(thinking(reasoning));
        }
        // other blocks (citations, images, documents the model returns) carry no text
    }
    Ok(reply)
}

/// A `reasoningContent` block: signed text, or redacted bytes (base64).
fn thinking(block: &Value) -> Thinking {
    let text = block
        .pointer("/reasoningText/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Thinking {
        text: text.to_owned(),
        signature: block
            .pointer("/reasoningText/signature")
            .and_then(Value::as_str)
            .map(str::to_owned),
        redacted: block
            .get("redactedContent")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}
