//! Credentials that cannot leak by accident.
//!
//! Owns [`Secret`]: an upstream API key that prints as `[redacted]` through `Debug` and
//! `Display`, is never serialized (it implements no serde trait), and is read only through
//! [`Secret::expose`] where an adapter builds its auth header. [`Secret::scrub`] removes the
//! key from text that came back from upstream (a proxy that echoes request headers into an
//! error page), so error messages stay safe to show.
//!
//! Does not know where keys come from: the library never reads environment variables. The
//! server reads the env var a provider's config names and hands the key to that provider
//! only, so an ambient `OPENAI_API_KEY` is never sent to a custom `base_url`.

use std::fmt;
use std::sync::Arc;

/// What a secret prints as.
pub const REDACTED: &str = "[redacted]";

/// An API key (or any credential), redacted everywhere except [`expose`](Self::expose).
///
/// Cloning is cheap (the text is shared), so providers can hold one each without copying.
/// There is deliberately no `PartialEq`: nothing should branch on a key's value.
#[derive(Clone)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wrap a credential.
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Self(Arc::from(value.into()))
    }

    /// The credential itself. Call only where an auth header is built.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the credential is the empty string (a config mistake worth reporting).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of the credential replaced by `[redacted]`.
    ///
    /// Adapters pass every error message through this before it leaves them. An empty
    /// credential scrubs nothing.
    #[must_use]
    pub fn scrub(&self, text: &str) -> String {
        if self.0.is_empty() || !text.contains(&*self.0) {
            return text.to_owned();
        }
        text.replace(&*self.0, REDACTED)
    }
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
}
