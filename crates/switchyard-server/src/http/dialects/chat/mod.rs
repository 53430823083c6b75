//! `POST /v1/chat/completions`: OpenAI's request in, the gateway in the middle, OpenAI's
//! response (or SSE stream) out — plus who answered, in headers and a `switchyard` object.
//!
//! Order of checks (after the guard's Host, Origin and content type: `crate::http::guard`):
//! client key (401) → body size (413) → JSON, and `model` / `user` lengths (400) → route
//! (404, listing the routes the key may use) → key's routes (403) → gateway. Streams hold
//! their headers until the gateway commits (first content chunk), so failures before that
//! get honest statuses.

mod sse;
pub mod wire;

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchyard::{ChatResponse, GatewayError, Money};
use tokio::time::Instant;

use crate::access::keys::Caller;
use crate::access::limits;
use crate::http::bounds::{clip, MAX_NAME_CHARS};
use crate::http::error::ApiError;
use crate::http::request_id::request_id;
use crate::http::state::AppState;
use crate::telemetry::log::LogEntry;
use switchyard::gateway::CallOptions;
use wire::{wire_tool_calls, WireToolCall, WireUsage};

/// Longest client- or upstream-given name a log line (and the dashboard's ring) keeps, in
/// bytes: any name of [`MAX_NAME_CHARS`] characters fits.
const LOGGED_TEXT_BYTES: usize = 4 * MAX_NAME_CHARS;

/// What a request carries through its life, for headers, the log and metrics.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub id: String,
    pub route: String,
    /// The route as a metrics label: configured name or "unknown".
    pub route_label: String,
    pub key: Option<String>,
    /// The key's limits (tokens used are counted against its `tpm`).
    pub limits: Option<crate::access::limits::KeyLimits>,
    pub time_ms: u64,
    pub started: Instant,
    pub stream: bool,
    /// A plain answer's log line, committed by the handler once the guard is disarmed.
    pub line: Option<LogEntry>,
}

impl Ctx {
    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The log line for a finished request. The route is the client's text (a refused
    /// over-long one included): cut to [`LOGGED_TEXT_BYTES`], which no accepted name reaches.
    pub(crate) fn entry(&self, status: u16) -> LogEntry {
        LogEntry {
            id: self.id.clone(),
            time_ms: self.time_ms,
            route: clip(&self.route, LOGGED_TEXT_BYTES).into_owned(),
            key: self.key.clone(),
            stream: self.stream,
            status,
            provider: None,
            model: None,
            failed_over: false,
            attempts: Vec::new(),
            usage: None,
            cost_usd: None,
            latency_ms: self.elapsed().as_secs_f64() * 1000.0,
            ttft_ms: None,
            error: None,
        }
    }
}

/// The handler.
pub async fn completions(State(state): State<AppState>, request: Request) -> Response {
    let clock = *state.gateway.clock();
    let mut guard = Abandoned {
        state: state.clone(),
        ctx: Ctx {
            id: request_id(request.headers()),
            route: String::new(),
            route_label: "unknown".to_owned(),
            key: None,
            limits: None,
            time_ms: clock.unix_ms(),
            started: clock.now(),
            stream: false,
            line: None,
        },
        armed: true,
    };
    let outcome = handle(&state, &mut guard.ctx, request).await;
    // From here the request has an answer (a streamed body logs its own end).
    guard.armed = false;
    let ctx = &mut guard.ctx;
    let (resp, line) = match outcome {
        Ok(resp) => (resp, ctx.line.take()),
        Err(err) => {
            let status = err.status.as_u16();
            let mut entry = ctx.entry(status);
            entry.attempts.clone_from(&err.attempts);
            entry.error = Some(err.code.unwrap_or(err.kind).to_owned());
            state
                .metrics
                .request(&ctx.route_label, status, ctx.stream, ctx.elapsed());
            let mut resp = err.into_response();
            set(resp.headers_mut(), "x-request-id", &ctx.id);
            (resp, Some(entry))
        }
    };
    // The response is complete only once its line is in the file (`kill -9` keeps it).
    if let Some(line) = line {
        state.log.commit(line).await;
    }
    resp
}

/// Logs a request whose client went away before any answer (status 499, like nginx):
/// hyper drops the handler's future, and this guard's `Drop` is all that runs.
struct Abandoned {
    state: AppState,
    ctx: Ctx,
    /// Cleared once the handler has an answer to give.
    armed: bool,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let ctx = &self.ctx;
        let mut entry = ctx.entry(499);
        entry.error = Some("cancelled".to_owned());
        self.state.log.write(entry);
        self.state
            .metrics
            .request(&ctx.route_label, 499, ctx.stream, ctx.elapsed());
    }
}

async fn handle(state: &AppState, ctx: &mut Ctx, request: Request) -> Result<Response, ApiError> {
    let caller = state.keys.authenticate(request.headers())?;
    ctx.key = caller.as_ref().map(|c| c.name.clone());
    let body = read_body(request.into_body(), state.max_body_bytes).await?;
    let mut wire = wire::parse(&body)?;
    ctx.route = std::mem::take(&mut wire.model);
    ctx.stream = wire.stream;
    wire.check_lengths(&ctx.route)?;
    let route = state
        .gateway
        .route(&ctx.route)
        .map_err(|_| unknown_route(state, &ctx.route, caller.as_ref()))?;
    ctx.route_label.clone_from(&route.name);
    if let Some(c) = &caller {
        if !c.allows(&route.name) {
            return Err(ApiError::forbidden(format!(
                "key {:?} may not use route {:?}",
                c.name, route.name
            )));
        }
    }
    let include_usage = wire
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage);
    let req = wire.into_chat()?;
    let opts = match &caller {
        Some(c) => {
            ctx.limits = Some(c.limits);
            let now = state.gateway.clock().unix_ms();
            limits::admit(state.gateway.state().as_ref(), &c.name, &c.limits, now).await?
        }
        None => CallOptions::default(),
    };
    if ctx.stream {
        let stream = state.gateway.stream_with(&ctx.route, req, &opts).await?;
        return Ok(sse::respond(
            state.clone(),
            ctx.clone(),
            stream,
            include_usage,
        ));
    }
    let resp = state.gateway.chat_with(&ctx.route, &req, &opts).await?;
    record_tokens(state, ctx, resp.usage.as_ref()).await;
    let out = completed(state, ctx, &resp);
    ctx.line = Some(completion_entry(ctx, &resp, 200, None));
    Ok(out)
}

/// 404 for a `model` that names no route, listing only the routes the caller may use.
fn unknown_route(state: &AppState, name: &str, caller: Option<&Caller>) -> ApiError {
    let routes = state.gateway.routes();
    let usable: Vec<&str> = routes
        .iter()
        .map(|r| r.name.as_str())
        .filter(|r| caller.is_none_or(|c| c.allows(r)))
        .collect();
    ApiError::unknown_route(name, caller.map(|c| c.name.as_str()), &usable)
}

/// Count a finished call's tokens against its key's `tpm`.
pub(crate) async fn record_tokens(state: &AppState, ctx: &Ctx, usage: Option<&switchyard::Usage>) {
    if let (Some(key), Some(l), Some(usage)) = (&ctx.key, &ctx.limits, usage) {
        let now = state.gateway.clock().unix_ms();
        limits::record(state.gateway.state().as_ref(), key, l, usage, now).await;
    }
}

async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e)
            .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ApiError::too_large(limit)
        } else if crate::http::edge::is_body_timeout(&e) {
            crate::http::edge::body_timeout()
        } else {
            ApiError::bad_request(None, format!("could not read the request body: {e}"))
        }
    })
}

/// A non-streaming completion: body, headers, metrics (the caller logs).
fn completed(state: &AppState, ctx: &Ctx, resp: &ChatResponse) -> Response {
    let body = CompletionBody::new(ctx, resp);
    // sized for the answer plus the envelope, so the buffer is not regrown while writing
    let mut bytes = Vec::with_capacity(resp.text.len() + 1024);
    if serde_json::to_writer(&mut bytes, &body).is_err() {
        bytes.clear();
    }
    let mut out = (
        StatusCode::OK,
        [("content-type", "application/json")],
        bytes,
    )
        .into_response();
    who_answered(
        out.headers_mut(),
        ctx,
        &resp.provider,
        resp.attempts.len(),
        resp.failed_over,
        Some(resp.cost),
    );
    let elapsed = ctx.elapsed();
    if let [only] = resp.attempts.as_slice() {
        state.metrics.overhead(elapsed.saturating_sub(only.latency));
    }
    state.metrics.request(&ctx.route_label, 200, false, elapsed);
    if resp.failed_over {
        state.metrics.failover(&ctx.route_label);
    }
    out
}

/// Queue the log line for a request that got a partial answer and has nobody left to
/// answer (the client went away), without waiting for it to be written.
pub(crate) fn log_completion(
    state: &AppState,
    ctx: &Ctx,
    resp: &ChatResponse,
    status: u16,
    ttft: Option<Duration>,
) {
    state.log.write(completion_entry(ctx, resp, status, ttft));
}

/// The log line for a request that got an answer (or a partial one).
pub(crate) fn completion_entry(
    ctx: &Ctx,
    resp: &ChatResponse,
    status: u16,
    ttft: Option<Duration>,
) -> LogEntry {
    let mut entry = ctx.entry(status);
    entry.provider = Some(resp.provider.clone());
    // the upstream's word, not ours: bounded like the client's
    entry.model = Some(clip(&resp.model, LOGGED_TEXT_BYTES).into_owned());
    entry.failed_over = resp.failed_over;
    entry.attempts.clone_from(&resp.attempts);
    entry.usage = resp.usage;
    entry.cost_usd = resp.cost.map(Money::to_usd);
    entry.ttft_ms = ttft.map(|d| d.as_secs_f64() * 1000.0);
    entry
}

/// The `x-switchyard-*` and `x-request-id` headers.
pub(crate) fn who_answered(
    headers: &mut HeaderMap,
    ctx: &Ctx,
    provider: &str,
    attempts: usize,
    failed_over: bool,
    cost: Option<Option<Money>>,
) {
    headers.reserve(5);
    set(headers, "x-request-id", &ctx.id);
    set(headers, "x-switchyard-provider", provider);
    set(headers, "x-switchyard-attempts", &attempts.to_string());
    headers.insert(
        HeaderName::from_static("x-switchyard-failed-over"),
        HeaderValue::from_static(if failed_over { "true" } else { "false" }),
    );
    if let Some(cost) = cost {
        set(
            headers,
            "x-switchyard-cost-usd",
            &cost.map_or_else(|| "unknown".to_owned(), usd),
        );
    }
}

fn set(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(HeaderName::from_static(name), v);
    }
}

/// Exact dollars as a plain decimal (`0.000123`).
pub(crate) fn usd(m: Money) -> String {
    m.decimal().to_string()
}

/// The `switchyard` object in response bodies.
#[derive(Debug, Serialize)]
pub(crate) struct Trail<'a> {
    provider: &'a str,
    failed_over: bool,
    cost_usd: Option<f64>,
    attempts: &'a [switchyard::observe::Attempt],
    /// The route's `default_max_tokens`, when the gateway sent it because the request set
    /// no `max_tokens` and the model's output limit is unknown (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens_applied: Option<u32>,
}

impl<'a> Trail<'a> {
    pub(crate) fn of(resp: &'a ChatResponse) -> Self {
        Self {
            provider: &resp.provider,
            failed_over: resp.failed_over,
            cost_usd: resp.cost.map(Money::to_usd),
            attempts: &resp.attempts,
            max_tokens_applied: resp.max_tokens_applied,
        }
    }
}

#[derive(Serialize)]
struct CompletionBody<'a> {
    id: String,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
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
    logprobs: Option<()>,
}

#[derive(Serialize)]
struct AssistantMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall>,
    refusal: Option<()>,
}

impl<'a> CompletionBody<'a> {
    fn new(ctx: &Ctx, resp: &'a ChatResponse) -> Self {
        let content =
            (!resp.text.is_empty() || resp.tool_calls.is_empty()).then_some(resp.text.as_str());
        Self {
            id: completion_id(ctx),
            object: "chat.completion",
            created: ctx.time_ms / 1000,
            model: &resp.model,
            choices: [Choice {
                index: 0,
                message: AssistantMessage {
                    role: "assistant",
                    content,
                    tool_calls: wire_tool_calls(&resp.tool_calls),
                    refusal: None,
                },
                finish_reason: resp
                    .finish_reason
                    .as_ref()
                    .map(switchyard::chat::FinishReason::as_openai),
                logprobs: None,
            }],
            usage: resp.usage.as_ref().map(WireUsage::from),
            switchyard: Trail::of(resp),
        }
    }
}

/// `chatcmpl-<request id>`.
pub(crate) fn completion_id(ctx: &Ctx) -> String {
    format!("chatcmpl-{}", ctx.id.trim_start_matches("req_"))
}

/// Map a gateway error to the response an SSE client gets after commit.
pub(crate) fn error_event(err: &GatewayError) -> serde_json::Value {
    ApiError::from(err.clone()).body()
}
