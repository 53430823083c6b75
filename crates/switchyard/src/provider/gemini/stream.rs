//! Gemini streams: [`StreamParser`] reads the chunks of one streamed call (no end marker:
//! the chunk carrying `finishReason` is the finish signal).

use serde_json::Value;

use super::classify::classify_value;
use super::reply::{
    arguments_text, call_id, finish_reason, from_object, logprob_entries, read_parts,
    refuse_blocked_prompt, usage,
};
use super::{malformed, wire};
use crate::chat::{ChatChunk, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// Reads the events of one streamed call. It numbers function calls across the whole
/// stream (each arrives whole, as one [`ToolCallDelta`] with id, name and all arguments)
/// and remembers that one was made, because the finish chunk says `STOP` either way.
#[derive(Debug, Default)]
pub struct StreamParser {
    calls: u32,
}

impl StreamParser {
    /// A parser at the start of a stream.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse one server-sent event: each `data:` is a whole `GenerateContentResponse`
    /// chunk. A chunk with `finishReason` is the finish signal; `usageMetadata` is the
    /// usage so far; an error object (or an `event: error`) is classified like an HTTP
    /// error; a blocked prompt is `ContentFiltered`; anything that is not a chunk is
    /// `Malformed`. Empty events are skipped.
    ///
    /// # Errors
    /// As above.
    pub fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Parsed::Skip);
        }
        let response: wire::Response = from_object(data.as_bytes()).map_err(|e| {
            malformed(format!(
                "stream chunk is not a GenerateContentResponse ({e}): {}",
                snippet(data.as_bytes())
            ))
        })?;
        if response.error.is_some() || event.event == "error" {
            let value = serde_json::from_str(data).unwrap_or(Value::Null);
            return Err(classify_value(&value));
        }
        refuse_blocked_prompt(&response)?;
        let mut chunk = ChatChunk {
            usage: response.usage_metadata.map(usage).transpose()?,
            model: response.model_version,
            ..ChatChunk::default()
        };
        if let Some(candidate) = response.candidates.and_then(|c| c.into_iter().next()) {
            let mut calls = Vec::new();
            chunk.text = read_parts(candidate.content, |call| {
                calls.push(ToolCallDelta {
                    index: self.calls,
                    id: Some(call_id(call.id, self.calls)),
                    name: Some(call.name),
                    arguments: arguments_text(call.args),
                });
                self.calls = self.calls.saturating_add(1);
            });
            chunk.tool_calls = calls;
            chunk.logprobs = candidate.logprobs_result.map(logprob_entries);
            chunk.finish_reason = candidate
                .finish_reason
                .as_deref()
                .map(|r| finish_reason(r, self.calls > 0));
        }
        Ok(Parsed::Chunk(chunk))
    }
}
