//! `/admin/keys`: create (the token shown once), list, read, patch, revoke, rotate.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{
    admit, after, bad, dollars, metadata, name, object, page, page_json, path_id, period, query,
    rate, store_error, text, MAX_ROUTES,
};
use crate::database::keys::{self as db_keys, KeyFilter, MAX_GRACE_SECS};
use crate::database::records::{KeyFields, KeyRecord, TeamRef};
use crate::database::StoreError;
use crate::http::error::ApiError;
use crate::http::state::AppState;

const FIELDS: &[&str] = &[
    "name",
    "team",
    "routes",
    "budget_usd",
    "budget_period",
    "rpm",
    "tpm",
    "expires_at",
    "metadata",
];

/// Set the fields `map` carries on `f` (null clears an optional one).
fn apply(state: &AppState, map: &Map<String, Value>, f: &mut KeyFields) -> Result<(), ApiError> {
    if let Some(n) = name(map)? {
        if state.keys.has_configured(&n) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "invalid_request_error",
                format!("a key named {n:?} is configured in [[keys]] already"),
            )
            .code("conflict"));
        }
        f.name = n;
    }
    if map.contains_key("team") {
        f.team = match &map["team"] {
            Value::Null => None,
            Value::String(s) if !s.is_empty() => Some(TeamRef::Name(s.clone())),
            v => match v.as_i64() {
                Some(id) => Some(TeamRef::Id(id)),
                None => return Err(bad("team", "must be a team's name or id, or null")),
            },
        };
    }
    if let Some(v) = map.get("routes") {
        f.routes = routes(state, v)?;
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
    if map.contains_key("expires_at") {
        f.expires_at = text(map, "expires_at")?;
        if let Some(t) = &f.expires_at {
            rfc3339_shape(t)?;
        }
    }
    if let Some(m) = metadata(map)? {
        f.metadata = m;
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SS` and an offset, roughly: PostgreSQL reads the rest, and would
/// also take words like `tomorrow`, which are not a time to store.
fn rfc3339_shape(t: &str) -> Result<(), ApiError> {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let ok = t.len() <= 40
        && digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b'T' | b't' | b' '))
        && (t.ends_with('Z') || t.ends_with('z') || t[10..].contains(['+', '-']));
    if ok {
        Ok(())
    } else {
        Err(bad(
            "expires_at",
            "must be an RFC 3339 time like \"2027-01-31T00:00:00Z\"",
        ))
    }
}

/// `routes`: `["*"]` or configured routes' names.
fn routes(state: &AppState, v: &Value) -> Result<Vec<String>, ApiError> {
    let Some(list) = v.as_array().filter(|l| l.len() <= MAX_ROUTES) else {
        return Err(bad(
            "routes",
            format!(
                "must be a list of at most {MAX_ROUTES} route names, or [\"*\"] for every route"
            ),
        ));
    };
    let configured = state.gateway.routes();
    let mut out = Vec::with_capacity(list.len());
    for r in list {
        let Some(r) = r.as_str() else {
            return Err(bad("routes", "must be a list of route names"));
        };
        if r != "*" && !configured.iter().any(|c| c.name == r) {
            return Err(bad(
                "routes",
                format!(
                    "{:?} is not a configured route",
                    crate::http::bounds::clip(r, 64)
                ),
            ));
        }
        out.push(r.to_owned());
    }
    Ok(out)
}

/// The database's refusal of `expires_at` names it.
fn keys_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Invalid("time", m) => {
            bad("expires_at", format!("must be an RFC 3339 time: {m}"))
        }
        other => super::store_error(other),
    }
}

/// A key and, once, its token.
fn with_token(key: &KeyRecord, token: &str) -> Value {
    let mut v = json!(key);
    v["key"] = json!(token);
    v
}

/// `POST /admin/keys`: 201 with the key and its token (`key`), which is shown only here.
///
/// # Errors
/// 400 naming a bad field, 401/403, 409 (name in use, no database), 503 (database down).
pub async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let map = object(&body, FIELDS)?;
    if !map.contains_key("name") {
        return Err(bad("name", "is required"));
    }
    let mut f = KeyFields {
        routes: vec!["*".to_owned()],
        budget_period: "total".to_owned(),
        metadata: json!({}),
        ..KeyFields::default()
    };
    apply(&state, &map, &mut f)?;
    let (key, token) = db_keys::create(&db, &actor, &f).await.map_err(keys_error)?;
    Ok((StatusCode::CREATED, Json(with_token(&key, &token))))
}

/// `GET /admin/keys?team=&name=&revoked=true&limit=&after=`: a page in id order.
///
/// # Errors
/// 400 naming a bad parameter, 401/403, 409 (no database), 503 (database down).
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let (_, db) = admit(&state, &headers)?;
    let q = query(uri.query(), &["team", "name", "revoked", "limit", "after"])?;
    let revoked = match q.get("revoked").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(bad("revoked", "must be true or false")),
    };
    let filter = KeyFilter {
        team: q.get("team").cloned(),
        name: q.get("name").cloned(),
        revoked,
        after: Some(after(q.get("after").map(String::as_str))?),
        limit: page(q.get("limit").map(String::as_str))?,
    };
    let (keys, more) = db_keys::list(&db, &filter).await.map_err(store_error)?;
    Ok(Json(page_json(&keys, more, keys.last().map(|k| k.id))))
}

/// `GET /admin/keys/{id}`.
///
/// # Errors
/// 404 unknown id, 401/403, 409 (no database), 503 (database down).
pub async fn get(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<KeyRecord>, ApiError> {
    let (_, db) = admit(&state, &headers)?;
    let id = path_id(&id, "key")?;
    Ok(Json(db_keys::get(&db, id).await.map_err(store_error)?))
}

/// `PATCH /admin/keys/{id}`: change the fields given (null clears an optional one).
///
/// # Errors
/// 400 naming a bad field, 404 unknown id, 409 (revoked, name in use, no database), 503.
pub async fn patch(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<KeyRecord>, ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let id = path_id(&id, "key")?;
    let map = object(&body, FIELDS)?;
    // checked before the transaction, so a bad field never takes a row lock
    apply(&state, &map, &mut KeyFields::default())?;
    let key = db_keys::update(&db, &actor, id, |f| {
        apply(&state, &map, f).map_err(|e| StoreError::Invalid("body", e.message))
    })
    .await
    .map_err(keys_error)?;
    Ok(Json(key))
}

/// `DELETE /admin/keys/{id}`: revoke it (it stops working on every replica within a second).
///
/// # Errors
/// 404 unknown id, 401/403, 409 (no database), 503 (database down).
pub async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<KeyRecord>, ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let id = path_id(&id, "key")?;
    Ok(Json(
        db_keys::revoke(&db, &actor, id)
            .await
            .map_err(store_error)?,
    ))
}

/// `POST /admin/keys/{id}/rotate` `{grace?: "1h"}`: a new token (shown once); the old one
/// works for the grace period (default: not at all), at most 30 days.
///
/// # Errors
/// 400 (bad grace), 404 unknown id, 409 (revoked, no database), 503 (database down).
pub async fn rotate(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let (actor, db) = admit(&state, &headers)?;
    let id = path_id(&id, "key")?;
    let map = object(&body, &["grace"])?;
    let grace = match text(&map, "grace")? {
        None => 0,
        Some(g) => crate::config::duration(&g)
            .ok()
            .map(|d| d.as_secs())
            .filter(|s| *s <= MAX_GRACE_SECS)
            .ok_or_else(|| {
                bad(
                    "grace",
                    "must be a duration like \"10m\" or \"1h\", at most 30 days",
                )
            })?,
    };
    let (key, token) = db_keys::rotate(&db, &actor, id, grace)
        .await
        .map_err(store_error)?;
    Ok(Json(with_token(&key, &token)))
}
