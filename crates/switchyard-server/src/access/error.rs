//! Why a client may not go on: the refusals of the access checks, as data.
//!
//! Owns the three refusals (`401` no or unknown key, `403` not an admin key, `429` over a
//! rate limit) with their messages and waits. It does not own how they are written on the
//! wire: `crate::http::error` turns each into an `ApiError` (OpenAI's error JSON).

use std::time::Duration;

use axum::http::StatusCode;

/// A refused client: who may call, or how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessError {
    /// 401 (no or unknown key), 403 (not an admin key) or 429 (over a rate limit).
    pub status: StatusCode,
    /// Human-readable; never carries the token.
    pub message: String,
    /// Seconds to wait, for 429s (whole seconds, rounded up, never less than 1).
    pub retry_after: Option<u64>,
}

impl AccessError {
    /// 401: no or invalid client key.
    #[must_use]
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 403: the key is not an admin key.
    #[must_use]
    pub fn not_admin(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429: over a rate limit; retry after `wait` (whole seconds, rounded up, at least 1).
    #[must_use]
    pub fn rate_limited(message: impl Into<String>, wait: Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: message.into(),
            retry_after: Some(secs.max(1)),
        }
    }
}
