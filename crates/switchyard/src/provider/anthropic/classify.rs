//! Anthropic errors to [`ErrorKind`]s: the only place status codes and error bodies are read
//! for this adapter.
//!
//! Anthropic's errors are `{"type": "error", "error": {"type", "message"}, "request_id"}`
//! with documented types per status: `invalid_request_error` (400), `authentication_error`
//! (401), `billing_error` (402), `permission_error` (403), `not_found_error` (404),
//! `request_too_large` (413, sent by Cloudflare before the API sees the request),
//! `rate_limit_error` (429), `api_error` (500), `overloaded_error` (529). The same object
//! arrives as an `event: error` in a stream (no status there: the type decides). Bodies that
//! are not JSON (a proxy's HTML page) are kept as text and the status decides.
//!
//! A message's wording wins over the bare status where Anthropic reuses a type: a 400 saying
//! "credit balance is too low" is out of credit, "prompt is too long" is a context-window
//! error, "Output blocked by content filtering policy" is a safety block.
//!
//! The wait: `retry-after-ms`, else `retry-after` (seconds or HTTP-date); for a 429 without
//! either, the rate-limit reset headers (`anthropic-ratelimit-{requests,tokens,input-tokens,
//! output-tokens}-reset`, RFC 3339). Of those windows, the ones whose `-remaining` is `0`
//! are the relevant ones and the latest of their resets is the wait; when no window reports
//! what remains, every reset given is relevant. A window with capacity left never sets it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::error_body::ErrorBody;
use crate::provider::http::HttpFailure;

/// Phrases of a context-window error ("prompt is too long: 215823 tokens > 200000 maximum";
/// "input length and `max_tokens` exceed context limit: …"; Bedrock and proxies' "context
/// window" / "maximum context length").
const CONTEXT_PHRASES: &[&str] = &[
    "prompt is too long",
    "exceed context limit",
    "context window",
    "context length",
    "maximum context",
];

/// Phrases of an exhausted balance (a 400 `invalid_request_error` on the direct API).
const BILLING_PHRASES: &[&str] = &["credit balance is too low", "credit balance"];

/// Phrases of a safety block returned as an error.
const FILTER_PHRASES: &[&str] = &["content filtering policy"];

/// The rate-limit windows whose reset headers can name the wait.
const WINDOWS: &[&str] = &["requests", "tokens", "input-tokens", "output-tokens"];

/// Classify a non-2xx response. `now` (from the provider's clock) resolves an HTTP-date
/// `Retry-After` and the RFC 3339 reset headers.
#[must_use]
pub fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
    let vendor = VendorError::from_body(&failure.body);
    let kind = vendor.kind_for(Some(failure.status));
    let retry_after = failure.retry_after(now).or_else(|| {
        (kind == ErrorKind::RateLimited)
            .then(|| reset_wait(|name| failure.header(name), now))
            .flatten()
    });
    vendor.into_error(kind, Some(failure.status), retry_after)
}

/// Classify an error object that arrived without an error status: a 200 body of type
/// `error`, or an `event: error` in a stream. `body` is the whole JSON value.
#[must_use]
pub fn classify_value(body: &Value) -> ProviderError {
    let vendor = VendorError::from_value(body);
    let kind = vendor.kind_for(None);
    vendor.into_error(kind, None, None)
}

/// The wait named by the rate-limit reset headers (see the module docs for which count).
/// `header` looks a header up by lower-case name.
#[must_use]
pub fn reset_wait<'a>(
    header: impl Fn(&str) -> Option<&'a str>,
    now: SystemTime,
) -> Option<Duration> {
    let mut exhausted = Vec::new();
    let mut any = Vec::new();
    let mut reported = false;
    for window in WINDOWS {
        let remaining = header(&format!("anthropic-ratelimit-{window}-remaining"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        reported |= remaining.is_some();
        let Some(reset) =
            header(&format!("anthropic-ratelimit-{window}-reset")).and_then(parse_rfc3339)
        else {
            continue;
        };
        let wait = reset.duration_since(now).unwrap_or(Duration::ZERO);
        any.push(wait);
        if remaining == Some(0) {
            exhausted.push(wait);
        }
    }
    let relevant = if reported { exhausted } else { any };
    relevant.into_iter().max()
}

/// The parts of an Anthropic error body that decide its kind.
#[derive(Debug, Default)]
struct VendorError {
    message: String,
    /// `error.type`, lower-cased.
    kind: Option<String>,
}

impl ErrorBody for VendorError {
    fn from_value(value: &Value) -> Self {
        let error = match Self::error_object(value) {
            Ok(error) => error,
            Err(bare) => return bare,
        };
        Self {
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            kind: error
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| *t != "error")
                .map(str::to_ascii_lowercase),
        }
    }

    fn message_mut(&mut self) -> &mut String {
        &mut self.message
    }
}

impl VendorError {
    fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    /// The message contains one of `phrases` (case-insensitively).
    fn says(&self, phrases: &[&str]) -> bool {
        let message = self.message.to_ascii_lowercase();
        phrases.iter().any(|p| message.contains(p))
    }

    fn kind_for(&self, status: Option<u16>) -> ErrorKind {
        if status == Some(402) || self.is("billing_error") || self.says(BILLING_PHRASES) {
            return ErrorKind::QuotaExhausted;
        }
        if status.is_none_or(|s| (400..500).contains(&s)) {
            if self.says(CONTEXT_PHRASES) {
                return ErrorKind::ContextLength;
            }
            if self.says(FILTER_PHRASES) {
                return ErrorKind::ContentFiltered;
            }
        }
        match status {
            Some(401 | 403) => ErrorKind::Auth,
            Some(404) => ErrorKind::ModelNotFound,
            Some(408) => ErrorKind::Timeout,
            Some(429) => ErrorKind::RateLimited,
            Some(529) => ErrorKind::Overloaded,
            Some(500..=599) if self.is("overloaded_error") => ErrorKind::Overloaded,
            Some(400..=499) => ErrorKind::BadRequest,
            Some(_) => ErrorKind::Server,
            None => self.kind_from_type(),
        }
    }

    /// An error with no status (a stream event, a 200 body): its type decides.
    fn kind_from_type(&self) -> ErrorKind {
        match self.kind.as_deref() {
            Some("authentication_error" | "permission_error") => ErrorKind::Auth,
            Some("not_found_error") => ErrorKind::ModelNotFound,
            Some("rate_limit_error") => ErrorKind::RateLimited,
            Some("overloaded_error") => ErrorKind::Overloaded,
            Some("invalid_request_error" | "request_too_large") => ErrorKind::BadRequest,
            Some("timeout_error") => ErrorKind::Timeout,
            _ => ErrorKind::Server,
        }
    }

    fn into_error(
        self,
        kind: ErrorKind,
        status: Option<u16>,
        retry_after: Option<Duration>,
    ) -> ProviderError {
        let mut message = self.message; // cut to length by `http::redact`, after scrubbing
        if message.is_empty() {
            message = match (status, &self.kind) {
                (Some(s), _) => format!("HTTP {s} with no error message"),
                (None, Some(kind)) => format!("error event {kind:?} with no message"),
                (None, None) => "error event with no message".to_owned(),
            };
        }
        let mut error = ProviderError::new(kind, message).with_retry_after(retry_after);
        error.status = status;
        error.vendor_code = self.kind;
        error
    }
}

/// An RFC 3339 timestamp (`2026-11-29T10:00:12Z`, `…12.250Z`, `…12+01:00`) as a
/// [`SystemTime`]. `None` for anything else, or a time before 1970.
#[must_use]
pub fn parse_rfc3339(value: &str) -> Option<SystemTime> {
    let value = value.trim();
    let bytes = value.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = value.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|(i, c)| bytes[*i] != *c) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    let (millis, offset_secs) = fraction_and_offset(&value[19..])?;
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_secs;
    let total_ms = u64::try_from(secs.checked_mul(1_000)?.checked_add(millis)?).ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(total_ms))
}

/// The rest of an RFC 3339 time after the seconds: an optional fraction (as milliseconds)
/// and the offset (`Z` or `±HH:MM`, as seconds east of UTC).
fn fraction_and_offset(rest: &str) -> Option<(i64, i64)> {
    let (fraction, offset) = match rest.strip_prefix('.') {
        Some(after) => {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            let digits: String = after[..end].chars().chain("000".chars()).take(3).collect();
            (digits.parse().ok()?, &after[end..])
        }
        None => (0, rest),
    };
    let offset_secs = match offset {
        "Z" | "z" => 0,
        _ => {
            let sign = match offset.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = offset.get(1..)?.split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3_600 + m * 60)
        }
    };
    Some((fraction, offset_secs))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(http_date: &str) -> SystemTime {
        httpdate::parse_http_date(http_date).unwrap()
    }

    #[test]
    fn rfc3339_forms() {
        let now = at("Sun, 29 Nov 2026 10:00:00 GMT");
        assert_eq!(parse_rfc3339("2026-11-29T10:00:00Z"), Some(now));
        assert_eq!(
            parse_rfc3339("2026-11-29T10:00:12.25Z"),
            Some(now + Duration::from_millis(12_250))
        );
        assert_eq!(parse_rfc3339("2026-11-29T11:00:00+01:00"), Some(now));
        assert_eq!(parse_rfc3339("2026-11-29t09:30:00-00:30z"), None);
        assert_eq!(parse_rfc3339("2026-11-29T09:30:00-00:30"), Some(now));
        assert_eq!(
            parse_rfc3339("1970-01-01T00:00:00Z"),
            Some(UNIX_EPOCH),
            "the epoch"
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T00:00:00Z"),
            Some(at("Tue, 29 Feb 2000 00:00:00 GMT"))
        );
        for bad in [
            "",
            "2026-11-29",
            "2026-11-29T10:00:00",
            "2026-13-29T10:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026/11/29T10:00:00Z",
            "2026-11-29T10:00:00.Z",
            "2026-11-29T10:00:00+1:00",
            "1969-12-31T23:59:59Z",
            "Sun, 29 Nov 2026 10:00:00 GMT",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reset_wait_takes_the_latest_exhausted_window() {
        let now = at("Sun, 29 Nov 2026 10:00:00 GMT");
        let wait = |headers: &[(&str, &str)]| {
            reset_wait(
                |name| headers.iter().find(|(k, _)| *k == name).map(|(_, v)| *v),
                now,
            )
        };
        let secs = |s| Some(Duration::from_secs(s));
        // only the exhausted window counts
        assert_eq!(
            wait(&[
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2026-11-29T10:00:12Z"),
                ("anthropic-ratelimit-tokens-remaining", "5000"),
                ("anthropic-ratelimit-tokens-reset", "2026-11-29T10:00:50Z"),
            ]),
            secs(12)
        );
        // several exhausted: the latest
        assert_eq!(
            wait(&[
                ("anthropic-ratelimit-input-tokens-remaining", "0"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2026-11-29T10:00:20Z"
                ),
                ("anthropic-ratelimit-output-tokens-remaining", "0"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2026-11-29T10:00:07Z"
                ),
            ]),
            secs(20)
        );
        // no remaining counts reported: every reset counts
        assert_eq!(
            wait(&[
                ("anthropic-ratelimit-tokens-reset", "2026-11-29T10:00:03Z"),
                ("anthropic-ratelimit-requests-reset", "2026-11-29T10:00:09Z"),
            ]),
            secs(9)
        );
        // capacity left everywhere: nothing to wait for; a past reset is "now"
        assert_eq!(
            wait(&[
                ("anthropic-ratelimit-requests-remaining", "3"),
                ("anthropic-ratelimit-requests-reset", "2026-11-29T10:00:12Z"),
            ]),
            None
        );
        assert_eq!(
            wait(&[("anthropic-ratelimit-requests-reset", "2026-11-29T09:00:00Z")]),
            Some(Duration::ZERO)
        );
        assert_eq!(
            wait(&[("anthropic-ratelimit-requests-reset", "soon")]),
            None
        );
        assert_eq!(wait(&[]), None);
    }

    #[test]
    fn stream_errors_go_by_type() {
        let cases = [
            ("overloaded_error", ErrorKind::Overloaded),
            ("rate_limit_error", ErrorKind::RateLimited),
            ("api_error", ErrorKind::Server),
            ("authentication_error", ErrorKind::Auth),
            ("permission_error", ErrorKind::Auth),
            ("not_found_error", ErrorKind::ModelNotFound),
            ("invalid_request_error", ErrorKind::BadRequest),
            ("request_too_large", ErrorKind::BadRequest),
            ("billing_error", ErrorKind::QuotaExhausted),
            ("something_new", ErrorKind::Server),
        ];
        for (kind, expected) in cases {
            let body =
                serde_json::json!({"type": "error", "error": {"type": kind, "message": "m"}});
            let err = classify_value(&body);
            assert_eq!(err.kind, expected, "{kind}");
            assert_eq!(err.vendor_code.as_deref(), Some(kind));
            assert_eq!(err.status, None);
        }
        let bare = classify_value(&serde_json::json!({"type": "error"}));
        assert_eq!(bare.kind, ErrorKind::Server);
        assert_eq!(bare.message, "error event with no message");
    }
}
