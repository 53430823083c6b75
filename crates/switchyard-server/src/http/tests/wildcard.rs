//! Wildcard routes through the router, built from config text, over wiremock upstreams
//! that answer as their vendors do: the client's model reaches the upstream (in the body
//! for OpenAI, in the URL path for Gemini), refused models reach no upstream, and
//! `/v1/models` lists the allow-list's exact ids.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{call, chat, header as resp_header, json_body, post};
use crate::access::keys::{hash_token, KeyStore};
use crate::config::{build_gateway, parse, KeyToml, Wiring};
use crate::http::{AppState, Shared};
use crate::telemetry::metrics::Metrics;

const KEY: &str = "sk-upstream-wildcard-test";

/// OpenAI's chat completion for `model`.
fn openai_reply(model: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
            "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})
}

/// Gemini's `generateContent` answer.
fn gemini_reply() -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1}})
}

/// A gateway from config: `openai/*` (template `openai`, then `backup`), `gem/*`, and
/// `together/*` (an OpenAI-compatible template whose models hold `/`).
async fn fixture() -> (AppState, MockServer, MockServer) {
    fixture_with_keys(&[]).await
}

async fn fixture_with_keys(keys: &[KeyToml]) -> (AppState, MockServer, MockServer) {
    let openai = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(|req: &wiremock::Request| {
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let model = body["model"].as_str().unwrap_or_default().to_owned();
            ResponseTemplate::new(200).set_body_json(openai_reply(&model))
        })
        .mount(&openai)
        .await;
    let gemini = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .and(header("x-goog-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(gemini_reply()))
        .mount(&gemini)
        .await;
    let text = format!(
        r#"
[[providers]]
name = "openai"
kind = "openai"
model = "gpt-4o-mini"
base_url = "{openai}/v1"
api_key_env = "WILDCARD_KEY"

[[providers]]
name = "gem"
kind = "gemini"
model = "gemini-2.0-flash"
base_url = "{gemini}/v1beta"
api_key_env = "WILDCARD_KEY"

[[providers]]
name = "together"
kind = "openai"
model = "meta-llama/Llama-3.1-8B-Instruct-Turbo"
base_url = "{openai}/v1"
api_key_env = "WILDCARD_KEY"

[[providers]]
name = "backup"
kind = "simulated"

[[routes]]
name = "openai/*"
providers = ["openai", "backup"]
models = ["gpt-4.1*", "o4-mini"]

[[routes]]
name = "gem/*"
providers = ["gem"]
models = ["gemini-*"]

[[routes]]
name = "together/*"
providers = ["together"]
models = ["meta-llama/*", "Qwen/Qwen2.5-72B-Instruct"]
"#,
        openai = openai.uri(),
        gemini = gemini.uri(),
    );
    let config = parse(&text, "wildcard.toml").unwrap();
    let env = |var: &str| (var == "WILDCARD_KEY").then(|| KEY.to_owned());
    let built = build_gateway(&config, &env, false, Wiring::default()).unwrap();
    let shared = Shared::for_tests(built.gateway, KeyStore::new(keys), Arc::new(Metrics::new()));
    (AppState(Arc::new(shared)), openai, gemini)
}

async fn upstream_bodies(server: &MockServer) -> Vec<Value> {
    (server.received_requests().await.unwrap().iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn the_clients_model_is_what_the_upstream_gets() {
    let (state, openai, _gemini) = fixture().await;
    let resp = call(&state, post(&chat("openai/gpt-4.1-mini"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp_header(&resp, "x-switchyard-provider"),
        "openai/gpt-4.1-mini"
    );
    let body = json_body(resp).await;
    assert_eq!(body["model"], "gpt-4.1-mini");
    let sent = upstream_bodies(&openai).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["model"], "gpt-4.1-mini");
    // another model on the same template: its own provider, its own model upstream
    let resp = call(&state, post(&chat("openai/o4-mini"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(upstream_bodies(&openai).await[1]["model"], "o4-mini");
    let ledger = state.gateway.ledger().summary();
    assert_eq!(ledger["openai/gpt-4.1-mini"].calls, 1);
    assert_eq!(ledger["openai/o4-mini"].calls, 1);
}

#[tokio::test]
async fn a_url_vendors_model_goes_into_its_path() {
    let (state, _openai, gemini) = fixture().await;
    let resp = call(&state, post(&chat("gem/gemini-2.5-flash"))).await;
    assert_eq!(resp.status(), StatusCode::OK, "{:?}", json_body(resp).await);
    let got = gemini.received_requests().await.unwrap();
    assert_eq!(
        got[0].url.path(),
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
}

/// An OpenAI-compatible template sends its model in the body, so a model with `/` in it
/// (Together's, OpenRouter's ids) reaches it whole; a URL vendor's route refuses one.
#[tokio::test]
async fn a_body_vendors_model_may_hold_slashes() {
    let (state, openai, gemini) = fixture().await;
    let model = "meta-llama/Llama-3.3-70B-Instruct-Turbo";
    let resp = call(&state, post(&chat(&format!("together/{model}")))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp_header(&resp, "x-switchyard-provider"),
        format!("together/{model}")
    );
    assert_eq!(json_body(resp).await["model"], model);
    assert_eq!(upstream_bodies(&openai).await[0]["model"], model);
    let resp = call(&state, post(&chat("together/Qwen/Qwen2.5-72B-Instruct"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        state.gateway.ledger().summary()[&format!("together/{model}")].calls,
        1
    );
    // not on the allow-list: 404; malformed segments and a URL vendor's route: 400
    let resp = call(&state, post(&chat("together/mistralai/Mixtral-8x7B"))).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    for hostile in [
        "together/meta-llama//x",
        "together/meta-llama/",
        "together/meta-llama/../../v1/files",
        "together/meta-llama/.x",
        "gem/models/gemini-2.5-flash",
    ] {
        let resp = call(&state, post(&chat(hostile))).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{hostile}");
        let body = json_body(resp).await;
        assert_eq!(body["error"]["code"], "invalid_model", "{hostile}");
    }
    let resp = call(&state, post(&chat("gem/models/gemini-2.5-flash"))).await;
    let message = json_body(resp).await["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("takes no /"), "{message}");
    assert_eq!(upstream_bodies(&openai).await.len(), 2);
    assert!(gemini.received_requests().await.unwrap().is_empty());
    // /v1/models/{id} resolves such an id too
    let req = Request::get(format!("/v1/models/together/{model}"))
        .body(Body::empty())
        .unwrap();
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_body(resp).await["route"], "together/*");
}

#[tokio::test]
async fn refused_models_name_the_field_and_reach_no_upstream() {
    let (state, openai, gemini) = fixture().await;
    let resp = call(&state, post(&chat("openai/gpt-4o"))).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], "model_not_found");
    assert_eq!(body["error"]["param"], "model");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("gpt-4.1*, o4-mini"), "{message}");
    for hostile in [
        "gem/../../v1/files",
        "gem/gemini-x?key=1",
        "gem/gemini-x#a",
        "gem/gemini-%2e%2e",
        "openai/gpt-4.1/../../admin",
    ] {
        let resp = call(&state, post(&chat(hostile))).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{hostile}");
        let body = json_body(resp).await;
        assert_eq!(body["error"]["param"], "model", "{hostile}");
        assert_eq!(body["error"]["code"], "invalid_model", "{hostile}");
    }
    assert!(openai.received_requests().await.unwrap().is_empty());
    assert!(gemini.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn models_lists_the_allow_lists_exact_ids() {
    let (state, _openai, _gemini) = fixture().await;
    let req = Request::get("/v1/models").body(Body::empty()).unwrap();
    let body = json_body(call(&state, req).await).await;
    let ids: Vec<&str> = (body["data"].as_array().unwrap().iter())
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["openai/o4-mini", "together/Qwen/Qwen2.5-72B-Instruct"]
    );
    let req = Request::get("/v1/models/openai/gpt-4.1-nano")
        .body(Body::empty())
        .unwrap();
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    assert_eq!(body["id"], "openai/gpt-4.1-nano");
    assert_eq!(body["route"], "openai/*");
    let req = Request::get("/v1/models/openai/gpt-4o")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&state, req).await.status(), StatusCode::NOT_FOUND);
}

/// A key's `routes` names the wildcard route itself: it may call any model the route
/// allows, and a key without it is refused before the allow-list is consulted upstream.
#[tokio::test]
async fn a_key_names_the_wildcard_route() {
    let key = |name: &str, route: &str| KeyToml {
        name: name.into(),
        sha256: hash_token(&format!("sy-{name}-token-long-enough")),
        routes: vec![route.into()],
        ..KeyToml::default()
    };
    let (state, openai, _gemini) =
        fixture_with_keys(&[key("wild", "openai/*"), key("gem", "gem/*")]).await;
    let send = |name: &str| {
        let mut req = post(&chat("openai/o4-mini"));
        let token = format!("Bearer sy-{name}-token-long-enough");
        req.headers_mut()
            .insert("authorization", token.parse().unwrap());
        req
    };
    assert_eq!(call(&state, send("wild")).await.status(), StatusCode::OK);
    let resp = call(&state, send("gem")).await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body = json_body(resp).await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"openai/*\""),
        "{body}"
    );
    assert_eq!(openai.received_requests().await.unwrap().len(), 1);
}

/// A Responses request on a wildcard route whose template speaks the Responses API
/// upstream (`api = "responses"`) reaches it as the client wrote it, under the client's
/// model: the body is read as the request's native body on such a route
/// (`responses::reads_native_body`: its template takes it natively).
#[tokio::test]
async fn a_responses_template_gets_the_clients_own_body() {
    let upstream = MockServer::start().await;
    let answer = json!({"id": "resp_upstream", "object": "response", "created_at": 1,
        "status": "completed", "model": "gpt-4.1-mini",
        "output": [{"type": "message", "id": "msg_up1", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}]}],
        "usage": {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 6}});
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&upstream)
        .await;
    let text = format!(
        r#"
[[providers]]
name = "resp"
kind = "openai"
api = "responses"
model = "gpt-4o-mini"
base_url = "{uri}/v1"
api_key_env = "WILDCARD_KEY"

[[routes]]
name = "resp/*"
providers = ["resp"]
models = ["gpt-4.1*"]
"#,
        uri = upstream.uri(),
    );
    let config = parse(&text, "wildcard.toml").unwrap();
    let env = |var: &str| (var == "WILDCARD_KEY").then(|| KEY.to_owned());
    let built = build_gateway(&config, &env, false, Wiring::default()).unwrap();
    let shared = Shared::for_tests(built.gateway, KeyStore::new(&[]), Arc::new(Metrics::new()));
    let state = AppState(Arc::new(shared));
    let body = json!({"model": "resp/gpt-4.1-mini", "input": "hi", "store": false,
        "truncation": "disabled"});
    let req = Request::post("/v1/responses")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = call(&state, req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = upstream_bodies(&upstream).await;
    assert_eq!(sent.len(), 1);
    // as written: the shared shape would have sent the input as items, without truncation
    assert_eq!(sent[0]["input"], "hi", "{}", sent[0]);
    assert_eq!(sent[0]["truncation"], "disabled", "{}", sent[0]);
    assert_eq!(sent[0]["model"], "gpt-4.1-mini", "{}", sent[0]);
}
