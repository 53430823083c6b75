//! What an active health check's verdict does to a breaker (pure, like the rest of
//! `breaker.rs`; the checker itself is `crate::health`).
//!
//! - A failed check counts like a failed turn: `failure_threshold` consecutive ones open
//!   the circuit before any user request is spent on the provider; Auth / ModelNotFound /
//!   QuotaExhausted open it at once. While half-open with no user probe out, a failed
//!   check reopens the circuit (as a failed probe would), sparing a user the probe.
//! - A passing check that proves traffic (a completion) closes the circuit from open or
//!   half-open; one that only proves reachability (a listing) turns open into half-open at
//!   once, so the next user request is the probe that confirms.
//! - Kinds that say nothing about health (ignored ones; a rate limit) change nothing.

use super::{Breaker, BreakerConfig, CircuitState, Transition, Trigger};
use crate::clock::UnixMillis;
use crate::fault::{BreakerEffect, ErrorKind};

impl Breaker {
    /// A health check failed with `kind`, whose effect under the route's policy is
    /// `effect`.
    pub fn on_check_failure(
        &mut self,
        cfg: &BreakerConfig,
        now: UnixMillis,
        kind: ErrorKind,
        effect: BreakerEffect,
    ) -> Option<Transition> {
        let at_once = match effect {
            BreakerEffect::Ignore | BreakerEffect::CoolForRetryAfter => return None,
            BreakerEffect::OpenNow => true,
            BreakerEffect::CountFailure => false,
        };
        self.last_error = Some(kind);
        match self.state(now) {
            CircuitState::Open => None,
            CircuitState::Closed => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                if at_once || self.consecutive_failures >= cfg.failure_threshold {
                    self.open(cfg, now, kind, at_once, None)
                } else {
                    None
                }
            }
            CircuitState::HalfOpen => {
                if self.probe.is_some_and(|(_, expires)| now < expires) {
                    return None; // a user probe is out: its outcome decides
                }
                // Reopen as a failed probe would: the check stands in for the probe.
                self.lease_seq += 1;
                let lease = self.lease_seq;
                self.probe = Some((lease, now));
                self.open(cfg, now, kind, at_once, Some(lease))
            }
        }
    }

    /// A health check passed. `proves_traffic`: it was a real request (a completion),
    /// not only a reachability check (a listing).
    pub fn on_check_success(
        &mut self,
        now: UnixMillis,
        proves_traffic: bool,
    ) -> Option<Transition> {
        let from = self.state(now);
        match (from, proves_traffic) {
            (CircuitState::Closed, _) => {
                self.consecutive_failures = 0;
                None
            }
            (CircuitState::Open, false) => {
                // Half-open from now: the next user request probes and confirms. The step
                // is reported here, so the probe's admission must not report it again.
                self.open_until = now;
                self.probe = None;
                self.half_open_noted = true;
                Some(Transition::new(
                    from,
                    CircuitState::HalfOpen,
                    now,
                    Trigger::CheckPassed,
                ))
            }
            (CircuitState::HalfOpen, false) => None,
            (CircuitState::Open | CircuitState::HalfOpen, true) => {
                *self = Breaker {
                    lease_seq: self.lease_seq,
                    open_until: self.open_until,
                    last_error: self.last_error,
                    cool_until_ms: self.cool_until_ms,
                    ..Breaker::default()
                };
                Some(Transition::new(
                    from,
                    CircuitState::Closed,
                    now,
                    Trigger::CheckPassed,
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::breaker::{Admission, Cooldown, SkipReason};

    const LEASE: Duration = Duration::from_secs(10);

    fn cfg(threshold: u32) -> BreakerConfig {
        BreakerConfig {
            failure_threshold: threshold,
            cooldown: Cooldown {
                base: Duration::from_secs(60),
                max: Duration::from_secs(240),
            },
        }
    }

    fn at(secs: u64) -> UnixMillis {
        secs * 1000
    }

    fn fail(b: &mut Breaker, c: &BreakerConfig, secs: u64) -> Option<Transition> {
        b.on_check_failure(c, at(secs), ErrorKind::Server, BreakerEffect::CountFailure)
    }

    #[test]
    fn consecutive_failed_checks_open_at_the_threshold() {
        let c = cfg(3);
        let mut b = Breaker::default();
        assert_eq!(fail(&mut b, &c, 0), None);
        assert_eq!(fail(&mut b, &c, 15), None);
        let t = fail(&mut b, &c, 30).unwrap();
        assert_eq!((t.from, t.to), (CircuitState::Closed, CircuitState::Open));
        assert_eq!(
            b.admit(at(31), LEASE),
            Admission::Reject(SkipReason::CircuitOpen)
        );
    }

    #[test]
    fn a_passing_check_resets_the_count() {
        let c = cfg(2);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0);
        assert_eq!(b.on_check_success(at(1), false), None);
        assert_eq!(fail(&mut b, &c, 2), None);
        assert_eq!(b.state(at(2)), CircuitState::Closed);
    }

    #[test]
    fn auth_opens_at_once_with_the_longest_cooldown() {
        let c = cfg(3);
        let mut b = Breaker::default();
        let t = b.on_check_failure(&c, at(0), ErrorKind::Auth, BreakerEffect::OpenNow);
        assert_eq!(t.unwrap().to, CircuitState::Open);
        assert_eq!(b.snapshot(at(1)).open_until, Some(240_000));
    }

    #[test]
    fn ignored_and_rate_limited_checks_change_nothing() {
        let c = cfg(1);
        let mut b = Breaker::default();
        let kind = ErrorKind::RateLimited;
        assert_eq!(
            b.on_check_failure(&c, at(0), kind, BreakerEffect::CoolForRetryAfter),
            None
        );
        let kind = ErrorKind::BadRequest;
        assert_eq!(
            b.on_check_failure(&c, at(0), kind, BreakerEffect::Ignore),
            None
        );
        assert_eq!(b, Breaker::default());
    }

    #[test]
    fn a_passing_listing_makes_an_open_circuit_half_open_at_once() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0); // open until 60
        let t = b.on_check_success(at(15), false).unwrap();
        assert_eq!((t.from, t.to), (CircuitState::Open, CircuitState::HalfOpen));
        let (admission, noted) = b.admit_noting(at(15), LEASE);
        let lease = admission.lease();
        assert!(lease.is_some(), "the next user request is the probe");
        assert_eq!(
            noted, None,
            "open -> half-open was reported by the check, once"
        );
        let t = b.on_success(at(16), lease).unwrap();
        assert_eq!(t.to, CircuitState::Closed, "the user request confirms");
    }

    #[test]
    fn a_passing_completion_closes_an_open_circuit_without_a_user_probe() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0);
        let t = b.on_check_success(at(15), true).unwrap();
        assert_eq!((t.from, t.to), (CircuitState::Open, CircuitState::Closed));
        assert_eq!(b.admit(at(15), LEASE), Admission::Admit);
        assert_eq!(b.snapshot(at(15)).consecutive_failures, 0);
    }

    #[test]
    fn a_failed_check_while_half_open_reopens_with_the_grown_cooldown() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0); // open until 60
        let t = fail(&mut b, &c, 60).unwrap();
        assert_eq!((t.from, t.to), (CircuitState::HalfOpen, CircuitState::Open));
        assert_eq!(b.snapshot(at(60)).open_until, Some(180_000));
    }

    #[test]
    fn a_failed_check_leaves_a_user_probe_in_flight_alone() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0);
        let lease = b.admit(at(60), LEASE).lease();
        assert_eq!(fail(&mut b, &c, 61), None);
        let t = b.on_success(at(62), lease).unwrap();
        assert_eq!(t.to, CircuitState::Closed);
    }

    #[test]
    fn a_failed_check_while_open_keeps_the_cooldown() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail(&mut b, &c, 0);
        assert_eq!(fail(&mut b, &c, 15), None);
        assert_eq!(b.snapshot(at(15)).open_until, Some(60_000));
    }
}
