//! The models in Anthropic's shapes, for a request that carries `anthropic-version`: a
//! list `{"data", "has_more", "first_id", "last_id"}` of `{"type": "model", "id",
//! "display_name", "created_at"}` objects paged by `limit` (1-1000, default 20),
//! `after_id` and `before_id`, and errors as Anthropic's (`not_found_error` for an
//! unknown id). Only chat routes are listed: the Messages API cannot call an embeddings
//! route. Routes have no release date, so `created_at` is the epoch (what Anthropic's
//! documentation says a model of unknown date gets), and all are `active`.

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use switchyard::Api;

use super::{ids, not_found, usable, visible};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::dialects::messages::error_response;
use crate::http::error::ApiError;
use crate::http::paging;
use crate::http::state::AppState;

/// Anthropic's default page size.
const DEFAULT_LIMIT: usize = 20;
/// Anthropic's largest page.
const MAX_LIMIT: usize = 1000;
/// What a model without a release date says it was created at.
const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The request asks in Anthropic's terms.
pub(super) fn asked(headers: &HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
}

/// `GET /v1/models`: a page of the caller's chat routes.
pub(super) fn list(state: &AppState, headers: &HeaderMap, query: Option<&str>) -> Response {
    let listed = (|| {
        let caller = state.keys.authenticate(headers)?;
        let page = Page::parse(query.unwrap_or_default())?;
        let all: Vec<String> = if page.active {
            (visible(state, caller.as_ref()).into_iter())
                .filter(|r| r.api == Api::Chat)
                .flat_map(ids)
                .collect()
        } else {
            Vec::new()
        };
        let (data, has_more) = page.of(&all)?;
        Ok::<_, ApiError>(json!({
            "data": data.iter().map(|id| model(id)).collect::<Vec<_>>(),
            "has_more": has_more,
            "first_id": data.first(),
            "last_id": data.last(),
        }))
    })();
    match listed {
        Ok(body) => Json(body).into_response(),
        Err(e) => error_response(&e),
    }
}

/// `GET /v1/models/{id}`: one chat route as a model object.
pub(super) fn retrieve(state: &AppState, headers: &HeaderMap, id: &str) -> Response {
    let found = state
        .keys
        .authenticate(headers)
        .map_err(ApiError::from)
        .and_then(|caller| {
            usable(state, caller.as_ref(), id)
                .filter(|r| r.api == Api::Chat)
                .map(|_| model(id))
                .ok_or_else(|| not_found(id))
        });
    match found {
        Ok(body) => Json(body).into_response(),
        Err(e) => error_response(&e),
    }
}

/// A model object.
fn model(id: &str) -> Value {
    json!({
        "type": "model",
        "id": id,
        "display_name": id,
        "created_at": EPOCH,
        "lifecycle": "active",
    })
}

/// The page a list request asks for.
#[derive(Debug, PartialEq)]
struct Page {
    limit: usize,
    after: Option<String>,
    before: Option<String>,
    /// `lifecycle` includes `active` (or is not given): every route is active.
    active: bool,
}

impl Page {
    /// The page parameters; a 400 naming a bad or unknown one.
    fn parse(query: &str) -> Result<Self, ApiError> {
        let mut page = Self {
            limit: DEFAULT_LIMIT,
            after: None,
            before: None,
            active: true,
        };
        let mut lifecycle: Option<bool> = None;
        for param in paging::params(query) {
            let (key, value) = param?;
            match &*key {
                "limit" => page.limit = paging::limit(&value, MAX_LIMIT)?,
                "after_id" => page.after = Some(value.into_owned()),
                "before_id" => page.before = Some(value.into_owned()),
                "lifecycle" | "lifecycle[]" => {
                    for stage in value.split(',') {
                        let active = stage_is_active(stage)?;
                        lifecycle = Some(lifecycle.unwrap_or(false) || active);
                    }
                }
                // the SDKs' beta namespace marks its calls so
                "beta" => {}
                other => return Err(bad(other, "unknown query parameter")),
            }
        }
        page.active = lifecycle.unwrap_or(true);
        if page.after.is_some() && page.before.is_some() {
            return Err(bad("before_id", "cannot be given with after_id"));
        }
        Ok(page)
    }

    /// This page of `all`, and whether more lie beyond it in the direction paged.
    fn of<'a>(&self, all: &'a [String]) -> Result<(&'a [String], bool), ApiError> {
        let at = |id: &str, param: &str| {
            all.iter().position(|m| m == id).ok_or_else(|| {
                bad(
                    param,
                    format!("no model with id `{}`", clip(id, ECHO_BYTES)),
                )
            })
        };
        Ok(match (&self.after, &self.before) {
            (Some(after), _) => {
                let start = at(after, "after_id")? + 1;
                let end = (start + self.limit).min(all.len());
                (&all[start..end], end < all.len())
            }
            (None, Some(before)) => {
                let end = at(before, "before_id")?;
                let start = end.saturating_sub(self.limit);
                (&all[start..end], start > 0)
            }
            (None, None) => {
                let end = self.limit.min(all.len());
                (&all[..end], end < all.len())
            }
        })
    }
}

/// Whether a `lifecycle` stage is `active`; a 400 for one Anthropic does not define.
fn stage_is_active(stage: &str) -> Result<bool, ApiError> {
    match stage {
        "active" => Ok(true),
        "deprecated" | "retired" => Ok(false),
        other => Err(bad(
            "lifecycle",
            format!(
                "`{}` is not one of active, deprecated, retired",
                clip(other, ECHO_BYTES)
            ),
        )),
    }
}

fn bad(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(clip(param, ECHO_BYTES).into_owned()), message)
}
