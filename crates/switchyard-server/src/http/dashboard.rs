//! The dashboard: its page and files, and the admin JSON the page polls.
//!
//! Owns `GET /` and `GET /dashboard/{file}` (static, embedded, open: they hold no data, and
//! the page must load to ask for an admin key) and the admin endpoints behind an admin key
//! when keys are configured (401 without a valid key, 403 for a non-admin one):
//! - `GET /admin/overview`: fleet state, routes with their providers in order and budgets,
//!   each provider's circuit (and why it tripped), its last active health check, counts,
//!   errors by kind, latency and
//!   time-to-first-token percentiles with chart points, spend and unpriced calls, and each
//!   client key's spend against its budget;
//! - `GET /admin/transitions`: the circuit transitions of the last hour;
//! - `GET /admin/requests?limit=N`: the most recent requests with their attempt trails,
//!   newest first; `GET /admin/requests/{id}`: one of them.
//!
//! The page's Keys and Spend views read `/admin/keys`, `/admin/teams` and `/admin/spend`
//! (`crate::http::manage`), which need `[database]`.
//!
//! Nothing here reveals a secret: no key hashes or tokens, no env var names or values;
//! attempt messages were scrubbed by the adapters. Does not own the history itself
//! ([`Insight`](crate::telemetry::insight::Insight)) nor the gateway's books.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderName, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use switchyard::observe::LedgerRow;
use switchyard::ProviderHealth;

use crate::access::limits::{key_scope, Period};
use crate::http::admin::{budget_json, check_json};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use crate::telemetry::dashboard::{self, Asset};
use crate::telemetry::insight::{
    ProviderInsight, RECENT_REQUESTS, SAMPLE_WINDOW_MS, TRANSITION_WINDOW_MS,
};

/// Requests listed when the query names no `limit`.
const DEFAULT_REQUESTS: usize = 50;

/// Only this origin's files and API; no inline script; nothing embeds the page.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `GET /`: the dashboard page.
pub async fn page() -> Response {
    serve_asset(dashboard::INDEX)
}

/// `GET /dashboard/{file}`: the page's stylesheet, script and icon.
pub async fn asset(Path(name): Path<String>, uri: Uri) -> Response {
    match dashboard::asset(&name) {
        Some(a) => serve_asset(a),
        None => ApiError::no_such_path(uri.path()).into_response(),
    }
}

fn serve_asset(a: Asset) -> Response {
    let headers = [
        (header::CONTENT_TYPE, a.content_type),
        (header::CACHE_CONTROL, "no-cache"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (HeaderName::from_static("x-frame-options"), "DENY"),
    ];
    (StatusCode::OK, headers, a.body).into_response()
}

/// `GET /admin/overview`: everything the dashboard's cards show.
///
/// # Errors
/// 401 / 403 when keys are configured and the request carries no admin key.
pub async fn overview(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.keys.authorize_admin(&headers)?;
    let health = state.gateway.health().await;
    let ledger = state.gateway.ledger().summary();
    let seen = state.insight.providers();
    let checks = state.metrics.last_checks();
    let providers: Vec<Value> = health
        .iter()
        .map(|h| {
            let mut card = provider_json(h, ledger.get(&h.name), seen.get(&h.name));
            card["health_check"] = check_json(checks.get(&h.name));
            card["health_spend_usd"] = json!(ledger.get(&h.name).map(|r| r.health_spend.to_usd()));
            card
        })
        .collect();
    let spend: switchyard::Money = ledger.values().map(|r| r.cost).sum();
    let unpriced: u64 = ledger.values().map(|r| r.unpriced_calls).sum();
    Ok(Json(json!({
        "now_ms": state.gateway.clock().unix_ms(),
        "since_ms": state.insight.since_ms(),
        "fleet": state.gateway.state().status(),
        "routes": routes_json(&state).await,
        "providers": providers,
        "keys": keys_json(&state).await,
        "totals": {
            "requests": ledger.values().map(|r| r.calls).sum::<u64>(),
            "spend_usd": spend.to_usd(),
            "unpriced_calls": unpriced,
        },
        "request_log_dropped": state.log.dropped(),
        "windows": {
            "latency_ms": SAMPLE_WINDOW_MS,
            "transitions_ms": TRANSITION_WINDOW_MS,
            "requests_kept": RECENT_REQUESTS,
        },
    })))
}

/// One provider's card: circuit, counts, errors, latency, spend.
fn provider_json(
    h: &ProviderHealth,
    books: Option<&LedgerRow>,
    seen: Option<&ProviderInsight>,
) -> Value {
    let row = books.cloned().unwrap_or_default();
    let seen = seen.cloned().unwrap_or_default();
    let errors: BTreeMap<&str, u64> = row.failures.iter().map(|(k, n)| (k.label(), *n)).collect();
    json!({
        "name": h.name,
        "kind": h.kind,
        "model": h.model,
        "priced": h.priced,
        "circuit": {
            "state": h.state,
            "open_until_ms": h.open_until_ms,
            "cooling_until_ms": h.cooling_until_ms,
            "opened_by": h.opened_by,
            "last_error": h.last_error,
            "consecutive_failures": h.consecutive_failures,
            "probe_in_flight": h.probe_in_flight,
        },
        "requests": row.calls,
        "attempts": seen.counts.attempts,
        "successes": seen.counts.successes,
        "failovers_from": seen.counts.failovers_from,
        "failovers_to": seen.counts.failovers_to,
        "errors": errors,
        "errors_total": row.failures.values().sum::<u64>(),
        "skipped": seen.counts.skipped,
        "latency": seen.latency,
        "ttft": seen.ttft,
        "latency_ewma_ms": h.latency_ms,
        "spend_usd": row.cost.to_usd(),
        "unpriced_calls": row.unpriced_calls,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
    })
}

/// Routes in config order with their providers in order and their budgets.
async fn routes_json(state: &AppState) -> Vec<Value> {
    let mut out = Vec::new();
    for r in state.gateway.routes() {
        let budget = state.gateway.budget(&r.name).await;
        out.push(json!({
            "name": r.name,
            "providers": r.providers,
            "order": r.order,
            "deadline_ms": u64::try_from(r.deadline.as_millis()).unwrap_or(u64::MAX),
            "budget": budget.as_ref().map(budget_json),
        }));
    }
    out
}

/// Client keys by name (never their hashes): admin flag, limits, spend against budget.
async fn keys_json(state: &AppState) -> Vec<Value> {
    let now = state.gateway.clock().unix_ms();
    let seen = state.insight.keys();
    let mut out = Vec::new();
    for (name, limits, admin) in state.keys.list() {
        let budget = match limits.budget {
            Some((limit, period)) => {
                let scope = key_scope(name, period, now);
                let mut b = budget_json(&state.gateway.state().budget(&scope, limit).await);
                b["period"] = json!(period_label(period));
                Some(b)
            }
            None => None,
        };
        let traffic = seen.get(name).copied().unwrap_or_default();
        out.push(json!({
            "name": name,
            "admin": admin,
            "rpm": limits.rpm,
            "tpm": limits.tpm,
            "budget": budget,
            "requests": traffic.requests,
            "spent_usd": traffic.spent.to_usd(),
            "unpriced_calls": traffic.unpriced,
        }));
    }
    out
}

fn period_label(p: Period) -> &'static str {
    match p {
        Period::Total => "total",
        Period::Day => "day",
        Period::Month => "month",
    }
}

/// `GET /admin/transitions`: circuit transitions of the last hour (oldest first) and
/// each provider's state now (with the end of its cooldown: an open circuit turns
/// half-open by the clock, and that step is recorded only when a probe is admitted), to
/// draw the timeline to the present.
///
/// # Errors
/// 401 / 403 when keys are configured and the request carries no admin key.
pub async fn transitions(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.keys.authorize_admin(&headers)?;
    let now: Vec<Value> = state
        .gateway
        .health()
        .await
        .iter()
        .map(|h| json!({ "name": h.name, "state": h.state, "open_until_ms": h.open_until_ms }))
        .collect();
    Ok(Json(json!({
        "now_ms": state.gateway.clock().unix_ms(),
        "since_ms": state.insight.since_ms(),
        "window_ms": TRANSITION_WINDOW_MS,
        "providers": now,
        "transitions": state.insight.transitions(),
    })))
}

/// `GET /admin/requests?limit=N`: the most recent requests (default 50, at most 200),
/// newest first, each with its attempt trail.
///
/// # Errors
/// 401 / 403 when keys are configured and the request carries no admin key; 400 for a
/// `limit` that is not a number.
pub async fn requests(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    state.keys.authorize_admin(&headers)?;
    let limit = query_limit(uri.query())?;
    Ok(Json(json!({
        "kept": RECENT_REQUESTS,
        "requests": state.insight.recent(limit),
    })))
}

/// `limit` from a query string, clamped to 1..=[`RECENT_REQUESTS`].
fn query_limit(query: Option<&str>) -> Result<usize, ApiError> {
    let raw = query
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("limit="));
    let Some(raw) = raw else {
        return Ok(DEFAULT_REQUESTS);
    };
    let n: usize = raw
        .parse()
        .map_err(|_| ApiError::bad_request(Some("limit".into()), "limit must be a whole number"))?;
    Ok(n.clamp(1, RECENT_REQUESTS))
}

/// `GET /admin/requests/{id}`: one recent request with every attempt.
///
/// # Errors
/// 401 / 403 as above; 404 when the request is not (or no longer) kept.
pub async fn request(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    state.keys.authorize_admin(&headers)?;
    match state.insight.find(&id) {
        Some(entry) => Ok(Json(json!({ "request": entry }))),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("no recent request with that id (the last {RECENT_REQUESTS} are kept)"),
        )
        .code("request_not_found")),
    }
}
