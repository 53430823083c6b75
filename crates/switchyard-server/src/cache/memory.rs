//! The cache's in-process store: entries least recently used first out, bounded in bytes.
//!
//! Owns the bound ([`Memory::new`]'s `max_bytes`): every entry counts its key, its encoded
//! size (what the same entry would take in Redis) and [`ENTRY_OVERHEAD`], and a write that
//! passes the bound drops the least recently read or written entries until it fits. Entries
//! past their last use (`ttl` + `stale_if_error`) are dropped when read. Values are shared
//! (`Arc`): a hit clones a pointer under the lock, never the answer.

use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::Entry;

/// What one entry costs beyond its key and its encoded answer: the map's slot and list
/// links, the `Arc` and the decoded answer's own allocations (a rough, generous figure:
/// the decoded answer holds its strings once more, and small answers are mostly overhead).
pub(crate) const ENTRY_OVERHEAD: usize = 512;

struct Stored {
    entry: Arc<Entry>,
    /// When it may no longer be served at all (Unix ms).
    until_ms: u64,
    cost: usize,
}

struct Inner {
    map: LruCache<Arc<str>, Stored>,
    bytes: usize,
}

/// Entries by key, least recently used first out.
pub(crate) struct Memory {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

impl Memory {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                map: LruCache::unbounded(),
                bytes: 0,
            }),
            max_bytes,
        }
    }

    /// The entry under `key` (now the most recently used), unless it is past `until`.
    pub(crate) fn get(&self, key: &str, now_ms: u64) -> Option<Arc<Entry>> {
        let mut dropped = None;
        let found = {
            let mut inner = self.lock();
            match inner.map.get(key) {
                Some(s) if s.until_ms > now_ms => Some(Arc::clone(&s.entry)),
                Some(_) => {
                    dropped = inner.map.pop(key);
                    if let Some(d) = &dropped {
                        inner.bytes -= d.cost;
                    }
                    None
                }
                None => None,
            }
        };
        drop(dropped);
        found
    }

    /// Keep `entry` under `key` until `until_ms`, dropping the least recently used entries
    /// while the store is over its bound. An entry larger than the whole bound is not kept.
    pub(crate) fn put(&self, key: Arc<str>, entry: Arc<Entry>, encoded: usize, until_ms: u64) {
        let cost = key.len() + encoded + ENTRY_OVERHEAD;
        if cost > self.max_bytes {
            return;
        }
        // dropped outside the lock: freeing a large answer never holds other requests
        let mut evicted = Vec::new();
        {
            let mut inner = self.lock();
            if let Some(old) = inner.map.put(
                key,
                Stored {
                    entry,
                    until_ms,
                    cost,
                },
            ) {
                inner.bytes -= old.cost;
                evicted.push(old);
            }
            inner.bytes += cost;
            while inner.bytes > self.max_bytes {
                let Some((_, old)) = inner.map.pop_lru() else {
                    break;
                };
                inner.bytes -= old.cost;
                evicted.push(old);
            }
        }
        drop(evicted);
    }

    /// Entries held and what they cost (for tests and the metrics).
    pub(crate) fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.map.len(), inner.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // a panic while holding the lock leaves counts that are still consistent
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Arc<Entry> {
        Arc::new(Entry::for_tests(text, 0))
    }

    #[test]
    fn the_least_recently_used_entry_goes_first_when_the_bound_is_passed() {
        let one = 1 + 100 + ENTRY_OVERHEAD;
        let mem = Memory::new(3 * one);
        for k in ["a", "b", "c"] {
            mem.put(k.into(), entry(k), 100, 1_000);
        }
        assert_eq!(mem.usage(), (3, 3 * one));
        // reading a makes b the least recently used
        assert!(mem.get("a", 0).is_some());
        mem.put("d".into(), entry("d"), 100, 1_000);
        assert!(mem.get("b", 0).is_none(), "b was least recently used");
        for k in ["a", "c", "d"] {
            assert!(mem.get(k, 0).is_some(), "{k} kept");
        }
        assert_eq!(mem.usage(), (3, 3 * one));
    }

    #[test]
    fn a_large_entry_evicts_as_many_as_it_needs_and_one_over_the_bound_is_not_kept() {
        let small = 1 + 100 + ENTRY_OVERHEAD;
        let mem = Memory::new(4 * small);
        for k in ["a", "b", "c", "d"] {
            mem.put(k.into(), entry(k), 100, 1_000);
        }
        // needs the room of two small entries and a bit more: three go
        mem.put("e".into(), entry("e"), 2 * small + 50, 1_000);
        assert_eq!(mem.usage().0, 2);
        assert!(mem.get("d", 0).is_some() && mem.get("e", 0).is_some());
        mem.put("huge".into(), entry("huge"), 4 * small, 1_000);
        assert!(mem.get("huge", 0).is_none());
        assert!(mem.usage().1 <= 4 * small);
    }

    #[test]
    fn an_entry_past_its_last_use_is_dropped_when_read_and_replacing_counts_once() {
        let mem = Memory::new(1 << 20);
        mem.put("a".into(), entry("a"), 100, 1_000);
        mem.put("a".into(), entry("a2"), 200, 1_000);
        assert_eq!(mem.usage(), (1, 1 + 200 + ENTRY_OVERHEAD));
        assert!(mem.get("a", 999).is_some());
        assert!(mem.get("a", 1_000).is_none());
        assert_eq!(mem.usage(), (0, 0));
    }
}
