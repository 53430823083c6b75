//! Keys never leak through adapters' error messages: for keys drawn from a seeded RNG, in
//! every encoding an upstream may echo them in, and for every place a cut can fall (the
//! body cap, the message length), no run of six or more of a key's characters (in the
//! encoding it was echoed in, or as is) survives in the final message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashSet;
use std::time::SystemTime;

use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use base64::Engine as _;
use bytes::Bytes;
use http::HeaderMap;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use switchyard::provider::http::{redact, HttpFailure, ERROR_BODY_LIMIT, MESSAGE_LIMIT};
use switchyard::provider::secret::{Secret, FRAGMENT};
use switchyard::provider::{anthropic, gemini, openai};
use switchyard::{ErrorKind, ProviderError};

/// RFC 3986's unreserved characters kept, everything else encoded.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const KEY_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./+=:";

/// Keys of many lengths and alphabets, reproducibly.
fn keys() -> Vec<String> {
    let mut rng = fastrand::Rng::with_seed(11);
    let mut keys = vec![
        "sk-SECRET-CANARY-0123456789".to_owned(),
        "sk-proj-AbC/dEf+GhI=jKl.mNo_pQr".to_owned(),
    ];
    for _ in 0..4 {
        let len = rng.usize(8..48);
        keys.push(
            (0..len)
                .map(|_| char::from(KEY_CHARS[rng.usize(..KEY_CHARS.len())]))
                .collect(),
        );
    }
    keys
}

/// The key echoed in one encoding: the echoed text, and the characters of it that only
/// the key decides (what must not survive in runs of [`FRAGMENT`]).
struct Echo {
    text: String,
    protected: String,
}

/// Every encoding of `key` an echo may carry, with `lead` and `tail` bytes of other data
/// around it where the encoding mixes neighbours (base64).
fn echoes(key: &str, rng: &mut fastrand::Rng) -> Vec<Echo> {
    let plain = |text: String| Echo {
        protected: text.clone(),
        text,
    };
    let mut out = vec![
        plain(key.to_owned()),
        plain(key.to_ascii_uppercase()),
        plain(key.to_ascii_lowercase()),
        plain(utf8_percent_encode(key, NON_ALPHANUMERIC).to_string()),
        plain(utf8_percent_encode(key, UNRESERVED).to_string()),
        plain(
            utf8_percent_encode(key, UNRESERVED)
                .to_string()
                .to_ascii_lowercase(),
        ),
    ];
    for lead in 0..3_usize {
        for tail in 0..3 {
            let mut bytes: Vec<u8> = (0..lead).map(|_| rng.u8(b' '..=b'~')).collect();
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend((0..tail).map(|_| rng.u8(b' '..=b'~')));
            for engine in [&STANDARD, &URL_SAFE] {
                let text = engine.encode(&bytes);
                // character i holds bits [6i, 6i + 6); the key's are [8 lead, 8 (lead + len))
                let first = (8 * lead).div_ceil(6);
                let end = 8 * (lead + key.len()) / 6;
                out.push(Echo {
                    protected: text[first..end].to_owned(),
                    text,
                });
            }
        }
    }
    out
}

/// Every run of [`FRAGMENT`] characters of `protected` and of the key as is, lower-cased
/// and packed into a number.
fn runs(key: &str, protected: &str) -> HashSet<u64> {
    [key, protected]
        .iter()
        .flat_map(|s| {
            let s = s.to_ascii_lowercase().into_bytes();
            s.windows(FRAGMENT).map(pack).collect::<Vec<_>>()
        })
        .collect()
}

fn pack(window: &[u8]) -> u64 {
    window.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// The runs of `runs` that `shown` contains, ASCII case-insensitively.
fn leaked(shown: &str, runs: &HashSet<u64>) -> Vec<String> {
    shown
        .to_ascii_lowercase()
        .as_bytes()
        .windows(FRAGMENT)
        .filter(|w| runs.contains(&pack(w)))
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

fn leaks(shown: &str, key: &str, protected: &str) -> Vec<String> {
    leaked(shown, &runs(key, protected))
}

fn shown(key: &Secret, message: &str) -> String {
    redact(Some(key), ProviderError::new(ErrorKind::Server, message)).message
}

fn words(rng: &mut fastrand::Rng, len: usize) -> String {
    (0..len)
        .map(|i| if i % 7 == 6 { ' ' } else { rng.alphabetic() })
        .collect()
}

#[test]
fn no_cut_of_any_encoding_leaves_six_characters_of_a_key() {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut checked = 0;
    for key in keys() {
        let secret = Secret::new(key.clone());
        for echo in echoes(&key, &mut rng) {
            let n = echo.text.len();
            let runs = runs(&key, &echo.protected);
            // a cut through the echo where the text was capped (body limit, event size)
            let before = format!("error: {} auth=", words(&mut rng, 40));
            for cut in 0..=n {
                let text = format!("{before}{}", &echo.text[..cut]);
                let out = shown(&secret, &text);
                let leaked = leaked(&out, &runs);
                assert!(
                    leaked.is_empty(),
                    "{key:?} cut at {cut}: {out:?} {leaked:?}"
                );
                checked += 1;
            }
            // the message limit falling at every offset of the echo
            for at in 0..=n {
                let pad = words(&mut rng, MESSAGE_LIMIT - at);
                let text = format!("{pad}{} and more text", echo.text);
                let out = shown(&secret, &text);
                let leaked = leaked(&out, &runs);
                assert!(
                    leaked.is_empty(),
                    "{key:?} limit at {at}: {out:?} {leaked:?}"
                );
                assert!(
                    out.chars().count() <= MESSAGE_LIMIT + 1,
                    "still cut to length"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

type Classify = fn(&HttpFailure, SystemTime) -> ProviderError;

fn failure(status: u16, body: Vec<u8>) -> HttpFailure {
    HttpFailure {
        status,
        headers: HeaderMap::new(),
        body: Bytes::from(body),
    }
}

/// The body a vendor (or a proxy in front of it) sent back, classified and redacted as
/// `ErrorPolicy::checked` does.
fn classified(classify: Classify, key: &Secret, status: u16, body: Vec<u8>) -> String {
    redact(
        Some(key),
        classify(&failure(status, body), SystemTime::UNIX_EPOCH),
    )
    .message
}

#[test]
fn adapters_scrub_before_they_cut() {
    let key = "sk-SECRET-CANARY-0123456789abcdef";
    let secret = Secret::new(key);
    let classifiers: [(&str, Classify); 3] = [
        ("openai", openai::classify),
        ("anthropic", anthropic::classify),
        ("gemini", gemini::classify),
    ];
    for (name, classify) in classifiers {
        for at in 0..=key.len() {
            // a JSON error message the old 500-character cut went through
            let message = format!("{}{key}", "x".repeat(MESSAGE_LIMIT - at));
            let body = serde_json::json!({"error": {"message": message}}).to_string();
            let out = classified(classify, &secret, 401, body.into_bytes());
            // scrubbed whole before any cut: not even the key's first characters are left
            assert!(!out.contains("sk-"), "{name} json at {at}: {out}");
            // a non-JSON page the old 120-character snippet went through
            let page = format!("{}{key}</html>", "y".repeat(120 - at));
            let out = classified(classify, &secret, 502, page.into_bytes());
            assert!(!out.contains("sk-"), "{name} page at {at}: {out}");
        }
    }
}

#[test]
fn a_body_capped_through_a_key_shows_none_of_it() {
    let key = "sk-SECRET-CANARY-0123456789abcdef";
    let secret = Secret::new(key);
    for at in 1..key.len() {
        // the key repeated to the cap, which then falls `at` characters into the last one:
        // scrubbing shrinks everything before, so the cut end is what would be shown
        let mut body = key.repeat(ERROR_BODY_LIMIT / key.len() + 1).into_bytes();
        let whole = (ERROR_BODY_LIMIT - at) / key.len() * key.len();
        body.truncate(whole + at);
        let out = classified(openai::classify, &secret, 502, body);
        let kept = &key[..at];
        assert!(
            at < 4
                || !out
                    .to_ascii_lowercase()
                    .ends_with(&kept.to_ascii_lowercase()),
            "{at}: {out}"
        );
        assert!(leaks(&out, key, key).is_empty(), "{at}: {out}");
    }
}

#[test]
fn vendor_codes_are_scrubbed_case_folded() {
    let key = "sk-SECRET-CANARY-0123456789abcdef";
    let body = serde_json::json!({"error": {"message": "no", "code": key}}).to_string();
    let err = redact(
        Some(&Secret::new(key)),
        openai::classify(&failure(401, body.into_bytes()), SystemTime::UNIX_EPOCH),
    );
    // the adapter lower-cases codes: the key's exact form is no longer there
    assert_eq!(err.vendor_code.as_deref(), Some("[redacted]"));
}

#[test]
fn keyless_adapters_still_cut_messages_to_length() {
    let err = redact(
        None,
        ProviderError::new(ErrorKind::Server, "z".repeat(10_000)),
    );
    assert_eq!(err.message.chars().count(), MESSAGE_LIMIT + 1);
    assert!(err.message.ends_with('…'));
}
