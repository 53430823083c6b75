//! `[database]`: PostgreSQL as the system of record for virtual keys, teams and spend
//! (`crate::database`, docs/operations.md "Database") — the schema and its validation.
//!
//! Optional: without it every key comes from `[[keys]]`, as before. With it the admin API
//! manages keys and teams, which needs an admin key to call it, and spend rows come from the
//! request log, which must therefore be on.

use std::time::Duration;

use serde::Deserialize;

use super::{Config, Problems};

/// The pool's default size: the admin API and the spend writer share it; the request path
/// never uses it.
pub const DEFAULT_POOL_SIZE: usize = 4;
/// The largest pool allowed.
pub const MAX_POOL_SIZE: usize = 32;
/// How often the whole key table is read again, besides LISTEN/NOTIFY (default).
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30);

/// `[database]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseToml {
    /// The environment variable holding the PostgreSQL URL
    /// (`postgres://user:password@host:port/db`; never logged).
    pub url_env: String,
    /// Connections in the pool (default 4, at most 32).
    pub pool_size: Option<usize>,
    /// How often keys and teams are read whole again, the safety net under LISTEN/NOTIFY
    /// (default `"30s"`).
    pub resync: Option<String>,
}

/// What `serve` needs of `[database]`, validated.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseSettings {
    /// The URL (a secret: never logged).
    pub url: String,
    /// Connections in the pool.
    pub pool_size: usize,
    /// The full-resync period.
    pub resync: Duration,
}

impl std::fmt::Debug for DatabaseSettings {
    /// The URL (it may carry a password) is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseSettings")
            .field("url", &"<hidden>")
            .field("pool_size", &self.pool_size)
            .field("resync", &self.resync)
            .finish()
    }
}

pub(super) fn validate(config: &Config, p: &mut Problems) {
    let Some(db) = &config.database else { return };
    let env_ok = !db.url_env.is_empty()
        && (db.url_env.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !env_ok {
        p.add(
            "database.url_env",
            "must name an environment variable (A-Z, 0-9, _), e.g. \"DATABASE_URL\"",
        );
    }
    if let Some(n) = db.pool_size {
        if !(1..=MAX_POOL_SIZE).contains(&n) {
            p.add(
                "database.pool_size",
                format!("must be from 1 to {MAX_POOL_SIZE}"),
            );
        }
    }
    p.duration("database.resync", db.resync.as_deref());
    if !config.keys.iter().any(|k| k.admin == Some(true)) {
        p.add(
            "database",
            "the admin API that manages the database's keys needs an admin key: add a [[keys]] entry with `admin = true` (`switchyard keys new NAME`)",
        );
    }
    if config.server.request_log.is_none() {
        p.add(
            "database",
            "spend rows are written from the request log: set [server] request_log",
        );
    }
}

/// The settings `[database]` asks for, reading the URL from the environment.
///
/// # Errors
/// The variable is unset or empty.
pub fn settings(
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<DatabaseSettings>, String> {
    let Some(db) = &config.database else {
        return Ok(None);
    };
    let url = env(&db.url_env)
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "database.url_env: environment variable {} is not set",
                db.url_env
            )
        })?;
    Ok(Some(DatabaseSettings {
        url,
        pool_size: db.pool_size.unwrap_or(DEFAULT_POOL_SIZE),
        resync: (db.resync.as_deref())
            .and_then(|r| super::duration(r).ok())
            .unwrap_or(DEFAULT_RESYNC),
    }))
}

#[cfg(test)]
mod tests {
    use crate::config::parse;

    const BASE: &str = r#"
[server]
request_log = "requests.jsonl"

[[providers]]
name = "aurora"
kind = "simulated"

[[routes]]
name = "default"
providers = ["aurora"]

[[keys]]
name = "root"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
routes = []
admin = true
"#;

    /// Every problem `parse` finds (it validates), as one text.
    fn problems(text: &str) -> String {
        parse(text, "test")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn a_database_section_is_checked_field_by_field() {
        let fine = format!("{BASE}[database]\nurl_env = \"DATABASE_URL\"\n");
        assert_eq!(problems(&fine), "");
        let p = problems(&format!(
            "{BASE}[database]\nurl_env = \"not a var\"\npool_size = 0\nresync = \"soon\"\n"
        ));
        for field in [
            "database.url_env:",
            "database.pool_size:",
            "database.resync:",
        ] {
            assert!(p.contains(field), "{field}: {p}");
        }
    }

    #[test]
    fn a_database_needs_an_admin_key_and_the_request_log() {
        let text = BASE
            .replace("admin = true", "admin = false")
            .replace("request_log = \"requests.jsonl\"", "");
        let p = problems(&format!("{text}[database]\nurl_env = \"DATABASE_URL\"\n"));
        assert!(p.contains("needs an admin key"), "{p}");
        assert!(p.contains("set [server] request_log"), "{p}");
    }

    #[test]
    fn the_url_comes_from_the_environment_and_is_never_printed() {
        let config = parse(&format!("{BASE}[database]\nurl_env = \"DB\"\n"), "t")
            .unwrap_or_else(|e| panic!("{e}"));
        let none = |_: &str| None;
        let e = super::settings(&config, &none).unwrap_err();
        assert!(e.contains("DB is not set"), "{e}");
        let set = |_: &str| Some("postgres://u:hunter2@127.0.0.1/db".to_owned());
        let s = super::settings(&config, &set).unwrap().unwrap();
        assert_eq!(
            (s.pool_size, s.resync),
            (super::DEFAULT_POOL_SIZE, super::DEFAULT_RESYNC)
        );
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}
