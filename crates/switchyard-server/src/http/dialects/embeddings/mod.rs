//! `POST /v1/embeddings`: OpenAI's Embeddings request in, the gateway's embeddings run in
//! the middle (failover, retries, breakers, deadline, budgets, exact cost), OpenAI's
//! response out — plus who answered, in the same `x-switchyard-*` headers and `switchyard`
//! object as Chat Completions, and the same request-log line (`api: "embeddings"`).
//!
//! Not a chat [`super::Dialect`] (its request and answer are the library's embedding
//! shape), but the same steps of the shared flow (`super::flow`), in the same order:
//! client key and what needs no body (401; 403 for a key with no route; 429 for its requests
//! in flight or rate) → body size and read timeout (413 / 408) → JSON and fields (400 naming
//! the field; `wire.rs`) → route (404, listing the routes the key may use) → key's routes
//! (403) → the route serves embeddings (400 naming it) → key budgets → the gateway.

pub mod wire;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use switchyard::embedding::EmbeddingResponse;
use switchyard::{Api, Money};

use super::flow::{
    admit_body, admit_limits, admit_route, answer_with, answered_json, record_tokens, Abandoned,
};
use super::Ctx;
use crate::http::bounds::{clip, MAX_NAME_CHARS};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::telemetry::log::LogEntry;
use wire::{Encoding, Vector};

/// The API's name in the request log.
pub const API: &str = "embeddings";

/// Longest upstream-given model name a log line keeps, in bytes (as chat's).
const LOGGED_TEXT_BYTES: usize = 4 * MAX_NAME_CHARS;

/// The handler.
pub async fn create(State(state): State<AppState>, request: Request) -> Response {
    let mut guard = Abandoned {
        ctx: Ctx::new(&state, API, request.headers()),
        state: state.clone(),
        armed: true,
    };
    let span = guard.ctx.span();
    let outcome =
        tracing::Instrument::instrument(Box::pin(handle(&state, &mut guard.ctx, request)), span)
            .await;
    guard.armed = false;
    answer_with(&state, &mut guard.ctx, outcome, IntoResponse::into_response).await
}

async fn handle(state: &AppState, ctx: &mut Ctx, request: Request) -> Result<Response, ApiError> {
    let (caller, body) = admit_body(state, ctx, request).await?;
    let (req, encoding) = decode(&body, ctx)?;
    drop(body);
    let route = admit_route(state, ctx, caller.as_ref())?;
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
    let opts = admit_limits(state, ctx, caller.as_ref());
    let resp = state.gateway.embed_with(&ctx.route, &req, &opts).await?;
    record_tokens(state, ctx, resp.usage.as_ref()).await;
    let out = answered(state, ctx, &resp, encoding);
    ctx.line = Some(entry(ctx, &resp));
    Ok(out)
}

/// The body into the library's request, the route into `ctx` as soon as it is known.
fn decode(
    body: &Bytes,
    ctx: &mut Ctx,
) -> Result<(switchyard::EmbeddingRequest, Encoding), ApiError> {
    let mut wire = wire::parse(body)?;
    ctx.route = std::mem::take(&mut wire.model);
    wire.check_lengths(&ctx.route)?;
    wire.into_request()
}

/// What the request cost: the answer, and what failed turns before it billed though they
/// failed (`switchyard::observe::Reported::spent`: a fan-out's answered calls).
fn total_cost(resp: &EmbeddingResponse) -> Option<Money> {
    match (resp.cost, switchyard::observe::spent(&resp.attempts)) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// The response: body, headers, metrics (the caller logs).
fn answered(state: &AppState, ctx: &Ctx, resp: &EmbeddingResponse, encoding: Encoding) -> Response {
    let body = ListBody::new(resp, encoding);
    let dims: usize = resp.vectors.iter().map(Vec::len).sum();
    let mut bytes = Vec::with_capacity(dims * 12 + 1024);
    if serde_json::to_writer(&mut bytes, &body).is_err() {
        bytes.clear();
    }
    answered_json(
        state,
        ctx,
        bytes,
        &resp.provider,
        &resp.attempts,
        resp.failed_over,
        total_cost(resp),
    )
}

/// The log line of an answered request.
fn entry(ctx: &Ctx, resp: &EmbeddingResponse) -> LogEntry {
    let mut entry = ctx.entry(200);
    entry.provider = Some(resp.provider.clone());
    entry.model = Some(clip(&resp.model, LOGGED_TEXT_BYTES).into_owned());
    entry.failed_over = resp.failed_over;
    entry.attempts.clone_from(&resp.attempts);
    entry.usage = resp.usage;
    entry.cost_usd = total_cost(resp).map(Money::to_usd);
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
                cost_usd: total_cost(resp).map(Money::to_usd),
                attempts: &resp.attempts,
            },
        }
    }
}
