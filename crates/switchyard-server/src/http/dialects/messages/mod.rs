//! `POST /v1/messages`: Anthropic's Messages API as an inbound dialect (what the official
//! `anthropic` SDKs and Claude Code speak). The request decodes into the shared shape
//! ([`wire`]), so any vendor can answer it, and the client's own body rides along with its
//! `anthropic-beta` as the request's native body: an Anthropic provider sends that as is
//! (model, `max_tokens` and `stream` the call's), so betas, `cache_control`, thinking and
//! thinking blocks in history reach Anthropic; `x-switchyard-ignored` names what the shared
//! shape dropped only when another vendor answered (`docs/dialects.md`). With a beta,
//! keys the dialect does not model are accepted the same way, and those that change the
//! answer keep it to Anthropic, as do blocks of types it does not model
//! (`Messages::prepare`; "Keys under a beta"). A reply is a
//! `message` object with a `switchyard` object saying who answered; a stream is Anthropic's
//! event sequence ([`stream`]); errors are Anthropic's `{"type": "error", "error":
//! {...}}` with its statuses ([`error_body`], mapping in `docs/dialects.md`).
//! Message threads (`thread`, the message-threads beta) are held by the gateway
//! ([`threads`]): a `continue` becomes the whole conversation before any provider sees it.
//! `POST /v1/messages/count_tokens` is [`count`]. Everything around the codec (keys, limits, headers, the log line) is the
//! shared flow's: `crate::http::dialects::flow`.

pub(crate) mod count;
mod stream;
mod threads;
mod wire;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{json, Value};
use switchyard::chat::{FinishReason, Native, RawBody};
use switchyard::{ChatResponse, Usage};

use super::flow::{self, Ctx, Trail};
use super::{Decoded, Dialect};
use crate::http::bounds::{clip, elide, ECHO_BYTES, MESSAGE_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// Anthropic's Messages API.
pub(crate) struct Messages;

impl Dialect for Messages {
    const API: &'static str = "messages";
    /// The request's message thread, if it is a thread's turn.
    type Extra = threads::Turn;
    type Encoder = stream::EventEncoder;

    fn decode(body: &Bytes, ctx: &mut Ctx) -> Result<Decoded<threads::Turn>, ApiError> {
        let (mut wire, unknown) = wire::parse(body)?;
        ctx.stream = wire.stream;
        ctx.route = wire.take_model()?;
        let turn = threads::Turn::new(wire.thread.clone());
        let beta = ctx
            .anthropic_beta
            .as_deref()
            .is_some_and(|b| !b.trim().is_empty());
        let mut ignored = wire::Ignored::new(beta);
        let unknown = ignored.top_level(unknown);
        let mut request = wire.into_chat(&mut ignored)?;
        let (names, anthropic_only) = ignored.into_parts();
        ctx.ignored.extend(names);
        // valid: it parsed above; kept as its fields' own bytes, not a second tree
        let own = RawBody::parse_shared(body)
            .map_err(|e| ApiError::bad_request(None, format!("invalid request body: {e}")))?;
        let mut native = Native::new(ANTHROPIC, own);
        // the message-threads beta is the gateway's to serve: no provider gets it
        let betas = ctx.anthropic_beta.as_deref().and_then(threads::other_betas);
        if let Some(betas) = betas {
            // the betas tune how Anthropic serves a request; the shared shape has no room
            ctx.ignored.push("anthropic-beta".to_owned());
            native = native.header("anthropic-beta", betas);
        }
        request.native = Some(native);
        ctx.native_kind = Some(ANTHROPIC);
        Ok(Decoded {
            request,
            extra: turn,
            // without a beta: the top-level fields Anthropic does not define; with one:
            // what only Anthropic can serve (`prepare`)
            unknown: if beta { anthropic_only } else { unknown },
        })
    }

    /// Under a beta, what only Anthropic can serve (a field that changes the answer's
    /// contract: `wire` keys) makes the Anthropic providers the only ones that may answer;
    /// a route without one is a 400 saying so. Without a beta, unknown fields only on a
    /// route that passes them through to its Anthropic providers (and then only those
    /// answer); otherwise Anthropic's 400 naming them. Then a thread's turn: a `continue`
    /// becomes the whole conversation ([`threads`]).
    async fn prepare(
        state: &AppState,
        ctx: &Ctx,
        decoded: &mut Decoded<threads::Turn>,
    ) -> Result<(), ApiError> {
        let target = (ANTHROPIC, "Anthropic");
        let beta = ctx
            .anthropic_beta
            .as_deref()
            .is_some_and(|b| !b.trim().is_empty());
        if beta {
            anthropic_only(state, &ctx.route, decoded)?;
        } else {
            super::passthrough::admit(state, &ctx.route, decoded, target, wire::extra_inputs)?;
        }
        threads::prepare(state, ctx, decoded).await
    }

    fn reply(ctx: &Ctx, extra: &threads::Turn, resp: &ChatResponse) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(resp.text.len() + 1024);
        write_message(&mut bytes, &extra.id(ctx), resp);
        bytes
    }

    /// A thread's turn is kept once its answer is complete.
    async fn finished(state: &AppState, ctx: &Ctx, extra: &threads::Turn, resp: &ChatResponse) {
        threads::finished(state, ctx, extra, resp).await;
    }

    fn encoder(ctx: &Ctx, extra: &threads::Turn, model: &str) -> stream::EventEncoder {
        stream::EventEncoder::new(extra.id(ctx), model)
    }

    fn error(err: ApiError) -> Response {
        error_response(&err)
    }
}

/// The provider kind a Messages body is written for.
const ANTHROPIC: &str = "anthropic";

/// Make `decoded`'s native body required when it holds what only Anthropic can serve
/// (`decoded.unknown`, under a beta): every other provider is skipped for the request.
///
/// # Errors
/// 400 naming the fields when `route` has no Anthropic provider to serve them.
fn anthropic_only(
    state: &AppState,
    route: &str,
    decoded: &mut Decoded<threads::Turn>,
) -> Result<(), ApiError> {
    let Some(first) = decoded.unknown.first() else {
        return Ok(());
    };
    if !super::passthrough::route_takes_native(state, route, ANTHROPIC) {
        let list = clip(&decoded.unknown.join(", "), ECHO_BYTES).into_owned();
        return Err(ApiError::bad_request(
            Some(clip(first, ECHO_BYTES).into_owned()),
            format!(
                "{list}: only an Anthropic provider can serve this ({}), and route {:?} has none",
                why_anthropic_only(&decoded.unknown),
                clip(route, ECHO_BYTES)
            ),
        ));
    }
    if let Some(native) = decoded.request.native.as_mut() {
        native.required = true;
        // a skipped provider's trail entry names them
        native.required_by.clone_from(&decoded.unknown);
    }
    Ok(())
}

/// Why only Anthropic can serve what `paths` name: a top-level field that changes what
/// the answer is (`compaction`), or something of a type the dialect does not model (a
/// block's or a tool change's, at its `type`: `messages.0.content.1.type`), which no
/// other vendor can be given without changing what the model sees.
fn why_anthropic_only(paths: &[String]) -> &'static str {
    let types = paths.iter().filter(|p| p.ends_with(".type")).count();
    if types == 0 {
        "it changes what the answer is"
    } else if types == paths.len() {
        "its type is one this gateway does not model, and no other vendor can be given it \
         without changing what the model sees"
    } else {
        "it changes what the answer is, or is of a type this gateway does not model"
    }
}

/// The handler: the shared flow.
pub async fn create(state: State<AppState>, request: Request) -> Response {
    flow::serve::<Messages>(state, request).await
}

/// `msg_<request id>`.
pub(crate) fn message_id(ctx: &Ctx) -> String {
    // built by hand, not `format!` (its formatter machinery costs more than the copy)
    let tail = ctx.id.trim_start_matches("req_");
    let mut id = String::with_capacity(4 + tail.len());
    id.push_str("msg_");
    id.push_str(tail);
    id
}

/// The shared finish reason in Anthropic's words. A stop with tool calls is `tool_use`;
/// an answer with a refusal message (OpenAI's) is `refusal`.
pub(super) fn stop_reason(resp: &ChatResponse) -> &'static str {
    if !resp.refusal.is_empty() && resp.finish_reason != Some(FinishReason::Length) {
        return "refusal";
    }
    match &resp.finish_reason {
        Some(FinishReason::Length) => "max_tokens",
        Some(FinishReason::ToolCalls) => "tool_use",
        Some(FinishReason::ContentFilter) => "refusal",
        _ if !resp.tool_calls.is_empty() => "tool_use",
        Some(FinishReason::Other(r)) => match r.as_str() {
            "stop_sequence" => "stop_sequence",
            "pause_turn" => "pause_turn",
            "refusal" => "refusal",
            "model_context_window_exceeded" => "model_context_window_exceeded",
            _ => "end_turn",
        },
        _ => "end_turn",
    }
}

/// Anthropic's usage: `input_tokens` excludes cache reads and writes (the shared shape's
/// includes them). Zeros when the vendor reported none (the SDK requires the counts).
#[derive(Debug, Serialize)]
pub(crate) struct WireUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
}

impl WireUsage {
    pub(crate) fn of(usage: Option<&Usage>) -> Self {
        let u = usage.copied().unwrap_or_default();
        Self {
            input_tokens: u.uncached_input_tokens(),
            output_tokens: u.output_tokens,
            cache_creation_input_tokens: u.cache_write_tokens,
            cache_read_input_tokens: u.cached_input_tokens,
        }
    }
}

/// The `message` object, written by hand (`crate::json_out`) as [`MessageBody`] serialises
/// (the tests compare): `id`, `type`, `role`, the content blocks (each with its keys in
/// sorted order), `model`, `stop_reason`, a null `stop_sequence`, `usage` and the
/// `switchyard` trail.
fn write_message(out: &mut Vec<u8>, id: &str, resp: &ChatResponse) {
    use crate::json_out as j;
    out.extend_from_slice(b"{\"id\":");
    j::str(out, id);
    out.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"content\":[");
    let mut first = true;
    let mut comma = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    for t in &resp.thinking {
        comma(out);
        match &t.redacted {
            Some(data) => {
                out.extend_from_slice(b"{\"data\":");
                j::str(out, data);
                out.extend_from_slice(b",\"type\":\"redacted_thinking\"}");
            }
            None => {
                out.extend_from_slice(b"{\"signature\":");
                j::str(out, t.signature.as_deref().unwrap_or(""));
                out.extend_from_slice(b",\"thinking\":");
                j::str(out, &t.text);
                out.extend_from_slice(b",\"type\":\"thinking\"}");
            }
        }
    }
    if !resp.text.is_empty() || !resp.refusal.is_empty() || resp.tool_calls.is_empty() {
        comma(out);
        out.extend_from_slice(b"{\"text\":\"");
        j::escaped(out, &resp.text);
        j::escaped(out, &resp.refusal);
        out.extend_from_slice(b"\",\"type\":\"text\"}");
    }
    for call in &resp.tool_calls {
        comma(out);
        out.extend_from_slice(b"{\"id\":");
        j::str(out, &call.id);
        out.extend_from_slice(b",\"input\":");
        j::value(out, &tool_input(&call.arguments));
        out.extend_from_slice(b",\"name\":");
        j::str(out, &call.name);
        out.extend_from_slice(b",\"type\":\"tool_use\"}");
    }
    out.extend_from_slice(b"],\"model\":");
    j::str(out, &resp.model);
    out.extend_from_slice(b",\"stop_reason\":");
    j::str(out, stop_reason(resp));
    let u = WireUsage::of(resp.usage.as_ref());
    out.extend_from_slice(b",\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
    j::u64(out, u.input_tokens);
    out.extend_from_slice(b",\"output_tokens\":");
    j::u64(out, u.output_tokens);
    out.extend_from_slice(b",\"cache_creation_input_tokens\":");
    j::u64(out, u.cache_creation_input_tokens);
    out.extend_from_slice(b",\"cache_read_input_tokens\":");
    j::u64(out, u.cache_read_input_tokens);
    out.extend_from_slice(b"},\"switchyard\":");
    Trail::of(resp).write_json(out);
    out.push(b'}');
}

/// The reply's shape as `serde` writes it: the reference [`write_message`]'s bytes are
/// compared with (tests).
#[cfg(test)]
#[derive(Serialize)]
struct MessageBody<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: Vec<Block<'a>>,
    model: &'a str,
    stop_reason: &'static str,
    stop_sequence: Option<&'a str>,
    usage: WireUsage,
    switchyard: Trail<'a>,
}

#[cfg(test)]
impl<'a> MessageBody<'a> {
    fn new(id: String, resp: &'a ChatResponse) -> Self {
        Self {
            id,
            kind: "message",
            role: "assistant",
            content: blocks(resp),
            model: &resp.model,
            stop_reason: stop_reason(resp),
            stop_sequence: None,
            usage: WireUsage::of(resp.usage.as_ref()),
            switchyard: Trail::of(resp),
        }
    }
}

/// An answer's content blocks as a thread keeps them.
pub(super) fn content(resp: &ChatResponse) -> Vec<Value> {
    (blocks(resp).iter())
        .map(|b| serde_json::to_value(b).unwrap_or_default())
        .collect()
}

/// An answer's content blocks, as a reply carries them.
fn blocks(resp: &ChatResponse) -> Vec<Block<'_>> {
    let mut content = Vec::with_capacity(1 + resp.thinking.len() + resp.tool_calls.len());
    // Anthropic puts reasoning first; the client sends it back with its next turn
    content.extend(resp.thinking.iter().map(thinking_block));
    // Anthropic has no refusal field: a refusal message (OpenAI's) is the text
    if !resp.text.is_empty() || !resp.refusal.is_empty() || resp.tool_calls.is_empty() {
        content.push(Block::Text {
            text: Joined(&resp.text, &resp.refusal),
            kind: "text",
        });
    }
    for call in &resp.tool_calls {
        content.push(Block::ToolUse {
            id: &call.id,
            input: tool_input(&call.arguments),
            name: &call.name,
            kind: "tool_use",
        });
    }
    content
}

/// A content block of a reply, written directly; keys in sorted order (as the
/// `serde_json::Value` maps it was once built as had them: the bytes did not change).
#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text {
        text: Joined<'a>,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Redacted {
        data: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    ToolUse {
        id: &'a str,
        input: Value,
        name: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

/// Two strings written as one.
struct Joined<'a>(&'a str, &'a str);

impl Serialize for Joined<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Joined(a, "") => s.serialize_str(a),
            Joined(a, b) => s.collect_str(&format_args!("{a}{b}")),
        }
    }
}

/// A reasoning block as Anthropic writes it: `redacted_thinking` with its `data`, or
/// `thinking` with its text and signature (`""` when the vendor sent none).
fn thinking_block(t: &switchyard::chat::Thinking) -> Block<'_> {
    match &t.redacted {
        Some(data) => Block::Redacted {
            data,
            kind: "redacted_thinking",
        },
        None => Block::Thinking {
            signature: t.signature.as_deref().unwrap_or(""),
            thinking: &t.text,
            kind: "thinking",
        },
    }
}

/// A tool call's arguments as the `input` object: `{}` when empty, the text itself when
/// the model produced something that is not JSON (never dropped).
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// The status and `error.type` Anthropic would answer for an error of this status. The
/// gateway's own statuses that Anthropic does not use: 502 (every provider failed) and 503
/// (shutting down) are `overloaded_error` 529, which Anthropic's clients retry; a 499 or any
/// other is `api_error` 500.
#[must_use]
pub(crate) fn anthropic_status(status: StatusCode) -> (StatusCode, &'static str) {
    let (code, kind) = match status.as_u16() {
        400 | 422 => (400, "invalid_request_error"),
        401 => (401, "authentication_error"),
        402 => (402, "billing_error"),
        403 => (403, "permission_error"),
        404 | 405 => (404, "not_found_error"),
        408 | 504 => (status.as_u16(), "timeout_error"),
        413 => (413, "request_too_large"),
        429 => (429, "rate_limit_error"),
        502 | 503 | 529 => (529, "overloaded_error"),
        _ => (500, "api_error"),
    };
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        kind,
    )
}

/// `{"type": "error", "error": {"type", "message", ...}}`. The message names
/// the field at fault; the gateway's `code` and attempt trail ride along as extra fields.
pub(crate) fn error_body(err: &ApiError) -> Value {
    let (_, kind) = anthropic_status(err.status);
    let message = match &err.param {
        Some(p) if !err.message.contains(p.as_str()) => format!("{p}: {}", err.message),
        _ => err.message.clone(),
    };
    let mut error = json!({"type": kind, "message": elide(&message, MESSAGE_BYTES)});
    let openai = err.body();
    if let Some(code) = err.code {
        error["code"] = json!(code);
    }
    if let Some(attempts) = openai["error"].get("attempts") {
        error["attempts"] = attempts.clone();
    }
    if let Some(details) = threads::details(err.code) {
        error["details"] = details;
    }
    json!({"type": "error", "error": error})
}

/// An error as Anthropic answers one (status, body, `retry-after`).
pub(crate) fn error_response(err: &ApiError) -> Response {
    let (status, _) = anthropic_status(err.status);
    let mut resp = (status, axum::Json(error_body(err))).into_response();
    if let Some(secs) = err.retry_after {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert("retry-after", v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in `docs/dialects.md`, row by row.
    #[test]
    fn every_gateway_status_has_its_anthropic_status_and_type() {
        let table = [
            (400, 400, "invalid_request_error"),
            (401, 401, "authentication_error"),
            (402, 402, "billing_error"),
            (403, 403, "permission_error"),
            (404, 404, "not_found_error"),
            (408, 408, "timeout_error"),
            (413, 413, "request_too_large"),
            (429, 429, "rate_limit_error"),
            (499, 500, "api_error"),
            (500, 500, "api_error"),
            (502, 529, "overloaded_error"),
            (503, 529, "overloaded_error"),
            (504, 504, "timeout_error"),
        ];
        for (ours, theirs, kind) in table {
            let (status, got) = anthropic_status(StatusCode::from_u16(ours).unwrap());
            assert_eq!((status.as_u16(), got), (theirs, kind), "{ours}");
        }
    }

    #[test]
    fn the_error_body_names_the_field_and_keeps_the_code() {
        let err = ApiError::bad_request(Some("messages.0.role".into()), "not a role");
        let body = error_body(&err);
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["message"], "messages.0.role: not a role");
        let err = ApiError::too_large(10);
        let resp = error_response(&err);
        assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let limited = ApiError::rate_limited("slow", std::time::Duration::from_millis(1500));
        assert_eq!(error_response(&limited).headers()["retry-after"], "2");
    }

    #[test]
    fn stop_reasons_in_anthropics_words() {
        let mut resp = ChatResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
            finish_reason: Some(FinishReason::Stop),
            provider: "p".into(),
            model: "m".into(),
            failed_over: false,
            usage: None,
            cost: None,
            attempts: Vec::new(),
            latency: std::time::Duration::ZERO,
            provider_latency: None,
            max_tokens_applied: None,
            ..ChatResponse::default()
        };
        assert_eq!(stop_reason(&resp), "end_turn");
        resp.finish_reason = Some(FinishReason::Length);
        assert_eq!(stop_reason(&resp), "max_tokens");
        resp.finish_reason = Some(FinishReason::ContentFilter);
        assert_eq!(stop_reason(&resp), "refusal");
        resp.finish_reason = Some(FinishReason::Other("pause_turn".into()));
        assert_eq!(stop_reason(&resp), "pause_turn");
        resp.finish_reason = None;
        resp.tool_calls.push(switchyard::chat::ToolCall {
            id: "c".into(),
            name: "f".into(),
            arguments: "{}".into(),
        });
        assert_eq!(stop_reason(&resp), "tool_use", "a stop with tool calls");
        assert_eq!(tool_input("not json"), json!("not json"));
        assert_eq!(tool_input(" "), json!({}));
    }

    /// The blocks as they were built before they were written directly: `Value` maps
    /// (kept here as the reference the typed blocks must match byte for byte).
    #[test]
    fn reply_blocks_are_the_value_built_ones_byte_for_byte() {
        let old = |resp: &ChatResponse| {
            let mut content = Vec::new();
            for t in &resp.thinking {
                content.push(match &t.redacted {
                    Some(data) => json!({"type": "redacted_thinking", "data": data}),
                    None => json!({"type": "thinking", "thinking": t.text,
                                   "signature": t.signature.as_deref().unwrap_or("")}),
                });
            }
            if !resp.text.is_empty() || !resp.refusal.is_empty() || resp.tool_calls.is_empty() {
                let text = format!("{}{}", resp.text, resp.refusal);
                content.push(json!({"type": "text", "text": text}));
            }
            for call in &resp.tool_calls {
                content.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
                                    "input": tool_input(&call.arguments)}));
            }
            content
        };
        let full = ChatResponse {
            text: "Text \"quoted\"\n ünïcode".into(),
            refusal: " and a refusal".into(),
            thinking: vec![
                switchyard::chat::Thinking {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                    redacted: None,
                },
                switchyard::chat::Thinking {
                    text: "unsigned".into(),
                    ..Default::default()
                },
                switchyard::chat::Thinking {
                    redacted: Some("ZGF0YQ".into()),
                    ..Default::default()
                },
            ],
            tool_calls: vec![
                switchyard::chat::ToolCall {
                    id: "t1".into(),
                    name: "f".into(),
                    arguments: r#"{"b": 1, "a": [2]}"#.into(),
                },
                switchyard::chat::ToolCall {
                    id: "t2".into(),
                    name: "g".into(),
                    arguments: "not json".into(),
                },
            ],
            ..ChatResponse::default()
        };
        let text_only = ChatResponse {
            text: "plain".into(),
            ..ChatResponse::default()
        };
        let calls_only = ChatResponse {
            text: String::new(),
            refusal: String::new(),
            thinking: Vec::new(),
            ..full.clone()
        };
        for resp in [full, text_only, calls_only, ChatResponse::default()] {
            let typed = serde_json::to_string(&blocks(&resp)).unwrap();
            assert_eq!(typed, serde_json::to_string(&old(&resp)).unwrap());
            assert_eq!(content(&resp), old(&resp), "as a thread keeps them");
        }
    }
}

#[cfg(test)]
mod reply_tests {
    use super::*;
    use crate::json_out::tests::answers;

    /// The hand-written reply is byte for byte what the serde shape writes, for answers
    /// with every optional part present and absent, escapes and unicode everywhere.
    #[test]
    fn the_written_reply_is_the_serialised_one() {
        let mut list = answers();
        // tool arguments that are JSON, not JSON, and empty
        for args in [
            "{\"b\":[1,2.5,null],\"a\":\"\\u00e9\"}",
            "not json \"",
            "  ",
            "",
        ] {
            let mut resp = list[1].clone();
            resp.tool_calls = vec![switchyard::chat::ToolCall {
                id: "toolu_1".to_owned(),
                name: "f".to_owned(),
                arguments: args.to_owned(),
            }];
            resp.text = String::new();
            list.push(resp);
        }
        for resp in &list {
            for id in ["msg_abc", "m\"\u{1}é"] {
                let mut ours = Vec::new();
                write_message(&mut ours, id, resp);
                let theirs = serde_json::to_vec(&MessageBody::new(id.to_owned(), resp)).unwrap();
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    String::from_utf8(theirs).unwrap()
                );
            }
        }
    }
}
