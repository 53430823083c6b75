//! OpenAI-shaped errors to [`ErrorKind`]s: the only place status codes and error bodies
//! are read for this adapter.
//!
//! Reads the error shapes of OpenAI and the servers that copy it:
//! `{"error": {"message", "type", "param", "code"}}` (OpenAI, Azure, Groq, vLLM ≥ 0.6),
//! numeric codes (`"code": 429` — OpenRouter, vLLM), `{"object": "error", "message", ...}`
//! (older vLLM), `{"error": "text"}` (Ollama), `{"detail": "text"}` (FastAPI servers), and
//! anything else as text. A vendor's specific code or phrasing wins over the bare status
//! (a 429 `insufficient_quota` is out of credit, not a rate limit; a 400 saying "maximum
//! context length" is a context-window error).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::error_body::ErrorBody;
use crate::provider::http::HttpFailure;

/// Phrases of a context-window error: OpenAI/Azure/Groq ("This model's maximum context
/// length is …", "Please reduce the length of the messages", "exceeds the context window"),
/// vLLM (same as OpenAI), OpenRouter ("This endpoint's maximum context length is …"),
/// llama.cpp ("exceeds the available context size"), TGI ("`inputs` tokens +
/// `max_new_tokens` must be <= …").
const CONTEXT_PHRASES: &[&str] = &[
    "maximum context length",
    "maximum context",
    "context length",
    "context window",
    "context size",
    "reduce the length of the messages",
    "`inputs` tokens + `max_new_tokens`",
];

/// Codes of a context-window error.
const CONTEXT_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// Codes of a safety refusal: OpenAI images (`content_policy_violation`), Azure
/// (`content_filter`, inner `ResponsibleAIPolicyViolation`).
const FILTER_CODES: &[&str] = &[
    "content_filter",
    "content_policy_violation",
    "responsibleaipolicyviolation",
];

/// Phrases of a safety refusal (OpenAI: "rejected as a result of our safety system";
/// "flagged as potentially violating our usage policy"; OpenRouter moderation 403s).
const FILTER_PHRASES: &[&str] = &["safety system", "flagged as potentially violating"];

/// Classify a non-2xx response. `now` (from the provider's clock) resolves an HTTP-date
/// `Retry-After`.
#[must_use]
pub fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
    let vendor = VendorError::from_body(&failure.body);
    let retry_after = failure
        .retry_after(now)
        .or_else(|| hinted_wait(&vendor.message));
    vendor.into_error(Some(failure.status), retry_after)
}

/// Classify an error object that arrived without an error status: inside a 200 body or
/// as a stream event. `body` is the whole JSON value (holding `error`, or vLLM's top-level
/// shape). A numeric `code` stands in for the status.
#[must_use]
pub fn classify_value(body: &Value) -> ProviderError {
    let vendor = VendorError::from_value(body);
    let retry_after = hinted_wait(&vendor.message);
    vendor.into_error(None, retry_after)
}

/// The parts of a vendor error body that decide its kind.
#[derive(Debug, Default)]
struct VendorError {
    message: String,
    /// `code`, lower-cased (numbers as text).
    code: Option<String>,
    /// `type`, lower-cased.
    kind: Option<String>,
    /// Azure's `innererror.code`, lower-cased.
    inner: Option<String>,
    /// OpenRouter's moderation metadata was present.
    flagged: bool,
}

impl ErrorBody for VendorError {
    fn from_value(value: &Value) -> Self {
        let error = match Self::error_object(value) {
            Ok(error) => error,
            Err(bare) => return bare,
        };
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => Some(s.to_ascii_lowercase()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let message = ["message", "detail"]
            .iter()
            .find_map(|k| error.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        Self {
            message,
            code: text(error.get("code")),
            kind: text(error.get("type")),
            inner: text(error.pointer("/innererror/code")),
            flagged: error.pointer("/metadata/flagged_input").is_some()
                || error.pointer("/metadata/reasons").is_some(),
        }
    }

    fn message_mut(&mut self) -> &mut String {
        &mut self.message
    }
}

impl VendorError {
    /// One of `codes` is this error's code, type or inner code.
    fn has_code(&self, codes: &[&str]) -> bool {
        [&self.code, &self.kind, &self.inner]
            .into_iter()
            .flatten()
            .any(|c| codes.contains(&c.as_str()))
    }

    /// The message contains one of `phrases` (case-insensitively).
    fn says(&self, phrases: &[&str]) -> bool {
        let message = self.message.to_ascii_lowercase();
        phrases.iter().any(|p| message.contains(p))
    }

    /// A numeric `code` (OpenRouter, vLLM, Azure's `"429"`), used when there is no status.
    fn numeric_code(&self) -> Option<u16> {
        self.code
            .as_deref()
            .filter(|c| c.len() == 3)
            .and_then(|c| c.parse().ok())
    }

    fn kind_for(&self, status: Option<u16>) -> ErrorKind {
        let status = status.or_else(|| self.numeric_code());
        if self.has_code(&["insufficient_quota"]) || self.says(&["exceeded your current quota"]) {
            return ErrorKind::QuotaExhausted;
        }
        if status.is_none_or(|s| (400..500).contains(&s)) {
            if self.has_code(CONTEXT_CODES) || self.says(CONTEXT_PHRASES) {
                return ErrorKind::ContextLength;
            }
            if self.has_code(FILTER_CODES) || self.flagged || self.says(FILTER_PHRASES) {
                return ErrorKind::ContentFiltered;
            }
            if self.has_code(&["model_not_found", "deploymentnotfound"])
                || self.says(&["is not a valid model id"])
            {
                return ErrorKind::ModelNotFound;
            }
        }
        match status {
            Some(401 | 403) => ErrorKind::Auth,
            Some(402) => ErrorKind::QuotaExhausted,
            Some(404) => ErrorKind::ModelNotFound,
            Some(408) => ErrorKind::Timeout,
            Some(429) => ErrorKind::RateLimited,
            Some(529) => ErrorKind::Overloaded,
            Some(503) if self.is_overloaded() => ErrorKind::Overloaded,
            Some(400..=499) => ErrorKind::BadRequest,
            Some(_) => ErrorKind::Server,
            None => self.kind_from_code(),
        }
    }

    fn is_overloaded(&self) -> bool {
        self.has_code(&["overloaded", "overloaded_error", "engine_overloaded"])
            || self.says(&["overloaded", "slow down"])
    }

    /// An error event with no status and no numeric code: go by its code or type.
    fn kind_from_code(&self) -> ErrorKind {
        if self.has_code(&[
            "rate_limit_exceeded",
            "rate_limit_error",
            "requests",
            "tokens",
        ]) {
            ErrorKind::RateLimited
        } else if self.has_code(&[
            "invalid_api_key",
            "authentication_error",
            "permission_error",
        ]) {
            ErrorKind::Auth
        } else if self.is_overloaded() {
            ErrorKind::Overloaded
        } else if self.has_code(&["invalid_request_error", "badrequesterror"]) {
            ErrorKind::BadRequest
        } else {
            ErrorKind::Server
        }
    }

    fn into_error(self, status: Option<u16>, retry_after: Option<Duration>) -> ProviderError {
        let kind = self.kind_for(status);
        let vendor_code = self.code.clone().or_else(|| self.kind.clone());
        let mut message = self.message; // cut to length by `http::redact`, after scrubbing
        if message.is_empty() {
            message = match (status, &vendor_code) {
                (Some(s), _) => format!("HTTP {s} with no error message"),
                (None, Some(code)) => format!("error event {code:?} with no message"),
                (None, None) => "error event with no message".to_owned(),
            };
        }
        let mut error = ProviderError::new(kind, message).with_retry_after(retry_after);
        error.status = status;
        error.vendor_code = vendor_code;
        error
    }
}

/// The wait a message names when no header does: OpenAI's "Please try again in 1.5s" /
/// "in 20ms", Azure's "Please retry after 6 seconds".
fn hinted_wait(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = ["try again in ", "retry after "]
        .iter()
        .find_map(|p| lower.find(p).map(|i| i + p.len()))?;
    let rest = &lower[start..];
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..number_end].parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    let unit = rest[number_end..].trim_start();
    if unit.starts_with("ms") || unit.starts_with("millisecond") {
        Some(Duration::from_secs_f64(value / 1000.0))
    } else if unit.starts_with('s') {
        Some(Duration::from_secs_f64(value))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_named_in_messages() {
        let cases = [
            ("Please try again in 1.5s.", Some(1500)),
            ("Please try again in 20ms.", Some(20)),
            ("Please retry after 6 seconds.", Some(6000)),
            ("try again later", None),
            ("Please try again in 6m0s", None),
        ];
        for (message, ms) in cases {
            assert_eq!(
                hinted_wait(message),
                ms.map(Duration::from_millis),
                "{message}"
            );
        }
    }
}
