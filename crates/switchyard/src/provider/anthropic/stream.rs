//! Messages API streams: [`EventParser`] reads one streamed message event by event.

use serde_json::{json, Value};

use super::classify::classify_value;
use super::reply::{finish_reason, normalized_usage, Seam};
use super::{malformed, wire};
use crate::chat::{ChatChunk, FinishReason, ThinkingDelta, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// Reads one streamed message, event by event. Stateful: it remembers the model and input
/// usage from `message_start` (merged into the finish chunk's usage) and which content
/// blocks are tool calls (a block's `index` counts every block; a tool call's counts only
/// tool calls).
#[derive(Debug, Default)]
pub struct EventParser {
    /// The message's id from `message_start`, handed on with the finish chunk.
    id: Option<String>,
    model: Option<String>,
    /// Usage so far (cumulative counts; later events replace earlier ones).
    usage: Option<wire::Usage>,
    tools: Vec<ToolBlock>,
    /// Whitespace trimmed off the prefill, dropped from the start of the text.
    seam: Seam,
    /// The content-block index of each reasoning block passed on, in order.
    thinking: Vec<u32>,
    /// The forced tool whose input is the JSON answer (see the parent module's docs).
    json_tool: Option<String>,
    /// That tool's content block, once started, and whether it sent any input yet.
    json_block: Option<(u32, bool)>,
}

/// A `tool_use` content block of the stream.
#[derive(Debug)]
struct ToolBlock {
    /// The content block's index.
    block: u32,
    /// Its position among the tool calls.
    call: u32,
    /// Some non-empty argument text was emitted.
    has_arguments: bool,
}

impl EventParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser for a reply whose prefill lost `trimmed` (trailing whitespace: the same
    /// characters at the start of the text are dropped once), and whose JSON answer comes as
    /// the input of the forced tool `json_tool`: that input is passed on as text.
    pub(super) fn for_call(trimmed: String, json_tool: Option<String>) -> Self {
        Self {
            seam: Seam::new(trimmed),
            json_tool,
            ..Self::default()
        }
    }

    /// True for the forced JSON tool's content block.
    fn is_json_block(&self, index: u32) -> bool {
        self.json_block.is_some_and(|(b, _)| b == index)
    }

    /// Parse one server-sent event.
    ///
    /// `message_delta` carries the finish signal (`stop_reason`) with the usage, merged
    /// with the input usage of `message_start`; `message_stop` is [`Parsed::Done`]; text
    /// and tool-argument deltas are chunks; so are the pieces of `thinking` and
    /// `redacted_thinking` blocks, as [`ThinkingDelta`]s; `ping` and unknown events are
    /// skipped; an `error` event is classified like an HTTP error. Data that is not JSON of
    /// a known shape is `Malformed`.
    ///
    /// # Errors
    /// As above.
    pub fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let mut parsed = self.parse(event)?;
        if let Parsed::Chunk(chunk) = &mut parsed {
            self.seam.apply(&mut chunk.text);
        }
        Ok(parsed)
    }

    fn parse(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let data = event.data.trim();
        if event.event == "error" {
            return Err(classify_value(&error_value(data)));
        }
        let parsed: wire::Event = serde_json::from_str(data).map_err(|e| {
            malformed(format!(
                "stream event {:?} is not valid ({e}): {}",
                event.event,
                snippet(data.as_bytes())
            ))
        })?;
        match parsed {
            wire::Event::MessageStart { message } => {
                self.id = message.id;
                self.model = message.model;
                self.absorb(message.usage)?;
                Ok(Parsed::Skip)
            }
            wire::Event::ContentBlockStart {
                index,
                content_block,
            } => Ok(self.block_start(index, content_block)),
            wire::Event::ContentBlockDelta { index, delta } => self.block_delta(index, delta),
            wire::Event::ContentBlockStop { index } => Ok(self.block_stop(index)),
            wire::Event::MessageDelta { delta, usage } => {
                self.absorb(usage)?;
                let mut finish = delta.stop_reason.as_deref().map(finish_reason);
                if self.json_block.is_some() && finish == Some(FinishReason::ToolCalls) {
                    // the forced tool's input was the answer
                    finish = Some(FinishReason::Stop);
                }
                Ok(Parsed::Chunk(ChatChunk {
                    id: self.id.take(),
                    finish_reason: finish,
                    usage: self.usage.map(normalized_usage).transpose()?,
                    model: self.model.clone(),
                    ..ChatChunk::default()
                }))
            }
            wire::Event::MessageStop => Ok(Parsed::Done),
            wire::Event::Ping | wire::Event::Other => Ok(Parsed::Skip),
            wire::Event::Error => Err(classify_value(&error_value(data))),
        }
    }

    /// Merge newer counts in; absurd ones fail the stream at once (`message_start`
    /// arrives before any content, so that still fails over).
    fn absorb(&mut self, usage: Option<wire::Usage>) -> Result<(), ProviderError> {
        if let Some(newer) = usage {
            let merged = self.usage.unwrap_or_default().updated(newer);
            normalized_usage(merged)?;
            self.usage = Some(merged);
        }
        Ok(())
    }

    fn block_start(&mut self, index: u32, block: wire::StartBlock) -> Parsed {
        match block {
            wire::StartBlock::Text { text } if !text.is_empty() => text_chunk(text),
            wire::StartBlock::ToolUse { name, input, .. }
                if self.json_block.is_none() && self.json_tool.as_deref() == Some(&*name) =>
            {
                // a proxy may send the whole input here, and no deltas
                let text = match &input {
                    Value::Object(map) if !map.is_empty() => input.to_string(),
                    _ => String::new(),
                };
                self.json_block = Some((index, !text.is_empty()));
                if text.is_empty() {
                    Parsed::Skip
                } else {
                    text_chunk(text)
                }
            }
            wire::StartBlock::ToolUse { id, name, input } => {
                let call = u32::try_from(self.tools.len()).unwrap_or(u32::MAX);
                // The start carries `input: {}`; the arguments follow as deltas. A proxy
                // that sends the whole input here sends no deltas.
                let arguments = match &input {
                    Value::Object(map) if !map.is_empty() => input.to_string(),
                    _ => String::new(),
                };
                self.tools.push(ToolBlock {
                    block: index,
                    call,
                    has_arguments: !arguments.is_empty(),
                });
                tool_chunk(ToolCallDelta {
                    index: call,
                    id: Some(id),
                    name: Some(name),
                    arguments,
                })
            }
            wire::StartBlock::Thinking { thinking } => {
                self.thinking_chunk(index, thinking, None, None)
            }
            wire::StartBlock::RedactedThinking { data } => {
                self.thinking_chunk(index, String::new(), None, Some(data))
            }
            wire::StartBlock::Text { .. } | wire::StartBlock::Other => Parsed::Skip,
        }
    }

    fn block_delta(&mut self, index: u32, delta: wire::Delta) -> Result<Parsed, ProviderError> {
        match delta {
            wire::Delta::Text { text } => Ok(text_chunk(text)),
            wire::Delta::InputJson { partial_json } if self.is_json_block(index) => {
                if partial_json.is_empty() {
                    return Ok(Parsed::Skip);
                }
                self.json_block = Some((index, true));
                Ok(text_chunk(partial_json))
            }
            wire::Delta::InputJson { partial_json } => {
                let tool = self
                    .tools
                    .iter_mut()
                    .find(|t| t.block == index)
                    .ok_or_else(|| {
                        malformed(format!(
                            "input_json_delta for content block {index}, which is not a tool_use block"
                        ))
                    })?;
                if partial_json.is_empty() {
                    return Ok(Parsed::Skip);
                }
                tool.has_arguments = true;
                Ok(tool_chunk(ToolCallDelta {
                    index: tool.call,
                    arguments: partial_json,
                    ..ToolCallDelta::default()
                }))
            }
            wire::Delta::Thinking { thinking } => {
                self.known_thinking(index)?;
                Ok(self.thinking_chunk(index, thinking, None, None))
            }
            wire::Delta::Signature { signature } => {
                self.known_thinking(index)?;
                Ok(self.thinking_chunk(index, String::new(), Some(signature), None))
            }
            wire::Delta::Other => Ok(Parsed::Skip),
        }
    }

    /// A reasoning delta must extend a reasoning block that was started.
    fn known_thinking(&self, index: u32) -> Result<(), ProviderError> {
        if self.thinking.contains(&index) {
            Ok(())
        } else {
            Err(malformed(format!(
                "a thinking delta for content block {index}, which is not a thinking block"
            )))
        }
    }

    /// A reasoning piece of content block `index` (registered on its first piece).
    fn thinking_chunk(
        &mut self,
        index: u32,
        text: String,
        signature: Option<String>,
        redacted: Option<String>,
    ) -> Parsed {
        let at = match self.thinking.iter().position(|b| *b == index) {
            Some(at) => at,
            None => {
                self.thinking.push(index);
                self.thinking.len() - 1
            }
        };
        Parsed::Chunk(ChatChunk {
            thinking: vec![ThinkingDelta {
                index: u32::try_from(at).unwrap_or(u32::MAX),
                text,
                signature,
                redacted,
            }],
            ..ChatChunk::default()
        })
    }

    /// A tool call that ended without arguments gets `{}`, as a non-streamed one would.
    fn block_stop(&mut self, index: u32) -> Parsed {
        if self.json_block == Some((index, false)) {
            self.json_block = Some((index, true));
            return text_chunk("{}".to_owned());
        }
        match self.tools.iter_mut().find(|t| t.block == index) {
            Some(tool) if !tool.has_arguments => {
                tool.has_arguments = true;
                tool_chunk(ToolCallDelta {
                    index: tool.call,
                    arguments: "{}".to_owned(),
                    ..ToolCallDelta::default()
                })
            }
            _ => Parsed::Skip,
        }
    }
}

fn text_chunk(text: String) -> Parsed {
    Parsed::Chunk(ChatChunk {
        text,
        ..ChatChunk::default()
    })
}

fn tool_chunk(delta: ToolCallDelta) -> Parsed {
    Parsed::Chunk(ChatChunk {
        tool_calls: vec![delta],
        ..ChatChunk::default()
    })
}

/// An error event's data as JSON; text that is not JSON becomes its message.
fn error_value(data: &str) -> Value {
    serde_json::from_str(data)
        .unwrap_or_else(|_| json!({"error": {"message": snippet(data.as_bytes())}}))
}
