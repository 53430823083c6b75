//! The gateway's error: why a request produced no completion.
//!
//! Owns [`GatewayError`], which carries the attempt trail (`trail`) and, for a cancelled
//! stream, the partial reply (`chat`). The classification of a single upstream failure
//! lives one layer down in `fault` and is re-exported here, so `error::ErrorKind`,
//! `error::ProviderError` and the rest keep their paths. Errors never log themselves.

use std::time::Duration;

use crate::chat::ChatResponse;
pub use crate::fault::{AttemptError, Blame, BreakerEffect, ErrorKind, KindPolicy, ProviderError};
use crate::money::Money;
use crate::trail::Attempt;

/// Why the gateway could not produce a completion.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GatewayError {
    /// The route name is not configured.
    #[error("unknown route {name:?}; configured routes: {}", known.join(", "))]
    UnknownRoute {
        /// What the caller asked for.
        name: String,
        /// What exists.
        known: Vec<String>,
    },
    /// A wildcard route does not call the model the client named: not on its allow-list,
    /// past its `max_models`, or (`malformed`) not a string that may go into a URL.
    #[error("route {route:?} does not serve model {model:?}: {reason}")]
    ModelRefused {
        /// The wildcard route.
        route: String,
        /// The model the client named after the route's prefix.
        model: String,
        /// Why, with what the route allows.
        reason: String,
        /// The model is not well formed (the client's error in the request's shape).
        malformed: bool,
    },
    /// The request is not usable (e.g. no messages).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Spend plus reservations would pass the budget; nothing was dispatched.
    #[error("budget exceeded for {scope}: limit {limit}, spent {spent}, reserved {reserved}")]
    BudgetExceeded {
        /// The route (or key) whose budget refused.
        scope: String,
        /// The budget.
        limit: Money,
        /// Settled spend.
        spent: Money,
        /// Outstanding reservations.
        reserved: Money,
        /// The trail up to the refusal.
        attempts: Vec<Attempt>,
    },
    /// The end-to-end deadline passed before any provider answered.
    #[error("deadline of {deadline:?} exceeded after {} attempt(s)", errors.len())]
    DeadlineExceeded {
        /// The route's deadline.
        deadline: Duration,
        /// Every error so far, in order.
        errors: Vec<AttemptError>,
        /// The full trail, tries and skips.
        attempts: Vec<Attempt>,
    },
    /// A provider failed in a way that is not failed over (e.g. a bad request); returned as
    /// itself.
    #[error("{provider}: {error}")]
    Provider {
        /// Who answered with the error.
        provider: String,
        /// The error, unchanged.
        error: ProviderError,
        /// The full trail.
        attempts: Vec<Attempt>,
    },
    /// Every candidate failed or was skipped.
    #[error("all providers failed: {}", summarize(errors, attempts))]
    AllFailed {
        /// Every error, in order.
        errors: Vec<AttemptError>,
        /// The full trail, tries and skips.
        attempts: Vec<Attempt>,
    },
    /// Every candidate was rate limited (failed with a 429) or skipped while cooling down
    /// after one, and nothing else went wrong: the caller should come back later rather
    /// than count it as an outage.
    #[error("all providers are rate limited; one accepts again in {}ms", retry_after.as_millis())]
    RateLimited {
        /// From when the error was made to the earliest moment one of the providers
        /// accepts again (its Retry-After, or the end of its cooling); zero when a 429
        /// gave no hint.
        retry_after: Duration,
        /// Every error, in order.
        errors: Vec<AttemptError>,
        /// The full trail, tries and skips.
        attempts: Vec<Attempt>,
    },
    /// No provider of the route can honour fields the request uses (each was skipped):
    /// a client error, naming the fields and the providers.
    #[error("no provider of this route can honour {}: {}", fields.join(", "), summarize(&[], attempts))]
    CannotHonour {
        /// The fields some provider could not honour, in `docs/fields.md` order.
        fields: Vec<String>,
        /// The providers skipped.
        providers: Vec<String>,
        /// The full trail (every entry a skip).
        attempts: Vec<Attempt>,
    },
    /// The caller went away. A stream cancelled after its commit point carries what was
    /// delivered and used so far, so spend is still recorded.
    #[error("request cancelled")]
    Cancelled {
        /// The partial completion of a committed stream.
        partial: Option<Box<ChatResponse>>,
        /// The trail up to the cancellation, for a request cancelled before any answer
        /// (a committed stream's trail is in `partial`).
        attempts: Vec<Attempt>,
    },
}

fn summarize(errors: &[AttemptError], attempts: &[Attempt]) -> String {
    if errors.is_empty() {
        let skipped: Vec<String> = attempts
            .iter()
            .map(|a| format!("{} {}", a.provider, a.outcome.label()))
            .collect();
        return if skipped.is_empty() {
            "no candidates".to_owned()
        } else {
            skipped.join("; ")
        };
    }
    errors
        .iter()
        .map(|e| format!("{}: {}", e.provider, e.error))
        .collect::<Vec<_>>()
        .join("; ")
}

impl GatewayError {
    /// The attempt trail, where there is one.
    #[must_use]
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            Self::BudgetExceeded { attempts, .. }
            | Self::DeadlineExceeded { attempts, .. }
            | Self::Provider { attempts, .. }
            | Self::AllFailed { attempts, .. }
            | Self::RateLimited { attempts, .. }
            | Self::CannotHonour { attempts, .. } => attempts,
            Self::UnknownRoute { .. } | Self::ModelRefused { .. } | Self::InvalidRequest(_) => &[],
            Self::Cancelled { partial, attempts } => partial
                .as_ref()
                .map_or(attempts.as_slice(), |p| &p.attempts),
        }
    }

    /// A low-cardinality label for metrics and logs.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::UnknownRoute { .. } => "unknown_route",
            Self::ModelRefused { .. } => "model_refused",
            Self::InvalidRequest(_) => "invalid_request",
            Self::BudgetExceeded { .. } => "budget_exceeded",
            Self::DeadlineExceeded { .. } => "deadline_exceeded",
            Self::Provider { error, .. } => error.kind.label(),
            Self::AllFailed { .. } => "all_failed",
            Self::RateLimited { .. } => "rate_limited",
            Self::CannotHonour { .. } => "cannot_honour",
            Self::Cancelled { .. } => "cancelled",
        }
    }
}
