//! A failed upstream call, classified where it is born.
//!
//! Owns the taxonomy of upstream failures ([`ErrorKind`], one row each of the error table
//! in docs/design.md), the per-kind policy a route applies ([`KindPolicy`], with its
//! [`Blame`] and [`BreakerEffect`]), a provider's error ([`ProviderError`]) and its
//! attribution to a provider ([`AttemptError`]). Adapters' `classify` functions produce
//! `ProviderError`s; nothing else reads status codes. Errors never log themselves.
//!
//! Part of the vocabulary's bottom layer: it depends only on `clock`. The gateway's own
//! error, which carries attempt trails and partial replies, is `error`'s (which re-exports
//! everything here).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What went wrong with one upstream call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No response in time: attempt timeout, first-token timeout, stall.
    Timeout,
    /// Refused, reset before headers, DNS failure.
    Connection,
    /// 5xx from the vendor.
    Server,
    /// The vendor says it is overloaded (Anthropic 529 `overloaded_error`).
    Overloaded,
    /// A 200 with a body that is not what the vendor documents, a broken SSE chunk, or a
    /// stream closed before the vendor's finish signal.
    Malformed,
    /// 429: slow down.
    RateLimited,
    /// Out of credit: 402, OpenAI 429 `insufficient_quota`.
    QuotaExhausted,
    /// 401 / 403: our credentials are wrong.
    Auth,
    /// 404 for the configured model: a misconfigured provider.
    ModelNotFound,
    /// The prompt does not fit this model's context window.
    ContextLength,
    /// Refused by the vendor's safety system.
    ContentFiltered,
    /// Any other 400 / 413 / 422: the request itself is wrong.
    BadRequest,
    /// The caller went away.
    Cancelled,
}

/// Who a failure is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blame {
    /// The provider misbehaved; another may succeed.
    Upstream,
    /// The request (or the caller) is at fault; it would fail anywhere.
    Client,
    /// The gateway's own configuration or account (credentials, model id, credit).
    Gateway,
}

/// What a failure does to the provider's circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerEffect {
    /// Not the provider's health: leave the breaker alone.
    Ignore,
    /// Counts toward `failure_threshold` consecutive failed turns.
    CountFailure,
    /// Opens the circuit at once (long cooldown); these do not fix themselves.
    OpenNow,
    /// Does not count, but a Retry-After keeps the provider cool until it passes.
    CoolForRetryAfter,
}

/// How a route treats one kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindPolicy {
    /// Retry on the same provider (within its max attempts and the deadline).
    pub retry: bool,
    /// Effect on the breaker.
    pub breaker: BreakerEffect,
    /// Move on to the next provider; when false the error returns to the caller as itself.
    pub fail_over: bool,
}

impl ErrorKind {
    /// Every kind, in table order.
    pub const ALL: [ErrorKind; 13] = [
        Self::Timeout,
        Self::Connection,
        Self::Server,
        Self::Overloaded,
        Self::Malformed,
        Self::RateLimited,
        Self::QuotaExhausted,
        Self::Auth,
        Self::ModelNotFound,
        Self::ContextLength,
        Self::ContentFiltered,
        Self::BadRequest,
        Self::Cancelled,
    ];

    /// The default (docs/design.md, "Error table"): retry on the same provider?
    ///
    /// A silent provider (timeout) is not retried: each try would cost a full timeout.
    #[must_use]
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Connection
                | Self::Server
                | Self::Overloaded
                | Self::Malformed
                | Self::RateLimited
        )
    }

    /// The default effect on the breaker (docs/design.md, "Error table").
    #[must_use]
    pub fn trips_breaker(self) -> BreakerEffect {
        match self {
            Self::Timeout
            | Self::Connection
            | Self::Server
            | Self::Overloaded
            | Self::Malformed => BreakerEffect::CountFailure,
            Self::RateLimited => BreakerEffect::CoolForRetryAfter,
            Self::QuotaExhausted | Self::Auth | Self::ModelNotFound => BreakerEffect::OpenNow,
            Self::ContextLength | Self::ContentFiltered | Self::BadRequest | Self::Cancelled => {
                BreakerEffect::Ignore
            }
        }
    }

    /// The default (docs/design.md, "Error table"): try the next provider?
    ///
    /// Content filtering and bad requests return to the caller (the request itself is
    /// wrong); a cancelled request goes nowhere.
    #[must_use]
    pub fn fails_over(self) -> bool {
        !matches!(
            self,
            Self::ContentFiltered | Self::BadRequest | Self::Cancelled
        )
    }

    /// Who is at fault.
    #[must_use]
    pub fn blame(self) -> Blame {
        match self {
            Self::Timeout
            | Self::Connection
            | Self::Server
            | Self::Overloaded
            | Self::Malformed
            | Self::RateLimited => Blame::Upstream,
            Self::QuotaExhausted | Self::Auth | Self::ModelNotFound => Blame::Gateway,
            Self::ContextLength | Self::ContentFiltered | Self::BadRequest | Self::Cancelled => {
                Blame::Client
            }
        }
    }

    /// True for failures an operator must fix (credentials, model id): logged as alerts.
    #[must_use]
    pub fn is_alert(self) -> bool {
        matches!(
            self,
            Self::Auth | Self::ModelNotFound | Self::QuotaExhausted
        )
    }

    /// A low-cardinality label for metrics and logs.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Connection => "connection",
            Self::Server => "server",
            Self::Overloaded => "overloaded",
            Self::Malformed => "malformed",
            Self::RateLimited => "rate_limited",
            Self::QuotaExhausted => "quota_exhausted",
            Self::Auth => "auth",
            Self::ModelNotFound => "model_not_found",
            Self::ContextLength => "context_length",
            Self::ContentFiltered => "content_filtered",
            Self::BadRequest => "bad_request",
            Self::Cancelled => "cancelled",
        }
    }

    /// The kind whose [`label`](Self::label) is `label`.
    #[must_use]
    pub fn from_label(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.label() == label)
    }

    /// The default policy for this kind (docs/design.md, "Error table").
    #[must_use]
    pub fn default_policy(self) -> KindPolicy {
        KindPolicy {
            retry: self.is_retryable(),
            breaker: self.trips_breaker(),
            fail_over: self.fails_over(),
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One failed upstream call, classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[error("{kind}: {message}")]
pub struct ProviderError {
    /// The classification.
    pub kind: ErrorKind,
    /// What happened, in words safe to show a client (never a credential).
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// How long the vendor asked us to wait before trying again.
    #[serde(with = "opt_duration_ms")]
    pub retry_after: Option<Duration>,
    /// The vendor's own error code or type (`insufficient_quota`, `overloaded_error`, ...).
    pub vendor_code: Option<String>,
}

impl ProviderError {
    /// An error of `kind` with a message.
    #[must_use]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            vendor_code: None,
        }
    }

    /// Builder: the HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Builder: the vendor's Retry-After.
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// Builder: the vendor's error code.
    #[must_use]
    pub fn with_vendor_code(mut self, code: impl Into<String>) -> Self {
        self.vendor_code = Some(code.into());
        self
    }
}

/// A failed upstream call, attributed to the provider that produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttemptError {
    /// The provider's configured name.
    pub provider: String,
    /// What went wrong.
    pub error: ProviderError,
}

mod opt_duration_ms {
    use serde::Serializer;
    use std::time::Duration;

    #[allow(clippy::ref_option)] // serde's `with` passes `&Option<T>`
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_u64(crate::clock::duration_ms(*d)),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error table of docs/design.md, row by row: (kind, retry, breaker, fail over).
    #[test]
    fn defaults_match_the_design_table() {
        use BreakerEffect::*;
        use ErrorKind::*;
        let table = [
            (Timeout, false, CountFailure, true),
            (Connection, true, CountFailure, true),
            (Server, true, CountFailure, true),
            (Overloaded, true, CountFailure, true),
            (Malformed, true, CountFailure, true),
            (RateLimited, true, CoolForRetryAfter, true),
            (QuotaExhausted, false, OpenNow, true),
            (Auth, false, OpenNow, true),
            (ModelNotFound, false, OpenNow, true),
            (ContextLength, false, Ignore, true),
            (ContentFiltered, false, Ignore, false),
            (BadRequest, false, Ignore, false),
            (Cancelled, false, Ignore, false),
        ];
        assert_eq!(table.len(), ErrorKind::ALL.len());
        for (kind, retry, breaker, fail_over) in table {
            let p = kind.default_policy();
            assert_eq!(
                (p.retry, p.breaker, p.fail_over),
                (retry, breaker, fail_over),
                "{kind}"
            );
        }
    }

    #[test]
    fn labels_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            assert!(seen.insert(kind.label()));
            assert_eq!(ErrorKind::from_label(kind.label()), Some(kind));
        }
    }

    #[test]
    fn blame_separates_upstream_client_and_gateway() {
        assert_eq!(ErrorKind::Server.blame(), Blame::Upstream);
        assert_eq!(ErrorKind::BadRequest.blame(), Blame::Client);
        assert_eq!(ErrorKind::Auth.blame(), Blame::Gateway);
        assert!(ErrorKind::Auth.is_alert());
        assert!(!ErrorKind::Server.is_alert());
    }
}
