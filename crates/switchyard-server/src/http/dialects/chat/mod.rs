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
use serde::Serialize;
use switchyard::ChatResponse;

use super::flow::{self, Ctx, Trail};
use super::{Decoded, Dialect};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;
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
        let body = CompletionBody::new(ctx, resp);
        // sized for the answer plus the envelope, so the buffer is not regrown while writing
        let mut bytes = Vec::with_capacity(resp.text.len() + 1024);
        if serde_json::to_writer(&mut bytes, &body).is_err() {
            bytes.clear();
        }
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

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: AssistantMessage<'a>,
    finish_reason: Option<&'a str>,
    logprobs: Option<&'a serde_json::Value>,
}

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

impl<'a> CompletionBody<'a> {
    fn new(ctx: &Ctx, resp: &'a ChatResponse) -> Self {
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
            id: completion_id(ctx),
            object: "chat.completion",
            created: ctx.time_ms / 1000,
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
fn reasoning_text(thinking: &[switchyard::chat::Thinking]) -> Option<String> {
    let text: String = thinking.iter().map(|t| t.text.as_str()).collect();
    (!text.is_empty()).then_some(text)
}

/// `chatcmpl-<request id>`.
pub(crate) fn completion_id(ctx: &Ctx) -> String {
    format!("chatcmpl-{}", ctx.id.trim_start_matches("req_"))
}
