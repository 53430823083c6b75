//! The memory one request may make the process hold, counted before it is spent: a JSON
//! body expands when parsed (a 4 MiB body of tiny items is hundreds of thousands of values,
//! each a struct or a tree node many times its bytes), and a `previous_response_id` or a
//! thread's `continue` brings a stored conversation in on top. Owns the count (a byte scan
//! outside strings: values and nesting, no allocation) and the three bounds of `[server]`
//! it is held to (`docs/security.md`, "Memory amplification"):
//!
//! - `max_request_items`: JSON values (objects, arrays, strings, numbers, literals; an
//!   embeddings request's numbers excepted: token ids become 4-byte integers), the body's
//!   and a stored conversation's together;
//! - `max_request_depth`: how deeply objects and arrays nest;
//! - `max_expanded_bytes`: the body's bytes and the stored conversation's together.
//!
//! Over one: 413 naming the count, the bound and its setting (400 for the depth). The
//! dialects call [`admit_body`] as soon as the body is read (`flow::admit_body`) and
//! [`admit_stored`] before a stored record is parsed (`kept::load_within`).

use axum::http::StatusCode;

use crate::http::error::ApiError;

pub use crate::config::{ExpansionLimits as Limits, DEPTH_CEILING};

/// What a JSON text holds, counted without parsing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scan {
    /// Values of every kind (an object's keys are not values).
    pub items: usize,
    /// Of which numbers.
    pub numbers: usize,
    /// Deepest nesting of objects and arrays (a bare scalar: 0).
    pub depth: usize,
}

/// Count the values and the nesting of a JSON text, outside strings. Stops counting depth
/// past `DEPTH_CEILING`; on text that is not JSON the counts mean nothing (its parse fails).
#[must_use]
pub fn scan(bytes: &[u8]) -> Scan {
    let mut s = Scan::default();
    let (mut strings, mut colons, mut depth) = (0usize, 0usize, 0usize);
    let mut in_token = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        let token = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.');
        if token && !in_token {
            s.items += 1;
            s.numbers += usize::from(b.is_ascii_digit() || b == b'-');
        }
        in_token = token;
        match b {
            b'"' => {
                strings += 1;
                // to the closing quote, over escapes
                while i < bytes.len() {
                    match bytes[i] {
                        b'"' => break,
                        b'\\' => i += 2,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'{' | b'[' => {
                s.items += 1;
                depth += 1;
                s.depth = s.depth.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' => colons += 1,
            _ => {}
        }
    }
    // every key is a string followed by a colon
    s.items += strings.saturating_sub(colons);
    s
}

/// What a request has spent of its bounds: its body's bytes and values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Bytes.
    pub bytes: usize,
    /// Values counted.
    pub items: usize,
}

/// Admit a body to API `api` (an embeddings request's numbers are not counted: token
/// ids). Returns what it spent, for [`admit_stored`].
///
/// # Errors
/// 413: more values than `max_request_items`; 400: nested deeper than `max_request_depth`.
pub fn admit_body(limits: &Limits, body: &[u8], api: &str) -> Result<Spent, ApiError> {
    let s = scan(body);
    if s.depth > limits.max_depth {
        return Err(ApiError::bad_request(
            None,
            format!(
                "request nests objects and arrays {} deep, more than the {} allowed \
                 ([server] max_request_depth)",
                if s.depth > DEPTH_CEILING {
                    format!("over {DEPTH_CEILING}")
                } else {
                    s.depth.to_string()
                },
                limits.max_depth
            ),
        )
        .code("request_too_deep"));
    }
    let items = if api == "embeddings" {
        s.items - s.numbers
    } else {
        s.items
    };
    if items > limits.max_items {
        return Err(too_large(format!(
            "request expands to {} JSON items, more than the {} allowed ([server] \
             max_request_items)",
            thousands(items),
            thousands(limits.max_items)
        )));
    }
    Ok(Spent {
        bytes: body.len(),
        items,
    })
}

/// Admit the stored conversation `stored` (its JSON as kept) that `what` (the field that
/// names it: `previous_response_id "resp_…"`) brings into a request that spent `spent`.
///
/// # Errors
/// 413: the two together over `max_expanded_bytes` or `max_request_items`, or the stored
/// part nested deeper than `max_request_depth`.
pub fn admit_stored(
    limits: &Limits,
    spent: Spent,
    stored: &[u8],
    what: &str,
) -> Result<(), ApiError> {
    let bytes = spent.bytes + stored.len();
    if bytes > limits.max_expanded_bytes {
        return Err(too_large(format!(
            "the stored conversation of {what} is {} and the request {}: together more \
             than the {} allowed ([server] max_expanded_bytes)",
            size(stored.len()),
            size(spent.bytes),
            size(limits.max_expanded_bytes)
        )));
    }
    let s = scan(stored);
    let items = spent.items + s.items;
    if items > limits.max_items || s.depth > limits.max_depth {
        return Err(too_large(format!(
            "the stored conversation of {what} with this request expands to {} JSON items \
             (nested {} deep), more than the {} items (nested {} deep) allowed ([server] \
             max_request_items, max_request_depth)",
            thousands(items),
            s.depth,
            thousands(limits.max_items),
            limits.max_depth
        )));
    }
    Ok(())
}

fn too_large(message: String) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_request_error",
        message,
    )
    .code("request_too_large")
}

/// `n` with thousands separators (`131,072`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes as MiB with one decimal (`8.0 MiB`), or bytes under one MiB.
#[allow(clippy::cast_precision_loss)] // a size shown to one decimal
fn size(bytes: usize) -> String {
    if bytes < 1 << 20 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_counts_values_not_keys_nor_what_strings_hold() {
        let s = scan(br#"{"a": [1, -2.5e3, true, null, "x,{[\"]"], "b": {"c": {}}}"#);
        // the object, the array, 5 elements, the inner object and its empty one
        assert_eq!(s.items, 9);
        assert_eq!(s.numbers, 2);
        assert_eq!(s.depth, 3);
        assert_eq!(scan(b"\"{[{[\"").depth, 0);
        assert_eq!(scan(b"[]").items, 1);
        assert_eq!(scan(br#"["\\", "a"]"#).items, 3);
    }

    #[test]
    fn a_body_over_a_bound_is_refused_naming_the_count_and_the_setting() {
        let limits = Limits {
            max_items: 1000,
            max_depth: 8,
            max_expanded_bytes: 1 << 20,
        };
        let many = format!("{{\"input\":[{}1]}}", "{},".repeat(1500));
        let e = admit_body(&limits, many.as_bytes(), "responses").unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            e.message,
            "request expands to 1,503 JSON items, more than the 1,000 allowed ([server] \
             max_request_items)"
        );
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(9), "]".repeat(9));
        let e = admit_body(&limits, deep.as_bytes(), "chat").unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("10 deep") && e.message.contains("max_request_depth"));
        // an embeddings request's token ids are not items
        let tokens = format!("{{\"input\":[{}1]}}", "7,".repeat(5000));
        let spent = admit_body(&limits, tokens.as_bytes(), "embeddings").unwrap();
        assert_eq!(spent.items, 2);
        assert!(admit_body(&limits, tokens.as_bytes(), "chat").is_err());
    }

    #[test]
    fn a_stored_conversation_counts_with_the_request() {
        let limits = Limits {
            max_items: 1000,
            max_depth: 8,
            max_expanded_bytes: 4096,
        };
        let spent = Spent {
            bytes: 100,
            items: 10,
        };
        let what = "previous_response_id \"resp_1\"";
        let big = format!("[\"{}\"]", "x".repeat(5000));
        let e = admit_stored(&limits, spent, big.as_bytes(), what).unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(
            e.message.starts_with(
                "the stored conversation of previous_response_id \"resp_1\" is 5004 bytes"
            ),
            "{}",
            e.message
        );
        assert!(e.message.contains("max_expanded_bytes"));
        let many = format!("[{}1]", "{},".repeat(995));
        let e = admit_stored(&limits, spent, many.as_bytes(), what).unwrap_err();
        assert!(e.message.contains("1,007 JSON items"), "{}", e.message);
        assert!(admit_stored(&limits, spent, b"[{}, {}]", what).is_ok());
        assert_eq!(size(8 << 20), "8.0 MiB");
    }
}
