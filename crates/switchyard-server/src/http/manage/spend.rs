//! `GET /admin/spend?group_by=key|team|route|provider|model|day&from=&to=&key=&team=&limit=`:
//! spend per group over UTC days, read from the daily aggregates (never the raw rows).

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde_json::{json, Value};

use super::{admit, bad, query, store_error};
use crate::access::limits::civil_date;
use crate::database::spend::{self, GroupBy, SpendQuery};
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// The most groups one report returns.
const MAX_GROUPS: usize = 1000;
/// The days a report covers when `from` is not given (`to` and the 30 before it).
const DEFAULT_DAYS: u64 = 30;

/// `YYYY-MM-DD` of a Unix-ms instant.
fn day(ms: u64) -> String {
    let (y, m, d) = civil_date(ms);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A `YYYY-MM-DD` shape (the database checks the calendar).
fn day_param(field: &str, v: &str) -> Result<String, ApiError> {
    let ok = v.len() == 10
        && v.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if ok {
        Ok(v.to_owned())
    } else {
        Err(bad(field, "must be a UTC day like 2026-01-31"))
    }
}

/// `GET /admin/spend`.
///
/// # Errors
/// 400 naming a bad parameter, 401/403, 409 (no database), 503 (database down).
pub async fn report(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let (_, db) = admit(&state, &headers)?;
    let q = query(
        uri.query(),
        &["group_by", "from", "to", "key", "team", "limit"],
    )?;
    let group_by = match q.get("group_by") {
        None => GroupBy::Key,
        Some(g) => GroupBy::parse(g)
            .ok_or_else(|| bad("group_by", format!("must be one of {}", GroupBy::NAMES)))?,
    };
    let now = state.gateway.clock().unix_ms();
    let to = match q.get("to") {
        Some(v) => day_param("to", v)?,
        None => day(now),
    };
    let from = match q.get("from") {
        Some(v) => day_param("from", v)?,
        None => day(now.saturating_sub(DEFAULT_DAYS * 86_400_000)),
    };
    let limit = match q.get("limit") {
        Some(v) => crate::http::paging::limit(v, MAX_GROUPS)?,
        None => MAX_GROUPS,
    };
    let question = SpendQuery {
        group_by,
        from,
        to,
        key: q.get("key").cloned(),
        team: q.get("team").cloned(),
        limit: i64::try_from(limit).unwrap_or(1000),
    };
    let groups = spend::report(&db, &question).await.map_err(store_error)?;
    Ok(Json(json!({
        "group_by": q.get("group_by").map_or("key", String::as_str),
        "from": question.from,
        "to": question.to,
        "groups": groups,
    })))
}
