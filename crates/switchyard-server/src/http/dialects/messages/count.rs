//! `POST /v1/messages/count_tokens`: only Anthropic can count Claude's tokens, so the
//! request goes to the route's Anthropic providers, in route order (the next one when one
//! fails, unless it refused the request as the client's mistake), with the client's body (the provider's model in place of the route) and its
//! `anthropic-beta`. A route without an Anthropic provider is a 400 saying so. The key,
//! body limit, route access and key limits are the shared flow's; errors are Anthropic's.

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
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

async fn handle(state: &AppState, ctx: &mut Ctx, request: Request) -> Result<Response, ApiError> {
    let betas = request
        .headers()
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (caller, body) = flow::admit_body(state, ctx, request).await?;
    let body = parse(&body)?;
    ctx.route = body["model"].as_str().unwrap_or_default().to_owned();
    let route = flow::admit_route(state, ctx, caller.as_ref())?;
    let names = route.providers.clone();
    flow::admit_limits(state, ctx, caller.as_ref()).await?;
    let specs = state.gateway.providers();
    let anthropic: Vec<_> = names
        .iter()
        .filter_map(|n| specs.iter().find(|s| &s.name == n))
        .filter(|s| s.provider.kind() == "anthropic")
        .collect();
    if anthropic.is_empty() {
        return Err(ApiError::bad_request(
            Some("model".to_owned()),
            format!(
                "route {:?} has no Anthropic provider (it has: {}); only Anthropic counts Claude's tokens",
                ctx.route,
                names.join(", ")
            ),
        ));
    }
    let mut last = None;
    for (tried, spec) in anthropic.into_iter().enumerate() {
        match spec.provider.count_tokens(&body, betas.as_deref()).await {
            Ok(input_tokens) => return Ok(counted(state, ctx, spec, tried, input_tokens)),
            // the client's mistake: every provider would refuse it the same way
            Err(e) if client_fault(&e) => return Err(count_failed(&spec.name, &e)),
            Err(e) => last = Some((spec.name.clone(), e)),
        }
    }
    Err(last.map_or_else(
        || {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "upstream_error",
                "no provider counted",
            )
        },
        |(name, e)| count_failed(&name, &e),
    ))
}

/// The answer of the provider that counted, after `tried` that failed.
fn counted(
    state: &AppState,
    ctx: &mut Ctx,
    spec: &switchyard::ProviderSpec,
    tried: usize,
    input_tokens: u64,
) -> Response {
    let mut entry = ctx.entry(200);
    entry.provider = Some(spec.name.clone());
    entry.model = Some(spec.provider.model().to_owned());
    entry.failed_over = tried > 0;
    ctx.line = Some(entry);
    let body = axum::Json(json!({"input_tokens": input_tokens}));
    let mut resp = (StatusCode::OK, body).into_response();
    flow::who_answered(
        resp.headers_mut(),
        state,
        ctx,
        &spec.name,
        tried + 1,
        tried > 0,
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
