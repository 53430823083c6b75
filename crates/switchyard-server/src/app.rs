//! The route table and the state every handler shares. No logic lives here.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use switchyard::Gateway;
use tokio_util::sync::CancellationToken;

use crate::access::keys::KeyStore;
use crate::guard::{self, AllowedOrigins};
use crate::routes;
use crate::telemetry::insight::Insight;
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;

/// Default largest request body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

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
    /// False while starting up or shutting down (`/readyz`).
    pub ready: AtomicBool,
    /// Browser origins other than the gateway's own that may call it (`crate::guard`).
    pub allowed_origins: AllowedOrigins,
    /// Cancelled when shutdown's grace period ends: every stream still open ends with an
    /// error event (`routes::chat`'s SSE writer), and is logged.
    pub grace_over: CancellationToken,
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The HTTP surface.
pub fn app(state: AppState) -> Router {
    // The guard (Host, Origin, content type) sees every request first, the fallback's too.
    // Every other response gets an `x-request-id` here; the chat handler sets its own (the
    // id its log line and dashboard entry carry) and stays off this layer's per-request cost.
    let rest = Router::new()
        .route("/v1/models", get(routes::models::list))
        .route("/healthz", get(routes::admin::healthz))
        .route("/readyz", get(routes::admin::readyz))
        .route("/admin/health", get(routes::admin::health))
        .route("/metrics", get(routes::admin::metrics))
        .route("/", get(routes::dashboard::page))
        .route("/dashboard/{asset}", get(routes::dashboard::asset))
        .route("/admin/overview", get(routes::dashboard::overview))
        .route("/admin/transitions", get(routes::dashboard::transitions))
        .route("/admin/requests", get(routes::dashboard::requests))
        .route("/admin/requests/{id}", get(routes::dashboard::request))
        .fallback(routes::not_found)
        .layer(axum::middleware::from_fn(request_id_on_response));
    Router::new()
        .route("/v1/chat/completions", post(routes::chat::completions))
        .merge(rest)
        // after every route: a known path asked with another method gets OpenAI's JSON
        .method_not_allowed_fallback(crate::edge::method_not_allowed)
        // last, so that it guards every route and both fallbacks
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::check,
        ))
        .with_state(state)
}

/// The client's `x-request-id` (when sane) or a fresh one, on a response that has none.
async fn request_id_on_response(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let id = routes::chat::request_id(request.headers());
    let mut response = next.run(request).await;
    if let Ok(value) = axum::http::HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .entry("x-request-id")
            .or_insert(value);
    }
    response
}
