//! The Chat Completions reader as it was before it read borrowed strings and the content
//! straight into its text (`reply.rs`, `wire.rs`), kept to check the two agree
//! (`reply::the_one_pass_reader_reads_what_the_value_reader_read`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::super::classify::classify_value;
use super::super::reply::{finish_reason, malformed, usage};
use crate::chat::{Choice, ProviderReply, Thinking, ToolCall};
use crate::cost::Money;
use crate::error::ProviderError;
use crate::provider::http::snippet;

/// The completion's serde types as they were.
mod wire {
    use serde::Deserialize;
    use serde_json::Value;

    use super::super::super::wire::{ResponseToolCall, Usage};

    /// A `chat.completion` object, or an error object some servers return with a 200.
    #[derive(Debug, Deserialize)]
    pub(super) struct Completion {
        /// The completion's id (`chatcmpl-…`).
        #[serde(default)]
        pub id: Option<String>,
        /// Absent means this is not a completion (checked, never defaulted).
        pub choices: Option<Vec<Choice>>,
        #[serde(default)]
        pub model: Option<String>,
        #[serde(default)]
        pub system_fingerprint: Option<String>,
        #[serde(default)]
        pub usage: Option<Usage>,
        #[serde(default)]
        pub error: Option<Value>,
        /// vLLM's older top-level error shape: `{"object": "error", "message": ...}`.
        #[serde(default)]
        pub object: Option<String>,
    }

    /// One choice of a completion.
    #[derive(Debug, Deserialize)]
    pub(super) struct Choice {
        #[serde(default)]
        pub index: u32,
        pub message: ResponseMessage,
        #[serde(default)]
        pub finish_reason: Option<String>,
        /// `{"content": [...]}` for a request with `logprobs`.
        #[serde(default)]
        pub logprobs: Option<Value>,
    }

    /// The assistant message of a choice.
    #[derive(Debug, Deserialize)]
    pub(super) struct ResponseMessage {
        /// A string, `null`, or (some servers) a list of text parts.
        #[serde(default)]
        pub content: Option<Value>,
        #[serde(default)]
        pub refusal: Option<String>,
        #[serde(default)]
        pub tool_calls: Option<Vec<ResponseToolCall>>,
        /// The reasoning text OpenAI-compatible reasoning servers return (DeepSeek, vLLM).
        #[serde(default)]
        pub reasoning_content: Option<String>,
        /// The same under the name newer servers use (vLLM, OpenRouter).
        #[serde(default)]
        pub reasoning: Option<String>,
        /// Spoken output (see [`Extras`]).
        #[serde(default)]
        pub audio: Option<Value>,
        /// Web search citations (see [`Extras`]).
        #[serde(default)]
        pub annotations: Option<Value>,
        /// The deprecated function call (see [`Extras`]).
        #[serde(default)]
        pub function_call: Option<Value>,
    }
}

pub(super) fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let completion: wire::Completion = serde_json::from_slice(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a chat completion, got {what}"))
    })?;
    if completion.error.is_some() || completion.object.as_deref() == Some("error") {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let choices = completion
        .choices
        .ok_or_else(|| malformed("chat completion without `choices`"))?;
    let mut extras = Vec::new();
    let mut choices: Vec<(Choice, Vec<Thinking>)> = by_index(choices)
        .into_iter()
        .map(|mut c| {
            let index = c.index;
            let m = &mut c.message;
            let pieces = super::super::wire::extras(
                m.audio.take(),
                m.annotations.take(),
                m.function_call.take(),
            );
            extras.extend(pieces.map(|m| json!({"index": index, "message": m})));
            choice(c)
        })
        .collect::<Result<_, _>>()?;
    if choices.is_empty() {
        return Err(malformed("chat completion with no choices"));
    }
    let (first, thinking) = choices.remove(0);
    Ok(ProviderReply {
        thinking,
        text: first.text,
        refusal: first.refusal,
        system_fingerprint: completion.system_fingerprint,
        tool_calls: first.tool_calls,
        finish_reason: first.finish_reason,
        logprobs: first.logprobs,
        alternatives: choices.into_iter().map(|(c, _)| c).collect(),
        id: completion.id,
        model: completion.model,
        usage: completion.usage.map(usage).transpose()?,
        reported_cost: completion
            .usage
            .and_then(|u| u.cost)
            .and_then(|usd| (usd.is_finite() && usd >= 0.0).then(|| Money::from_usd(usd))),
        reported_latency: None,
        native: (!extras.is_empty()).then(|| Arc::new(json!({ "choices": extras }))),
    })
}

/// The choices in order of `index`, one per index (the last of a repeated one). Most
/// answers have one choice, or several already in order: those are kept as they came,
/// without building a map.
fn by_index(choices: Vec<wire::Choice>) -> Vec<wire::Choice> {
    if choices.windows(2).all(|w| w[0].index < w[1].index) {
        return choices;
    }
    (choices.into_iter().map(|c| (c.index, c)))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect()
}

/// One choice of a completion (its text, tool calls, finish reason and log probabilities)
/// and its reasoning (kept for the first choice only: the shared reply has one).
fn choice(choice: wire::Choice) -> Result<(Choice, Vec<Thinking>), ProviderError> {
    let message = choice.message;
    let thinking = match message.reasoning_content.or(message.reasoning) {
        Some(text) if !text.is_empty() => vec![Thinking {
            text,
            ..Thinking::default()
        }],
        _ => Vec::new(),
    };
    let text = match message.content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(other) => return Err(malformed(format!("unexpected message content: {other}"))),
    };
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: match c.function.arguments {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
            },
        })
        .collect();
    let answer = Choice {
        text,
        refusal: message.refusal.unwrap_or_default(),
        tool_calls,
        finish_reason: choice.finish_reason.as_deref().map(finish_reason),
        logprobs: choice.logprobs.filter(|l| !l.is_null()),
    };
    Ok((answer, thinking))
}
