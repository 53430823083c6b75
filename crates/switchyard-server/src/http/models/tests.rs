//! `/v1/models` over HTTP (a router of the two handlers, as `http/app.rs` mounts them):
//! Anthropic's shapes, pages and errors when the request carries `anthropic-version`,
//! OpenAI's otherwise, and a key's view of both.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use axum::routing;
use axum::Router;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use switchyard::provider::scripted::ScriptedProvider;
use switchyard::{Api, Gateway, ProviderSpec, Route};
use tower::ServiceExt as _;

use crate::access::keys::{hash_token, KeyStore};
use crate::config::KeyToml;
use crate::http::{AppState, Shared};
use crate::telemetry::metrics::Metrics;

/// Chat routes `r0`..`r4` and an embeddings route `vectors`; a key `team` that may use
/// `r1`, `r3` and `vectors`, when `keyed`.
fn state(keyed: bool) -> AppState {
    let mut builder =
        Gateway::builder().provider(ProviderSpec::new("p", Arc::new(ScriptedProvider::new("m"))));
    for i in 0..5 {
        builder = builder.route(Route::new(&format!("r{i}"), &["p"]));
    }
    let gateway = builder
        .route(Route::new("vectors", &["p"]).api(Api::Embeddings))
        .build()
        .unwrap();
    let keys = [KeyToml {
        name: "team".into(),
        sha256: hash_token("sy-team"),
        routes: vec!["r1".into(), "r3".into(), "vectors".into()],
        ..KeyToml::default()
    }];
    let keys = KeyStore::new(if keyed { &keys } else { &[] });
    AppState(Arc::new(Shared::for_tests(
        gateway,
        keys,
        Arc::new(Metrics::new()),
    )))
}

async fn get(state: &AppState, path: &str, headers: &[(&str, &str)]) -> (StatusCode, Value) {
    let mut req = Request::get(path).header("host", "127.0.0.1:4000");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let router = Router::new()
        .route("/v1/models", routing::get(super::list))
        .route("/v1/models/{*id}", routing::get(super::retrieve))
        .with_state(state.clone());
    let resp: Response = router
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

const ANTHROPIC: (&str, &str) = ("anthropic-version", "2023-06-01");

fn ids(page: &Value) -> Vec<&str> {
    (page["data"].as_array().unwrap().iter())
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn anthropic_clients_get_anthropics_list_of_chat_routes() {
    let s = state(false);
    let (status, page) = get(&s, "/v1/models", &[ANTHROPIC]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ids(&page),
        ["r0", "r1", "r2", "r3", "r4"],
        "no embeddings route"
    );
    assert_eq!(page["has_more"], false);
    assert_eq!(page["first_id"], "r0");
    assert_eq!(page["last_id"], "r4");
    assert!(page.get("object").is_none());
    assert_eq!(
        page["data"][0],
        json!({"type": "model", "id": "r0", "display_name": "r0",
            "created_at": "1970-01-01T00:00:00Z", "lifecycle": "active"})
    );
    // without the header: OpenAI's list, unchanged, embeddings included
    let (_, openai) = get(&s, "/v1/models", &[]).await;
    assert_eq!(openai["object"], "list");
    assert_eq!(ids(&openai).len(), 6);
    assert_eq!(openai["data"][5]["api"], "embeddings");
}

#[tokio::test]
async fn anthropic_pages_go_both_ways() {
    let s = state(false);
    let page = |q: &'static str| {
        let s = s.clone();
        async move { get(&s, &format!("/v1/models?{q}"), &[ANTHROPIC]).await.1 }
    };
    let first = page("limit=2").await;
    assert_eq!(ids(&first), ["r0", "r1"]);
    assert_eq!(
        (first["has_more"].clone(), first["last_id"].clone()),
        (json!(true), json!("r1"))
    );
    let next = page("limit=2&after_id=r1").await;
    assert_eq!(ids(&next), ["r2", "r3"]);
    assert_eq!(next["has_more"], true);
    let last = page("limit=2&after_id=r3").await;
    assert_eq!(ids(&last), ["r4"]);
    assert_eq!(last["has_more"], false);
    let back = page("limit=2&before_id=r3").await;
    assert_eq!(ids(&back), ["r1", "r2"]);
    assert_eq!(back["has_more"], true, "r0 lies before");
    let start = page("limit=5&before_id=r1").await;
    assert_eq!(ids(&start), ["r0"]);
    assert_eq!(start["has_more"], false);
    let none = page("lifecycle=retired").await;
    assert!(ids(&none).is_empty());
    assert_eq!(
        (none["first_id"].clone(), none["has_more"].clone()),
        (Value::Null, json!(false))
    );
    assert_eq!(
        ids(&page("lifecycle=active,deprecated&beta=true").await).len(),
        5
    );
}

#[tokio::test]
async fn anthropic_errors_are_anthropics_and_name_the_parameter() {
    let s = state(false);
    for (query, param) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("after_id=nope", "after_id"),
        ("after_id=r1&before_id=r3", "before_id"),
        ("lifecycle=frozen", "lifecycle"),
        ("order=desc", "order"),
    ] {
        let (status, body) = get(&s, &format!("/v1/models?{query}"), &[ANTHROPIC]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{param}: ")),
            "{query}: {message}"
        );
    }
    let long = format!("/v1/models?after_id={}", "x".repeat(10_000));
    let (_, body) = get(&s, &long, &[ANTHROPIC]).await;
    assert!(
        body["error"]["message"].as_str().unwrap().len() < 300,
        "{body}"
    );
}

#[tokio::test]
async fn anthropic_retrieve_is_a_model_object_or_not_found_error() {
    let s = state(false);
    let (status, one) = get(&s, "/v1/models/r2", &[ANTHROPIC]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["type"], "model");
    assert_eq!(one["id"], "r2");
    assert_eq!(one["display_name"], "r2");
    for id in ["claude-nope", "vectors"] {
        let (status, err) = get(&s, &format!("/v1/models/{id}"), &[ANTHROPIC]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{id}");
        assert_eq!(err["type"], "error");
        assert_eq!(err["error"]["type"], "not_found_error");
        assert!(err["error"]["message"].as_str().unwrap().contains(id));
    }
    let (status, openai) = get(&s, "/v1/models/vectors", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(openai["object"], "model");
}

#[tokio::test]
async fn a_key_sees_its_own_routes_in_both_shapes() {
    let s = state(true);
    let team = ("x-api-key", "sy-team");
    let (_, page) = get(&s, "/v1/models", &[ANTHROPIC, team]).await;
    assert_eq!(ids(&page), ["r1", "r3"]);
    let (status, err) = get(&s, "/v1/models/r2", &[ANTHROPIC, team]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(err["error"]["type"], "not_found_error");
    let (status, err) = get(&s, "/v1/models", &[ANTHROPIC]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(err["error"]["type"], "authentication_error");
    let (status, err) = get(&s, "/v1/models/r1", &[ANTHROPIC]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(err["type"], "error");
    let (_, openai) = get(&s, "/v1/models", &[team]).await;
    assert_eq!(ids(&openai), ["r1", "r3", "vectors"]);
}
