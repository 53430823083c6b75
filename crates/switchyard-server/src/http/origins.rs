//! The browser origins `[server] allowed_origins` may list, and how an entry is checked.
//!
//! Owns the list's normal form; the rule for a valid entry is config's
//! (`crate::config::origin_problem`), and the request guard (`crate::http::guard`) decides
//! what a request's `Origin` gets.

/// The origins `[server] allowed_origins` lists (lower-cased, without a trailing `/`).
#[derive(Debug, Clone, Default)]
pub struct AllowedOrigins(Vec<String>);

impl AllowedOrigins {
    /// From the configured list (validated by `crate::config::origin_problem`).
    #[must_use]
    pub fn new(origins: &[String]) -> Self {
        Self(
            origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        )
    }

    /// Whether `origin` is one of them (ASCII case ignored).
    pub(crate) fn allows(&self, origin: &str) -> bool {
        self.0.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }
}
