//! `POST /v1/messages/count_tokens`: only Anthropic can count Claude's tokens, so the
//! request goes to the route's Anthropic providers, in route order (the next one when one
//! fails), with the client's body (the provider's model in place of the route) and its
//! `anthropic-beta`. A route without an Anthropic provider is a 400 saying so. The key,
//! body limit, route access and key limits are the shared flow's; errors are Anthropic's.

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

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
    for spec in anthropic {
        match spec.provider.count_tokens(&body, betas.as_deref()).await {
            Ok(input_tokens) => {
                let mut entry = ctx.entry(200);
                entry.provider = Some(spec.name.clone());
                entry.model = Some(spec.provider.model().to_owned());
                ctx.line = Some(entry);
                let mut resp = (
                    StatusCode::OK,
                    axum::Json(json!({"input_tokens": input_tokens})),
                )
                    .into_response();
                flow::who_answered(resp.headers_mut(), ctx, &spec.name, 1, false, None);
                state
                    .metrics
                    .request(&ctx.route_label, 200, false, ctx.elapsed());
                return Ok(resp);
            }
            Err(e) => last = Some((spec.name.clone(), e)),
        }
    }
    let (name, e) = last.unwrap_or_else(|| {
        (
            String::new(),
            switchyard::ProviderError::new(switchyard::ErrorKind::Server, "no provider"),
        )
    });
    let status = match e.kind {
        switchyard::ErrorKind::BadRequest | switchyard::ErrorKind::ContextLength => {
            StatusCode::BAD_REQUEST
        }
        switchyard::ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::BAD_GATEWAY,
    };
    let kind = if status == StatusCode::BAD_REQUEST {
        "invalid_request_error"
    } else {
        "upstream_error"
    };
    Err(ApiError::new(
        status,
        kind,
        format!("counting tokens at provider {name:?} failed: {e}"),
    ))
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
