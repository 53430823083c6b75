//! Responses answers: a `response` object's output items as the shared reply (text, tool
//! calls, finish reason, usage), for a whole answer ([`parse_response`]) and a stream's
//! final event. Error objects found here go to the OpenAI classifier.

use std::sync::Arc;

use serde_json::Value;

use super::super::classify_value;
use crate::chat::{FinishReason, ProviderReply, ToolCall, Usage};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::snippet;

/// Parse a 200 body: a `response` object. One with `status: failed` (or an error object)
/// is classified; a body that is not a finished response is `Malformed`. With `native`,
/// the whole object is kept as the reply's native answer.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8], native: bool) -> Result<ProviderReply, ProviderError> {
    let response: Value = serde_json::from_slice(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a response, got {what}"))
    })?;
    let mut reply = summary(&response)?;
    if native {
        reply.native = Some(Arc::new(response));
    }
    Ok(reply)
}

/// A finished `response` object as the shared reply (no native answer).
///
/// # Errors
/// The classified error of a failed response or an error object; `Malformed` for anything
/// else that is not a finished response, or absurd usage.
pub(super) fn summary(response: &Value) -> Result<ProviderReply, ProviderError> {
    let failed = response.get("status").and_then(Value::as_str) == Some("failed");
    let error = response.get("error").is_some_and(|e| !e.is_null());
    if failed || (error && response.get("output").is_none()) {
        return Err(classify_value(response));
    }
    let Some(output) = response.get("output").and_then(Value::as_array) else {
        return Err(malformed(format!(
            "a response without `output`: {}",
            snippet(response.to_string().as_bytes())
        )));
    };
    let status = response.get("status").and_then(Value::as_str);
    if matches!(status, Some("queued" | "in_progress" | "cancelled")) {
        return Err(malformed(format!(
            "a response that did not finish (status {:?})",
            status.unwrap_or_default()
        )));
    }
    let Output {
        text,
        refusal,
        tool_calls,
        logprobs,
    } = read_output(output);
    let finish = finish_reason(response, !tool_calls.is_empty());
    Ok(ProviderReply {
        text,
        refusal,
        logprobs: logprobs.map(|entries| serde_json::json!({ "content": entries })),
        tool_calls,
        finish_reason: Some(finish),
        id: response
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        model: response
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
        usage: response
            .get("usage")
            .filter(|u| !u.is_null())
            .map(usage)
            .transpose()?,
        ..ProviderReply::default()
    })
}

/// What a response's output items say, in the shared terms.
struct Output {
    text: String,
    refusal: String,
    tool_calls: Vec<ToolCall>,
    /// The `output_text` parts' log probabilities (OpenAI's `logprobs.content` entries),
    /// when any part carried some.
    logprobs: Option<Vec<Value>>,
}

/// The messages' text, refusal and log probabilities, and the function calls.
fn read_output(output: &[Value]) -> Output {
    let mut text = String::new();
    let mut refusal = String::new();
    let mut tool_calls = Vec::new();
    let mut logprobs: Option<Vec<Value>> = None;
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            text.push_str(str_of(part, "text"));
                            if let Some(entries) = part.get("logprobs").and_then(Value::as_array) {
                                logprobs
                                    .get_or_insert_with(Vec::new)
                                    .extend(entries.iter().cloned());
                            }
                        }
                        Some("refusal") => refusal.push_str(str_of(part, "refusal")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => tool_calls.push(ToolCall {
                id: str_of(item, "call_id").to_owned(),
                name: str_of(item, "name").to_owned(),
                arguments: match str_of(item, "arguments") {
                    "" => "{}".to_owned(),
                    args => args.to_owned(),
                },
            }),
            _ => {}
        }
    }
    Output {
        text,
        refusal,
        tool_calls,
        logprobs,
    }
}

/// `incomplete` for the token limit is `Length`, for a content filter `ContentFilter`
/// (another reason kept verbatim); a finished answer with calls is `ToolCalls`.
fn finish_reason(response: &Value, calls: bool) -> FinishReason {
    if response.get("status").and_then(Value::as_str) == Some("incomplete") {
        let reason = response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .unwrap_or("incomplete");
        return match reason {
            "max_output_tokens" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        };
    }
    if calls {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    }
}

/// The Responses usage object in the shared shape; an absurd count is `Malformed`.
pub(super) fn usage(u: &Value) -> Result<Usage, ProviderError> {
    let n = |pointer: &str| u.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage {
        input_tokens: n("/input_tokens"),
        output_tokens: n("/output_tokens"),
        cached_input_tokens: n("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}

fn str_of<'v>(v: &'v Value, field: &str) -> &'v str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message)
}
