//! The Responses API's stream: named events, each with a `sequence_number`.
//!
//! `response.created` and `response.in_progress` open it; each output item is announced
//! (`response.output_item.added`), filled (`response.content_part.added` and
//! `response.output_text.delta` for text; `response.function_call_arguments.delta` for a
//! function call), closed (`*.done`, `response.output_item.done`), and the stream ends with
//! `response.completed` (or `response.incomplete` at the token limit) carrying the whole
//! response, usage and the `switchyard` object. A stream that breaks and cannot be rescued
//! ends with `response.failed` (status `failed`, an `error`), never `response.completed`.
//!
//! Items open in the order their first piece arrives: a reasoning item (one per reasoning
//! block) stays open until anything else starts, its text streamed as
//! `response.reasoning_summary_part.added`, `response.reasoning_summary_text.delta`,
//! `.done` and `response.reasoning_summary_part.done` when the client asked for a summary,
//! its sealed block (`encrypted_content`) on its `response.output_item.done`; a message
//! stays open until a function call starts (text after that opens a new message);
//! function calls stay open until the end, since a vendor may interleave the pieces of
//! parallel calls. From a provider that answered natively, the events of items the shared
//! shape cannot carry (a `web_search_call`, the vendor's own reasoning item) pass through
//! as the vendor sent them, renumbered into this stream's `output_index` and
//! `sequence_number`.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::{json, Value};
use switchyard::chat::{Thinking, ThinkingDelta};
use switchyard::{ChatChunk, ChatResponse};

use super::body::{self, item_status, Base, Logprobs, ResponseObject, SummaryPart};
use crate::http::dialects::{frame, StreamEncoder};
use crate::http::error::ApiError;

/// One output item as the stream has built it so far.
#[derive(Debug)]
enum Item {
    Reasoning {
        id: String,
        /// The vendor's index of this block among the answer's reasoning blocks.
        index: u32,
        block: Thinking,
        /// A summary part was opened (the first non-empty text when a summary is asked).
        summarized: bool,
        open: bool,
    },
    Message {
        id: String,
        /// Its content parts so far: text (with log probabilities) and refusal.
        parts: Vec<Part>,
        open: bool,
    },
    Call {
        id: String,
        /// The vendor's index of this call in the answer.
        index: u32,
        call_id: String,
        name: String,
        arguments: String,
        open: bool,
    },
    /// An item the shared shape cannot carry, from a provider that answered natively: its
    /// events pass through as the vendor sent them (renumbered), the item as last seen.
    Native {
        /// The vendor's `output_index` of it.
        upstream: u64,
        item: Value,
    },
}

/// A content part of a streamed message.
#[derive(Debug)]
enum Part {
    /// `output_text`, with the log probabilities of its tokens (when asked for).
    Text { text: String, logprobs: Vec<Value> },
    /// `refusal`: the model's refusal message.
    Refusal(String),
}

impl Part {
    /// The part as the response object has it.
    fn typed(&self) -> body::Part<'_> {
        match self {
            Part::Text { text, logprobs } => body::Part::text(text, Logprobs::List(logprobs)),
            Part::Refusal(r) => body::Part::refusal(r),
        }
    }
}

/// A `response.*` event carrying the response object (keys in sorted order, as the
/// other events' `Value`s have them).
#[derive(serde::Serialize)]
struct ResponseEvent<'a> {
    response: ResponseObject<'a>,
    sequence_number: u64,
    #[serde(rename = "type")]
    kind: &'a str,
}

/// Write a [`ResponseEvent`].
fn response_event(out: &mut Vec<u8>, kind: &str, seq: u64, response: ResponseObject<'_>) {
    let event = ResponseEvent {
        response,
        sequence_number: seq,
        kind,
    };
    out.extend_from_slice(&frame(Some(kind), &event));
}

/// Writes one stream's events.
pub(crate) struct EventEncoder {
    base: Arc<Base>,
    model: String,
    seq: u64,
    items: Vec<Item>,
    /// Messages opened so far (the first is `msg_<id>`, later ones get a suffix).
    messages: usize,
    /// Calls opened so far.
    calls: usize,
    /// Reasoning items opened so far.
    reasonings: usize,
}

impl EventEncoder {
    pub(super) fn new(base: Arc<Base>, model: &str) -> Self {
        Self {
            base,
            model: model.to_owned(),
            seq: 0,
            items: Vec::new(),
            messages: 0,
            calls: 0,
            reasonings: 0,
        }
    }

    /// One event: `event: <type>` and its data with `type` and `sequence_number` added.
    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.next_seq());
        out.extend_from_slice(&frame(Some(kind), &data));
    }

    /// The next event's `sequence_number`.
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    fn open_message(&mut self, out: &mut Vec<u8>) -> usize {
        let id = match self.messages {
            0 => self.base.message_id(),
            n => format!("{}_{n}", self.base.message_id()),
        };
        self.messages += 1;
        let index = self.items.len();
        self.event(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": body::Item::message(&*id, Vec::new(), "in_progress")}),
        );
        self.items.push(Item::Message {
            id,
            parts: Vec::new(),
            open: true,
        });
        index
    }

    /// The open message (opened if need be) and the index of its last part, a new part
    /// (`response.content_part.added`) when the last one is not of the kind wanted.
    fn open_part(&mut self, out: &mut Vec<u8>, refusal: bool) -> (usize, usize) {
        self.close_reasoning(out);
        let index = match self.open_text() {
            Some(i) => i,
            None => self.open_message(out),
        };
        let Item::Message { id, parts, .. } = &mut self.items[index] else {
            return (index, 0);
        };
        let fits = match parts.last() {
            Some(Part::Refusal(_)) => refusal,
            Some(Part::Text { .. }) => !refusal,
            None => false,
        };
        if fits {
            return (index, parts.len() - 1);
        }
        let part = if refusal {
            Part::Refusal(String::new())
        } else {
            Part::Text {
                text: String::new(),
                logprobs: Vec::new(),
            }
        };
        let added = json!({"item_id": id, "output_index": index,
            "content_index": parts.len(), "part": part.typed()});
        parts.push(part);
        let at = parts.len() - 1;
        self.event(out, "response.content_part.added", added);
        (index, at)
    }

    /// Close the item at `index` (its `done` events); `status` for a message.
    fn close(&mut self, out: &mut Vec<u8>, index: usize, status: &str) {
        let base = Arc::clone(&self.base);
        let events: Vec<(&str, Value)> = match &mut self.items[index] {
            Item::Message { open: false, .. }
            | Item::Call { open: false, .. }
            | Item::Native { .. }
            | Item::Reasoning { open: false, .. } => return,
            Item::Reasoning {
                id,
                block,
                summarized,
                open,
                ..
            } => {
                *open = false;
                let mut events = Vec::with_capacity(3);
                if *summarized {
                    let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
                    let mut text = at.clone();
                    text["text"] = json!(block.text);
                    let mut part = at;
                    part["part"] = json!(SummaryPart::of(&block.text));
                    events.push(("response.reasoning_summary_text.done", text));
                    events.push(("response.reasoning_summary_part.done", part));
                }
                let item = base.reasoning_item(&**id, block, "completed");
                events.push((
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                events
            }
            Item::Message { id, parts, open } => {
                *open = false;
                let mut events = Vec::with_capacity(2 * parts.len() + 1);
                for (n, part) in parts.iter().enumerate() {
                    let at = json!({"item_id": id, "output_index": index, "content_index": n});
                    let mut done = at.clone();
                    let kind = match part {
                        Part::Text { text, logprobs } => {
                            done["text"] = json!(text);
                            done["logprobs"] = json!(logprobs);
                            "response.output_text.done"
                        }
                        Part::Refusal(r) => {
                            done["refusal"] = json!(r);
                            "response.refusal.done"
                        }
                    };
                    let mut part_done = at;
                    part_done["part"] = json!(part.typed());
                    events.push((kind, done));
                    events.push(("response.content_part.done", part_done));
                }
                let item =
                    body::Item::message(&**id, parts.iter().map(Part::typed).collect(), status);
                events.push((
                    "response.output_item.done",
                    json!({"output_index": index, "item": item}),
                ));
                events
            }
            Item::Call {
                id,
                call_id,
                name,
                arguments,
                open,
                ..
            } => {
                *open = false;
                vec![
                    (
                        "response.function_call_arguments.done",
                        json!({"item_id": id, "output_index": index, "name": name, "arguments": arguments}),
                    ),
                    (
                        "response.output_item.done",
                        json!({"output_index": index, "item": body::Item::call(&**id, call_id, name, arguments, "completed")}),
                    ),
                ]
            }
        };
        for (kind, data) in events {
            self.event(out, kind, data);
        }
    }

    /// Close the last item if it is an open reasoning item (something else starts).
    fn close_reasoning(&mut self, out: &mut Vec<u8>) {
        if let Some(Item::Reasoning { open: true, .. }) = self.items.last() {
            self.close(out, self.items.len() - 1, "completed");
        }
    }

    /// A piece of reasoning block `d.index`: opens its item on the first piece (closing
    /// whatever was open last), streams its text as summary deltas when a summary was
    /// asked for, and keeps the signature or redacted data for the item's `done`.
    fn reasoning(&mut self, out: &mut Vec<u8>, d: &ThinkingDelta) {
        let found = self
            .items
            .iter()
            .position(|it| matches!(it, Item::Reasoning { index, .. } if *index == d.index));
        let at = match found {
            Some(at) => at,
            None => {
                self.close_before_new_item(out);
                let id = self.base.reasoning_id(self.reasonings);
                self.reasonings += 1;
                let at = self.items.len();
                self.event(
                    out,
                    "response.output_item.added",
                    json!({"output_index": at, "item": {"id": id, "type": "reasoning", "summary": [], "status": "in_progress"}}),
                );
                self.items.push(Item::Reasoning {
                    id,
                    index: d.index,
                    block: Thinking::default(),
                    summarized: false,
                    open: true,
                });
                at
            }
        };
        let summary = self.base.echo.reasoning_summary;
        let Item::Reasoning {
            id,
            block,
            summarized,
            ..
        } = &mut self.items[at]
        else {
            return;
        };
        block.text.push_str(&d.text);
        if let Some(s) = &d.signature {
            block.signature = Some(s.clone());
        }
        if let Some(r) = &d.redacted {
            block.redacted = Some(r.clone());
        }
        if !summary || d.text.is_empty() {
            return;
        }
        let (id, first) = (id.clone(), !*summarized);
        *summarized = true;
        let at_part = json!({"item_id": id, "output_index": at, "summary_index": 0});
        if first {
            let mut added = at_part.clone();
            added["part"] = json!(SummaryPart::of(""));
            self.event(out, "response.reasoning_summary_part.added", added);
        }
        let mut delta = at_part;
        delta["delta"] = json!(d.text);
        self.event(out, "response.reasoning_summary_text.delta", delta);
    }

    /// The open message, if the last item is one.
    fn open_text(&self) -> Option<usize> {
        match self.items.last() {
            Some(Item::Message { open: true, .. }) => Some(self.items.len() - 1),
            _ => None,
        }
    }

    /// A text delta, with its tokens' log probabilities (kept for the part's `done`).
    fn text(&mut self, out: &mut Vec<u8>, delta: &str, entries: Option<&Value>) {
        let (index, at) = self.open_part(out, false);
        let Item::Message { id, parts, .. } = &mut self.items[index] else {
            return;
        };
        let entries = entries
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if let Some(Part::Text { text, logprobs }) = parts.get_mut(at) {
            text.push_str(delta);
            logprobs.extend(entries.iter().cloned());
        }
        let id = id.clone();
        self.event(
            out,
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": at, "delta": delta, "logprobs": entries}),
        );
    }

    /// A piece of the model's refusal message: a `refusal` part of the open message.
    fn refusal(&mut self, out: &mut Vec<u8>, delta: &str) {
        let (index, at) = self.open_part(out, true);
        let Item::Message { id, parts, .. } = &mut self.items[index] else {
            return;
        };
        if let Some(Part::Refusal(r)) = parts.get_mut(at) {
            r.push_str(delta);
        }
        let id = id.clone();
        self.event(
            out,
            "response.refusal.delta",
            json!({"item_id": id, "output_index": index, "content_index": at, "delta": delta}),
        );
    }

    /// Close the open reasoning item and the open message: a new reasoning item or
    /// function call follows them.
    fn close_before_new_item(&mut self, out: &mut Vec<u8>) {
        self.close_reasoning(out);
        if let Some(m) = self.open_text() {
            self.close(out, m, "completed");
        }
    }

    fn call(&mut self, out: &mut Vec<u8>, d: &switchyard::chat::ToolCallDelta) {
        let found = self
            .items
            .iter()
            .position(|it| matches!(it, Item::Call { index, .. } if *index == d.index));
        let at = match found {
            Some(at) => at,
            None => {
                self.close_before_new_item(out);
                let id = self.base.call_id(self.calls);
                self.calls += 1;
                let call_id = d.id.clone().unwrap_or_else(|| format!("call_{id}"));
                let name = d.name.clone().unwrap_or_default();
                let at = self.items.len();
                self.event(
                    out,
                    "response.output_item.added",
                    json!({"output_index": at, "item": body::Item::call(&*id, &call_id, &name, "", "in_progress")}),
                );
                self.items.push(Item::Call {
                    id,
                    index: d.index,
                    call_id,
                    name,
                    arguments: String::new(),
                    open: true,
                });
                at
            }
        };
        if d.arguments.is_empty() {
            return;
        }
        let Item::Call { id, arguments, .. } = &mut self.items[at] else {
            return;
        };
        arguments.push_str(&d.arguments);
        let id = id.clone();
        self.event(
            out,
            "response.function_call_arguments.delta",
            json!({"item_id": id, "output_index": at, "delta": d.arguments}),
        );
    }

    /// The output items as streamed, each with its final status.
    fn output<'a>(&'a self, status: &'a str) -> Vec<body::Item<'a>> {
        self.items
            .iter()
            .map(|it| match it {
                Item::Reasoning { id, block, .. } => self.base.reasoning_item(&**id, block, status),
                Item::Message { id, parts, .. } => {
                    body::Item::message(&**id, parts.iter().map(Part::typed).collect(), status)
                }
                Item::Call {
                    id,
                    call_id,
                    name,
                    arguments,
                    ..
                } => body::Item::call(&**id, call_id, name, arguments, status),
                Item::Native { item, .. } => body::Item::Native(item),
            })
            .collect()
    }

    /// A native piece: an event of an output item the shared shape cannot carry, passed
    /// on with its `output_index` in this stream's numbering. A new item closes an open
    /// message first (the vendor finished it before starting the next).
    fn native(&mut self, out: &mut Vec<u8>, event: &Value) {
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return;
        };
        let Some(upstream) = event.get("output_index").and_then(Value::as_u64) else {
            return;
        };
        let mut data = event.clone();
        let at = if kind == "response.output_item.added" {
            if let Some(m) = self.open_text() {
                self.close(out, m, "completed");
            }
            let item = event.get("item").cloned().unwrap_or(Value::Null);
            self.items.push(Item::Native { upstream, item });
            self.items.len() - 1
        } else {
            let found = self
                .items
                .iter()
                .position(|it| matches!(it, Item::Native { upstream: u, .. } if *u == upstream));
            let Some(at) = found else {
                return;
            };
            if kind == "response.output_item.done" {
                if let (Item::Native { item, .. }, Some(done)) =
                    (&mut self.items[at], event.get("item"))
                {
                    item.clone_from(done);
                }
            }
            at
        };
        data["output_index"] = json!(at);
        self.event(out, kind, data);
    }
}

impl StreamEncoder for EventEncoder {
    fn start(&mut self) -> Bytes {
        let mut out = Vec::with_capacity(2048);
        for kind in ["response.created", "response.in_progress"] {
            let seq = self.next_seq();
            let object = self.base.response(&self.model, "in_progress", Vec::new());
            response_event(&mut out, kind, seq, object);
        }
        Bytes::from(out)
    }

    fn chunk(&mut self, c: &ChatChunk) -> Bytes {
        if let Some(m) = &c.model {
            self.model.clone_from(m);
        }
        let mut out = Vec::new();
        for d in &c.thinking {
            self.reasoning(&mut out, d);
        }
        if !c.text.is_empty() {
            self.text(&mut out, &c.text, c.logprobs.as_ref());
        }
        if !c.refusal.is_empty() {
            self.refusal(&mut out, &c.refusal);
        }
        for d in &c.tool_calls {
            self.call(&mut out, d);
        }
        // the finish chunk's native piece is the whole response: `done` writes the end
        if let (Some(event), None) = (&c.native, &c.finish_reason) {
            self.native(&mut out, event);
        }
        Bytes::from(out)
    }

    fn done(&mut self, resp: &ChatResponse) -> Bytes {
        let mut out = Vec::new();
        let status = item_status(resp);
        for i in 0..self.items.len() {
            self.close(&mut out, i, status);
        }
        let seq = self.next_seq();
        let body = self.base.finished(resp, self.output(status));
        let kind = if body.status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        response_event(&mut out, kind, seq, body);
        Bytes::from(out)
    }

    /// `response.failed` with the partial output (items `incomplete`) and the error.
    fn failed(&mut self, err: &ApiError) -> Bytes {
        let mut out = Vec::new();
        let seq = self.next_seq();
        let mut body = self
            .base
            .response(&self.model, "failed", self.output("incomplete"));
        let code = match err.status.as_u16() {
            429 => "rate_limit_exceeded",
            _ => "server_error",
        };
        let message = err.body()["error"]["message"].clone();
        body.error = Some(body::Failure { code, message });
        response_event(&mut out, "response.failed", seq, body);
        Bytes::from(out)
    }
}
