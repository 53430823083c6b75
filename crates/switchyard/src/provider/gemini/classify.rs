//! Google API errors to [`ErrorKind`]s: the only place status codes and error bodies are
//! read for this adapter.
//!
//! Reads Google's error shape, `{"error": {"code", "message", "status", "details"}}`
//! (also wrapped in a one-element array, as non-SSE `streamGenerateContent` sends it),
//! and anything else as text. The gRPC `status` name stands in for the HTTP code when an
//! error arrives without one (a stream event). The rules, most specific first:
//!
//! - **Auth**: 401 `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, and the 400
//!   `INVALID_ARGUMENT` Google sends for a bad or expired key ("API key not valid",
//!   `ErrorInfo.reason` `API_KEY_INVALID`); also `FAILED_PRECONDITION` "User location is
//!   not supported" (the account cannot use the API from here; like OpenAI's unsupported
//!   region). A 403 about a *file* the request names ("permission to access the File") is
//!   the caller's `BadRequest`, not our credentials.
//! - **QuotaExhausted**: 402; `FAILED_PRECONDITION` about billing ("free tier is not
//!   available in your country … enable billing"); and a 429 `RESOURCE_EXHAUSTED` only
//!   when it will not pass within minutes: a `google.rpc.QuotaFailure` violation whose
//!   `quotaId` is per day (`…PerDay…`) or whose `quotaValue` is `"0"` (no quota at all on
//!   this tier), or the phrasings of a billing stop ("prepayment credits are depleted",
//!   "spending cap", "limit: 0"). Gemini's generic 429 text "You exceeded your current
//!   quota, please check your plan and billing details" is sent for *per-minute* limits
//!   too, so on its own it means **RateLimited** (opening the circuit for a minute-long
//!   limit would be worse than retrying a daily one).
//! - **RateLimited**: every other 429 / `RESOURCE_EXHAUSTED`.
//! - **ContextLength**: a 4xx saying the input exceeds the token limit ("The input token
//!   count (…) exceeds the maximum number of tokens allowed (…)").
//! - **ContentFiltered**: a 4xx naming a safety block (blocks normally arrive as a 200
//!   with `promptFeedback`, handled by the parser).
//! - **ModelNotFound**: 404 `NOT_FOUND`. **Timeout**: 408, 504 `DEADLINE_EXCEEDED`.
//! - **Overloaded**: 503 `UNAVAILABLE` saying "overloaded" / "high demand" (Gemini's
//!   "The model is overloaded. Please try again later."); any other 503 is **Server**.
//! - **Server**: 500 `INTERNAL` and other 5xx (and 499 `CANCELLED`: we did not cancel).
//! - **BadRequest**: other 4xx, `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, 413.
//!
//! The wait comes from a `retry-after` / `retry-after-ms` header, else
//! `google.rpc.RetryInfo.retryDelay` (`"30s"`, `"1.5s"`), else the message's "Please
//! retry in 38.96s".

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::error_body::ErrorBody;
use crate::provider::http::HttpFailure;

/// Phrases of a context-window error.
const CONTEXT_PHRASES: &[&str] = &[
    "exceeds the maximum number of tokens",
    "input token count",
    "context length",
    "context window",
    "too many tokens",
];

/// Phrases of a key Google does not accept (sent as 400 `INVALID_ARGUMENT`).
const BAD_KEY_PHRASES: &[&str] = &["api key not valid", "api key expired", "api_key_invalid"];

/// `ErrorInfo.reason`s that mean our credentials or project are unusable.
const BAD_KEY_REASONS: &[&str] = &[
    "API_KEY_INVALID",
    "API_KEY_EXPIRED",
    "API_KEY_SERVICE_BLOCKED",
    "SERVICE_DISABLED",
    "CONSUMER_SUSPENDED",
];

/// Phrases of an account that cannot spend any more until someone acts.
const QUOTA_PHRASES: &[&str] = &[
    "prepayment credits are depleted",
    "credits are depleted",
    "spending cap",
    "limit: 0",
    "free tier is not available",
    "enable billing",
];

/// Phrases of a safety block reported as an error.
const FILTER_PHRASES: &[&str] = &[
    "blocked due to safety",
    "safety reasons",
    "prohibited content",
    "prohibited_content",
];

/// Phrases of a 503 that is load, not breakage.
const OVERLOAD_PHRASES: &[&str] = &["overloaded", "high demand"];

/// Classify a non-2xx response. `now` (from the provider's clock) resolves an HTTP-date
/// `Retry-After`.
#[must_use]
pub fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
    let google = GoogleError::from_body(&failure.body);
    let retry_after = failure.retry_after(now).or_else(|| google.wait());
    google.into_error(Some(failure.status), retry_after)
}

/// Classify an error object that arrived without an error status: inside a 200 body or
/// as a stream event. `body` is the whole JSON value (holding `error`). Its `code` stands
/// in for the status.
#[must_use]
pub fn classify_value(body: &Value) -> ProviderError {
    let google = GoogleError::from_value(body);
    let retry_after = google.wait();
    google.into_error(None, retry_after)
}

/// The parts of a Google error body that decide its kind.
#[derive(Debug, Default)]
struct GoogleError {
    message: String,
    /// `error.code`, the HTTP status Google meant.
    code: Option<u16>,
    /// `error.status`, the gRPC code name (`RESOURCE_EXHAUSTED`).
    status: Option<String>,
    /// `ErrorInfo.reason`s.
    reasons: Vec<String>,
    /// `QuotaFailure.violations[].quotaId`, and whether one has a zero `quotaValue`.
    quota_ids: Vec<String>,
    zero_quota: bool,
    /// `RetryInfo.retryDelay`.
    retry_delay: Option<Duration>,
}

impl ErrorBody for GoogleError {
    fn from_value(value: &Value) -> Self {
        let value = match value {
            Value::Array(items) => items.first().unwrap_or(&Value::Null),
            other => other,
        };
        let error = match Self::error_object(value) {
            Ok(error) => error,
            Err(bare) => return bare,
        };
        let mut google = Self {
            message: text(error.get("message")).unwrap_or_default(),
            code: error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok()),
            status: text(error.get("status")),
            ..Self::default()
        };
        for detail in error
            .get("details")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            google.read_detail(detail);
        }
        google
    }

    fn message_mut(&mut self) -> &mut String {
        &mut self.message
    }
}

impl GoogleError {
    /// Take what matters from one `details` entry.
    fn read_detail(&mut self, detail: &Value) {
        let kind = detail
            .get("@type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind.ends_with("google.rpc.ErrorInfo") {
            self.reasons.extend(text(detail.get("reason")));
        } else if kind.ends_with("google.rpc.QuotaFailure") {
            let violations = detail.get("violations").and_then(Value::as_array);
            for violation in violations.into_iter().flatten() {
                self.quota_ids.extend(text(violation.get("quotaId")));
                self.zero_quota |= text(violation.get("quotaValue")).as_deref() == Some("0");
            }
        } else if kind.ends_with("google.rpc.RetryInfo") {
            self.retry_delay = detail
                .get("retryDelay")
                .and_then(Value::as_str)
                .and_then(proto_duration);
        }
    }

    /// The message contains one of `phrases` (case-insensitively).
    fn says(&self, phrases: &[&str]) -> bool {
        let message = self.message.to_ascii_lowercase();
        phrases.iter().any(|p| message.contains(p))
    }

    fn status_is(&self, name: &str) -> bool {
        self.status.as_deref() == Some(name)
    }

    /// `RetryInfo`, else the message's "Please retry in 38.96s".
    fn wait(&self) -> Option<Duration> {
        self.retry_delay.or_else(|| hinted_wait(&self.message))
    }

    /// A quota that will not come back within minutes (the module docs give the rule).
    fn is_quota_exhausted(&self) -> bool {
        self.zero_quota
            || self
                .quota_ids
                .iter()
                .any(|id| id.to_ascii_lowercase().contains("perday"))
            || self.says(QUOTA_PHRASES)
    }

    fn is_bad_key(&self) -> bool {
        self.says(BAD_KEY_PHRASES)
            || self
                .reasons
                .iter()
                .any(|r| BAD_KEY_REASONS.contains(&r.as_str()))
    }

    /// The HTTP status, else `error.code`, else the gRPC name's usual status.
    fn effective_status(&self, status: Option<u16>) -> Option<u16> {
        status.or(self.code).or_else(|| {
            Some(match self.status.as_deref()? {
                "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
                "UNAUTHENTICATED" => 401,
                "PERMISSION_DENIED" => 403,
                "NOT_FOUND" => 404,
                "RESOURCE_EXHAUSTED" => 429,
                "CANCELLED" => 499,
                "UNAVAILABLE" => 503,
                "DEADLINE_EXCEEDED" => 504,
                _ => 500,
            })
        })
    }

    fn kind_for(&self, status: Option<u16>) -> ErrorKind {
        let status = self.effective_status(status);
        if self.is_bad_key() {
            return ErrorKind::Auth;
        }
        if status == Some(402)
            || (self.status_is("FAILED_PRECONDITION") && self.says(QUOTA_PHRASES))
        {
            return ErrorKind::QuotaExhausted;
        }
        if status == Some(429) || self.status_is("RESOURCE_EXHAUSTED") {
            return if self.is_quota_exhausted() {
                ErrorKind::QuotaExhausted
            } else {
                ErrorKind::RateLimited
            };
        }
        if self.says(&["location is not supported"]) {
            return ErrorKind::Auth;
        }
        if status.is_none_or(|s| (400..500).contains(&s)) {
            if self.says(CONTEXT_PHRASES) {
                return ErrorKind::ContextLength;
            }
            if self.says(FILTER_PHRASES) {
                return ErrorKind::ContentFiltered;
            }
            if self.says(&["permission to access the file"]) {
                return ErrorKind::BadRequest;
            }
        }
        match status {
            Some(401 | 403) => ErrorKind::Auth,
            Some(404) => ErrorKind::ModelNotFound,
            Some(408 | 504) => ErrorKind::Timeout,
            Some(499) => ErrorKind::Server,
            Some(503) if self.says(OVERLOAD_PHRASES) => ErrorKind::Overloaded,
            Some(400..=499) => ErrorKind::BadRequest,
            Some(_) | None => ErrorKind::Server,
        }
    }

    fn into_error(self, status: Option<u16>, retry_after: Option<Duration>) -> ProviderError {
        let kind = self.kind_for(status);
        let vendor_code = self.reasons.first().cloned().or(self.status);
        // cut to length by `http::redact`, after scrubbing
        let mut message = self.message.trim().to_owned();
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

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

/// A protobuf `Duration` in its JSON form: seconds with an `s` suffix (`"22s"`,
/// `"1.5s"`, `"0.000250s"`).
fn proto_duration(text: &str) -> Option<Duration> {
    seconds(text.trim().strip_suffix('s')?)
}

fn seconds(number: &str) -> Option<Duration> {
    let value: f64 = number.parse().ok()?;
    (value.is_finite() && value >= 0.0).then(|| Duration::from_secs_f64(value))
}

/// The wait a message names: Gemini's "Please retry in 38.962214405s." (or "…in 250ms").
fn hinted_wait(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = lower.find("retry in ")? + "retry in ".len();
    let rest = &lower[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value = seconds(&rest[..end])?;
    let unit = &rest[end..];
    if unit.starts_with("ms") {
        Some(value / 1000)
    } else if unit.starts_with('s') {
        Some(value)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_durations() {
        let cases = [
            ("22s", Some(22_000)),
            ("1.5s", Some(1_500)),
            ("0.250s", Some(250)),
            (" 3s ", Some(3_000)),
            ("3", None),
            ("-1s", None),
            ("abcs", None),
        ];
        for (text, ms) in cases {
            assert_eq!(
                proto_duration(text),
                ms.map(Duration::from_millis),
                "{text}"
            );
        }
    }

    #[test]
    fn waits_named_in_messages() {
        let cases = [
            ("Please retry in 12.5s.", Some(12_500)),
            ("Please retry in 250ms.", Some(250)),
            ("retry in a while", None),
            ("no hint", None),
        ];
        for (message, ms) in cases {
            assert_eq!(
                hinted_wait(message),
                ms.map(Duration::from_millis),
                "{message}"
            );
        }
    }

    #[test]
    fn status_names_stand_in_for_codes() {
        let cases = [
            ("UNAUTHENTICATED", ErrorKind::Auth),
            ("PERMISSION_DENIED", ErrorKind::Auth),
            ("NOT_FOUND", ErrorKind::ModelNotFound),
            ("RESOURCE_EXHAUSTED", ErrorKind::RateLimited),
            ("INVALID_ARGUMENT", ErrorKind::BadRequest),
            ("DEADLINE_EXCEEDED", ErrorKind::Timeout),
            ("UNAVAILABLE", ErrorKind::Server),
            ("INTERNAL", ErrorKind::Server),
            ("CANCELLED", ErrorKind::Server),
        ];
        for (status, kind) in cases {
            let body = serde_json::json!({"error": {"message": "x", "status": status}});
            let err = classify_value(&body);
            assert_eq!(err.kind, kind, "{status}");
            assert_eq!(err.status, None);
            assert_eq!(err.vendor_code.as_deref(), Some(status));
        }
    }
}
