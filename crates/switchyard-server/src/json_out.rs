//! JSON written by hand into a byte buffer, byte for byte as `serde_json`'s compact writer
//! would write the same data: strings escaped as it escapes them (`\"`, `\\`, `\b`, `\t`,
//! `\n`, `\f`, `\r`, other control bytes as `\u00xx` in lower-case hex; everything else,
//! `/`, DEL and non-ASCII included, as is), integers and floats through its own formatter
//! (`itoa`, `ryu`; a float that is not finite is `null`).
//!
//! For the answers and lines every request writes (the chat and Messages replies, the
//! `switchyard` trail and its attempts, the request log's line): keys are written as
//! constant bytes, with no map or `Serialize` machinery between the data and the buffer.
//! Values the gateway does not model (log probabilities, OpenAI's extras, tool arguments)
//! are handed to `serde_json` as before. The tests here and beside each writer compare
//! its bytes with `serde_json`'s for the same data.

use std::time::Duration;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter as _};
use switchyard::observe::{Attempt, Outcome};

/// A JSON string: `s` escaped as `serde_json` escapes it, in quotes.
pub(crate) fn str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escaped(out, s);
    out.push(b'"');
}

/// `s`'s escaped contents, without quotes.
pub(crate) fn escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    loop {
        let i = switchyard::json_text::plain_run(bytes, start);
        out.extend_from_slice(&bytes[start..i]);
        let Some(&b) = bytes.get(i) else {
            return;
        };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ]);
            }
        }
        start = i + 1;
    }
}

/// A string or `null`.
pub(crate) fn opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => str(out, s),
        None => null(out),
    }
}

/// `null`.
pub(crate) fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"null");
}

/// `true` or `false`.
pub(crate) fn bool(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// An unsigned integer.
pub(crate) fn u64(out: &mut Vec<u8>, n: u64) {
    // writing into a `Vec` cannot fail
    let _ = CompactFormatter.write_u64(out, n);
}

/// A float as `serde_json` writes one: shortest round-trip digits, `null` when not finite.
pub(crate) fn f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        let _ = CompactFormatter.write_f64(out, x);
    } else {
        null(out);
    }
}

/// A float or `null`.
pub(crate) fn opt_f64(out: &mut Vec<u8>, x: Option<f64>) {
    match x {
        Some(x) => f64(out, x),
        None => null(out),
    }
}

/// A list of strings.
pub(crate) fn strs<S: AsRef<str>>(out: &mut Vec<u8>, list: &[S]) {
    out.push(b'[');
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        str(out, s.as_ref());
    }
    out.push(b']');
}

/// Anything else, through `serde_json` (what the gateway passes on without modelling it).
/// A value that cannot be written (a map with non-string keys, which these never are)
/// leaves `null`.
pub(crate) fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.truncate(start);
        null(out);
    }
}

/// The attempt trail, as [`Attempt`]'s own `Serialize` writes it.
pub(crate) fn attempts(out: &mut Vec<u8>, list: &[Attempt]) {
    out.push(b'[');
    for (i, a) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        attempt(out, a);
    }
    out.push(b']');
}

/// One attempt, as its derived `Serialize` writes it (the outcome flattened after
/// `attempt`, its tag first).
pub(crate) fn attempt(out: &mut Vec<u8>, a: &Attempt) {
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    out.extend_from_slice(b"{\"provider\":");
    str(out, &a.provider);
    out.extend_from_slice(b",\"model\":");
    str(out, &a.model);
    out.extend_from_slice(b",\"attempt\":");
    u64(out, u64::from(a.attempt));
    match &a.outcome {
        Outcome::Success => out.extend_from_slice(b",\"outcome\":\"success\""),
        Outcome::Failed { kind, message } => {
            out.extend_from_slice(b",\"outcome\":\"failed\",\"kind\":");
            str(out, kind.label());
            out.extend_from_slice(b",\"message\":");
            str(out, message);
        }
        Outcome::Skipped { reason, fields } => {
            out.extend_from_slice(b",\"outcome\":\"skipped\",\"reason\":");
            str(out, reason.label());
            if !fields.is_empty() {
                out.extend_from_slice(b",\"fields\":");
                strs(out, fields);
            }
        }
        Outcome::Rescue { method } => {
            out.extend_from_slice(b",\"outcome\":\"rescue\",\"method\":");
            str(out, method);
        }
        Outcome::Diverged { at, sent } => {
            out.extend_from_slice(b",\"outcome\":\"diverged\",\"at\":");
            u64(out, *at);
            out.extend_from_slice(b",\"sent\":");
            u64(out, *sent);
        }
        Outcome::Declined { kind, message } => {
            out.extend_from_slice(b",\"outcome\":\"declined\",\"kind\":");
            str(out, kind.label());
            out.extend_from_slice(b",\"message\":");
            str(out, message);
        }
    }
    if let Some(status) = a.status {
        out.extend_from_slice(b",\"status\":");
        u64(out, u64::from(status));
    }
    out.extend_from_slice(b",\"latency_ms\":");
    f64(out, ms(&a.latency));
    if let Some(start) = &a.start {
        out.extend_from_slice(b",\"start_ms\":");
        f64(out, ms(start));
    }
    if a.probe {
        out.extend_from_slice(b",\"probe\":true");
    }
    out.push(b'}');
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Strings with every kind of byte `serde_json` treats apart.
    pub(crate) fn awkward_strings() -> Vec<String> {
        let mut list: Vec<String> = [
            "",
            "plain",
            "quote \" and backslash \\ and slash /",
            "tab\tnew\nline\r\u{8}\u{c}",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "é ü — 漢字 🦀 \u{2028}\u{2029}",
            "\\u0041 is not an escape here",
            "trailing \\",
            "\"",
        ]
        .map(str::to_owned)
        .to_vec();
        list.push((0u8..=0x7f).map(char::from).collect());
        list.push((0u8..=0x7f).rev().map(char::from).collect());
        list
    }

    /// Attempts of every outcome, with and without their optional fields.
    pub(crate) fn every_attempt() -> Vec<Attempt> {
        use switchyard::trail::SkipReason;
        use switchyard::ErrorKind;
        let mut list = Vec::new();
        let mut a = Attempt::skipped("p\"1", "m\u{1}é", SkipReason::CircuitOpen);
        list.push(a.clone());
        a.outcome = Outcome::Skipped {
            reason: SkipReason::CannotHonour,
            fields: vec!["seed".to_owned(), "log\nprobs".to_owned()],
        };
        list.push(a.clone());
        for kind in ErrorKind::ALL {
            list.push(Attempt {
                outcome: Outcome::Failed {
                    kind,
                    message: "upstream said \"no\"\t🦀".to_owned(),
                },
                status: Some(503),
                attempt: 2,
                latency: Duration::from_micros(1_234_567),
                start: Some(Duration::from_nanos(987_654_321)),
                ..a.clone()
            });
            list.push(Attempt {
                outcome: Outcome::Declined {
                    kind,
                    message: String::new(),
                },
                ..a.clone()
            });
        }
        for method in ["continuation", "restart"] {
            list.push(Attempt {
                outcome: Outcome::Rescue {
                    method: method.to_owned(),
                },
                probe: true,
                ..a.clone()
            });
        }
        list.push(Attempt {
            outcome: Outcome::Diverged { at: 10, sent: 16 },
            ..a.clone()
        });
        list.push(Attempt {
            outcome: Outcome::Success,
            attempt: 1,
            status: None,
            latency: Duration::from_nanos(333),
            start: Some(Duration::ZERO),
            probe: false,
            ..a
        });
        list
    }

    /// Answers with every optional part of a reply present and absent, and text with
    /// every escape.
    pub(crate) fn answers() -> Vec<switchyard::ChatResponse> {
        use switchyard::chat::{
            CacheNote, CacheStatus, Choice, Field, FinishReason, Thinking, ToolCall,
        };
        use switchyard::{Money, Usage};
        let plain = switchyard::ChatResponse {
            text: "Hello".to_owned(),
            provider: "primary".to_owned(),
            model: "bench-model".to_owned(),
            finish_reason: Some(FinishReason::Stop),
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 5,
                ..Usage::default()
            }),
            cost: Some(Money::from_usd(0.000_123)),
            attempts: vec![every_attempt().pop().unwrap()],
            ..Default::default()
        };
        let mut list = vec![switchyard::ChatResponse::default(), plain.clone()];
        for text in awkward_strings() {
            list.push(switchyard::ChatResponse {
                text: text.clone(),
                refusal: text.clone(),
                model: text.clone(),
                provider: text.clone(),
                system_fingerprint: Some(text.clone()),
                finish_reason: Some(FinishReason::Other(text.clone())),
                thinking: vec![
                    Thinking {
                        text: text.clone(),
                        signature: Some(text.clone()),
                        redacted: None,
                    },
                    Thinking {
                        text: String::new(),
                        signature: None,
                        redacted: Some(text.clone()),
                    },
                ],
                tool_calls: vec![ToolCall {
                    id: text.clone(),
                    name: text.clone(),
                    arguments: text.clone(),
                }],
                ..plain.clone()
            });
        }
        list.push(switchyard::ChatResponse {
            text: String::new(),
            refusal: "I can't".to_owned(),
            failed_over: true,
            usage: Some(Usage {
                input_tokens: u64::MAX,
                output_tokens: 7,
                cached_input_tokens: 3,
                cache_write_tokens: 2,
                cache_write_1h_tokens: 1,
                reasoning_tokens: 4,
            }),
            cost: None,
            attempts: every_attempt(),
            max_tokens_applied: Some(4096),
            logprobs: Some(serde_json::json!({"content": [{"token": "a\"b", "logprob": -0.5}]})),
            alternatives: vec![
                Choice {
                    text: "second é".to_owned(),
                    finish_reason: Some(FinishReason::Length),
                    ..Choice::default()
                },
                Choice {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".to_owned(),
                        name: "f".to_owned(),
                        arguments: "{\"a\":1}".to_owned(),
                    }],
                    finish_reason: Some(FinishReason::ToolCalls),
                    logprobs: Some(serde_json::json!(null)),
                    ..Choice::default()
                },
                Choice::default(),
            ],
            ignored: [Field::Seed, Field::Logprobs].into_iter().collect(),
            dropped: [Field::TopK].into_iter().collect(),
            native: Some(std::sync::Arc::new(serde_json::json!({"choices": [
                {"index": 0, "message": {"audio": {"id": "au\u{1}"}, "annotations": [1]}},
                {"index": 1, "message": {"function_call": {"name": "g"}}},
                {"index": 2, "message": {"audio": null}},
            ]}))),
            cache: Some(CacheNote {
                status: CacheStatus::Hit,
                age_s: Some(12),
                saved_usd: Some(Money::from_usd(0.5)),
                reason: Some("no-store"),
            }),
            ..plain.clone()
        });
        for status in [CacheStatus::Miss, CacheStatus::Bypass, CacheStatus::Stale] {
            list.push(switchyard::ChatResponse {
                cache: Some(CacheNote {
                    status,
                    age_s: None,
                    saved_usd: None,
                    reason: None,
                }),
                cost: Some(Money::from_usd(f64::MAX)),
                ..plain.clone()
            });
        }
        list
    }

    #[test]
    fn attempts_are_written_as_serde_writes_them() {
        let list = every_attempt();
        for a in &list {
            assert_eq!(ours(|o| attempt(o, a)), serde_json::to_string(a).unwrap());
        }
        assert_eq!(
            ours(|o| attempts(o, &list)),
            serde_json::to_string(&list).unwrap()
        );
        assert_eq!(ours(|o| attempts(o, &[])), "[]");
    }

    fn ours(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        for s in awkward_strings() {
            assert_eq!(ours(|o| str(o, &s)), serde_json::to_string(&s).unwrap());
        }
        // every character below 0x80 at every place of a string of up to 20 (the run is
        // read eight bytes at a time), and one of more than one byte beside it
        for b in 0u8..=0x7f {
            for len in 1..=20 {
                for at in 0..len {
                    let mut s: String = (0..len)
                        .map(|k| char::from(b"abcdefghijklmnopqrstuvwxyz"[k % 26]))
                        .collect();
                    s.replace_range(at..=at, &char::from(b).to_string());
                    assert_eq!(ours(|o| str(o, &s)), serde_json::to_string(&s).unwrap());
                    s.push('é');
                    s.push(char::from(b));
                    assert_eq!(ours(|o| str(o, &s)), serde_json::to_string(&s).unwrap());
                }
            }
        }
        for b in 0u8..=0x7f {
            let s = format!("a{}b", char::from(b));
            assert_eq!(ours(|o| str(o, &s)), serde_json::to_string(&s).unwrap());
            let s = char::from(b).to_string();
            assert_eq!(ours(|o| str(o, &s)), serde_json::to_string(&s).unwrap());
        }
    }

    #[test]
    fn numbers_and_nulls_are_serde_jsons() {
        for n in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(ours(|o| u64(o, n)), serde_json::to_string(&n).unwrap());
        }
        for x in [
            0.0,
            -0.0,
            1.0,
            0.1,
            1.5e-7,
            0.000_123,
            123_456.789,
            1e21,
            1e300,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(ours(|o| f64(o, x)), serde_json::to_string(&x).unwrap());
            assert_eq!(
                ours(|o| opt_f64(o, Some(x))),
                serde_json::to_string(&Some(x)).unwrap()
            );
        }
        assert_eq!(ours(|o| opt_f64(o, None)), "null");
        assert_eq!(ours(|o| opt_str(o, None)), "null");
        assert_eq!(ours(|o| bool(o, true)), "true");
        assert_eq!(ours(|o| bool(o, false)), "false");
        let list = awkward_strings();
        assert_eq!(
            ours(|o| strs(o, &list)),
            serde_json::to_string(&list).unwrap()
        );
        assert_eq!(ours(|o| strs::<&str>(o, &[])), "[]");
    }
}
