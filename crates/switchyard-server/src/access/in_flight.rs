//! Requests in flight per client key: a key may hold at most its `max_in_flight` requests
//! at once (`[[keys]] max_in_flight`; default a quarter of `[server] max_in_flight`), so one
//! key — trickling request bodies, or holding streams open — cannot take every slot of the
//! server and lock the other keys out.
//!
//! Owns [`InFlight`] (a key's count and cap, shared by every request authenticated as it)
//! and [`KeySlot`] (one request's place in that count, given back when its last clone is
//! dropped: a streamed answer's writer holds a clone until the stream ends). The count is
//! this process's: in-flight requests are a process's resource, not a fleet's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::access::error::AccessError;

/// The default cap of a key is the server's in-flight cap divided by this.
pub const DEFAULT_SHARE: usize = 4;

/// How long a client refused at its key's cap is told to wait (`Retry-After`).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// One key's requests in flight and the most it may have.
#[derive(Debug, Clone)]
pub struct InFlight {
    count: Arc<AtomicUsize>,
    cap: usize,
}

impl PartialEq for InFlight {
    /// The same key's count (not two counts that happen to agree).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.count, &other.count) && self.cap == other.cap
    }
}

impl Eq for InFlight {}

impl InFlight {
    /// A fresh count with at most `cap` in flight (at least 1).
    #[must_use]
    pub fn new(cap: usize) -> Self {
        Self {
            count: Arc::new(AtomicUsize::new(0)),
            cap: cap.max(1),
        }
    }

    /// The same count (the requests already in flight go on counting) under a new `cap`
    /// (at least 1): a key whose `max_in_flight` a reload changed.
    #[must_use]
    pub fn with_cap(&self, cap: usize) -> Self {
        Self {
            count: Arc::clone(&self.count),
            cap: cap.max(1),
        }
    }

    /// The cap.
    #[must_use]
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Requests in flight now.
    #[must_use]
    pub fn current(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// A place for one more request of key `name`.
    ///
    /// # Errors
    /// 429 with `Retry-After` when the key has `cap` requests in flight already.
    pub fn enter(&self, name: &str) -> Result<KeySlot, AccessError> {
        let before = self.count.fetch_add(1, Ordering::AcqRel);
        let slot = KeySlot {
            _held: Arc::new(Held {
                count: Arc::clone(&self.count),
            }),
        };
        if before < self.cap {
            return Ok(slot);
        }
        drop(slot);
        Err(AccessError::rate_limited(
            format!(
                "key {name:?} has {} requests in flight, its limit ([[keys]] max_in_flight); retry when one has finished",
                self.cap
            ),
            RETRY_AFTER,
        ))
    }
}

/// One request's place in its key's count; the place is given back when the last clone is
/// dropped.
#[derive(Debug, Clone)]
pub struct KeySlot {
    _held: Arc<Held>,
}

#[derive(Debug)]
struct Held {
    count: Arc<AtomicUsize>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The cap of a key that sets none: [`DEFAULT_SHARE`]'s part of the server's cap.
#[must_use]
pub fn default_cap(server_max_in_flight: usize) -> usize {
    (server_max_in_flight / DEFAULT_SHARE).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_at_most_its_cap_and_gets_places_back() {
        let key = InFlight::new(2);
        let a = key.enter("k").unwrap();
        let b = key.enter("k").unwrap();
        let refused = key.enter("k").unwrap_err();
        assert_eq!(refused.status, 429);
        assert_eq!(refused.retry_after, Some(1));
        assert!(
            refused.message.contains("max_in_flight"),
            "{}",
            refused.message
        );
        assert_eq!(key.current(), 2, "a refusal takes no place");
        // a clone (a stream's writer) keeps the place until it is dropped too
        let a2 = a.clone();
        drop(a);
        assert_eq!(key.current(), 2);
        drop(a2);
        assert_eq!(key.current(), 1);
        let _c = key.enter("k").unwrap();
        drop(b);
        assert_eq!(key.current(), 1);
    }

    #[test]
    fn the_default_is_a_quarter_of_the_server() {
        assert_eq!(default_cap(1024), 256);
        assert_eq!(default_cap(3), 1);
        assert_eq!(InFlight::new(0).cap(), 1);
    }
}
