//! Rate limits: the generic cell rate algorithm (GCRA), as pure arithmetic.
//!
//! Owns [`Gcra`]: one number per bucket, the *theoretical arrival time* (TAT). A limit of
//! `L` per minute spaces units `60 s / L` apart and allows a burst of a whole minute's
//! worth; admitting `n` units moves the TAT forward by `n` spacings, and is refused when
//! that would put it more than a minute ahead of now — the excess is exactly how long to
//! wait. Where buckets live (memory, Redis) is `state`'s business; who is limited (client
//! keys) is the server's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::UnixMillis;

/// The period a limit is counted over.
pub const PERIOD: Duration = Duration::from_secs(60);
const PERIOD_US: u64 = 60_000_000;

/// One bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gcra {
    /// Theoretical arrival time, µs since the Unix epoch.
    pub tat_us: u64,
}

/// Microseconds between units for `limit` per minute (at least 1).
#[must_use]
pub fn spacing_us(limit: u64) -> u64 {
    (PERIOD_US / limit.max(1)).max(1)
}

impl Gcra {
    /// Admit `cost` units against `limit` per minute, counting them if admitted;
    /// otherwise the wait until they would fit. A `cost` of 0 only checks that one unit
    /// would fit (the limit is not reached), counting nothing.
    ///
    /// # Errors
    /// The wait, when over the limit.
    pub fn admit(&mut self, limit: u64, cost: u64, now: UnixMillis) -> Result<(), Duration> {
        let now_us = now.saturating_mul(1000);
        let t = spacing_us(limit);
        let tat = self.tat_us.max(now_us);
        let probe = tat.saturating_add(cost.max(1).saturating_mul(t));
        let ahead = probe - now_us;
        if ahead > PERIOD_US.max(t) {
            return Err(Duration::from_micros(ahead - PERIOD_US.max(t)));
        }
        if cost > 0 {
            self.tat_us = tat.saturating_add(cost.saturating_mul(t));
        }
        Ok(())
    }

    /// Count `amount` units without checking (tokens used, known after the call).
    pub fn add(&mut self, limit: u64, amount: u64, now: UnixMillis) {
        let now_us = now.saturating_mul(1000);
        self.tat_us = self
            .tat_us
            .max(now_us)
            .saturating_add(amount.saturating_mul(spacing_us(limit)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: UnixMillis = 1_800_000_000_000;

    #[test]
    fn a_minutes_burst_then_the_exact_wait() {
        let mut g = Gcra::default();
        for _ in 0..3 {
            assert!(g.admit(3, 1, T0).is_ok());
        }
        // the fourth must wait for the first to leave the minute: 20 s (one spacing)
        assert_eq!(g.admit(3, 1, T0), Err(Duration::from_secs(20)));
        assert_eq!(g.admit(3, 1, T0 + 5_000), Err(Duration::from_secs(15)));
        assert!(g.admit(3, 1, T0 + 20_000).is_ok());
        assert!(
            g.admit(3, 1, T0 + 120_000).is_ok(),
            "quiet minutes later it is free again"
        );
    }

    #[test]
    fn zero_cost_checks_without_counting_and_usage_is_added_after() {
        let mut g = Gcra::default();
        assert!(g.admit(1000, 0, T0).is_ok());
        assert_eq!(g.tat_us, 0, "a check counts nothing");
        g.add(1000, 1500, T0); // a call used 1500 tokens of a 1000/min budget
        let wait = g.admit(1000, 0, T0).unwrap_err();
        // 1.5 minutes of tokens queued: one more fits after 30.06 s
        assert_eq!(wait, Duration::from_micros(30_060_000));
        assert!(g.admit(1000, 0, T0 + 30_060).is_ok());
    }

    #[test]
    fn a_cost_larger_than_a_minute_is_refused_with_its_wait() {
        let mut g = Gcra::default();
        assert_eq!(g.admit(10, 11, T0), Err(Duration::from_secs(6)));
    }
}
