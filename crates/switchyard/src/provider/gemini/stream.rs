//! Gemini streams: [`StreamParser`] reads the chunks of one streamed call (no end marker:
//! the chunk carrying `finishReason` is the finish signal; with `candidateCount` > 1, the
//! one where the last candidate finishes).

use serde_json::Value;

use super::classify::classify_value;
use super::reply::{
    arguments_text, call_id, finish_reason, from_object, logprob_entries, read_parts,
    refuse_blocked_prompt, usage,
};
use super::{malformed, wire};
use crate::chat::{ChatChunk, ChoiceDelta, FinishReason, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// Reads the events of one streamed call. It numbers function calls across the whole
/// stream, per answer (each arrives whole, as one [`ToolCallDelta`] with id, name and all
/// arguments), and remembers that one was made, because the finish chunk says `STOP`
/// either way. With `candidateCount` > 1 the later candidates' pieces ride on the chunk
/// ([`ChatChunk::choices`]) and the finish signal waits for every candidate.
#[derive(Debug)]
pub struct StreamParser {
    /// Function calls made so far, per candidate index.
    calls: Vec<u32>,
    /// Candidates the request asked for.
    candidates: u32,
    /// Candidates finished so far.
    finished: u32,
    /// Candidate 0's finish reason, held until every candidate has finished.
    first: Option<FinishReason>,
}

impl Default for StreamParser {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamParser {
    /// A parser at the start of a one-answer stream.
    #[must_use]
    pub fn new() -> Self {
        Self::with_candidates(1)
    }

    /// A parser at the start of a stream of `candidates` answers (`candidateCount`).
    #[must_use]
    pub fn with_candidates(candidates: u32) -> Self {
        Self {
            calls: Vec::new(),
            candidates: candidates.max(1),
            finished: 0,
            first: None,
        }
    }

    /// Parse one server-sent event: each `data:` is a whole `GenerateContentResponse`
    /// chunk. A chunk with `finishReason` is the finish signal (with several candidates,
    /// the chunk where the last one finishes); `usageMetadata` is the usage so far; an
    /// error object (or an `event: error`) is classified like an HTTP error; a blocked
    /// prompt is `ContentFiltered`; anything that is not a chunk is `Malformed`. Empty
    /// events are skipped.
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
            id: response.response_id,
            usage: response.usage_metadata.map(usage).transpose()?,
            model: response.model_version,
            ..ChatChunk::default()
        };
        let candidates = response.candidates.unwrap_or_default();
        let single = self.candidates == 1;
        for (at, candidate) in candidates.into_iter().enumerate() {
            let index = if single {
                if at > 0 {
                    break;
                }
                0
            } else {
                candidate.index.unwrap_or(0)
            };
            let piece = self.piece(index, candidate);
            if index == 0 {
                chunk.text = piece.text;
                chunk.tool_calls = piece.tool_calls;
                chunk.logprobs = piece.logprobs;
                chunk.finish_reason = piece.finish_reason;
            } else {
                chunk.choices.push(piece);
            }
        }
        if !single {
            let done = chunk.choices.iter().filter(|c| c.finish_reason.is_some());
            let done = u32::try_from(done.count()).unwrap_or(u32::MAX);
            self.finished = self.finished.saturating_add(done);
            if let Some(f) = chunk.finish_reason.take() {
                self.finished = self.finished.saturating_add(1);
                self.first = Some(f);
            }
            if self.finished >= self.candidates {
                chunk.finish_reason = Some(self.first.take().unwrap_or(FinishReason::Stop));
            }
        }
        Ok(Parsed::Chunk(chunk))
    }

    /// What candidate `index` adds in one chunk.
    fn piece(&mut self, index: u32, candidate: wire::Candidate) -> ChoiceDelta {
        let slot = index as usize;
        if self.calls.len() <= slot {
            self.calls.resize(slot + 1, 0);
        }
        let mut calls = Vec::new();
        let counter = &mut self.calls[slot];
        let text = read_parts(candidate.content, |call| {
            calls.push(ToolCallDelta {
                index: *counter,
                id: Some(call_id(call.id, *counter)),
                name: Some(call.name),
                arguments: arguments_text(call.args),
            });
            *counter = counter.saturating_add(1);
        });
        let called = *counter > 0;
        ChoiceDelta {
            index,
            text,
            refusal: String::new(),
            tool_calls: calls,
            logprobs: candidate.logprobs_result.map(logprob_entries),
            finish_reason: candidate
                .finish_reason
                .as_deref()
                .map(|r| finish_reason(r, called)),
        }
    }
}
