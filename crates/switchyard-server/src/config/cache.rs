//! The response cache's settings: a route's `cache = { ... }` and the `[cache]` section —
//! the schema, its validation, and the [`Cache`] the server runs with (`crate::cache`,
//! docs/cache.md).

use std::collections::HashMap;

use serde::Deserialize;

use super::{duration, Config, Problems};
use crate::cache::{Backend, Cache, Policy, Scope, DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRY_BYTES};

/// A route's `cache = { ttl = "10m", stale_if_error = "24h", scope = "key" }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteCacheToml {
    /// How long an answer is served again as fresh (required).
    pub ttl: Option<String>,
    /// How long after `ttl` an answer may still be served when every provider of the route
    /// fails (default: never).
    pub stale_if_error: Option<String>,
    /// `key` (default: each client key reads only its own entries) or `route` (every caller
    /// of the route shares them).
    pub scope: Option<String>,
    /// Also cache requests sampled above temperature zero without a `seed` (default false:
    /// those bypass the cache, since asking again would give another answer).
    pub any_temperature: Option<bool>,
    /// Also store answers that call tools (default false).
    pub tool_calls: Option<bool>,
}

/// `[cache]`: where cached answers are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheToml {
    /// `memory` (default: in this process, least recently used first out) or `redis` (the
    /// `[state]` Redis, shared by a fleet; needs `[state] backend = "redis"`).
    pub backend: Option<String>,
    /// The memory backend's bound on what entries cost, in bytes (default 256 MiB).
    pub max_bytes: Option<usize>,
    /// The largest answer kept, as stored (default 1 MiB): a larger one is answered, not kept.
    pub max_entry_bytes: Option<usize>,
}

/// Every problem in the routes' `cache` and in `[cache]`.
pub(super) fn validate(config: &Config, p: &mut Problems) {
    for (i, route) in config.routes.iter().enumerate() {
        let Some(c) = &route.cache else { continue };
        let at = |field: &str| format!("routes[{i}] ({}).cache.{field}", route.name);
        match &c.ttl {
            None => p.add(
                at("ttl"),
                "is required (how long an answer is served again, e.g. \"10m\")",
            ),
            Some(t) => {
                p.duration(at("ttl"), Some(t));
            }
        }
        p.duration(at("stale_if_error"), c.stale_if_error.as_deref());
        if let Some(s) = &c.scope {
            if scope(s).is_none() {
                p.add(at("scope"), format!("{s:?} is not one of key, route"));
            }
        }
    }
    let Some(c) = &config.cache else { return };
    match c.backend.as_deref().unwrap_or("memory") {
        "memory" => {}
        "redis" => {
            let redis = config
                .state
                .as_ref()
                .is_some_and(|s| s.backend.as_deref() == Some("redis"));
            if !redis {
                p.add(
                    "cache.backend",
                    "\"redis\" keeps entries in the [state] Redis: set [state] backend = \"redis\" and its url",
                );
            }
        }
        other => p.add(
            "cache.backend",
            format!("{other:?} is not one of memory, redis"),
        ),
    }
    if c.max_bytes == Some(0) {
        p.add("cache.max_bytes", "must be greater than zero");
    }
    if c.max_entry_bytes == Some(0) {
        p.add("cache.max_entry_bytes", "must be greater than zero");
    }
}

fn scope(text: &str) -> Option<Scope> {
    match text {
        "key" => Some(Scope::Key),
        "route" => Some(Scope::Route),
        _ => None,
    }
}

/// The cache the server runs with (routes with a valid `cache`; `validate` reports the
/// rest).
#[must_use]
pub fn response_cache(config: &Config) -> Cache {
    let mut routes = HashMap::new();
    for route in &config.routes {
        let Some(c) = &route.cache else { continue };
        let Some(ttl) = c.ttl.as_deref().and_then(|t| duration(t).ok()) else {
            continue;
        };
        let stale = (c.stale_if_error.as_deref())
            .and_then(|t| duration(t).ok())
            .unwrap_or_default();
        routes.insert(
            route.name.clone(),
            Policy {
                ttl,
                stale_if_error: stale,
                scope: c.scope.as_deref().and_then(scope).unwrap_or(Scope::Key),
                any_temperature: c.any_temperature.unwrap_or(false),
                tool_calls: c.tool_calls.unwrap_or(false),
            },
        );
    }
    let settings = config.cache.clone().unwrap_or_default();
    let backend = match settings.backend.as_deref() {
        Some("redis") => Backend::State,
        _ => Backend::Memory,
    };
    Cache::new(
        routes,
        backend,
        settings
            .max_bytes
            .filter(|b| *b > 0)
            .unwrap_or(DEFAULT_MAX_BYTES),
        (settings.max_entry_bytes)
            .filter(|b| *b > 0)
            .unwrap_or(DEFAULT_MAX_ENTRY_BYTES),
    )
}
