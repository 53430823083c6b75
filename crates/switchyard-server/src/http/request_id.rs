//! Request ids: the `x-request-id` every response carries and every log line names.

use axum::http::{HeaderMap, HeaderName};
use switchyard::propagate::write_hex;

/// `x-request-id` (a constant: a name looked up as text is parsed on every lookup).
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The client's `x-request-id` if it is sane, else a fresh one.
pub fn request_id(headers: &HeaderMap) -> String {
    if let Some(v) = headers.get(X_REQUEST_ID).and_then(|v| v.to_str().ok()) {
        if !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()) {
            return v.to_owned();
        }
    }
    fresh()
}

/// A new id: `req_` and 24 random lower-case hex digits.
fn fresh() -> String {
    // by table into place, not `format!` (most requests come without an id of their own:
    // BENCHMARKS.md, "Stop 22")
    let mut id = *b"req_000000000000000000000000";
    write_hex(&mut id[4..20], &fastrand::u64(..).to_be_bytes());
    write_hex(&mut id[20..], &fastrand::u32(..).to_be_bytes());
    std::str::from_utf8(&id)
        .map(str::to_owned)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sane_client_id_is_kept_and_anything_else_gets_a_fresh_one() {
        let mut headers = HeaderMap::new();
        headers.insert(X_REQUEST_ID, "client-7f3a".parse().unwrap());
        assert_eq!(request_id(&headers), "client-7f3a");
        for insane in ["", "has space", &"x".repeat(129)] {
            headers.insert(X_REQUEST_ID, insane.parse().unwrap());
            let id = request_id(&headers);
            assert_ne!(id, insane);
            assert!(id.starts_with("req_"), "{id}");
        }
        let fresh: Vec<String> = (0..8).map(|_| request_id(&HeaderMap::new())).collect();
        for id in &fresh {
            let digits = id.strip_prefix("req_").unwrap();
            assert_eq!(digits.len(), 24, "{id}");
            assert!(
                digits
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                "{id}"
            );
        }
        let distinct: std::collections::HashSet<_> = fresh.iter().collect();
        assert_eq!(distinct.len(), fresh.len());
    }

    #[test]
    fn a_fresh_id_is_the_random_numbers_in_hex() {
        fastrand::seed(7);
        let (hi, lo) = (fastrand::u64(..), fastrand::u32(..));
        fastrand::seed(7);
        assert_eq!(fresh(), format!("req_{hi:016x}{lo:08x}"));
    }
}
