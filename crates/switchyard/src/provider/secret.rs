//! Credentials that cannot leak by accident.
//!
//! Owns [`Secret`]: an upstream API key that prints as `[redacted]` through `Debug` and
//! `Display`, is never serialized (it implements no serde trait), and is read only through
//! [`Secret::expose`] where an adapter builds its auth header. [`Secret::scrub`] removes the
//! key from text that came back from upstream (a proxy that echoes request headers into an
//! error page), so error messages stay safe to show.
//!
//! Echoed text does not always carry the key as it was sent, so scrubbing looks for every
//! form an echo is likely to take, compared ASCII case-insensitively (a proxy may upper- or
//! lower-case what it repeats; vendor codes are lower-cased):
//! - the key as is, and with `/` escaped as `\/` (JSON text shown as is);
//! - percent-encoded, as in an echoed URL or form: every byte outside RFC 3986's
//!   unreserved `A-Z a-z 0-9 - . _ ~` as `%XX`, or every byte but letters and digits;
//! - base64, standard and URL-safe alphabets, at each of the three alignments the key can
//!   have inside a longer encoded value (`Authorization: Basic base64("user:" + key)`):
//!   the characters that depend on the key's bytes alone.
//!
//! And in part, since a cut leaves a key's start behind: wherever a run of [`FRAGMENT`]
//! or more characters starts a form (or ends one), the run is removed for as long as it
//! follows the form; at the very end of a text, a form's first 4 or 5 characters are
//! removed too. So a text cut anywhere through a key, in any of its forms (a body capped
//! at a size, a proxy's own cut), shows at most 3 of its characters. Whatever cuts text
//! to length must do so after scrubbing (`http::redact` does), so its cut shows none.
//!
//! A key's middle alone (cut at both ends before it reached us) is not recognised: test
//! keys and vendor prefixes hold words (`sk-…-upstream-…`) that would otherwise be
//! removed from every message that uses them.
//!
//! Does not know where keys come from: the library never reads environment variables. The
//! server reads the env var a provider's config names and hands the key to that provider
//! only, so an ambient `OPENAI_API_KEY` is never sent to a custom `base_url`.

use std::fmt;
use std::sync::Arc;

/// What a secret prints as.
pub const REDACTED: &str = "[redacted]";

/// The shortest start (or end) of a secret's form that [`Secret::scrub`] removes wherever
/// it appears.
pub const FRAGMENT: usize = 6;

/// The shortest start of a secret's form removed at the very end of a text.
const TAIL_FRAGMENT: usize = 4;

/// An API key (or any credential), redacted everywhere except [`expose`](Self::expose).
///
/// Cloning is cheap (the text is shared), so providers can hold one each without copying.
/// There is deliberately no `PartialEq`: nothing should branch on a key's value.
#[derive(Clone)]
pub struct Secret(Arc<Inner>);

/// The credential and what scrubbing looks for, computed once.
struct Inner {
    value: Box<str>,
    /// Its forms (as is, percent-encoded, base64 at each alignment), lower-cased; base64
    /// forms shorter than [`FRAGMENT`] are left out (too short to tell from other text).
    forms: Vec<Vec<u8>>,
    /// The first [`FRAGMENT`] bytes of each form that long, packed big-endian into a
    /// `u64`, with the form's index.
    starts: Vec<(u64, usize)>,
    /// The last [`FRAGMENT`] bytes of each form that long, likewise.
    ends: Vec<(u64, usize)>,
}

impl Secret {
    /// Wrap a credential.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        let value: String = value.into();
        let forms = if value.is_empty() {
            Vec::new()
        } else {
            forms_of(value.as_bytes())
        };
        let long = || {
            forms
                .iter()
                .enumerate()
                .filter(|(_, f)| f.len() >= FRAGMENT)
        };
        let starts = long().map(|(i, f)| (pack(&f[..FRAGMENT]), i)).collect();
        let ends = long()
            .map(|(i, f)| (pack(&f[f.len() - FRAGMENT..]), i))
            .collect();
        Self(Arc::new(Inner {
            value: value.into_boxed_str(),
            forms,
            starts,
            ends,
        }))
    }

    /// The credential itself. Call only where an auth header is built.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0.value
    }

    /// True when the credential is the empty string (a config mistake worth reporting).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.value.is_empty()
    }

    /// `text` with the credential, in each of its forms and in part (see the module
    /// docs), replaced by `[redacted]`: each run of removed characters becomes one marker.
    ///
    /// Adapters pass every error message through this before it leaves them, and before
    /// it is cut to length. An empty credential scrubs nothing.
    #[must_use]
    pub fn scrub(&self, text: &str) -> String {
        if self.0.forms.is_empty() || text.is_empty() {
            return text.to_owned();
        }
        let lower = text.as_bytes().to_ascii_lowercase();
        let mut hit = vec![false; lower.len()];
        self.mark_runs(&lower, &mut hit);
        for form in self.0.forms.iter().filter(|f| f.len() < FRAGMENT) {
            mark_every(&lower, form, &mut hit);
        }
        self.mark_cut_tail(&lower, &mut hit);
        if hit.contains(&true) {
            replace_runs(text, &hit)
        } else {
            text.to_owned()
        }
    }

    /// Mark every run of `lower` that starts a form (as far as it follows the form) or
    /// ends one (as far back as it does).
    fn mark_runs(&self, lower: &[u8], hit: &mut [bool]) {
        const MASK: u64 = (1 << (8 * FRAGMENT)) - 1;
        let mut window = 0u64; // the last FRAGMENT bytes, rolled in one at a time
        for (end, &b) in lower.iter().enumerate() {
            window = ((window << 8) | u64::from(b)) & MASK;
            if end + 1 < FRAGMENT {
                continue;
            }
            let start = end + 1 - FRAGMENT;
            for &(_, f) in self.0.starts.iter().filter(|(w, _)| *w == window) {
                let form = &self.0.forms[f];
                let n = common_len(lower[start..].iter(), form.iter());
                hit[start..start + n].fill(true);
            }
            for &(_, f) in self.0.ends.iter().filter(|(w, _)| *w == window) {
                let form = &self.0.forms[f];
                let n = common_len(lower[..=end].iter().rev(), form.iter().rev());
                hit[end + 1 - n..=end].fill(true);
            }
        }
    }

    /// Mark the end of `lower` when it is the start of a form, [`TAIL_FRAGMENT`] bytes or
    /// more (longer starts are marked already).
    fn mark_cut_tail(&self, lower: &[u8], hit: &mut [bool]) {
        for form in &self.0.forms {
            let longest = form.len().min(FRAGMENT - 1).min(lower.len());
            if let Some(n) = (TAIL_FRAGMENT..=longest).find(|&n| lower.ends_with(&form[..n])) {
                let len = hit.len();
                hit[len - n..].fill(true);
            }
        }
    }
}

/// The credential's forms, lower-cased and without duplicates.
fn forms_of(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = vec![
        secret.to_vec(),
        String::from_utf8_lossy(secret)
            .replace('/', "\\/")
            .into_bytes(),
        percent_encoded(secret, |b| matches!(b, b'-' | b'.' | b'_' | b'~')),
        percent_encoded(secret, |_| false),
    ];
    forms.extend(base64_forms(secret).filter(|f| f.len() >= FRAGMENT));
    for f in &mut forms {
        f.make_ascii_lowercase();
    }
    forms.sort();
    forms.dedup();
    forms
}

/// Every byte but ASCII letters, digits and those `keep` accepts as `%XX`.
fn percent_encoded(secret: &[u8], keep: fn(u8) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(secret.len() * 3);
    for &b in secret {
        if b.is_ascii_alphanumeric() || keep(b) {
            out.push(b);
        } else {
            out.push(b'%');
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 15)]);
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The base64 characters fixed by the secret's bytes alone, when it starts 0, 1 or 2
/// bytes into a 3-byte group, in the standard and the URL-safe alphabet.
fn base64_forms(secret: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    (0..3).flat_map(move |lead: usize| {
        let mut bytes = vec![0; lead];
        bytes.extend_from_slice(secret);
        let encoded = base64(&bytes);
        // character i holds bits [6i, 6i + 6); the secret's bits are [8 lead, 8 (lead + len))
        let first = (8 * lead).div_ceil(6);
        let end = (8 * bytes.len() / 6).max(first);
        let standard = encoded[first..end].to_vec();
        let url_safe = standard
            .iter()
            .map(|&c| match c {
                b'+' => b'-',
                b'/' => b'_',
                c => c,
            })
            .collect();
        [standard, url_safe]
    })
}

/// Standard base64 without padding (a final partial character is included).
fn base64(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let at = |i: usize| u32::from(group.get(i).copied().unwrap_or(0));
        let n = (at(0) << 16) | (at(1) << 8) | at(2);
        for k in 0..=group.len() {
            out.push(BASE64[((n >> (18 - 6 * k)) & 63) as usize]);
        }
    }
    out
}

/// A window of [`FRAGMENT`] bytes as one number.
fn pack(window: &[u8]) -> u64 {
    window.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
}

/// How many items the two sequences share before they differ.
fn common_len<'a>(a: impl Iterator<Item = &'a u8>, b: impl Iterator<Item = &'a u8>) -> usize {
    a.zip(b).take_while(|(x, y)| x == y).count()
}

/// Mark every occurrence of `needle` in `hay`.
fn mark_every(hay: &[u8], needle: &[u8], hit: &mut [bool]) {
    if needle.is_empty() {
        return;
    }
    for (i, window) in hay.windows(needle.len()).enumerate() {
        if window == needle {
            hit[i..i + needle.len()].fill(true);
        }
    }
}

/// `text` with each run of characters that have a marked byte replaced by [`REDACTED`].
fn replace_runs(text: &str, hit: &[bool]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for (i, c) in text.char_indices() {
        if hit[i..i + c.len_utf8()].contains(&true) {
            if !in_run {
                out.push_str(REDACTED);
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_key() {
        let s = Secret::new("sk-live-123");
        assert_eq!(format!("{s}"), "[redacted]");
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some([redacted])");
        assert_eq!(s.expose(), "sk-live-123");
    }

    #[test]
    fn scrub_removes_every_occurrence() {
        let s = Secret::new("sk-live-123");
        assert_eq!(
            s.scrub("bad key sk-live-123 (sk-live-123)"),
            "bad key [redacted] ([redacted])"
        );
        assert_eq!(s.scrub("nothing here"), "nothing here");
        assert_eq!(Secret::new("").scrub("text"), "text");
        assert!(Secret::new("").is_empty());
    }

    #[test]
    fn scrub_removes_case_folded_encoded_and_partial_forms() {
        let s = Secret::new("sk-Live/Key+42");
        assert_eq!(s.scrub("echo SK-LIVE/KEY+42!"), "echo [redacted]!");
        assert_eq!(
            s.scrub("url ?k=sk-Live%2FKey%2b42&x"),
            "url ?k=[redacted]&x"
        );
        // base64("u:sk-Live/Key+42"), as in a Basic auth header
        assert_eq!(
            s.scrub("Basic dTpzay1MaXZlL0tleSs0Mg=="),
            "Basic dTp[redacted]g=="
        );
        assert_eq!(s.scrub("cut at sk-Liv"), "cut at [redacted]");
        assert_eq!(s.scrub("cut at sk-L"), "cut at [redacted]");
        assert_eq!(
            s.scrub("a Key+42 tail"),
            "a [redacted] tail",
            "the key's end"
        );
        assert_eq!(
            s.scrub("the sk-Live/K… page"),
            "the [redacted]… page",
            "its start"
        );
        assert_eq!(s.scrub("sk-L in the middle"), "sk-L in the middle");
        assert_eq!(
            s.scrub(r#"{"k":"sk-Live\/Key+42"}"#),
            r#"{"k":"[redacted]"}"#
        );
    }

    #[test]
    fn words_inside_a_key_stay_in_other_text() {
        let s = Secret::new("sk-e2e-upstream-9f2c71d04be3a5");
        let text = "the upstream stream stalled";
        assert_eq!(s.scrub(text), text);
    }

    #[test]
    fn a_short_secret_is_removed_whole_in_any_case() {
        let s = Secret::new("pw1");
        assert_eq!(
            s.scrub("with PW1 and pw1"),
            "with [redacted] and [redacted]"
        );
        assert_eq!(s.scrub("pw"), "pw");
    }

    #[test]
    fn non_ascii_text_around_a_key_stays_valid() {
        let s = Secret::new("sk-live-123");
        assert_eq!(s.scrub("é sk-live-123 ü"), "é [redacted] ü");
    }

    #[test]
    fn base64_forms_are_the_characters_the_secret_fixes() {
        // "abc" encodes to YWJj; after one byte of lead ("\0abc" -> AGFiYw), the chars
        // wholly inside the secret's bits are FiY
        let forms: Vec<_> = base64_forms(b"abc").collect();
        assert_eq!(forms[0], b"YWJj");
        assert_eq!(forms[2], b"FiY");
        assert_eq!(base64(b"\0\0abc"), b"AABhYmM");
    }
}
