//! Prometheus metrics: what the gateway and the HTTP surface did, for `GET /metrics`.
//!
//! Owns [`Metrics`]: the counters and histograms, the [`Observer`] that feeds them from the
//! gateway (attempts, breaker transitions, tokens, exact cost, usage overruns, which are
//! also written to stderr as alerts), the per-request hooks the
//! handlers call (requests, failovers, time to first token, gateway overhead), active
//! health checks (`metrics/health.rs`), and the text
//! exposition with gauges computed at scrape time from the gateway's health snapshot.
//!
//! Does not own: health itself (the gateway's), the request log (its count of dropped
//! lines is passed in), or routing of `/metrics` (`crate::http::admin`).
//!
//! Labels are low-cardinality by construction: route and provider names come from config,
//! every other label is a fixed `&'static str` (error kind, skip reason, state). Error
//! messages are never labels. The hot path allocates only the first time a series is seen:
//! series handles are cached by name and looked up with a borrowed key under a read lock.

mod health;
mod reload;
mod usage;

pub use usage::{UsageLabels, MAX_USAGE_SERIES};

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use rustc_hash::FxBuildHasher;
use switchyard::breaker::{CircuitState, Transition};
use switchyard::chat::ChatResponse;
use switchyard::embedding::EmbeddingResponse;
use switchyard::health::CheckReport;
use switchyard::observe::{Attempt, Observer, Outcome, Overrun};
use switchyard::propagate::Headroom;
use switchyard::state::StateStatus;
use switchyard::{GatewayError, Money, ProviderHealth};

/// `Content-Type` of [`Metrics::render`]'s output (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Request and attempt latency buckets, seconds: LLM calls take from milliseconds to minutes.
const CALL_BUCKETS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0,
];
/// Time-to-first-token buckets, seconds.
const TTFT_BUCKETS: [f64; 13] = [
    0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0,
];
/// Gateway overhead buckets, seconds: 10 µs to 50 ms.
const OVERHEAD_BUCKETS: [f64; 12] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05,
];

/// Token directions, in the order of [`ProviderSeries::tokens`]. `cached_input` is part of
/// `input` and `reasoning` part of `output` (the library's normalised usage).
const DIRECTIONS: [&str; 4] = ["input", "output", "cached_input", "reasoning"];
/// Breaker states, in the order of [`ProviderSeries::transitions`].
const STATES: [CircuitState; 3] = [
    CircuitState::Closed,
    CircuitState::Open,
    CircuitState::HalfOpen,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    status: u16,
    stream: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttemptLabels {
    provider: String,
    outcome: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransitionLabels {
    provider: String,
    to: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLabels {
    route: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    provider: String,
    direction: &'static str,
}

/// A counter of exact money: integer pico-dollars in, dollars out (never an `f64` sum).
#[derive(Clone, Debug, Default)]
struct UsdCounter {
    picos: Arc<AtomicI64>,
}

impl UsdCounter {
    fn add(&self, amount: Money) {
        let picos = amount.picos().max(0);
        // Saturating: `fetch_update` with a closure that never returns `None` cannot fail.
        let _ = self
            .picos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(picos))
            });
    }

    fn total(&self) -> Money {
        Money::from_picos(self.picos.load(Ordering::Relaxed))
    }
}

impl TypedMetric for UsdCounter {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for UsdCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_counter::<NoLabelSet, f64, f64>(&self.total().to_usd(), None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn call_histogram() -> Histogram {
    Histogram::new(CALL_BUCKETS)
}

fn ttft_histogram() -> Histogram {
    Histogram::new(TTFT_BUCKETS)
}

/// Handles by key, found with a borrowed key (no allocation once a series exists).
///
/// Hashed with FxHash by default, not SipHash: these lookups run several times per request
/// (BENCHMARKS.md, "Stop 22"), and a map whose keys are all configured names or fixed
/// labels gives a client nothing to flood. A map that may hold a client-chosen key keeps
/// std's keyed hasher (`S` = [`RandomState`]): provider names, since a wildcard route's
/// slots are named after the client's model (`openai/<model>`).
struct Handles<K, V, S = FxBuildHasher> {
    map: RwLock<HashMap<K, V, S>>,
}

impl<K: Hash + Eq, V: Clone, S: BuildHasher + Default> Handles<K, V, S> {
    fn new() -> Self {
        Self {
            map: RwLock::new(HashMap::default()),
        }
    }

    /// The handle for `key`, made (once) by `make` when missing.
    fn get<Q>(&self, key: &Q, make: impl FnOnce() -> (K, V)) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let read = self.map.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = read.get(key) {
            return v.clone();
        }
        drop(read);
        let mut write = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = write.get(key) {
            return v.clone();
        }
        let (k, v) = make();
        write.insert(k, v.clone());
        v
    }
}

/// Every metric family, as registered.
struct Families {
    requests: Family<RequestLabels, Counter>,
    request_duration: HistogramFamily<RouteLabels>,
    failovers: Family<RouteLabels, Counter>,
    ttft: HistogramFamily<RouteLabels>,
    attempts: Family<AttemptLabels, Counter>,
    attempt_duration: HistogramFamily<ProviderLabels>,
    transitions: Family<TransitionLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<ProviderLabels, UsdCounter>,
    unpriced: Family<ProviderLabels, Counter>,
    overruns: Family<ProviderLabels, Counter>,
    overhead: Histogram,
    unauthenticated: Family<ReasonLabels, Counter>,
    cache: Family<CacheLabels, Counter>,
    cache_saved: Family<RouteLabels, UsdCounter>,
}

impl Families {
    fn new() -> Self {
        Self {
            requests: Family::default(),
            request_duration: Family::new_with_constructor(call_histogram),
            failovers: Family::default(),
            ttft: Family::new_with_constructor(ttft_histogram),
            attempts: Family::default(),
            attempt_duration: Family::new_with_constructor(call_histogram),
            transitions: Family::default(),
            tokens: Family::default(),
            cost: Family::default(),
            unpriced: Family::default(),
            overruns: Family::default(),
            overhead: Histogram::new(OVERHEAD_BUCKETS),
            unauthenticated: Family::default(),
            cache: Family::default(),
            cache_saved: Family::default(),
        }
    }

    fn register(&self, r: &mut Registry) {
        self.register_request_families(r);
        self.register_provider_families(r);
    }

    /// Per route (and the gateway's own overhead).
    fn register_request_families(&self, r: &mut Registry) {
        r.register(
            "switchyard_requests",
            "HTTP requests by route, status and streaming",
            self.requests.clone(),
        );
        r.register(
            "switchyard_request_duration_seconds",
            "Time inside the gateway per request",
            self.request_duration.clone(),
        );
        r.register(
            "switchyard_failovers",
            "Requests answered by a provider other than the first candidate",
            self.failovers.clone(),
        );
        r.register(
            "switchyard_time_to_first_token_seconds",
            "Streams: time until the first content chunk",
            self.ttft.clone(),
        );
        r.register(
            "switchyard_gateway_overhead_seconds",
            "Time the gateway itself added to a non-streamed request answered in one attempt (time in the gateway less the upstream call)",
            self.overhead.clone(),
        );
        r.register(
            "switchyard_unauthenticated",
            "Requests refused for want of a valid client key (401), by reason (missing_key, invalid_key); the request log keeps the first of each reason per second",
            self.unauthenticated.clone(),
        );
        r.register(
            "switchyard_cache",
            "Requests of cached routes by what the cache did (hit, miss, stale, bypass)",
            self.cache.clone(),
        );
        r.register(
            "switchyard_cache_saved_usd",
            "What the answers served from a route's cache cost when they were made (priced ones)",
            self.cache_saved.clone(),
        );
    }

    /// Per provider.
    fn register_provider_families(&self, r: &mut Registry) {
        r.register(
            "switchyard_attempts",
            "Tries and skips by provider, outcome and kind (error, skip reason, rescue method)",
            self.attempts.clone(),
        );
        r.register(
            "switchyard_attempt_duration_seconds",
            "Duration of each try (skips excluded)",
            self.attempt_duration.clone(),
        );
        r.register(
            "switchyard_breaker_transitions",
            "Circuit breaker state changes by provider and new state",
            self.transitions.clone(),
        );
        r.register(
            "switchyard_tokens",
            "Tokens by provider and direction (cached_input is in input, reasoning in output)",
            self.tokens.clone(),
        );
        r.register(
            "switchyard_cost_usd",
            "Exact spend in US dollars of priced calls",
            self.cost.clone(),
        );
        r.register(
            "switchyard_unpriced_calls",
            "Answered calls whose cost is unknown (not counted as $0)",
            self.unpriced.clone(),
        );
        r.register(
            "switchyard_usage_overruns",
            "Calls that reported more output than they were allowed (max_tokens or the model's limit) or more input than their reservation's bound: a budget can be overspent by the difference",
            self.overruns.clone(),
        );
    }
}

/// One route's series.
#[derive(Clone)]
struct RouteSeries {
    name: Arc<str>,
    duration: Histogram,
    ttft: Histogram,
    failovers: Counter,
    /// By (status, stream).
    requests: Arc<Handles<(u16, bool), Counter>>,
}

/// One provider's series.
struct ProviderSeries {
    name: String,
    attempt_duration: Histogram,
    /// By [`DIRECTIONS`].
    tokens: [Counter; 4],
    cost: UsdCounter,
    unpriced: Counter,
    overruns: Counter,
    /// By [`STATES`].
    transitions: [Counter; 3],
    /// By (outcome, kind).
    attempts: Handles<(&'static str, &'static str), Counter>,
}

impl ProviderSeries {
    fn new(f: &Families, name: &str) -> Self {
        let provider = || ProviderLabels {
            provider: name.to_owned(),
        };
        Self {
            name: name.to_owned(),
            attempt_duration: f.attempt_duration.get_or_create_owned(&provider()),
            tokens: DIRECTIONS.map(|direction| {
                f.tokens.get_or_create_owned(&TokenLabels {
                    provider: name.to_owned(),
                    direction,
                })
            }),
            cost: f.cost.get_or_create_owned(&provider()),
            unpriced: f.unpriced.get_or_create_owned(&provider()),
            overruns: f.overruns.get_or_create_owned(&provider()),
            transitions: STATES.map(|to| {
                f.transitions.get_or_create_owned(&TransitionLabels {
                    provider: name.to_owned(),
                    to: to.label(),
                })
            }),
            attempts: Handles::new(),
        }
    }
}

/// The gateway's Prometheus metrics. Also an [`Observer`] of the gateway.
pub struct Metrics {
    registry: Registry,
    families: Families,
    routes: Handles<String, RouteSeries>,
    /// Keyed by provider name, which a wildcard route's slot takes from the client's model:
    /// std's keyed hasher (see [`Handles`]).
    providers: Handles<String, Arc<ProviderSeries>, RandomState>,
    /// Active health checks (`metrics/health.rs`).
    health: health::HealthChecks,
    /// Series by route, key and model; in flight; upstream headroom (`metrics/usage.rs`).
    usage: usage::Usage,
    /// Config reloads (`metrics/reload.rs`).
    reloads: reload::Reloads,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics with every family registered (no configured names: every
    /// key-labelled series counts as `other`; see [`Metrics::with_usage_labels`]).
    #[must_use]
    pub fn new() -> Self {
        Self::with_usage_labels(UsageLabels::default())
    }

    /// Empty metrics whose route, key and model labels name what `labels` names.
    #[must_use]
    pub fn with_usage_labels(labels: UsageLabels) -> Self {
        let families = Families::new();
        let mut registry = Registry::default();
        families.register(&mut registry);
        let health = health::HealthChecks::new();
        health.register(&mut registry);
        let usage = usage::Usage::new(labels);
        usage.register(&mut registry);
        let reloads = reload::Reloads::default();
        reloads.register(&mut registry);
        Self {
            registry,
            families,
            routes: Handles::new(),
            providers: Handles::new(),
            health,
            usage,
            reloads,
        }
    }

    /// A reload's config names these routes, keys and models: the per-key series label them
    /// from now on (series already made stay).
    pub fn set_usage_labels(&self, labels: UsageLabels) {
        self.usage.set_labels(labels);
    }

    /// The config in force was loaded at start: its hash (first 48 bits) and the time.
    pub fn config_loaded(&self, hash48: u64, at_unix_s: f64) {
        self.reloads.loaded(hash48, at_unix_s);
    }

    /// A reload was applied (`switchyard_config_reloads_total{result="ok"}`).
    pub fn config_reloaded(&self, hash48: u64, at_unix_s: f64) {
        self.reloads.applied(hash48, at_unix_s);
    }

    /// A reload was refused (`switchyard_config_reloads_total{result="error"}`).
    pub fn config_refused(&self) {
        self.reloads.refused();
    }

    /// A request began (it is in flight until its log entry is written: the request log
    /// tells `Metrics` as one of its taps).
    pub fn request_started(&self) {
        self.usage.started();
    }

    /// The last active health check of each provider this process checked.
    #[must_use]
    pub fn last_checks(&self) -> BTreeMap<String, CheckReport> {
        self.health.last()
    }

    /// A finished HTTP request. `route` is a configured route name or `"unknown"`.
    pub fn request(&self, route: &str, status: u16, stream: bool, duration: Duration) {
        let r = self.route(route);
        r.requests
            .get(&(status, stream), || {
                let labels = RequestLabels {
                    route: r.name.to_string(),
                    status,
                    stream,
                };
                (
                    (status, stream),
                    self.families.requests.get_or_create_owned(&labels),
                )
            })
            .inc();
        r.duration.observe(duration.as_secs_f64());
    }

    /// A request answered by a provider other than its route's first candidate.
    pub fn failover(&self, route: &str) {
        self.route(route).failovers.inc();
    }

    /// A cached route's request, by what its cache did (`status`), and what an answer
    /// served from the cache saved.
    pub fn cache(&self, route: &str, status: &'static str, saved: Option<Money>) {
        let labels = CacheLabels {
            route: route.to_owned(),
            status,
        };
        self.families.cache.get_or_create(&labels).inc();
        if let Some(saved) = saved {
            let labels = RouteLabels {
                route: route.to_owned(),
            };
            self.families.cache_saved.get_or_create(&labels).add(saved);
        }
    }

    /// A stream's time to its first content chunk.
    pub fn ttft(&self, route: &str, d: Duration) {
        self.route(route).ttft.observe(d.as_secs_f64());
    }

    /// A request refused for want of a valid client key, for `reason` (a fixed label).
    pub fn unauthenticated(&self, reason: &'static str) {
        self.families
            .unauthenticated
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// The time the gateway itself added to a request (not waiting on upstreams).
    pub fn overhead(&self, d: Duration) {
        self.families.overhead.observe(d.as_secs_f64());
    }

    /// The text exposition: every counter and histogram, plus gauges computed now from
    /// `health` (breaker state, consecutive failures, latency average) and the request
    /// log's dropped-line count.
    #[must_use]
    pub fn render(
        &self,
        health: &[ProviderHealth],
        log_dropped: u64,
        store: &StateStatus,
    ) -> String {
        self.render_with(health, log_dropped, store, &Extras::default())
    }

    /// [`Metrics::render`] with `extras`: budgets left, telemetry's own drops.
    #[must_use]
    pub fn render_with(
        &self,
        health: &[ProviderHealth],
        log_dropped: u64,
        store: &StateStatus,
        extras: &Extras,
    ) -> String {
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a `String` cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.registry);
        let _ = prometheus_text::encode(&mut out, &scrape_registry(health, log_dropped, store));
        let _ = prometheus_text::encode(&mut out, &extras.registry());
        out
    }

    fn route(&self, name: &str) -> RouteSeries {
        self.routes.get(name, || {
            let labels = RouteLabels {
                route: name.to_owned(),
            };
            let series = RouteSeries {
                name: Arc::from(name),
                duration: self.families.request_duration.get_or_create_owned(&labels),
                ttft: self.families.ttft.get_or_create_owned(&labels),
                failovers: self.families.failovers.get_or_create_owned(&labels),
                requests: Arc::new(Handles::new()),
            };
            (name.to_owned(), series)
        })
    }

    fn provider(&self, name: &str) -> Arc<ProviderSeries> {
        self.providers.get(name, || {
            (
                name.to_owned(),
                Arc::new(ProviderSeries::new(&self.families, name)),
            )
        })
    }
}

/// The `(outcome, kind)` labels of an attempt: fixed strings only, never the message.
fn attempt_labels(outcome: &Outcome) -> (&'static str, &'static str) {
    match outcome {
        Outcome::Success => ("success", ""),
        Outcome::Failed { kind, .. } => ("failed", kind.label()),
        Outcome::Skipped { reason, .. } => ("skipped", reason.label()),
        Outcome::Rescue { method } => (
            "rescue",
            match method.as_str() {
                "continuation" => "continuation",
                "restart" => "restart",
                _ => "other",
            },
        ),
        // a rescue that came to nothing: counted apart from failures, never as one
        Outcome::Diverged { .. } => ("diverged", "restart"),
        Outcome::Declined { kind, .. } => ("declined", kind.label()),
    }
}

fn state_index(state: CircuitState) -> usize {
    match state {
        CircuitState::Closed => 0,
        CircuitState::Open => 1,
        CircuitState::HalfOpen => 2,
    }
}

impl Observer for Metrics {
    fn on_attempt(&self, _route: &str, attempt: &Attempt) {
        let p = self.provider(&attempt.provider);
        let key = attempt_labels(&attempt.outcome);
        p.attempts
            .get(&key, || {
                let labels = AttemptLabels {
                    provider: p.name.clone(),
                    outcome: key.0,
                    kind: key.1,
                };
                (key, self.families.attempts.get_or_create_owned(&labels))
            })
            .inc();
        if attempt.was_called() {
            p.attempt_duration.observe(attempt.latency.as_secs_f64());
        }
        // what a failed embeddings fan-out's answered calls billed (switchyard::observe::Reported::spent)
        let failed = matches!(attempt.outcome, Outcome::Failed { .. });
        if let Some(r) = attempt.reported.as_ref().filter(|_| failed) {
            p.tokens[0].inc_by(r.tokens.map_or(0, |t| t.0));
            if let Some(cost) = r.spent {
                p.cost.add(cost);
            }
        }
    }

    fn on_transition(&self, provider: &str, transition: &Transition) {
        self.provider(provider).transitions[state_index(transition.to)].inc();
    }

    /// Counted, and alerted on stderr (the server's own line, shown whatever `RUST_LOG`
    /// says) at the 1st, 2nd, 4th, 8th … overrun of a provider
    /// (a misbehaving upstream cannot flood the log, and the counter has every one).
    fn on_overrun(&self, route: &str, overrun: &Overrun) {
        let n = self.provider(&overrun.provider).overruns.inc() + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                target: crate::telemetry::trace::SERVE,
                "alert: {}",
                overrun_alert(route, overrun, n)
            );
        }
    }

    fn on_health_check(&self, report: &CheckReport) {
        self.health.record(report);
    }

    fn on_headroom(&self, provider: &str, headroom: &Headroom) {
        for (limit, left) in headroom.each() {
            self.usage.headroom(provider, limit, left);
        }
    }

    /// An embeddings answer's input tokens and cost, counted like a completion's.
    fn on_embedded(&self, _route: &str, result: Result<&EmbeddingResponse, &GatewayError>) {
        let Ok(resp) = result else { return };
        let p = self.provider(&resp.provider);
        p.tokens[0].inc_by(resp.usage.map_or(0, |u| u.input_tokens));
        match resp.cost {
            Some(cost) => p.cost.add(cost),
            None => {
                p.unpriced.inc();
            }
        }
    }

    fn on_complete(&self, _route: &str, result: Result<&ChatResponse, &GatewayError>) {
        let resp = match result {
            Ok(resp) => resp,
            Err(GatewayError::Cancelled {
                partial: Some(partial),
                ..
            }) => partial,
            Err(_) => return,
        };
        let p = self.provider(&resp.provider);
        let u = resp.usage.unwrap_or_default();
        let counts = [
            u.input_tokens,
            u.output_tokens,
            u.cached_input_tokens,
            u.reasoning_tokens,
        ];
        for (counter, n) in p.tokens.iter().zip(counts) {
            counter.inc_by(n);
        }
        match resp.cost {
            Some(cost) => p.cost.add(cost),
            None => {
                p.unpriced.inc();
            }
        }
    }
}

/// The alert line for the `n`th overrun of a provider.
fn overrun_alert(route: &str, o: &Overrun, n: u64) -> String {
    let mut what = Vec::with_capacity(2);
    if let Some(allowed) = o.output_allowed.filter(|_| o.output_over()) {
        what.push(format!(
            "{} output tokens, {allowed} allowed",
            o.output_reported
        ));
    }
    if let Some(bound) = o.input_bound.filter(|_| o.input_over()) {
        what.push(format!(
            "{} input tokens, {bound} reserved for",
            o.input_reported
        ));
    }
    format!(
        "provider {:?} (model {:?}, route {route:?}) reported {}; billed in full, budgets may be overspent by the difference (overrun #{n} of this provider; switchyard_usage_overruns_total)",
        o.provider,
        o.model,
        what.join(" and ")
    )
}

/// Gauges read from the health snapshot at scrape time.
#[derive(Default)]
struct HealthGauges {
    state: Family<ProviderLabels, Gauge>,
    auth_failed: Family<ProviderLabels, Gauge>,
    consecutive_failures: Family<ProviderLabels, Gauge>,
    latency: Family<ProviderLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    log_dropped: Counter,
    state_connected: Gauge,
    state_shared: Gauge,
}

/// `(switchyard_breaker_state, switchyard_breaker_auth_failed)` for a health state.
fn state_gauges(state: &str) -> (i64, i64) {
    match state {
        "closed" => (0, 0),
        "half_open" => (2, 0),
        "auth_failed" => (1, 1),
        _ => (1, 0),
    }
}

/// A throwaway registry of the scrape-time gauges.
fn scrape_registry(health: &[ProviderHealth], log_dropped: u64, store: &StateStatus) -> Registry {
    let g = HealthGauges::default();
    g.state_connected.set(i64::from(store.connected));
    g.state_shared.set(i64::from(store.backend != "memory"));
    for h in health {
        let labels = ProviderLabels {
            provider: h.name.clone(),
        };
        let (state, auth_failed) = state_gauges(&h.state);
        g.state.get_or_create(&labels).set(state);
        g.auth_failed.get_or_create(&labels).set(auth_failed);
        let failures = i64::from(h.consecutive_failures);
        g.consecutive_failures.get_or_create(&labels).set(failures);
        if let Some(ms) = h.latency_ms {
            g.latency.get_or_create(&labels).set(ms / 1000.0);
        }
    }
    g.log_dropped.inc_by(log_dropped);
    g.into_registry()
}

impl HealthGauges {
    fn into_registry(self) -> Registry {
        let mut r = Registry::default();
        r.register(
            "switchyard_breaker_state",
            "Circuit state: 0 closed, 1 open (auth_failed included), 2 half_open",
            self.state,
        );
        r.register(
            "switchyard_breaker_auth_failed",
            "1 while the circuit is open because the provider rejected our credentials",
            self.auth_failed,
        );
        r.register(
            "switchyard_breaker_consecutive_failures",
            "Consecutive failed turns",
            self.consecutive_failures,
        );
        r.register(
            "switchyard_provider_latency_ewma_seconds",
            "Moving average of successful attempts' latency",
            self.latency,
        );
        r.register(
            "switchyard_request_log_dropped",
            "Request-log lines dropped because the writer was behind",
            self.log_dropped,
        );
        r.register(
            "switchyard_state_connected",
            "1 while breaker, budget and rate-limit state is shared with the fleet (always 1 for the memory backend); 0 while degraded to local state",
            self.state_connected,
        );
        r.register(
            "switchyard_state_shared",
            "1 when a shared store (Redis) is configured",
            self.state_shared,
        );
        r
    }
}

/// What a scrape reads besides the health snapshot: budgets left, and what telemetry
/// itself dropped.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// (`route` or `key`, its name, dollars left this period) for each budget.
    pub budgets: Vec<(&'static str, String, f64)>,
    /// Spans the OTLP export dropped (queue full, collector failing).
    pub spans_dropped: u64,
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Access-log lines dropped (stdout behind).
    pub access_dropped: u64,
    /// Whether the database (`[database]`) answers; `None` without one.
    pub database_up: Option<bool>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BudgetLabels {
    scope: &'static str,
    name: String,
}

impl Extras {
    fn registry(&self) -> Registry {
        let mut r = Registry::default();
        let budgets = Family::<BudgetLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        for (scope, name, left) in &self.budgets {
            let labels = BudgetLabels {
                scope,
                name: name.clone(),
            };
            budgets.get_or_create(&labels).set(*left);
        }
        r.register(
            "switchyard_budget_remaining_usd",
            "Dollars left in each route's and client key's budget this period (limit less spent and reserved)",
            budgets,
        );
        let counter = |n: u64| {
            let c: Counter = Counter::default();
            c.inc_by(n);
            c
        };
        r.register(
            "switchyard_otlp_spans_dropped",
            "Spans not exported: the export queue was full or the collector failed",
            counter(self.spans_dropped),
        );
        r.register(
            "switchyard_otlp_spans_exported",
            "Spans the OTLP collector accepted",
            counter(self.spans_exported),
        );
        r.register(
            "switchyard_access_log_dropped",
            "Access-log lines dropped because stdout was behind",
            counter(self.access_dropped),
        );
        if let Some(up) = self.database_up {
            let gauge: Gauge = Gauge::default();
            gauge.set(i64::from(up));
            r.register(
                "switchyard_database_up",
                "1 while the database ([database]) answers, 0 while it does not (keys are served from memory, changes and spend rows wait)",
                gauge,
            );
        }
        r
    }
}

impl crate::telemetry::log::LogTap for Metrics {
    /// A finished request: out of flight, and counted by route, key and model.
    fn record(&self, entry: &Arc<crate::telemetry::log::LogEntry>) {
        self.usage.finished(entry);
    }
}

#[cfg(test)]
mod tests;
