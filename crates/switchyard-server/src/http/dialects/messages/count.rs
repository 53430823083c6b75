//! `POST /v1/messages/count_tokens`: only Anthropic can count Claude's tokens, so the
//! request goes to the route's Anthropic providers, in route order (the next one when one
//! fails, unless it refused the request as the client's mistake), with the client's body (the
//! provider's model in place of the route) and its `anthropic-beta`. A route without an
//! Anthropic provider is a 400 saying so. Fields are judged as `POST /v1/messages` judges
//! them: without an `anthropic-beta`, a top-level field Anthropic's count request does not
//! define ([`COUNT_FIELDS`]) is a 400 naming it, unless the route passes unknown fields
//! through (`passthrough_unknown`); with a beta, they are Anthropic's to judge. Each call
//! goes through the provider's breaker (`Gateway::call_through_breaker`): an open circuit
//! skips the provider, a failure counts as any call's, a call is bounded by the provider's
//! timeout. The key, body limit, route access and key limits are the shared flow's; errors
//! are Anthropic's.

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use switchyard::gateway::Guarded;
use switchyard::{ErrorKind, ProviderError};

use super::Messages;
use crate::http::bounds::{clip, longer_than, ECHO_BYTES, MAX_NAME_CHARS};
use crate::http::dialects::flow::{self, Abandoned, Ctx};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The handler.
pub async fn count_tokens(State(state): State<AppState>, request: Request) -> Response {
    let mut guard = Abandoned {
        ctx: Ctx::new(&state, "count_tokens", request.headers()),
        state: state.clone(),
        armed: true,
    };
    let outcome = handle(&state, &mut guard.ctx, request).await;
    guard.armed = false;
    flow::answer::<Messages>(&state, &mut guard.ctx, outcome).await
}

/// The top-level fields of Anthropic's count request without a beta
/// (`MessageCountTokensParams`).
pub(crate) const COUNT_FIELDS: [&str; 9] = [
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
    "cache_control",
    "speed",
];

async fn handle(state: &AppState, ctx: &mut Ctx, request: Request) -> Result<Response, ApiError> {
    let (caller, body) = flow::admit_body(state, ctx, request).await?;
    let body = parse(&body)?;
    ctx.route = body["model"].as_str().unwrap_or_default().to_owned();
    let route = flow::admit_route(state, ctx, caller.as_ref())?;
    admit_fields(state, ctx, &body)?;
    let specs = state.gateway.providers();
    let anthropic: Vec<_> = (route.providers.iter())
        .filter_map(|n| specs.iter().find(|s| &s.name == n))
        .filter(|s| s.provider.kind() == "anthropic")
        .collect();
    if anthropic.is_empty() {
        return Err(ApiError::bad_request(
            Some("model".to_owned()),
            format!(
                "route {:?} has no Anthropic provider (it has: {}); only Anthropic counts Claude's tokens",
                ctx.route,
                route.providers.join(", ")
            ),
        ));
    }
    let betas = ctx.anthropic_beta.clone();
    let mut tried = 0;
    let mut last = None;
    let mut skipped = Vec::new();
    for spec in anthropic {
        let call = spec.provider.count_tokens(&body, betas.as_deref());
        match state
            .gateway
            .call_through_breaker(route, &spec.name, call)
            .await
        {
            Guarded::Called(Ok(n)) => {
                let before = (tried, tried + skipped.len() > 0);
                return Ok(counted(state, ctx, spec, before, n));
            }
            // the client's mistake: every provider would refuse it the same way
            Guarded::Called(Err(e)) if client_fault(&e) => {
                return Err(count_failed(&spec.name, &e))
            }
            Guarded::Called(Err(e)) => {
                tried += 1;
                last = Some((spec.name.clone(), e));
            }
            Guarded::Skipped(reason) => skipped.push(format!("{} ({})", spec.name, reason.label())),
        }
    }
    Err(match last {
        Some((name, e)) => count_failed(&name, &e),
        None => ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            format!("no provider could count: skipped {}", skipped.join(", ")),
        ),
    })
}

/// The fields `POST /v1/messages` would refuse are refused here too: without an
/// `anthropic-beta`, a top-level field outside [`COUNT_FIELDS`] is Anthropic's 400 naming
/// it, unless the route passes unknown fields through. With a beta the body is
/// Anthropic's to judge (only Anthropic providers count).
fn admit_fields(state: &AppState, ctx: &Ctx, body: &Value) -> Result<(), ApiError> {
    let beta = (ctx.anthropic_beta.as_deref()).is_some_and(|b| !b.trim().is_empty());
    if beta || crate::http::dialects::passthrough::passes_unknown(state, &ctx.route) {
        return Ok(());
    }
    let unknown: Vec<&str> = (body.as_object().into_iter().flatten())
        .map(|(k, _)| k.as_str())
        .filter(|k| !COUNT_FIELDS.contains(k))
        .collect();
    let Some(first) = unknown.first() else {
        return Ok(());
    };
    let list = clip(&unknown.join(", "), ECHO_BYTES).into_owned();
    Err(super::wire::extra_inputs(&clip(first, ECHO_BYTES), &list))
}

/// The answer of the provider that counted, after `tried` calls that failed (and whether
/// any provider was tried or skipped before it).
fn counted(
    state: &AppState,
    ctx: &mut Ctx,
    spec: &switchyard::ProviderSpec,
    (tried, failed_over): (usize, bool),
    input_tokens: u64,
) -> Response {
    let mut entry = ctx.entry(200);
    entry.provider = Some(spec.name.clone());
    entry.model = Some(spec.provider.model().to_owned());
    entry.failed_over = failed_over;
    ctx.line = Some(entry);
    let body = axum::Json(json!({"input_tokens": input_tokens}));
    let mut resp = (StatusCode::OK, body).into_response();
    flow::who_answered(
        resp.headers_mut(),
        state,
        ctx,
        &spec.name,
        tried + 1,
        failed_over,
        None,
    );
    state
        .metrics
        .request(&ctx.route_label, 200, false, ctx.elapsed());
    resp
}

fn client_fault(e: &ProviderError) -> bool {
    matches!(e.kind, ErrorKind::BadRequest | ErrorKind::ContextLength)
}

/// A count that failed at provider `name` (its error already scrubbed of the key).
fn count_failed(name: &str, e: &ProviderError) -> ApiError {
    let message = format!("counting tokens at provider {name:?} failed: {e}");
    if client_fault(e) {
        return ApiError::bad_request(None, message);
    }
    let status = if e.kind == ErrorKind::RateLimited {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::BAD_GATEWAY
    };
    ApiError::new(status, "upstream_error", message)
}

/// The body as a JSON object with a sane `model`; the rest is Anthropic's to judge.
fn parse(body: &Bytes) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            None,
            format!(
                "request body is not valid JSON: {}",
                clip(&e.to_string(), 256)
            ),
        )
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            None,
            "the body must be a JSON object",
        ));
    }
    match value.get("model") {
        Some(Value::String(m)) if longer_than(m, MAX_NAME_CHARS) => Err(ApiError::bad_request(
            Some("model".to_owned()),
            format!("model: longer than {MAX_NAME_CHARS} characters"),
        )),
        Some(Value::String(_)) => Ok(value),
        Some(other) => Err(ApiError::bad_request(
            Some("model".to_owned()),
            format!(
                "model: expected a string, got {}",
                clip(&other.to_string(), ECHO_BYTES)
            ),
        )),
        None => Err(ApiError::bad_request(
            Some("model".to_owned()),
            "model: Field required",
        )),
    }
}
