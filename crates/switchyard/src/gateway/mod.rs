//! The gateway: the only place that knows the order of the steps.
//!
//! Owns the registry of providers and routes ([`GatewayBuilder`], [`Gateway`]), the health
//! snapshot, and — in `run` — one request's journey: plan the route, and for each candidate
//! ask its breaker, reserve budget, run the retry loop around `Provider::send` under the
//! deadline, record the outcome, settle or release, and fail over or return. Side outputs
//! (observers, ledger) watch; they never steer. A call that is no request of its own (a
//! token count) goes through a provider's breaker with `guarded`'s
//! [`Gateway::call_through_breaker`].

mod guarded;
mod health;
mod hold;
mod run;
mod stream;
mod wildcard;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::breaker::{BreakerConfig, CircuitState};
use crate::chat::{ChatRequest, ChatResponse, Field, Support};
use crate::clock::{Clock, UnixMillis};
use crate::cost::{Money, Price, PriceTable};
use crate::embedding::{EmbeddingRequest, EmbeddingResponse, MAX_DIMENSIONS, MAX_INPUTS};
use crate::error::{ErrorKind, GatewayError};
use crate::observe::{Ledger, Observer};
use crate::provider::Provider;
use crate::route::{Api, Route};
use crate::state::{MemoryState, SharedState};

pub use guarded::Guarded;

pub use stream::{CancelSlot, ChatStream, StreamEvent};
pub use wildcard::MODEL_IDLE;

/// Default cap on what a committed stream keeps of the text and tool calls it delivered
/// (for a rescue and the final response): 4 MiB. See [`GatewayBuilder::rescue_buffer_bytes`].
pub const DEFAULT_RESCUE_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// One provider as the gateway runs it: the adapter plus per-provider settings.
#[derive(Clone)]
pub struct ProviderSpec {
    /// Unique name: breaker and ledger key.
    pub name: String,
    /// The adapter.
    pub provider: Arc<dyn Provider>,
    /// Per-attempt timeout (clamped to the request's time left).
    pub timeout: Duration,
    /// A half-open probe's timeout when shorter than `timeout` (`None`: `timeout`). A probe
    /// is one attempt; a provider that hangs costs the probing request this long before
    /// it fails over.
    pub probe_timeout: Option<Duration>,
    /// Streams: longest wait for the first content chunk.
    pub first_token_timeout: Duration,
    /// Streams: longest gap between chunks.
    pub stall_timeout: Duration,
    /// Overrides the route's `retry.max_attempts` for this provider.
    pub max_attempts: Option<u32>,
    /// Overrides the price table for this provider's model.
    pub price: Option<Price>,
    /// Overrides the price table's output limit for this provider's model: the most
    /// output tokens one call can produce, what a request without `max_tokens` reserves.
    pub max_output_tokens: Option<u32>,
    /// The upstream accepts an assistant prefill to continue from (stream rescue).
    pub supports_prefill: bool,
    /// Whether the model takes reasoning controls (`reasoning_effort` and what it is
    /// translated to). `None`: the price table's `reasoning` flag for the model, else yes.
    /// A model that does not reason is called without `reasoning_effort` (a degradable
    /// field, named as dropped; skipped for it on a strict route), as if its vendor
    /// declared the field unsupported.
    pub reasoning: Option<bool>,
    /// Builds this provider for another model (same kind, endpoint, credential and
    /// settings): what makes it a wildcard route's template. `None`: it calls only its own
    /// model.
    pub models: Option<ModelFactory>,
}

/// Builds a provider like a template but calling `model` (see [`ProviderSpec::models`]).
/// Called once per distinct model a wildcard route admits; the model is already checked
/// ([`crate::route::well_formed`], with `/` where the route allows it).
pub type ModelFactory = Arc<dyn Fn(&str) -> Result<Arc<dyn Provider>, String> + Send + Sync>;

impl std::fmt::Debug for ProviderSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSpec")
            .field("name", &self.name)
            .field("kind", &self.provider.kind())
            .field("model", &self.provider.model())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ProviderSpec {
    /// A provider with default settings (30 s timeout, 10 s first token, 15 s stall).
    #[must_use]
    pub fn new(name: &str, provider: Arc<dyn Provider>) -> Self {
        Self {
            name: name.to_owned(),
            provider,
            timeout: Duration::from_secs(30),
            probe_timeout: None,
            first_token_timeout: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(15),
            max_attempts: None,
            price: None,
            max_output_tokens: None,
            supports_prefill: false,
            reasoning: None,
            models: None,
        }
    }

    /// Builder: how to build this provider for another model (a wildcard template).
    #[must_use]
    pub fn models(mut self, factory: ModelFactory) -> Self {
        self.models = Some(factory);
        self
    }

    /// Builder: per-attempt timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Builder: a half-open probe's timeout (used when shorter than the timeout).
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = Some(timeout);
        self
    }

    /// The longest a half-open probe may take: the timeout, or the probe timeout when
    /// shorter.
    #[must_use]
    pub fn probe_limit(&self) -> Duration {
        self.probe_timeout
            .map_or(self.timeout, |p| p.min(self.timeout))
    }

    /// Builder: max attempts for this provider.
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }

    /// Builder: first-token and stall timeouts for streams.
    #[must_use]
    pub fn stream_timeouts(mut self, first_token: Duration, stall: Duration) -> Self {
        self.first_token_timeout = first_token;
        self.stall_timeout = stall;
        self
    }

    /// Builder: the upstream accepts an assistant prefill (stream rescue by continuation).
    #[must_use]
    pub fn supports_prefill(mut self, yes: bool) -> Self {
        self.supports_prefill = yes;
        self
    }

    /// Builder: whether the model takes reasoning controls (overrides the price table's
    /// flag; see [`ProviderSpec::reasoning`]).
    #[must_use]
    pub fn reasoning(mut self, yes: bool) -> Self {
        self.reasoning = Some(yes);
        self
    }

    /// Builder: price override.
    #[must_use]
    pub fn price(mut self, price: Price) -> Self {
        self.price = Some(price);
        self
    }

    /// Builder: output-limit override.
    #[must_use]
    pub fn max_output_tokens(mut self, max_output_tokens: u32) -> Self {
        self.max_output_tokens = Some(max_output_tokens);
        self
    }
}

/// A provider registered in the gateway.
struct Slot {
    spec: ProviderSpec,
    /// The price in force: override, else the table's exact-id entry, else unknown.
    price: Option<Price>,
    /// The model's output limit: override, else the table's exact-id entry, else unknown.
    max_output_tokens: Option<u32>,
    /// The model takes reasoning controls: override, else the table's flag, else yes.
    reasoning: bool,
    /// Exponential moving average of successful attempts' latency, in ms.
    latency_ms: Mutex<Option<f64>>,
    /// This process's last health-check verdict ([`health::VERDICT_NONE`] until the first),
    /// so a check report says whether the verdict changed.
    verdict: std::sync::atomic::AtomicU8,
    /// A wildcard route's model that has not answered yet (`wildcard.rs`): the name it is
    /// kept under once it answers. Until then it has no breaker and no slot of its own.
    keep_as: Option<String>,
}

/// Weight of the newest observation in the latency moving average.
const LATENCY_EWMA_ALPHA: f64 = 0.3;

impl Slot {
    /// A slot for `spec`, its price, output limit and reasoning flag from the spec's
    /// overrides, else `table`'s exact-id entry for its model.
    fn new(spec: ProviderSpec, table: &PriceTable) -> Self {
        let entry = table.lookup(spec.provider.model());
        Self {
            price: spec.price.or_else(|| entry.map(|e| e.price)),
            max_output_tokens: spec
                .max_output_tokens
                .or_else(|| entry.and_then(|e| e.max_output_tokens)),
            reasoning: spec
                .reasoning
                .or_else(|| entry.and_then(|e| e.reasoning))
                .unwrap_or(true),
            spec,
            latency_ms: Mutex::new(None),
            verdict: std::sync::atomic::AtomicU8::new(health::VERDICT_NONE),
            keep_as: None,
        }
    }

    /// How this provider carries `field`: its adapter's declaration, except that a model
    /// that does not reason cannot honour `reasoning_effort` whatever its vendor's API
    /// takes (OpenAI answers the field with a 400 for a model that does not reason).
    fn support(&self, field: Field) -> Support {
        if field == Field::ReasoningEffort && !self.reasoning {
            return Support::Unsupported;
        }
        self.spec.provider.support(field)
    }

    fn observe_latency(&self, ms: f64) {
        if let Ok(mut avg) = self.latency_ms.lock() {
            *avg = Some(match *avg {
                Some(prev) => prev + LATENCY_EWMA_ALPHA * (ms - prev),
                None => ms,
            });
        }
    }

    fn latency(&self) -> Option<f64> {
        self.latency_ms.lock().ok().and_then(|l| *l)
    }
}

/// Problems found while building a gateway, all at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid gateway: {}", problems.join("; "))]
pub struct BuildError {
    /// One line per problem.
    pub problems: Vec<String>,
}

/// Assembles a [`Gateway`].
#[derive(Default)]
pub struct GatewayBuilder {
    providers: Vec<ProviderSpec>,
    routes: Vec<Route>,
    state: Option<Arc<dyn SharedState>>,
    clock: Option<Clock>,
    observers: Vec<Arc<dyn Observer>>,
    prices: Option<PriceTable>,
    seed: Option<u64>,
    rescue_buffer_bytes: Option<usize>,
    ledger: Option<Arc<Ledger>>,
}

impl GatewayBuilder {
    /// Register a provider.
    #[must_use]
    pub fn provider(mut self, spec: ProviderSpec) -> Self {
        self.providers.push(spec);
        self
    }

    /// Register a route; the first is the default for [`Gateway::complete`].
    #[must_use]
    pub fn route(mut self, route: Route) -> Self {
        self.routes.push(route);
        self
    }

    /// Use this state store (default: in memory).
    #[must_use]
    pub fn state(mut self, state: Arc<dyn SharedState>) -> Self {
        self.state = Some(state);
        self
    }

    /// Use this clock (default: the system clock).
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Add an observer.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Use this price table (default: the shipped `prices.json`).
    #[must_use]
    pub fn prices(mut self, prices: PriceTable) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Keep the books in `ledger` (default: a fresh one): a gateway rebuilt from a
    /// reloaded config goes on with its predecessor's ([`Gateway::shared_ledger`]).
    #[must_use]
    pub fn ledger(mut self, ledger: Arc<Ledger>) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Seed the backoff jitter (reproducible tests).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Cap what a committed stream keeps of what it delivered (default
    /// [`DEFAULT_RESCUE_BUFFER_BYTES`]). The kept text is what a rescue continues from or
    /// splices against; a stream that passes the cap is served on, but its kept text is
    /// dropped, so a break after that ends it with [`StreamEvent::Failed`] (the trail
    /// marks the providers that could have rescued it as skipped, `rescue_buffer_full`)
    /// and its [`StreamEvent::Done`] carries no text or tool calls. `0` turns stream
    /// rescue off.
    #[must_use]
    pub fn rescue_buffer_bytes(mut self, bytes: usize) -> Self {
        self.rescue_buffer_bytes = Some(bytes);
        self
    }

    /// Check names and references, resolve prices, and build.
    ///
    /// # Errors
    /// Every problem found: duplicate provider or route names, empty routes, unknown
    /// provider references, zero attempts or thresholds.
    pub fn build(self) -> Result<Gateway, BuildError> {
        let problems = self.problems();
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }
        let table = self.prices.unwrap_or_else(|| PriceTable::builtin().clone());
        let slots: Vec<Slot> = (self.providers.into_iter())
            .map(|spec| Slot::new(spec, &table))
            .collect();
        let by_name = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.spec.name.clone(), i))
            .collect();
        let route_order = self.routes.iter().map(|r| r.name.clone()).collect();
        let routes: Vec<Arc<Route>> = self.routes.into_iter().map(Arc::new).collect();
        let wildcards: Vec<Arc<Route>> = (routes.iter())
            .filter(|r| r.wildcard.is_some())
            .cloned()
            .collect();
        let resolved = (wildcards.iter())
            .map(|r| (r.name.clone(), wildcard::Resolved::default()))
            .collect();
        let routes = routes.into_iter().map(|r| (r.name.clone(), r)).collect();
        let ledger = self.ledger.unwrap_or_else(|| Arc::new(Ledger::new()));
        let mut observers = self.observers;
        observers.insert(0, ledger.clone());
        let state = self.state.unwrap_or_else(|| Arc::new(MemoryState::new()));
        state.watch_fleet(fleet_sink(&observers));
        Ok(Gateway {
            inner: Arc::new(Inner {
                slots,
                by_name,
                routes,
                route_order,
                wildcards,
                resolved,
                prices: table,
                state,
                clock: self.clock.unwrap_or_default(),
                observers,
                ledger,
                rng: Mutex::new(
                    self.seed
                        .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed),
                ),
                rescue_buffer_bytes: self
                    .rescue_buffer_bytes
                    .unwrap_or(DEFAULT_RESCUE_BUFFER_BYTES),
                exhausted: crate::observe::ExhaustedBudgets::default(),
            }),
        })
    }

    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut names = std::collections::HashSet::new();
        for p in &self.providers {
            if !names.insert(p.name.as_str()) {
                problems.push(format!("provider {:?} is defined twice", p.name));
            }
            if p.max_attempts == Some(0) {
                problems.push(format!(
                    "provider {:?}: max_attempts must be at least 1",
                    p.name
                ));
            }
            if p.probe_timeout == Some(Duration::ZERO) {
                problems.push(format!(
                    "provider {:?}: probe_timeout must be more than 0",
                    p.name
                ));
            }
            if p.max_output_tokens == Some(0) {
                problems.push(format!(
                    "provider {:?}: max_output_tokens must be at least 1",
                    p.name
                ));
            }
        }
        let mut route_names = std::collections::HashSet::new();
        for r in &self.routes {
            if !route_names.insert(r.name.as_str()) {
                problems.push(format!("route {:?} is defined twice", r.name));
            }
            if r.providers.is_empty() {
                problems.push(format!("route {:?} has no providers", r.name));
            }
            for p in &r.providers {
                if !names.contains(p.as_str()) {
                    problems.push(format!("route {:?}: no provider named {p:?}", r.name));
                }
            }
            if r.default_max_tokens == 0 {
                problems.push(format!(
                    "route {:?}: default_max_tokens must be at least 1",
                    r.name
                ));
            }
            if r.retry.max_attempts == 0 {
                problems.push(format!(
                    "route {:?}: retry.max_attempts must be at least 1",
                    r.name
                ));
            }
            if r.breaker.failure_threshold == 0 {
                problems.push(format!(
                    "route {:?}: breaker.failure_threshold must be at least 1",
                    r.name
                ));
            }
            if let Some(w) = &r.wildcard {
                problems.extend(self.wildcard_problems(r, w));
            }
        }
        if self.routes.is_empty() {
            problems.push("no routes".to_owned());
        }
        problems
    }

    /// What is wrong with wildcard route `r`: its template must build other models and
    /// its allow-list must be usable, and no registered provider may be named like one of
    /// its models' slots (`{template}/…`).
    fn wildcard_problems(&self, r: &Route, w: &crate::route::Wildcard) -> Vec<String> {
        let mut problems = Vec::new();
        let at = |msg: String| format!("route {:?}: {msg}", r.name);
        if w.models.is_empty() {
            problems.push(at("a wildcard route needs an allow-list of models".into()));
        }
        for bad in (w.models.iter()).filter(|m| !crate::route::valid_pattern(m, w.slashes)) {
            problems.push(at(format!(
                "model pattern {bad:?} is not a model id, optionally ending in *"
            )));
        }
        if w.max_models == 0 {
            problems.push(at("max_models must be at least 1".into()));
        }
        let Some(template) = r.providers.first() else {
            return problems;
        };
        match self.providers.iter().find(|p| &p.name == template) {
            Some(p) if p.models.is_none() => problems.push(at(format!(
                "provider {template:?} cannot call other models, so it cannot be a wildcard template"
            ))),
            _ => {}
        }
        if template.contains('/') {
            problems.push(at(format!(
                "a wildcard template's name may not contain '/' ({template:?})"
            )));
        }
        let prefix = format!("{template}/");
        for p in self
            .providers
            .iter()
            .filter(|p| p.name.starts_with(&prefix))
        {
            problems.push(at(format!(
                "provider {:?} would share names with the models of template {template:?}",
                p.name
            )));
        }
        problems
    }
}

struct Inner {
    slots: Vec<Slot>,
    by_name: HashMap<String, usize>,
    /// Hashed with FxHash, not SipHash: looked up by the client's model name on every
    /// request, but built once from the configuration and never added to, so a client
    /// chooses no key the table holds and has nothing to flood (a lookup walks at most
    /// the configured routes).
    routes: HashMap<String, Arc<Route>, rustc_hash::FxBuildHasher>,
    /// Route names in registration order; the first is the default.
    route_order: Vec<String>,
    /// The wildcard routes, in registration order: tried, by prefix, only for a name
    /// that is no route's.
    wildcards: Vec<Arc<Route>>,
    /// Per wildcard route (by name): the template slots resolved so far.
    resolved: HashMap<String, wildcard::Resolved>,
    /// Prices of the models wildcard routes resolve.
    prices: PriceTable,
    state: Arc<dyn SharedState>,
    clock: Clock,
    /// The ledger first, then the caller's.
    observers: Vec<Arc<dyn Observer>>,
    ledger: Arc<Ledger>,
    /// Seeds each request's backoff jitter.
    rng: Mutex<fastrand::Rng>,
    /// What a committed stream may keep of what it delivered before it stops being
    /// rescuable (`stream/kept.rs`).
    rescue_buffer_bytes: usize,
    /// Budgets that refused and have not admitted since (each exhaustion told once).
    exhausted: crate::observe::ExhaustedBudgets,
}

/// The gateway. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("providers", &self.inner.slots.len())
            .field("routes", &self.inner.route_order)
            .finish_non_exhaustive()
    }
}

/// One provider's health, as of now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProviderHealth {
    /// Configured name.
    pub name: String,
    /// Adapter kind.
    pub kind: String,
    /// Model id.
    pub model: String,
    /// `closed`, `open`, `half_open`, or `auth_failed` (open because of credentials).
    pub state: String,
    /// Consecutive failed turns.
    pub consecutive_failures: u32,
    /// Open until this wall time.
    pub open_until_ms: Option<UnixMillis>,
    /// The end of the most recent opening, even if since closed (0 = never).
    pub last_open_until: u64,
    /// Cooling for a Retry-After until this wall time.
    pub cooling_until_ms: Option<UnixMillis>,
    /// What opened the circuit.
    pub opened_by: Option<ErrorKind>,
    /// The most recent failure kind.
    pub last_error: Option<ErrorKind>,
    /// Moving average of observed latency, ms.
    pub latency_ms: Option<f64>,
    /// A half-open probe holds the lease.
    pub probe_in_flight: bool,
    /// The price in force is known.
    pub priced: bool,
}

impl Gateway {
    /// Start building.
    #[must_use]
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// Send `req` through route `route`.
    ///
    /// # Errors
    /// [`GatewayError`]: unknown route, budget refused, deadline passed, a non-failover
    /// error returned as itself, or every candidate failed (each error kept in order).
    pub async fn chat(&self, route: &str, req: &ChatRequest) -> Result<ChatResponse, GatewayError> {
        self.chat_with(route, req, &CallOptions::default()).await
    }

    /// [`Gateway::chat`] with per-call options (the caller's budgets).
    ///
    /// # Errors
    /// As [`Gateway::chat`].
    pub async fn chat_with(
        &self,
        route: &str,
        req: &ChatRequest,
        opts: &CallOptions,
    ) -> Result<ChatResponse, GatewayError> {
        let requested = route;
        let route = self.route_arc(requested)?;
        let result = if let Some(wrong) = wrong_api(route, Api::Chat) {
            Err(wrong)
        } else if req.messages.is_empty() {
            Err(GatewayError::InvalidRequest(
                "messages must not be empty".to_owned(),
            ))
        } else {
            match self.resolve(route, requested) {
                Ok(resolved) => {
                    run::Run::new(self, route, resolved, opts)
                        .execute(req)
                        .await
                }
                Err(e) => Err(e),
            }
        };
        for o in &self.inner.observers {
            o.on_complete(&route.name, result.as_ref());
        }
        result
    }

    /// Embed `req` through route `route` (an embeddings route), with failover, retries,
    /// breakers, the deadline and budgets exactly as for chat.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use switchyard::provider::scripted::{ScriptedProvider, Step};
    /// use switchyard::{Api, EmbeddingRequest, ErrorKind, Gateway, ProviderSpec, Route};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let down = Arc::new(ScriptedProvider::new("a").then(Step::fail(ErrorKind::Server)));
    /// let up = Arc::new(ScriptedProvider::new("b"));
    /// let gateway = Gateway::builder()
    ///     .provider(ProviderSpec::new("openai", down).max_attempts(1))
    ///     .provider(ProviderSpec::new("gemini", up))
    ///     .route(Route::new("embed", &["openai", "gemini"]).api(Api::Embeddings))
    ///     .build()?;
    /// let req = EmbeddingRequest::texts(&["hello", "world"]);
    /// let resp = gateway.embed("embed", &req).await?;
    /// assert_eq!(resp.vectors.len(), 2);
    /// assert_eq!(resp.provider, "gemini");
    /// assert!(resp.failed_over);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`Gateway::chat`]; [`GatewayError::InvalidRequest`] for a route that serves chat,
    /// no inputs, more than [`MAX_INPUTS`], or dimensions of 0 or above [`MAX_DIMENSIONS`].
    pub async fn embed(
        &self,
        route: &str,
        req: &EmbeddingRequest,
    ) -> Result<EmbeddingResponse, GatewayError> {
        self.embed_with(route, req, &CallOptions::default()).await
    }

    /// [`Gateway::embed`] with per-call options (the caller's budgets).
    ///
    /// # Errors
    /// As [`Gateway::embed`].
    pub async fn embed_with(
        &self,
        route: &str,
        req: &EmbeddingRequest,
        opts: &CallOptions,
    ) -> Result<EmbeddingResponse, GatewayError> {
        let requested = route;
        let route = self.route_arc(requested)?;
        let result = match wrong_api(route, Api::Embeddings).or_else(|| unusable(req)) {
            Some(err) => Err(err),
            None => match self.resolve(route, requested) {
                Ok(resolved) => run::Run::new(self, route, resolved, opts).embed(req).await,
                Err(e) => Err(e),
            },
        };
        for o in &self.inner.observers {
            o.on_embedded(&route.name, result.as_ref());
        }
        result
    }

    /// One prompt through the default (first) route.
    ///
    /// # Errors
    /// As [`Gateway::chat`].
    pub async fn complete(&self, prompt: &str) -> Result<ChatResponse, GatewayError> {
        let route = self.default_route().to_owned();
        self.chat(&route, &ChatRequest::from_prompt(prompt)).await
    }

    /// The default route's name.
    #[must_use]
    pub fn default_route(&self) -> &str {
        self.inner.route_order.first().map_or("", String::as_str)
    }

    /// Route names in registration order.
    #[must_use]
    pub fn routes(&self) -> Vec<&Route> {
        self.inner
            .route_order
            .iter()
            .filter_map(|n| self.inner.routes.get(n).map(AsRef::as_ref))
            .collect()
    }

    /// The route called `name`, or the wildcard route whose prefix `name` starts with
    /// (`openai/gpt-4.1-mini` → `openai/*`) when it allows the model after the prefix.
    ///
    /// # Errors
    /// [`GatewayError::UnknownRoute`] listing the configured routes;
    /// [`GatewayError::ModelRefused`] for a model a wildcard route does not call.
    pub fn route(&self, name: &str) -> Result<&Route, GatewayError> {
        self.route_arc(name).map(AsRef::as_ref)
    }

    fn route_arc(&self, name: &str) -> Result<&Arc<Route>, GatewayError> {
        match self.inner.routes.get(name) {
            Some(route) if route.wildcard.is_none() => Ok(route),
            _ => self.wildcard_route(name),
        }
    }

    /// What a committed stream may keep of what it delivered before it stops being
    /// rescuable ([`GatewayBuilder::rescue_buffer_bytes`]).
    #[must_use]
    pub fn rescue_buffer_bytes(&self) -> usize {
        self.inner.rescue_buffer_bytes
    }

    /// Registered providers, in registration order.
    #[must_use]
    pub fn providers(&self) -> Vec<&ProviderSpec> {
        self.inner.slots.iter().map(|s| &s.spec).collect()
    }

    /// The price in force for provider `name` (`None`: unknown or unpriced).
    #[must_use]
    pub fn price_of(&self, name: &str) -> Option<Price> {
        self.with_slot(name, |s| s.price).flatten()
    }

    /// The most output tokens a call to provider `name` may produce when the request sets
    /// no `max_tokens`: the adapter's default, else the model's output limit (`None`:
    /// unknown, so a budgeted request gets its route's `default_max_tokens`).
    #[must_use]
    pub fn max_output_tokens_of(&self, name: &str) -> Option<u32> {
        self.with_slot(name, |slot| {
            (slot.spec.provider.default_max_tokens()).or(slot.max_output_tokens)
        })
        .flatten()
    }

    /// How provider `name` carries `field`, as the gateway decides skips and drops: its
    /// adapter's declaration, with `reasoning_effort` unsupported for a model that does
    /// not reason (`None`: no such provider).
    #[must_use]
    pub fn support_of(&self, name: &str, field: Field) -> Option<Support> {
        self.with_slot(name, |s| s.support(field))
    }

    /// The API whose native bodies provider `name` sends as written (see
    /// [`Provider::native_kind`]); the outer `None`: no such provider.
    #[must_use]
    pub fn native_kind_of(&self, name: &str) -> Option<Option<&'static str>> {
        self.with_slot(name, |s| s.spec.provider.native_kind())
    }

    /// Whether provider `name`'s model takes reasoning controls: the spec's override, else
    /// the price table's flag, else yes (`None`: no such provider).
    #[must_use]
    pub fn reasoning_of(&self, name: &str) -> Option<bool> {
        self.with_slot(name, |s| s.reasoning)
    }

    /// The built-in ledger.
    #[must_use]
    pub fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// The built-in ledger, to hand to a successor ([`GatewayBuilder::ledger`]).
    #[must_use]
    pub fn shared_ledger(&self) -> Arc<Ledger> {
        Arc::clone(&self.inner.ledger)
    }

    /// The clock the gateway reads.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The state store.
    #[must_use]
    pub fn state(&self) -> &Arc<dyn SharedState> {
        &self.inner.state
    }

    /// The books of a route's budget, if it has one.
    pub async fn budget(&self, route: &str) -> Option<crate::cost::BudgetState> {
        let limit: Money = self.inner.routes.get(route)?.budget?;
        Some(self.inner.state.budget(&budget_scope(route), limit).await)
    }

    /// Every provider's health as of now: the registered ones, then each model a wildcard
    /// route has called (`{template}/{model}`), by name.
    pub async fn health(&self) -> Vec<ProviderHealth> {
        let now = self.now();
        let mut resolved: Vec<Arc<Slot>> = (self.inner.resolved.values())
            .flat_map(wildcard::Resolved::all)
            .collect();
        resolved.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        let slots = self
            .inner
            .slots
            .iter()
            .chain(resolved.iter().map(AsRef::as_ref));
        let mut out = Vec::with_capacity(self.inner.slots.len() + resolved.len());
        for slot in slots {
            let snap = self
                .inner
                .state
                .breaker(&slot.spec.name)
                .await
                .snapshot(now);
            let state = match (snap.state, snap.opened_by) {
                (CircuitState::Closed, _) => "closed",
                (_, Some(ErrorKind::Auth)) => "auth_failed",
                (s, _) => s.label(),
            };
            out.push(ProviderHealth {
                name: slot.spec.name.clone(),
                kind: slot.spec.provider.kind().to_owned(),
                model: slot.spec.provider.model().to_owned(),
                state: state.to_owned(),
                consecutive_failures: snap.consecutive_failures,
                open_until_ms: snap.open_until,
                last_open_until: snap.last_open_until,
                cooling_until_ms: snap.cooling_until_ms,
                opened_by: snap.opened_by,
                last_error: snap.last_error,
                latency_ms: slot.latency(),
                probe_in_flight: snap.probe_in_flight,
                priced: slot.price.is_some(),
            });
        }
        out
    }

    /// Health as a name → state map (handy in logs and examples).
    pub async fn health_states(&self) -> BTreeMap<String, String> {
        self.health()
            .await
            .into_iter()
            .map(|h| (h.name, h.state))
            .collect()
    }

    fn slot(&self, name: &str) -> Option<&Slot> {
        self.inner.by_name.get(name).map(|&i| &self.inner.slots[i])
    }

    /// `f` of the slot called `name`: a registered provider, else a model a wildcard
    /// route resolved.
    fn with_slot<R>(&self, name: &str, f: impl FnOnce(&Slot) -> R) -> Option<R> {
        if let Some(slot) = self.slot(name) {
            return Some(f(slot));
        }
        let slot = (self.inner.resolved.values()).find_map(|r| r.get(name))?;
        Some(f(&slot))
    }

    /// The breaker settings of the first route that uses `provider` (for health checks).
    fn breaker_config_of(&self, provider: &str) -> BreakerConfig {
        self.routes()
            .into_iter()
            .find(|r| r.providers.iter().any(|p| p == provider))
            .map(|r| r.breaker)
            .unwrap_or_default()
    }

    fn now(&self) -> UnixMillis {
        self.inner.clock.unix_ms()
    }
}

/// A budget a request spends against, besides its route's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The scope's key in the state store (e.g. `key:backend-team:2026-11`).
    pub scope: String,
    /// The most that may be spent in that scope.
    pub limit: Money,
}

/// Per-call options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// Budgets to reserve against in addition to the route's (all must have room).
    pub budgets: Vec<Budget>,
    /// What every upstream call carries: the caller's request id and trace context
    /// (`traceparent` per attempt; see [`crate::propagate`]).
    pub upstream: crate::propagate::Upstream,
}

/// The error for a request of `api` to a route that serves another API.
pub(crate) fn wrong_api(route: &Route, api: Api) -> Option<GatewayError> {
    (route.api != api).then(|| {
        GatewayError::InvalidRequest(format!(
            "route {:?} serves {}, not {}",
            route.name,
            route.api.label(),
            api.label()
        ))
    })
}

/// Why an embeddings request cannot be sent, if it cannot.
fn unusable(req: &EmbeddingRequest) -> Option<GatewayError> {
    let problem = if req.inputs.is_empty() {
        "input must not be empty".to_owned()
    } else if req.inputs.len() > MAX_INPUTS {
        format!(
            "input has {} items; at most {MAX_INPUTS} are allowed",
            req.inputs.len()
        )
    } else if req.dimensions.is_some_and(|d| d == 0 || d > MAX_DIMENSIONS) {
        format!("dimensions must be between 1 and {MAX_DIMENSIONS}")
    } else {
        return None;
    };
    Some(GatewayError::InvalidRequest(problem))
}

/// What a fleet store tells of other replicas' circuit changes: each observer's
/// `on_fleet_transition`.
fn fleet_sink(observers: &[Arc<dyn Observer>]) -> crate::state::FleetSink {
    let observers = observers.to_vec();
    Arc::new(move |provider: &str, t: &crate::breaker::Transition| {
        for o in &observers {
            o.on_fleet_transition(provider, t);
        }
    })
}

/// The budget scope of a route.
#[must_use]
pub fn budget_scope(route: &str) -> String {
    format!("route:{route}")
}
