//! Responses streams: named events (`response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed`, ...) read in order by
//! [`Events`], which remembers which output item each event belongs to.
//!
//! Text deltas are text (with their `logprobs`), refusal deltas the refusal; a `function_call` item opens a tool call
//! (its id and name) and its argument deltas extend it; `response.completed` or
//! `response.incomplete` is the finish signal, with usage and the model;
//! `response.failed` and `error` events are classified. For a native request, every event
//! of an output item the shared shape cannot carry (a `web_search_call`, a `reasoning`
//! item, ...) is passed on as a native piece, and the finish chunk carries the whole final
//! `response`; otherwise those events are skipped.

use std::sync::Arc;

use serde_json::{json, Value};

use super::super::classify_value;
use super::reply::{malformed, summary};
use crate::chat::{ChatChunk, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::codec::StreamEvents;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// What an output item of the stream is, by its `output_index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A message: its text deltas are text.
    Message,
    /// The `n`th function call of the answer.
    Call(u32),
    /// An item the shared shape cannot carry.
    Other,
}

/// One Responses stream's reader.
#[derive(Debug)]
pub struct Events {
    /// Pass on the events of items the shared shape cannot carry, and the final response.
    native: bool,
    /// Output items seen, by `output_index`.
    items: Vec<(u64, Slot)>,
    /// Function calls opened so far.
    calls: u32,
}

impl Events {
    /// A reader for one stream; `native` for a request sent as its native body.
    #[must_use]
    pub fn new(native: bool) -> Self {
        Self {
            native,
            items: Vec::new(),
            calls: 0,
        }
    }

    fn slot(&self, event: &Value) -> Option<Slot> {
        let index = event.get("output_index").and_then(Value::as_u64)?;
        self.items
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, slot)| *slot)
    }

    /// `response.output_item.added`: remember the item; a call opens, another item's
    /// event is a native piece.
    fn added(&mut self, event: &Value) -> Parsed {
        let item = event.get("item").unwrap_or(&Value::Null);
        let index = event
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(self.items.len() as u64);
        let slot = match item.get("type").and_then(Value::as_str) {
            Some("message") => Slot::Message,
            Some("function_call") => {
                self.calls += 1;
                Slot::Call(self.calls - 1)
            }
            _ => Slot::Other,
        };
        self.items.push((index, slot));
        match slot {
            Slot::Message => Parsed::Skip,
            Slot::Call(n) => {
                let text = |f: &str| item.get(f).and_then(Value::as_str).map(str::to_owned);
                Parsed::Chunk(ChatChunk {
                    tool_calls: vec![ToolCallDelta {
                        index: n,
                        id: text("call_id"),
                        name: text("name"),
                        arguments: text("arguments").unwrap_or_default(),
                    }],
                    ..ChatChunk::default()
                })
            }
            Slot::Other => self.piece(event),
        }
    }

    /// An event of an item the shared shape cannot carry: a native piece, or nothing.
    fn piece(&self, event: &Value) -> Parsed {
        if !self.native {
            return Parsed::Skip;
        }
        Parsed::Chunk(ChatChunk {
            native: Some(Arc::new(event.clone())),
            ..ChatChunk::default()
        })
    }

    /// The final response: the finish signal with usage and model.
    fn finished(&self, event: &Value) -> Result<Parsed, ProviderError> {
        let response = event.get("response").unwrap_or(&Value::Null);
        let reply = summary(response)?;
        Ok(Parsed::Chunk(ChatChunk {
            id: reply.id,
            finish_reason: reply.finish_reason,
            usage: reply.usage,
            model: reply.model,
            native: self.native.then(|| Arc::new(response.clone())),
            ..ChatChunk::default()
        }))
    }

    /// A text delta, with its tokens' log probabilities when the event carries some.
    fn text(delta: &Value) -> Parsed {
        let text = delta
            .get("delta")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let logprobs = delta
            .get("logprobs")
            .filter(|l| l.as_array().is_some_and(|a| !a.is_empty()))
            .cloned();
        Parsed::Chunk(ChatChunk {
            text: text.to_owned(),
            logprobs,
            ..ChatChunk::default()
        })
    }

    fn refusal(delta: &Value) -> Parsed {
        let refusal = delta
            .get("delta")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Parsed::Chunk(ChatChunk {
            refusal: refusal.to_owned(),
            ..ChatChunk::default()
        })
    }
}

impl StreamEvents for Events {
    /// One event as a chunk, the end, or nothing.
    ///
    /// # Errors
    /// `Malformed` for data that is not JSON or a final response that is not one; the
    /// classified error of `error` and `response.failed` events.
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Parsed::Done);
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            malformed(format!(
                "stream event is not valid JSON ({e}): {}",
                snippet(data.as_bytes())
            ))
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        match kind {
            "error" if value.get("error").is_some() => Err(classify_value(&value)),
            "error" => Err(classify_value(&json!({ "error": value }))),
            "response.failed" => Err(classify_value(
                value.get("response").unwrap_or(&Value::Null),
            )),
            "response.completed" | "response.incomplete" => self.finished(&value),
            "response.output_item.added" => Ok(self.added(&value)),
            "response.output_text.delta" | "response.refusal.delta" => {
                Ok(match self.slot(&value) {
                    Some(Slot::Other) => self.piece(&value),
                    _ if kind == "response.refusal.delta" => Self::refusal(&value),
                    _ => Self::text(&value),
                })
            }
            "response.function_call_arguments.delta" => match self.slot(&value) {
                Some(Slot::Call(n)) => Ok(Parsed::Chunk(ChatChunk {
                    tool_calls: vec![ToolCallDelta {
                        index: n,
                        arguments: (value.get("delta").and_then(Value::as_str))
                            .unwrap_or_default()
                            .to_owned(),
                        ..ToolCallDelta::default()
                    }],
                    ..ChatChunk::default()
                })),
                _ => Err(malformed(
                    "function call arguments for an output item that is not a function call",
                )),
            },
            _ if value.get("type").is_none()
                && value.get("error").is_some_and(|e| !e.is_null()) =>
            {
                Err(classify_value(&value))
            }
            _ => Ok(match self.slot(&value) {
                Some(Slot::Other) => self.piece(&value),
                _ => Parsed::Skip,
            }),
        }
    }
}
