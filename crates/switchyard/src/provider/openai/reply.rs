//! Chat Completions answers: a whole completion ([`parse_response`]) and the pieces streamed
//! chunks share with it (finish reasons, usage), and the vendor's processing time. Error
//! objects found here go to `classify.rs`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::classify::classify_value;
use super::wire;
use crate::chat::{Choice, FinishReason, ProviderReply, Thinking, ToolCall, Usage};
use crate::cost::Money;
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::{snippet, UpstreamResponse};

pub(super) mod scan;

/// Parse a 200 response body. A body that is not a chat completion (HTML from a proxy,
/// empty, no `choices`) is `Malformed`; an error object is classified. The message's
/// `reasoning_content` (or `reasoning`), which OpenAI-compatible reasoning servers return,
/// is its one [`Thinking`] block: text, no signature. A `refusal` is the reply's refusal
/// (apart from the text, which is then usually empty); `system_fingerprint` is kept. What
/// OpenAI answers to its own contract fields (`audio`, non-empty `annotations`,
/// `function_call`) is the reply's `native`: `{"choices": [{"index", "message": {...}}]}`,
/// those pieces only, for the Chat Completions dialect to pass on.
///
/// # Errors
/// As above.
///
/// The usual answer (one choice of text) is read by hand ([`scan::completion`]), into
/// what serde would have read from it; any other is read by serde.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    match scan::completion(body) {
        Some(completion) => reply(body, completion),
        None => reply(body, read(body)?),
    }
}

/// [`parse_response`] with serde alone: the oracle the hand-read answer is checked
/// against (`tests/reply.rs`).
#[cfg(test)]
pub(super) fn parse_response_serde(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    reply(body, read(body)?)
}

/// The completion as serde reads it.
pub(super) fn read(body: &[u8]) -> Result<wire::Completion<'_>, ProviderError> {
    crate::json_text::from_bytes(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a chat completion, got {what}"))
    })
}

/// The reply a completion read from `body` makes.
fn reply(body: &[u8], completion: wire::Completion<'_>) -> Result<ProviderReply, ProviderError> {
    if completion.error.is_some() || completion.object.as_deref() == Some("error") {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let choices = completion
        .choices
        .ok_or_else(|| malformed("chat completion without `choices`"))?;
    let mut extras = Vec::new();
    let mut choices = by_index(choices).into_iter().map(|mut c| {
        let index = c.index;
        let m = &mut c.message;
        let pieces = wire::extras(m.audio.take(), m.annotations.take(), m.function_call.take());
        extras.extend(pieces.map(|m| json!({"index": index, "message": m})));
        c
    });
    let (first, thinking) = match choices.next() {
        Some(c) => choice(c, true)?,
        None => return Err(malformed("chat completion with no choices")),
    };
    let alternatives = choices
        .map(|c| choice(c, false).map(|(c, _)| c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ProviderReply {
        thinking,
        text: first.text,
        refusal: first.refusal,
        system_fingerprint: completion.system_fingerprint.map(Cow::into_owned),
        tool_calls: first.tool_calls,
        finish_reason: first.finish_reason,
        logprobs: first.logprobs,
        alternatives,
        id: completion.id.map(Cow::into_owned),
        model: completion.model.map(Cow::into_owned),
        usage: completion.usage.map(usage).transpose()?,
        reported_cost: completion.usage.and_then(|u| u.cost).and_then(money),
        reported_latency: None,
        native: (!extras.is_empty()).then(|| Arc::new(json!({ "choices": extras }))),
    })
}

/// The choices in order of `index`, one per index (the last of a repeated one). Most
/// answers have one choice, or several already in order: those are kept as they came,
/// without building a map.
fn by_index(choices: Vec<wire::Choice<'_>>) -> Vec<wire::Choice<'_>> {
    if choices.windows(2).all(|w| w[0].index < w[1].index) {
        return choices;
    }
    (choices.into_iter().map(|c| (c.index, c)))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect()
}

/// One choice of a completion (its text, tool calls, finish reason and log probabilities)
/// and, with `thinking`, its reasoning (kept for the first choice only: the shared reply
/// has one).
fn choice(
    choice: wire::Choice<'_>,
    thinking: bool,
) -> Result<(Choice, Vec<Thinking>), ProviderError> {
    let message = choice.message;
    let thinking = match message.reasoning_content.or(message.reasoning) {
        Some(text) if thinking && !text.is_empty() => vec![Thinking {
            text: text.into_owned(),
            ..Thinking::default()
        }],
        _ => Vec::new(),
    };
    let text = match message.content {
        None => String::new(),
        Some(wire::MessageText(Ok(text))) => text,
        Some(wire::MessageText(Err(other))) => {
            return Err(malformed(format!("unexpected message content: {other}")))
        }
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
        refusal: message.refusal.map(Cow::into_owned).unwrap_or_default(),
        tool_calls,
        finish_reason: choice.finish_reason.as_deref().map(finish_reason),
        logprobs: choice.logprobs.filter(|l| !l.is_null()),
    };
    Ok((answer, thinking))
}

/// OpenAI's finish reasons, normalised (`function_call` is the legacy `tool_calls`).
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The shared usage; an absurd count (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the
/// reply `Malformed`, so the call fails over instead of being billed or counted.
pub(super) fn usage(u: wire::Usage) -> Result<Usage, ProviderError> {
    let usage = Usage {
        input_tokens: u.prompt_tokens.unwrap_or(0),
        output_tokens: u.completion_tokens.unwrap_or(0),
        cached_input_tokens: u
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}

fn money(usd: f64) -> Option<Money> {
    (usd.is_finite() && usd >= 0.0).then(|| Money::from_usd(usd))
}

/// `openai-processing-ms`: the vendor's own time for the call.
pub(super) fn processing_time(response: &UpstreamResponse) -> Option<Duration> {
    let ms: f64 = response
        .header("openai-processing-ms")?
        .trim()
        .parse()
        .ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

pub(super) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}
