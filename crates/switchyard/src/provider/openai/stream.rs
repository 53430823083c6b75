//! Chat Completions streams: [`parse_event`] reads one server-sent event alone (the
//! stream needs no state), [`Events`] runs it for the shared HTTP provider.

use serde_json::Value;

use super::classify::classify_value;
use super::reply::{finish_reason, malformed, usage};
use super::wire;
use crate::chat::{ChatChunk, ThinkingDelta, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::codec::StreamEvents;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// Parse one server-sent event of a streamed completion.
///
/// `[DONE]` is [`Parsed::Done`]; a chunk is [`Parsed::Chunk`] (choice 0's text, reasoning
/// (`reasoning_content` or `reasoning`, as reasoning block 0) and tool-call deltas, its
/// `finish_reason`, and `usage` when present — the final usage chunk has `choices: []`;
/// Groq's `x_groq.usage` counts too); an error object (`{"error": …}`, vLLM's `{"object": "error"}`, an
/// `event: error`) is classified like an HTTP error. Anything else that is not a chunk
/// is `Malformed`.
///
/// # Errors
/// As above.
pub fn parse_event(event: &SseEvent) -> Result<Parsed, ProviderError> {
    let data = event.data.trim();
    if data == "[DONE]" {
        return Ok(Parsed::Done);
    }
    let chunk: wire::Chunk = serde_json::from_str(data).map_err(|e| {
        malformed(format!(
            "stream chunk is not valid JSON ({e}): {}",
            snippet(data.as_bytes())
        ))
    })?;
    if chunk.error.is_some() || chunk.object.as_deref() == Some("error") || event.event == "error" {
        return Err(classify_value(
            &serde_json::from_str(data).unwrap_or(Value::Null),
        ));
    }
    // Groq puts the final usage under `x_groq.usage`; the standard place wins when both are.
    let reported = chunk.usage.or(chunk.x_groq.and_then(|x| x.usage));
    let mut out = ChatChunk {
        model: chunk.model,
        usage: reported.map(usage).transpose()?,
        ..ChatChunk::default()
    };
    let choice = chunk
        .choices
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.index == 0);
    if let Some(choice) = choice {
        out.finish_reason = choice.finish_reason.as_deref().map(finish_reason);
        out.logprobs = choice
            .logprobs
            .and_then(|mut l| l.get_mut("content").map(Value::take))
            .filter(|c| !c.is_null());
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
                if !text.is_empty() {
                    out.thinking = vec![ThinkingDelta {
                        index: 0,
                        text,
                        ..ThinkingDelta::default()
                    }];
                }
            }
            out.text = delta.content.or(delta.refusal).unwrap_or_default();
            out.tool_calls = delta
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    let function = t.function.unwrap_or(wire::DeltaFunction {
                        name: None,
                        arguments: None,
                    });
                    ToolCallDelta {
                        index: t.index,
                        id: t.id,
                        name: function.name,
                        arguments: function.arguments.unwrap_or_default(),
                    }
                })
                .collect();
        }
    }
    Ok(Parsed::Chunk(out))
}

/// A Chat Completions stream's events: each one read alone by [`parse_event`].
#[derive(Debug)]
pub struct Events;

impl StreamEvents for Events {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        parse_event(event)
    }
}
