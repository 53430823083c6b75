//! The admin API over the database: `/admin/keys`, `/admin/teams`, `/admin/spend`
//! (docs/operations.md "Database").
//!
//! Owns the handlers, reading their JSON bodies field by field (a bad or unknown field is a
//! 400 naming it) and turning the database's answers into HTTP ones: unknown ids 404, name
//! clashes and revoked keys 409, the database unreachable 503, no `[database]` at all 409.
//! Every endpoint needs an admin key (the same rule as `/admin/health`); the admin key's
//! name is the audit row's actor. Does not own the SQL, the audit rows or the NOTIFYs
//! (`crate::database`).

pub mod keys;
pub mod spend;
pub mod teams;

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Map, Value};

use crate::database::{Database, StoreError};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The largest page a list returns.
pub const MAX_PAGE: usize = 500;
/// The default page size.
pub const DEFAULT_PAGE: i64 = 100;
/// The largest `metadata` object, as JSON.
const MAX_METADATA_BYTES: usize = 16 * 1024;
/// The most routes one key may name.
const MAX_ROUTES: usize = 256;

/// The admin key's name (the actor audited) and the database, or the refusal.
fn admit(state: &AppState, headers: &HeaderMap) -> Result<(String, Arc<Database>), ApiError> {
    let actor = state.keys.admin_name(headers)?;
    let db = state.database.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "this endpoint needs a database: configure [database] url_env (docs/operations.md, \"Database\")",
        )
        .code("database_not_configured")
    })?;
    Ok((actor.unwrap_or_else(|| "(keyless)".to_owned()), db))
}

/// A database answer as HTTP.
fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Unavailable(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "api_error",
            "the database is unreachable: keys are served from memory, but changes must wait until it answers; try again",
        )
        .code("database_unavailable"),
        StoreError::NotFound(..) => {
            ApiError::new(StatusCode::NOT_FOUND, "invalid_request_error", e.to_string())
                .code("not_found")
        }
        StoreError::Conflict(m) => {
            ApiError::new(StatusCode::CONFLICT, "invalid_request_error", m).code("conflict")
        }
        StoreError::Invalid(field, m) => ApiError::bad_request(Some(field.to_owned()), m),
        StoreError::Other(m) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            format!("database error: {m}"),
        ),
    }
}

/// A path's id: a positive integer, or 404 (no such thing can exist).
fn path_id(text: &str, what: &'static str) -> Result<i64, ApiError> {
    text.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("no {what} with id {:?}", clip(text, ECHO_BYTES)),
        )
        .code("not_found")
    })
}

/// The body as a JSON object whose fields are all in `allowed` (empty body: `{}`).
fn object(body: &Bytes, allowed: &[&str]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(None, format!("the body is not JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::bad_request(
            None,
            "the body must be a JSON object",
        ));
    };
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ApiError::bad_request(
            Some(clip(unknown, ECHO_BYTES).into_owned()),
            format!("unknown field; expected one of: {}", allowed.join(", ")),
        ));
    }
    Ok(map)
}

fn bad(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(field.to_owned()), message)
}

/// A required or optional string field (`None`: absent or null).
fn text(map: &Map<String, Value>, field: &str) -> Result<Option<String>, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(field, "must be a string")),
    }
}

/// A name field: present, and the key-name rule (`crate::access::keys::check_name`).
fn name(map: &Map<String, Value>) -> Result<Option<String>, ApiError> {
    let Some(n) = text(map, "name")? else {
        return match map.get("name") {
            Some(Value::Null) => Err(bad("name", "must be a string")),
            _ => Ok(None),
        };
    };
    crate::access::keys::check_name(&n).map_err(|e| bad("name", e))?;
    Ok(Some(n))
}

/// A dollar amount: a finite number ≥ 0, or null.
fn dollars(map: &Map<String, Value>, field: &str) -> Result<Option<f64>, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0 && *x < 1e12)
            .map(Some)
            .ok_or_else(|| bad(field, "must be a number of dollars, at least 0")),
    }
}

/// `total`, `day` or `month`.
fn period(map: &Map<String, Value>, field: &str) -> Result<Option<String>, ApiError> {
    match text(map, field)?.as_deref() {
        None => Ok(None),
        Some("total") => Ok(Some("total".to_owned())),
        Some("day" | "daily") => Ok(Some("day".to_owned())),
        Some("month" | "monthly") => Ok(Some("month".to_owned())),
        Some(_) => Err(bad(field, "must be \"day\", \"month\" or \"total\"")),
    }
}

/// A positive whole number (a rate), or null.
fn rate(map: &Map<String, Value>, field: &str) -> Result<Option<i64>, ApiError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| bad(field, "must be a whole number greater than 0")),
    }
}

/// A JSON object of at most [`MAX_METADATA_BYTES`] (null: `{}`).
fn metadata(map: &Map<String, Value>) -> Result<Option<Value>, ApiError> {
    match map.get("metadata") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(Value::Object(Map::new()))),
        Some(v @ Value::Object(_)) => {
            if v.to_string().len() > MAX_METADATA_BYTES {
                return Err(bad(
                    "metadata",
                    format!("must be at most {MAX_METADATA_BYTES} bytes of JSON"),
                ));
            }
            Ok(Some(v.clone()))
        }
        Some(_) => Err(bad("metadata", "must be a JSON object")),
    }
}

/// The page size `limit` of a list's query (default [`DEFAULT_PAGE`]).
fn page(value: Option<&str>) -> Result<i64, ApiError> {
    match value {
        None => Ok(DEFAULT_PAGE),
        Some(v) => crate::http::paging::limit(v, MAX_PAGE)
            .map(|n| i64::try_from(n).unwrap_or(DEFAULT_PAGE)),
    }
}

/// `after`: the last id of the previous page.
fn after(value: Option<&str>) -> Result<i64, ApiError> {
    value.map_or(Ok(0), |v| {
        v.parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| bad("after", "must be the last id of the previous page"))
    })
}

/// A list's page as JSON: `data`, `has_more`, and `next_after` to ask for the next one.
fn page_json<T: serde::Serialize>(data: &[T], more: bool, last_id: Option<i64>) -> Value {
    serde_json::json!({
        "object": "list",
        "data": data,
        "has_more": more,
        "next_after": if more { last_id } else { None },
    })
}

/// The query string's parameters, each one of `allowed` (else a 400 naming it).
fn query(
    raw: Option<&str>,
    allowed: &[&str],
) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    let mut out = std::collections::BTreeMap::new();
    for pair in crate::http::paging::params(raw.unwrap_or("")) {
        let (k, v) = pair?;
        if !allowed.contains(&k.as_ref()) {
            return Err(ApiError::bad_request(
                Some(clip(&k, ECHO_BYTES).into_owned()),
                format!(
                    "unknown query parameter; expected one of: {}",
                    allowed.join(", ")
                ),
            ));
        }
        out.insert(k.into_owned(), v.into_owned());
    }
    Ok(out)
}
