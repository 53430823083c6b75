//! Errors safe to show: a vendor's classifier applied to a non-2xx answer, the key scrubbed
//! from every message and vendor code, and messages cut to length only after scrubbing.
//! Also what an auth endpoint's answer may carry that no key list knows yet (a token it
//! issued in a body the gateway could not use): [`credential_free`] and [`auth_snippet`].

use std::time::SystemTime;

use super::{HttpFailure, UpstreamResponse, ERROR_BODY_LIMIT};
use crate::error::ProviderError;
use crate::provider::secret::Secret;

/// A vendor's classifier of a non-2xx response (`classify` in each adapter).
pub type Classify = fn(&HttpFailure, SystemTime) -> ProviderError;

/// How an adapter turns transport outcomes into its errors: its own classifier for
/// non-2xx answers, and its key, scrubbed from every message. One per adapter instance.
#[derive(Clone)]
pub struct ErrorPolicy {
    /// The vendor's classifier.
    pub classify: Classify,
    /// The adapter's key, if any.
    pub key: Option<Secret>,
    /// Time for relative Retry-After dates.
    pub clock: crate::clock::Clock,
}

impl std::fmt::Debug for ErrorPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorPolicy").finish_non_exhaustive()
    }
}

impl ErrorPolicy {
    /// `error` with the key scrubbed out.
    #[must_use]
    pub fn redact(&self, error: ProviderError) -> ProviderError {
        redact(self.key.as_ref(), error)
    }

    /// A request's result, checked: transport errors scrubbed; a non-2xx answer read,
    /// classified by the vendor's rules and scrubbed; a 2xx answer passed on.
    ///
    /// # Errors
    /// The classified, scrubbed error.
    pub async fn checked(
        &self,
        sent: Result<UpstreamResponse, ProviderError>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let response = sent.map_err(|e| self.redact(e))?;
        if response.is_success() {
            return Ok(response);
        }
        let failure = response.into_failure().await;
        Err(self.redact((self.classify)(&failure, self.clock.system_time())))
    }
}

/// `error` safe to show: `key` scrubbed from its message and vendor code (in every form
/// [`Secret::scrub`] knows), and only then each cut to length ([`MESSAGE_LIMIT`],
/// [`CODE_LIMIT`] characters), so a cut never leaves the start of a key behind. Every
/// error an adapter returns passes through here (or [`redact_all`]), with or without a key.
#[must_use]
pub fn redact(key: Option<&Secret>, error: ProviderError) -> ProviderError {
    redact_all(key.map(std::slice::from_ref).unwrap_or_default(), error)
}

/// [`redact`] for several credentials (a key, a bearer token, a signer's secrets): every
/// one scrubbed before the one cut to length.
#[must_use]
pub fn redact_all(keys: &[Secret], mut error: ProviderError) -> ProviderError {
    error.message = scrubbed(keys, &error.message, MESSAGE_LIMIT);
    error.vendor_code = error.vendor_code.map(|c| scrubbed(keys, &c, CODE_LIMIT));
    error
}

/// The longest error message an adapter returns, in characters (cut after scrubbing).
pub const MESSAGE_LIMIT: usize = 500;

/// The longest vendor error code an adapter returns, in characters.
pub const CODE_LIMIT: usize = 100;

/// `text` scrubbed of `keys`, then cut to `max` characters. Only its first
/// [`ERROR_BODY_LIMIT`] bytes are read (a stream's error event may be megabytes): a key
/// that limit cuts through is still removed, as a fragment.
fn scrubbed(keys: &[Secret], text: &str, max: usize) -> String {
    let mut text = std::borrow::Cow::Borrowed(head(text, ERROR_BODY_LIMIT));
    for key in keys {
        text = std::borrow::Cow::Owned(key.scrub(&text));
    }
    truncate(&text, max)
}

fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The start of a body for an error message: its first [`ERROR_BODY_LIMIT`] bytes,
/// whitespace collapsed. Not cut shorter: [`redact`] cuts messages after scrubbing them.
#[must_use]
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_LIMIT)]);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` characters, with `…` when cut. Cut only text that was
/// scrubbed already.
#[must_use]
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// What a credential-shaped value is replaced by in [`credential_free`].
pub const MASK: &str = "***";

/// Field names whose values are credentials in an auth endpoint's answer (OAuth 2.0, STS,
/// the container and instance-metadata endpoints), compared ignoring ASCII case, `_` and
/// `-`.
const CREDENTIAL_FIELDS: &[&str] = &[
    "accesstoken",
    "idtoken",
    "refreshtoken",
    "token",
    "sessiontoken",
    "securitytoken",
    "secretaccesskey",
    "clientsecret",
    "secret",
    "assertion",
    "password",
    "apikey",
    "subjecttoken",
    "webidentitytoken",
];

/// `text` (an auth endpoint's answer, or a value taken from one) with every
/// credential-shaped value replaced by [`MASK`]: the value of a field named like a
/// credential (`"access_token": "…"`, `<SessionToken>…</SessionToken>`, `token=…`), and any
/// run of token characters that looks like one whatever its field — a JWT (`eyJ…`), 32 or
/// more characters mixing letters and digits, or 20 or more mixing digits with upper- and
/// lower-case letters. A token the endpoint issued is not known to the caller when the
/// answer is off-spec (a string `expires_in`), so it cannot be scrubbed as a key is: this
/// removes it by its shape. Words, codes (`InvalidIdentityToken`), short ids and numbers
/// are kept.
#[must_use]
pub fn credential_free(text: &str) -> String {
    mask_shapes(&mask_named(text))
}

/// [`snippet`] of an auth endpoint's answer, [`credential_free`].
#[must_use]
pub fn auth_snippet(body: &[u8]) -> String {
    credential_free(&snippet(body))
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Is `name` (an identifier) one of [`CREDENTIAL_FIELDS`]?
fn names_credential(name: &[u8]) -> bool {
    let plain: Vec<u8> = name
        .iter()
        .filter(|b| **b != b'_' && **b != b'-')
        .map(u8::to_ascii_lowercase)
        .collect();
    CREDENTIAL_FIELDS.iter().any(|f| f.as_bytes() == plain)
}

/// The values of fields named like credentials masked.
fn mask_named(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        if !is_ident(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if !names_credential(&bytes[start..i]) {
            continue;
        }
        if let Some((from, to)) = value_after(bytes, i) {
            out.push_str(&text[copied..from]);
            out.push_str(MASK);
            copied = to;
            i = to;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The byte range of the value that follows a field name ending at `at`: after an
/// optional closing quote, a `:` or `=` (spaces around it) or an XML tag's `>`, then the
/// quoted string (escapes skipped) or the bare run up to a delimiter. `None` when no
/// separator follows or the value is empty.
fn value_after(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let skip_spaces = |mut k: usize| {
        while k < bytes.len() && bytes[k] == b' ' {
            k += 1;
        }
        k
    };
    if matches!(bytes.get(at), Some(b'"' | b'\'')) {
        at += 1;
    }
    at = skip_spaces(at);
    let tag = match bytes.get(at) {
        Some(b':' | b'=') => false,
        Some(b'>') => true,
        _ => return None,
    };
    at += 1;
    if !tag {
        at = skip_spaces(at);
    }
    let (from, to) = match bytes.get(at) {
        Some(&q @ (b'"' | b'\'')) => {
            let mut k = at + 1;
            while k < bytes.len() && bytes[k] != q {
                k += if bytes[k] == b'\\' { 2 } else { 1 };
            }
            (at + 1, k.min(bytes.len()))
        }
        _ => {
            let mut k = at;
            let delimiter = |b: u8| b" ,;&<>{}[]\"'".contains(&b) || b.is_ascii_control();
            while k < bytes.len() && !delimiter(bytes[k]) {
                k += 1;
            }
            (at, k)
        }
    };
    (to > from).then_some((from, to))
}

/// Characters a token's run is made of (base64 in both alphabets, JWT dots, percent
/// escapes).
fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+/=_.~%-".contains(&b)
}

/// Does `run` (token characters) look like a credential?
fn token_shaped(run: &[u8]) -> bool {
    let core = run
        .iter()
        .position(|b| b.is_ascii_alphanumeric())
        .map_or(&run[..0], |s| &run[s..]);
    let digit = core.iter().any(u8::is_ascii_digit);
    let upper = core.iter().any(u8::is_ascii_uppercase);
    let lower = core.iter().any(u8::is_ascii_lowercase);
    (core.starts_with(b"eyJ") && core.len() >= 16)
        || (core.len() >= 32 && digit && (upper || lower))
        || (core.len() >= 20 && digit && upper && lower)
}

/// Runs of token characters that look like credentials masked.
fn mask_shapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        if !is_token_char(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_token_char(bytes[i]) {
            i += 1;
        }
        if token_shaped(&bytes[start..i]) {
            out.push_str(&text[copied..start]);
            out.push_str(MASK);
            copied = i;
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod credential_tests {
    use super::*;

    #[test]
    fn named_values_are_masked_in_json_xml_and_forms() {
        let json = r#"{"access_token": "tok-1", "expires_in": "3599", "id_token":"x.y", "token_type": "Bearer"}"#;
        assert_eq!(
            credential_free(json),
            r#"{"access_token": "***", "expires_in": "3599", "id_token":"***", "token_type": "Bearer"}"#
        );
        let escaped = r#"{"refresh_token": "a\"b", "scope": "x"}"#;
        assert_eq!(
            credential_free(escaped),
            r#"{"refresh_token": "***", "scope": "x"}"#
        );
        let xml = "<Credentials><SessionToken>FwoG+/=</SessionToken><SecretAccessKey>wJ/k</SecretAccessKey><Expiration>soon</Expiration></Credentials>";
        assert_eq!(
            credential_free(xml),
            "<Credentials><SessionToken>***</SessionToken><SecretAccessKey>***</SecretAccessKey><Expiration>soon</Expiration></Credentials>"
        );
        assert_eq!(
            credential_free("grant=x&assertion=abc.def&Token = q1"),
            "grant=x&assertion=***&Token = ***"
        );
        assert_eq!(credential_free(r#"{"Token": 42}"#), r#"{"Token": ***}"#);
    }

    #[test]
    fn token_shaped_runs_are_masked_whatever_their_field() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2lnbmF0dXJl";
        let google = "ya29.a0AfB_byC1d2E3f4G5h6I7j8K9l0MnOpQrStUvWxYz";
        let aws = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ==";
        let text = format!("got {jwt}, then {google} and {aws} (expires_in: \"3600\")");
        assert_eq!(
            credential_free(&text),
            "got ***, then *** and *** (expires_in: \"3600\")"
        );
    }

    #[test]
    fn words_codes_and_ids_are_kept() {
        for text in [
            "InvalidIdentityToken: No OpenIDConnect provider found in your account",
            "ExpiredTokenException",
            "invalid_grant: Invalid JWT Signature.",
            "arn:aws:iam::123456789012:role/bedrock-gateway",
            "2026-12-01T22:00:00Z",
            "the tokens expire; token_type Bearer",
            "RequestId c0ffee-1234",
        ] {
            assert_eq!(credential_free(text), text);
        }
    }

    #[test]
    fn an_answer_cut_inside_a_quoted_value_is_masked_to_its_end() {
        assert_eq!(
            credential_free(r#"{"access_token": "ya29.abc"#),
            r#"{"access_token": "***"#
        );
    }
}
