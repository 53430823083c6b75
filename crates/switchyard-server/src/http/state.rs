//! The state every handler shares: small, cheap to clone, below every route.
//!
//! Handlers, the guard and the dialects import [`AppState`] from here; the route table
//! (`crate::http::app`) imports them, never the other way round.
//!
//! The router holds a [`Live`]: the current [`Shared`], replaced whole when the config is
//! reloaded (`crate::reload`). Each extraction of `State<AppState>` takes the current one
//! (one reference count), so a request keeps the gateway and keys it started with until it
//! is over, streams included, whatever is swapped in meanwhile.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError, RwLock};

use axum::extract::FromRef;

use switchyard::Gateway;
use tokio_util::sync::CancellationToken;

use crate::access::keys::KeyStore;
use crate::http::origins::AllowedOrigins;
use crate::telemetry::access::AccessLog;
use crate::telemetry::insight::Insight;
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;
use crate::telemetry::otlp::Traces;

pub use crate::config::DEFAULT_MAX_BODY_BYTES;

pub use crate::config::StoredResponses;
pub use crate::config::ThreadLimits;

/// What handlers share: small, cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<Shared>);

/// The shared parts.
pub struct Shared {
    /// The gateway.
    pub gateway: Gateway,
    /// Client keys (empty: open, loopback only).
    pub keys: KeyStore,
    /// Prometheus metrics (also a gateway observer).
    pub metrics: Arc<Metrics>,
    /// The request log.
    pub log: RequestLog,
    /// Recent history for the dashboard (also a gateway observer and the log's tap).
    pub insight: Arc<Insight>,
    /// Largest accepted body.
    pub max_body_bytes: usize,
    /// What one request may expand to in memory (`crate::http::dialects::expansion`).
    pub expansion: crate::config::ExpansionLimits,
    /// False while starting up or shutting down (`/readyz`); shared by every state a
    /// reload swaps in.
    pub ready: Arc<AtomicBool>,
    /// Browser origins other than the gateway's own that may call it (`crate::http::guard`).
    pub allowed_origins: AllowedOrigins,
    /// Cancelled when shutdown's grace period ends: every stream still open ends with an
    /// error event (`crate::http::dialects::sse`), and is logged.
    pub grace_over: CancellationToken,
    /// How long stored Responses API answers live and how large one may be.
    pub stored_responses: StoredResponses,
    /// How long Anthropic message threads live and how large one may grow.
    pub threads: ThreadLimits,
    /// Trace export (`[telemetry] otlp_endpoint`); `None`: no spans are built, a client's
    /// `traceparent` is only forwarded upstream.
    pub traces: Option<Arc<Traces>>,
    /// The stdout access log (`[telemetry] access_log`), for its dropped-line count.
    pub access: Option<Arc<AccessLog>>,
    /// The routes' response cache (`crate::cache`).
    pub cache: crate::cache::Cache,
    /// PostgreSQL (`[database]`): the admin API's keys, teams and spend; `None` without
    /// one (those endpoints then say a database is needed).
    pub database: Option<Arc<crate::database::Database>>,
}

/// What `POST /admin/reload` calls: re-read the config and swap it in (`crate::reload`'s
/// `Reloader`; `trigger` names who asked, for the log).
pub trait Reload: Send + Sync {
    /// What changed, as the endpoint's 200 body.
    ///
    /// # Errors
    /// The file was refused and nothing changed: every problem.
    fn reload(&self, trigger: &str) -> Result<serde_json::Value, ReloadRefused>;
}

/// A refused reload, as `POST /admin/reload` answers it (422).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadRefused {
    /// One line saying why.
    pub message: String,
    /// The file.
    pub source: String,
    /// Every problem, as `check` words it.
    pub problems: Vec<String>,
}

/// What the router holds: the current [`Shared`], swapped whole by a reload, and the
/// reloader `POST /admin/reload` calls (`None`: nothing to reload from, e.g. in-process
/// tests or the embedded default).
#[derive(Clone)]
pub struct Live {
    current: Arc<RwLock<Arc<Shared>>>,
    reloader: Option<Arc<dyn Reload>>,
}

impl Live {
    /// A live state starting at `state`, without a reloader.
    #[must_use]
    pub fn new(state: AppState) -> Self {
        Self {
            current: Arc::new(RwLock::new(state.0)),
            reloader: None,
        }
    }

    /// Builder: `POST /admin/reload` calls `reloader`.
    #[must_use]
    pub fn with_reloader(mut self, reloader: Arc<dyn Reload>) -> Self {
        self.reloader = Some(reloader);
        self
    }

    /// The state in force now (a reference count; the lock is held only to copy it).
    #[must_use]
    pub fn current(&self) -> AppState {
        AppState(Arc::clone(
            &self.current.read().unwrap_or_else(PoisonError::into_inner),
        ))
    }

    /// Put `state` in force for every request that starts from now on; returns the one it
    /// replaced (requests that hold it finish on it).
    pub fn swap(&self, state: AppState) -> AppState {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        AppState(std::mem::replace(&mut *current, state.0))
    }

    /// The reloader, when there is one.
    #[must_use]
    pub fn reloader(&self) -> Option<&Arc<dyn Reload>> {
        self.reloader.as_ref()
    }
}

impl FromRef<Live> for AppState {
    fn from_ref(live: &Live) -> AppState {
        live.current()
    }
}

impl Shared {
    /// This state with another gateway and keys and the settings a reload may change
    /// (`crate::reload`); everything else (metrics, the request log, insight, readiness,
    /// the grace signal, traces) is the same, shared.
    #[must_use]
    pub fn reloaded(&self, with: Reloadable) -> Self {
        Self {
            gateway: with.gateway,
            keys: with.keys,
            metrics: Arc::clone(&self.metrics),
            log: self.log.clone(),
            insight: Arc::clone(&self.insight),
            max_body_bytes: with.max_body_bytes,
            expansion: with.expansion,
            ready: Arc::clone(&self.ready),
            allowed_origins: with.allowed_origins,
            grace_over: self.grace_over.clone(),
            stored_responses: with.stored_responses,
            threads: with.threads,
            traces: self.traces.clone(),
            access: self.access.clone(),
            // the routes' policies are the new config's; the entries stay (`Cache::carried_from`)
            cache: with.cache.carried_from(&self.cache),
            database: self.database.clone(),
        }
    }
}

/// What a reload replaces in [`Shared`].
pub struct Reloadable {
    /// The new gateway (on the same state store, observers and clock).
    pub gateway: Gateway,
    /// The new client keys.
    pub keys: KeyStore,
    /// `[server] max_body_bytes`.
    pub max_body_bytes: usize,
    /// `[server] max_request_items`, `max_request_depth`, `max_expanded_bytes`.
    pub expansion: crate::config::ExpansionLimits,
    /// `[server] allowed_origins`.
    pub allowed_origins: AllowedOrigins,
    /// `[responses]`.
    pub stored_responses: StoredResponses,
    /// `[threads]`.
    pub threads: ThreadLimits,
    /// The routes' `cache` and `[cache]`.
    pub cache: crate::cache::Cache,
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

#[cfg(test)]
impl Shared {
    /// In-process tests' state: `gateway` with the given keys and metrics, ready, no request
    /// log file, a fresh insight ring, default body limit and origins. Tests change the
    /// fields they care about before wrapping it in an [`AppState`], so a new field is
    /// added here once, not in every test's constructor.
    pub(crate) fn for_tests(gateway: Gateway, keys: KeyStore, metrics: Arc<Metrics>) -> Self {
        Self {
            gateway,
            keys,
            metrics,
            log: RequestLog::disabled(),
            insight: Arc::new(Insight::new(switchyard::clock::Clock::system())),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            expansion: crate::config::ExpansionLimits::default(),
            ready: Arc::new(AtomicBool::new(true)),
            allowed_origins: AllowedOrigins::default(),
            grace_over: CancellationToken::new(),
            stored_responses: StoredResponses::default(),
            threads: ThreadLimits::default(),
            traces: None,
            access: None,
            cache: crate::cache::Cache::disabled(),
            database: None,
        }
    }
}
