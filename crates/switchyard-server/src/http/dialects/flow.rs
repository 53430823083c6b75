//! The path every dialect's request takes, written once.
//!
//! Order of checks (after the guard's Host, Origin and content type: `crate::http::guard`):
//! what can be checked before the body is read — client key (401), the key may use some
//! route (403), its requests in flight (429, `[[keys]] max_in_flight`) and its rate limits
//! (429; the request counts against `rpm`) — then body size and read timeout (413 / 408) →
//! the dialect's decoder (400 naming the field) → route (404, listing the routes the key may
//! use) → key's routes (403) → the dialect's `prepare` → key budgets (a budgeted request
//! using a field billed above list price is a 400 naming it: `super::surcharges`) →
//! gateway. So a key refused anyway never holds a slot while its body trickles in. Streams hold their headers until
//! the gateway commits (first content chunk), so failures before that get honest statuses.
//! Every request gets one log line: [`serve`] commits it before the answer goes out, a
//! stream's writer before its last event ([`super::sse`]), and [`Abandoned`] when the
//! client went away first.

use std::future::Future;
use std::pin::Pin;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use switchyard::chat::{CacheNote, CacheStatus};
use switchyard::gateway::CallOptions;
use switchyard::route::Route;
use switchyard::{ChatResponse, GatewayError, Money};
use tracing::Instrument as _;

pub(crate) use super::ctx::{completion_entry, record_tokens, set, who_answered, Ctx, Trail};
use super::{Decoded, Dialect};
use crate::access::keys::Caller;
use crate::access::limits;
use crate::http::error::ApiError;
use crate::http::request_id::X_REQUEST_ID;
use crate::http::state::AppState;

/// A dialect's handler: the shared flow around its codec. Its future is built in its box
/// ([`in_box`]): axum's handler future then holds a pointer, not the flow's state, which it
/// would otherwise copy whole each time it moves it (BENCHMARKS.md, "Stop 33").
pub(crate) fn serve<D: Dialect>(
    state: State<AppState>,
    request: Request,
) -> Pin<Box<impl Future<Output = Response> + Send>> {
    in_box(move || serve_boxed::<D>(state, request))
}

/// `make()`'s value written straight into a new box, where `Box::pin(make())` builds it on
/// the stack first and copies it in: a future not yet polled is copied at its full size,
/// several KB for the request flow's, though only its arguments are set.
#[inline(always)]
pub(crate) fn in_box<F>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

async fn serve_boxed<D: Dialect>(State(state): State<AppState>, request: Request) -> Response {
    let mut guard = Abandoned {
        ctx: Ctx::new(&state, D::API, request.headers()),
        state: state.clone(),
        armed: true,
    };
    let span = guard.ctx.span();
    // boxed: the flow's future is large, and the span's wrapper would otherwise be one
    // more copy of it per request (BENCHMARKS.md, "Stop 21")
    let outcome = in_box(|| handle::<D>(&state, &mut guard.ctx, request))
        .instrument(span)
        .await;
    guard.armed = false;
    answer::<D>(&state, &mut guard.ctx, outcome).await
}

/// Log a request's outcome (a failure's line here; an answer's the handler made) and turn
/// it into the response. The response is complete only once its line is in the file
/// (`kill -9` keeps it); a streamed body logs its own end.
pub(crate) async fn answer<D: Dialect>(
    state: &AppState,
    ctx: &mut Ctx,
    outcome: Result<Response, ApiError>,
) -> Response {
    answer_with(state, ctx, outcome, D::error).await
}

/// [`answer`] with the error shape given as a function (for handlers that are not a chat
/// [`Dialect`], such as embeddings).
pub(crate) async fn answer_with(
    state: &AppState,
    ctx: &mut Ctx,
    outcome: Result<Response, ApiError>,
    error: fn(ApiError) -> Response,
) -> Response {
    let (resp, line) = match outcome {
        Ok(resp) => (resp, ctx.line.take()),
        Err(err) => {
            let status = err.status.as_u16();
            let mut entry = ctx.entry(status);
            entry.attempts.clone_from(&err.attempts);
            // what failed turns billed though the request failed (an embeddings fan-out)
            entry.cost_usd = switchyard::observe::spent(&err.attempts).map(Money::to_usd);
            entry.error = Some(err.code.unwrap_or(err.kind).to_owned());
            state
                .metrics
                .request(&ctx.route_label, status, ctx.stream, ctx.elapsed());
            let mut resp = error(err);
            set(resp.headers_mut(), X_REQUEST_ID, &ctx.id);
            super::ctx::cache_headers(resp.headers_mut(), ctx.cache_note());
            (resp, Some(entry))
        }
    };
    match (line, ctx.unauthenticated) {
        (Some(line), Some(reason)) => {
            state.metrics.unauthenticated(reason);
            state.log.commit_refusal(line, reason).await;
        }
        (Some(line), None) => state.log.commit(line).await,
        (None, _) => {}
    }
    resp
}

/// Logs a request whose client went away before any answer (status 499, like nginx):
/// hyper drops the handler's future, and this guard's `Drop` is all that runs.
pub(crate) struct Abandoned {
    pub(crate) state: AppState,
    pub(crate) ctx: Ctx,
    /// Cleared once the handler has an answer to give.
    pub(crate) armed: bool,
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

/// The client key and what can be checked of it before the body ([`admit_key`]), then
/// the body within the limit.
///
/// # Errors
/// 401, 403, 429, 413, 408, or 400 for an unreadable body.
pub(crate) async fn admit_body(
    state: &AppState,
    ctx: &mut Ctx,
    request: Request,
) -> Result<(Option<Caller>, Bytes), ApiError> {
    let caller = admit_key(state, ctx, request.headers()).await?;
    let body = read_body(request.into_body(), state.max_body_bytes).await?;
    ctx.spent = super::expansion::admit_body(&state.expansion, &body, ctx.api)?;
    Ok((caller, body))
}

/// The client key, and everything about it that needs no body: it may use some route,
/// it has a place among its requests in flight (held in `ctx` for the request's life, a
/// stream's included), and it is within its rate limits (the request counts against
/// `rpm` here).
///
/// # Errors
/// 401 (no or unknown key), 403 (a key that may use no route), 429 (in flight or rate).
async fn admit_key(
    state: &AppState,
    ctx: &mut Ctx,
    headers: &axum::http::HeaderMap,
) -> Result<Option<Caller>, ApiError> {
    let caller = state.keys.authenticate(headers).inspect_err(|_| {
        let carried = crate::access::keys::KeyStore::carries_key(headers);
        ctx.unauthenticated = Some(if carried {
            "invalid_key"
        } else {
            "missing_key"
        });
    })?;
    let Some(c) = caller.as_ref() else {
        return Ok(None);
    };
    ctx.key = Some(c.name.clone());
    let routes = state.gateway.routes();
    if !c.allows_any(routes.iter().map(|r| r.name.as_str())) {
        return Err(ApiError::forbidden(format!(
            "key {:?} may not use any route",
            c.name
        )));
    }
    ctx.key_slot = Some(c.enter()?);
    ctx.limits = Some(c.limits);
    let now = state.gateway.clock().unix_ms();
    limits::admit_rates(state.gateway.state().as_ref(), &c.name, &c.limits, now).await?;
    Ok(caller)
}

/// The route the client named, if the caller may use it.
///
/// # Errors
/// 404 for an unknown route (listing the caller's), 403 for a route the key may not use.
pub(crate) fn admit_route<'s>(
    state: &'s AppState,
    ctx: &mut Ctx,
    caller: Option<&Caller>,
) -> Result<&'s Route, ApiError> {
    let route = state.gateway.route(&ctx.route).map_err(|e| match e {
        GatewayError::UnknownRoute { .. } => unknown_route(state, &ctx.route, caller),
        other => ApiError::from(other),
    })?;
    ctx.route_label.clone_from(&route.name);
    if let Some(c) = caller {
        if !c.allows(&route.name) {
            return Err(ApiError::forbidden(format!(
                "key {:?} may not use route {:?}",
                c.name, route.name
            )));
        }
    }
    Ok(route)
}

/// The key's budgets (its rate limits were checked before the body: [`admit_body`]), as
/// the gateway's call options.
///
pub(crate) fn admit_limits(state: &AppState, ctx: &Ctx, caller: Option<&Caller>) -> CallOptions {
    let mut opts = match caller {
        Some(c) => limits::budgets(&c.name, &c.limits, state.gateway.clock().unix_ms()),
        None => CallOptions::default(),
    };
    opts.upstream = ctx.upstream();
    opts
}

async fn handle<D: Dialect>(
    state: &AppState,
    ctx: &mut Ctx,
    request: Request,
) -> Result<Response, ApiError> {
    let directives = crate::cache::Directives::of(request.headers());
    let (caller, body) = admit_body(state, ctx, request).await?;
    let mut decoded: Decoded<D::Extra> = D::decode(&body, ctx)?;
    drop(body);
    ctx.fields = decoded.request.fields_used();
    let budgeted = admit_route(state, ctx, caller.as_ref())?.budget.is_some();
    D::prepare(state, ctx, &mut decoded).await?;
    let opts = admit_limits(state, ctx, caller.as_ref());
    if budgeted || !opts.budgets.is_empty() {
        super::surcharges::refuse_on_budget(&decoded.request)?;
    }
    let Decoded {
        mut request, extra, ..
    } = decoded;
    ctx.capture(state, &request);
    // the cache's steps are boxed: inline, they would grow this future, which every request
    // moves, for what only cached routes do (BENCHMARKS.md, "Stop 31: the response cache")
    let plan = cache_plan(state, ctx, caller.as_ref(), &mut request, directives);
    if let Some(plan) = &plan {
        if let Some(resp) = Box::pin(cache_hit(state, plan)).await {
            return Ok(Box::pin(from_cache::<D>(state, ctx, &extra, resp)).await);
        }
    }
    if ctx.stream {
        let stream = match state.gateway.stream_with(&ctx.route, request, &opts).await {
            Ok(stream) => stream,
            Err(err) => {
                return Box::pin(stale_or_error::<D>(
                    state,
                    ctx,
                    &extra,
                    plan.as_deref(),
                    err,
                ))
                .await
            }
        };
        return Ok(super::sse::respond::<D>(
            state.clone(),
            ctx.clone(),
            stream,
            extra,
        ));
    }
    let mut resp = match state.gateway.chat_with(&ctx.route, &request, &opts).await {
        Ok(resp) => resp,
        Err(err) => {
            return Box::pin(stale_or_error::<D>(
                state,
                ctx,
                &extra,
                plan.as_deref(),
                err,
            ))
            .await
        }
    };
    if let Some(plan) = &plan {
        Box::pin(super::ctx::cache_put(state, plan, &resp)).await;
    }
    resp.cache = ctx.cache_note();
    if let Some(note) = resp.cache {
        state
            .metrics
            .cache(&ctx.route_label, note.status.as_str(), None);
    }
    ctx.dropped = resp.dropped;
    record_tokens(state, ctx, resp.usage.as_ref()).await;
    D::finished(state, ctx, &extra, &resp).await;
    let out = completed(state, ctx, &resp, D::reply(ctx, &extra, &resp));
    ctx.line = Some(completion_entry(ctx, &resp, 200, None));
    Ok(out)
}

/// What the route's response cache does for this request (`None`: the route has no cache,
/// or the request bypasses it); says so in `ctx` (`x-switchyard-cache`, the log line).
fn cache_plan(
    state: &AppState,
    ctx: &mut Ctx,
    caller: Option<&Caller>,
    request: &mut switchyard::ChatRequest,
    directives: crate::cache::Directives,
) -> Option<std::sync::Arc<crate::cache::Plan>> {
    let plan = state.cache.plan(
        &ctx.route_label,
        &ctx.route,
        ctx.api,
        caller.map(|c| c.name.as_str()),
        request,
        directives,
    )?;
    let note = |status, reason| CacheNote {
        status,
        age_s: None,
        saved_usd: None,
        reason,
    };
    let (plan, note) = match plan {
        Ok(plan) => (
            Some(std::sync::Arc::new(plan)),
            note(CacheStatus::Miss, None),
        ),
        Err(reason) => (None, note(CacheStatus::Bypass, Some(reason))),
    };
    ctx.cache = Some(Box::new(super::ctx::CacheCtx {
        plan: plan.clone(),
        note,
    }));
    plan
}

/// A fresh stored answer for `plan`, as served (`hit`).
async fn cache_hit(state: &AppState, plan: &crate::cache::Plan) -> Option<ChatResponse> {
    let now = state.gateway.clock().unix_ms();
    let store = state.gateway.state().as_ref();
    let entry = state.cache.fresh(store, plan, now).await?;
    Some(entry.response(CacheStatus::Hit, now, Vec::new()))
}

/// An answer from the cache (`hit`, or `stale` through an outage), plain or replayed as the
/// dialect's stream: nothing called upstream for it, nothing charged, nothing stored again.
async fn from_cache<D: Dialect>(
    state: &AppState,
    ctx: &mut Ctx,
    extra: &D::Extra,
    resp: ChatResponse,
) -> Response {
    ctx.cache = resp
        .cache
        .map(|note| Box::new(super::ctx::CacheCtx { plan: None, note }));
    if let Some(note) = resp.cache {
        state
            .metrics
            .cache(&ctx.route_label, note.status.as_str(), note.saved_usd);
        (state.gateway.ledger()).record_cache_hit(&resp.provider, note.saved_usd);
    }
    D::finished(state, ctx, extra, &resp).await;
    ctx.line = Some(completion_entry(ctx, &resp, 200, None));
    if ctx.stream {
        return super::sse::replay::<D>(state, ctx, extra, &resp);
    }
    completed(state, ctx, &resp, D::reply(ctx, extra, &resp))
}

/// A failed gateway call on a cached route with `stale_if_error`: when every provider
/// failed and an entry within `ttl` + `stale_if_error` is there, it answers (`stale`, the
/// failed attempts in its trail); otherwise the error.
async fn stale_or_error<D: Dialect>(
    state: &AppState,
    ctx: &mut Ctx,
    extra: &D::Extra,
    plan: Option<&crate::cache::Plan>,
    err: GatewayError,
) -> Result<Response, ApiError> {
    if let Some(plan) = plan.filter(|_| crate::cache::is_outage(&err)) {
        let now = state.gateway.clock().unix_ms();
        let store = state.gateway.state().as_ref();
        if let Some(entry) = state.cache.stale(store, plan, now).await {
            let resp = entry.response(CacheStatus::Stale, now, err.attempts().to_vec());
            return Ok(from_cache::<D>(state, ctx, extra, resp).await);
        }
    }
    if let Some(status) = ctx.cache_note().map(|n| n.status) {
        state.metrics.cache(&ctx.route_label, status.as_str(), None);
    }
    Err(ApiError::from(err))
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

/// A plain answer: the dialect's body, headers, metrics (the caller logs).
fn completed(state: &AppState, ctx: &Ctx, resp: &ChatResponse, body: Vec<u8>) -> Response {
    answered_json(
        state,
        ctx,
        body,
        &resp.provider,
        &resp.attempts,
        resp.failed_over,
        resp.cost,
    )
}

/// A plain answer of any API: its JSON body, the `x-switchyard-*` headers, metrics (the
/// caller logs).
pub(crate) fn answered_json(
    state: &AppState,
    ctx: &Ctx,
    body: Vec<u8>,
    provider: &str,
    attempts: &[switchyard::observe::Attempt],
    failed_over: bool,
    cost: Option<switchyard::Money>,
) -> Response {
    let mut out = (StatusCode::OK, [("content-type", "application/json")], body).into_response();
    who_answered(
        out.headers_mut(),
        state,
        ctx,
        provider,
        attempts.len(),
        failed_over,
        Some(cost),
    );
    let elapsed = ctx.elapsed();
    if let [only] = attempts {
        state.metrics.overhead(elapsed.saturating_sub(only.latency));
    }
    state.metrics.request(&ctx.route_label, 200, false, elapsed);
    if failed_over {
        state.metrics.failover(&ctx.route_label);
    }
    out
}
