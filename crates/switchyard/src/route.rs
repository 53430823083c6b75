//! Routes: what a client asks for, and the order its providers are tried in.
//!
//! Owns [`Route`] (the API it serves, providers, order, deadline, retry, breaker, budget,
//! per-kind policy overrides) and [`plan`], the pure function from a route's candidates to the order they
//! are tried. Admission (open circuits, unpriced providers under a budget) happens later,
//! in the gateway, so that skips are recorded.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::breaker::BreakerConfig;
use crate::cost::Money;
use crate::error::{ErrorKind, KindPolicy};
use crate::retry::RetryPolicy;

/// How a route orders its providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// As listed.
    #[default]
    Ordered,
    /// By the cost of a nominal 1k-in / 1k-out call; unpriced last.
    Cheapest,
    /// By a moving average of observed latency; never-observed first (so they get measured).
    Fastest,
}

/// The API a route serves: a chat request to an embeddings route (or the reverse) is
/// refused before anything is dispatched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// Chat completions (plain and streamed; every inbound chat dialect).
    #[default]
    Chat,
    /// Embeddings.
    Embeddings,
}

impl Api {
    /// The name used in config, logs and `/v1/models`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Embeddings => "embeddings",
        }
    }
}

/// How a half-open circuit's probe calls its provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// One attempt under the provider's probe limit: its outcome alone decides the circuit,
    /// and a failure fails the request over at once.
    #[default]
    SingleAttempt,
    /// A whole turn, as on a closed circuit: the route's retries under the provider's own
    /// timeout (the tutorial's breaker, docs/tutorial.md, which `switchyard demo` replays).
    FullTurn,
}

/// The `max_tokens` a route sends for a request that sets none to a model whose output
/// limit is unknown, when the request spends against a budget (see
/// [`Route::default_max_tokens`]).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A named route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// What clients send as `model`.
    pub name: String,
    /// The API it serves (default chat).
    pub api: Api,
    /// Provider names, in configured order.
    pub providers: Vec<String>,
    /// How to order them.
    pub order: Order,
    /// End-to-end deadline per request.
    pub deadline: Duration,
    /// Retry settings.
    pub retry: RetryPolicy,
    /// Breaker settings.
    pub breaker: BreakerConfig,
    /// How a half-open circuit is probed.
    pub probe: Probe,
    /// Spend limit for this route, if any.
    pub budget: Option<Money>,
    /// Call unpriced providers even under a budget (their cost cannot be counted).
    pub allow_unpriced: bool,
    /// The `max_tokens` set on (and sent with) a request that spends against a budget,
    /// sets no `max_tokens`, and goes to a model whose output limit is unknown (not in the
    /// price table, no `max_output_tokens` override, no adapter default): without it the
    /// worst case of such a request, and so its reservation, would be unbounded.
    pub default_max_tokens: u32,
    /// Per-kind overrides of the default policy (docs/design.md, "Error table").
    pub policies: BTreeMap<ErrorKind, KindPolicy>,
    /// What happens to a field a provider cannot honour (`docs/fields.md`).
    pub unsupported_fields: UnsupportedFields,
    /// Fields a dialect does not model are sent verbatim to providers of that dialect's
    /// own vendor (and to no other) instead of being refused (`docs/fields.md`).
    pub passthrough_unknown: bool,
}

/// What a route does with a request field a provider cannot honour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsupportedFields {
    /// The provider is skipped for the request (the default); when every provider is, the
    /// request is refused naming the fields.
    #[default]
    Skip,
    /// The field is cleared for that provider and named in the answer (LiteLLM's
    /// `drop_params`).
    Drop,
}

impl Route {
    /// A route over `providers` with default settings.
    #[must_use]
    pub fn new(name: &str, providers: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            api: Api::Chat,
            providers: providers.iter().map(|p| (*p).to_owned()).collect(),
            order: Order::Ordered,
            deadline: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            breaker: BreakerConfig::default(),
            probe: Probe::SingleAttempt,
            budget: None,
            allow_unpriced: false,
            default_max_tokens: DEFAULT_MAX_TOKENS,
            policies: BTreeMap::new(),
            unsupported_fields: UnsupportedFields::Skip,
            passthrough_unknown: false,
        }
    }

    /// Builder: what happens to fields a provider cannot honour.
    #[must_use]
    pub fn unsupported_fields(mut self, what: UnsupportedFields) -> Self {
        self.unsupported_fields = what;
        self
    }

    /// Builder: send fields the dialect does not model to same-dialect providers.
    #[must_use]
    pub fn passthrough_unknown(mut self, on: bool) -> Self {
        self.passthrough_unknown = on;
        self
    }

    /// Builder: the API the route serves.
    #[must_use]
    pub fn api(mut self, api: Api) -> Self {
        self.api = api;
        self
    }

    /// Builder: how a half-open circuit is probed.
    #[must_use]
    pub fn probe(mut self, probe: Probe) -> Self {
        self.probe = probe;
        self
    }

    /// Builder: ordering.
    #[must_use]
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Builder: deadline.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Builder: retry settings.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Builder: breaker settings.
    #[must_use]
    pub fn breaker(mut self, breaker: BreakerConfig) -> Self {
        self.breaker = breaker;
        self
    }

    /// Builder: budget.
    #[must_use]
    pub fn budget(mut self, limit: Money) -> Self {
        self.budget = Some(limit);
        self
    }

    /// Builder: allow unpriced providers under the budget.
    #[must_use]
    pub fn allow_unpriced(mut self, allow: bool) -> Self {
        self.allow_unpriced = allow;
        self
    }

    /// Builder: the `max_tokens` applied when a budgeted request's worst case is unknown.
    #[must_use]
    pub fn default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }

    /// Builder: override the policy for one kind.
    #[must_use]
    pub fn policy(mut self, kind: ErrorKind, policy: KindPolicy) -> Self {
        self.policies.insert(kind, policy);
        self
    }

    /// The policy this route applies to `kind`.
    #[must_use]
    pub fn policy_for(&self, kind: ErrorKind) -> KindPolicy {
        self.policies
            .get(&kind)
            .copied()
            .unwrap_or_else(|| kind.default_policy())
    }
}

/// What [`plan`] knows about one candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Cost of a nominal 1k-in / 1k-out call; `None` when unpriced.
    pub nominal_cost: Option<Money>,
    /// Moving average of observed latency in ms; `None` before the first observation.
    pub latency_ms: Option<f64>,
}

/// The order to try candidates in, as indices into `candidates`. Stable: ties keep the
/// configured order.
#[must_use]
pub fn plan(order: Order, candidates: &[Candidate]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..candidates.len()).collect();
    match order {
        Order::Ordered => {}
        Order::Cheapest => idx.sort_by_key(|&i| match candidates[i].nominal_cost {
            Some(c) => (0, c),
            None => (1, Money::ZERO),
        }),
        Order::Fastest => idx.sort_by(|&a, &b| {
            let key = |i: usize| candidates[i].latency_ms.unwrap_or(f64::NEG_INFINITY);
            key(a).total_cmp(&key(b))
        }),
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(cost: Option<f64>, latency: Option<f64>) -> Candidate {
        Candidate {
            nominal_cost: cost.map(Money::from_usd),
            latency_ms: latency,
        }
    }

    #[test]
    fn cheapest_puts_unpriced_last_and_keeps_ties_stable() {
        let cands = [
            c(None, None),
            c(Some(0.02), None),
            c(Some(0.01), None),
            c(Some(0.01), None),
        ];
        assert_eq!(plan(Order::Cheapest, &cands), [2, 3, 1, 0]);
    }

    #[test]
    fn fastest_measures_unobserved_first_then_by_latency() {
        let cands = [c(None, Some(300.0)), c(None, Some(100.0)), c(None, None)];
        assert_eq!(plan(Order::Fastest, &cands), [2, 1, 0]);
    }

    #[test]
    fn ordered_is_as_listed() {
        let cands = [c(Some(9.0), Some(9.0)), c(Some(1.0), Some(1.0))];
        assert_eq!(plan(Order::Ordered, &cands), [0, 1]);
    }

    #[test]
    fn overrides_replace_the_default_policy_for_one_kind() {
        let mut p = ErrorKind::Timeout.default_policy();
        p.retry = true;
        let r = Route::new("r", &["a"]).policy(ErrorKind::Timeout, p);
        assert!(r.policy_for(ErrorKind::Timeout).retry);
        assert_eq!(
            r.policy_for(ErrorKind::Server),
            ErrorKind::Server.default_policy()
        );
    }
}
