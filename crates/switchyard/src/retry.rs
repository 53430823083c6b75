//! Retries: classify, afford, wait.
//!
//! Owns the backoff ([`Backoff`], full jitter, seedable), Retry-After parsing in all its
//! forms ([`retry_after_from_headers`]) and the one retry decision ([`decide`]): retry only
//! kinds the route retries, within the provider's max attempts, waiting
//! `max(backoff, Retry-After)` — never less than the vendor asked — and only if the wait
//! fits both the deadline and `max_retry_after`; otherwise move on at once. The gateway runs
//! the loop around it.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::{KindPolicy, ProviderError};

/// A route's retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts per provider turn, first try included (1 = no retries).
    pub max_attempts: u32,
    /// Backoff base: the n-th retry waits up to `base · 2^n`.
    pub base_delay: Duration,
    /// Backoff cap.
    pub max_delay: Duration,
    /// The longest Retry-After worth waiting for; longer ones fail over at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 2,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(4),
            max_retry_after: Duration::from_secs(5),
        }
    }
}

/// Exponential backoff with full jitter: the n-th delay is uniform in
/// `[0, min(cap, base · 2^n)]`.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    n: u32,
    rng: fastrand::Rng,
}

impl Backoff {
    /// A backoff drawing from a fresh random seed.
    #[must_use]
    pub fn new(base: Duration, cap: Duration) -> Self {
        Self::with_rng(base, cap, fastrand::Rng::new())
    }

    /// A backoff drawing from `rng` (seed it for reproducible tests).
    #[must_use]
    pub fn with_rng(base: Duration, cap: Duration, rng: fastrand::Rng) -> Self {
        Self {
            base,
            cap,
            n: 0,
            rng,
        }
    }

    /// The ceiling of the n-th delay.
    #[must_use]
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 2u32.checked_pow(n).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(self.cap)
            .min(self.cap)
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let ceiling = self.ceiling(self.n);
        self.n = self.n.saturating_add(1);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Some(Duration::from_nanos(self.rng.u64(0..=nanos)))
    }
}

/// Parse a `Retry-After` value: delta-seconds (`"2"`, also `"1.5"` as some vendors send)
/// or an HTTP-date, relative to `now`. A date in the past means "now".
#[must_use]
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parse a `retry-after-ms` value (OpenAI, Azure): milliseconds, possibly fractional.
#[must_use]
pub fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let ms: f64 = value.trim().parse().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// The wait a response asks for, from its headers: `retry-after-ms` (more precise) wins
/// over `retry-after`. `header` looks a header up by lower-case name.
#[must_use]
pub fn retry_after_from_headers<'a>(
    header: impl Fn(&str) -> Option<&'a str>,
    now: SystemTime,
) -> Option<Duration> {
    header("retry-after-ms")
        .and_then(parse_retry_after_ms)
        .or_else(|| header("retry-after").and_then(|v| parse_retry_after(v, now)))
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Try the same provider again after this wait.
    Retry(Duration),
    /// Stop this provider's turn.
    Stop(StopReason),
}

/// Why a turn stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The route does not retry this kind.
    NotRetryable,
    /// The provider's attempts are used up.
    AttemptsExhausted,
    /// The vendor asked for a longer wait than `max_retry_after`.
    RetryAfterTooLong,
    /// The wait would not fit in the time left.
    NoTimeLeft,
}

/// Decide whether attempt number `attempt` (1-based) that failed with `err` is retried.
///
/// `backoff` is this retry's drawn delay; `time_left` is what remains of the deadline.
#[must_use]
pub fn decide(
    policy: &KindPolicy,
    retry: &RetryPolicy,
    max_attempts: u32,
    attempt: u32,
    err: &ProviderError,
    backoff: Duration,
    time_left: Duration,
) -> Decision {
    if !policy.retry {
        return Decision::Stop(StopReason::NotRetryable);
    }
    if attempt >= max_attempts {
        return Decision::Stop(StopReason::AttemptsExhausted);
    }
    let told = err.retry_after.unwrap_or(Duration::ZERO);
    if told > retry.max_retry_after {
        return Decision::Stop(StopReason::RetryAfterTooLong);
    }
    let wait = backoff.max(told);
    if wait >= time_left {
        return Decision::Stop(StopReason::NoTimeLeft);
    }
    Decision::Retry(wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn rate_limited(after: Option<Duration>) -> ProviderError {
        ProviderError::new(ErrorKind::RateLimited, "slow down").with_retry_after(after)
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_capped_ceiling() {
        let b = Backoff::with_rng(
            Duration::from_millis(100),
            Duration::from_millis(1000),
            fastrand::Rng::with_seed(7),
        );
        let ceilings: Vec<_> = (0..6).map(|n| b.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1000, 1000]);
        let delays: Vec<_> = b.clone().take(200).collect();
        for (n, d) in delays.iter().enumerate() {
            assert!(*d <= b.ceiling(u32::try_from(n).unwrap()));
        }
        // jitter: not all equal to the ceiling, and seeded draws repeat exactly
        assert!(delays.iter().any(|d| *d < Duration::from_millis(500)));
        let again: Vec<_> = b.take(200).collect();
        assert_eq!(delays, again);
    }

    #[test]
    fn retry_after_forms() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 10:00:00 GMT").unwrap();
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 10:00:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 09:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after_ms("250"),
            Some(Duration::from_millis(250))
        );
        let headers = [("retry-after", "3"), ("retry-after-ms", "2500")];
        let get = |name: &str| headers.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        assert_eq!(
            retry_after_from_headers(get, now),
            Some(Duration::from_millis(2500))
        );
    }

    #[test]
    fn never_retries_earlier_than_told() {
        let policy = ErrorKind::RateLimited.default_policy();
        let d = decide(
            &policy,
            &RetryPolicy::default(),
            3,
            1,
            &rate_limited(Some(Duration::from_secs(2))),
            Duration::from_millis(10),
            Duration::from_secs(20),
        );
        assert_eq!(d, Decision::Retry(Duration::from_secs(2)));
    }

    #[test]
    fn a_wait_that_does_not_fit_fails_over_now() {
        let policy = ErrorKind::RateLimited.default_policy();
        let err = rate_limited(Some(Duration::from_secs(3)));
        let retry = RetryPolicy::default();
        let short = Duration::from_secs(2);
        assert_eq!(
            decide(&policy, &retry, 3, 1, &err, Duration::ZERO, short),
            Decision::Stop(StopReason::NoTimeLeft)
        );
        let long = rate_limited(Some(Duration::from_secs(60)));
        assert_eq!(
            decide(
                &policy,
                &retry,
                3,
                1,
                &long,
                Duration::ZERO,
                Duration::from_secs(600)
            ),
            Decision::Stop(StopReason::RetryAfterTooLong)
        );
    }

    #[test]
    fn attempts_and_kinds_bound_retries() {
        let retry = RetryPolicy::default();
        let err = ProviderError::new(ErrorKind::Server, "500");
        let policy = ErrorKind::Server.default_policy();
        let big = Duration::from_secs(60);
        assert!(matches!(
            decide(&policy, &retry, 2, 1, &err, Duration::ZERO, big),
            Decision::Retry(_)
        ));
        assert_eq!(
            decide(&policy, &retry, 2, 2, &err, Duration::ZERO, big),
            Decision::Stop(StopReason::AttemptsExhausted)
        );
        let timeout = ErrorKind::Timeout.default_policy();
        assert_eq!(
            decide(&timeout, &retry, 2, 1, &err, Duration::ZERO, big),
            Decision::Stop(StopReason::NotRetryable)
        );
    }
}
