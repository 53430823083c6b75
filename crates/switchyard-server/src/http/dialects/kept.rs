//! Records a dialect keeps between requests — stored Responses API answers
//! (`super::responses::store`), Anthropic message threads (`super::messages::threads`) — as
//! JSON in the state backend's key-value part (`switchyard::state::SharedState::kv_put`):
//! the process's memory, or Redis for a fleet, so that any replica reads what another kept.
//!
//! Owns the two rules every such record follows: it is found only by the client key that
//! made it (another key, or none, finds nothing, as for an unknown name), and one whose
//! JSON is larger than its bound is not kept. What a record holds, the name it is kept
//! under and its bounds (`[responses]`, `[threads]`) are the caller's.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::http::state::AppState;

/// A record owned by the client key that made it.
pub(crate) trait Owned: Serialize + DeserializeOwned {
    /// The name of the client key that made it (`None` without keys).
    fn owner(&self) -> Option<&str>;
}

/// The record kept as `name` and its size as stored, if it is there and `key` made it.
pub(crate) async fn load<R: Owned>(
    state: &AppState,
    name: &str,
    key: Option<&str>,
) -> Option<(R, usize)> {
    let now = state.gateway.clock().unix_ms();
    let bytes = state.gateway.state().kv_get(name, now).await?;
    let record: R = serde_json::from_slice(&bytes).ok()?;
    (record.owner() == key).then_some((record, bytes.len()))
}

/// [`load`], for a request that brings the record into its conversation (`what`, e.g.
/// `previous_response_id "resp_…"`): once the record is known to be `ctx`'s key's, its JSON
/// is held to the request's memory bounds (`super::expansion`) before it is parsed.
///
/// # Errors
/// 413 naming the bound the record and the request together would pass.
pub(crate) async fn load_within<R: Owned>(
    state: &AppState,
    name: &str,
    ctx: &super::Ctx,
    what: &str,
) -> Result<Option<(R, usize)>, crate::http::error::ApiError> {
    /// The owner alone: everything else is skipped unread.
    #[derive(serde::Deserialize)]
    struct Owner {
        #[serde(default)]
        key: Option<String>,
    }
    let now = state.gateway.clock().unix_ms();
    let Some(bytes) = state.gateway.state().kv_get(name, now).await else {
        return Ok(None);
    };
    // another key's record is not found, whatever its size
    let owner = serde_json::from_slice::<Owner>(&bytes).ok().map(|o| o.key);
    if owner.as_ref().map(Option::as_deref) != Some(ctx.key.as_deref()) {
        return Ok(None);
    }
    super::expansion::admit_stored(&state.expansion, ctx.spent, &bytes, what)?;
    let Ok(record) = serde_json::from_slice::<R>(&bytes) else {
        return Ok(None);
    };
    Ok((record.owner() == ctx.key.as_deref()).then_some((record, bytes.len())))
}

/// Keep `record` as `name` for `ttl`: false when its JSON is larger than `max_bytes` or the
/// store refused it.
pub(crate) async fn save<R: Owned>(
    state: &AppState,
    name: &str,
    record: &R,
    ttl: Duration,
    max_bytes: usize,
) -> bool {
    let Ok(bytes) = serde_json::to_vec(record) else {
        return false;
    };
    if bytes.len() > max_bytes {
        return false;
    }
    let now = state.gateway.clock().unix_ms();
    state.gateway.state().kv_put(name, bytes, ttl, now).await
}
