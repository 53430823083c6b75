//! One provider's circuit breaker: Closed / Open / HalfOpen, as pure transitions.
//!
//! Owns the state machine and nothing else: every method takes `now` and returns what
//! changed; where the state lives (a local map, Redis) is `state`'s business, and who is
//! told about transitions is the gateway's.
//!
//! - Closed: traffic flows; consecutive failed *turns* are counted; `failure_threshold` of
//!   them opens the circuit. Auth / QuotaExhausted / ModelNotFound open it at once with the
//!   longest cooldown. A Retry-After keeps the provider *cooling* (skipped) until it passes,
//!   without counting as a failure.
//! - Open: everything is skipped until the cooldown passes; results that straggle in are
//!   ignored.
//! - HalfOpen: exactly one probe is admitted, holding a lease that expires, so a probe
//!   whose caller vanished cannot wedge the circuit. Probe success closes (cooldown
//!   resets); probe failure reopens with the cooldown doubled up to `max_cooldown`.
//!   Open turns HalfOpen by the clock alone; that step is reported (once per opening,
//!   stamped with the moment the cooldown ran out) when the first probe is admitted.
//!
//! The defaults (10 s doubling to at most 15 s) bound recovery: a provider that comes back
//! carries traffic again at most `max_cooldown` plus one request gap after recovering,
//! however long it was down, while one that stays down sees one probe per cooldown.
//!
//! Cooldowns are measured in time only. (The tutorial of docs/tutorial.md counts its
//! cooldown in requests; `switchyard demo` replays it on a paused clock that moves one
//! millisecond per request, so its cooldown is a time like any other.)
//!
//! Active health checks feed the same machine through their own ops (`check.rs`).

mod check;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{duration_ms, UnixMillis};
use crate::fault::{BreakerEffect, ErrorKind};
pub use crate::trail::SkipReason;

/// How long a circuit stays open: `base` after opening, doubled per failed probe up to
/// `max`.
///
/// `max` bounds how late a recovered provider is noticed (one cooldown, plus the time until
/// the next request probes); `base` bounds how often one that stays down is probed (at most
/// once per cooldown). With `base == max` the cooldown never grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cooldown {
    /// First cooldown.
    pub base: Duration,
    /// Longest cooldown (also used at once for Auth / QuotaExhausted / ModelNotFound).
    pub max: Duration,
}

/// A breaker's settings (per route; state is per provider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerConfig {
    /// Consecutive failed turns that open the circuit.
    pub failure_threshold: u32,
    /// How long it stays open.
    pub cooldown: Cooldown,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failure_threshold: 3,
            cooldown: Cooldown {
                base: DEFAULT_COOLDOWN,
                max: DEFAULT_MAX_COOLDOWN,
            },
        }
    }
}

/// The default first cooldown: a short blip is probed again soon.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(10);

/// The default longest cooldown. A recovered provider carries traffic again at most this
/// long (plus the gap to the next request) after recovering, however long the outage.
pub const DEFAULT_MAX_COOLDOWN: Duration = Duration::from_secs(15);

/// The three states, in the standard words (Closed = traffic flows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    /// Traffic flows.
    Closed,
    /// Everything is skipped until the cooldown passes.
    Open,
    /// One probe may go through.
    HalfOpen,
}

impl CircuitState {
    /// Lower-case label for metrics and JSON.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
        }
    }
}

/// The breaker's answer to "may this request call the provider?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Closed: go ahead.
    Admit,
    /// Half-open: go ahead as the one probe, holding lease `lease`.
    Probe {
        /// Identifies this probe; pass it back with the result.
        lease: u64,
    },
    /// Not now.
    Reject(SkipReason),
}

impl Admission {
    /// The probe lease, if this admission is the probe.
    #[must_use]
    pub fn lease(self) -> Option<u64> {
        match self {
            Self::Probe { lease } => Some(lease),
            Self::Admit | Self::Reject(_) => None,
        }
    }
}

/// A state change, for observers (logs, metrics, the dashboard's timeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Transition {
    /// Before.
    pub from: CircuitState,
    /// After.
    pub to: CircuitState,
    /// The failure kind that caused it, for openings.
    pub cause: Option<ErrorKind>,
    /// When.
    pub at_ms: UnixMillis,
    /// What made it: a request's failures or probe, the cooldown, a health check, or
    /// another replica of the fleet.
    pub trigger: Trigger,
    /// For an opening: how long the circuit stays open (ms) before a probe may go.
    pub cooldown_ms: Option<u64>,
}

impl Transition {
    /// A change from `from` to `to` at `at_ms`, by `trigger` (no cause, no cooldown).
    #[must_use]
    pub fn new(from: CircuitState, to: CircuitState, at_ms: UnixMillis, trigger: Trigger) -> Self {
        Self {
            from,
            to,
            cause: None,
            at_ms,
            trigger,
            cooldown_ms: None,
        }
    }
}

/// What made a circuit change state (the log line's `why`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// Requests' failures reached the threshold, or one opens the circuit at once.
    Failures,
    /// The cooldown ran out: the next request is the probe.
    Cooldown,
    /// The half-open probe succeeded.
    ProbeSucceeded,
    /// The half-open probe failed: reopened with a longer cooldown.
    ProbeFailed,
    /// An active health check passed.
    CheckPassed,
    /// An active health check failed.
    CheckFailed,
    /// Another replica of the fleet changed it (learned through the shared state).
    Fleet,
}

impl Trigger {
    /// Lower-case label for logs.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Failures => "failures",
            Self::Cooldown => "cooldown_over",
            Self::ProbeSucceeded => "probe_succeeded",
            Self::ProbeFailed => "probe_failed",
            Self::CheckPassed => "health_check_passed",
            Self::CheckFailed => "health_check_failed",
            Self::Fleet => "another_replica",
        }
    }
}

/// One provider's breaker state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Breaker {
    state: StateTag,
    /// Consecutive failed turns while closed (kept through a cooldown, like the tutorial's).
    consecutive_failures: u32,
    /// Open until this wall time.
    open_until: u64,
    /// Skipped until this wall time because of a Retry-After.
    cool_until_ms: UnixMillis,
    /// How many times the cooldown has doubled since the circuit last closed.
    level: u32,
    /// The live probe's lease id and expiry, if a probe is out.
    probe: Option<(u64, UnixMillis)>,
    /// Last lease id handed out.
    lease_seq: u64,
    /// The failure that last opened the circuit.
    opened_by: Option<ErrorKind>,
    /// The most recent failure of any kind.
    last_error: Option<ErrorKind>,
    /// The open → half-open step of the current opening has been reported (it happens by
    /// the clock; it is reported when the first probe is admitted).
    #[serde(default)]
    half_open_noted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
enum StateTag {
    #[default]
    Closed,
    Open,
}

/// A read-only view of a breaker for health reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BreakerSnapshot {
    /// Closed / Open / HalfOpen as of `now`.
    pub state: CircuitState,
    /// Consecutive failed turns.
    pub consecutive_failures: u32,
    /// Open until this wall time, when open or half-open.
    pub open_until: Option<u64>,
    /// The end of the most recent opening, even if since closed (0: never opened).
    pub last_open_until: u64,
    /// Cooling (Retry-After) until this wall time, if in the future.
    pub cooling_until_ms: Option<UnixMillis>,
    /// The failure that opened the circuit.
    pub opened_by: Option<ErrorKind>,
    /// The most recent failure.
    pub last_error: Option<ErrorKind>,
    /// True while a probe holds the lease.
    pub probe_in_flight: bool,
}

impl Breaker {
    /// The state as of `now` (Open turns HalfOpen once its cooldown has passed).
    #[must_use]
    pub fn state(&self, now: UnixMillis) -> CircuitState {
        match self.state {
            StateTag::Closed => CircuitState::Closed,
            StateTag::Open if now < self.open_until => CircuitState::Open,
            StateTag::Open => CircuitState::HalfOpen,
        }
    }

    /// May a request call the provider now? A half-open admission takes the probe lease
    /// until `now + lease_for`.
    pub fn admit(&mut self, now: UnixMillis, lease_for: Duration) -> Admission {
        self.admit_noting(now, lease_for).0
    }

    /// [`Breaker::admit`], and the open → half-open transition when this admission is the
    /// first probe of the opening (the step itself happened when the cooldown ran out).
    pub fn admit_noting(
        &mut self,
        now: UnixMillis,
        lease_for: Duration,
    ) -> (Admission, Option<Transition>) {
        let admission = self.admit_only(now, lease_for);
        if admission.lease().is_none() || self.half_open_noted {
            return (admission, None);
        }
        self.half_open_noted = true;
        let at_ms = self.open_until.min(now);
        let transition = Transition::new(
            CircuitState::Open,
            CircuitState::HalfOpen,
            at_ms,
            Trigger::Cooldown,
        );
        (admission, Some(transition))
    }

    fn admit_only(&mut self, now: UnixMillis, lease_for: Duration) -> Admission {
        if now < self.cool_until_ms {
            return Admission::Reject(SkipReason::Cooling);
        }
        match self.state(now) {
            CircuitState::Closed => Admission::Admit,
            CircuitState::Open => Admission::Reject(SkipReason::CircuitOpen),
            CircuitState::HalfOpen => match self.probe {
                Some((_, expires)) if now < expires => Admission::Reject(SkipReason::ProbeInFlight),
                _ => {
                    self.lease_seq += 1;
                    let lease = self.lease_seq;
                    self.probe = Some((lease, now.saturating_add(duration_ms(lease_for))));
                    Admission::Probe { lease }
                }
            },
        }
    }

    /// Extend a live probe's lease (the probe is starting another attempt).
    pub fn renew(&mut self, lease: u64, until_ms: UnixMillis) {
        if let Some((id, expires)) = &mut self.probe {
            if *id == lease {
                *expires = (*expires).max(until_ms);
            }
        }
    }

    /// Give the lease back without a verdict (the probe was cancelled): the next request
    /// may probe at once.
    pub fn release(&mut self, lease: u64) {
        if self.probe.is_some_and(|(id, _)| id == lease) {
            self.probe = None;
        }
    }

    /// A turn on the provider succeeded.
    pub fn on_success(&mut self, now: UnixMillis, lease: Option<u64>) -> Option<Transition> {
        match self.state(now) {
            CircuitState::Closed => {
                self.consecutive_failures = 0;
                None
            }
            CircuitState::Open => None, // a straggler: ignored
            CircuitState::HalfOpen => {
                if !self.holds(lease) {
                    return None; // not the probe: ignored
                }
                let from = CircuitState::HalfOpen;
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
                    Trigger::ProbeSucceeded,
                ))
            }
        }
    }

    /// One attempt failed: applies what cannot wait for the end of the turn (opening at
    /// once; cooling for a Retry-After).
    pub fn on_attempt_failure(
        &mut self,
        cfg: &BreakerConfig,
        now: UnixMillis,
        kind: ErrorKind,
        effect: BreakerEffect,
        retry_after: Option<Duration>,
        lease: Option<u64>,
    ) -> Option<Transition> {
        self.last_error = Some(kind);
        match effect {
            BreakerEffect::CoolForRetryAfter => {
                if let Some(wait) = retry_after {
                    let until = now.saturating_add(duration_ms(wait));
                    self.cool_until_ms = self.cool_until_ms.max(until);
                }
                None
            }
            BreakerEffect::OpenNow => self.open(cfg, now, kind, true, lease),
            BreakerEffect::CountFailure | BreakerEffect::Ignore => None,
        }
    }

    /// A turn ended without success; `effect` is that of its last error.
    pub fn on_turn_failure(
        &mut self,
        cfg: &BreakerConfig,
        now: UnixMillis,
        kind: ErrorKind,
        effect: BreakerEffect,
        lease: Option<u64>,
    ) -> Option<Transition> {
        let state = self.state(now);
        match effect {
            BreakerEffect::CountFailure => {}
            BreakerEffect::OpenNow => return None, // already opened by the attempt
            BreakerEffect::Ignore | BreakerEffect::CoolForRetryAfter => {
                // Not a health verdict; a probe that ends this way gives its lease back.
                if let Some(lease) = lease {
                    self.release(lease);
                }
                return None;
            }
        }
        match state {
            CircuitState::Open => None,
            CircuitState::HalfOpen if !self.holds(lease) => None,
            CircuitState::HalfOpen => self.open(cfg, now, kind, false, lease),
            CircuitState::Closed => {
                self.consecutive_failures += 1;
                if self.consecutive_failures >= cfg.failure_threshold {
                    self.open(cfg, now, kind, false, lease)
                } else {
                    None
                }
            }
        }
    }

    fn holds(&self, lease: Option<u64>) -> bool {
        matches!((self.probe, lease), (Some((id, _)), Some(l)) if id == l)
    }

    /// Open (or reopen) the circuit. From HalfOpen the cooldown doubles; `at_once` kinds
    /// take the longest cooldown.
    fn open(
        &mut self,
        cfg: &BreakerConfig,
        now: UnixMillis,
        kind: ErrorKind,
        at_once: bool,
        lease: Option<u64>,
    ) -> Option<Transition> {
        let from = self.state(now);
        if from == CircuitState::Open {
            return None;
        }
        if from == CircuitState::HalfOpen {
            if !self.holds(lease) {
                return None;
            }
            self.level = self.level.saturating_add(1);
        }
        let Cooldown { base, max } = cfg.cooldown;
        let wait = if at_once {
            max
        } else {
            cooldown_at_level(base, max, self.level)
        };
        self.open_until = now.saturating_add(duration_ms(wait));
        self.state = StateTag::Open;
        self.probe = None;
        self.half_open_noted = false;
        self.opened_by = Some(kind);
        self.consecutive_failures = self.consecutive_failures.max(cfg.failure_threshold);
        let trigger = if from == CircuitState::HalfOpen {
            Trigger::ProbeFailed
        } else {
            Trigger::Failures
        };
        Some(Transition {
            cause: Some(kind),
            cooldown_ms: Some(duration_ms(wait)),
            ..Transition::new(from, CircuitState::Open, now, trigger)
        })
    }

    /// The part of the state a fleet shares: everything but this replica's probe lease
    /// (fleet-wide probe uniqueness is the shared store's own lease).
    #[must_use]
    pub fn shared(&self) -> Breaker {
        Breaker {
            probe: None,
            ..*self
        }
    }

    /// Take the fleet's view of the state, keeping this replica's probe lease if the
    /// circuit is still the one that lease was taken on (open, same opening).
    pub fn merge_shared(&mut self, shared: Breaker) {
        let same = shared.state == StateTag::Open && shared.open_until == self.open_until;
        let probe = same.then_some(self.probe).flatten();
        *self = Breaker {
            probe,
            half_open_noted: shared.half_open_noted || (same && self.half_open_noted),
            lease_seq: self.lease_seq.max(shared.lease_seq),
            ..shared
        };
    }

    /// A read-only view as of `now`.
    #[must_use]
    pub fn snapshot(&self, now: UnixMillis) -> BreakerSnapshot {
        let state = self.state(now);
        BreakerSnapshot {
            state,
            consecutive_failures: self.consecutive_failures,
            open_until: (state != CircuitState::Closed).then_some(self.open_until),
            last_open_until: self.open_until,
            cooling_until_ms: (now < self.cool_until_ms).then_some(self.cool_until_ms),
            opened_by: (state != CircuitState::Closed)
                .then_some(self.opened_by)
                .flatten(),
            last_error: self.last_error,
            probe_in_flight: state == CircuitState::HalfOpen
                && self.probe.is_some_and(|(_, exp)| now < exp),
        }
    }
}

/// A change to a breaker, as data, so a store can apply it atomically wherever the state
/// lives (a local map; a compare-and-set loop in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// [`Breaker::admit`].
    Admit {
        /// How long a probe lease lasts.
        lease_for: Duration,
    },
    /// [`Breaker::renew`].
    Renew {
        /// The probe's lease.
        lease: u64,
        /// New expiry.
        until_ms: UnixMillis,
    },
    /// [`Breaker::release`].
    Release {
        /// The probe's lease.
        lease: u64,
    },
    /// [`Breaker::on_attempt_failure`].
    AttemptFailed {
        /// The failure.
        kind: ErrorKind,
        /// Its effect under the route's policy.
        effect: BreakerEffect,
        /// The vendor's Retry-After.
        retry_after: Option<Duration>,
        /// The probe's lease, if this turn is the probe.
        lease: Option<u64>,
    },
    /// [`Breaker::on_turn_failure`].
    TurnFailed {
        /// The turn's last failure.
        kind: ErrorKind,
        /// Its effect under the route's policy.
        effect: BreakerEffect,
        /// The probe's lease, if this turn is the probe.
        lease: Option<u64>,
    },
    /// [`Breaker::on_success`].
    Succeeded {
        /// The probe's lease, if this turn is the probe.
        lease: Option<u64>,
    },
    /// [`Breaker::on_check_failure`].
    CheckFailed {
        /// The check's failure.
        kind: ErrorKind,
        /// Its effect under the route's policy.
        effect: BreakerEffect,
    },
    /// [`Breaker::on_check_success`].
    CheckPassed {
        /// The check proved the provider answers requests (a completion), not only that
        /// it is reachable (a listing).
        proves_traffic: bool,
    },
}

/// What applying an [`Op`] produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// For `Admit`: the answer (`Admit` for every other op).
    pub admission: Admission,
    /// The state change, if any.
    pub transition: Option<Transition>,
}

impl Breaker {
    /// Apply `op` at `now`.
    pub fn apply(&mut self, cfg: &BreakerConfig, now: UnixMillis, op: Op) -> Applied {
        let mut admission = Admission::Admit;
        let transition =
            match op {
                Op::Admit { lease_for } => {
                    let (answer, transition) = self.admit_noting(now, lease_for);
                    admission = answer;
                    transition
                }
                Op::Renew { lease, until_ms } => {
                    self.renew(lease, until_ms);
                    None
                }
                Op::Release { lease } => {
                    self.release(lease);
                    None
                }
                Op::AttemptFailed {
                    kind,
                    effect,
                    retry_after,
                    lease,
                } => self.on_attempt_failure(cfg, now, kind, effect, retry_after, lease),
                Op::TurnFailed {
                    kind,
                    effect,
                    lease,
                } => self.on_turn_failure(cfg, now, kind, effect, lease),
                Op::Succeeded { lease } => self.on_success(now, lease),
                // the check, not a probe or traffic, made any change
                Op::CheckFailed { kind, effect } => self
                    .on_check_failure(cfg, now, kind, effect)
                    .map(|t| Transition {
                        trigger: Trigger::CheckFailed,
                        ..t
                    }),
                Op::CheckPassed { proves_traffic } => self
                    .on_check_success(now, proves_traffic)
                    .map(|t| Transition {
                        trigger: Trigger::CheckPassed,
                        ..t
                    }),
            };
        Applied {
            admission,
            transition,
        }
    }
}

/// `base · 2^level`, capped at `max`.
#[must_use]
pub fn cooldown_at_level(base: Duration, max: Duration, level: u32) -> Duration {
    let factor = 2u32.checked_pow(level).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn fail_turn(b: &mut Breaker, c: &BreakerConfig, now: UnixMillis, lease: Option<u64>) {
        let kind = ErrorKind::Server;
        b.on_attempt_failure(c, now, kind, BreakerEffect::CountFailure, None, lease);
        b.on_turn_failure(c, now, kind, BreakerEffect::CountFailure, lease);
    }

    #[test]
    fn opens_after_threshold_consecutive_failed_turns() {
        let c = cfg(2);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        assert_eq!(b.state(at(0)), CircuitState::Closed);
        fail_turn(&mut b, &c, at(1), None);
        assert_eq!(b.state(at(1)), CircuitState::Open);
        assert_eq!(
            b.admit(at(2), LEASE),
            Admission::Reject(SkipReason::CircuitOpen)
        );
        assert_eq!(b.state(at(61)), CircuitState::HalfOpen);
    }

    #[test]
    fn success_resets_the_count() {
        let c = cfg(2);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        b.on_success(at(1), None);
        fail_turn(&mut b, &c, at(2), None);
        assert_eq!(b.state(at(2)), CircuitState::Closed);
    }

    #[test]
    fn half_open_admits_exactly_one_probe_until_its_lease_expires() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        let first = b.admit(at(60), LEASE);
        assert!(matches!(first, Admission::Probe { .. }));
        assert_eq!(
            b.admit(at(61), LEASE),
            Admission::Reject(SkipReason::ProbeInFlight)
        );
        // the probe's caller vanished: after the lease expires another may probe
        assert!(matches!(b.admit(at(71), LEASE), Admission::Probe { .. }));
    }

    #[test]
    fn released_lease_lets_the_next_request_probe() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        let lease = b.admit(at(60), LEASE).lease().unwrap();
        b.release(lease);
        assert!(matches!(b.admit(at(60), LEASE), Admission::Probe { .. }));
    }

    #[test]
    fn failed_probe_doubles_cooldown_up_to_max_and_success_resets_it() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None); // open until 60
        let mut t = 60;
        for expected in [120, 240, 240] {
            let lease = b.admit(at(t), LEASE).lease();
            assert!(lease.is_some(), "probe at {t}");
            fail_turn(&mut b, &c, at(t), lease);
            assert_eq!(b.snapshot(at(t)).open_until, Some((t + expected) * 1000));
            t += expected;
        }
        let lease = b.admit(at(t), LEASE).lease();
        let tr = b.on_success(at(t), lease).unwrap();
        assert_eq!(
            (tr.from, tr.to),
            (CircuitState::HalfOpen, CircuitState::Closed)
        );
        fail_turn(&mut b, &c, at(t), None);
        assert_eq!(b.snapshot(at(t)).open_until, Some((t + 60) * 1000));
    }

    #[test]
    fn open_to_half_open_is_reported_once_per_opening_stamped_when_the_cooldown_ended() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None); // open until 60
        let mut seen = Vec::new();
        for t in [30, 75, 76] {
            let applied = b.apply(&c, at(t), Op::Admit { lease_for: LEASE });
            seen.push(applied.transition);
        }
        let half = Transition::new(
            CircuitState::Open,
            CircuitState::HalfOpen,
            60_000,
            Trigger::Cooldown,
        );
        // closed while open; the probe at 75 s reports it; the next admission does not
        assert_eq!(seen, [None, Some(half), None]);
        // the lease lapses and another request probes: still the same half-open period
        let again = b.apply(&c, at(90), Op::Admit { lease_for: LEASE });
        assert!(again.admission.lease().is_some());
        assert_eq!(again.transition, None);
        // a failed probe reopens; the next half-open period is reported anew
        let lease = again.admission.lease();
        fail_turn(&mut b, &c, at(90), lease); // open until 90 + 120
        let next = b.apply(&c, at(210), Op::Admit { lease_for: LEASE });
        assert_eq!(next.transition.map(|t| t.at_ms), Some(210_000));
    }

    #[test]
    fn a_fleet_merge_keeps_the_reported_half_open_of_the_same_opening() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        let shared = b.shared();
        assert!(b
            .apply(&c, at(60), Op::Admit { lease_for: LEASE })
            .transition
            .is_some());
        b.merge_shared(shared); // an older write of the same opening arrives
        let lapsed = b.apply(&c, at(80), Op::Admit { lease_for: LEASE });
        assert!(lapsed.admission.lease().is_some());
        assert_eq!(lapsed.transition, None, "reported once");
    }

    #[test]
    fn results_of_non_probes_are_ignored_while_open_or_half_open() {
        let c = cfg(1);
        let mut b = Breaker::default();
        fail_turn(&mut b, &c, at(0), None);
        assert_eq!(b.on_success(at(5), None), None);
        assert_eq!(b.state(at(5)), CircuitState::Open);
        let lease = b.admit(at(60), LEASE).lease();
        assert!(lease.is_some());
        assert_eq!(b.on_success(at(61), None), None);
        fail_turn(&mut b, &c, at(61), None);
        assert_eq!(b.state(at(61)), CircuitState::HalfOpen);
    }

    #[test]
    fn auth_opens_at_once_with_the_longest_cooldown() {
        let c = cfg(3);
        let mut b = Breaker::default();
        let tr = b.on_attempt_failure(
            &c,
            at(0),
            ErrorKind::Auth,
            BreakerEffect::OpenNow,
            None,
            None,
        );
        assert_eq!(tr.unwrap().to, CircuitState::Open);
        let snap = b.snapshot(at(1));
        assert_eq!(snap.opened_by, Some(ErrorKind::Auth));
        assert_eq!(snap.open_until, Some(240_000));
    }

    #[test]
    fn retry_after_cools_without_counting() {
        let c = cfg(1);
        let mut b = Breaker::default();
        let wait = Some(Duration::from_secs(5));
        let kind = ErrorKind::RateLimited;
        b.on_attempt_failure(
            &c,
            at(0),
            kind,
            BreakerEffect::CoolForRetryAfter,
            wait,
            None,
        );
        b.on_turn_failure(&c, at(0), kind, BreakerEffect::CoolForRetryAfter, None);
        assert_eq!(
            b.admit(at(4), LEASE),
            Admission::Reject(SkipReason::Cooling)
        );
        assert_eq!(b.admit(at(5), LEASE), Admission::Admit);
        assert_eq!(b.snapshot(at(5)).consecutive_failures, 0);
    }

    #[test]
    fn ignored_kinds_never_open_the_circuit() {
        let c = cfg(1);
        let mut b = Breaker::default();
        for i in 0..100 {
            let kind = ErrorKind::BadRequest;
            b.on_attempt_failure(&c, at(i), kind, BreakerEffect::Ignore, None, None);
            b.on_turn_failure(&c, at(i), kind, BreakerEffect::Ignore, None);
        }
        assert_eq!(b.state(at(100)), CircuitState::Closed);
    }
}
