//! JSON text helpers shared by the library and the server: a body parsed with its UTF-8
//! checked once ([`from_bytes`]), and a JSON string's bytes scanned eight at a time
//! ([`plain_run`]: the OpenAI chunk scan, `provider/openai/stream/scan.rs`, and the server's
//! hand-written JSON, `json_out.rs` in switchyard-server, need the same answer to "where
//! does the plain run end"). Part of the vocabulary (docs/design.md, "Layers"): it
//! depends on nothing in the crate.

/// `body` parsed as JSON, as `serde_json::from_slice` parses it, with its UTF-8 checked
/// once for the whole body instead of once for every string in it (serde_json checks each
/// string it reads from bytes: ~100 instructions a string, 33 strings in a small chat
/// request; BENCHMARKS.md "Stop 34"). A body that is not UTF-8 is parsed by
/// `from_slice` itself, so its error is the one it always was.
///
/// # Errors
/// What `serde_json::from_slice(body)` returns.
pub fn from_bytes<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

/// The end of the plain run of `b` from `at`: the index of the first `"`, `\` or control
/// byte (below 0x20) at or after `at`, or `b.len()` when there is none.
///
/// Eight bytes at a time (as serde_json's `skip_to_escape`): a byte that stops the run sets
/// its high bit in `stop`, and the lowest set bit is the first.
#[must_use]
pub fn plain_run(b: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    while let Some(word) = b.get(at..at.saturating_add(8)) {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let w = u64::from_le_bytes(eight);
        let zero_at = |x: u64| x.wrapping_sub(ONES) & !x;
        let stop = (zero_at(w ^ (ONES * u64::from(b'"')))
            | zero_at(w ^ (ONES * u64::from(b'\\')))
            | w.wrapping_sub(ONES * 0x20) & !w)
            & HIGH;
        if stop != 0 {
            return at + (stop.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    (b.get(at..).unwrap_or_default().iter())
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map_or(b.len(), |n| at + n)
}

#[cfg(test)]
mod tests {
    use super::{from_bytes, plain_run};
    use serde_json::Value;

    /// The same values and the same errors as `from_slice`, UTF-8 or not.
    #[test]
    fn bytes_parse_as_from_slice_parses_them() {
        let bodies: [&[u8]; 12] = [
            br#"{"a":"b","c":[1,2.5,null,true],"d":{"e":"\u00e9\n"}}"#,
            "{\"é\":\"ü😀\"}".as_bytes(),
            b"",
            b"   ",
            b"{",
            b"{\"a\":1} x",
            b"{\"a\":\"\xff\"}",
            b"\xfe{}",
            b"{\"a\":\"\xc3\"}",
            b"[1,2,",
            b"\"\\ud800\"",
            b"{\"a\":\"b\"}\xff",
        ];
        for body in bodies {
            let slice = serde_json::from_slice::<Value>(body);
            let ours = from_bytes::<Value>(body);
            match (slice, ours) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{body:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{body:?}"),
                (a, b) => panic!("{body:?}: from_slice {a:?}, from_bytes {b:?}"),
            }
        }
        // borrowed strings borrow from the body
        let body = br#"{"k":"borrowed"}"#;
        let m: std::collections::HashMap<&str, &str> = from_bytes(body).unwrap();
        assert_eq!(m["k"], "borrowed");
    }

    /// The eight-at-a-time run ends where a byte-by-byte one does: at each stop byte in
    /// every position, after multi-byte characters, and at the end.
    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control() {
        for len in 0..20 {
            for stop in ["\"", "\\", "\n", "\u{1f}", "\u{0}", ""] {
                let text = format!("{}{stop}é~\u{7f}\"", "aé\u{80}".repeat(len));
                let b = text.as_bytes();
                for start in [0, 1] {
                    let naive = (b[start..].iter())
                        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                        .map_or(b.len(), |n| start + n);
                    assert_eq!(plain_run(b, start), naive, "{text:?} from {start}");
                }
            }
        }
        assert_eq!(plain_run(b"abc", 3), 3);
    }
}
