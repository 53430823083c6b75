//! Side outputs: the observer hook and the ledger.
//!
//! Owns the alert for a call that
//! used more than was reserved for it ([`Overrun`]), the once-per-exhaustion report of a
//! budget ([`BudgetExhausted`], kept by [`ExhaustedBudgets`]), and the [`Observer`] trait through
//! which logs, metrics and the [`Ledger`] watch the gateway, and
//! re-exports the attempt trail (`trail`) they are shown. Observers see
//! everything and steer nothing: their methods are infallible and must not block (a slow
//! writer belongs behind a bounded channel that drops and counts).

mod exhausted;
mod ledger;

use serde::Serialize;

pub use exhausted::{BudgetExhausted, ExhaustedBudgets, MAX_EXHAUSTED};
pub use ledger::{Ledger, LedgerRow};

use crate::breaker::Transition;
use crate::chat::ChatResponse;
use crate::embedding::EmbeddingResponse;
use crate::error::GatewayError;
use crate::health::CheckReport;
use crate::propagate::Headroom;
pub use crate::trail::{spent, Attempt, Outcome, Reported};

/// A call that reported more tokens than it was allowed or than its reservation assumed.
///
/// The reservation held before dispatch covered the allowed output and the input bound;
/// an upstream that ignores `max_tokens` (or a tokenizer that counts more than the bound)
/// makes the call cost more than was reserved, so a budget can be overspent by the
/// difference. The call is still billed at its real cost; this is the alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overrun {
    /// The provider's configured name.
    pub provider: String,
    /// The model that answered.
    pub model: String,
    /// Output tokens the call was allowed (`max_tokens` sent, the adapter's default, or
    /// the model's output limit); `None` when unknown.
    pub output_allowed: Option<u64>,
    /// Output tokens the upstream reported.
    pub output_reported: u64,
    /// The input-token bound the reservation was sized by; `None` when nothing was
    /// reserved.
    pub input_bound: Option<u64>,
    /// Input tokens the upstream reported.
    pub input_reported: u64,
}

impl Overrun {
    /// True when the reported output passed what was allowed.
    #[must_use]
    pub fn output_over(&self) -> bool {
        self.output_allowed
            .is_some_and(|n| self.output_reported > n)
    }

    /// True when the reported input passed the reservation's bound.
    #[must_use]
    pub fn input_over(&self) -> bool {
        self.input_bound.is_some_and(|n| self.input_reported > n)
    }
}

/// Watches the gateway. Every method has a no-op default; none may block or fail.
pub trait Observer: Send + Sync {
    /// A try or skip finished.
    fn on_attempt(&self, _route: &str, _attempt: &Attempt) {}
    /// A provider's circuit changed state (by this replica's requests, cooldown or checks).
    fn on_transition(&self, _provider: &str, _transition: &Transition) {}
    /// A provider's circuit changed state on another replica of the fleet, as this replica
    /// learned it through the shared state (`Transition::trigger` is `Fleet`). The replica
    /// that made the change reports it through `on_transition`; each replica is told of
    /// it once.
    fn on_fleet_transition(&self, _provider: &str, _transition: &Transition) {}
    /// A budget refused a request for the first time since it last had room: reported
    /// once per exhaustion (on the replica that saw it), not per refused request.
    fn on_budget_exhausted(&self, _route: &str, _exhausted: &BudgetExhausted) {}
    /// A request finished.
    fn on_complete(&self, _route: &str, _result: Result<&ChatResponse, &GatewayError>) {}
    /// An embeddings request finished.
    fn on_embedded(&self, _route: &str, _result: Result<&EmbeddingResponse, &GatewayError>) {}
    /// A call reported more tokens than it was allowed or than was reserved for it
    /// (reported before the request completes).
    fn on_overrun(&self, _route: &str, _overrun: &Overrun) {}
    /// An active health check finished (its breaker transition, if any, was reported
    /// first through `on_transition`); `CheckReport::previous` says whether its verdict
    /// changed.
    fn on_health_check(&self, _report: &CheckReport) {}
    /// An upstream call's response stated what is left of the provider's rate limits
    /// (reported for calls made with `CallOptions::upstream` set).
    fn on_headroom(&self, _provider: &str, _headroom: &Headroom) {}
}
