//! `ApiError`: every failure the HTTP surface reports, as OpenAI's error JSON.
//!
//! Owns the mapping from gateway errors to honest statuses and the
//! body shape `{"error": {"message", "type", "code", "param"}}`, so OpenAI client libraries
//! raise their usual typed exceptions. Messages never carry secrets: upstream messages were
//! scrubbed by the adapters, and nothing here adds credentials. Nor do they carry a client's
//! text unbounded: what they quote of it is cut ([`crate::http::bounds`]).

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use switchyard::observe::Attempt;
use switchyard::{ErrorKind, GatewayError};

use crate::access::error::AccessError;
use crate::http::bounds::{clip, elide, ECHO_BYTES, MESSAGE_BYTES, PARAM_BYTES};

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI's `type` (`invalid_request_error`, `authentication_error`, ...).
    pub kind: &'static str,
    /// OpenAI's `code` (`model_not_found`, `budget_exceeded`, ...).
    pub code: Option<&'static str>,
    /// The field at fault, for 400s.
    pub param: Option<String>,
    /// Human-readable.
    pub message: String,
    /// Seconds to wait, for 429s.
    pub retry_after: Option<u64>,
    /// The attempt trail (502 / 504), summarised in the body.
    pub attempts: Vec<Attempt>,
}

impl ApiError {
    /// An error with no param, code or trail.
    #[must_use]
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            code: None,
            param: None,
            message: message.into(),
            retry_after: None,
            attempts: Vec::new(),
        }
    }

    /// Builder: OpenAI's `code`.
    #[must_use]
    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// Builder: the offending field.
    #[must_use]
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// 400: a malformed body or a bad field (named in `param`).
    #[must_use]
    pub fn bad_request(param: Option<String>, message: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message);
        e.param = param;
        e
    }

    /// 401: no or invalid client key.
    #[must_use]
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "authentication_error", message).code("invalid_api_key")
    }

    /// 403: the key may not use this route.
    #[must_use]
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "permission_error", message).code("route_not_allowed")
    }

    /// 429: the client key is over its rate limit; retry after `wait` (whole seconds,
    /// rounded up, never less than 1).
    #[must_use]
    pub fn rate_limited(message: impl Into<String>, wait: std::time::Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        Self {
            retry_after: Some(secs.max(1)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", message)
                .code("rate_limit_exceeded")
        }
    }

    /// 413: body over the limit.
    #[must_use]
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("request body is larger than the {limit}-byte limit"),
        )
        .code("request_too_large")
    }

    /// 404 for a path that does not exist (the path quoted only in part when long).
    #[must_use]
    pub fn no_such_path(path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("no endpoint {}", clip(path, ECHO_BYTES)),
        )
        .code("unknown_url")
    }

    /// 404 for a `model` that names no route, listing the routes the caller may use:
    /// `usable` is every route without keys, else the caller's key's (named by `key`).
    #[must_use]
    pub fn unknown_route(name: &str, key: Option<&str>, usable: &[&str]) -> Self {
        let list = if usable.is_empty() {
            "none".to_owned()
        } else {
            usable.join(", ")
        };
        let message = match key {
            None => format!("unknown route {name:?}; configured routes: {list}"),
            Some(key) => format!("unknown route {name:?}; routes key {key:?} may use: {list}"),
        };
        Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
            .code("model_not_found")
            .param("model")
    }

    /// The JSON body. However an error was built, its message and `param` are bounded
    /// ([`MESSAGE_BYTES`], [`PARAM_BYTES`]): whatever of a client's text they quote stays small.
    #[must_use]
    pub fn body(&self) -> serde_json::Value {
        let mut error = json!({
            "message": elide(&self.message, MESSAGE_BYTES),
            "type": self.kind,
            "code": self.code,
            "param": self.param.as_deref().map(|p| clip(p, PARAM_BYTES)),
        });
        if !self.attempts.is_empty() {
            error["attempts"] = json!(self
                .attempts
                .iter()
                .map(|a| json!({
                    "provider": a.provider,
                    "model": a.model,
                    "outcome": a.outcome.label(),
                    "status": a.status,
                    "latency_ms": a.latency.as_secs_f64() * 1000.0,
                }))
                .collect::<Vec<_>>());
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                resp.headers_mut().insert("retry-after", v);
            }
        }
        resp
    }
}

impl From<AccessError> for ApiError {
    /// 401 `invalid_api_key`, 403 `admin_key_required`, 429 `rate_limit_exceeded` with its
    /// `Retry-After`.
    fn from(e: AccessError) -> Self {
        match e.status {
            StatusCode::FORBIDDEN => {
                Self::new(e.status, "permission_error", e.message).code("admin_key_required")
            }
            StatusCode::TOO_MANY_REQUESTS => Self {
                retry_after: e.retry_after,
                ..Self::new(e.status, "rate_limit_error", e.message).code("rate_limit_exceeded")
            },
            _ => Self::unauthorized(e.message),
        }
    }
}

impl From<GatewayError> for ApiError {
    fn from(e: GatewayError) -> Self {
        let message = e.to_string();
        match e {
            GatewayError::UnknownRoute { .. } => {
                Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
                    .code("model_not_found")
                    .param("model")
            }
            GatewayError::ModelRefused {
                malformed: true, ..
            } => Self::bad_request(Some("model".into()), message).code("invalid_model"),
            GatewayError::ModelRefused { .. } => {
                Self::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
                    .code("model_not_found")
                    .param("model")
            }
            GatewayError::InvalidRequest(_) => Self::bad_request(None, message),
            GatewayError::BudgetExceeded { .. } => {
                Self::new(StatusCode::PAYMENT_REQUIRED, "insufficient_quota", message)
                    .code("budget_exceeded")
            }
            GatewayError::DeadlineExceeded { attempts, .. } => Self {
                attempts,
                ..Self::new(StatusCode::GATEWAY_TIMEOUT, "timeout_error", message)
                    .code("deadline_exceeded")
            },
            GatewayError::AllFailed { attempts, .. } => Self {
                attempts,
                ..Self::new(StatusCode::BAD_GATEWAY, "upstream_error", message)
                    .code("all_providers_failed")
            },
            GatewayError::RateLimited {
                retry_after,
                attempts,
                ..
            } => Self {
                attempts,
                ..Self::rate_limited(message, retry_after)
            },
            GatewayError::Provider {
                error, attempts, ..
            } => Self {
                attempts,
                ..returned(error.kind, message)
            },
            GatewayError::CannotHonour {
                fields, attempts, ..
            } => Self {
                attempts,
                ..Self::bad_request(fields.first().cloned(), message).code("unsupported_field")
            },
            GatewayError::Cancelled { .. } => Self::new(
                StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
                "cancelled",
                message,
            ),
        }
    }
}

/// A provider error that was not failed over, returned to the caller as itself.
fn returned(kind: ErrorKind, message: String) -> ApiError {
    match kind {
        ErrorKind::ContentFiltered => ApiError::bad_request(None, message).code("content_filter"),
        ErrorKind::ContextLength => {
            ApiError::bad_request(Some("messages".into()), message).code("context_length_exceeded")
        }
        ErrorKind::BadRequest => {
            ApiError::bad_request(None, message).code("upstream_rejected_request")
        }
        ErrorKind::Timeout => ApiError::new(StatusCode::GATEWAY_TIMEOUT, "timeout_error", message),
        _ => ApiError::new(StatusCode::BAD_GATEWAY, "upstream_error", message),
    }
}
