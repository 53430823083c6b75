//! The route table: which handler answers which path, and the layers around them. No
//! logic lives here; the state the handlers share is `crate::http::state`'s.

use axum::extract::{Request, State};
use axum::http::{Method, Uri};
use axum::routing::{get, post};
use axum::Router;

use crate::http::dialects::responses::{self, Responses};
use crate::http::dialects::{chat, embeddings, flow, messages};
use crate::http::edge::{Answer, Shortcut};
use crate::http::error::ApiError;
use crate::http::request_id::request_id;
use crate::http::state::{AppState, Live};
use crate::http::{admin, dashboard, edge, guard, manage, models};

/// The HTTP surface over a fixed state (`POST /admin/reload` has nothing to reload).
pub fn app(state: AppState) -> Router {
    app_live(Live::new(state))
}

/// The HTTP surface over a live state: each request takes the state in force when it
/// starts (`crate::http::state::Live`); `POST /admin/reload` swaps in a new one.
pub fn app_live(state: Live) -> Router {
    // The guard (Host, Origin, content type) sees every request first, the fallback's too.
    // Every other response gets an `x-request-id` here; the chat handler sets its own (the
    // id its log line and dashboard entry carry) and stays off this layer's per-request cost.
    let rest = Router::new()
        .route("/v1/models", get(models::list))
        .route("/v1/models/{*id}", get(models::retrieve))
        .route("/healthz", get(admin::healthz))
        .route("/readyz", get(admin::readyz))
        .route("/admin/health", get(admin::health))
        .route("/admin/reload", post(admin::reload))
        .route("/metrics", get(admin::metrics))
        .route("/", get(dashboard::page))
        .route("/dashboard/{asset}", get(dashboard::asset))
        .route("/admin/overview", get(dashboard::overview))
        .route("/admin/transitions", get(dashboard::transitions))
        .route("/admin/requests", get(dashboard::requests))
        .route("/admin/requests/{id}", get(dashboard::request))
        .route(
            "/admin/keys",
            get(manage::keys::list).post(manage::keys::create),
        )
        .route(
            "/admin/keys/{id}",
            get(manage::keys::get)
                .patch(manage::keys::patch)
                .delete(manage::keys::revoke),
        )
        .route("/admin/keys/{id}/rotate", post(manage::keys::rotate))
        .route(
            "/admin/teams",
            get(manage::teams::list).post(manage::teams::create),
        )
        .route(
            "/admin/teams/{id}",
            get(manage::teams::get)
                .patch(manage::teams::patch)
                .delete(manage::teams::delete),
        )
        .route("/admin/spend", get(manage::spend::report))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(request_id_on_response));
    Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/embeddings", post(embeddings::create))
        .route("/v1/messages", post(messages::create))
        .route(
            "/v1/messages/count_tokens",
            post(messages::count::count_tokens),
        )
        .route("/v1/responses", post(flow::serve::<Responses>))
        .route(
            "/v1/responses/{id}",
            get(responses::retrieve).delete(responses::delete),
        )
        .route(
            "/v1/responses/{id}/input_items",
            get(responses::input_items),
        )
        .merge(rest)
        // after every route: a known path asked with another method gets OpenAI's JSON
        .method_not_allowed_fallback(edge::method_not_allowed)
        // last, so that it guards every route and both fallbacks
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::check,
        ))
        .with_state(state)
}

/// The model APIs' POSTs served without the router: a request the router would send to
/// one of [`app_live`]'s four model handlers, past the guard with nothing to add (no
/// listed `Origin`), goes straight to that handler. Everything else — another path or
/// method, a request the guard refuses, a listed origin's (CORS headers) — is left to the
/// router, which answers it as before. What this skips per request is the router's own
/// work around the same handler: the route match and its extensions, the guard's and the
/// handlers' two reads of the live state, the middleware's boxed futures and service
/// clones (BENCHMARKS.md, "Stop 34"). The handlers, and so the answers, are the same.
#[derive(Clone)]
pub struct FastPath {
    live: Live,
}

/// Which model handler a fast-path request goes to.
#[derive(Clone, Copy)]
enum Model {
    Chat,
    Messages,
    Responses,
    Embeddings,
}

impl FastPath {
    /// The fast path over the same live state as the router's.
    #[must_use]
    pub fn new(live: Live) -> Self {
        Self { live }
    }
}

impl Shortcut for FastPath {
    /// `request`'s answer when it takes the fast path; the request back when the router
    /// must answer it.
    fn answer(&self, request: Request) -> Result<Answer, Request> {
        if request.method() != Method::POST {
            return Err(request);
        }
        let model = match request.uri().path() {
            "/v1/chat/completions" => Model::Chat,
            "/v1/messages" => Model::Messages,
            "/v1/responses" => Model::Responses,
            "/v1/embeddings" => Model::Embeddings,
            _ => return Err(request),
        };
        let state = self.live.current();
        if !matches!(guard::admit(&state, &request), Ok(None)) {
            return Err(request);
        }
        let state = State(state);
        Ok(match model {
            Model::Chat => flow::serve::<chat::Chat>(state, request),
            Model::Messages => flow::serve::<messages::Messages>(state, request),
            Model::Responses => flow::serve::<Responses>(state, request),
            Model::Embeddings => Box::pin(embeddings::create(state, request)),
        })
    }
}

/// The client's `x-request-id` (when sane) or a fresh one, on a response that has none.
async fn request_id_on_response(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let id = request_id(request.headers());
    let mut response = next.run(request).await;
    if let Ok(value) = axum::http::HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .entry("x-request-id")
            .or_insert(value);
    }
    response
}

/// Any path we do not serve: OpenAI-shaped 404.
async fn not_found(uri: Uri) -> ApiError {
    ApiError::no_such_path(uri.path())
}
