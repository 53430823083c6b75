//! The Messages stream: `message_start` (the message with empty content), `ping`, then per
//! content block `content_block_start`, `content_block_delta` (`text_delta`,
//! `input_json_delta`, `thinking_delta`, `signature_delta`) and `content_block_stop`, then `message_delta` (stop reason, usage,
//! the `switchyard` trail) and `message_stop`. One block is open at a time: text, each
//! tool call and each reasoning block (`thinking`, or `redacted_thinking` whole in its
//! start) get blocks of their own, numbered in order. A stream that cannot finish ends
//! with `event: error` and no `message_stop`.

use axum::body::Bytes;
use serde_json::{json, Value};
use switchyard::{ChatChunk, ChatResponse};

use super::{error_body, stop_reason, WireUsage};
use crate::http::dialects::flow::Trail;
use crate::http::dialects::{frame, StreamEncoder};
use crate::http::error::ApiError;

/// What kind of block is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    /// A tool call: its index among the answer's tool calls.
    Tool(u32),
    /// A reasoning block: its index among the answer's reasoning blocks.
    Thinking(u32),
}

/// Writes one stream's events.
pub(crate) struct EventEncoder {
    id: String,
    model: String,
    /// The open block: its kind and its index.
    open: Option<(Open, u32)>,
    /// Blocks started so far (the next block's index).
    blocks: u32,
    /// The tool calls and reasoning blocks started so far, each with its block's index.
    started: Vec<(Open, u32)>,
}

impl EventEncoder {
    /// The encoder of the answer `id` from `model`.
    pub(super) fn new(id: String, model: &str) -> Self {
        Self {
            id,
            model: model.to_owned(),
            open: None,
            blocks: 0,
            started: Vec::new(),
        }
    }

    /// Close the open block, if any.
    fn close(&mut self, out: &mut Vec<u8>) {
        if let Some((_, index)) = self.open.take() {
            push(
                out,
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            );
        }
    }

    /// Open a new block (closing the open one).
    fn start_block(&mut self, out: &mut Vec<u8>, kind: Open, block: &Value) -> u32 {
        self.close(out);
        let index = self.blocks;
        self.blocks += 1;
        self.open = Some((kind, index));
        if kind != Open::Text {
            self.started.push((kind, index));
        }
        push(
            out,
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        );
        index
    }

    /// The block index of a tool call or reasoning block started already.
    fn started(&self, kind: Open) -> Option<u32> {
        self.started
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, index)| *index)
    }

    fn text(&mut self, out: &mut Vec<u8>, text: &str) {
        let index = match self.open {
            Some((Open::Text, index)) => index,
            _ => self.start_block(out, Open::Text, &json!({"type": "text", "text": ""})),
        };
        delta(out, index, json!({"type": "text_delta", "text": text}));
    }

    fn tool(&mut self, out: &mut Vec<u8>, d: &switchyard::chat::ToolCallDelta) {
        let kind = Open::Tool(d.index);
        let index = self.started(kind).unwrap_or_else(|| {
            let id =
                d.id.clone()
                    .unwrap_or_else(|| format!("toolu_{}_{}", self.id, d.index));
            let block = json!({"type": "tool_use", "id": id,
                "name": d.name.as_deref().unwrap_or_default(), "input": {}});
            self.start_block(out, kind, &block)
        });
        if !d.arguments.is_empty() {
            let arguments = json!({"type": "input_json_delta", "partial_json": d.arguments});
            delta(out, index, arguments);
        }
    }
}

impl EventEncoder {
    /// A reasoning piece: the block's first piece starts it (a redacted block is whole in
    /// its start), text and signature pieces are `thinking_delta` and `signature_delta`.
    fn thinking(&mut self, out: &mut Vec<u8>, d: &switchyard::chat::ThinkingDelta) {
        let kind = Open::Thinking(d.index);
        let index = self.started(kind).unwrap_or_else(|| {
            let block = match &d.redacted {
                Some(data) => json!({"type": "redacted_thinking", "data": data}),
                None => json!({"type": "thinking", "thinking": "", "signature": ""}),
            };
            self.start_block(out, kind, &block)
        });
        if !d.text.is_empty() {
            let text = json!({"type": "thinking_delta", "thinking": d.text});
            delta(out, index, text);
        }
        if let Some(signature) = &d.signature {
            let signature = json!({"type": "signature_delta", "signature": signature});
            delta(out, index, signature);
        }
    }
}

fn push(out: &mut Vec<u8>, event: &str, value: &Value) {
    out.extend_from_slice(&frame(Some(event), value));
}

/// A `content_block_delta` of the block at `index` (`delta` moved in, not copied).
fn delta(out: &mut Vec<u8>, index: u32, delta: Value) {
    let mut event = json!({"type": "content_block_delta", "index": index});
    event["delta"] = delta;
    push(out, "content_block_delta", &event);
}

impl StreamEncoder for EventEncoder {
    fn start(&mut self) -> Bytes {
        let mut out = Vec::with_capacity(512);
        push(
            &mut out,
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "content": [],
                "model": self.model, "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 0, "output_tokens": 0}}}),
        );
        push(&mut out, "ping", &json!({"type": "ping"}));
        Bytes::from(out)
    }

    fn chunk(&mut self, c: &ChatChunk) -> Bytes {
        if let Some(m) = &c.model {
            self.model.clone_from(m);
        }
        if !c.has_content() {
            return Bytes::new();
        }
        let mut out = Vec::new();
        for d in &c.thinking {
            self.thinking(&mut out, d);
        }
        if !c.text.is_empty() {
            self.text(&mut out, &c.text);
        }
        // Anthropic has no refusal block: a refusal message (OpenAI's) streams as text
        if !c.refusal.is_empty() {
            self.text(&mut out, &c.refusal);
        }
        for d in &c.tool_calls {
            self.tool(&mut out, d);
        }
        Bytes::from(out)
    }

    /// Close the open block; `message_delta` with the stop reason, the whole usage (the
    /// SDK takes input and cache counts from here too) and the trail; `message_stop`.
    fn done(&mut self, resp: &ChatResponse) -> Bytes {
        let mut out = Vec::with_capacity(1024);
        self.close(&mut out);
        let usage = WireUsage::of(resp.usage.as_ref());
        push(
            &mut out,
            "message_delta",
            &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason(resp), "stop_sequence": null},
                "usage": usage,
                "switchyard": Trail::of(resp)}),
        );
        push(&mut out, "message_stop", &json!({"type": "message_stop"}));
        Bytes::from(out)
    }

    fn failed(&mut self, err: &ApiError) -> Bytes {
        frame(Some("error"), &error_body(err))
    }
}
