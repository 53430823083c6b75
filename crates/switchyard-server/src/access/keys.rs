//! Client keys: who may call the gateway, and which routes they may use.
//!
//! Owns the [`KeyStore`] built from `[[keys]]` (SHA-256 hashes only; tokens are never
//! stored), request authentication (`Authorization: Bearer <token>` or `x-api-key`, hashed
//! and compared in constant time against every stored hash), admin authorization (a key
//! with `admin = true` reads `/admin/*` and `/metrics`; so does the metrics token,
//! [`KeyStore::authorize_metrics`]), `switchyard keys new`, which prints a fresh
//! token once together with the config lines to paste, the rule for key names
//! ([`check_name`]) and the hashes of guessable tokens that `check` and `serve` warn about
//! ([`weak_token_warnings`]).
//!
//! There is deliberately no command that hashes a token you chose: tokens come from
//! `keys new` (32 random bytes, 67 characters), so none is short or guessable.

use std::collections::HashSet;
use std::sync::Arc;

use axum::http::HeaderMap;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use switchyard::Money;

pub use crate::access::caller::Caller;
use crate::access::dynamic::DynamicKeys;
use crate::access::error::AccessError;
use crate::access::in_flight::{self, InFlight};
use crate::access::limits::{KeyLimits, Period};

/// `[server] max_in_flight`'s default, whose share a key takes when neither is configured
/// (the edge's `DEFAULT_MAX_IN_FLIGHT`; access depends on neither `http` nor `config`).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// `[[keys]]`: a client key, stored as a hash.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyToml {
    /// Who holds it (appears in logs).
    pub name: String,
    /// Hex SHA-256 of the bearer token.
    pub sha256: String,
    /// Routes it may use (`"*"` for all).
    pub routes: Vec<String>,
    /// Spend limit for this key, in dollars, per `budget_period`.
    pub budget_usd: Option<f64>,
    /// `total` (default), `day` or `month` (UTC calendar periods).
    pub budget_period: Option<String>,
    /// Requests per minute.
    pub rpm: Option<u64>,
    /// Tokens (input + output) per minute.
    pub tpm: Option<u64>,
    /// May read `/admin/*` and the dashboard's data (default false).
    pub admin: Option<bool>,
    /// Most requests this key may have in flight at once (default: a quarter of
    /// `[server] max_in_flight`); more are refused with 429 before their body is read.
    pub max_in_flight: Option<usize>,
}

/// One configured client key.
#[derive(Debug, Clone)]
struct Key {
    name: String,
    hash: [u8; 32],
    /// `None`: every route (`"*"`).
    routes: Option<HashSet<String>>,
    limits: KeyLimits,
    admin: bool,
    /// Its requests in flight (shared by every request authenticated as it).
    in_flight: InFlight,
}

/// The configured client keys.
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    keys: Vec<Key>,
    /// SHA-256 of the token that reads `/metrics` besides admin keys
    /// (`[telemetry] metrics_token_env`).
    metrics_token: Option<[u8; 32]>,
    /// The database's keys (`[database]`), consulted after the configured ones.
    dynamic: Option<Arc<DynamicKeys>>,
}

impl KeyStore {
    /// From validated `[[keys]]` entries.
    #[must_use]
    pub fn new(keys: &[KeyToml]) -> Self {
        Self::with_in_flight_default(keys, DEFAULT_MAX_IN_FLIGHT)
    }

    /// From validated `[[keys]]` entries, a key without `max_in_flight` taking its share of
    /// `server_max_in_flight` (`[server] max_in_flight`; [`in_flight::default_cap`]).
    #[must_use]
    pub fn with_in_flight_default(keys: &[KeyToml], server_max_in_flight: usize) -> Self {
        let default_in_flight = in_flight::default_cap(server_max_in_flight);
        let keys = keys
            .iter()
            .filter_map(|k| {
                let hash = decode_hash(&k.sha256)?;
                let routes = (!k.routes.iter().any(|r| r == "*"))
                    .then(|| k.routes.iter().cloned().collect());
                Some(Key {
                    name: k.name.clone(),
                    hash,
                    routes,
                    limits: limits_of(k),
                    admin: k.admin.unwrap_or(false),
                    in_flight: InFlight::new(k.max_in_flight.unwrap_or(default_in_flight)),
                })
            })
            .collect();
        Self {
            keys,
            metrics_token: None,
            dynamic: None,
        }
    }

    /// Builder: also authenticate the database's keys (`[database]`; never admin keys).
    #[must_use]
    pub fn with_dynamic(mut self, dynamic: Arc<DynamicKeys>) -> Self {
        self.dynamic = Some(dynamic);
        self
    }

    /// Builder: authenticate the database keys `old` does (a configuration reload keeps
    /// them: they are not in the file).
    #[must_use]
    pub fn with_dynamic_of(mut self, old: &KeyStore) -> Self {
        self.dynamic.clone_from(&old.dynamic);
        self
    }

    /// The database's keys, when a database is configured.
    #[must_use]
    pub fn dynamic(&self) -> Option<&Arc<DynamicKeys>> {
        self.dynamic.as_ref()
    }

    /// Is `name` a configured (`[[keys]]`) key's name?
    #[must_use]
    pub fn has_configured(&self, name: &str) -> bool {
        self.keys.iter().any(|k| k.name == name)
    }

    /// Builder: `/metrics` also answers a request bearing `token` (a Prometheus scraper's,
    /// `[telemetry] metrics_token_env`), and only such requests or admin keys.
    #[must_use]
    pub fn with_metrics_token(mut self, token: Option<&str>) -> Self {
        self.metrics_token = token.map(|t| Sha256::digest(t.trim().as_bytes()).into());
        self
    }

    /// No keys configured: keyless loopback mode (`crate::http::guard` then checks `Host`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.dynamic.is_none()
    }

    /// Authenticate a request. `Ok(None)` when no keys are configured.
    ///
    /// # Errors
    /// 401 when keys are configured and the request carries none, or an unknown one.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Caller>, AccessError> {
        if self.is_empty() {
            return Ok(None);
        }
        let token = bearer(headers).ok_or_else(|| {
            AccessError::unauthorized(
                "missing API key: send `Authorization: Bearer <key>` or `x-api-key`",
            )
        })?;
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Compare against every key without stopping early, in constant time per compare.
        let mut found: Option<&Key> = None;
        for key in &self.keys {
            if bool::from(key.hash.ct_eq(&digest)) {
                found = Some(key);
            }
        }
        let Some(key) = found else {
            return (self.dynamic.as_ref())
                .and_then(|d| d.authenticate(&digest))
                .map(Some)
                .ok_or_else(|| AccessError::unauthorized("invalid API key"));
        };
        Ok(Some(Caller {
            name: key.name.clone(),
            routes: key.routes.clone(),
            limits: key.limits,
            admin: key.admin,
            in_flight: key.in_flight.clone(),
        }))
    }

    /// Whether `headers` carry a client key at all (valid or not): tells a missing key from
    /// an invalid one.
    #[must_use]
    pub fn carries_key(headers: &HeaderMap) -> bool {
        bearer(headers).is_some()
    }

    /// Authorize an admin request: open when no keys are configured, else an admin key.
    ///
    /// # Errors
    /// 401 without a key or with an unknown one; 403 for a key without `admin = true`.
    pub fn authorize_admin(&self, headers: &HeaderMap) -> Result<(), AccessError> {
        match self.authenticate(headers)? {
            Some(caller) if !caller.admin => Err(AccessError::not_admin(format!(
                "key {:?} is not an admin key (set `admin = true` on it in [[keys]])",
                caller.name
            ))),
            _ => Ok(()),
        }
    }

    /// [`KeyStore::authorize_admin`], returning who: the admin key's name, or `None` when
    /// no keys are configured (keyless loopback mode). The admin API audits it.
    ///
    /// # Errors
    /// As [`KeyStore::authorize_admin`].
    pub fn admin_name(&self, headers: &HeaderMap) -> Result<Option<String>, AccessError> {
        self.authorize_admin(headers)?;
        Ok(self.authenticate(headers)?.map(|c| c.name))
    }

    /// Authorize a `/metrics` scrape (it names every key, its spend and remaining budget):
    /// the metrics token when one is configured, or an admin key; open only when neither
    /// keys nor a metrics token are configured (keyless loopback mode).
    ///
    /// # Errors
    /// 401 without a valid token or key; 403 for a key without `admin = true`.
    pub fn authorize_metrics(&self, headers: &HeaderMap) -> Result<(), AccessError> {
        let Some(want) = &self.metrics_token else {
            return self.authorize_admin(headers);
        };
        let sent: Option<[u8; 32]> = bearer(headers).map(|t| Sha256::digest(t.as_bytes()).into());
        if sent.is_some_and(|d| bool::from(d.ct_eq(want))) {
            return Ok(());
        }
        if self.is_empty() {
            return Err(AccessError::unauthorized(
                "/metrics needs the metrics token ([telemetry] metrics_token_env): send `Authorization: Bearer <token>`",
            ));
        }
        self.authorize_admin(headers)
    }

    /// Builder (a reload): each key named in `remaining` (still there under its name,
    /// whatever else changed) shares its requests-in-flight count with the same key in
    /// `old`, under its new cap, so requests that started before the reload still count
    /// against its `max_in_flight`.
    #[must_use]
    pub fn carrying_in_flight(mut self, old: &KeyStore, remaining: &HashSet<String>) -> Self {
        for key in &mut self.keys {
            if !remaining.contains(&key.name) {
                continue;
            }
            if let Some(before) = old.keys.iter().find(|k| k.name == key.name) {
                key.in_flight = before.in_flight.with_cap(key.in_flight.cap());
            }
        }
        self
    }

    /// Every key's name, limits and admin flag, in config order (no hashes).
    pub fn list(&self) -> impl Iterator<Item = (&str, &KeyLimits, bool)> {
        self.keys
            .iter()
            .map(|k| (k.name.as_str(), &k.limits, k.admin))
    }
}

/// The limits a `[[keys]]` entry sets.
#[must_use]
pub fn limits_of(k: &KeyToml) -> KeyLimits {
    let period = k
        .budget_period
        .as_deref()
        .and_then(Period::parse)
        .unwrap_or_default();
    KeyLimits {
        budget: k.budget_usd.map(|b| (Money::from_usd(b), period)),
        rpm: k.rpm,
        tpm: k.tpm,
        team: None,
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        if let Some(t) = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
        {
            return Some(t.trim()).filter(|t| !t.is_empty());
        }
    }
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

fn decode_hash(hex_text: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(hex_text.trim()).ok()?;
    bytes.try_into().ok()
}

/// Hex SHA-256 of a token.
#[must_use]
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A fresh random token (`sy-` + 64 hex characters from the OS's CSPRNG).
///
/// # Errors
/// When the OS random source fails.
pub fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot read OS randomness: {e}"))?;
    Ok(format!("sy-{}", hex::encode(bytes)))
}

/// The longest key name [`check_name`] allows.
pub const MAX_NAME_LEN: usize = 64;

/// A key name is 1 to [`MAX_NAME_LEN`] characters of `A-Z a-z 0-9 . _ -`: it is written into
/// TOML by `keys new`, and appears in the request log, metrics labels and state-store keys.
///
/// # Errors
/// The rule, and the name as given (escaped, cut at [`MAX_NAME_LEN`] characters).
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if !name.is_empty() && name.len() <= MAX_NAME_LEN && name.chars().all(allowed) {
        return Ok(());
    }
    let shown: String = name.chars().take(MAX_NAME_LEN).collect();
    let cut = if shown.len() < name.len() { "..." } else { "" };
    Err(format!(
        "key name {shown:?}{cut} is not allowed: use 1 to {MAX_NAME_LEN} characters of A-Z, a-z, 0-9, '.', '_' and '-'"
    ))
}

/// `switchyard keys new NAME`: the token (shown once) and the config lines to paste.
///
/// # Errors
/// A name [`check_name`] refuses, or no OS randomness.
pub fn new_key_text(name: &str) -> Result<String, String> {
    new_key_text_with(name, false)
}

/// `switchyard keys new NAME [--admin]`: as [`new_key_text`]; an admin key gets
/// `admin = true` and no routes (it manages the gateway, it does not call models).
///
/// # Errors
/// A name [`check_name`] refuses, or no OS randomness.
pub fn new_key_text_with(name: &str, admin: bool) -> Result<String, String> {
    check_name(name)?;
    let token = new_token()?;
    let rest = if admin {
        "routes = []\nadmin = true\n"
    } else {
        "routes = [\"*\"]\n"
    };
    Ok(format!(
        "token (give it to the client; it is not stored anywhere):\n  {token}\n\npaste into your config:\n[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\n{rest}",
        hash_token(&token)
    ))
}

/// Tokens anyone would try first: defaults, placeholders, keyboard walks. A key whose hash
/// is one of theirs (or its own name's) can be guessed.
const WEAK_TOKENS: &[&str] = &[
    "",
    "test",
    "testing",
    "test123",
    "password",
    "passw0rd",
    "changeme",
    "change-me",
    "secret",
    "admin",
    "root",
    "token",
    "key",
    "apikey",
    "api-key",
    "api_key",
    "default",
    "demo",
    "dev",
    "example",
    "guest",
    "letmein",
    "qwerty",
    "abc123",
    "1234",
    "12345",
    "123456",
    "12345678",
    "1234567890",
    "sk-test",
    "sk-1234",
    "sk-xxx",
    "sk-...",
    "your-api-key",
    "YOUR_API_KEY",
    "sy-test",
    "switchyard",
];

/// Tokens shorter than this are guessable; `keys new` makes [`NEW_TOKEN_LEN`]-character ones.
pub const MIN_TOKEN_LEN: usize = 32;

/// The length of the tokens [`new_token`] makes (`sy-` and 64 hex characters).
pub const NEW_TOKEN_LEN: usize = 67;

/// A warning for every `[[keys]]` entry whose hash is that of a guessable token: one of a
/// built-in list of defaults and placeholders, or the key's own name (`check` and `serve`
/// print them). Only hashes are configured, so a short token is caught only when it is one
/// of these; the token itself is never printed.
#[must_use]
pub fn weak_token_warnings(keys: &[KeyToml]) -> Vec<String> {
    let weak: HashSet<String> = WEAK_TOKENS.iter().map(|t| hash_token(t)).collect();
    keys.iter()
        .enumerate()
        .filter(|(_, k)| {
            let hash = k.sha256.trim().to_ascii_lowercase();
            weak.contains(&hash) || hash == hash_token(&k.name)
        })
        .map(|(i, k)| {
            format!(
                "keys[{i}] ({:?}): its sha256 is the hash of a well-known or guessable token, so anyone can use this key: replace it with the lines `switchyard keys new {}` prints (a random {NEW_TOKEN_LEN}-character token; tokens shorter than {MIN_TOKEN_LEN} characters are guessable)",
                k.name, k.name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration reload builds a new key table from the file: the database's keys,
    /// which are not in it, must still authenticate through it.
    #[test]
    fn a_reloaded_key_store_keeps_authenticating_database_keys() {
        use crate::access::dynamic::{DynamicKeys, KeySpec};
        use switchyard::clock::Clock;
        let keys = Arc::new(DynamicKeys::new(Clock::manual(0), 1024));
        keys.replace(vec![KeySpec {
            id: 1,
            name: "db-key".into(),
            hash: Sha256::digest(b"sy-db").into(),
            previous: None,
            team: None,
            routes: None,
            limits: KeyLimits::default(),
            expires_at_ms: None,
        }]);
        let file = |name: &str| KeyToml {
            name: name.into(),
            sha256: hash_token("sy-file"),
            routes: vec!["*".into()],
            admin: Some(true),
            ..KeyToml::default()
        };
        let started = KeyStore::new(&[file("ops")]).with_dynamic(Arc::clone(&keys));
        let reloaded = KeyStore::new(&[file("ops2")]).with_dynamic_of(&started);
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("authorization", "Bearer sy-db".parse().unwrap());
        let caller = reloaded.authenticate(&headers).unwrap().unwrap();
        assert_eq!(caller.name, "db-key");
        let without = KeyStore::new(&[file("ops2")]);
        assert!(
            without.authenticate(&headers).is_err(),
            "the file alone does not know it"
        );
    }

    /// A reload that changes a key's `max_in_flight` (or anything else) keeps counting the
    /// requests it already has in flight, against the new cap.
    #[test]
    fn a_changed_key_keeps_its_requests_in_flight_under_its_new_cap() {
        let key = |cap: usize| KeyToml {
            name: "svc".into(),
            sha256: hash_token("sy-svc"),
            routes: vec!["*".into()],
            max_in_flight: Some(cap),
            ..KeyToml::default()
        };
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer sy-svc".parse().unwrap());
        let started = KeyStore::new(&[key(3)]);
        let caller = started.authenticate(&headers).unwrap().unwrap();
        let _held = caller.in_flight.enter("svc").unwrap();
        let remaining: HashSet<String> = ["svc".to_owned()].into();
        let reloaded = KeyStore::new(&[key(1)]).carrying_in_flight(&started, &remaining);
        let now = reloaded.authenticate(&headers).unwrap().unwrap().in_flight;
        assert_eq!((now.current(), now.cap()), (1, 1));
        assert_eq!(
            now.enter("svc").unwrap_err().status,
            429,
            "the one before counts"
        );
        let fresh = KeyStore::new(&[key(1)]).carrying_in_flight(&started, &HashSet::new());
        let fresh = fresh.authenticate(&headers).unwrap().unwrap().in_flight;
        assert_eq!(fresh.current(), 0, "a key not named starts afresh");
    }

    fn store() -> KeyStore {
        KeyStore::new(&[
            KeyToml {
                name: "team-a".into(),
                sha256: hash_token("sy-alpha"),
                routes: vec!["smart".into()],
                ..KeyToml::default()
            },
            KeyToml {
                name: "ops".into(),
                sha256: hash_token("sy-omega").to_uppercase(),
                routes: vec!["*".into()],
                ..KeyToml::default()
            },
        ])
    }

    fn headers(name: &str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
        h
    }

    #[test]
    fn bearer_and_x_api_key_authenticate_and_routes_are_enforced() {
        let s = store();
        let a = s
            .authenticate(&headers("authorization", "Bearer sy-alpha"))
            .unwrap()
            .unwrap();
        assert_eq!(a.name, "team-a");
        assert!(a.allows("smart") && !a.allows("cheap"));
        let o = s
            .authenticate(&headers("x-api-key", "sy-omega"))
            .unwrap()
            .unwrap();
        assert!(o.allows("anything"));
    }

    #[test]
    fn missing_or_wrong_keys_are_401() {
        let s = store();
        assert_eq!(s.authenticate(&HeaderMap::new()).unwrap_err().status, 401);
        let e = s
            .authenticate(&headers("authorization", "Bearer sy-nope"))
            .unwrap_err();
        assert_eq!(e.status, 401);
        assert!(!e.message.contains("sy-nope"), "the token is never echoed");
    }

    #[test]
    fn admin_needs_an_admin_key() {
        let mut keys = vec![KeyToml {
            name: "root".into(),
            sha256: hash_token("sy-root"),
            admin: Some(true),
            ..KeyToml::default()
        }];
        let s = KeyStore::new(&keys);
        assert!(s
            .authorize_admin(&headers("authorization", "Bearer sy-root"))
            .is_ok());
        keys.push(KeyToml {
            name: "team".into(),
            sha256: hash_token("sy-team"),
            ..KeyToml::default()
        });
        let s = KeyStore::new(&keys);
        let e = s
            .authorize_admin(&headers("x-api-key", "sy-team"))
            .unwrap_err();
        assert_eq!(e.status, 403);
        assert_eq!(
            s.authorize_admin(&HeaderMap::new()).unwrap_err().status,
            401
        );
        let e = s
            .authorize_admin(&headers("authorization", "Bearer sy-x"))
            .unwrap_err();
        assert_eq!(e.status, 401);
        assert!(KeyStore::default()
            .authorize_admin(&HeaderMap::new())
            .is_ok());
        let admins: Vec<_> = s.list().map(|(n, _, a)| (n, a)).collect();
        assert_eq!(admins, [("root", true), ("team", false)]);
    }

    #[test]
    fn no_keys_means_open() {
        assert_eq!(
            KeyStore::default().authenticate(&HeaderMap::new()).unwrap(),
            None
        );
    }

    #[test]
    fn key_names_are_short_and_plain_and_keys_new_refuses_others() {
        for ok in ["a", "ci-bot", "team_a.prod", &"x".repeat(MAX_NAME_LEN)] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
            assert!(new_key_text(ok).is_ok());
        }
        for bad in [
            "",
            "two\nlines",
            "say \"hi\"",
            "a b",
            "team]",
            "café",
            "a:b",
        ] {
            let e = new_key_text(bad).unwrap_err();
            assert!(e.contains("1 to 64 characters of A-Z, a-z, 0-9"), "{e}");
            assert!(!e.contains('\n'), "the name is shown escaped: {e}");
        }
        let e = check_name("two\nlines").unwrap_err();
        assert!(
            e.starts_with(r#"key name "two\nlines" is not allowed"#),
            "{e}"
        );
        let e = check_name(&"y".repeat(10_000)).unwrap_err();
        let shown = format!("key name {:?}... is not allowed", "y".repeat(MAX_NAME_LEN));
        assert!(e.starts_with(&shown) && e.len() < 250, "{e}");
    }

    #[test]
    fn guessable_token_hashes_are_warned_about_without_showing_the_token() {
        let key = |name: &str, token: &str| KeyToml {
            name: name.into(),
            sha256: hash_token(token),
            ..KeyToml::default()
        };
        let mut upper = key("upper", "changeme");
        upper.sha256 = upper.sha256.to_uppercase();
        let keys = [
            key("backend-team", "test"),
            key("ops", "ops"),
            upper,
            key("empty", ""),
            key("fine", &new_token().unwrap()),
        ];
        let w = weak_token_warnings(&keys);
        assert_eq!(w.len(), 4, "{w:#?}");
        let first =
            "keys[0] (\"backend-team\"): its sha256 is the hash of a well-known or guessable token";
        assert!(w[0].starts_with(first), "{}", w[0]);
        assert!(
            w[0].contains("`switchyard keys new backend-team`"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("shorter than 32 characters"), "{}", w[0]);
        assert!(
            w[1].starts_with("keys[1] (\"ops\")"),
            "its own name: {}",
            w[1]
        );
        assert!(
            w[2].starts_with("keys[2]") && w[3].starts_with("keys[3]"),
            "{w:#?}"
        );
        assert!(w
            .iter()
            .all(|w| !w.contains("\"test\"") && !w.contains("changeme")));
        assert_eq!(new_token().unwrap().len(), NEW_TOKEN_LEN);
    }

    #[test]
    fn an_admin_key_is_printed_with_admin_true_and_no_routes() {
        let text = new_key_text_with("ops", true).unwrap();
        assert!(text.ends_with("routes = []\nadmin = true\n"), "{text}");
        assert!(new_key_text("svc").unwrap().ends_with("routes = [\"*\"]\n"));
    }

    #[test]
    fn new_keys_hash_to_what_they_print() {
        let text = new_key_text("svc").unwrap();
        let token = text.lines().nth(1).unwrap().trim();
        assert!(token.starts_with("sy-") && token.len() == 67);
        assert!(text.contains(&hash_token(token)));
        assert_ne!(new_token().unwrap(), new_token().unwrap());
    }
}
