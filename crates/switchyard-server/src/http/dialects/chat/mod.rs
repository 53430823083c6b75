//! `POST /v1/chat/completions`: OpenAI's Chat Completions as an inbound dialect. The
//! request decodes into the shared shape ([`wire`]); a reply is a `chat.completion` with a
//! `switchyard` object saying who answered (and the answer's reasoning text as
//! `reasoning_content`, as OpenAI-compatible reasoning servers return it); a stream is
//! `chat.completion.chunk` events ending in `data: [DONE]` ([`stream`]); errors are OpenAI's JSON (`ApiError`'s own shape).
//! Everything around the codec (keys, limits, headers, the log line) is the shared flow's:
//! `crate::http::dialects::flow`.

mod openai_fields;
mod stream;
pub mod wire;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::Response;
#[cfg(test)]
use serde::Serialize;
use switchyard::ChatResponse;

use super::flow::{self, Ctx, Trail};
use super::{Decoded, Dialect};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;
#[cfg(test)]
use wire::{wire_tool_calls, WireToolCall, WireUsage};

/// OpenAI's Chat Completions.
pub(crate) struct Chat;

/// What a Chat Completions request keeps for its answer.
#[derive(Debug)]
pub(crate) struct ChatExtra {
    /// `stream_options.include_usage`: a final chunk with usage.
    include_usage: bool,
}

impl Dialect for Chat {
    const API: &'static str = "chat";
    type Extra = ChatExtra;
    type Encoder = stream::ChunkEncoder;

    fn decode(body: &Bytes, ctx: &mut Ctx) -> Result<Decoded<ChatExtra>, ApiError> {
        let mut wire = wire::parse(body)?;
        ctx.route = std::mem::take(&mut wire.model);
        ctx.stream = wire.stream;
        wire.check_lengths(&ctx.route)?;
        let include_usage = wire
            .stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage);
        Ok(Decoded {
            request: wire.into_chat()?,
            extra: ChatExtra { include_usage },
            unknown: Vec::new(),
        })
    }

    /// Passthrough fields (ones OpenAI does not define) only on a route that sends them
    /// on (`passthrough_unknown`); otherwise a 400 naming them.
    async fn prepare(
        state: &AppState,
        ctx: &Ctx,
        decoded: &mut Decoded<ChatExtra>,
    ) -> Result<(), ApiError> {
        let Some(fields) = &decoded.request.passthrough else {
            return Ok(());
        };
        if super::passthrough::passes_unknown(state, &ctx.route) {
            return Ok(());
        }
        Err(refuse_passthrough(fields))
    }

    fn reply(ctx: &Ctx, _extra: &ChatExtra, resp: &ChatResponse) -> Vec<u8> {
        // sized for the answer plus the envelope, so the buffer is not regrown while writing
        let mut bytes = Vec::with_capacity(resp.text.len() + 1024);
        write_completion(&mut bytes, &ctx.id, ctx.time_ms / 1000, resp);
        bytes
    }

    fn encoder(ctx: &Ctx, extra: &ChatExtra, model: &str) -> stream::ChunkEncoder {
        stream::ChunkEncoder::new(ctx, model, extra.include_usage)
    }
}

/// 400 for fields OpenAI's reference does not define, on a route that does not pass them
/// on: OpenAI's own words ("Unrecognized request argument").
fn refuse_passthrough(fields: &serde_json::Map<String, serde_json::Value>) -> ApiError {
    let names: Vec<&str> = fields.keys().map(String::as_str).collect();
    let first = names.first().copied().unwrap_or_default();
    let list = clip(&names.join(", "), ECHO_BYTES).into_owned();
    ApiError::bad_request(
        Some(clip(first, ECHO_BYTES).into_owned()),
        format!("Unrecognized request argument supplied: {list}"),
    )
}

/// The handler.
pub async fn completions(state: State<AppState>, request: Request) -> Response {
    flow::serve::<Chat>(state, request).await
}

/// The reply's shape as `serde` writes it: the reference [`write_completion`]'s bytes are
/// compared with (tests).
#[cfg(test)]
#[derive(Serialize)]
struct CompletionBody<'a> {
    id: String,
    object: &'static str,
    created: u64,
    model: &'a str,
    /// The upstream's, when it sent one (OpenAI does); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    system_fingerprint: Option<&'a str>,
    choices: Vec<Choice<'a>>,
    /// Absent when the vendor reported none.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<WireUsage>,
    switchyard: Trail<'a>,
}

#[cfg(test)]
#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: AssistantMessage<'a>,
    finish_reason: Option<&'a str>,
    logprobs: Option<&'a serde_json::Value>,
}

#[cfg(test)]
#[derive(Serialize)]
struct AssistantMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    /// The answer's reasoning text, where OpenAI-compatible reasoning servers put it
    /// (DeepSeek, vLLM): every reasoning block's text, joined (signatures and redacted
    /// blocks have no place here).
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall>,
    /// The model's refusal message, when the vendor gave one apart from the text.
    refusal: Option<&'a str>,
    /// What OpenAI answered to its own contract fields (`audio`, `annotations`,
    /// `function_call`), as it sent them (see [`extras`]).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    extras: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// The pieces of choice `index` that OpenAI answered to its own contract fields (audio,
/// web search citations, a deprecated function call): in the upstream's `native` answer
/// as `{"choices": [{"index", <part>: {...}}]}` (`part` is `message`, or `delta` in a
/// stream), which only an OpenAI provider answering a Chat Completions request sets.
pub(super) fn extras<'a>(
    native: Option<&'a serde_json::Value>,
    index: u32,
    part: &str,
) -> Option<&'a serde_json::Map<String, serde_json::Value>> {
    native?
        .get("choices")?
        .as_array()?
        .iter()
        .find(|c| c.get("index").and_then(serde_json::Value::as_u64) == Some(u64::from(index)))?
        .get(part)?
        .as_object()
}

#[cfg(test)]
impl<'a> CompletionBody<'a> {
    fn new(request_id: &str, created: u64, resp: &'a ChatResponse) -> Self {
        let mut first = choice(
            0,
            &resp.text,
            &resp.refusal,
            &resp.tool_calls,
            resp.finish_reason.as_ref(),
            resp.logprobs.as_ref(),
        );
        first.message.reasoning_content = reasoning_text(&resp.thinking);
        let mut choices = Vec::with_capacity(1 + resp.alternatives.len());
        choices.push(first);
        for (i, alt) in resp.alternatives.iter().enumerate() {
            let index = u32::try_from(i + 1).unwrap_or(u32::MAX);
            choices.push(choice(
                index,
                &alt.text,
                &alt.refusal,
                &alt.tool_calls,
                alt.finish_reason.as_ref(),
                alt.logprobs.as_ref(),
            ));
        }
        let native = resp.native.as_deref();
        for c in &mut choices {
            c.message.extras = extras(native, c.index, "message");
            if c.message.extras.is_some() && c.message.content == Some("") {
                c.message.content = None; // spoken or a function call: no text, as OpenAI
            }
        }
        Self {
            id: format!("chatcmpl-{}", request_id.trim_start_matches("req_")),
            object: "chat.completion",
            created,
            model: &resp.model,
            system_fingerprint: resp.system_fingerprint.as_deref(),
            choices,
            usage: resp.usage.as_ref().map(WireUsage::from),
            switchyard: Trail::of(resp),
        }
    }
}

/// One entry of `choices`: `content` null when the model only called tools or only
/// refused (OpenAI's shape), `refusal` its refusal message.
#[cfg(test)]
fn choice<'a>(
    index: u32,
    text: &'a str,
    refusal: &'a str,
    tool_calls: &[switchyard::chat::ToolCall],
    finish: Option<&'a switchyard::chat::FinishReason>,
    logprobs: Option<&'a serde_json::Value>,
) -> Choice<'a> {
    let content =
        (!text.is_empty() || (tool_calls.is_empty() && refusal.is_empty())).then_some(text);
    Choice {
        index,
        message: AssistantMessage {
            role: "assistant",
            content,
            reasoning_content: None,
            tool_calls: wire_tool_calls(tool_calls),
            refusal: (!refusal.is_empty()).then_some(refusal),
            extras: None,
        },
        finish_reason: finish.map(switchyard::chat::FinishReason::as_openai),
        logprobs,
    }
}

/// The reasoning blocks' text, joined; `None` when there is none.
#[cfg(test)]
fn reasoning_text(thinking: &[switchyard::chat::Thinking]) -> Option<String> {
    let text: String = thinking.iter().map(|t| t.text.as_str()).collect();
    (!text.is_empty()).then_some(text)
}

/// The `chat.completion` object, written by hand (`crate::json_out`) as [`CompletionBody`]
/// serialises: `id`, `object`, `created`, `model`, `system_fingerprint` when the upstream
/// sent one, `choices` (the first with the reasoning text), `usage` when reported, and the
/// `switchyard` trail.
fn write_completion(out: &mut Vec<u8>, request_id: &str, created: u64, resp: &ChatResponse) {
    use crate::json_out as j;
    out.extend_from_slice(b"{\"id\":\"chatcmpl-");
    j::escaped(out, request_id.trim_start_matches("req_"));
    out.extend_from_slice(b"\",\"object\":\"chat.completion\",\"created\":");
    j::u64(out, created);
    out.extend_from_slice(b",\"model\":");
    j::str(out, &resp.model);
    if let Some(fp) = &resp.system_fingerprint {
        out.extend_from_slice(b",\"system_fingerprint\":");
        j::str(out, fp);
    }
    out.extend_from_slice(b",\"choices\":[");
    let native = resp.native.as_deref();
    let first = ChoiceOut {
        index: 0,
        text: &resp.text,
        refusal: &resp.refusal,
        tool_calls: &resp.tool_calls,
        finish: resp.finish_reason.as_ref(),
        logprobs: resp.logprobs.as_ref(),
    };
    first.write(out, native, &resp.thinking);
    for (i, alt) in resp.alternatives.iter().enumerate() {
        out.push(b',');
        let alt = ChoiceOut {
            index: u32::try_from(i + 1).unwrap_or(u32::MAX),
            text: &alt.text,
            refusal: &alt.refusal,
            tool_calls: &alt.tool_calls,
            finish: alt.finish_reason.as_ref(),
            logprobs: alt.logprobs.as_ref(),
        };
        alt.write(out, native, &[]);
    }
    out.push(b']');
    if let Some(u) = &resp.usage {
        out.extend_from_slice(b",\"usage\":{\"prompt_tokens\":");
        j::u64(out, u.input_tokens);
        out.extend_from_slice(b",\"completion_tokens\":");
        j::u64(out, u.output_tokens);
        out.extend_from_slice(b",\"total_tokens\":");
        j::u64(out, u.total_tokens());
        out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
        j::u64(out, u.cached_input_tokens);
        out.extend_from_slice(b"},\"completion_tokens_details\":{\"reasoning_tokens\":");
        j::u64(out, u.reasoning_tokens);
        out.extend_from_slice(b"}}");
    }
    out.extend_from_slice(b",\"switchyard\":");
    Trail::of(resp).write_json(out);
    out.push(b'}');
}

/// One entry of `choices`, for [`write_completion`]: `content` null when the model only
/// called tools or only refused (OpenAI's shape), or when OpenAI's extras answered in its
/// place; `refusal` its refusal message.
struct ChoiceOut<'a> {
    index: u32,
    text: &'a str,
    refusal: &'a str,
    tool_calls: &'a [switchyard::chat::ToolCall],
    finish: Option<&'a switchyard::chat::FinishReason>,
    logprobs: Option<&'a serde_json::Value>,
}

impl ChoiceOut<'_> {
    fn write(
        &self,
        out: &mut Vec<u8>,
        native: Option<&serde_json::Value>,
        thinking: &[switchyard::chat::Thinking],
    ) {
        use crate::json_out as j;
        let extras = extras(native, self.index, "message");
        let shown =
            !self.text.is_empty() || (self.tool_calls.is_empty() && self.refusal.is_empty());
        // spoken or a function call: no text, as OpenAI
        let content = (shown && !(extras.is_some() && self.text.is_empty())).then_some(self.text);
        out.extend_from_slice(b"{\"index\":");
        j::u64(out, u64::from(self.index));
        out.extend_from_slice(b",\"message\":{\"role\":\"assistant\",\"content\":");
        j::opt_str(out, content);
        if thinking.iter().any(|t| !t.text.is_empty()) {
            out.extend_from_slice(b",\"reasoning_content\":\"");
            for t in thinking {
                j::escaped(out, &t.text);
            }
            out.push(b'"');
        }
        if !self.tool_calls.is_empty() {
            out.extend_from_slice(b",\"tool_calls\":[");
            for (i, c) in self.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"id\":");
                j::str(out, &c.id);
                out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
                j::str(out, &c.name);
                out.extend_from_slice(b",\"arguments\":");
                j::str(out, &c.arguments);
                out.extend_from_slice(b"}}");
            }
            out.push(b']');
        }
        out.extend_from_slice(b",\"refusal\":");
        j::opt_str(out, (!self.refusal.is_empty()).then_some(self.refusal));
        for (k, v) in extras.into_iter().flatten() {
            out.push(b',');
            j::str(out, k);
            out.push(b':');
            j::value(out, v);
        }
        out.extend_from_slice(b"},\"finish_reason\":");
        j::opt_str(
            out,
            self.finish.map(switchyard::chat::FinishReason::as_openai),
        );
        out.extend_from_slice(b",\"logprobs\":");
        match self.logprobs {
            Some(v) => j::value(out, v),
            None => j::null(out),
        }
        out.push(b'}');
    }
}

/// `chatcmpl-<request id>`.
pub(crate) fn completion_id(ctx: &Ctx) -> String {
    format!("chatcmpl-{}", ctx.id.trim_start_matches("req_"))
}

#[cfg(test)]
mod reply_tests {
    use super::*;
    use crate::json_out::tests::{answers, awkward_strings};

    /// The hand-written reply is byte for byte what the serde shape writes, for answers
    /// with every optional part present and absent, escapes and unicode everywhere.
    #[test]
    fn the_written_reply_is_the_serialised_one() {
        let mut checked = 0;
        for resp in answers() {
            for id in ["req_abc", "r\"q\u{1}é"] {
                let mut ours = Vec::new();
                write_completion(&mut ours, id, 1_700_000_000, &resp);
                let theirs =
                    serde_json::to_vec(&CompletionBody::new(id, 1_700_000_000, &resp)).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(theirs).unwrap()
                );
                checked += 1;
            }
        }
        assert!(checked > awkward_strings().len());
    }
}
