//! The `response` object: what a plain answer returns, what a stream's `response.created`
//! and `response.completed` events carry, and what `GET /v1/responses/{id}` gives back.
//! Built as JSON values with every field the official SDK's `Response` type requires.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Map, Value};
use switchyard::chat::{FinishReason, Thinking};
use switchyard::{ChatResponse, Usage};

use super::sealed;
use crate::http::dialects::flow::Trail;

/// What every event and body of one response shares: its id, its time and the request's
/// settings it echoes.
#[derive(Debug)]
pub(crate) struct Base {
    /// `resp_<random>`.
    pub id: String,
    /// Unix seconds the request arrived.
    pub created_at: u64,
    pub echo: Echo,
    /// Set once the answer is kept in the state backend (`store`).
    pub stored: AtomicBool,
}

/// The request's settings, echoed in the response as OpenAI does.
#[derive(Debug, Default)]
pub(crate) struct Echo {
    pub instructions: Option<String>,
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub max_output_tokens: Option<u32>,
    pub parallel_tool_calls: bool,
    pub metadata: Map<String, Value>,
    pub previous_response_id: Option<String>,
    pub text: Value,
    pub reasoning: Value,
    pub store: bool,
    pub user: Option<String>,
    /// `top_logprobs` as the client sent it (0 when unset, as OpenAI echoes it).
    pub top_logprobs: u32,
    /// `reasoning.summary` asked for one: reasoning items carry the reasoning text as
    /// their summary.
    pub reasoning_summary: bool,
    /// Reasoning items carry `encrypted_content` (the sealed format): the client asked
    /// for it (`include`), or the response is stored (its items may come back as input).
    pub sealed_reasoning: bool,
}

impl Base {
    /// `msg_<id>`: the answer's message item.
    pub(crate) fn message_id(&self) -> String {
        format!("msg_{}", self.suffix())
    }

    /// `fc_<id>_<n>`: the answer's `n`th function call item.
    pub(crate) fn call_id(&self, n: usize) -> String {
        format!("fc_{}_{n}", self.suffix())
    }

    /// `rs_<id>_<n>`: the answer's `n`th reasoning item.
    pub(crate) fn reasoning_id(&self, n: usize) -> String {
        format!("rs_{}_{n}", self.suffix())
    }

    /// A reasoning item for one reasoning block: its text as the summary when one was
    /// asked for (a redacted block has none to show), the block sealed in
    /// `encrypted_content` when that was asked for or the response is stored.
    pub(crate) fn reasoning_item(&self, id: &str, block: &Thinking, status: &str) -> Value {
        let summary = if self.echo.reasoning_summary && !block.text.is_empty() {
            json!([summary_part(&block.text)])
        } else {
            json!([])
        };
        let mut item = json!({"id": id, "type": "reasoning", "summary": summary, "status": status});
        if self.echo.sealed_reasoning {
            item["encrypted_content"] = json!(sealed::seal(std::slice::from_ref(block)));
        }
        item
    }

    fn suffix(&self) -> &str {
        self.id.trim_start_matches("resp_")
    }

    /// The response object with the given status, output, usage and extras.
    pub(crate) fn response(&self, model: &str, status: &str, output: Vec<Value>) -> Value {
        let e = &self.echo;
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": null,
            "instructions": e.instructions,
            "max_output_tokens": e.max_output_tokens,
            "max_tool_calls": null,
            "model": model,
            "output": output,
            "parallel_tool_calls": e.parallel_tool_calls,
            "previous_response_id": e.previous_response_id,
            "reasoning": e.reasoning,
            "service_tier": "default",
            "store": e.store,
            "temperature": e.temperature,
            "text": e.text,
            "tool_choice": e.tool_choice,
            "tools": e.tools,
            "top_logprobs": e.top_logprobs,
            "top_p": e.top_p,
            "truncation": "disabled",
            "usage": null,
            "user": e.user,
            "metadata": e.metadata,
        })
    }

    /// A finished answer: `completed`, or `incomplete` with the reason when the model
    /// stopped at the token limit or a content filter; usage and the `switchyard` object.
    pub(crate) fn finished(&self, resp: &ChatResponse, output: Vec<Value>) -> Value {
        let (status, reason) = outcome(resp);
        let mut body = self.response(&resp.model, status, output);
        body["completed_at"] = json!(self.created_at + resp.latency.as_secs());
        if let Some(reason) = reason {
            body["incomplete_details"] = json!({ "reason": reason });
            body["completed_at"] = Value::Null;
        }
        body["usage"] = resp.usage.as_ref().map_or(Value::Null, usage);
        body["switchyard"] = self.trail(resp);
        body
    }

    /// The `switchyard` object: who answered, the attempts, the cost, whether it was kept.
    pub(crate) fn trail(&self, resp: &ChatResponse) -> Value {
        let mut trail = serde_json::to_value(Trail::of(resp)).unwrap_or_else(|_| json!({}));
        trail["stored"] = json!(self.stored.load(Ordering::Acquire));
        trail
    }

    /// The output items of a whole answer: one reasoning item per reasoning block, its
    /// text as one message (when there is text, or nothing else; with the text's
    /// `logprobs`, and a `refusal` part when the model refused), then one item per
    /// function call.
    pub(crate) fn output(&self, resp: &ChatResponse) -> Vec<Value> {
        let status = item_status(resp);
        let mut items = Vec::with_capacity(1 + resp.thinking.len() + resp.tool_calls.len());
        for (n, block) in resp.thinking.iter().enumerate() {
            items.push(self.reasoning_item(&self.reasoning_id(n), block, "completed"));
        }
        let refused = !resp.refusal.is_empty();
        if !resp.text.is_empty() || (resp.tool_calls.is_empty() && !refused) {
            let mut part = text_part(&resp.text);
            if let Some(entries) = resp.logprobs.as_ref().and_then(|l| l.get("content")) {
                part["logprobs"] = entries.clone();
            }
            let mut parts = vec![part];
            if refused {
                parts.push(refusal_part(&resp.refusal));
            }
            items.push(message_item(&self.message_id(), parts, status));
        } else if refused {
            let parts = vec![refusal_part(&resp.refusal)];
            items.push(message_item(&self.message_id(), parts, status));
        }
        for (n, call) in resp.tool_calls.iter().enumerate() {
            items.push(call_item(
                &self.call_id(n),
                &call.id,
                &call.name,
                &call.arguments,
                "completed",
            ));
        }
        items
    }
}

/// The response's status and, when incomplete, why.
pub(crate) fn outcome(resp: &ChatResponse) -> (&'static str, Option<&'static str>) {
    match resp.finish_reason {
        Some(FinishReason::Length) => ("incomplete", Some("max_output_tokens")),
        Some(FinishReason::ContentFilter) => ("incomplete", Some("content_filter")),
        _ => ("completed", None),
    }
}

/// A message item's status for this answer.
pub(crate) fn item_status(resp: &ChatResponse) -> &'static str {
    match outcome(resp) {
        ("incomplete", _) => "incomplete",
        _ => "completed",
    }
}

/// An assistant message item with these content parts (`output_text`, `refusal`).
pub(crate) fn message_item(id: &str, parts: Vec<Value>, status: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": parts,
    })
}

/// A `refusal` content part: the model's refusal message.
pub(crate) fn refusal_part(refusal: &str) -> Value {
    json!({"type": "refusal", "refusal": refusal})
}

/// A reasoning item's `summary_text` part.
pub(crate) fn summary_part(text: &str) -> Value {
    json!({"type": "summary_text", "text": text})
}

/// An `output_text` content part.
pub(crate) fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// A `function_call` item.
pub(crate) fn call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &str,
) -> Value {
    json!({
        "id": id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    })
}

/// OpenAI's Responses usage object (`total_tokens` saturates).
pub(crate) fn usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {
            "cached_tokens": u.cached_input_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        },
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.total_tokens(),
    })
}
