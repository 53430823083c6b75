//! The errors the HTTP layer itself raises, in OpenAI's error JSON like every other
//! error (`crate::http::error::ApiError`): 405 on a known path, 408 for a body that stops
//! arriving, 503 when in-flight requests are at the cap, the SSE event that ends a stream
//! at the shutdown deadline, and the replacements for hyper's own bodiless parse-error
//! responses (400, 414, 431).

use axum::http::StatusCode;

use crate::http::error::ApiError;

/// `Retry-After` of a request shed at the in-flight cap, seconds.
const SHED_RETRY_AFTER_SECS: u64 = 1;

/// 405: a known path asked with a method it does not serve (axum keeps its `Allow`
/// header on the response).
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!("{method} is not allowed on {}", uri.path()),
    )
    .code("method_not_allowed")
}

/// 408: the request body did not arrive within `[server] body_read_timeout`.
#[must_use]
pub fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "invalid_request_error",
        "the request body did not arrive in time ([server] body_read_timeout)",
    )
    .code("request_timeout")
}

/// 503 + `Retry-After`: as many requests are in flight as `[server] max_in_flight` allows.
#[must_use]
pub fn overloaded() -> ApiError {
    let mut e = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        "the server is at its limit of requests in flight; retry shortly",
    )
    .code("server_overloaded");
    e.retry_after = Some(SHED_RETRY_AFTER_SECS);
    e
}

/// The `error` event that ends a stream still open at the end of the shutdown grace period.
#[must_use]
pub fn shutting_down() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        "the server is shutting down: the stream was ended before it finished",
    )
    .code("server_shutting_down")
}

/// The whole response that replaces hyper's own for a request it could not parse: hyper
/// answers such requests itself (status only, no body) before any handler runs. `None`
/// for statuses hyper does not send that way.
#[must_use]
pub fn parse_failure(status: u16, max_header_bytes: usize) -> Option<Vec<u8>> {
    let (message, code) = match status {
        400 => (
            "the request is not valid HTTP/1.1: its request line or a header could not be parsed"
                .to_owned(),
            "malformed_request",
        ),
        414 => ("the request URI is too long".to_owned(), "uri_too_long"),
        431 => (
            format!("the request head is larger than the {max_header_bytes}-byte limit"),
            "request_header_fields_too_large",
        ),
        _ => return None,
    };
    let status = StatusCode::from_u16(status).ok()?;
    let error = ApiError::new(status, "invalid_request_error", message).code(code);
    let body = serde_json::to_vec(&error.body()).ok()?;
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_failures_become_openai_errors_and_close() {
        let out = String::from_utf8(parse_failure(431, 65_536).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("connection: close"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "request_header_fields_too_large");
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert!(v["error"]["message"].as_str().unwrap().contains("65536"));
        assert!(parse_failure(400, 1).is_some());
        assert!(parse_failure(200, 1).is_none());
    }

    #[test]
    fn shed_requests_say_when_to_retry() {
        let e = overloaded();
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(e.retry_after, Some(1));
    }
}
