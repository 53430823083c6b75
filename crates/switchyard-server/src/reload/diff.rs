//! What a reload changes: providers, routes and keys added, removed, changed or kept
//! (their parsed definitions compared), the other settings it applies, the fields only a
//! restart applies, and the state a reload leaves behind: a changed or removed provider's
//! circuit, a removed route's or key's books and windows (a route or key still there under
//! its name keeps its spend and windows, whatever else changed: only its limits change).

use std::collections::HashSet;

use serde::Serialize;
use switchyard::state::Forget;

use crate::config::Config;

/// How one kind of definition changed, by name (in the new file's order; removed ones in
/// the old file's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Changes {
    /// In the new file only.
    pub added: Vec<String>,
    /// In the old file only.
    pub removed: Vec<String>,
    /// In both, defined differently: a provider's circuit starts afresh; a route's or a
    /// key's spend and windows carry over (its new limits apply to them).
    pub changed: Vec<String>,
    /// In both, defined the same: keeps its state.
    pub kept: Vec<String>,
}

impl Changes {
    /// Compare two lists of definitions by `name`.
    fn of<T: PartialEq>(old: &[T], new: &[T], name: impl Fn(&T) -> &str) -> Self {
        let mut out = Changes::default();
        for n in new {
            match old.iter().find(|o| name(o) == name(n)) {
                None => out.added.push(name(n).to_owned()),
                Some(o) if o == n => out.kept.push(name(n).to_owned()),
                Some(_) => out.changed.push(name(n).to_owned()),
            }
        }
        for o in old {
            if !new.iter().any(|n| name(n) == name(o)) {
                out.removed.push(name(o).to_owned());
            }
        }
        out
    }

    /// Whether anything was added, removed or changed.
    #[must_use]
    pub fn any(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }

    /// The names whose circuit goes (providers): changed and removed.
    fn gone(&self) -> impl Iterator<Item = &String> {
        self.changed.iter().chain(&self.removed)
    }
}

/// A reload's changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// `[[providers]]`.
    pub providers: Changes,
    /// `[[routes]]`.
    pub routes: Changes,
    /// `[[keys]]`.
    pub keys: Changes,
    /// Other settings applied: `server.max_body_bytes`, `responses`, ...
    pub settings: Vec<String>,
    /// Fields that differ from the config the process started with and that only a
    /// restart applies (the running process keeps its start-up values).
    pub restart_needed: Vec<String>,
}

impl Diff {
    /// `old` (in force) to `new`; `started` is the config the process started with.
    #[must_use]
    pub fn of(started: &Config, old: &Config, new: &Config) -> Self {
        Diff {
            providers: Changes::of(&old.providers, &new.providers, |p| &p.name),
            routes: Changes::of(&old.routes, &new.routes, |r| &r.name),
            keys: Changes::of(&old.keys, &new.keys, |k| &k.name),
            settings: settings(old, new),
            restart_needed: restart_needed(started, new),
        }
    }

    /// Whether the reload changes what requests run on.
    #[must_use]
    pub fn applies_anything(&self) -> bool {
        self.providers.any() || self.routes.any() || self.keys.any() || !self.settings.is_empty()
    }

    /// The keys still there under their names (kept or changed): they keep their state.
    #[must_use]
    pub fn remaining_keys(&self) -> HashSet<String> {
        (self.keys.kept.iter())
            .chain(&self.keys.changed)
            .cloned()
            .collect()
    }

    /// The state the reload leaves behind in the store: each changed or removed provider's
    /// breaker (and a wildcard template's models', `{name}/…`: a provider defined anew may
    /// be another endpoint), each removed route's budget books (`route:{name}`), each
    /// removed key's books of every period and its rate windows (`key:{name}`,
    /// `key:{name}:…`; a key name holds no `:`). A route or key still there keeps its
    /// books and windows whatever else changed: money spent stays spent when its budget is
    /// raised, and a window stays used when its `rpm` changes.
    #[must_use]
    pub fn forget(&self) -> Forget {
        let mut f = Forget::default();
        for p in self.providers.gone() {
            f.breakers.push(p.clone());
            f.breaker_prefixes.push(format!("{p}/"));
        }
        for r in &self.routes.removed {
            f.scopes.push(switchyard::gateway::budget_scope(r));
        }
        for k in &self.keys.removed {
            f.scopes.push(format!("key:{k}"));
            f.scope_prefixes.push(format!("key:{k}:"));
        }
        f
    }
}

/// The reloadable settings besides providers, routes and keys that differ.
fn settings(old: &Config, new: &Config) -> Vec<String> {
    let (o, n) = (&old.server, &new.server);
    let mut out = Vec::new();
    let mut differs = |field: &str, same: bool| {
        if !same {
            out.push(field.to_owned());
        }
    };
    differs(
        "server.max_body_bytes",
        o.max_body_bytes == n.max_body_bytes,
    );
    differs(
        "server.max_request_items",
        o.max_request_items == n.max_request_items,
    );
    differs(
        "server.max_request_depth",
        o.max_request_depth == n.max_request_depth,
    );
    differs(
        "server.max_expanded_bytes",
        o.max_expanded_bytes == n.max_expanded_bytes,
    );
    differs(
        "server.rescue_buffer_bytes",
        o.rescue_buffer_bytes == n.rescue_buffer_bytes,
    );
    differs(
        "server.allowed_origins",
        o.allowed_origins == n.allowed_origins,
    );
    differs("responses", old.responses == new.responses);
    differs("threads", old.threads == new.threads);
    out
}

/// The fields only a restart applies that `new` sets differently from `started`: where
/// and how the process listens and runs, the edge's limits, the state store, the request
/// log, telemetry (exporters, the access log, the metrics token) and the file watch.
#[must_use]
pub fn restart_needed(started: &Config, new: &Config) -> Vec<String> {
    let (s, n) = (&started.server, &new.server);
    let mut out = Vec::new();
    let mut differs = |field: &str, same: bool| {
        if !same {
            out.push(field.to_owned());
        }
    };
    differs("server.listen", s.listen == n.listen);
    differs("server.workers", s.workers == n.workers);
    differs("server.request_log", s.request_log == n.request_log);
    differs(
        "server.shutdown_grace",
        s.shutdown_grace == n.shutdown_grace,
    );
    differs(
        "server.header_read_timeout",
        s.header_read_timeout == n.header_read_timeout,
    );
    differs(
        "server.body_read_timeout",
        s.body_read_timeout == n.body_read_timeout,
    );
    differs("server.idle_timeout", s.idle_timeout == n.idle_timeout);
    differs("server.write_timeout", s.write_timeout == n.write_timeout);
    differs(
        "server.max_connections",
        s.max_connections == n.max_connections,
    );
    differs("server.max_in_flight", s.max_in_flight == n.max_in_flight);
    differs("server.log_format", s.log_format == n.log_format);
    differs("server.watch_config", s.watch_config == n.watch_config);
    differs("state", started.state == new.state);
    differs("telemetry", started.telemetry == new.telemetry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Config {
        crate::config::parse(text, "test").unwrap()
    }

    const BASE: &str = "[[providers]]\nname = \"a\"\nkind = \"simulated\"\n\
                        [[providers]]\nname = \"b\"\nkind = \"simulated\"\n\
                        [[routes]]\nname = \"r\"\nproviders = [\"a\"]\n\
                        [[routes]]\nname = \"s\"\nproviders = [\"b\"]\n";

    #[test]
    fn changed_and_removed_definitions_are_forgotten_by_name_kept_ones_are_not() {
        let old = parse(BASE);
        let new = parse(
            "[[providers]]\nname = \"a\"\nkind = \"simulated\"\nseed = 2\n\
             [[providers]]\nname = \"c\"\nkind = \"simulated\"\n\
             [[routes]]\nname = \"r\"\nproviders = [\"a\"]\n",
        );
        let d = Diff::of(&old, &old, &new);
        assert_eq!(d.providers.changed, ["a"]);
        assert_eq!(d.providers.removed, ["b"]);
        assert_eq!(d.providers.added, ["c"]);
        assert_eq!(d.routes.kept, ["r"]);
        assert_eq!(d.routes.removed, ["s"]);
        let f = d.forget();
        assert!(f.breaker("a") && f.breaker("a/gpt-4o") && f.breaker("b"));
        assert!(!f.breaker("c") && !f.breaker("ab"));
        assert!(f.scope("route:s") && !f.scope("route:r"));
    }

    /// A route or key still there under its name keeps its books and windows whatever
    /// changed (its budget raised, its rpm, its routes); a removed one's go.
    #[test]
    fn changed_routes_and_keys_keep_their_books_and_removed_ones_lose_them() {
        let key = |name: &str, extra: &str| {
            format!(
                "[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\nroutes = [\"*\"]\n{extra}\n",
                crate::access::keys::hash_token(name)
            )
        };
        let old = parse(&format!(
            "{BASE}[[routes]]\nname = \"paid\"\nproviders = [\"a\"]\nbudget_usd = 10.0\n{}{}{}",
            key("k", "budget_usd = 10.0\nrpm = 5"),
            key("kept", "budget_usd = 1.0"),
            key("gone", "budget_usd = 1.0"),
        ));
        let new = parse(&format!(
            "{BASE}[[routes]]\nname = \"paid\"\nproviders = [\"a\"]\nbudget_usd = 20.0\n{}{}",
            key("k", "budget_usd = 20.0\nrpm = 9\nbudget_period = \"total\""),
            key("kept", "budget_usd = 1.0"),
        ));
        let d = Diff::of(&old, &old, &new);
        assert_eq!(d.routes.changed, ["paid"]);
        assert_eq!(
            (d.keys.changed.clone(), d.keys.removed.clone()),
            (vec!["k".to_owned()], vec!["gone".to_owned()])
        );
        let f = d.forget();
        assert!(!f.scope("route:paid"), "a changed route keeps its spend");
        for scope in [
            "key:k",
            "key:k:month:2026-12",
            "key:k:rpm",
            "key:kept",
            "key:kept:tpm",
        ] {
            assert!(!f.scope(scope), "{scope} is kept");
        }
        for scope in ["key:gone", "key:gone:day:2026-12-02", "key:gone:rpm"] {
            assert!(f.scope(scope), "{scope} is forgotten");
        }
        let mut carried: Vec<String> = d.remaining_keys().into_iter().collect();
        carried.sort();
        assert_eq!(
            carried,
            ["k", "kept"],
            "their in-flight counts carry over too"
        );
    }

    #[test]
    fn restart_only_fields_are_named_against_the_started_config() {
        let started = parse(BASE);
        let new = parse(&format!(
            "[server]\nlisten = \"127.0.0.1:5000\"\nmax_body_bytes = 1000\n\
             [state]\nbackend = \"memory\"\n[telemetry]\naccess_log = true\n{BASE}"
        ));
        let d = Diff::of(&started, &started, &new);
        assert_eq!(d.restart_needed, ["server.listen", "state", "telemetry"]);
        assert_eq!(d.settings, ["server.max_body_bytes"]);
        assert!(d.applies_anything());
        assert!(!Diff::of(&started, &started, &started).applies_anything());
    }
}
