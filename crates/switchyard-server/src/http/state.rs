//! The state every handler shares: small, cheap to clone, below every route.
//!
//! Handlers, the guard and the dialects import [`AppState`] from here; the route table
//! (`crate::http::app`) imports them, never the other way round.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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
    /// False while starting up or shutting down (`/readyz`).
    pub ready: AtomicBool,
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
    /// PostgreSQL (`[database]`): the admin API's keys, teams and spend; `None` without
    /// one (those endpoints then say a database is needed).
    pub database: Option<Arc<crate::database::Database>>,
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
            ready: AtomicBool::new(true),
            allowed_origins: AllowedOrigins::default(),
            grace_over: CancellationToken::new(),
            stored_responses: StoredResponses::default(),
            threads: ThreadLimits::default(),
            traces: None,
            access: None,
            database: None,
        }
    }
}
