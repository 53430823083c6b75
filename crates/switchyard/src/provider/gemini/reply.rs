//! Gemini answers: a whole `GenerateContentResponse` ([`parse_response`]) and the pieces
//! streamed chunks share with it (parts, call ids, finish reasons, usage, a blocked
//! prompt). Error objects found here go to `classify.rs`.

use serde_json::Value;

use super::classify::classify_value;
use super::{malformed, wire};
use crate::chat::{Choice, FinishReason, ProviderReply, ToolCall, Usage};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::snippet;

/// Parse a 200 response body. A body that is not a `GenerateContentResponse` (HTML from a
/// proxy, empty, no candidates and no block reason, a candidate with nothing in it) is
/// `Malformed`; a blocked prompt is `ContentFiltered`; an error object is classified.
///
/// # Errors
/// As above.
pub fn parse_response(body: &[u8]) -> Result<ProviderReply, ProviderError> {
    let response: wire::Response = from_object(body).map_err(|e| {
        let what = if body.iter().all(u8::is_ascii_whitespace) {
            "an empty body".to_owned()
        } else {
            format!("{e}: {}", snippet(body))
        };
        malformed(format!("expected a GenerateContentResponse, got {what}"))
    })?;
    if response.error.is_some() {
        let value = serde_json::from_slice(body).unwrap_or(Value::Null);
        return Err(classify_value(&value));
    }
    refuse_blocked_prompt(&response)?;
    let mut candidates = response.candidates.unwrap_or_default();
    candidates.sort_by_key(|c| c.index.unwrap_or(0));
    let mut choices = candidates
        .into_iter()
        .map(candidate_choice)
        .collect::<Result<Vec<_>, _>>()?;
    if choices.is_empty() {
        return Err(malformed("response with no candidates and no block reason"));
    }
    let first = choices.remove(0);
    Ok(ProviderReply {
        text: first.text,
        tool_calls: first.tool_calls,
        finish_reason: first.finish_reason,
        logprobs: first.logprobs,
        alternatives: choices,
        id: response.response_id,
        model: response.model_version,
        usage: response.usage_metadata.map(usage).transpose()?,
        reported_cost: None,
        reported_latency: None,
        ..ProviderReply::default()
    })
}

/// One candidate as a choice (a candidate with nothing in it is `Malformed`).
fn candidate_choice(candidate: wire::Candidate) -> Result<Choice, ProviderError> {
    let (text, tool_calls) = reply_content(candidate.content);
    let finish = candidate
        .finish_reason
        .as_deref()
        .map(|r| finish_reason(r, !tool_calls.is_empty()));
    if text.is_empty() && tool_calls.is_empty() && matches!(finish, None | Some(FinishReason::Stop))
    {
        return Err(malformed(format!(
            "candidate with no content (finishReason {})",
            candidate.finish_reason.as_deref().unwrap_or("absent")
        )));
    }
    Ok(Choice {
        text,
        refusal: String::new(),
        tool_calls,
        finish_reason: finish,
        logprobs: candidate
            .logprobs_result
            .map(|l| serde_json::json!({ "content": logprob_entries(l) })),
    })
}

/// Gemini's `logprobsResult` as the entries of OpenAI's `logprobs.content`: per chosen
/// token its `logprob`, and the step's top candidates as `top_logprobs` (Gemini sends no
/// bytes: `bytes` is `null`).
pub(super) fn logprob_entries(result: wire::LogprobsResult) -> Value {
    let mut tops = result.top_candidates.into_iter();
    let entries: Vec<Value> = result
        .chosen_candidates
        .into_iter()
        .map(|chosen| {
            let top: Vec<Value> = tops
                .next()
                .map(|t| t.candidates)
                .unwrap_or_default()
                .into_iter()
                .map(|c| serde_json::json!({"token": c.token, "logprob": c.log_probability, "bytes": null}))
                .collect();
            serde_json::json!({
                "token": chosen.token,
                "logprob": chosen.log_probability,
                "bytes": null,
                "top_logprobs": top,
            })
        })
        .collect();
    Value::Array(entries)
}

/// A response object. serde would also read a struct from a JSON array; Gemini's
/// responses are objects, so anything else is refused before it is read.
pub(super) fn from_object(bytes: &[u8]) -> Result<wire::Response, String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return Err("not a JSON object".to_owned());
    }
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// `promptFeedback.blockReason` with no candidates: the prompt was refused.
pub(super) fn refuse_blocked_prompt(response: &wire::Response) -> Result<(), ProviderError> {
    let has_candidates = response.candidates.as_ref().is_some_and(|c| !c.is_empty());
    let Some(feedback) = response
        .prompt_feedback
        .as_ref()
        .filter(|_| !has_candidates)
    else {
        return Ok(());
    };
    let Some(reason) = &feedback.block_reason else {
        return Ok(());
    };
    let detail = feedback
        .block_reason_message
        .as_deref()
        .map_or(String::new(), |m| format!(": {m}"));
    Err(ProviderError::new(
        ErrorKind::ContentFiltered,
        format!("the prompt was blocked by Gemini (blockReason {reason}){detail}"),
    )
    .with_vendor_code(reason.clone()))
}

/// The answer text of a candidate's parts (thought summaries skipped); each function
/// call goes to `on_call`, in order.
pub(super) fn read_parts(
    content: Option<wire::CandidateContent>,
    mut on_call: impl FnMut(wire::ResponseFunctionCall),
) -> String {
    let mut text = String::new();
    let parts = content.and_then(|c| c.parts).unwrap_or_default();
    for part in parts {
        if let Some(call) = part.function_call {
            on_call(call);
        } else if part.thought != Some(true) {
            text.push_str(part.text.as_deref().unwrap_or_default());
        }
    }
    text
}

/// A whole candidate's text and calls, the calls numbered from 0.
pub(super) fn reply_content(content: Option<wire::CandidateContent>) -> (String, Vec<ToolCall>) {
    let mut calls = Vec::new();
    let text = read_parts(content, |call| {
        let index = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        calls.push(ToolCall {
            id: call_id(call.id, index),
            name: call.name,
            arguments: arguments_text(call.args),
        });
    });
    (text, calls)
}

/// Gemini's id for a call, else `call_<index>`.
pub(super) fn call_id(id: Option<String>, index: u32) -> String {
    id.filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{index}"))
}

/// A call's `args` as JSON text (`{}` when there are none).
pub(super) fn arguments_text(args: Option<Value>) -> String {
    match args {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(args) => args.to_string(),
    }
}

/// Gemini's finish reasons, normalised. `STOP` after function calls is `ToolCalls`.
pub(super) fn finish_reason(reason: &str, called: bool) -> FinishReason {
    match reason {
        "STOP" if called => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The shared usage; an absurd count (above [`Usage::MAX_PLAUSIBLE_TOKENS`]) makes the
/// reply `Malformed`, so the call fails over instead of being billed or counted.
pub(super) fn usage(u: wire::UsageMetadata) -> Result<Usage, ProviderError> {
    let thoughts = u.thoughts_token_count.unwrap_or(0);
    let usage = Usage {
        input_tokens: u
            .prompt_token_count
            .unwrap_or(0)
            .saturating_add(u.tool_use_prompt_token_count.unwrap_or(0)),
        output_tokens: u
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(thoughts),
        cached_input_tokens: u.cached_content_token_count.unwrap_or(0),
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: thoughts,
    };
    usage
        .check_plausible()
        .map_err(|e| malformed(e.to_string()))?;
    Ok(usage)
}
