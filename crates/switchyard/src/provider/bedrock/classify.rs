//! Bedrock errors to [`ErrorKind`]s: the only place status codes and error bodies are read
//! for this adapter.
//!
//! Bedrock Runtime answers an error with a JSON body `{"message": "…"}` (`Message` on some
//! front ends) and names the exception in the `x-amzn-ErrorType` header
//! (`ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`; the part
//! before `:` counts), or in the body's `__type` (`com.amazon.coral.service#…`; the part
//! after `#`). In a ConverseStream the same exceptions arrive as event-stream exception
//! frames named in lower camel case (`throttlingException`), with no status. The table
//! (Bedrock's API reference, "Errors" of Converse and ConverseStream, and the common
//! errors of AWS APIs):
//!
//! | exception | status | kind |
//! |---|---|---|
//! | `ThrottlingException`, `ServiceQuotaExceededException` | 429, 400 | rate_limited |
//! | `ServiceUnavailableException`, `ModelNotReadyException` | 503, 429 | overloaded |
//! | `ValidationException` saying the input is too long | 400 | context_length |
//! | other `ValidationException` | 400 | bad_request |
//! | `AccessDeniedException`, `UnrecognizedClientException`, `InvalidSignatureException`, `ExpiredTokenException`, `IncompleteSignature`, `MissingAuthenticationToken` | 403 | auth |
//! | `ResourceNotFoundException` | 404 | model_not_found |
//! | `InternalServerException`, `ModelErrorException`, `ModelStreamErrorException` | 500, 424 | server |
//! | `ModelTimeoutException` | 408 | timeout |
//!
//! An unnamed error is classified by its status (401/403 auth, 404 model_not_found, 408
//! timeout, 429 rate_limited, 503 overloaded, other 5xx server, other 4xx bad_request, with
//! the context-window phrases checked on a 4xx). The wait is `Retry-After` when given.

use std::time::SystemTime;

use serde_json::Value;

use crate::error::{ErrorKind, ProviderError};
use crate::provider::error_body::ErrorBody;
use crate::provider::http::HttpFailure;

/// Phrases of a context-window `ValidationException` ("Input is too long for requested
/// model", "too many input tokens", Claude's "prompt is too long", "input length and
/// `max_tokens` exceed context limit").
const CONTEXT_PHRASES: &[&str] = &[
    "input is too long",
    "too many input tokens",
    "prompt is too long",
    "exceed context limit",
    "context window",
    "context length",
    "maximum context",
];

/// Classify a non-2xx response.
#[must_use]
pub fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
    let mut vendor = VendorError::from_body(&failure.body);
    if let Some(name) = failure.header("x-amzn-errortype").map(exception_name) {
        vendor.name = Some(name);
    }
    let kind = vendor.kind(Some(failure.status));
    vendor.into_error(kind, Some(failure.status), failure.retry_after(now))
}

/// Classify an exception frame of a stream: `name` is its `:exception-type`, `payload`
/// its JSON body.
#[must_use]
pub fn classify_exception(name: &str, payload: &str) -> ProviderError {
    let mut vendor = VendorError::from_body(payload.as_bytes());
    vendor.name = Some(exception_name(name));
    let kind = vendor.kind(None);
    vendor.into_error(kind, None, None)
}

/// The exception's name from a header value (`Name:namespace`) or a `__type`
/// (`namespace#Name`).
fn exception_name(raw: &str) -> String {
    let name = raw.split(':').next().unwrap_or(raw);
    let name = name.rsplit('#').next().unwrap_or(name);
    name.trim().to_owned()
}

/// The parts of a Bedrock error that decide its kind.
#[derive(Debug, Default)]
struct VendorError {
    message: String,
    /// The exception name (`ThrottlingException`; `throttlingException` in a stream).
    name: Option<String>,
}

impl ErrorBody for VendorError {
    fn from_value(value: &Value) -> Self {
        let message = ["message", "Message"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        let name = value
            .get("__type")
            .and_then(Value::as_str)
            .map(exception_name);
        Self { message, name }
    }

    fn message_mut(&mut self) -> &mut String {
        &mut self.message
    }
}

impl VendorError {
    fn says_context(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        CONTEXT_PHRASES.iter().any(|p| message.contains(p))
    }

    fn kind(&self, status: Option<u16>) -> ErrorKind {
        let name = self.name.as_deref().map(str::to_ascii_lowercase);
        let by_name = match name.as_deref() {
            Some("throttlingexception" | "servicequotaexceededexception") => {
                Some(ErrorKind::RateLimited)
            }
            Some("serviceunavailableexception" | "modelnotreadyexception") => {
                Some(ErrorKind::Overloaded)
            }
            Some("validationexception") if self.says_context() => Some(ErrorKind::ContextLength),
            Some("validationexception") => Some(ErrorKind::BadRequest),
            Some(
                "accessdeniedexception"
                | "unrecognizedclientexception"
                | "invalidsignatureexception"
                | "expiredtokenexception"
                | "incompletesignature"
                | "incompletesignatureexception"
                | "missingauthenticationtoken"
                | "missingauthenticationtokenexception"
                | "invalidclienttokenid"
                | "signaturedoesnotmatch",
            ) => Some(ErrorKind::Auth),
            Some("resourcenotfoundexception") => Some(ErrorKind::ModelNotFound),
            Some(
                "internalserverexception"
                | "internalfailure"
                | "modelerrorexception"
                | "modelstreamerrorexception",
            ) => Some(ErrorKind::Server),
            Some("modeltimeoutexception") => Some(ErrorKind::Timeout),
            _ => None,
        };
        if let Some(kind) = by_name {
            return kind;
        }
        match status {
            Some(400..=499) if self.says_context() => ErrorKind::ContextLength,
            Some(401 | 403) => ErrorKind::Auth,
            Some(404) => ErrorKind::ModelNotFound,
            Some(408) => ErrorKind::Timeout,
            Some(429) => ErrorKind::RateLimited,
            Some(503) => ErrorKind::Overloaded,
            Some(400..=499) => ErrorKind::BadRequest,
            _ => ErrorKind::Server,
        }
    }

    fn into_error(
        self,
        kind: ErrorKind,
        status: Option<u16>,
        retry_after: Option<std::time::Duration>,
    ) -> ProviderError {
        let mut message = self.message; // cut to length by `http::redact`, after scrubbing
        if message.is_empty() {
            message = match status {
                Some(s) => format!("HTTP {s} with no error message"),
                None => "stream exception with no message".to_owned(),
            };
        }
        ProviderError {
            kind,
            message,
            status,
            retry_after,
            vendor_code: self.name,
        }
    }
}
