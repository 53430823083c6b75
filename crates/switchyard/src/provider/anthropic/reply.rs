//! Messages API answers: a whole message ([`parse_response`]), stop reasons, usage in the
//! shared convention, and the seam that drops a trimmed prefill's whitespace from the start
//! of the reply. Error objects found here go to `classify.rs`.

use serde_json::Value;

use super::classify::classify_value;
use super::{malformed, wire};
use crate::chat::{FinishReason, ProviderReply, Thinking, ToolCall, Usage};
use crate::error::ProviderError;
use crate::provider::http::snippet;

/// Parse a 200 response body. A body that is not a `message` (HTML from a proxy, empty, no
/// `content`, another `type`) is `Malformed`; an `error` object is classified.
///
/// Text blocks are concatenated; `tool_use` blocks become tool calls (arguments = the JSON
/// text of `input`); `thinking` and `redacted_thinking` blocks are kept, in order, as
/// [`Thinking`]; other blocks are not part of the answer.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let message: wire::Message = crate::json_text::from_bytes(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a message, got {what}"))
    })?;
    match message.kind.as_deref() {
        Some("message") => {}
        Some("error") => {
            let value = serde_json::from_slice(body).unwrap_or(Value::Null);
            return Err(classify_value(&value));
        }
        other => {
            return Err(malformed(format!(
                "expected an object of type \"message\", got {other:?}"
            )))
        }
    }
    let content = message
        .content
        .ok_or_else(|| malformed("message without `content`"))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    let mut thinking = Vec::new();
    for block in content {
        match block {
            wire::ContentBlock::Text { text: t } => text.push_str(&t),
            wire::ContentBlock::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id,
                name,
                arguments: arguments_text(&input),
            }),
            wire::ContentBlock::Thinking {
                thinking: t,
                signature,
            } => thinking.push(Thinking {
                text: t,
                signature,
                redacted: None,
            }),
            wire::ContentBlock::RedactedThinking { data } => thinking.push(Thinking {
                redacted: Some(data),
                ..Thinking::default()
            }),
            wire::ContentBlock::Other => {}
        }
    }
    Ok(ProviderReply {
        text,
        tool_calls,
        thinking,
        finish_reason: message.stop_reason.as_deref().map(finish_reason),
        id: message.id,
        model: message.model,
        usage: message.usage.map(normalized_usage).transpose()?,
        reported_cost: None,
        reported_latency: None,
        ..ProviderReply::default()
    })
}

/// A reply to a request whose JSON answer was asked for through the forced tool `tool`:
/// the tool's input is the answer's text and the stop is a plain one; no tool call is
/// left. (With a forced tool, Anthropic writes no text before the call.) A reply without
/// the call (cut by `max_tokens` first) stays as it is.
pub(super) fn tool_as_answer(reply: &mut ProviderReply, tool: &str) {
    let Some(at) = reply.tool_calls.iter().position(|c| c.name == tool) else {
        return;
    };
    let call = reply.tool_calls.remove(at);
    reply.text = call.arguments;
    if reply.finish_reason == Some(FinishReason::ToolCalls) {
        reply.finish_reason = Some(FinishReason::Stop);
    }
}

/// Whitespace trimmed off a prefill, still to be dropped from the start of the reply.
#[derive(Debug, Default)]
pub(super) struct Seam {
    pending: String,
}

impl Seam {
    pub(super) fn new(trimmed: String) -> Self {
        Self { pending: trimmed }
    }

    /// Drop from the start of `text` the characters it shares with what is pending. Text
    /// arrives in pieces: a piece consumed whole leaves the rest pending; any other text
    /// ends the seam.
    pub(super) fn apply(&mut self, text: &mut String) {
        if self.pending.is_empty() || text.is_empty() {
            return;
        }
        let common: usize = self
            .pending
            .chars()
            .zip(text.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        text.drain(..common);
        if text.is_empty() {
            self.pending.drain(..common);
        } else {
            self.pending.clear();
        }
    }
}

/// A tool call's `input` as arguments text (`{}` when absent).
pub(super) fn arguments_text(input: &Value) -> String {
    match input {
        Value::Null => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// Anthropic's stop reasons, normalised. `model_context_window_exceeded` is a truncation
/// (documented as "treat the response as truncated"); `pause_turn` and unknown reasons are
/// kept verbatim.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Anthropic's usage in the shared convention (see the module docs); an absurd count
/// (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the reply `Malformed`.
pub(super) fn normalized_usage(u: wire::Usage) -> Result<Usage, ProviderError> {
    let cache_read = u.cache_read_input_tokens.unwrap_or(0);
    let split = u.cache_creation.unwrap_or_default();
    let write_5m = split.ephemeral_5m_input_tokens.unwrap_or(0);
    let write_1h = split.ephemeral_1h_input_tokens.unwrap_or(0);
    // the total is the sum of the split; a reply with only the split still counts it
    let cache_write = u
        .cache_creation_input_tokens
        .unwrap_or(0)
        .max(write_5m.saturating_add(write_1h));
    let usage = Usage {
        input_tokens: u
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cache_read)
            .saturating_add(cache_write),
        output_tokens: u.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        cache_write_tokens: cache_write,
        cache_write_1h_tokens: write_1h.min(cache_write),
        // Anthropic reports no thinking count: thinking is in `output_tokens`, billed at
        // the output rate, so the cost is right without it.
        reasoning_tokens: 0,
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}
