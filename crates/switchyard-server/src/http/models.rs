//! `GET /v1/models`: the routes, as OpenAI model objects (what clients may send as
//! `model`). With keys configured, a caller sees only the routes it may use.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

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
        .map(|r| {
            json!({
                "id": r.name,
                "object": "model",
                "created": 0,
                "owned_by": "switchyard",
                "providers": r.providers,
            })
        })
        .collect();
    Ok(Json(json!({ "object": "list", "data": data })))
}
