//! A small key-value store with expiry, in process: what `SharedState::kv_put` and friends
//! run on for the memory store, and the local half of a fleet store while Redis is away.
//!
//! Owns the entries and the bound on what they cost ([`KV_MEMORY_BYTES`] by default):
//! every entry counts its key, its value and [`KV_ENTRY_OVERHEAD`] (the maps' slots and the
//! allocations' headers), so the bound is what the process holds for them. Entries are kept
//! in expiry order beside the map, so a write drops what has expired and, when room is still
//! needed, the entries closest to expiry, each in O(log n) and each entry at most once:
//! O(1) entries touched per write, amortised, however full the store is. Values are shared
//! (`Arc<[u8]>`, allocated to their exact length): a read clones a pointer, and callers copy
//! and free values outside their lock ([`Evicted`]). Does not decide what is stored or for
//! how long: callers do (e.g. the server's stored Responses API answers).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::clock::UnixMillis;

/// Default bound on what the stored values cost one process (keys, values and
/// [`KV_ENTRY_OVERHEAD`] each): 256 MiB.
pub const KV_MEMORY_BYTES: usize = 256 * 1024 * 1024;

/// What one entry costs beyond its key and value bytes, counted against the bound: its slot
/// in the map (`(Arc<str>, Entry)` and a control byte, times 2.3 for a hash table between
/// 7/8 full and just grown), its place in the expiry order (`((u64, u64), Arc<str>)`, times
/// 2 for B-tree nodes half full, and the nodes' own fields), and the key's and the value's
/// allocations (each an `Arc` header of 16 bytes plus the allocator's 16 bytes and its
/// rounding).
pub const KV_ENTRY_OVERHEAD: usize = 256;

/// Values dropped by a write (replaced, expired or evicted): the caller drops them after
/// releasing its lock, so freeing megabytes never happens inside it.
pub(crate) type Evicted = Vec<Arc<[u8]>>;

/// One stored value.
#[derive(Debug)]
struct Entry {
    value: Arc<[u8]>,
    /// Its place in [`LocalKv::by_expiry`]: expiry (Unix ms) and a write sequence number
    /// (two entries may expire in the same millisecond).
    at: (UnixMillis, u64),
}

/// Entries with their expiry, bounded in bytes.
#[derive(Debug)]
pub(crate) struct LocalKv {
    entries: HashMap<Arc<str>, Entry>,
    /// Every entry's key by (expiry, sequence): the first is the next to go.
    by_expiry: BTreeMap<(UnixMillis, u64), Arc<str>>,
    next_seq: u64,
    /// What the entries cost (keys, values, [`KV_ENTRY_OVERHEAD`] each).
    bytes: usize,
    limit: usize,
    /// Entries a write removed to make room or because they had expired (for the test that
    /// writes stay O(1) entries each when the store is full).
    touched: u64,
}

impl Default for LocalKv {
    fn default() -> Self {
        Self::with_limit(KV_MEMORY_BYTES)
    }
}

/// What an entry of `key` and `value` costs against the bound.
fn cost(key: &str, value: &[u8]) -> usize {
    key.len()
        .saturating_add(value.len())
        .saturating_add(KV_ENTRY_OVERHEAD)
}

impl LocalKv {
    /// An empty store holding at most `limit` bytes.
    pub(crate) fn with_limit(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            by_expiry: BTreeMap::new(),
            next_seq: 0,
            bytes: 0,
            limit,
            touched: 0,
        }
    }

    /// Store `value` under `key` until `expires`; false when it can never fit. Expired
    /// entries go first, then those closest to expiry, until it fits. Returns what it
    /// dropped, for the caller to free outside its lock.
    pub(crate) fn put(
        &mut self,
        key: &str,
        value: Arc<[u8]>,
        expires: UnixMillis,
        now: UnixMillis,
    ) -> (bool, Evicted) {
        let mut evicted = Evicted::new();
        evicted.extend(self.remove(key));
        self.drop_expired(now, &mut evicted);
        let size = cost(key, &value);
        if size > self.limit {
            return (false, evicted);
        }
        while self.bytes + size > self.limit {
            let Some((_, first)) = self.by_expiry.first_key_value() else {
                break;
            };
            let first = Arc::clone(first);
            self.touched += 1;
            evicted.extend(self.remove(&first));
        }
        self.next_seq += 1;
        let at = (expires, self.next_seq);
        let key: Arc<str> = Arc::from(key);
        self.by_expiry.insert(at, Arc::clone(&key));
        self.entries.insert(key, Entry { value, at });
        self.bytes += size;
        (true, evicted)
    }

    /// The value under `key`, unless absent or expired (an expired one is dropped and
    /// returned as evicted).
    pub(crate) fn get(&mut self, key: &str, now: UnixMillis) -> (Option<Arc<[u8]>>, Evicted) {
        match self.entries.get(key) {
            Some(e) if now < e.at.0 => (Some(Arc::clone(&e.value)), Evicted::new()),
            Some(_) => (None, self.remove(key).into_iter().collect()),
            None => (None, Evicted::new()),
        }
    }

    /// Drop `key`: true when it was there and not expired.
    pub(crate) fn delete(&mut self, key: &str, now: UnixMillis) -> (bool, Evicted) {
        let live = self.entries.get(key).is_some_and(|e| now < e.at.0);
        (live, self.remove(key).into_iter().collect())
    }

    /// Drop every entry expired at `now` (each one found first in expiry order).
    fn drop_expired(&mut self, now: UnixMillis, evicted: &mut Evicted) {
        while let Some((&(expires, _), first)) = self.by_expiry.first_key_value() {
            if expires > now {
                break;
            }
            let first = Arc::clone(first);
            self.touched += 1;
            evicted.extend(self.remove(&first));
        }
    }

    fn remove(&mut self, key: &str) -> Option<Arc<[u8]>> {
        let (key, entry) = self.entries.remove_entry(key)?;
        self.by_expiry.remove(&entry.at);
        self.bytes -= cost(&key, &entry.value);
        Some(entry.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(kv: &mut LocalKv, key: &str, len: usize, expires: UnixMillis, now: UnixMillis) -> bool {
        kv.put(key, Arc::from(vec![0u8; len]), expires, now).0
    }

    fn get(kv: &mut LocalKv, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        kv.get(key, now).0.map(|v| v.to_vec())
    }

    /// The bound for `n` entries of a 2-byte key and an 8-byte value.
    fn room_for(n: usize) -> usize {
        n * (10 + KV_ENTRY_OVERHEAD)
    }

    #[test]
    fn entries_expire_and_deletes_say_whether_they_found_one() {
        let mut kv = LocalKv::default();
        assert!(kv.put("a", Arc::from(&b"one"[..]), 100, 0).0);
        assert_eq!(get(&mut kv, "a", 99), Some(b"one".to_vec()));
        assert_eq!(get(&mut kv, "a", 100), None, "expired at its expiry");
        assert!(put(&mut kv, "b", 3, 100, 0));
        assert!(kv.delete("b", 50).0);
        assert!(!kv.delete("b", 50).0);
        assert_eq!(kv.bytes, 0);
        assert!(kv.entries.is_empty() && kv.by_expiry.is_empty());
    }

    #[test]
    fn the_byte_bound_drops_expired_then_soonest_to_expire() {
        let mut kv = LocalKv::with_limit(room_for(3));
        assert!(put(&mut kv, "k1", 8, 50, 0));
        assert!(put(&mut kv, "k2", 8, 300, 0));
        assert!(put(&mut kv, "k3", 8, 200, 0));
        // at 60 k1 has expired: it makes the room
        assert!(put(&mut kv, "k4", 8, 400, 60));
        assert!(get(&mut kv, "k2", 60).is_some() && get(&mut kv, "k3", 60).is_some());
        // nothing expired: k3 (soonest to expire) goes
        assert!(put(&mut kv, "k5", 8, 500, 60));
        assert_eq!(get(&mut kv, "k3", 60), None);
        assert!(get(&mut kv, "k2", 60).is_some());
        assert!(kv.bytes <= room_for(3));
        assert!(!put(&mut kv, "huge", room_for(3), 500, 60), "never fits");
        assert_eq!(
            kv.entries.len(),
            3,
            "a value that never fits evicts nothing"
        );
    }

    #[test]
    fn eviction_follows_expiry_order_and_ties_go_oldest_first() {
        let old = ["k1", "k2", "k3", "k4"];
        let mut kv = LocalKv::with_limit(room_for(4));
        for (key, expires) in old.iter().zip([40, 10, 30, 10]) {
            assert!(put(&mut kv, key, 8, expires, 0));
        }
        let mut order = Vec::new();
        for new in ["n1", "n2", "n3", "n4"] {
            let (kept, evicted) = kv.put(new, Arc::from(vec![0; 8]), 1000, 0);
            assert!(kept);
            assert_eq!(evicted.len(), 1, "one out for one in");
            let gone = old
                .iter()
                .find(|k| !kv.entries.contains_key(**k) && !order.contains(*k));
            order.push(*gone.unwrap());
        }
        assert_eq!(order, ["k2", "k4", "k3", "k1"]);
    }

    #[test]
    fn expired_entries_are_dropped_by_the_next_write_even_with_room_to_spare() {
        let mut kv = LocalKv::with_limit(room_for(100));
        for i in 0..10 {
            assert!(put(&mut kv, &format!("e{i}"), 8, 5, 0));
        }
        let (kept, evicted) = kv.put("new", Arc::from(vec![1; 8]), 100, 5);
        assert!(kept);
        assert_eq!(evicted.len(), 10, "all ten expired at 5");
        assert_eq!(kv.entries.len(), 1);
        assert_eq!(kv.bytes, cost("new", &[0; 8]));
    }

    #[test]
    fn every_entry_costs_its_key_its_value_and_the_overhead() {
        let mut kv = LocalKv::with_limit(usize::MAX);
        assert!(put(&mut kv, "resp_1", 1000, 10, 0));
        assert_eq!(kv.bytes, 6 + 1000 + KV_ENTRY_OVERHEAD);
        // a store bounded at 1 MiB holds fewer 1 KB values than 1 MiB / 1 KB
        let mut kv = LocalKv::with_limit(1 << 20);
        for i in 0..2000 {
            put(&mut kv, &format!("resp_{i:04}"), 1000, 1_000_000, 0);
        }
        assert!(kv.bytes <= 1 << 20);
        assert_eq!(kv.entries.len(), (1 << 20) / (9 + 1000 + KV_ENTRY_OVERHEAD));
        // the honest overhead is at least what the map's and the order's slots take
        let slots = std::mem::size_of::<(Arc<str>, Entry)>()
            + std::mem::size_of::<((UnixMillis, u64), Arc<str>)>();
        assert!(KV_ENTRY_OVERHEAD >= 2 * slots, "{slots}");
    }

    #[test]
    fn a_full_store_touches_a_few_entries_per_write_not_all_of_them() {
        let mut kv = LocalKv::with_limit(1 << 20);
        let mut now = 0;
        let mut write = |kv: &mut LocalKv, i: u64| {
            now += 1;
            assert!(put(kv, &format!("resp_{i:08}"), 1000, now + 1_000_000, now));
        };
        let mut i = 0;
        while kv.touched == 0 {
            write(&mut kv, i); // until the first eviction: the store is full
            i += 1;
        }
        let held = kv.entries.len() as u64;
        assert!(held > 500, "{held} entries fill the bound");
        let before = kv.touched;
        for j in 0..10_000 {
            write(&mut kv, i + j);
        }
        let per_write = (kv.touched - before) as f64 / 10_000.0;
        assert!(
            per_write <= 3.0,
            "{per_write} entries touched per write ({held} held)"
        );
        assert!(kv.bytes <= kv.limit);
        assert_eq!(kv.entries.len(), kv.by_expiry.len());
    }

    #[test]
    fn replacing_a_key_counts_its_bytes_once() {
        let mut kv = LocalKv::with_limit(room_for(10));
        for _ in 0..50 {
            assert!(put(&mut kv, "k", 10, 10, 0));
        }
        assert_eq!(kv.bytes, cost("k", &[0; 10]));
        assert_eq!((kv.entries.len(), kv.by_expiry.len()), (1, 1));
    }
}
