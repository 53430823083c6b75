//! Client keys: who may call the gateway, and which routes they may use.
//!
//! Owns the [`KeyStore`] built from `[[keys]]` (SHA-256 hashes only; tokens are never
//! stored), request authentication (`Authorization: Bearer <token>` or `x-api-key`, hashed
//! and compared in constant time against every stored hash), admin authorization (a key
//! with `admin = true` reads `/admin/*`), and `switchyard keys new`, which prints a fresh
//! token once together with the config lines to paste.

use std::collections::HashSet;

use axum::http::{HeaderMap, StatusCode};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use switchyard::Money;

use crate::config::KeyToml;
use crate::error::ApiError;
use crate::limits::{KeyLimits, Period};

/// One configured client key.
#[derive(Debug, Clone)]
struct Key {
    name: String,
    hash: [u8; 32],
    /// `None`: every route (`"*"`).
    routes: Option<HashSet<String>>,
    limits: KeyLimits,
    admin: bool,
}

/// The caller a request was authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The key's configured name.
    pub name: String,
    routes: Option<HashSet<String>>,
    /// Its budget and rate limits.
    pub limits: KeyLimits,
    /// May read the admin endpoints and the dashboard's data.
    pub admin: bool,
}

impl Caller {
    /// May this caller use `route`?
    #[must_use]
    pub fn allows(&self, route: &str) -> bool {
        self.routes.as_ref().is_none_or(|r| r.contains(route))
    }
}

/// The configured client keys.
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    keys: Vec<Key>,
}

impl KeyStore {
    /// From validated `[[keys]]` entries.
    #[must_use]
    pub fn new(keys: &[KeyToml]) -> Self {
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
                })
            })
            .collect();
        Self { keys }
    }

    /// No keys configured: keyless loopback mode (`crate::guard` then checks `Host`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Authenticate a request. `Ok(None)` when no keys are configured.
    ///
    /// # Errors
    /// 401 when keys are configured and the request carries none, or an unknown one.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Caller>, ApiError> {
        if self.keys.is_empty() {
            return Ok(None);
        }
        let token = bearer(headers).ok_or_else(|| {
            ApiError::unauthorized(
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
        let key = found.ok_or_else(|| ApiError::unauthorized("invalid API key"))?;
        Ok(Some(Caller {
            name: key.name.clone(),
            routes: key.routes.clone(),
            limits: key.limits,
            admin: key.admin,
        }))
    }

    /// Authorize an admin request: open when no keys are configured, else an admin key.
    ///
    /// # Errors
    /// 401 without a key or with an unknown one; 403 for a key without `admin = true`.
    pub fn authorize_admin(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match self.authenticate(headers)? {
            Some(caller) if !caller.admin => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "permission_error",
                format!(
                    "key {:?} is not an admin key (set `admin = true` on it in [[keys]])",
                    caller.name
                ),
            )
            .code("admin_key_required")),
            _ => Ok(()),
        }
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

/// `switchyard keys new NAME`: the token (shown once) and the config lines to paste.
///
/// # Errors
/// An empty name, or no OS randomness.
pub fn new_key_text(name: &str) -> Result<String, String> {
    if name.trim().is_empty() || name.contains('"') {
        return Err("the key name must be non-empty and must not contain quotes".to_owned());
    }
    let token = new_token()?;
    Ok(format!(
        "token (give it to the client; it is not stored anywhere):\n  {token}\n\npaste into your config:\n[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\nroutes = [\"*\"]\n",
        hash_token(&token)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn new_keys_hash_to_what_they_print() {
        let text = new_key_text("svc").unwrap();
        let token = text.lines().nth(1).unwrap().trim();
        assert!(token.starts_with("sy-") && token.len() == 67);
        assert!(text.contains(&hash_token(token)));
        assert_ne!(new_token().unwrap(), new_token().unwrap());
    }
}
