//! `POST /v1/responses`: OpenAI's Responses API as an inbound dialect, over any vendor.
//!
//! The request decodes into the shared shape ([`wire`]): `instructions` becomes a system
//! message first, `input` items become messages (function calls on the assistant's turn,
//! their outputs as tool messages), function tools and the tool choice carry over. The
//! client's own body rides along as the request's native body: an OpenAI provider with
//! `api = "responses"` sends it as written (model and stream the call's, a
//! `previous_response_id` replaced by the stored conversation it names), so built-in tools
//! (`web_search`, ...) and every Responses-only field reach it, and the output items it
//! returns reach the client verbatim, plain and streamed. A request with built-in tools
//! (or input items of theirs) can only go to such providers: the others are skipped
//! (`needs_native` in the trail), and a route without one refuses it with 400 naming the
//! tool. A reply is a `response` object ([`body`]) with a `switchyard` object; a stream is
//! the Responses event sequence ([`stream`]); errors are OpenAI's JSON. With `store` (the
//! default) the answer and its conversation are kept in the state backend ([`store`]), so
//! `previous_response_id` continues it on any replica and any vendor.

mod body;
mod native;
mod sealed;
mod store;
mod stream;
mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use serde_json::{json, Value};
use switchyard::chat::{Message, Native, RawBody};
use switchyard::provider::openai::responses::NATIVE_KIND;
use switchyard::{ChatResponse, Role};

pub use store::{delete, input_items, retrieve};

use super::flow::Ctx;
use super::{Decoded, Dialect};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use body::{Base, Echo, EchoFormat, EchoReasoning, EchoText};
use wire::{bad, WireRequest};

/// OpenAI's Responses API.
pub(crate) struct Responses;

/// What a Responses request keeps for its answer.
#[derive(Debug)]
pub(crate) struct ResponsesExtra {
    /// The response's id, time and echoed settings (shared with the stream encoder).
    base: Arc<Base>,
    /// Where the input's messages start in the request (after `instructions`).
    input_start: usize,
    /// Tool results whose call was not in the input: (message index, input item index).
    unanswered: Vec<(usize, usize)>,
    /// The conversation to store with the answer (`store`), set by `prepare`.
    conversation: Vec<Message>,
    /// What only a provider taking the body natively can serve (built-in tools, their
    /// items): (path, what). Empty: any provider can answer.
    native_only: Vec<(String, String)>,
    /// The native body as sent (its `input` the stored conversation's items first), shared
    /// with the request, when the answer is to be stored: a natively answered response
    /// keeps its input items so the next turn sends them again as they were.
    native_input: Option<Arc<RawBody>>,
    /// The client's body, until `prepare` makes it the request's native body
    /// ([`native_body`]) or finds that nothing on the route reads one.
    body: Option<Bytes>,
}

impl Dialect for Responses {
    const API: &'static str = "responses";
    type Extra = ResponsesExtra;
    type Encoder = stream::EventEncoder;

    fn decode(body: &Bytes, ctx: &mut Ctx) -> Result<Decoded<ResponsesExtra>, ApiError> {
        let (mut wire, unknown) = wire::parse(body)?;
        ctx.route = std::mem::take(&mut wire.model);
        ctx.stream = wire.stream.unwrap_or(false);
        wire::check_lengths(&wire, &ctx.route)?;
        refuse_unsupported(&wire)?;
        note_ignored(&wire, ctx);
        let mut decoded = decode_request(wire, ctx, body.clone())?;
        decoded.unknown = unknown;
        Ok(decoded)
    }

    async fn prepare(
        state: &AppState,
        ctx: &Ctx,
        decoded: &mut Decoded<ResponsesExtra>,
    ) -> Result<(), ApiError> {
        let takes_it = native::route_takes_it(state, &ctx.route);
        if let Some(body) = decoded.extra.body.take() {
            if reads_native_body(state, ctx, takes_it) {
                let native = native_body(&body, &decoded.extra.native_only)?;
                decoded.request.native = Some(native);
            }
        }
        let target = (NATIVE_KIND, "OpenAI provider with api = \"responses\"");
        super::passthrough::admit(state, &ctx.route, decoded, target, |first, _| {
            wire::unknown_parameter(first)
        })?;
        let extra = &mut decoded.extra;
        let messages = &mut decoded.request.messages;
        let mut prior = Vec::new();
        let mut prior_items = None;
        if let Some(id) = &extra.base.echo.previous_response_id {
            let record = store::load_within(state, id, ctx)
                .await?
                .ok_or_else(|| store::not_found(id, Some("previous_response_id")))?;
            prior = record.conversation;
            prior_items = record.items;
        }
        let offset = prior.len();
        // tool results answering calls made in the stored conversation
        for &(at, item) in &extra.unanswered {
            let m = &mut messages[extra.input_start + at];
            let id = m.tool_call_id.as_deref().unwrap_or_default();
            match wire::function_name(&prior, id) {
                Some(name) => m.name = Some(name),
                None => {
                    return Err(bad(
                        &format!("input[{item}].call_id"),
                        format!(
                            "no function call found for function call output with call_id {:?}",
                            crate::http::bounds::clip(id, crate::http::bounds::ECHO_BYTES)
                        ),
                    ))
                }
            }
        }
        if !extra.native_only.is_empty() && !takes_it {
            let (param, what) = &extra.native_only[0];
            return Err(bad(
                param,
                format!(
                    "{what} needs an OpenAI provider with api = \"responses\" on route {:?}, \
                     which has none: only such a provider takes it",
                    crate::http::bounds::clip(&ctx.route, crate::http::bounds::ECHO_BYTES)
                ),
            ));
        }
        // only a provider taking the body natively reads its input: for a route without
        // one, the stored conversation is not written into it a second time
        if let Some(native) = decoded.request.native.as_mut().filter(|_| takes_it) {
            extra.native_input =
                native::expand(native, &prior, prior_items, extra.base.echo.store)?;
        }
        if offset > 0 {
            messages.splice(extra.input_start..extra.input_start, prior);
        }
        if extra.base.echo.store {
            extra.conversation = messages[extra.input_start..].to_vec();
        }
        Ok(())
    }

    fn reply(_ctx: &Ctx, extra: &ResponsesExtra, resp: &ChatResponse) -> Vec<u8> {
        let base = &extra.base;
        let body = base.finished(resp, output(base, resp));
        let mut bytes = Vec::with_capacity(resp.text.len() + 2048);
        body.write_json(&mut bytes);
        bytes
    }

    async fn finished(state: &AppState, ctx: &Ctx, extra: &ResponsesExtra, resp: &ChatResponse) {
        let base = &extra.base;
        if !base.echo.store {
            return;
        }
        let mut conversation = extra.conversation.clone();
        conversation.push(Message {
            role: Role::Assistant,
            // a refusal comes back as text in history, as a `refusal` input part does
            content: if resp.text.is_empty() && resp.refusal.is_empty() {
                Vec::new()
            } else {
                vec![switchyard::chat::ContentPart::Text {
                    text: format!("{}{}", resp.text, resp.refusal),
                }]
            },
            tool_calls: resp.tool_calls.clone(),
            tool_call_id: None,
            name: None,
            thinking: resp.thinking.clone(),
            cache: Vec::new(),
        });
        // what GET returns: the answer as the client gets it, kept
        base.stored.store(true, Ordering::Release);
        let items = (native::output(resp).zip(extra.native_input.as_ref()))
            .and_then(|(output, body)| native::stored_items(body, output));
        let response = base.finished(resp, output(base, resp));
        let record = store::Record {
            key: ctx.key.clone(),
            response: serde_json::to_value(response).unwrap_or_default(),
            conversation,
            items,
        };
        let kept = store::save(state, &base.id, &record).await;
        base.stored.store(kept, Ordering::Release);
    }

    fn encoder(_ctx: &Ctx, extra: &ResponsesExtra, model: &str) -> stream::EventEncoder {
        stream::EventEncoder::new(Arc::clone(&extra.base), model)
    }
}

/// Whether anything on the request's route reads its native body (see [`native_body`]):
/// a provider taking Responses bodies natively (`takes_it`; on a wildcard route, its
/// template), any wildcard route still (its providers are made per model: read, to be
/// safe, should one be made of another kind than its template), or the route's response
/// cache (its key holds the native body's fields: crates/switchyard-server/src/cache/mod.rs).
/// On any other route the body is never read: its chat-kind providers send the shared shape, and
/// the surcharge check (`super::surcharges`) finds nothing in it that `prepare` would not
/// already have refused (unknown fields, built-in tools) or the shared shape does not hold
/// too (`service_tier`). The route is the one `admit_route` found (an unknown one: read,
/// to be safe).
fn reads_native_body(state: &AppState, ctx: &Ctx, takes_it: bool) -> bool {
    takes_it
        || state.cache.policy(&ctx.route_label).is_some()
        || state
            .gateway
            .route(&ctx.route)
            .map_or(true, |r| r.wildcard.is_some())
}

/// The client's body as the request's native body for OpenAI providers with
/// `api = "responses"`: its fields' own bytes, not a second tree; required (other providers
/// skipped) when it holds what only they can serve (`native_only`; a skipped provider's
/// trail entry names the first few).
///
/// # Errors
/// 400 when the body is not a JSON object (not reached: `decode` parsed it).
fn native_body(body: &Bytes, native_only: &[(String, String)]) -> Result<Native, ApiError> {
    let own = RawBody::parse_shared(body)
        .map_err(|e| ApiError::bad_request(None, format!("invalid request body: {e}")))?;
    let names = native_only.iter().take(8).map(|(param, _)| param.clone());
    Ok(Native::new(NATIVE_KIND, own).required_by(names.collect()))
}

/// The answer's output items: those a provider answering natively returned, as it did,
/// else the answer's own.
fn output<'a>(base: &Base, resp: &'a ChatResponse) -> Vec<body::Item<'a>> {
    match native::output(resp) {
        Some(items) => items.iter().map(body::Item::Native).collect(),
        None => base.output(resp),
    }
}

/// The `include` value asking for reasoning items' `encrypted_content`.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Fields OpenAI defines whose meaning the gateway cannot honour: refused by name.
fn refuse_unsupported(w: &WireRequest) -> Result<(), ApiError> {
    if w.background == Some(true) {
        return Err(bad("background", "background responses are not supported"));
    }
    if w.conversation.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(bad(
            "conversation",
            "conversations are not supported: continue with `previous_response_id`",
        ));
    }
    if w.prompt.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(bad("prompt", "prompt templates are not supported"));
    }
    if w.moderation.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(bad("moderation", "`moderation` is not supported"));
    }
    if w.top_logprobs.is_some_and(|n| n > 20) {
        return Err(bad(
            "top_logprobs",
            "`top_logprobs` must be between 0 and 20",
        ));
    }
    if w.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        return Err(bad("temperature", "`temperature` must be between 0 and 2"));
    }
    if w.top_p.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
        return Err(bad("top_p", "`top_p` must be between 0 and 1"));
    }
    if w.max_output_tokens == Some(0) {
        return Err(bad(
            "max_output_tokens",
            "`max_output_tokens` must be at least 1",
        ));
    }
    Ok(())
}

/// The `include` entry that asks for the output text's log probabilities.
const LOGPROBS_INCLUDE: &str = "message.output_text.logprobs";

/// `reasoning.effort` as the shared shape's effort.
fn reasoning_effort(
    r: Option<&wire::WireReasoning>,
) -> Result<Option<switchyard::chat::ReasoningEffort>, ApiError> {
    use switchyard::chat::ReasoningEffort;
    (r.and_then(|r| r.effort.as_deref()))
        .map(|w| {
            let all = &ReasoningEffort::ALL;
            super::json::one_of("reasoning.effort", w, all, ReasoningEffort::as_str)
        })
        .transpose()
}

/// `text.verbosity` as the shared shape's (a degradable field: `docs/fields.md`).
fn verbosity(word: Option<&str>) -> Result<Option<switchyard::chat::Verbosity>, ApiError> {
    use switchyard::chat::Verbosity;
    word.map(|w| super::json::one_of("text.verbosity", w, &Verbosity::ALL, Verbosity::as_str))
        .transpose()
}

/// `prompt_cache_retention` (`in-memory` or `24h`) as the shared shape's.
fn cache_retention(v: Option<&Value>) -> Result<Option<String>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "in-memory" || s == "24h" => Ok(Some(s.clone())),
        Some(_) => Err(bad(
            "prompt_cache_retention",
            "`prompt_cache_retention` must be \"in-memory\" or \"24h\"",
        )),
    }
}

/// Fields the request used that the shared shape does not carry and that only tune how
/// OpenAI serves it (advisory: degradable, and changing nothing a client reads): named in
/// `x-switchyard-ignored` when a provider that does not take the body natively answers.
fn note_ignored(w: &WireRequest, ctx: &mut Ctx) {
    let set = |v: &Option<Value>| v.as_ref().is_some_and(|v| !v.is_null());
    let flags = [
        (
            "include",
            w.include.as_ref().is_some_and(|i| {
                i.iter()
                    .any(|x| x != LOGPROBS_INCLUDE && x != ENCRYPTED_REASONING)
            }),
        ),
        ("prompt_cache_options", set(&w.prompt_cache_options)),
        ("stream_options", set(&w.stream_options)),
        ("client_metadata", set(&w.client_metadata)),
        ("context_management", set(&w.context_management)),
    ];
    for (name, used) in flags {
        if used {
            ctx.ignored.push(name.to_owned());
        }
    }
}

/// The shared request, and what the answer echoes.
fn decode_request(
    mut w: WireRequest,
    ctx: &mut Ctx,
    body: Bytes,
) -> Result<Decoded<ResponsesExtra>, ApiError> {
    let mut strict = false;
    let mut native_only = Vec::new();
    // fields only the Responses API itself honours, and that change the answer when left
    // out: carried in the native body, never ignored for another vendor (docs/fields.md)
    if let Some(n) = w.max_tool_calls {
        native_only.push(("max_tool_calls".to_owned(), format!("max_tool_calls {n}")));
    }
    if let Some(t) = w.truncation.as_deref().filter(|t| *t != "disabled") {
        native_only.push((
            "truncation".to_owned(),
            format!(
                "truncation {:?}",
                crate::http::bounds::clip(t, crate::http::bounds::ECHO_BYTES)
            ),
        ));
    }
    let tools = match &w.tools {
        Some(t) => wire::tools(t, &mut strict, &mut native_only)?,
        None => Vec::new(),
    };
    if strict {
        ctx.ignored.push("tools.strict".to_owned());
    }
    let choice = match w.tool_choice.as_ref().filter(|v| !v.is_null()) {
        Some(c) if native::built_in_choice(c).is_some() => {
            let kind = native::built_in_choice(c).unwrap_or_default();
            native_only.push((
                "tool_choice.type".to_owned(),
                format!(
                    "tool choice {:?}",
                    crate::http::bounds::clip(kind, crate::http::bounds::ECHO_BYTES)
                ),
            ));
            None
        }
        Some(c) => Some(wire::tool_choice(c)?),
        None => None,
    };
    let Some(input) = w.input.take() else {
        return Err(bad("input", "`input` is required"));
    };
    let mut conv = wire::conversation(input)?;
    native_only.append(&mut conv.native_only);
    if conv.foreign_reasoning {
        ctx.ignored.push("input.reasoning".to_owned());
    }
    ctx.ignored
        .extend(conv.unmodelled.names().map(str::to_owned));
    let mut messages = Vec::with_capacity(conv.messages.len() + 1);
    if let Some(i) = &w.instructions {
        messages.push(Message::system(i.clone()));
    }
    let input_start = messages.len();
    messages.extend(conv.messages);
    let (format, verbosity) = match w.text.take() {
        Some(t) => (t.format, verbosity(t.verbosity.as_deref())?),
        None => (None, None),
    };
    // `top_logprobs` alone asks for log probabilities too: never dropped unsaid
    let logprobs = w
        .include
        .as_ref()
        .is_some_and(|i| i.iter().any(|x| x == LOGPROBS_INCLUDE))
        || w.top_logprobs.is_some_and(|n| n > 0);
    let request = switchyard::ChatRequest {
        messages,
        max_tokens: w.max_output_tokens,
        temperature: w.temperature,
        top_p: w.top_p,
        stop: Vec::new(),
        tool_choice: choice,
        response_format: None,
        user: w.user.clone(),
        tools,
        logprobs,
        top_logprobs: w
            .top_logprobs
            .filter(|&n| n > 0)
            .and_then(|n| u8::try_from(n).ok()),
        parallel_tool_calls: w.parallel_tool_calls,
        service_tier: w.service_tier.clone(),
        reasoning_effort: reasoning_effort(w.reasoning.as_ref())?,
        metadata: w.metadata.clone(),
        verbosity,
        prompt_cache_key: w.prompt_cache_key.clone(),
        prompt_cache_retention: cache_retention(w.prompt_cache_retention.as_ref())?,
        safety_identifier: w.safety_identifier.clone(),
        // set by `prepare`, on a route that reads it
        native: None,
        ..switchyard::ChatRequest::default()
    };
    ctx.native_kind = Some(NATIVE_KIND);
    let echo = echo(w, &request.tools, format.as_ref());
    let base = Base {
        id: response_id(),
        created_at: ctx.time_ms / 1000,
        echo,
        stored: AtomicBool::new(false),
    };
    Ok(Decoded {
        request: switchyard::ChatRequest {
            response_format: format.map(wire::response_format),
            ..request
        },
        extra: ResponsesExtra {
            base: Arc::new(base),
            input_start,
            unanswered: conv.unanswered,
            conversation: Vec::new(),
            native_only,
            native_input: None,
            body: Some(body),
        },
        unknown: Vec::new(),
    })
}

/// The request's settings as the response echoes them (OpenAI's defaults where unset).
fn echo(
    w: WireRequest,
    tools: &[switchyard::chat::Tool],
    format: Option<&wire::WireFormat>,
) -> Echo {
    let summary = w
        .reasoning
        .as_ref()
        .and_then(|r| r.summary.as_deref().or(r.generate_summary.as_deref()));
    let store = w.store.unwrap_or(true);
    let include = w
        .include
        .as_ref()
        .is_some_and(|i| i.iter().any(|v| v == ENCRYPTED_REASONING));
    Echo {
        reasoning_summary: summary.is_some_and(|s| s != "none"),
        sealed_reasoning: include || store,
        tools: echo_tools(tools, w.tools.as_deref()),
        tool_choice: w.tool_choice.filter(|v| !v.is_null()),
        text: EchoText {
            format: echo_format(format),
        },
        reasoning: EchoReasoning {
            effort: w.reasoning.as_ref().and_then(|r| r.effort.clone()),
            summary: w.reasoning.as_ref().and_then(|r| r.summary.clone()),
        },
        metadata: w.metadata.unwrap_or_default(),
        instructions: w.instructions,
        temperature: w.temperature,
        top_p: w.top_p,
        max_output_tokens: w.max_output_tokens,
        parallel_tool_calls: w.parallel_tool_calls.unwrap_or(true),
        previous_response_id: w.previous_response_id,
        store,
        user: w.user,
        top_logprobs: w.top_logprobs.unwrap_or(0),
    }
}

/// The tools as sent: function tools as the SDK's `FunctionTool` (`strict` as the client
/// sent it), built-in tools as they are.
fn echo_tools(tools: &[switchyard::chat::Tool], raw: Option<&[Value]>) -> Vec<Value> {
    let mut functions = tools.iter();
    raw.unwrap_or_default()
        .iter()
        .map(|raw| {
            if raw.get("type").and_then(Value::as_str) != Some("function") {
                return raw.clone();
            }
            let Some(t) = functions.next() else {
                return raw.clone();
            };
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": raw.get("strict").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

fn echo_format(format: Option<&wire::WireFormat>) -> EchoFormat {
    match format {
        None | Some(wire::WireFormat::Text) => EchoFormat::Text,
        Some(wire::WireFormat::JsonObject) => EchoFormat::JsonObject,
        Some(wire::WireFormat::JsonSchema {
            name,
            schema,
            strict,
            description,
        }) => EchoFormat::JsonSchema(json!({
            "type": "json_schema",
            "name": name,
            "schema": schema,
            "strict": strict,
            "description": description,
        })),
    }
}

/// `resp_` and 32 random hex digits (from the OS: ids of stored responses are not
/// guessable), falling back to the process's generator.
fn response_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = fastrand::u128(..).to_le_bytes();
    }
    let mut id = String::with_capacity(5 + 2 * bytes.len());
    id.push_str("resp_");
    for b in bytes {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 15)]));
    }
    id
}
