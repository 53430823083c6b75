//! `GET /v1/models` and `GET /v1/models/{id}`: the routes, as the models clients may send
//! as `model`. A request carrying `anthropic-version` (the anthropic SDKs' `models.list` /
//! `models.retrieve`) gets Anthropic's shapes, paginated and erring as Anthropic does
//! ([`anthropic`]); any other gets OpenAI's model objects, each saying which API it serves
//! (`chat` or `embeddings`).
//!
//! With keys configured, a caller sees only the routes it may use; any other id is a 404.
//! A wildcard route (`openai/*`) is listed as the exact ids of its allow-list
//! (`openai/o4-mini`); its patterns (`gpt-4.1*`) name no one model and are left out, and
//! so is a wildcard route that has only patterns.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use switchyard::Route;

use crate::access::keys::Caller;
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;

mod anthropic;
#[cfg(test)]
mod tests;

/// List the routes.
///
/// Errors: 401 when keys are configured and the caller has none; for Anthropic's
/// shape, 400 for a bad page parameter.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if anthropic::asked(&headers) {
        return anthropic::list(&state, &headers, query.as_deref());
    }
    let caller = match state.keys.authenticate(&headers) {
        Ok(c) => c,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let data: Vec<Value> = visible(&state, caller.as_ref())
        .into_iter()
        .flat_map(|r| ids(r).into_iter().map(move |id| model_as(r, &id)))
        .collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

/// One route (the SDKs' `models.retrieve`).
///
/// Errors: 401 when keys are configured and the caller has none; 404 for an id that
/// names no route the caller may use.
pub async fn retrieve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if anthropic::asked(&headers) {
        return anthropic::retrieve(&state, &headers, &id);
    }
    let caller = match state.keys.authenticate(&headers) {
        Ok(c) => c,
        Err(e) => return ApiError::from(e).into_response(),
    };
    match usable(&state, caller.as_ref(), &id) {
        Some(r) => Json(model_as(r, &id)).into_response(),
        None => not_found(&id).into_response(),
    }
}

/// The routes `caller` may use, in config order.
fn visible<'a>(state: &'a AppState, caller: Option<&Caller>) -> Vec<&'a Route> {
    (state.gateway.routes().into_iter())
        .filter(|r| caller.is_none_or(|c| c.allows(&r.name)))
        .collect()
}

/// The route `id` names, when `caller` may use it.
fn usable<'a>(state: &'a AppState, caller: Option<&Caller>, id: &str) -> Option<&'a Route> {
    (state.gateway.route(id).ok()).filter(|r| caller.is_none_or(|c| c.allows(&r.name)))
}

/// 404 for a model id that names no route the caller may use.
fn not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "The model `{}` does not exist or you do not have access to it.",
            clip(id, ECHO_BYTES)
        ),
    )
    .code("model_not_found")
    .param("model")
}

/// A route's model ids: its name, or a wildcard route's exact allow-list ids.
fn ids(r: &Route) -> Vec<String> {
    let Some(w) = &r.wildcard else {
        return vec![r.name.clone()];
    };
    (w.models.iter())
        .filter(|m| !m.ends_with('*'))
        .map(|m| format!("{}{m}", w.prefix))
        .collect()
}

/// A route as an OpenAI model object called `id`, with its providers and the API it
/// serves (and, for a wildcard route, the route's name).
fn model_as(r: &Route, id: &str) -> Value {
    let mut object = json!({
        "id": id,
        "object": "model",
        "created": 0,
        "owned_by": "switchyard",
        "api": r.api.label(),
        "providers": r.providers,
    });
    if r.wildcard.is_some() {
        object["route"] = json!(r.name);
    }
    object
}
