//! What a committed stream keeps of what it delivered, up to the rescue buffer limit.

use std::sync::Arc;

use serde_json::Value;

use crate::chat::{ChatChunk, ToolCall, ToolCallDelta};

/// What the client has been sent, kept (up to the rescue buffer limit) for a
/// continuation's prefill, a restart's splice and the final response.
#[derive(Default)]
pub(super) struct Kept {
    /// Text delivered.
    pub(super) text: String,
    /// Refusal text delivered (not counted against the limit: it is short, and the final
    /// response needs it whole).
    pub(super) refusal: String,
    /// The upstream's `system_fingerprint`, as last seen.
    pub(super) system_fingerprint: Option<String>,
    /// Tool calls delivered so far, whole.
    pub(super) tool_calls: Vec<ToolCall>,
    /// Tool-call deltas, reasoning, refusal, later answers' (`n` > 1) or native pieces were
    /// delivered (a prefill cannot continue those, and a restart would send them again): a
    /// break is not rescued.
    pub(super) sent_tools: bool,
    /// Bytes of text and tool-call fragments delivered; past the limit nothing more is kept.
    pub(super) bytes: usize,
    /// The limit was passed: `text` and `tool_calls` were dropped, and a break can no
    /// longer be rescued.
    pub(super) unrescuable: bool,
    /// The upstream's whole answer in the request's native API, from the finish chunk.
    pub(super) native: Option<Arc<Value>>,
}

impl Kept {
    /// Keep a delivered chunk's content while the total stays within `limit`; once past
    /// it, drop (and free) all that was kept: the stream is served on but can no longer
    /// be rescued.
    pub(super) fn keep(&mut self, chunk: &ChatChunk, limit: usize) {
        let native_piece = chunk.native.is_some() && chunk.finish_reason.is_none();
        self.sent_tools |= !chunk.tool_calls.is_empty()
            || !chunk.thinking.is_empty()
            || !chunk.refusal.is_empty()
            || !chunk.choices.is_empty()
            || native_piece;
        if self.refusal.len() < MAX_REFUSAL_BYTES {
            self.refusal.push_str(&chunk.refusal);
        }
        if self.unrescuable {
            return;
        }
        let tools: usize = chunk
            .tool_calls
            .iter()
            .map(|d| {
                d.arguments.len()
                    + d.id.as_ref().map_or(0, String::len)
                    + d.name.as_ref().map_or(0, String::len)
            })
            .sum();
        self.bytes = self
            .bytes
            .saturating_add(chunk.text.len())
            .saturating_add(tools);
        if self.bytes > limit {
            self.unrescuable = true;
            self.text = String::new();
            self.tool_calls = Vec::new();
            return;
        }
        if self.text.capacity() == 0 && !chunk.text.is_empty() {
            // room for a short answer at once, not grown from a few bytes by doubling
            self.text
                .reserve(TEXT_START.min(limit).max(chunk.text.len()));
        }
        self.text.push_str(&chunk.text);
        merge_tool_deltas(&mut self.tool_calls, &chunk.tool_calls);
    }
}

/// The room the kept text starts with (within the limit): the first chunks' text is a
/// few bytes each, and doubling from there is a reallocation (and a copy) every few
/// chunks.
const TEXT_START: usize = 1024;

/// Refusal text kept past this is not extended (a refusal is a sentence or two).
const MAX_REFUSAL_BYTES: usize = 64 * 1024;

/// Fold streamed tool-call fragments into whole calls, by index.
fn merge_tool_deltas(calls: &mut Vec<ToolCall>, deltas: &[ToolCallDelta]) {
    for d in deltas {
        let i = d.index as usize;
        while calls.len() <= i {
            calls.push(ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let call = &mut calls[i];
        if let Some(id) = &d.id {
            call.id.clone_from(id);
        }
        if let Some(name) = &d.name {
            call.name.push_str(name);
        }
        call.arguments.push_str(&d.arguments);
    }
}
