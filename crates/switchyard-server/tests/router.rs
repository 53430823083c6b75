//! The server as a library: a router built from a config, exactly as `serve` builds it
//! (`cli::serve::build_state`), driven in process with `oneshot` — no child process, no
//! socket. Suites that test the process itself (signals, the listening line, the edge's
//! sockets, stderr) spawn the binary instead (`tests/common/`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard_server::cli::serve::build_state;
use switchyard_server::config;
use switchyard_server::http::{app, AppState};
use switchyard_server::shutdown::Tasks;
use tower::ServiceExt as _;

/// One simulated provider that always answers, one route to it; keyless (loopback only).
const CONFIG: &str = r#"
[[providers]]
name = "sim"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [1, 3]
cost_per_1k_tokens = 0.002
seed = 1
latency_scale = 1.0

[[routes]]
name = "main"
providers = ["sim"]
"#;

async fn state() -> AppState {
    let config = config::parse(CONFIG, "router test").unwrap();
    build_state(&config, Clock::system(), &Tasks::new())
        .await
        .unwrap()
        .0
}

/// `method path` with a loopback `Host` (keyless mode answers nothing else).
async fn send(
    router: &Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json");
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let response = router
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn a_config_built_router_answers_a_completion_in_process() {
    let router = app(state().await);
    let body = json!({"model": "main", "messages": [{"role": "user", "content": "hi"}]});
    let (status, reply) = send(&router, "POST", "/v1/chat/completions", Some(body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["object"], "chat.completion", "{reply}");
    assert_eq!(reply["switchyard"]["provider"], "sim", "{reply}");
    let (status, models) = send(&router, "GET", "/v1/models", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(models["data"][0]["id"], "main", "{models}");
}

#[tokio::test]
async fn the_built_state_is_ready_only_when_its_owner_says_so() {
    let state = state().await;
    let router = app(state.clone());
    let (status, body) = send(&router, "GET", "/readyz", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    state.ready.store(true, Ordering::SeqCst);
    let (status, body) = send(&router, "GET", "/readyz", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
