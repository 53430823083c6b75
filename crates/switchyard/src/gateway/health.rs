//! One active health check through the gateway.
//!
//! Owns [`Gateway::check_provider`]: call the provider's check (its free listing, or a
//! one-token completion through its ordinary `send`) under the check's timeout, turn the
//! result into a breaker op with the breaker settings and error policy of the first route
//! using the provider (`crate::health::verdict`), and tell observers (the ledger records a
//! completion check's cost as health-check spend, outside every budget). The schedule and
//! the fleet lease are `crate::health::run`'s.

use std::sync::atomic::Ordering;

use crate::chat::ChatRequest;
use crate::cost::Money;
use crate::error::{BreakerEffect, ErrorKind, ProviderError};
use crate::health::{verdict, CheckReport, CheckTarget, HealthCheck, Probe};

use super::{run::cost_of, Gateway, Slot};

impl CheckTarget for Gateway {
    fn clock(&self) -> &crate::clock::Clock {
        Gateway::clock(self)
    }

    fn state(&self) -> &std::sync::Arc<dyn crate::state::SharedState> {
        Gateway::state(self)
    }

    fn check_provider(
        &self,
        provider: &str,
        check: &HealthCheck,
    ) -> impl std::future::Future<Output = Option<CheckReport>> + Send {
        Gateway::check_provider(self, provider, check)
    }
}

/// A slot's health verdict before its first check.
pub(super) const VERDICT_NONE: u8 = 0;
/// The last check passed.
const VERDICT_PASSED: u8 = 1;
/// The last check failed.
const VERDICT_FAILED: u8 = 2;

fn verdict_of(passed: bool) -> u8 {
    if passed {
        VERDICT_PASSED
    } else {
        VERDICT_FAILED
    }
}

/// The prompt of a completion check (answered with at most one token).
const CHECK_PROMPT: &str = "Reply with one word: ok";

impl Gateway {
    /// Run one health check of provider `name` now and apply its verdict to the breaker.
    /// `None` when no provider has that name.
    pub async fn check_provider(&self, name: &str, check: &HealthCheck) -> Option<CheckReport> {
        let slot = self.slot(name)?;
        let clock = self.inner.clock;
        let started = clock.now();
        let result = tokio::time::timeout(check.timeout, call(slot, check.probe))
            .await
            .unwrap_or_else(|_| {
                Err(ProviderError::new(
                    ErrorKind::Timeout,
                    format!("health check: no answer within {:?}", check.timeout),
                ))
            });
        let latency = clock.now().saturating_duration_since(started);
        let (error, cost) = match result {
            Ok(cost) => (None, cost),
            Err(e) => (Some(e), None),
        };
        let failure = error
            .as_ref()
            .map(|e| (e.kind, self.effect_of(name, e.kind)));
        let op = verdict(check.probe, failure);
        let cfg = self.breaker_config_of(name);
        let applied = self
            .inner
            .state
            .breaker_op(name, &cfg, self.now(), op)
            .await;
        let passed = error.is_none();
        let previous = slot.verdict.swap(verdict_of(passed), Ordering::Relaxed);
        let report = CheckReport {
            previous: (previous != VERDICT_NONE).then_some(previous == VERDICT_PASSED),
            provider: name.to_owned(),
            probe: check.probe,
            at_ms: clock.unix_ms_at(started),
            latency,
            kind: error.as_ref().map(|e| e.kind),
            status: error.as_ref().and_then(|e| e.status),
            message: error.map(|e| e.message),
            cost,
        };
        for o in &self.inner.observers {
            if let Some(t) = &applied.transition {
                o.on_transition(name, t);
            }
            o.on_health_check(&report);
        }
        Some(report)
    }

    /// What a failure of `kind` does to `provider`'s breaker: the policy of the first
    /// route using it (the route whose breaker settings [`Gateway::health`] reads), else
    /// the default.
    fn effect_of(&self, provider: &str, kind: ErrorKind) -> BreakerEffect {
        self.routes()
            .into_iter()
            .find(|r| r.providers.iter().any(|p| p == provider))
            .map_or_else(|| kind.trips_breaker(), |r| r.policy_for(kind).breaker)
    }
}

/// The check itself; `Ok` carries a completion's cost (`None`: a listing, or unpriced).
async fn call(slot: &Slot, probe: Probe) -> Result<Option<Money>, ProviderError> {
    match probe {
        Probe::Listing => slot.spec.provider.check_health().await.map(|()| None),
        Probe::Completion => {
            let mut req = ChatRequest::from_prompt(CHECK_PROMPT);
            req.max_tokens = Some(1);
            let reply = slot.spec.provider.send(&req).await?;
            Ok(cost_of(
                reply.reported_cost,
                reply.usage.as_ref(),
                slot.price,
                1,
            ))
        }
    }
}
