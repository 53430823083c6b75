//! Active health checks: what a check is, what its verdict does, and the checker loop.
//!
//! Owns the settings of a provider's check ([`HealthCheck`]: how often, how long, which
//! [`Probe`]), the record of one check ([`CheckReport`]), the pure rule turning a result
//! into a breaker op ([`verdict`]; the transitions themselves are `breaker/check.rs`), and
//! [`run`], the loop that checks one provider for as long as its caller lets it. The loop
//! spawns nothing (the server runs it on its task tracker) and sleeps on tokio's clock, so
//! paused-time tests drive it.
//!
//! One checker per provider across a fleet: before each check the loop takes or renews
//! the lease [`lease_name`] in the state store; a replica that does not hold it does not
//! check, and when the holder stops renewing (it died) its lease lapses after
//! [`lease_ttl`] and another replica takes over.
//!
//! Running one check (calling the provider, applying the verdict, telling observers) is
//! the gateway's (`Gateway::check_provider`, in `gateway/health.rs`); the loop reaches it
//! through [`CheckTarget`], so this module stays below the gateway.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::breaker::Op;
use crate::clock::{Clock, UnixMillis};
use crate::fault::{BreakerEffect, ErrorKind};
use crate::money::Money;
use crate::state::SharedState;

/// What a check sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// The vendor's free model-listing (or model-lookup) endpoint: finds bad keys, a
    /// missing model (where the vendor can say), DNS / connection failures and
    /// vendor-wide 5xx. Costs nothing.
    Listing,
    /// A minimal real request (one output token): finds everything, costs a little
    /// (recorded in the ledger as health-check spend, never in a budget).
    Completion,
}

impl Probe {
    /// Lower-case label for JSON, metrics and logs.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Listing => "listing",
            Self::Completion => "completion",
        }
    }
}

/// A provider's active health check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// Time between checks.
    pub every: Duration,
    /// The longest one check may take (past it: a `timeout` failure).
    pub timeout: Duration,
    /// What is sent.
    pub probe: Probe,
}

impl Default for HealthCheck {
    /// Every 15 s, 5 s timeout, listing.
    fn default() -> Self {
        Self {
            every: Duration::from_secs(15),
            timeout: Duration::from_secs(5),
            probe: Probe::Listing,
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The provider's configured name.
    pub provider: String,
    /// What was sent.
    pub probe: Probe,
    /// When it started (wall time).
    pub at_ms: UnixMillis,
    /// How long it took.
    #[serde(rename = "latency_ms", serialize_with = "as_ms")]
    pub latency: Duration,
    /// The failure, if it failed.
    pub kind: Option<ErrorKind>,
    /// The upstream's HTTP status, when it answered with an error.
    pub status: Option<u16>,
    /// The failure in words (never a credential).
    pub message: Option<String>,
    /// What a completion check cost (`None`: a listing, or unknown).
    pub cost: Option<Money>,
    /// Whether this process's previous check of the provider passed (`None`: this is its
    /// first): the verdict changed when it differs from [`CheckReport::ok`].
    pub previous: Option<bool>,
}

impl CheckReport {
    /// True when the check passed.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.kind.is_none()
    }

    /// True when this check's verdict differs from the previous one, or is the first.
    #[must_use]
    pub fn verdict_changed(&self) -> bool {
        self.previous != Some(self.ok())
    }

    /// `ok`, or the failure kind's label (bounded: a metric label).
    #[must_use]
    pub fn result_label(&self) -> &'static str {
        self.kind.map_or("ok", ErrorKind::label)
    }
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The breaker op a check's result comes to: a pass proves traffic only for a
/// completion; a failure takes its kind's effect under the route's policy (`effect`).
#[must_use]
pub fn verdict(probe: Probe, failure: Option<(ErrorKind, BreakerEffect)>) -> Op {
    match failure {
        None => Op::CheckPassed {
            proves_traffic: probe == Probe::Completion,
        },
        Some((kind, effect)) => Op::CheckFailed { kind, effect },
    }
}

/// The lease a fleet's checkers of `provider` share.
#[must_use]
pub fn lease_name(provider: &str) -> String {
    format!("health:{provider}")
}

/// How long a checker's lease lasts: two periods and a timeout, so a holder renewing on
/// time never loses it, and a dead one is replaced within about two periods.
#[must_use]
pub fn lease_ttl(check: &HealthCheck) -> Duration {
    check.every.saturating_mul(2).saturating_add(check.timeout)
}

/// What the checker loop drives: the gateway (`gateway/health.rs` implements it).
pub trait CheckTarget {
    /// The time source.
    fn clock(&self) -> &Clock;
    /// Where the fleet's checker leases live.
    fn state(&self) -> &Arc<dyn SharedState>;
    /// Run one check of `provider` now and apply its verdict; `None` when no provider has
    /// that name.
    fn check_provider(
        &self,
        provider: &str,
        check: &HealthCheck,
    ) -> impl Future<Output = Option<CheckReport>> + Send;
}

/// Check `provider` every `check.every` (the first check at once) while `holder` holds its
/// lease, until `stop` resolves. A check in flight when `stop` resolves is abandoned (its
/// future dropped), so the loop never delays shutdown.
pub async fn run(
    gateway: impl CheckTarget,
    provider: String,
    check: HealthCheck,
    holder: String,
    stop: impl Future<Output = ()>,
) {
    let lease = lease_name(&provider);
    let ttl = lease_ttl(&check);
    let mut stop = std::pin::pin!(stop);
    let mut next = gateway.clock().now();
    loop {
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep_until(next) => {}
        }
        next += check.every;
        let started = gateway.clock().now();
        if next <= started {
            next = started + check.every; // fell behind (a long pause): no burst of checks
        }
        let now_ms = gateway.clock().unix_ms();
        if !gateway
            .state()
            .try_lease(&lease, &holder, ttl, now_ms)
            .await
        {
            continue;
        }
        tokio::select! {
            () = &mut stop => return,
            _ = gateway.check_provider(&provider, &check) => {}
        }
    }
}
