//! `GET /v1/models` and `GET /v1/models/{id}`: the routes, as OpenAI model objects (what
//! clients may send as `model`), each saying which API it serves (`chat` or `embeddings`).
//! With keys configured, a caller sees only the routes it may use; any other id is a 404 in
//! OpenAI's shape. A wildcard route (`openai/*`) is listed as the exact ids of its
//! allow-list (`openai/o4-mini`); its patterns (`gpt-4.1*`) name no one model and are left
//! out, and so is a wildcard route that has only patterns.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};
use switchyard::Route;

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// List the routes.
///
/// # Errors
/// 401 when keys are configured and the caller has none.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let caller = state.keys.authenticate(&headers)?;
    let data: Vec<Value> = state
        .gateway
        .routes()
        .into_iter()
        .filter(|r| caller.as_ref().is_none_or(|c| c.allows(&r.name)))
        .flat_map(models)
        .collect();
    Ok(Json(json!({ "object": "list", "data": data })))
}

/// One route (the SDKs' `models.retrieve`).
///
/// # Errors
/// 401 when keys are configured and the caller has none; 404 for an id that names no
/// route the caller may use.
pub async fn retrieve(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let caller = state.keys.authenticate(&headers)?;
    state
        .gateway
        .route(&id)
        .ok()
        .filter(|r| caller.as_ref().is_none_or(|c| c.allows(&r.name)))
        .map(|r| Json(model_as(r, &id)))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                format!(
                    "The model `{}` does not exist or you do not have access to it.",
                    clip(&id, ECHO_BYTES)
                ),
            )
            .code("model_not_found")
            .param("model")
        })
}

/// A route's model objects: the route itself, or a wildcard route's exact allow-list ids.
fn models(r: &Route) -> Vec<Value> {
    let Some(w) = &r.wildcard else {
        return vec![model_as(r, &r.name)];
    };
    (w.models.iter())
        .filter(|m| !m.ends_with('*'))
        .map(|m| model_as(r, &format!("{}{m}", w.prefix)))
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
