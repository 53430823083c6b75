//! Request ids: the `x-request-id` every response carries and every log line names.

use axum::http::HeaderMap;

/// The client's `x-request-id` if it is sane, else a fresh one.
pub fn request_id(headers: &HeaderMap) -> String {
    if let Some(v) = headers.get("x-request-id").and_then(|v| v.to_str().ok()) {
        if !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()) {
            return v.to_owned();
        }
    }
    format!("req_{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}
