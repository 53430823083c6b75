//! ConverseStream events (read from AWS event-stream frames by
//! [`crate::provider::eventstream`]) as chunks.
//!
//! - `messageStart`, `contentBlockStop`: nothing for the caller;
//! - `contentBlockStart` with `start.toolUse` (`toolUseId`, `name`): a tool call opens; its
//!   `contentBlockIndex` is remembered so later deltas find it;
//! - `contentBlockDelta`: `delta.text`, `delta.toolUse.input` (a piece of the arguments'
//!   JSON text), or `delta.reasoningContent` (`text`, `signature`, `redactedContent`);
//! - `messageStop`: the finish signal (`stopReason`);
//! - `metadata`: `usage` (and `metrics`), after the finish;
//! - `exception:{name}` frames: the exception classified ([`super::classify`]).
//!
//! Bedrock sends no end marker after `metadata`: the shared completion rule ends the
//! stream at the usage after the finish, or at the end of the body.

use serde_json::Value;

use super::classify::classify_exception;
use super::reply::{finish_reason, usage};
use crate::chat::{ChatChunk, ThinkingDelta, ToolCallDelta};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::codec::StreamEvents;
use crate::provider::sse::{Parsed, SseEvent};

/// The reader of one ConverseStream.
#[derive(Debug, Default)]
pub struct Events {
    /// `contentBlockIndex` of each tool call opened so far, in order (the position is the
    /// call's index in the chunks).
    tool_blocks: Vec<u64>,
    /// `contentBlockIndex` of each reasoning block seen so far, likewise.
    thinking_blocks: Vec<u64>,
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}

/// The position of `block` in `seen`, added when new.
fn position(seen: &mut Vec<u64>, block: u64) -> u32 {
    let at = seen.iter().position(|b| *b == block).unwrap_or_else(|| {
        seen.push(block);
        seen.len() - 1
    });
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl StreamEvents for Events {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        if let Some(name) = event.event.strip_prefix("exception:") {
            return Err(classify_exception(name, &event.data));
        }
        if let Some(code) = event.event.strip_prefix("error:") {
            let mut error = ProviderError::new(
                ErrorKind::Server,
                format!("event-stream error {code}: {}", event.data),
            );
            error.vendor_code = Some(code.to_owned());
            return Err(error);
        }
        let value = || -> Result<Value, ProviderError> {
            serde_json::from_str(&event.data).map_err(|e| {
                malformed(format!(
                    "ConverseStream {} event is not JSON: {e}",
                    event.event
                ))
            })
        };
        match &*event.event {
            "messageStart" | "contentBlockStop" => Ok(Parsed::Skip),
            "contentBlockStart" => {
                let value = value()?;
                let Some(call) = value.pointer("/start/toolUse") else {
                    return Ok(Parsed::Skip);
                };
                let block = value
                    .get("contentBlockIndex")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let index = position(&mut self.tool_blocks, block);
                let text = |k: &str| call.get(k).and_then(Value::as_str).map(str::to_owned);
                Ok(Parsed::Chunk(ChatChunk {
                    tool_calls: vec![ToolCallDelta {
                        index,
                        id: text("toolUseId"),
                        name: text("name"),
                        arguments: String::new(),
                    }],
                    ..ChatChunk::default()
                }))
            }
            "contentBlockDelta" => {
                let value = value()?;
                let block = value
                    .get("contentBlockIndex")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let Some(delta) = value.get("delta") else {
                    return Err(malformed("contentBlockDelta without a delta"));
                };
                let mut chunk = ChatChunk::default();
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    chunk.text = text.to_owned();
                } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str)
                {
                    chunk.tool_calls.push(ToolCallDelta {
                        index: position(&mut self.tool_blocks, block),
                        id: None,
                        name: None,
                        arguments: input.to_owned(),
                    });
                } else if let Some(reasoning) = delta.get("reasoningContent") {
                    let text = |k: &str| reasoning.get(k).and_then(Value::as_str);
                    chunk.thinking.push(ThinkingDelta {
                        index: position(&mut self.thinking_blocks, block),
                        text: text("text").unwrap_or_default().to_owned(),
                        signature: text("signature").map(str::to_owned),
                        redacted: text("redactedContent").map(str::to_owned),
                    });
                } else {
                    // citations and other deltas carry nothing the shared shape holds
                    return Ok(Parsed::Skip);
                }
                Ok(Parsed::Chunk(chunk))
            }
            "messageStop" => {
                let value = value()?;
                let Some(reason) = value.get("stopReason").and_then(Value::as_str) else {
                    return Err(malformed("messageStop without a stopReason"));
                };
                Ok(Parsed::Chunk(ChatChunk {
                    finish_reason: Some(finish_reason(reason)),
                    ..ChatChunk::default()
                }))
            }
            "metadata" => {
                let value = value()?;
                match value.get("usage").and_then(usage) {
                    Some(usage) => Ok(Parsed::Chunk(ChatChunk {
                        usage: Some(usage),
                        ..ChatChunk::default()
                    })),
                    None => Ok(Parsed::Skip),
                }
            }
            // an event type added after this codec was written
            _ => Ok(Parsed::Skip),
        }
    }
}
