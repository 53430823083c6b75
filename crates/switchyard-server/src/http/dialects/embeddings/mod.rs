//! `POST /v1/embeddings`: OpenAI's Embeddings request in, the gateway's embeddings run in
//! the middle (failover, retries, breakers, deadline, budgets, exact cost), OpenAI's
//! response out — plus who answered, in the same `x-switchyard-*` headers and `switchyard`
//! object as Chat Completions, and the same request-log line.
//!
//! Order of checks, as for chat (after the guard): client key (401) → body size and read
//! timeout (413 / 408) → JSON and fields (400 naming the field; `wire.rs`) → route (404,
//! listing the routes the key may use) → the route serves embeddings (400 naming it) →
//! key's routes (403) → key limits (429) → the gateway. Items the chat handler shares are
//! reused from `dialects::chat` (`Ctx`, `who_answered`, `record_tokens`, `usd`).

pub mod wire;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchyard::embedding::EmbeddingResponse;
use switchyard::gateway::CallOptions;
use switchyard::{Api, Money};

use crate::access::keys::Caller;
use crate::access::limits;
use crate::http::bounds::{clip, MAX_NAME_CHARS};
use crate::http::dialects::chat::{record_tokens, who_answered, Ctx};
use crate::http::error::ApiError;
use crate::http::request_id::request_id;
use crate::http::state::AppState;
use crate::telemetry::log::LogEntry;
use wire::{Encoding, Vector};

/// Longest upstream-given model name a log line keeps, in bytes (as chat's).
const LOGGED_TEXT_BYTES: usize = 4 * MAX_NAME_CHARS;

/// The handler.
pub async fn create(State(state): State<AppState>, request: Request) -> Response {
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
    guard.armed = false;
    let ctx = &mut guard.ctx;
    let (resp, line) = match outcome {
        Ok(resp) => (resp, ctx.line.take()),
        Err(err) => {
            let status = err.status.as_u16();
            let mut entry = ctx.entry(status);
            entry.attempts.clone_from(&err.attempts);
            entry.error = Some(err.code.unwrap_or(err.kind).to_owned());
            let elapsed = ctx.started.elapsed();
            state
                .metrics
                .request(&ctx.route_label, status, false, elapsed);
            let mut resp = err.into_response();
            if let Ok(v) = HeaderValue::from_str(&ctx.id) {
                resp.headers_mut().insert("x-request-id", v);
            }
            (resp, Some(entry))
        }
    };
    if let Some(line) = line {
        state.log.commit(line).await;
    }
    resp
}

/// Logs a request whose client went away before any answer (status 499), as chat does.
struct Abandoned {
    state: AppState,
    ctx: Ctx,
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
        let elapsed = ctx.started.elapsed();
        self.state
            .metrics
            .request(&ctx.route_label, 499, false, elapsed);
    }
}

async fn handle(state: &AppState, ctx: &mut Ctx, request: Request) -> Result<Response, ApiError> {
    let caller = state.keys.authenticate(request.headers())?;
    ctx.key = caller.as_ref().map(|c| c.name.clone());
    let body = read_body(request.into_body(), state.max_body_bytes).await?;
    let mut wire = wire::parse(&body)?;
    wire.check_lengths()?;
    ctx.route = std::mem::take(&mut wire.model);
    let route = state
        .gateway
        .route(&ctx.route)
        .map_err(|_| unknown_route(state, &ctx.route, caller.as_ref()))?;
    ctx.route_label.clone_from(&route.name);
    if route.api != Api::Embeddings {
        return Err(ApiError::bad_request(
            Some("model".to_owned()),
            format!(
                "route {:?} serves {}, not embeddings; use an embeddings route",
                route.name,
                route.api.label()
            ),
        ));
    }
    if let Some(c) = &caller {
        if !c.allows(&route.name) {
            return Err(ApiError::forbidden(format!(
                "key {:?} may not use route {:?}",
                c.name, route.name
            )));
        }
    }
    let (req, encoding) = wire.into_request()?;
    let opts = match &caller {
        Some(c) => {
            ctx.limits = Some(c.limits);
            let now = state.gateway.clock().unix_ms();
            limits::admit(state.gateway.state().as_ref(), &c.name, &c.limits, now).await?
        }
        None => CallOptions::default(),
    };
    let resp = state.gateway.embed_with(&ctx.route, &req, &opts).await?;
    record_tokens(state, ctx, resp.usage.as_ref()).await;
    let out = answered(state, ctx, &resp, encoding);
    ctx.line = Some(entry(ctx, &resp));
    Ok(out)
}

/// 404 for a `model` that names no route, listing only the routes the caller may use.
fn unknown_route(state: &AppState, name: &str, caller: Option<&Caller>) -> ApiError {
    let routes = state.gateway.routes();
    let usable: Vec<&str> = routes
        .iter()
        .filter(|r| r.api == Api::Embeddings)
        .map(|r| r.name.as_str())
        .filter(|r| caller.is_none_or(|c| c.allows(r)))
        .collect();
    ApiError::unknown_route(name, caller.map(|c| c.name.as_str()), &usable)
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

/// The response: body, headers, metrics (the caller logs).
fn answered(state: &AppState, ctx: &Ctx, resp: &EmbeddingResponse, encoding: Encoding) -> Response {
    let body = ListBody::new(resp, encoding);
    let dims: usize = resp.vectors.iter().map(Vec::len).sum();
    let mut bytes = Vec::with_capacity(dims * 12 + 1024);
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
    let elapsed = ctx.started.elapsed();
    if let [only] = resp.attempts.as_slice() {
        state.metrics.overhead(elapsed.saturating_sub(only.latency));
    }
    state.metrics.request(&ctx.route_label, 200, false, elapsed);
    if resp.failed_over {
        state.metrics.failover(&ctx.route_label);
    }
    out
}

/// The log line of an answered request.
fn entry(ctx: &Ctx, resp: &EmbeddingResponse) -> LogEntry {
    let mut entry = ctx.entry(200);
    entry.provider = Some(resp.provider.clone());
    entry.model = Some(clip(&resp.model, LOGGED_TEXT_BYTES).into_owned());
    entry.failed_over = resp.failed_over;
    entry.attempts.clone_from(&resp.attempts);
    entry.usage = resp.usage;
    entry.cost_usd = resp.cost.map(Money::to_usd);
    entry
}

#[derive(Serialize)]
struct ListBody<'a> {
    object: &'static str,
    data: Vec<Item<'a>>,
    model: &'a str,
    usage: Usage,
    switchyard: Trail<'a>,
}

#[derive(Serialize)]
struct Item<'a> {
    object: &'static str,
    index: usize,
    embedding: Vector<'a>,
}

/// OpenAI's embeddings usage. A vendor that reports none (Gemini) gives zeros here; the
/// `switchyard` object's `cost_usd` is then `null` (unknown, never 0).
#[derive(Serialize)]
struct Usage {
    prompt_tokens: u64,
    total_tokens: u64,
}

/// The `switchyard` object: the same fields as Chat Completions'.
#[derive(Serialize)]
struct Trail<'a> {
    provider: &'a str,
    failed_over: bool,
    cost_usd: Option<f64>,
    attempts: &'a [switchyard::observe::Attempt],
}

impl<'a> ListBody<'a> {
    fn new(resp: &'a EmbeddingResponse, encoding: Encoding) -> Self {
        let tokens = resp.usage.map_or(0, |u| u.input_tokens);
        Self {
            object: "list",
            data: (resp.vectors.iter().enumerate())
                .map(|(index, values)| Item {
                    object: "embedding",
                    index,
                    embedding: Vector { values, encoding },
                })
                .collect(),
            model: &resp.model,
            usage: Usage {
                prompt_tokens: tokens,
                total_tokens: tokens,
            },
            switchyard: Trail {
                provider: &resp.provider,
                failed_over: resp.failed_over,
                cost_usd: resp.cost.map(Money::to_usd),
                attempts: &resp.attempts,
            },
        }
    }
}
