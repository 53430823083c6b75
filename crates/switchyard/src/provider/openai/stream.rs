//! Chat Completions streams: [`parse_event`] reads one server-sent event alone (a
//! one-answer stream needs no state); [`Events`] reads a stream's events for the shared
//! HTTP provider (the model and `system_fingerprint` on the chunks where they change only)
//! and, for a request with `n` > 1, carries the later answers' pieces and holds the finish
//! signal until every answer has finished. The stream's usual chunks (choice 0's text, its
//! finish reason, the usage chunk, and nothing else the gateway reads) are read by one
//! pass over their bytes (`scan.rs`), the rest by serde: both give the same chunk.

mod scan;

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};

use super::classify::classify_value;
use super::reply::{finish_reason, malformed, usage};
use super::wire;
use crate::chat::{ChatChunk, ChoiceDelta, FinishReason, ThinkingDelta, ToolCallDelta};
use crate::error::ProviderError;
use crate::provider::codec::StreamEvents;
use crate::provider::http::snippet;
use crate::provider::sse::{Parsed, SseEvent};

/// Parse one server-sent event of a streamed completion with one answer.
///
/// `[DONE]` is [`Parsed::Done`]; a chunk is [`Parsed::Chunk`] (choice 0's text, refusal,
/// reasoning (`reasoning_content` or `reasoning`, as reasoning block 0) and tool-call
/// deltas, its `finish_reason` and `logprobs.content`, the chunk's `system_fingerprint`,
/// and `usage` when present — the final usage chunk has `choices: []`; Groq's
/// `x_groq.usage` counts too); an error object (`{"error": …}`, vLLM's `{"object":
/// "error"}`, an `event: error`) is classified like an HTTP error. Anything else that is
/// not a chunk is `Malformed`. What OpenAI streams for its own contract fields (`audio`,
/// non-empty `annotations`, `function_call` deltas) is the chunk's `native`:
/// `{"choices": [{"index", "delta": {...}}]}`, those pieces only.
///
/// # Errors
/// As above.
pub fn parse_event(event: &SseEvent) -> Result<Parsed, ProviderError> {
    Ok(match read(event, &mut Seen::default())? {
        Some((chunk, _)) => Parsed::Chunk(chunk),
        None => Parsed::Done,
    })
}

/// What a stream's earlier chunks stated, which later chunks state again: the model and
/// `system_fingerprint` (on every OpenAI chunk, the same each time). A chunk carries them
/// only when they change (whoever reads a stream keeps the latest): no copy per chunk.
#[derive(Debug, Default)]
struct Seen {
    model: Option<String>,
    fingerprint: Option<String>,
    /// The head of the last chunk the scan read: the next that repeats it is read from
    /// its choices on (`scan.rs`); forgotten when a chunk is read by serde.
    head: scan::Head,
}

/// `stated` when it differs from what was `seen` (which it then becomes).
fn changed(seen: &mut Option<String>, stated: Option<Cow<'_, str>>) -> Option<String> {
    let stated = stated?;
    if seen.as_deref() == Some(&*stated) {
        return None;
    }
    let stated = stated.into_owned();
    *seen = Some(stated.clone());
    Some(stated)
}

/// One event as choice 0's chunk and the other choices' pieces; `None` for `[DONE]`.
fn read(
    event: &SseEvent,
    seen: &mut Seen,
) -> Result<Option<(ChatChunk, Vec<ChoiceDelta>)>, ProviderError> {
    let data = trimmed(&event.data);
    if data == "[DONE]" {
        return Ok(None);
    }
    if let Some(out) = scanned(event, data, seen) {
        return Ok(Some((out, Vec::new())));
    }
    seen.head.clear();
    read_serde(event, data, seen)
}

/// The stream's usual chunk (text and a finish reason for choice 0, or usage, nothing
/// else the gateway reads), read by one pass over its bytes (`data`: the event's, trimmed, not `[DONE]`); `None`: serde's
/// to read (every other chunk; `scan.rs`).
fn scanned(event: &SseEvent, data: &str, seen: &mut Seen) -> Option<ChatChunk> {
    scanned_text(event, data, seen).map(|c| seen.chunk_of(c))
}

/// What [`scanned`] reads, before it is a chunk.
fn scanned_text<'a>(
    event: &SseEvent,
    data: &'a str,
    seen: &mut Seen,
) -> Option<scan::TextChunk<'a>> {
    if event.event == "error" {
        return None;
    }
    scan::text_chunk(data, Some(&mut seen.head))
}

impl Seen {
    /// The chunk of what the scan read, its model and fingerprint stated where they
    /// change. Inlined where the chunk is returned: built there, not moved into it.
    #[inline(always)]
    fn chunk_of(&mut self, c: scan::TextChunk<'_>) -> ChatChunk {
        if c.model.is_none() && c.fingerprint.is_none() && c.finish.is_none() && c.usage.is_none() {
            // a repeated head (nearly every chunk) states nothing
            return ChatChunk {
                text: c.text,
                ..ChatChunk::default()
            };
        }
        ChatChunk {
            model: changed(&mut self.model, c.model.map(Cow::Borrowed)),
            system_fingerprint: changed(&mut self.fingerprint, c.fingerprint.map(Cow::Borrowed)),
            text: c.text,
            finish_reason: c.finish.map(finish_reason),
            // the id is on every chunk: kept (copied) from those that finish an answer only
            id: c.finish.and(c.id).map(str::to_owned),
            usage: c.usage,
            ..ChatChunk::default()
        }
    }
}

/// `data` as `str::trim` trims it, the usual case (data that starts and ends with a
/// printable ASCII byte, a chunk's `{…}`: its own trim) told by two bytes.
fn trimmed(data: &str) -> &str {
    match data.as_bytes() {
        [first, .., last] if first.is_ascii_graphic() && last.is_ascii_graphic() => data,
        _ => data.trim(),
    }
}

/// [`read`] by serde, for any event (`data`: its data, trimmed, not `[DONE]`).
fn read_serde(
    event: &SseEvent,
    data: &str,
    seen: &mut Seen,
) -> Result<Option<(ChatChunk, Vec<ChoiceDelta>)>, ProviderError> {
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
        model: changed(&mut seen.model, chunk.model),
        system_fingerprint: changed(&mut seen.fingerprint, chunk.system_fingerprint),
        usage: reported.map(usage).transpose()?,
        ..ChatChunk::default()
    };
    let mut others = Vec::new();
    let mut extras = Vec::new();
    for mut choice in chunk.choices.unwrap_or_default() {
        let pieces = (choice.delta.as_mut()).and_then(|d| {
            wire::extras(d.audio.take(), d.annotations.take(), d.function_call.take())
        });
        extras.extend(pieces.map(|m| json!({"index": choice.index, "delta": m})));
        let piece = piece(choice);
        if piece.index == 0 {
            out.text = piece.text;
            out.refusal = piece.refusal;
            out.tool_calls = piece.tool_calls;
            out.logprobs = piece.logprobs;
            out.finish_reason = piece.finish_reason;
            out.thinking = piece.thinking;
        } else {
            others.push(ChoiceDelta {
                index: piece.index,
                text: piece.text,
                refusal: piece.refusal,
                tool_calls: piece.tool_calls,
                logprobs: piece.logprobs,
                finish_reason: piece.finish_reason,
            });
        }
    }
    if !extras.is_empty() {
        out.native = Some(Arc::new(json!({ "choices": extras })));
    }
    // the id is on every chunk: kept (copied) from those that finish an answer only
    if out.finish_reason.is_some() || others.iter().any(|c| c.finish_reason.is_some()) {
        out.id = chunk.id.map(Cow::into_owned);
    }
    Ok(Some((out, others)))
}

/// What one choice of a chunk adds.
#[derive(Default)]
struct Piece {
    index: u32,
    text: String,
    refusal: String,
    tool_calls: Vec<ToolCallDelta>,
    thinking: Vec<ThinkingDelta>,
    logprobs: Option<Value>,
    finish_reason: Option<FinishReason>,
}

fn piece(choice: wire::StreamChoice<'_>) -> Piece {
    let mut out = Piece {
        index: choice.index,
        finish_reason: choice.finish_reason.as_deref().map(finish_reason),
        logprobs: choice
            .logprobs
            .and_then(|mut l| l.get_mut("content").map(Value::take))
            .filter(|c| !c.is_null()),
        ..Piece::default()
    };
    let Some(delta) = choice.delta else {
        return out;
    };
    if let Some(text) = delta.reasoning_content.or(delta.reasoning) {
        if !text.is_empty() {
            out.thinking = vec![ThinkingDelta {
                index: 0,
                text: text.into_owned(),
                ..ThinkingDelta::default()
            }];
        }
    }
    out.text = delta.content.map(Cow::into_owned).unwrap_or_default();
    out.refusal = delta.refusal.map(Cow::into_owned).unwrap_or_default();
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
    out
}

/// A Chat Completions stream's events. With one answer each event is read as by
/// [`parse_event`], its model and fingerprint stated only when they change; with `n` > 1 the later answers' pieces ride on the chunk
/// ([`ChatChunk::choices`]), and the finish signal (answer 0's reason) is held until all
/// `n` answers have finished, since OpenAI finishes each answer on its own.
#[derive(Debug)]
pub struct Events {
    /// Answers the request asked for.
    choices: u32,
    /// Answers finished so far.
    finished: u32,
    /// Answer 0's finish reason, held until every answer has finished.
    first: Option<FinishReason>,
    /// The model and fingerprint stated so far.
    seen: Seen,
}

impl Events {
    /// A reader for a stream of `choices` answers (1 for a plain request).
    #[must_use]
    pub fn new(choices: u32) -> Self {
        Self {
            choices: choices.max(1),
            finished: 0,
            first: None,
            seen: Seen::default(),
        }
    }
}

impl StreamEvents for Events {
    fn parse_event(&mut self, event: &SseEvent) -> Result<Parsed, ProviderError> {
        if self.choices == 1 {
            // as `read`, without the pieces of other answers to carry (the chunk is
            // built where it is returned)
            let data = trimmed(&event.data);
            if data == "[DONE]" {
                return Ok(Parsed::Done);
            }
            if let Some(c) = scanned_text(event, data, &mut self.seen) {
                return Ok(Parsed::Chunk(self.seen.chunk_of(c)));
            }
            self.seen.head.clear();
            return Ok(match read_serde(event, data, &mut self.seen)? {
                Some((chunk, _)) => Parsed::Chunk(chunk),
                None => Parsed::Done,
            });
        }
        let Some((mut chunk, others)) = read(event, &mut self.seen)? else {
            return Ok(Parsed::Done);
        };
        if self.choices == 1 {
            return Ok(Parsed::Chunk(chunk));
        }
        let done = others.iter().filter(|c| c.finish_reason.is_some()).count();
        self.finished = self
            .finished
            .saturating_add(u32::try_from(done).unwrap_or(u32::MAX));
        if let Some(f) = chunk.finish_reason.take() {
            self.finished = self.finished.saturating_add(1);
            self.first = Some(f);
        }
        chunk.choices = others;
        if self.finished >= self.choices {
            chunk.finish_reason = Some(self.first.take().unwrap_or(FinishReason::Stop));
        }
        Ok(Parsed::Chunk(chunk))
    }
}
