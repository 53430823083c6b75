//! A small key-value store with expiry, in process: what `SharedState::kv_put` and friends
//! run on for the memory store, and the local half of a fleet store while Redis is away.
//!
//! Owns the entries and the bound on their total size ([`KV_MEMORY_BYTES`] by default):
//! expired entries are dropped first when room is needed, then the ones closest to expiry.
//! Does not decide what is stored or for how long: callers do (e.g. the server's stored
//! Responses API answers).

use std::collections::HashMap;

use crate::clock::UnixMillis;

/// Default bound on the bytes (keys and values) one process keeps: 256 MiB.
pub const KV_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// Entries with their expiry (Unix ms) and the bytes they hold.
#[derive(Debug)]
pub(crate) struct LocalKv {
    entries: HashMap<String, (Vec<u8>, UnixMillis)>,
    bytes: usize,
    limit: usize,
}

impl Default for LocalKv {
    fn default() -> Self {
        Self::with_limit(KV_MEMORY_BYTES)
    }
}

impl LocalKv {
    /// An empty store holding at most `limit` bytes.
    pub(crate) fn with_limit(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            bytes: 0,
            limit,
        }
    }

    /// Store `value` under `key` until `expires`; false when it can never fit.
    pub(crate) fn put(
        &mut self,
        key: &str,
        value: Vec<u8>,
        expires: UnixMillis,
        now: UnixMillis,
    ) -> bool {
        self.remove(key);
        let size = key.len() + value.len();
        if size > self.limit {
            return false;
        }
        if self.bytes + size > self.limit {
            self.make_room(size, now);
        }
        self.bytes += size;
        self.entries.insert(key.to_owned(), (value, expires));
        true
    }

    /// The value under `key`, unless absent or expired (an expired one is dropped).
    pub(crate) fn get(&mut self, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        match self.entries.get(key) {
            Some((value, expires)) if now < *expires => Some(value.clone()),
            Some(_) => {
                self.remove(key);
                None
            }
            None => None,
        }
    }

    /// Drop `key`: true when it was there and not expired.
    pub(crate) fn delete(&mut self, key: &str, now: UnixMillis) -> bool {
        let live = self.entries.get(key).is_some_and(|(_, e)| now < *e);
        self.remove(key);
        live
    }

    fn remove(&mut self, key: &str) {
        if let Some((value, _)) = self.entries.remove(key) {
            self.bytes -= key.len() + value.len();
        }
    }

    /// Drop expired entries, then the soonest to expire, until `size` more bytes fit.
    fn make_room(&mut self, size: usize, now: UnixMillis) {
        let expired: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, (_, e))| *e <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            self.remove(&k);
        }
        if self.bytes + size <= self.limit {
            return;
        }
        let mut by_expiry: Vec<(UnixMillis, String)> = self
            .entries
            .iter()
            .map(|(k, (_, e))| (*e, k.clone()))
            .collect();
        by_expiry.sort_unstable();
        for (_, k) in by_expiry {
            if self.bytes + size <= self.limit {
                break;
            }
            self.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_deletes_say_whether_they_found_one() {
        let mut kv = LocalKv::default();
        assert!(kv.put("a", b"one".to_vec(), 100, 0));
        assert_eq!(kv.get("a", 99), Some(b"one".to_vec()));
        assert_eq!(kv.get("a", 100), None, "expired at its expiry");
        assert!(kv.put("b", b"two".to_vec(), 100, 0));
        assert!(kv.delete("b", 50));
        assert!(!kv.delete("b", 50));
        assert_eq!(kv.bytes, 0);
    }

    #[test]
    fn the_byte_bound_drops_expired_then_soonest_to_expire() {
        let mut kv = LocalKv::with_limit(30);
        assert!(kv.put("k1", vec![0; 8], 50, 0)); // 10 bytes
        assert!(kv.put("k2", vec![0; 8], 300, 0));
        assert!(kv.put("k3", vec![0; 8], 200, 0));
        // at 60 k1 has expired: it makes the room
        assert!(kv.put("k4", vec![0; 8], 400, 60));
        assert!(kv.get("k2", 60).is_some() && kv.get("k3", 60).is_some());
        // nothing expired: k3 (soonest to expire) goes
        assert!(kv.put("k5", vec![0; 8], 500, 60));
        assert_eq!(kv.get("k3", 60), None);
        assert!(kv.get("k2", 60).is_some());
        assert!(kv.bytes <= 30);
        assert!(!kv.put("huge", vec![0; 40], 500, 60), "never fits");
    }

    #[test]
    fn replacing_a_key_counts_its_bytes_once() {
        let mut kv = LocalKv::with_limit(100);
        for _ in 0..50 {
            assert!(kv.put("k", vec![0; 10], 10, 0));
        }
        assert_eq!(kv.bytes, 11);
    }
}
