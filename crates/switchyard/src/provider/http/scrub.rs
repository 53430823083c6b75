//! Errors safe to show: a vendor's classifier applied to a non-2xx answer, the key scrubbed
//! from every message and vendor code, and messages cut to length only after scrubbing.

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
