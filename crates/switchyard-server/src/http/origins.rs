//! The browser origins `[server] allowed_origins` may list, and how an entry is checked.
//!
//! Owns the list's normal form and the rule for a valid entry; the request guard
//! (`crate::http::guard`) decides what a request's `Origin` gets.

/// The origins `[server] allowed_origins` lists (lower-cased, without a trailing `/`).
#[derive(Debug, Clone, Default)]
pub struct AllowedOrigins(Vec<String>);

impl AllowedOrigins {
    /// From the configured list (validated by `config`; see [`origin_problem`]).
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

/// Why `origin` cannot be an `allowed_origins` entry, if it cannot: an origin is a scheme
/// (`http` or `https`), a host and an optional port, like `http://localhost:3000`.
#[must_use]
pub fn origin_problem(origin: &str) -> Option<String> {
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    let ok = authority.is_some_and(|a| {
        let a = a.strip_suffix('/').unwrap_or(a);
        !a.is_empty() && !a.contains(['/', '?', '#', '@', '*', ' '])
    });
    (!ok).then(|| {
        format!(
            "{origin:?} is not an origin like \"http://localhost:3000\" (http or https, a host and an optional port; no path, no wildcard)"
        )
    })
}
