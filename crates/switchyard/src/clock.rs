//! The one time source.
//!
//! Owns how switchyard reads time. Everything time-dependent reads tokio's clock
//! ([`tokio::time::Instant`]), which tests pause and advance; wall-clock timestamps
//! (breaker `open_until`, request-log times, state shared between replicas) are derived
//! from it by anchoring one reading of the system clock at construction, so a paused test
//! moves both together. Does not schedule anything.

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

    /// The wall time corresponding to a monotonic instant.
    #[must_use]
    pub fn unix_ms_at(&self, at: Instant) -> UnixMillis {
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
}
