//! The one time source.
//!
//! Owns how switchyard reads time. Everything time-dependent reads tokio's clock
//! ([`tokio::time::Instant`]), which tests pause and advance; wall-clock timestamps
//! (breaker `open_until`, request-log times, state shared between replicas) are derived
//! from it by anchoring one reading of the system clock at construction, so a paused test
//! moves both together. A manual clock ([`Clock::manual`]) is the exception that replays
//! need: its wall time stands still until its owner moves it (`switchyard demo` replays the
//! tutorial's request-counted cooldowns on one, a millisecond per request). Does not
//! schedule anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Milliseconds since the Unix epoch, as read through a [`Clock`].
pub type UnixMillis = u64;

/// Reads monotonic and wall time from one source.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The monotonic reading taken at construction; wall time advances with it.
    origin: Instant,
    /// The system clock at `origin`, in ms since the Unix epoch.
    origin_unix_ms: UnixMillis,
    /// A manual clock's wall time, shared by its copies and moved only by
    /// [`Clock::advance`]; `None` for a clock that follows tokio's.
    manual: Option<&'static AtomicU64>,
}

impl Clock {
    /// A clock anchored to the system time now.
    #[must_use]
    #[allow(clippy::disallowed_methods)] // the one sanctioned read of the system clock
    pub fn system() -> Self {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Self::anchored_at(duration_ms(unix))
    }

    /// A clock whose wall time reads `unix_ms` now (tests use fixed anchors).
    #[must_use]
    pub fn anchored_at(unix_ms: UnixMillis) -> Self {
        Self {
            origin: Instant::now(),
            origin_unix_ms: unix_ms,
            manual: None,
        }
    }

    /// A clock whose wall time reads `unix_ms` until [`Clock::advance`] moves it (its copies
    /// move with it). Only wall time is manual: the monotonic [`Clock::now`], which times
    /// deadlines and latencies, stays tokio's.
    ///
    /// So that clocks stay `Copy`, each manual clock keeps its reading (8 bytes) for the
    /// rest of the process: make one per replay, not one per request.
    #[must_use]
    pub fn manual(unix_ms: UnixMillis) -> Self {
        let reading: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(unix_ms)));
        Self {
            manual: Some(reading),
            ..Self::anchored_at(unix_ms)
        }
    }

    /// Move a manual clock's wall time forward by `by`; a clock that follows tokio's is not
    /// moved (advance tokio's paused time instead).
    pub fn advance(&self, by: Duration) {
        if let Some(ms) = &self.manual {
            let by = duration_ms(by);
            // fetch_update keeps the add saturating
            let _ = ms.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(by))
            });
        }
    }

    /// The monotonic now.
    #[must_use]
    pub fn now(&self) -> Instant {
        Instant::now()
    }

    /// Wall time now, in ms since the Unix epoch.
    #[must_use]
    pub fn unix_ms(&self) -> UnixMillis {
        self.unix_ms_at(Instant::now())
    }

    /// The wall time corresponding to a monotonic instant (a manual clock: its reading).
    #[must_use]
    pub fn unix_ms_at(&self, at: Instant) -> UnixMillis {
        if let Some(ms) = &self.manual {
            return ms.load(Ordering::SeqCst);
        }
        let since = at.saturating_duration_since(self.origin);
        self.origin_unix_ms.saturating_add(duration_ms(since))
    }

    /// Wall time now as a [`SystemTime`] (for HTTP-date parsing and logs).
    #[must_use]
    pub fn system_time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.unix_ms())
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

/// A duration in whole milliseconds, saturating.
#[must_use]
pub fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wall_time_moves_with_paused_time() {
        let clock = Clock::anchored_at(1_000);
        tokio::time::advance(Duration::from_millis(2_500)).await;
        assert_eq!(clock.unix_ms(), 3_500);
    }

    #[tokio::test(start_paused = true)]
    async fn a_manual_clock_moves_only_when_advanced_and_with_its_copies() {
        let clock = Clock::manual(7);
        let copy = clock;
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(clock.unix_ms(), 7);
        copy.advance(Duration::from_millis(3));
        assert_eq!(clock.unix_ms(), 10);
        assert_eq!(clock.unix_ms_at(clock.now()), 10);
        let follows = Clock::anchored_at(0);
        follows.advance(Duration::from_secs(1));
        assert_eq!(
            follows.unix_ms(),
            0,
            "only a manual clock is moved by advance"
        );
        clock.advance(Duration::MAX);
        assert_eq!(clock.unix_ms(), u64::MAX, "saturates");
    }
}
