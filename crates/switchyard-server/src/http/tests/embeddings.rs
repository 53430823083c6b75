//! `POST /v1/embeddings` and `GET /v1/models/{id}` through `app()`: OpenAI's response
//! shape, float and base64 vectors, who answered (headers, `switchyard` object, log line),
//! failover, fields refused by name, a route of the other API refused by name, keys.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::embedding::EmbeddingInput;
use switchyard::provider::scripted::{scripted_vector, ScriptedProvider, Step};
use switchyard::{Api, ErrorKind, Gateway, Price, ProviderSpec, Route};

use super::{call, header, json_body};
use crate::access::keys::{hash_token, KeyStore};
use crate::config::KeyToml;
use crate::http::dialects::embeddings::wire::base64_f32_le;
use crate::http::{AppState, Shared};
use crate::telemetry::insight::Insight;
use crate::telemetry::log::RequestLog;
use crate::telemetry::metrics::Metrics;

/// Route `vectors` (embeddings) over a broken then a working scripted provider, and a
/// chat route `smart`; the insight is the log's tap.
fn server(primary: ScriptedProvider, keys: &[KeyToml]) -> (AppState, Arc<ScriptedProvider>) {
    let primary = Arc::new(primary);
    let backup = Arc::new(ScriptedProvider::new("backup-model"));
    let price = Price::from_usd_per_mtok(1.0, 0.0, None, None).unwrap();
    let metrics = Arc::new(Metrics::new());
    let insight = Arc::new(Insight::new(Clock::system()));
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new("primary", primary.clone())
                .price(price)
                .max_attempts(1),
        )
        .provider(ProviderSpec::new("backup", backup).price(price))
        .route(Route::new("vectors", &["primary", "backup"]).api(Api::Embeddings))
        .route(Route::new("smart", &["backup"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    (AppState(Arc::new(shared)), primary)
}

fn embed(body: &Value) -> Request<Body> {
    Request::post("/v1/embeddings")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn vector(model: &str, text: &str) -> Vec<f32> {
    scripted_vector(model, &EmbeddingInput::Text(text.to_owned()), 3)
}

#[tokio::test]
async fn an_embedding_fails_over_and_says_who_answered() {
    let (state, primary) = server(
        ScriptedProvider::new("broken").otherwise(Step::fail(ErrorKind::Server)),
        &[],
    );
    let resp = call(
        &state,
        embed(&json!({"model": "vectors", "input": ["hello", "world!"]})),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    assert_eq!(header(&resp, "x-switchyard-attempts"), "2");
    // 11 input bytes at $1 per MTok
    assert_eq!(header(&resp, "x-switchyard-cost-usd"), "0.000011");
    let id = header(&resp, "x-request-id").to_owned();
    assert!(id.starts_with("req_"), "{id}");
    let body = json_body(resp).await;
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "backup-model");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 11, "total_tokens": 11})
    );
    assert_eq!(body["data"][0]["object"], "embedding");
    assert_eq!(body["data"][1]["index"], 1);
    let got: Vec<f32> = serde_json::from_value(body["data"][1]["embedding"].clone()).unwrap();
    assert_eq!(got, vector("backup-model", "world!"));
    assert_eq!(body["switchyard"]["provider"], "backup");
    assert_eq!(body["switchyard"]["failed_over"], true);
    assert_eq!(body["switchyard"]["cost_usd"], 0.000_011);
    let first = &body["switchyard"]["attempts"][0];
    assert_eq!(
        (first["outcome"].as_str(), first["kind"].as_str()),
        (Some("failed"), Some("server"))
    );
    assert_eq!(primary.calls(), 1);
    let line = state.insight.recent(1).pop().unwrap();
    assert_eq!(line.id, id);
    assert_eq!((line.route.as_str(), line.status), ("vectors", 200));
    assert_eq!(line.api, "embeddings");
    assert_eq!(line.provider.as_deref(), Some("backup"));
    assert!(line.failed_over);
    assert_eq!(line.usage.unwrap().input_tokens, 11);
    assert_eq!(line.cost_usd, Some(0.000_011));
}

#[tokio::test]
async fn base64_is_the_little_endian_f32_bytes() {
    let (state, _) = server(ScriptedProvider::new("m"), &[]);
    let resp = call(
        &state,
        embed(&json!({"model": "vectors", "input": "hi", "encoding_format": "base64", "dimensions": 5})),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    let want = scripted_vector("m", &EmbeddingInput::Text("hi".into()), 5);
    assert_eq!(body["data"][0]["embedding"], base64_f32_le(&want));
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_fields_and_the_wrong_api_are_400s_naming_them() {
    let (state, primary) = server(ScriptedProvider::new("m"), &[]);
    for (body, param) in [
        (json!({"model": "vectors", "input": []}), "input"),
        (json!({"model": "vectors", "input": {"text": "x"}}), "input"),
        (json!({"model": "vectors", "input": ["a", 1]}), "input[1]"),
        (
            json!({"model": "vectors", "input": "a", "encoding_format": "hex"}),
            "encoding_format",
        ),
        (
            json!({"model": "vectors", "input": "a", "dimensions": -3}),
            "dimensions",
        ),
        (
            json!({"model": "vectors", "input": vec!["a"; 2049]}),
            "input",
        ),
        (json!({"model": "smart", "input": "a"}), "model"),
    ] {
        let resp = call(&state, embed(&body)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{param}");
        let err = json_body(resp).await;
        assert_eq!(err["error"]["param"], param, "{err}");
        assert_eq!(err["error"]["type"], "invalid_request_error");
    }
    let resp = call(&state, embed(&json!({"model": "smart", "input": "a"}))).await;
    let err = json_body(resp).await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains(r#"route "smart" serves chat"#),
        "{err}"
    );
    // and the reverse: a chat request to the embeddings route
    let chat = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"model": "vectors", "messages": [{"role": "user", "content": "hi"}]})
                .to_string(),
        ))
        .unwrap();
    let resp = call(&state, chat).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let err = json_body(resp).await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains(r#"route "vectors" serves embeddings"#),
        "{err}"
    );
    let resp = call(&state, embed(&json!({"model": "nope", "input": "a"}))).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let err = json_body(resp).await;
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("configured routes: vectors, smart"),
        "{err}"
    );
    assert_eq!(primary.calls(), 0);
    let line = state.insight.recent(1).pop().unwrap();
    assert_eq!(
        (line.status, line.error.as_deref()),
        (404, Some("model_not_found"))
    );
}

#[tokio::test]
async fn keys_gate_embeddings_as_they_gate_chat() {
    let keys = [KeyToml {
        name: "team".into(),
        sha256: hash_token("sy-team"),
        routes: vec!["smart".into()],
        ..KeyToml::default()
    }];
    let (state, primary) = server(ScriptedProvider::new("m"), &keys);
    let with = |token: Option<&str>| {
        let mut req = embed(&json!({"model": "vectors", "input": "a"}));
        if let Some(t) = token {
            req.headers_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        req
    };
    assert_eq!(
        call(&state, with(None)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&state, with(Some("sy-team"))).await.status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(primary.calls(), 0);
}

#[tokio::test]
async fn models_say_which_api_and_retrieve_one() {
    let (state, _) = server(ScriptedProvider::new("m"), &[]);
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    let list = json_body(call(&state, get("/v1/models")).await).await;
    let apis: Vec<(&str, &str)> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), m["api"].as_str().unwrap()))
        .collect();
    assert_eq!(apis, [("vectors", "embeddings"), ("smart", "chat")]);
    let resp = call(&state, get("/v1/models/vectors")).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let one = json_body(resp).await;
    assert_eq!(one["id"], "vectors");
    assert_eq!(one["object"], "model");
    assert_eq!(one["api"], "embeddings");
    let resp = call(&state, get("/v1/models/gpt-nope")).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let err = json_body(resp).await;
    assert_eq!(err["error"]["code"], "model_not_found");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("gpt-nope"));
}
