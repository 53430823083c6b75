//! `[threads]`: Anthropic's message threads (`anthropic-beta: message-threads-2026-08-12`)
//! as the gateway holds them — the schema, its validation, and the limits the Messages
//! dialect runs with (`crate::http::dialects::messages`, `docs/dialects.md`).

use std::time::Duration;

use serde::Deserialize;
use switchyard::state::KV_MEMORY_BYTES;

use super::{duration, Config, Problems};

/// `[threads]`: how long a thread can be continued and how large one may grow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadsToml {
    /// How long a thread can be continued after its last answered turn (default `"1h"`).
    pub ttl: Option<String>,
    /// The largest thread: its `system`, `tools`, every message and every answer, as JSON
    /// (default 8 MiB). A turn that would grow a thread past it is refused by name.
    pub max_thread_bytes: Option<usize>,
}

/// The limits on the threads the gateway holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadLimits {
    /// How long a thread lives after its last answered turn (each turn starts it anew).
    pub ttl: Duration,
    /// The largest thread, as stored.
    pub max_bytes: usize,
}

impl Default for ThreadLimits {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
            max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// `[threads]` as the server uses it (defaults for what is unset or invalid; `validate`
/// reports the invalid).
#[must_use]
pub fn thread_limits(config: &Config) -> ThreadLimits {
    let mut out = ThreadLimits::default();
    if let Some(t) = &config.threads {
        if let Some(ttl) = t
            .ttl
            .as_deref()
            .and_then(|t| duration(t).ok())
            .filter(|d| !d.is_zero())
        {
            out.ttl = ttl;
        }
        if let Some(bytes) = t
            .max_thread_bytes
            .filter(|b| (1..=KV_MEMORY_BYTES).contains(b))
        {
            out.max_bytes = bytes;
        }
    }
    out
}

/// Every problem in `[threads]`.
pub(super) fn validate(threads: Option<&ThreadsToml>, p: &mut Problems) {
    let Some(t) = threads else {
        return;
    };
    p.duration("threads.ttl", t.ttl.as_deref());
    match t.max_thread_bytes {
        Some(0) => p.add("threads.max_thread_bytes", "must be greater than zero"),
        Some(n) if n > KV_MEMORY_BYTES => p.add(
            "threads.max_thread_bytes",
            format!(
                "{n} is more than the memory store holds in all ({KV_MEMORY_BYTES} bytes): \
                 no such thread could be kept"
            ),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn problems(text: &str) -> Vec<String> {
        parse(text, "test.toml")
            .err()
            .map(|e| e.problems)
            .unwrap_or_default()
    }

    #[test]
    fn the_example_sets_the_defaults_and_nothing_set_is_the_same() {
        let text = include_str!("../../../../switchyard.example.toml");
        let config = parse(text, "switchyard.example.toml").unwrap();
        assert_eq!(thread_limits(&config), ThreadLimits::default());
        assert_eq!(
            thread_limits(&toml::from_str("").unwrap()),
            ThreadLimits::default()
        );
        let set: Config =
            toml::from_str("[threads]\nttl = \"5m\"\nmax_thread_bytes = 1024\n").unwrap();
        let limits = thread_limits(&set);
        assert_eq!(limits.ttl, Duration::from_secs(300));
        assert_eq!(limits.max_bytes, 1024);
    }

    #[test]
    fn bad_settings_are_named() {
        let p = problems("[threads]\nttl = \"forever\"\nmax_thread_bytes = 0\n");
        assert!(
            p.iter()
                .any(|x| x.starts_with("threads.ttl: \"forever\" is not a duration")),
            "{p:?}"
        );
        assert!(
            p.contains(&"threads.max_thread_bytes: must be greater than zero".to_owned()),
            "{p:?}"
        );
        let p = problems("[threads]\nttl = \"0s\"\nmax_thread_bytes = 1099511627776\n");
        assert!(
            p.contains(&"threads.ttl: must be greater than zero".to_owned()),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|x| x.starts_with("threads.max_thread_bytes: 1099511627776 is more than")),
            "{p:?}"
        );
        let p = problems("[threads]\nmax_bytes = 10\n");
        assert!(p[0].contains("unknown field `max_bytes`"), "{p:?}");
    }
}
