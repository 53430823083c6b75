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
    /// Set on a wildcard route (a name ending in `/*`): its first provider is a template
    /// called with the model the client named after the prefix (see [`Wildcard`]).
    pub wildcard: Option<Wildcard>,
}

/// Longest model a client may name through a wildcard route, in bytes.
pub const MAX_WILDCARD_MODEL_BYTES: usize = 128;

/// Default for [`Wildcard::max_models`].
pub const DEFAULT_MAX_MODELS: usize = 64;

/// What makes a route a wildcard route: `openai/*` forwards `openai/gpt-4.1-mini` to its
/// first provider (the template) with the model `gpt-4.1-mini`, when an allow-list pattern
/// admits it. Each model the template is called with is its own provider to the breaker,
/// the price table, budgets, the ledger and metrics, named `{template}/{model}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wildcard {
    /// What a client's model starts with (the route's name without the final `*`).
    pub prefix: String,
    /// Allow-list patterns: an exact model id, or a prefix ending in `*` (`"*"` admits any
    /// well-formed model).
    pub models: Vec<String>,
    /// The most distinct models the route keeps (each one holds a breaker, a ledger row and
    /// metric series): a model takes a place once it has answered, and gives it up when
    /// unused for `gateway::MODEL_IDLE`; a new model while every place is held is refused.
    pub max_models: usize,
    /// Whether a model may hold `/` between well-formed segments (Together's
    /// `meta-llama/Llama-3.3-70B-Instruct-Turbo`, OpenRouter's `anthropic/claude-sonnet-4.5`).
    /// Only for a template that never puts its model raw into a URL path: OpenAI,
    /// Anthropic and OpenAI-compatible servers send it in the body, Bedrock percent-encodes
    /// it into one segment; Gemini, Vertex AI and Azure deployments do not. Off by default.
    pub slashes: bool,
}

/// Why a wildcard route refuses the model a client named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelRefusal {
    /// Empty, too long, or holding a character outside `[A-Za-z0-9._:@+-]` (and `/` between
    /// segments where the route allows it), or `..`: it would go into a URL path for some
    /// vendors (Gemini, Vertex AI, Azure).
    Malformed,
    /// No allow-list pattern admits it.
    NotAllowed,
}

impl Wildcard {
    /// The wildcard of a route named `name` (ending in `/*`) admitting `models`.
    #[must_use]
    pub fn new(name: &str, models: &[&str]) -> Option<Self> {
        let prefix = name.strip_suffix('*').filter(|p| p.ends_with('/'))?;
        Some(Self {
            prefix: prefix.to_owned(),
            models: models.iter().map(|m| (*m).to_owned()).collect(),
            max_models: DEFAULT_MAX_MODELS,
            slashes: false,
        })
    }

    /// The model a client's `requested` names through this route (`None`: not this route's
    /// prefix).
    #[must_use]
    pub fn model_of<'a>(&self, requested: &'a str) -> Option<&'a str> {
        requested.strip_prefix(self.prefix.as_str())
    }

    /// Whether `model` may be called: well formed and admitted by a pattern.
    ///
    /// # Errors
    /// Why it may not.
    pub fn admit(&self, model: &str) -> Result<(), ModelRefusal> {
        if !well_formed(model, self.slashes) {
            return Err(ModelRefusal::Malformed);
        }
        if self.models.iter().any(|p| pattern_admits(p, model)) {
            Ok(())
        } else {
            Err(ModelRefusal::NotAllowed)
        }
    }
}

/// Whether `model` is safe to put in a URL path segment and a state-store key: 1 to
/// [`MAX_WILDCARD_MODEL_BYTES`] bytes of `[A-Za-z0-9._:@+-]`, not starting with `.` or `-`,
/// no `..`.
#[must_use]
pub fn well_formed_model(model: &str) -> bool {
    well_formed(model, false)
}

/// [`well_formed_model`], or with `slashes` segments of that shape joined by single `/`
/// (none empty, so no leading, trailing or doubled `/`).
#[must_use]
pub fn well_formed(model: &str, slashes: bool) -> bool {
    !model.is_empty()
        && model.len() <= MAX_WILDCARD_MODEL_BYTES
        && !model.contains("..")
        && if slashes {
            model.split('/').all(segment)
        } else {
            segment(model)
        }
}

/// One segment of a model id: non-empty `[A-Za-z0-9._:@+-]`, not starting with `.` or `-`.
fn segment(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(model_byte) && !s.starts_with(['.', '-'])
}

fn model_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"._:@+-".contains(&c)
}

/// Whether allow-list `pattern` admits `model`: equal, or `pattern` ends in `*` and
/// `model` starts with what comes before it.
#[must_use]
pub fn pattern_admits(pattern: &str, model: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => model.starts_with(prefix),
        None => pattern == model,
    }
}

/// Whether `pattern` is a valid allow-list entry: a well-formed model (with `/` between
/// segments when `slashes`), optionally followed by one `*` (or `*` alone); the part before
/// the `*` may end in `/` (`meta-llama/*`).
#[must_use]
pub fn valid_pattern(pattern: &str, slashes: bool) -> bool {
    match pattern.strip_suffix('*') {
        Some("") => true,
        Some(prefix) => {
            let whole = prefix
                .strip_suffix('/')
                .filter(|_| slashes)
                .unwrap_or(prefix);
            // a prefix of a model: its last segment may be cut short, not empty or odd
            prefix.len() < MAX_WILDCARD_MODEL_BYTES && well_formed(whole, slashes)
        }
        None => well_formed(pattern, slashes),
    }
}

/// What a route does with a request field a provider cannot honour (`docs/fields.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsupportedFields {
    /// The default: a [degradable](crate::chat::Class::Degradable) field is cleared for
    /// that provider and named as dropped in the answer, so it never makes a provider
    /// skip; for a [contract](crate::chat::Class::Contract) field the provider is skipped,
    /// and when every provider is, the request is refused naming the fields.
    #[default]
    Degrade,
    /// Every field is a contract: the provider is skipped for any field it cannot honour
    /// (and when every provider is, the request is refused naming the fields). Read from
    /// `"skip"` too, its name before degradable fields existed.
    #[serde(alias = "skip")]
    Strict,
    /// Any field the provider cannot honour, contract fields too, is cleared for it and
    /// named in the answer (LiteLLM's `drop_params`). Fields it cannot honour together
    /// with the rest of the request still skip it unless a degradable one can go.
    Drop,
}

impl UnsupportedFields {
    /// The word config uses.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Degrade => "degrade",
            Self::Strict => "strict",
            Self::Drop => "drop",
        }
    }
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
            unsupported_fields: UnsupportedFields::Degrade,
            passthrough_unknown: false,
            wildcard: None,
        }
    }

    /// A wildcard route: `name` ends in `/*` (e.g. `openai/*`), `providers[0]` is the
    /// template called with the client's model, the rest are fallbacks called as
    /// configured, and `models` is the allow-list. `None` when `name` does not end in `/*`.
    #[must_use]
    pub fn wildcard(name: &str, providers: &[&str], models: &[&str]) -> Option<Self> {
        let wildcard = Wildcard::new(name, models)?;
        Some(Self {
            wildcard: Some(wildcard),
            ..Self::new(name, providers)
        })
    }

    /// Builder: the most distinct models a wildcard route calls its template with (no
    /// effect on other routes).
    #[must_use]
    pub fn max_models(mut self, n: usize) -> Self {
        if let Some(w) = self.wildcard.as_mut() {
            w.max_models = n;
        }
        self
    }

    /// Builder: whether a wildcard route's models may hold `/` (see [`Wildcard::slashes`]; no
    /// effect on other routes).
    #[must_use]
    pub fn model_slashes(mut self, on: bool) -> Self {
        if let Some(w) = self.wildcard.as_mut() {
            w.slashes = on;
        }
        self
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
    fn wildcard_takes_the_suffix_and_admits_by_pattern() {
        let r = Route::wildcard("openai/*", &["openai"], &["gpt-4.1*", "o4-mini"]).unwrap();
        let w = r.wildcard.as_ref().unwrap();
        assert_eq!(w.model_of("openai/gpt-4.1-mini"), Some("gpt-4.1-mini"));
        assert_eq!(w.model_of("anthropic/claude"), None);
        assert_eq!(w.admit("gpt-4.1-mini"), Ok(()));
        assert_eq!(w.admit("gpt-4.1"), Ok(()));
        assert_eq!(w.admit("o4-mini"), Ok(()));
        assert_eq!(w.admit("o4-mini-high"), Err(ModelRefusal::NotAllowed));
        assert_eq!(w.admit("gpt-4o"), Err(ModelRefusal::NotAllowed));
    }

    #[test]
    fn wildcard_needs_a_name_ending_in_slash_star() {
        assert!(Route::wildcard("openai*", &["a"], &["*"]).is_none());
        assert!(Route::wildcard("openai/", &["a"], &["*"]).is_none());
        assert!(Route::wildcard("smart", &["a"], &["*"]).is_none());
        assert!(Route::new("openai/*", &["a"]).wildcard.is_none());
    }

    #[test]
    fn hostile_models_are_malformed_whatever_the_allow_list() {
        let w = Wildcard::new("x/*", &["*"]).unwrap();
        let long = "a".repeat(MAX_WILDCARD_MODEL_BYTES + 1);
        for bad in [
            "",
            "../v1/files",
            "a/b",
            "a?key=1",
            "a#frag",
            "a%2Fb",
            "a..b",
            ".hidden",
            "-x",
            "a b",
            "a\\b",
            "é",
            &long,
        ] {
            assert_eq!(w.admit(bad), Err(ModelRefusal::Malformed), "{bad:?}");
        }
        for good in [
            "gpt-4.1-mini",
            "claude-sonnet-4@20250514",
            "llama3:8b",
            "a+b",
            "x",
        ] {
            assert_eq!(w.admit(good), Ok(()), "{good:?}");
        }
        assert_eq!(w.admit(&"a".repeat(MAX_WILDCARD_MODEL_BYTES)), Ok(()));
    }

    #[test]
    fn a_route_that_allows_slashes_admits_segments_and_nothing_else() {
        let r = Route::wildcard("together/*", &["together"], &["meta-llama/*", "Qwen/*"])
            .unwrap()
            .model_slashes(true);
        let w = r.wildcard.as_ref().unwrap();
        assert_eq!(
            w.model_of("together/meta-llama/Llama-3.3-70B-Instruct-Turbo"),
            Some("meta-llama/Llama-3.3-70B-Instruct-Turbo")
        );
        assert_eq!(w.admit("meta-llama/Llama-3.3-70B-Instruct-Turbo"), Ok(()));
        assert_eq!(w.admit("Qwen/Qwen2.5-72B-Instruct"), Ok(()));
        assert_eq!(
            w.admit("mistralai/Mixtral-8x7B"),
            Err(ModelRefusal::NotAllowed)
        );
        for bad in [
            "meta-llama/../v1/files",
            "meta-llama//x",
            "meta-llama/",
            "/meta-llama/x",
            "meta-llama/.x",
            "meta-llama/x?y",
            "meta-llama/x%2F",
        ] {
            assert_eq!(w.admit(bad), Err(ModelRefusal::Malformed), "{bad:?}");
        }
        // the same route without slashes refuses them as before
        let plain = Route::wildcard("together/*", &["together"], &["*"]).unwrap();
        assert_eq!(
            plain.wildcard.as_ref().unwrap().admit("meta-llama/x"),
            Err(ModelRefusal::Malformed)
        );
        // and the builder leaves ordinary routes alone
        assert!(Route::new("r", &["p"])
            .model_slashes(true)
            .wildcard
            .is_none());
    }

    #[test]
    fn patterns_are_models_with_at_most_a_trailing_star() {
        for ok in ["*", "gpt-4.1*", "o4-mini", "claude-@*"] {
            assert!(valid_pattern(ok, false), "{ok:?}");
            assert!(valid_pattern(ok, true), "{ok:?}");
        }
        for bad in ["", "gpt*4", "**", "a/*", "../*", "a?*", "*a"] {
            assert!(!valid_pattern(bad, false), "{bad:?}");
        }
        // with slashes: segments joined by single slashes, a prefix may end in one
        for ok in [
            "a/*",
            "meta-llama/*",
            "meta-llama/Llama-3*",
            "accounts/fireworks/models/x",
        ] {
            assert!(valid_pattern(ok, true), "{ok:?}");
        }
        for bad in [
            "/*", "a//*", "../*", "a/../*", "a//b", "/a", "a/", "a/.x", "a/-x*",
        ] {
            assert!(!valid_pattern(bad, true), "{bad:?}");
        }
        assert!(pattern_admits("*", "anything"));
        assert!(!pattern_admits("gpt-4.1", "gpt-4.1-mini"));
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

    #[test]
    fn routes_degrade_by_default_and_skip_reads_as_strict() {
        assert_eq!(
            Route::new("r", &["p"]).unsupported_fields,
            UnsupportedFields::Degrade
        );
        let read = |word: &str| serde_json::from_value::<UnsupportedFields>(word.into());
        assert_eq!(read("skip").unwrap(), UnsupportedFields::Strict);
        assert_eq!(read("strict").unwrap(), UnsupportedFields::Strict);
        assert_eq!(read("degrade").unwrap(), UnsupportedFields::Degrade);
        assert_eq!(read("drop").unwrap(), UnsupportedFields::Drop);
        assert!(read("ignore").is_err());
        assert_eq!(UnsupportedFields::Strict.label(), "strict");
    }
}
