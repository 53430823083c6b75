//! Anthropic's message threads (`anthropic-beta: message-threads-2026-08-12`, the `thread`
//! field), served by the gateway itself, so that a thread fails over to any vendor and
//! continues on any replica: what the anthropic SDK's `tool_runner` and `messages.thread()`
//! send by default.
//!
//! - `{"type": "create"}`: the request is whole (`system`, `tools`, every message). Once
//!   its answer is complete the gateway keeps the conversation with the answer
//!   ([`store`]) under the answer's `id`.
//! - `{"type": "continue", "previous_message_id": <id>}`: the request carries only the new
//!   messages (none, to resume a paused turn) and neither `system` nor `tools` (the thread
//!   keeps the creating request's; repeating one is a 400 naming it). The gateway expands
//!   it into the whole conversation, decoded as if the client had sent it all, so any
//!   provider can answer; an Anthropic provider gets the whole body without `thread`, and
//!   no provider gets the threads beta.
//!
//! Errors are Anthropic's, with `error.details.error_code` (the SDK's `ThreadNotFoundError`
//! and siblings, which its thread helper recovers from by sending the whole conversation
//! again): `thread_not_found` (404: unknown, expired, or another key's),
//! `thread_already_continued` (400: the answer has a successor already),
//! `thread_continue_in_flight` (400: another request is continuing from it now), and
//! `thread_unsupported_request` (400: the thread would grow past `[threads]
//! max_thread_bytes`; the SDK's tool runner then goes on without a thread). A turn whose
//! answer is a refusal, or whose stream ends before `message_stop`, is not kept.

mod store;

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{json, Value};
use switchyard::chat::RawBody;
use switchyard::{ChatRequest, ChatResponse};

use super::wire::{self, Thread as Param};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::dialects::{Ctx, Decoded};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The beta a thread's requests carry. The gateway serves it; no provider gets it.
pub(super) const BETA: &str = "message-threads-2026-08-12";

/// `error.details.error_code` of the errors a thread's turn can meet.
const NOT_FOUND: &str = "thread_not_found";
const ALREADY_CONTINUED: &str = "thread_already_continued";
const IN_FLIGHT: &str = "thread_continue_in_flight";
const UNSUPPORTED: &str = "thread_unsupported_request";
/// Request fields a thread keeps from its `create`: a `continue` must not send them.
const CREATE_ONLY: [&str; 2] = ["system", "tools"];

/// What a Messages request keeps for its answer: its thread, when it is a thread's turn
/// (the dialect's `Extra`).
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// The request's `thread`.
    param: Option<Param>,
    /// The answer's id (a thread's turn's: set by [`prepare`]).
    id: Option<String>,
    /// What [`finished`] keeps once the answer is complete (set by [`prepare`]).
    pending: Mutex<Option<Pending>>,
}

/// A thread's turn waiting for its answer.
#[derive(Debug)]
struct Pending {
    thread: String,
    /// For a `continue`: the answer it continues from.
    previous: Option<String>,
    /// The conversation up to the answer.
    record: store::Record,
    /// For a `continue`: the right to continue from `previous` (given back on drop).
    lease: Option<store::Lease>,
}

impl Turn {
    /// The turn of a request whose `thread` is `param`.
    pub(super) fn new(param: Option<Param>) -> Self {
        Self {
            param,
            ..Self::default()
        }
    }

    /// The answer's `id`: a thread's turn's (the one to continue from), else
    /// `msg_<request id>`.
    pub(super) fn id(&self, ctx: &Ctx) -> String {
        self.id.clone().unwrap_or_else(|| super::message_id(ctx))
    }
}

/// `anthropic-beta` without the threads beta: `None` when nothing else is left.
pub(super) fn other_betas(header: &str) -> Option<String> {
    let rest: Vec<&str> = header
        .split(',')
        .map(str::trim)
        .filter(|b| !b.is_empty() && *b != BETA)
        .collect();
    (!rest.is_empty()).then(|| rest.join(","))
}

/// `error.details` for an error whose code is a thread's.
pub(super) fn details(code: Option<&str>) -> Option<Value> {
    let code =
        code.filter(|c| [NOT_FOUND, ALREADY_CONTINUED, IN_FLIGHT, UNSUPPORTED].contains(c))?;
    Some(json!({ "error_code": code }))
}

/// A thread's turn before the gateway call: a `create` notes what to keep; a `continue`
/// becomes the whole conversation. Either way the body an Anthropic provider gets loses
/// `thread`.
///
/// # Errors
/// The thread errors above, or a 400 naming `system` / `tools` repeated by a `continue`.
pub(super) async fn prepare(
    state: &AppState,
    ctx: &Ctx,
    decoded: &mut Decoded<Turn>,
) -> Result<(), ApiError> {
    let Some(mut native) = decoded.request.native.take() else {
        return Ok(());
    };
    let param = decoded.extra.param.clone();
    if param.is_none() && !native.body.contains("thread") {
        decoded.request.native = Some(native);
        return Ok(());
    }
    let mut body = Arc::unwrap_or_clone(std::mem::take(&mut native.body));
    body.remove("thread");
    let pending = match param {
        None => None,
        Some(Param::Create {}) => Some(create(state, ctx, &body)?),
        Some(Param::Continue {
            previous_message_id,
        }) => Some(continued(state, ctx, &mut body, &previous_message_id).await?),
    };
    if let Some(pending) = pending {
        if pending.previous.is_some() {
            let only;
            (decoded.request, only) = whole(&body)?;
            // what an earlier turn held that only Anthropic serves is in the history
            if !only.is_empty() {
                native.required = true;
                native.required_by = only;
            }
        }
        decoded.extra.id = Some(store::answer_id(&pending.thread));
        if let Ok(mut slot) = decoded.extra.pending.lock() {
            *slot = Some(pending);
        }
    }
    native.body = Arc::new(body);
    decoded.request.native = Some(native);
    Ok(())
}

/// A `create`: the conversation to keep with the answer.
fn create(state: &AppState, ctx: &Ctx, body: &RawBody) -> Result<Pending, ApiError> {
    let record = store::Record {
        key: ctx.key.clone(),
        system: body.get_as("system"),
        tools: body.get_as("tools"),
        messages: messages_of(body),
        answers: Vec::new(),
    };
    let size = serde_json::to_vec(&record).map_or(0, |b| b.len());
    if size > state.threads.max_bytes {
        return Err(too_large(state, size));
    }
    Ok(Pending {
        thread: store::new_thread(),
        previous: None,
        record,
        lease: None,
    })
}

/// A `continue` from `previous`: the thread it continues, with the new messages appended,
/// written into `body` as the whole request. The thread is held to the request's memory
/// bounds before it is read (`crate::http::dialects::expansion`).
async fn continued(
    state: &AppState,
    ctx: &Ctx,
    body: &mut RawBody,
    previous: &str,
) -> Result<Pending, ApiError> {
    if let Some(field) = CREATE_ONLY.iter().find(|f| body.contains(f)) {
        return Err(repeated(field));
    }
    let thread = store::thread_of(previous).ok_or_else(|| not_found(previous))?;
    // the lease first, then the thread: a request that gets the lease sees the thread as
    // its last holder left it
    let lease = store::Lease::take(state, previous).await;
    let what = format!(
        "thread.previous_message_id {:?}",
        clip(previous, ECHO_BYTES)
    );
    let (mut record, size) = store::load_within(state, thread, ctx, &what)
        .await?
        .ok_or_else(|| not_found(previous))?;
    if record.head() != Some(previous) {
        return Err(if record.answers.iter().any(|a| a == previous) {
            already_continued(previous)
        } else {
            not_found(previous)
        });
    }
    let lease = lease.ok_or_else(|| in_flight(previous))?;
    let new = messages_of(body);
    let grown = size + serde_json::to_vec(&new).map_or(0, |b| b.len());
    if grown > state.threads.max_bytes {
        return Err(too_large(state, grown));
    }
    record.messages.extend(new);
    let encoding = |e: serde_json::Error| ApiError::bad_request(None, e.to_string());
    body.set_value("messages", &record.messages)
        .map_err(encoding)?;
    for (field, kept) in [("system", &record.system), ("tools", &record.tools)] {
        if let Some(value) = kept {
            body.set_value(field, value).map_err(encoding)?;
        }
    }
    Ok(Pending {
        thread: thread.to_owned(),
        previous: Some(previous.to_owned()),
        record,
        lease: Some(lease),
    })
}

/// The request's `messages`, as sent.
fn messages_of(body: &RawBody) -> Vec<Value> {
    body.get_as("messages").unwrap_or_default()
}

/// The whole conversation in the shared shape, decoded as the request would be had the
/// client sent it all (its own new part was checked already, with its own paths).
fn whole(body: &RawBody) -> Result<(ChatRequest, Vec<String>), ApiError> {
    let bytes = body.to_bytes();
    // unknown top-level fields are the turn's own, admitted or refused already
    let (request, _unknown) = wire::parse(&bytes)?;
    // what the thread keeps was admitted when it was sent: decoded as under a beta
    let mut ignored = wire::Ignored::new(true);
    let request = request.into_chat(&mut ignored)?;
    let (_, anthropic_only) = ignored.into_parts();
    Ok((request, anthropic_only))
}

/// After a complete answer (plain, or a stream that reached its end): keep the turn, with
/// the answer, as the thread's new head, and give the lease back. A refusal is not kept
/// (the SDK starts a new thread after one), nor a streamed answer the gateway did not keep
/// whole (`[server] rescue_buffer_bytes` 0 or passed), nor a thread grown past its bound.
pub(super) async fn finished(state: &AppState, ctx: &Ctx, turn: &Turn, resp: &ChatResponse) {
    let taken = turn.pending.lock().ok().and_then(|mut p| p.take());
    let (Some(mut pending), Some(id)) = (taken, turn.id.clone()) else {
        return;
    };
    if keeps(state, ctx, resp) && still_head(state, ctx, &pending).await {
        let record = &mut pending.record;
        record
            .messages
            .push(json!({"role": "assistant", "content": super::content(resp)}));
        // each turn's cache breakpoints were for that turn (Anthropic takes four a request):
        // the SDK leaves them out when it sends answered turns again, and so does the thread
        record.messages.iter_mut().for_each(without_cache_control);
        record.answers.push(id);
        store::save(state, &pending.thread, record).await;
    }
    if let Some(lease) = pending.lease.take() {
        lease.release().await;
    }
}

/// Whether an answer is kept in its thread.
fn keeps(state: &AppState, ctx: &Ctx, resp: &ChatResponse) -> bool {
    if super::stop_reason(resp) == "refusal" {
        return false;
    }
    // a stream that passed the rescue buffer kept none of its text or tool calls
    let kept_whole = state.gateway.rescue_buffer_bytes() > 0
        && !(resp.text.is_empty() && resp.refusal.is_empty() && resp.tool_calls.is_empty());
    !ctx.stream || kept_whole
}

/// For a `continue`: whether the thread still ends at the answer it continued from (the
/// lease kept other continues out, unless it lapsed during a very long answer).
async fn still_head(state: &AppState, ctx: &Ctx, pending: &Pending) -> bool {
    let Some(previous) = &pending.previous else {
        return true;
    };
    store::load(state, &pending.thread, ctx.key.as_deref())
        .await
        .is_some_and(|(r, _)| r.head() == Some(previous.as_str()))
}

/// Keys that hold blocks (where `cache_control` marks a breakpoint); a tool's `input` and
/// other free-form data are left as they are.
const HOLDS_BLOCKS: [&str; 5] = ["content", "source", "tool", "definition", "tool_references"];

/// `value` without the `cache_control` of any block in it.
fn without_cache_control(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            for (key, inner) in map.iter_mut() {
                if HOLDS_BLOCKS.contains(&key.as_str()) {
                    without_cache_control(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(without_cache_control),
        _ => {}
    }
}

// ---------------------------------------------------------------- errors

fn thread_error(status: StatusCode, code: &'static str, message: String) -> ApiError {
    ApiError::new(status, "invalid_request_error", message)
        .param("thread.previous_message_id")
        .code(code)
}

fn not_found(id: &str) -> ApiError {
    thread_error(
        StatusCode::NOT_FOUND,
        NOT_FOUND,
        format!(
            "no thread continues from {:?}: unknown, expired, or another key's. Send the whole \
             conversation with `thread: {{\"type\": \"create\"}}` to start a new one",
            clip(id, ECHO_BYTES)
        ),
    )
}

fn already_continued(id: &str) -> ApiError {
    thread_error(
        StatusCode::BAD_REQUEST,
        ALREADY_CONTINUED,
        format!(
            "{:?} was continued already, and each answer can be continued only once: continue \
             from the thread's most recent answer",
            clip(id, ECHO_BYTES)
        ),
    )
}

fn in_flight(id: &str) -> ApiError {
    thread_error(
        StatusCode::BAD_REQUEST,
        IN_FLIGHT,
        format!(
            "another request is continuing from {:?} now: continue from its answer once it is \
             done, or send the whole conversation with `thread: {{\"type\": \"create\"}}`",
            clip(id, ECHO_BYTES)
        ),
    )
}

fn too_large(state: &AppState, bytes: usize) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        format!(
            "thread: this turn would grow the thread to {bytes} bytes, past the gateway's \
             [threads] max_thread_bytes ({}): send the whole conversation without `thread`",
            state.threads.max_bytes
        ),
    )
    .param("thread")
    .code(UNSUPPORTED)
}

fn repeated(field: &str) -> ApiError {
    ApiError::bad_request(
        Some(field.to_owned()),
        format!(
            "{field}: a `continue` must not send `{field}`: the thread keeps the one it was \
             created with. To change it, start a new thread with `thread: {{\"type\": \
             \"create\"}}`"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_threads_beta_is_taken_out() {
        assert_eq!(other_betas(BETA), None);
        assert_eq!(other_betas(&format!(" {BETA} , ")), None);
        assert_eq!(
            other_betas(&format!(
                "context-1m-2025-08-07,{BETA}, fast-mode-2026-02-01"
            )),
            Some("context-1m-2025-08-07,fast-mode-2026-02-01".to_owned())
        );
        assert_eq!(
            other_betas("interleaved-thinking-2025-05-14"),
            Some("interleaved-thinking-2025-05-14".to_owned())
        );
    }

    #[test]
    fn cache_breakpoints_go_from_blocks_but_not_from_tool_inputs() {
        let mut turn = json!({"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
            {"type": "tool_result", "tool_use_id": "t", "content": [
                {"type": "text", "text": "r", "cache_control": {"type": "ephemeral"}}]},
            {"type": "tool_use", "id": "t", "name": "f",
             "input": {"cache_control": "the tool's own argument"}}]});
        without_cache_control(&mut turn);
        assert_eq!(
            turn,
            json!({"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "r"}]},
                {"type": "tool_use", "id": "t", "name": "f",
                 "input": {"cache_control": "the tool's own argument"}}]})
        );
    }

    #[test]
    fn thread_errors_carry_their_code_as_details() {
        assert_eq!(
            details(Some(NOT_FOUND)),
            Some(json!({"error_code": "thread_not_found"}))
        );
        assert_eq!(details(Some("model_not_found")), None);
        assert_eq!(details(None), None);
        let e = super::super::error_body(&in_flight("msg_1"));
        assert_eq!(e["error"]["details"]["error_code"], IN_FLIGHT);
        assert_eq!(e["error"]["type"], "invalid_request_error");
    }
}
