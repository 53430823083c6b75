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
//! Items open in the order their first piece arrives: a message stays open until a
//! function call starts (text after that opens a new message); function calls stay open
//! until the end, since a vendor may interleave the pieces of parallel calls. From a
//! provider that answered natively, the events of items the shared shape cannot carry (a
//! `web_search_call`, a reasoning item) pass through as the vendor sent them, renumbered
//! into this stream's `output_index` and `sequence_number`.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::{json, Value};
use switchyard::{ChatChunk, ChatResponse};

use super::body::{call_item, item_status, message_item, text_part, Base};
use crate::http::dialects::{frame, StreamEncoder};
use crate::http::error::ApiError;

/// One output item as the stream has built it so far.
#[derive(Debug)]
enum Item {
    Message {
        id: String,
        text: String,
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
        }
    }

    /// One event: `event: <type>` and its data with `type` and `sequence_number` added.
    fn event(&mut self, out: &mut Vec<u8>, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        out.extend_from_slice(&frame(Some(kind), &data));
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
            json!({"output_index": index, "item": message_item(&id, "", "in_progress")}),
        );
        self.event(
            out,
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part("")}),
        );
        self.items.push(Item::Message {
            id,
            text: String::new(),
            open: true,
        });
        index
    }

    /// Close the item at `index` (its `done` events); `status` for a message.
    fn close(&mut self, out: &mut Vec<u8>, index: usize, status: &str) {
        let events: Vec<(&str, Value)> = match &mut self.items[index] {
            Item::Message { open: false, .. }
            | Item::Call { open: false, .. }
            | Item::Native { .. } => return,
            Item::Message { id, text, open } => {
                *open = false;
                vec![
                    (
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                    ),
                    (
                        "response.content_part.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "part": text_part(text)}),
                    ),
                    (
                        "response.output_item.done",
                        json!({"output_index": index, "item": message_item(id, text, status)}),
                    ),
                ]
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
                        json!({"output_index": index, "item": call_item(id, call_id, name, arguments, "completed")}),
                    ),
                ]
            }
        };
        for (kind, data) in events {
            self.event(out, kind, data);
        }
    }

    /// The open message, if the last item is one.
    fn open_text(&self) -> Option<usize> {
        match self.items.last() {
            Some(Item::Message { open: true, .. }) => Some(self.items.len() - 1),
            _ => None,
        }
    }

    fn text(&mut self, out: &mut Vec<u8>, delta: &str) {
        let index = match self.open_text() {
            Some(i) => i,
            None => self.open_message(out),
        };
        let Item::Message { id, text, .. } = &mut self.items[index] else {
            return;
        };
        text.push_str(delta);
        let id = id.clone();
        self.event(
            out,
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []}),
        );
    }

    fn call(&mut self, out: &mut Vec<u8>, d: &switchyard::chat::ToolCallDelta) {
        let found = self
            .items
            .iter()
            .position(|it| matches!(it, Item::Call { index, .. } if *index == d.index));
        let at = match found {
            Some(at) => at,
            None => {
                if let Some(m) = self.open_text() {
                    self.close(out, m, "completed");
                }
                let id = self.base.call_id(self.calls);
                self.calls += 1;
                let call_id = d.id.clone().unwrap_or_else(|| format!("call_{id}"));
                let name = d.name.clone().unwrap_or_default();
                let at = self.items.len();
                self.event(
                    out,
                    "response.output_item.added",
                    json!({"output_index": at, "item": call_item(&id, &call_id, &name, "", "in_progress")}),
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
    fn output(&self, status: &str) -> Vec<Value> {
        self.items
            .iter()
            .map(|it| match it {
                Item::Message { id, text, .. } => message_item(id, text, status),
                Item::Call {
                    id,
                    call_id,
                    name,
                    arguments,
                    ..
                } => call_item(id, call_id, name, arguments, status),
                Item::Native { item, .. } => item.clone(),
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
        let created = self.base.response(&self.model, "in_progress", Vec::new());
        self.event(&mut out, "response.created", json!({ "response": created }));
        let progress = self.base.response(&self.model, "in_progress", Vec::new());
        self.event(
            &mut out,
            "response.in_progress",
            json!({ "response": progress }),
        );
        Bytes::from(out)
    }

    fn chunk(&mut self, c: &ChatChunk) -> Bytes {
        if let Some(m) = &c.model {
            self.model.clone_from(m);
        }
        let mut out = Vec::new();
        if !c.text.is_empty() {
            self.text(&mut out, &c.text);
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
        let body = self.base.finished(resp, self.output(status));
        let kind = if body["status"] == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.event(&mut out, kind, json!({ "response": body }));
        Bytes::from(out)
    }

    /// `response.failed` with the partial output (items `incomplete`) and the error.
    fn failed(&mut self, err: &ApiError) -> Bytes {
        let mut out = Vec::new();
        let mut body = self
            .base
            .response(&self.model, "failed", self.output("incomplete"));
        let code = match err.status.as_u16() {
            429 => "rate_limit_exceeded",
            _ => "server_error",
        };
        body["error"] = json!({"code": code, "message": err.body()["error"]["message"]});
        self.event(&mut out, "response.failed", json!({ "response": body }));
        Bytes::from(out)
    }
}
