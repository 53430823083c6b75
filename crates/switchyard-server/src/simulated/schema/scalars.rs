//! Strings, integers and numbers within a schema's bounds: lengths and formats, minimums
//! and maximums (inclusive or exclusive, in either draft's spelling), `multipleOf`.

use serde_json::{Map, Value};

use super::{first, MAX_STRING_CHARS};
use crate::simulated::seeded::Seeded;

/// Words plain strings are made of.
const WORDS: [&str; 32] = [
    "amber", "birch", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lumen", "maple", "nimbus", "onyx", "prairie", "quartz", "raven", "sierra",
    "tundra", "umber", "violet", "willow", "xenon", "yarrow", "zephyr", "aurora", "borealis",
    "cobalt", "dune", "echo", "flint",
];

/// The largest integer every JSON reader holds exactly (2^53 - 1).
const SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;
/// How far from a one-sided bound values go when the other side is open.
const SPAN: f64 = 100.0;

/// One word.
pub(super) fn word(rng: &mut Seeded) -> &'static str {
    rng.pick(&WORDS).copied().unwrap_or("amber")
}

/// A string for the schema: its `format`'s shape, else two words; padded to `minLength`
/// and cut to `maxLength` (in characters). True when `minLength` was over
/// [`MAX_STRING_CHARS`] (the string is then shorter than asked).
pub(super) fn string(parts: &[&Map<String, Value>], rng: &mut Seeded) -> (String, bool) {
    let length = |key| {
        let n = first(parts, key)?.as_f64()?;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // saturating
        (n.is_finite() && n >= 0.0).then(|| n.ceil() as usize)
    };
    let min = length("minLength").unwrap_or(0);
    let max = length("maxLength").unwrap_or(usize::MAX);
    let mut s = first(parts, "format")
        .and_then(Value::as_str)
        .and_then(|f| formatted(f, rng))
        .unwrap_or_else(|| format!("{} {}", word(rng), word(rng)));
    let want = min.min(MAX_STRING_CHARS);
    let mut chars = s.chars().count();
    while chars < want {
        let w = word(rng);
        s.push(' ');
        s.push_str(w);
        chars += 1 + w.len();
    }
    let keep = max.min(MAX_STRING_CHARS);
    if chars > keep {
        s = s.chars().take(keep).collect();
    }
    (s, min > MAX_STRING_CHARS)
}

/// A value of a string `format`, or `None` for a format not modelled.
fn formatted(format: &str, rng: &mut Seeded) -> Option<String> {
    let mut n = |k: usize| rng.below(k);
    Some(match format {
        "date-time" => format!(
            "20{:02}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            20 + n(8),
            1 + n(12),
            1 + n(28),
            n(24),
            n(60),
            n(60)
        ),
        "date" => format!("20{:02}-{:02}-{:02}", 20 + n(8), 1 + n(12), 1 + n(28)),
        "time" => format!("{:02}:{:02}:{:02}Z", n(24), n(60), n(60)),
        "duration" => format!("PT{}M", 1 + n(90)),
        "email" | "idn-email" => format!("{}@example.com", word(rng)),
        "hostname" | "idn-hostname" => format!("{}.example.com", word(rng)),
        "uri" | "url" | "iri" | "uri-reference" | "iri-reference" => {
            format!("https://example.com/{}", word(rng))
        }
        "uri-template" => "https://example.com/{id}".to_owned(),
        "json-pointer" => format!("/{}", word(rng)),
        "ipv4" => format!("192.0.2.{}", 1 + n(254)),
        "ipv6" => format!("2001:db8::{:x}", 1 + n(0xfffe)),
        "uuid" => uuid(rng),
        "regex" => "^[a-z]+$".to_owned(),
        "byte" => "c3dpdGNoeWFyZA==".to_owned(),
        _ => return None,
    })
}

/// A version-4 UUID's text.
fn uuid(rng: &mut Seeded) -> String {
    let (a, b) = (rng.next_u64(), rng.next_u64());
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x4000;
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// A bound: the value and whether it is exclusive. Reads `minimum` / `maximum` with
/// draft 4's boolean `exclusiveMinimum` / `exclusiveMaximum`, and the later numeric ones.
fn bound(parts: &[&Map<String, Value>], inclusive: &str, exclusive: &str) -> Option<(f64, bool)> {
    let finite = |v: &Value| v.as_f64().filter(|f| f.is_finite());
    let plain = first(parts, inclusive).and_then(finite);
    match first(parts, exclusive) {
        Some(Value::Bool(true)) => plain.map(|v| (v, true)),
        Some(v) => match (finite(v), plain) {
            // both given: the tighter one holds (`exclusive` is the lower when equal)
            (Some(e), Some(p)) if inclusive == "minimum" && p > e => Some((p, false)),
            (Some(e), Some(p)) if inclusive == "maximum" && p < e => Some((p, false)),
            (Some(e), _) => Some((e, true)),
            (None, p) => p.map(|v| (v, false)),
        },
        None => plain.map(|v| (v, false)),
    }
}

/// An integer within the bounds (and a multiple of `multipleOf` when it is whole).
pub(super) fn integer(parts: &[&Map<String, Value>], rng: &mut Seeded) -> Value {
    let lo = bound(parts, "minimum", "exclusiveMinimum").map(|(v, ex)| {
        if ex {
            v.floor() + 1.0
        } else {
            v.ceil()
        }
    });
    let hi = bound(parts, "maximum", "exclusiveMaximum").map(|(v, ex)| {
        if ex {
            v.ceil() - 1.0
        } else {
            v.floor()
        }
    });
    let (lo, hi) = window(lo, hi, 1.0);
    let (lo, hi) = (lo.max(-SAFE_INTEGER), hi.min(SAFE_INTEGER));
    let step = first(parts, "multipleOf")
        .and_then(Value::as_f64)
        .filter(|m| m.is_finite() && *m >= 1.0 && m.fract() == 0.0)
        .unwrap_or(1.0);
    let (k_lo, k_hi) = ((lo / step).ceil(), (hi / step).floor());
    let v = if k_lo > k_hi {
        lo
    } else {
        (k_lo + (rng.unit() * (k_hi - k_lo + 1.0)).floor().min(k_hi - k_lo)) * step
    };
    #[allow(clippy::cast_possible_truncation)] // within ±2^53, whole
    Value::from(v.clamp(-SAFE_INTEGER, SAFE_INTEGER) as i64)
}

/// A number within the bounds, with two decimals where they fit (a multiple of
/// `multipleOf` when one is given).
pub(super) fn number(parts: &[&Map<String, Value>], rng: &mut Seeded) -> Value {
    let low = bound(parts, "minimum", "exclusiveMinimum");
    let high = bound(parts, "maximum", "exclusiveMaximum");
    let (lo, hi) = window(low.map(|b| b.0), high.map(|b| b.0), 0.0);
    let inside = |v: f64| {
        let above = low.is_none_or(|(b, ex)| if ex { v > b } else { v >= b });
        let below = high.is_none_or(|(b, ex)| if ex { v < b } else { v <= b });
        above && below
    };
    let step = first(parts, "multipleOf")
        .and_then(Value::as_f64)
        .filter(|m| m.is_finite() && *m > 0.0);
    let v = match step {
        Some(m) => {
            let (k_lo, k_hi) = ((lo / m).ceil(), (hi / m).floor());
            let k = k_lo + (rng.unit() * (k_hi - k_lo + 1.0)).floor().min(k_hi - k_lo);
            (0..3)
                .map(|d| (k + f64::from(d)) * m)
                .find(|v| inside(*v))
                .unwrap_or(k * m)
        }
        None => {
            let raw = lo + rng.unit() * (hi - lo);
            let round = (raw * 100.0).round() / 100.0;
            [round, raw, (lo + hi) / 2.0]
                .into_iter()
                .find(|v| inside(*v))
                .unwrap_or(raw)
        }
    };
    serde_json::Number::from_f64(v).map_or(Value::from(0), Value::Number)
}

/// The range values are drawn from: the bounds given, [`SPAN`] beyond a one-sided one,
/// `[open, open + SPAN]` when neither is (and the low end when they cross).
fn window(lo: Option<f64>, hi: Option<f64>, open: f64) -> (f64, f64) {
    match (lo, hi) {
        (Some(l), Some(h)) if l <= h => (l, h),
        (Some(l), Some(_)) => (l, l),
        (Some(l), None) => (l, l + SPAN),
        (None, Some(h)) => (h - SPAN, h),
        (None, None) => (open, open + SPAN),
    }
}
