//! Side outputs: the attempt trail, the observer hook, and the ledger.
//!
//! Owns the record of what each try and skip did ([`Attempt`]), the alert for a call that
//! used more than was reserved for it ([`Overrun`]), and the [`Observer`] trait through
//! which logs, metrics and the [`Ledger`] watch the gateway. Observers see
//! everything and steer nothing: their methods are infallible and must not block (a slow
//! writer belongs behind a bounded channel that drops and counts).

mod ledger;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use ledger::{Ledger, LedgerRow};

use crate::breaker::{SkipReason, Transition};
use crate::chat::ChatResponse;
use crate::error::{ErrorKind, GatewayError};

/// What one try or skip came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The provider answered.
    Success,
    /// The provider failed.
    Failed {
        /// How.
        kind: ErrorKind,
        /// The error message (never a credential).
        message: String,
    },
    /// The provider was not called.
    Skipped {
        /// Why.
        reason: SkipReason,
    },
    /// A committed stream broke and this provider was asked to finish it.
    Rescue {
        /// `continuation` or `restart`.
        method: String,
    },
}

impl Outcome {
    /// A short label: `success`, `failed:<kind>`, `skipped:<reason>`, `rescue:<method>`.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Success => "success".to_owned(),
            Self::Failed { kind, .. } => format!("failed:{kind}"),
            Self::Skipped { reason } => format!("skipped:{}", reason.label()),
            Self::Rescue { method } => format!("rescue:{method}"),
        }
    }
}

/// One entry of the audit trail: a try or a skip.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The provider's configured name.
    pub provider: String,
    /// The model it calls.
    pub model: String,
    /// 1-based attempt number within the provider's turn; 0 for a skip.
    pub attempt: u32,
    /// What happened.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the try took (zero for skips).
    #[serde(with = "duration_ms_f64", rename = "latency_ms")]
    pub latency: Duration,
}

impl Attempt {
    /// A skip record.
    #[must_use]
    pub fn skipped(provider: &str, model: &str, reason: SkipReason) -> Self {
        Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            attempt: 0,
            outcome: Outcome::Skipped { reason },
            status: None,
            latency: Duration::ZERO,
        }
    }

    /// True for a try that reached the provider (not a skip).
    #[must_use]
    pub fn was_called(&self) -> bool {
        !matches!(self.outcome, Outcome::Skipped { .. })
    }
}

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
    /// A provider's circuit changed state.
    fn on_transition(&self, _provider: &str, _transition: &Transition) {}
    /// A request finished.
    fn on_complete(&self, _route: &str, _result: Result<&ChatResponse, &GatewayError>) {}
    /// A call reported more tokens than it was allowed or than was reserved for it
    /// (reported before the request completes).
    fn on_overrun(&self, _route: &str, _overrun: &Overrun) {}
    /// An active health check finished (its breaker transition, if any, was reported
    /// first through `on_transition`).
    fn on_health_check(&self, _report: &crate::health::CheckReport) {}
}

/// Serialize a duration as fractional milliseconds.
pub(crate) mod duration_ms_f64 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(ms.max(0.0) / 1000.0))
    }
}
