//! `/admin/teams`: create, list, read, patch, delete. A team's budget and rate limits apply
//! across its keys (`crate::access::limits::TeamLimits`).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{
    admit, after, bad, dollars, metadata, name, object, page, page_json, path_id, period, query,
    rate, store_error,
};
use crate::database::records::{TeamFields, TeamRecord};
use crate::database::teams as db_teams;
use crate::database::StoreError;
use crate::http::error::ApiError;
use crate::http::state::AppState;

const FIELDS: &[&str] = &[
    "name",
    "budget_usd",
    "budget_period",
    "rpm",
    "tpm",
    "metadata",
];

/// Set the fields `map` carries on `f` (null clears an optional one).
fn apply(map: &Map<String, Value>, f: &mut TeamFields) -> Result<(), ApiError> {
    if let Some(n) = name(map)? {
        f.name = n;
    }
    if map.contains_key("budget_usd") {
        f.budget_usd = dollars(map, "budget_usd")?;
    }
    if let Some(p) = period(map, "budget_period")? {
        f.budget_period = p;
    }
    if map.contains_key("rpm") {
        f.rpm = rate(map, "rpm")?;
    }
    if map.contains_key("tpm") {
        f.tpm = rate(map, "tpm")?;
    }
    if let Some(m) = metadata(map)? {
        f.metadata = m;
    }
    Ok(())
}

/// `POST /admin/teams`: 201 with the team.
///
/// # Errors
/// 400 naming a bad field, 401/403, 409 (name in use, no database), 503 (database down).
pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<TeamRecord>), ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let map = object(&body, FIELDS)?;
    if !map.contains_key("name") {
        return Err(bad("name", "is required"));
    }
    let mut f = TeamFields {
        budget_period: "total".to_owned(),
        metadata: json!({}),
        ..TeamFields::default()
    };
    apply(&map, &mut f)?;
    let team = db_teams::create(&db, &actor, &f)
        .await
        .map_err(store_error)?;
    Ok((StatusCode::CREATED, Json(team)))
}

/// `GET /admin/teams?name=&limit=&after=`: a page in id order.
///
/// # Errors
/// 400 naming a bad parameter, 401/403, 409 (no database), 503 (database down).
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let (_, db) = admit(&state, &headers)?;
    let q = query(uri.query(), &["name", "limit", "after"])?;
    let after = after(q.get("after").map(String::as_str))?;
    let limit = page(q.get("limit").map(String::as_str))?;
    let (teams, more) = db_teams::list(&db, q.get("name").map(String::as_str), after, limit)
        .await
        .map_err(store_error)?;
    Ok(Json(page_json(&teams, more, teams.last().map(|t| t.id))))
}

/// `GET /admin/teams/{id}`.
///
/// # Errors
/// 404 unknown id, 401/403, 409 (no database), 503 (database down).
pub async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<TeamRecord>, ApiError> {
    let (_, db) = admit(&state, &headers)?;
    let id = path_id(&id, "team")?;
    Ok(Json(db_teams::get(&db, id).await.map_err(store_error)?))
}

/// `PATCH /admin/teams/{id}`: change the fields given (its keys follow within a second).
///
/// # Errors
/// 400 naming a bad field, 404 unknown id, 409 (name in use, no database), 503.
pub async fn patch(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<TeamRecord>, ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let id = path_id(&id, "team")?;
    let map = object(&body, FIELDS)?;
    apply(&map, &mut TeamFields::default())?;
    let team = db_teams::update(&db, &actor, id, |f| {
        apply(&map, f).map_err(|e| StoreError::Invalid("body", e.message))
    })
    .await
    .map_err(store_error)?;
    Ok(Json(team))
}

/// `DELETE /admin/teams/{id}`: refused (409) while it has keys that are not revoked.
///
/// # Errors
/// 404 unknown id, 409 (live keys, no database), 401/403, 503 (database down).
pub async fn delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<TeamRecord>, ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let id = path_id(&id, "team")?;
    Ok(Json(
        db_teams::delete(&db, &actor, id)
            .await
            .map_err(store_error)?,
    ))
}
