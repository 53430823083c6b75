//! The attempt trail: what each try and skip of a request came to.
//!
//! Owns [`Attempt`] (one entry), its [`Outcome`] and the [`SkipReason`] a provider was not
//! called for. Replies (`chat`) and errors (`error`) carry a trail; observers (`observe`)
//! are shown each entry as it is made. Part of the vocabulary's bottom layer: it depends
//! only on `fault` (the kind of a failure).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fault::ErrorKind;
use crate::money::Money;

/// Why a provider was not called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its circuit is open.
    CircuitOpen,
    /// Half-open, and another request holds the probe lease.
    ProbeInFlight,
    /// It asked us (Retry-After) to stay away until later.
    Cooling,
    /// It has no known price and the route has a budget.
    Unpriced,
    /// A committed stream broke after passing the gateway's rescue buffer limit: what
    /// it delivered was no longer kept, so this provider could not be asked to rescue it.
    RescueBufferFull,
    /// A committed stream answering several choices (`n` > 1) broke: a rescue cannot
    /// rebuild the other choices, so this provider was not asked to finish it.
    MultiChoice,
    /// The request uses fields this provider's vendor cannot honour (named in the
    /// outcome's `fields`; `docs/fields.md`).
    CannotHonour,
    /// The request carries what only providers taking its native body can serve (a
    /// Responses request's built-in tools), and this provider does not take that body.
    NeedsNative,
}

impl SkipReason {
    /// Lower-case label for metrics and logs.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::CircuitOpen => "circuit_open",
            Self::ProbeInFlight => "probe_in_flight",
            Self::Cooling => "cooling",
            Self::Unpriced => "unpriced",
            Self::RescueBufferFull => "rescue_buffer_full",
            Self::MultiChoice => "multi_choice",
            Self::CannotHonour => "cannot_honour",
            Self::NeedsNative => "needs_native",
        }
    }
}

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
        /// For [`SkipReason::CannotHonour`]: the fields it cannot honour; for
        /// [`SkipReason::NeedsNative`]: what only a native provider serves, when known.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fields: Vec<String>,
    },
    /// A committed stream broke and this provider was asked to finish it.
    Rescue {
        /// `continuation` or `restart`.
        method: String,
    },
    /// This provider's restart of a broken stream (its [`Rescue`](Self::Rescue) entry
    /// comes first) did not reproduce the text the client already had, so it could not
    /// be spliced on. The rescue's failure, not the provider's: it answered, and what it
    /// said is a valid answer of its own. Never counted against it (breaker, failures).
    Diverged {
        /// Characters of the text already sent that the restart reproduced before it
        /// differed (or ended).
        at: u64,
        /// Characters already sent.
        sent: u64,
    },
    /// This provider refused a continuation of a broken stream, its prefill (another
    /// provider's text) rejected with an error that blames the request (`bad_request`,
    /// `context_length`, `content_filtered`). The rescue's failure, not the provider's:
    /// only a rescue asks that. Never counted against it (breaker, failures).
    Declined {
        /// How.
        kind: ErrorKind,
        /// The error message (never a credential).
        message: String,
    },
}

impl Outcome {
    /// A short label: `success`, `failed:<kind>`, `skipped:<reason>` (with the fields of
    /// `skipped:cannot_honour(seed,logprobs)`), `rescue:<method>`, `diverged`,
    /// `declined:<kind>`.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Success => "success".to_owned(),
            Self::Failed { kind, .. } => format!("failed:{kind}"),
            Self::Skipped { reason, fields } if !fields.is_empty() => {
                format!("skipped:{}({})", reason.label(), fields.join(","))
            }
            Self::Skipped { reason, .. } => format!("skipped:{}", reason.label()),
            Self::Rescue { method } => format!("rescue:{method}"),
            Self::Diverged { .. } => "diverged".to_owned(),
            Self::Declined { kind, .. } => format!("declined:{kind}"),
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
    /// When the try began (a skip: when it was made), in ms after the gateway started the
    /// request; set when the entry is recorded. Spans are placed by it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_duration_ms_f64",
        rename = "start_ms"
    )]
    pub start: Option<Duration>,
    /// The try was the half-open circuit's single probe (`false`: the circuit was closed
    /// when the provider's turn was admitted). Logged only when true, so a normal
    /// request's line does not grow.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe: bool,
    /// What the call said of its answer (a success: its upstream id, finish reason and
    /// usage), for the call's own span. Carried in memory with the trail, never written:
    /// the request log has the request's usage, and a client sees the answer itself.
    #[serde(skip)]
    pub reported: Option<Reported>,
}

/// What an answered call reported of itself (see [`Attempt::reported`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reported {
    /// The upstream's id of its answer (`chatcmpl-…`, `msg_…`, `resp_…`, Gemini's
    /// `responseId`), when it gave one. Shared, so copies of the trail do not copy it.
    pub id: Option<Arc<str>>,
    /// Why its (first) answer stopped, in OpenAI's words (`stop`, `length`,
    /// `tool_calls`, `content_filter`) or the vendor's own.
    pub finish: Option<Cow<'static, str>>,
    /// The input and output tokens it reported, when it did.
    pub tokens: Option<(u64, u64)>,
    /// The HTTP status of its answer, when it reached an HTTP upstream (failures carry
    /// theirs in [`Attempt::status`]).
    pub status: Option<u16>,
    /// On a failed attempt: what the provider's turn, which it ended, billed though it
    /// failed (the embeddings calls of a fan-out that were answered before one failed;
    /// their input tokens are in `tokens`). Counted by the ledger and the request log.
    pub spent: Option<Money>,
}

/// What the failed attempts of `attempts` billed though they failed (see
/// [`Reported::spent`]); `None` when none did.
#[must_use]
pub fn spent(attempts: &[Attempt]) -> Option<Money> {
    attempts
        .iter()
        .filter(|a| matches!(a.outcome, Outcome::Failed { .. }))
        .filter_map(|a| a.reported.as_ref()?.spent)
        .reduce(|a, b| a + b)
}

impl Attempt {
    /// A skip record.
    #[must_use]
    pub fn skipped(provider: &str, model: &str, reason: SkipReason) -> Self {
        Self {
            provider: provider.to_owned(),
            model: model.to_owned(),
            attempt: 0,
            outcome: Outcome::Skipped {
                reason,
                fields: Vec::new(),
            },
            status: None,
            latency: Duration::ZERO,
            start: None,
            probe: false,
            reported: None,
        }
    }

    /// The breaker state this entry met: `half_open` for a probe, `open` or `half_open`
    /// for a skip the breaker made, `closed` for any other try; `None` for a skip the
    /// breaker had no part in.
    #[must_use]
    pub fn breaker_state(&self) -> Option<&'static str> {
        match &self.outcome {
            Outcome::Skipped { reason, .. } => match reason {
                SkipReason::CircuitOpen => Some("open"),
                SkipReason::ProbeInFlight => Some("half_open"),
                _ => None,
            },
            _ if self.probe => Some("half_open"),
            _ => Some("closed"),
        }
    }

    /// True for a try that reached the provider (not a skip).
    #[must_use]
    pub fn was_called(&self) -> bool {
        !matches!(self.outcome, Outcome::Skipped { .. })
    }
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

/// An optional duration as fractional milliseconds (absent when `None`).
mod opt_duration_ms_f64 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    #[allow(clippy::ref_option)] // serde's `with` hands us `&Option<T>`
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_ms_f64::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms = Option::<f64>::deserialize(d)?;
        Ok(ms.map(|ms| Duration::from_secs_f64(ms.max(0.0) / 1000.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rescue that came to nothing has its own outcome in the log's trail, never
    /// `failed`: what counts failures per provider does not count it.
    #[test]
    fn a_diverged_or_declined_rescue_is_logged_as_itself() {
        let mut a = Attempt::skipped("b", "m", SkipReason::Cooling);
        a.outcome = Outcome::Diverged { at: 10, sent: 16 };
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            (v["outcome"].as_str(), v["at"].as_u64()),
            (Some("diverged"), Some(10))
        );
        assert_eq!(v["sent"], 16);
        assert_eq!(serde_json::from_value::<Attempt>(v).unwrap(), a);
        assert_eq!(a.outcome.label(), "diverged");
        a.outcome = Outcome::Declined {
            kind: ErrorKind::BadRequest,
            message: "no prefill".to_owned(),
        };
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            (v["outcome"].as_str(), v["kind"].as_str()),
            (Some("declined"), Some("bad_request"))
        );
        assert_eq!(a.outcome.label(), "declined:bad_request");
        assert_eq!(a.breaker_state(), Some("closed"));
    }
}
