//! The gateway's error: why a request produced no completion.
//!
//! Owns [`GatewayError`], which carries the attempt trail (`trail`) and, for a cancelled
//! stream, the partial reply (`chat`). The classification of a single upstream failure
//! lives one layer down in `fault` and is re-exported here, so `error::ErrorKind`,
//! `error::ProviderError` and the rest keep their paths. Errors never log themselves. An
//! error's message names every provider that failed and every one that was skipped, with
//! why (`anthropic skipped: cannot honour logprobs`).

use std::time::Duration;

use crate::chat::ChatResponse;
pub use crate::fault::{AttemptError, Blame, BreakerEffect, ErrorKind, KindPolicy, ProviderError};
use crate::money::Money;
use crate::trail::{Attempt, Outcome, SkipReason};

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
    #[error(
        "budget exceeded for {scope}: this request may cost up to {needed}; limit {limit}, \
         spent {spent}, reserved {reserved}{}",
        skips(attempts)
    )]
    BudgetExceeded {
        /// The route (or key) whose budget refused.
        scope: String,
        /// What the request would have reserved: its worst-case cost on the provider that
        /// was to answer (the input bound and the output allowance at its price).
        needed: Money,
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
    #[error(
        "deadline of {deadline:?} exceeded after {} attempt(s){}{}",
        errors.len(),
        failures(errors),
        skips(attempts)
    )]
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
    #[error("{provider}: {error}{}", skips(attempts))]
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
    #[error(
        "all providers are rate limited; one accepts again in {}ms{}",
        retry_after.as_millis(),
        skips(attempts)
    )]
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

/// Every failure, then every skip with its reason (`openai: server error (500): ...;
/// anthropic skipped: cannot honour logprobs`): what a person reading the error needs to
/// see which provider did what.
fn summarize(errors: &[AttemptError], attempts: &[Attempt]) -> String {
    let mut parts: Vec<String> = (errors.iter())
        .map(|e| format!("{}: {}", e.provider, e.error))
        .collect();
    parts.extend(skipped(attempts));
    if parts.is_empty() {
        "no candidates".to_owned()
    } else {
        parts.join("; ")
    }
}

/// `: openai: ...; gemini: ...` for an error that names its failures after its headline
/// (nothing when there are none).
fn failures(errors: &[AttemptError]) -> String {
    errors
        .iter()
        .map(|e| format!("; {}: {}", e.provider, e.error))
        .collect()
}

/// `; anthropic skipped: cannot honour logprobs` for each skip of the trail (nothing when
/// none): an error that follows a skip says so.
fn skips(attempts: &[Attempt]) -> String {
    skipped(attempts).map(|s| format!("; {s}")).collect()
}

/// `<provider> skipped: <why>` for each skip of the trail, in order.
fn skipped(attempts: &[Attempt]) -> impl Iterator<Item = String> + '_ {
    attempts.iter().filter_map(|a| match &a.outcome {
        Outcome::Skipped { reason, fields } => Some(format!(
            "{} skipped: {}",
            a.provider,
            skip_reason(*reason, fields)
        )),
        _ => None,
    })
}

/// Why a provider was skipped, in words.
fn skip_reason(reason: SkipReason, fields: &[String]) -> String {
    let named = fields.join(", ");
    match reason {
        SkipReason::CannotHonour if !named.is_empty() => format!("cannot honour {named}"),
        SkipReason::CannotHonour => "cannot honour the request's fields".to_owned(),
        SkipReason::NeedsNative if !named.is_empty() => {
            format!("only a provider taking the request's own API serves {named}")
        }
        SkipReason::NeedsNative => {
            "only a provider taking the request's own API serves it".to_owned()
        }
        SkipReason::CircuitOpen => "circuit open".to_owned(),
        SkipReason::ProbeInFlight => "circuit half-open, its probe in flight".to_owned(),
        SkipReason::Cooling => "cooling down after a rate limit".to_owned(),
        SkipReason::Unpriced => "no known price, and the request has a budget".to_owned(),
        SkipReason::RescueBufferFull => {
            "the stream passed the rescue buffer, so it could not be rescued".to_owned()
        }
        SkipReason::MultiChoice => "a stream of several answers cannot be rescued".to_owned(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(provider: &str, reason: SkipReason, fields: &[&str]) -> Attempt {
        let mut a = Attempt::skipped(provider, "m", reason);
        a.outcome = Outcome::Skipped {
            reason,
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
        };
        a
    }

    fn failed(provider: &str) -> (AttemptError, Attempt) {
        let error = ProviderError::new(ErrorKind::Server, "upstream said 500");
        let attempt = Attempt {
            provider: provider.into(),
            model: "m".into(),
            attempt: 1,
            outcome: Outcome::Failed {
                kind: ErrorKind::Server,
                message: error.message.clone(),
            },
            status: Some(500),
            latency: Duration::ZERO,
            start: None,
            probe: false,
            reported: None,
        };
        let error = AttemptError {
            provider: provider.into(),
            error,
        };
        (error, attempt)
    }

    #[test]
    fn a_failure_after_a_skip_names_the_skip_and_its_fields() {
        let (error, attempt) = failed("openai");
        let err = GatewayError::AllFailed {
            errors: vec![error],
            attempts: vec![
                attempt,
                skip("anthropic", SkipReason::CannotHonour, &["logprobs"]),
            ],
        };
        let msg = err.to_string();
        assert!(msg.contains("openai: server: upstream said 500"), "{msg}");
        assert!(
            msg.contains("anthropic skipped: cannot honour logprobs"),
            "{msg}"
        );
    }

    #[test]
    fn every_error_with_a_trail_says_what_was_skipped() {
        let trail = || {
            vec![
                skip("claude", SkipReason::CircuitOpen, &[]),
                skip("codex", SkipReason::NeedsNative, &["max_tool_calls"]),
            ]
        };
        let (error, _) = failed("gpt");
        let errs = [
            GatewayError::DeadlineExceeded {
                deadline: Duration::from_secs(1),
                errors: vec![error.clone()],
                attempts: trail(),
            },
            GatewayError::RateLimited {
                retry_after: Duration::ZERO,
                errors: Vec::new(),
                attempts: trail(),
            },
            GatewayError::Provider {
                provider: "gpt".into(),
                error: error.error.clone(),
                attempts: trail(),
            },
            GatewayError::BudgetExceeded {
                scope: "route".into(),
                needed: Money::ZERO,
                limit: Money::ZERO,
                spent: Money::ZERO,
                reserved: Money::ZERO,
                attempts: trail(),
            },
        ];
        for err in errs {
            let msg = err.to_string();
            assert!(msg.contains("claude skipped: circuit open"), "{msg}");
            assert!(
                msg.contains("codex skipped: only a provider taking the request's own API serves max_tool_calls"),
                "{msg}"
            );
        }
        let deadline = GatewayError::DeadlineExceeded {
            deadline: Duration::from_secs(1),
            errors: vec![error],
            attempts: Vec::new(),
        };
        assert!(deadline.to_string().contains("gpt: server"), "{deadline}");
    }
}
