//! Client keys held in the database (`crate::database`), as the request path sees them: an
//! in-memory table swapped whole (`arc-swap`) by the database's sync task, read without a
//! lock and never waiting on the database.
//!
//! Owns [`DynamicKeys`] (the table, looked up by the token's SHA-256), [`KeySpec`] (one key
//! as loaded: the sync task builds them, this module only indexes them) and the rules a
//! database key is held to when it authenticates: not expired, and a rotated key's previous
//! token only until its grace period ends. Each key's requests-in-flight count is carried
//! from one table to the next by key id, so a resync never resets it. Does not own the SQL
//! (`crate::database`), nor the TOML keys (`crate::access::keys::KeyStore` consults this
//! table after its own).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arc_swap::ArcSwap;
use switchyard::clock::{Clock, UnixMillis};

use crate::access::caller::Caller;
use crate::access::in_flight::{self, InFlight};
use crate::access::limits::KeyLimits;

/// One database key, as loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    /// The key's id (the admin API's).
    pub id: i64,
    /// Its name (logs, budget scopes, spend rows).
    pub name: String,
    /// SHA-256 of its token.
    pub hash: [u8; 32],
    /// The token it had before its last rotation, and until when that one still works.
    pub previous: Option<([u8; 32], UnixMillis)>,
    /// Its team's name, for spend rows.
    pub team: Option<String>,
    /// Routes it may use (`None`: every route).
    pub routes: Option<HashSet<String>>,
    /// Its limits, its team's included.
    pub limits: KeyLimits,
    /// When it stops working.
    pub expires_at_ms: Option<UnixMillis>,
}

/// A key in the table: its spec and its requests in flight.
#[derive(Debug)]
struct Held {
    spec: KeySpec,
    in_flight: InFlight,
}

/// One snapshot: keys by token hash (current and in-grace previous tokens).
#[derive(Debug, Default)]
struct Table {
    /// Token hash → (key, the token works until).
    by_hash: HashMap<[u8; 32], (Arc<Held>, Option<UnixMillis>)>,
    /// Key name → key (spend rows look up teams by name).
    by_name: HashMap<String, Arc<Held>>,
}

impl Table {
    /// Index `spec` by its token hashes (a rotated key's previous one until its grace ends)
    /// and its name.
    fn insert(&mut self, spec: KeySpec, in_flight: InFlight) {
        let held = Arc::new(Held { spec, in_flight });
        let s = &held.spec;
        if let Some((previous, until)) = s.previous {
            let until = s.expires_at_ms.map_or(until, |e| e.min(until));
            self.by_hash
                .insert(previous, (Arc::clone(&held), Some(until)));
        }
        self.by_hash
            .insert(s.hash, (Arc::clone(&held), s.expires_at_ms));
        self.by_name.insert(s.name.clone(), held);
    }
}

/// The in-flight count a key keeps: its previous version's (same id), else a fresh one.
fn carried(previous: Option<&Arc<Held>>, spec: &KeySpec, cap: usize) -> InFlight {
    previous
        .filter(|h| h.spec.id == spec.id)
        .map_or_else(|| InFlight::new(cap), |h| h.in_flight.clone())
}

/// The database keys, swapped whole by the sync task; cheap to read.
#[derive(Debug)]
pub struct DynamicKeys {
    table: ArcSwap<Table>,
    clock: Clock,
    /// Requests in flight a key may have (a share of `[server] max_in_flight`).
    in_flight_cap: usize,
}

impl DynamicKeys {
    /// An empty table; `server_max_in_flight` sets each key's in-flight cap (a share of it,
    /// as for TOML keys without `max_in_flight`).
    #[must_use]
    pub fn new(clock: Clock, server_max_in_flight: usize) -> Self {
        Self {
            table: ArcSwap::from_pointee(Table::default()),
            clock,
            in_flight_cap: in_flight::default_cap(server_max_in_flight),
        }
    }

    /// Replace the whole table with `keys` (the live ones: revoked keys are left out by the
    /// loader). A key already held keeps its in-flight count.
    pub fn replace(&self, keys: Vec<KeySpec>) {
        let old = self.table.load();
        let mut table = Table::default();
        for spec in keys {
            let in_flight = carried(old.by_name.get(&spec.name), &spec, self.in_flight_cap);
            table.insert(spec, in_flight);
        }
        self.table.store(Arc::new(table));
    }

    /// Replace only the keys with these `ids` by `keys` (their live versions, as loaded;
    /// an id without one is removed): what one change notification needs, without reading
    /// every key again.
    pub fn patch(&self, ids: &[i64], keys: Vec<KeySpec>) {
        let old = self.table.load();
        let ids: HashSet<i64> = ids.iter().copied().collect();
        let mut table = Table {
            by_hash: old.by_hash.clone(),
            by_name: old.by_name.clone(),
        };
        table.by_hash.retain(|_, (h, _)| !ids.contains(&h.spec.id));
        table.by_name.retain(|_, h| !ids.contains(&h.spec.id));
        let before: HashMap<i64, &Arc<Held>> = (old.by_name.values())
            .filter(|h| ids.contains(&h.spec.id))
            .map(|h| (h.spec.id, h))
            .collect();
        for spec in keys {
            let in_flight = carried(before.get(&spec.id).copied(), &spec, self.in_flight_cap);
            table.insert(spec, in_flight);
        }
        self.table.store(Arc::new(table));
    }

    /// The caller a token hash belongs to, if it is a live key's.
    #[must_use]
    pub fn authenticate(&self, digest: &[u8; 32]) -> Option<Caller> {
        let table = self.table.load();
        let (held, until) = table.by_hash.get(digest)?;
        if until.is_some_and(|u| self.clock.unix_ms() >= u) {
            return None;
        }
        let s = &held.spec;
        Some(Caller::from_parts(
            s.name.clone(),
            s.routes.clone(),
            s.limits,
            held.in_flight.clone(),
        ))
    }

    /// The team of the key named `name`, if it is a database key with one.
    #[must_use]
    pub fn team_of(&self, name: &str) -> Option<String> {
        self.table.load().by_name.get(name)?.spec.team.clone()
    }

    /// Is `name` a database key's name?
    #[must_use]
    pub fn has_name(&self, name: &str) -> bool {
        self.table.load().by_name.contains_key(name)
    }

    /// Keys held.
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.load().by_name.len()
    }

    /// No keys held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    fn spec(id: i64, name: &str, token: &str) -> KeySpec {
        KeySpec {
            id,
            name: name.into(),
            hash: Sha256::digest(token.as_bytes()).into(),
            previous: None,
            team: Some("blue".into()),
            routes: None,
            limits: KeyLimits::default(),
            expires_at_ms: None,
        }
    }

    fn digest(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }

    #[test]
    fn keys_authenticate_until_they_expire_and_old_tokens_until_their_grace_ends() {
        let clock = Clock::manual(1_000_000);
        let keys = DynamicKeys::new(clock, 1024);
        let mut a = spec(1, "a", "sy-new");
        a.previous = Some((digest("sy-old"), 1_060_000));
        a.expires_at_ms = Some(1_120_000);
        keys.replace(vec![a]);
        assert_eq!(keys.authenticate(&digest("sy-new")).unwrap().name, "a");
        assert!(keys.authenticate(&digest("sy-old")).is_some());
        assert_eq!(keys.team_of("a").as_deref(), Some("blue"));
        clock.advance(std::time::Duration::from_secs(60));
        assert!(keys.authenticate(&digest("sy-old")).is_none(), "grace over");
        assert!(keys.authenticate(&digest("sy-new")).is_some());
        clock.advance(std::time::Duration::from_secs(60));
        assert!(keys.authenticate(&digest("sy-new")).is_none(), "expired");
    }

    #[test]
    fn a_resync_keeps_a_keys_in_flight_count_and_drops_removed_keys() {
        let keys = DynamicKeys::new(Clock::manual(0), 1024);
        keys.replace(vec![spec(1, "a", "sy-a")]);
        let slot = keys.authenticate(&digest("sy-a")).unwrap().enter().unwrap();
        keys.replace(vec![spec(1, "a", "sy-a"), spec(2, "b", "sy-b")]);
        let again = keys.authenticate(&digest("sy-a")).unwrap();
        assert_eq!(again.in_flight.current(), 1);
        drop(slot);
        keys.replace(vec![spec(2, "b", "sy-b")]);
        assert!(keys.authenticate(&digest("sy-a")).is_none());
        assert_eq!(keys.len(), 1);
    }

    #[test]
    fn a_patch_changes_only_the_keys_it_names() {
        let keys = DynamicKeys::new(Clock::manual(0), 1024);
        keys.replace(vec![spec(1, "a", "sy-a"), spec(2, "b", "sy-b")]);
        let slot = keys.authenticate(&digest("sy-a")).unwrap().enter().unwrap();
        // a rotated (new token), b revoked (no live version), c new
        keys.patch(
            &[1, 2, 3],
            vec![spec(1, "a", "sy-a2"), spec(3, "c", "sy-c")],
        );
        assert!(keys.authenticate(&digest("sy-a")).is_none());
        let a = keys.authenticate(&digest("sy-a2")).unwrap();
        assert_eq!(a.in_flight.current(), 1, "the count carries over");
        assert!(keys.authenticate(&digest("sy-b")).is_none());
        assert!(keys.authenticate(&digest("sy-c")).is_some());
        keys.patch(&[4], Vec::new());
        assert_eq!(keys.len(), 2);
        drop(slot);
    }
}
