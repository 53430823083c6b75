//! Vendor error bodies: how a non-2xx body is read before a vendor's `classify.rs` decides
//! its kind, and the error-table check every vendor's fixture tests run.
//!
//! Owns [`ErrorBody`]: a body that is JSON goes to the vendor's own reader; an empty body
//! and a body that is not JSON become a message saying so (with a snippet). Does not
//! decide kinds, statuses or waits: each vendor's `classify.rs` does.

use serde_json::Value;

use super::http::snippet;

/// The parts of one vendor's error body that decide its kind.
pub(crate) trait ErrorBody: Default {
    /// Read an error object (the whole JSON body, or one stream event).
    fn from_value(value: &Value) -> Self;

    /// The human-readable message, filled in here when the vendor's reader found none.
    fn message_mut(&mut self) -> &mut String;

    /// Read a non-2xx body: JSON through [`from_value`](Self::from_value) (a body snippet
    /// stands in for a missing message); an empty body or text as a message saying so.
    fn from_body(body: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let mut vendor = Self::from_value(&value);
                let message = vendor.message_mut();
                if message.is_empty() {
                    *message = snippet(body);
                }
                vendor
            }
            Err(_) if body.iter().all(u8::is_ascii_whitespace) => {
                Self::with_message("empty error body".to_owned())
            }
            Err(_) => Self::with_message(format!("non-JSON error body: {}", snippet(body))),
        }
    }

    /// The error object of `value` for [`from_value`](Self::from_value) to read:
    /// `{"error": {…}}`'s, else `value` itself (a shape without the wrapper); `Err` with
    /// the whole reading when the error is a bare `{"error": "text"}`: that message alone.
    ///
    /// # Errors
    /// The reading of a bare-text error.
    fn error_object(value: &Value) -> Result<&Value, Self> {
        match value.get("error") {
            Some(Value::String(text)) => Err(Self::with_message(text.clone())),
            Some(e @ Value::Object(_)) => Ok(e),
            _ => Ok(value),
        }
    }

    /// Nothing but a message.
    fn with_message(message: String) -> Self {
        let mut vendor = Self::default();
        *vendor.message_mut() = message;
        vendor
    }
}

/// The error table every vendor keeps in `tests/fixtures/<vendor>/errors.json`, run straight
/// through its `classify` (the shared suite in `tests/adapters/` runs it over HTTP too).
#[cfg(test)]
pub(crate) mod table {
    use std::time::{Duration, SystemTime};

    use serde_json::Value;

    use crate::error::ProviderError;
    use crate::provider::http::{self, HttpFailure};

    /// Every case of `errors_json` classifies to its `kind`, keeps its status, names its
    /// `retry_after_ms` (or none) and has a message of at most 501 characters.
    pub(crate) fn assert_classifies(
        errors_json: &str,
        classify: fn(&HttpFailure, SystemTime) -> ProviderError,
    ) {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 10:00:00 GMT").unwrap();
        let cases: Vec<Value> = serde_json::from_str(errors_json).unwrap();
        for case in cases {
            let failure = failure(&case);
            let err = classify(&failure, now);
            let name = case["name"].as_str().unwrap();
            assert_eq!(
                err.kind.label(),
                case["kind"].as_str().unwrap(),
                "{name}: {err}"
            );
            assert_eq!(err.status, Some(failure.status), "{name}");
            let expected = case["retry_after_ms"].as_u64().map(Duration::from_millis);
            assert_eq!(err.retry_after, expected, "{name}");
            assert!(
                !err.message.is_empty() && err.message.chars().count() <= 501,
                "{name}"
            );
        }
    }

    /// One case as the failure `classify` sees.
    fn failure(case: &Value) -> HttpFailure {
        let mut headers = ::http::HeaderMap::new();
        for (k, v) in case["headers"].as_object().into_iter().flatten() {
            http::insert_header(&mut headers, k, v.as_str().unwrap()).unwrap();
        }
        let body = match case.get("body_text") {
            Some(text) => text.as_str().unwrap().to_owned(),
            None => case["body"].to_string(),
        };
        HttpFailure {
            status: u16::try_from(case["status"].as_u64().unwrap()).unwrap(),
            headers,
            body: body.into(),
        }
    }
}
