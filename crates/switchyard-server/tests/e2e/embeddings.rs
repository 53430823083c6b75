//! The official `openai` Python SDK's `embeddings.create` against the proxy, failing over
//! from a broken OpenAI-kind provider to a Gemini-kind one (both wiremock upstreams that
//! check what their vendor checks): float vectors, the SDK's default base64 (which it
//! decodes itself) and an explicit base64, all equal; `models.retrieve`; a token input the
//! Gemini provider cannot take. The checks live in `tests/python/test_openai_embeddings.py`,
//! run with `$SWITCHYARD_PYTHON` (default `python3`); without the SDK the test fails with
//! the install command, never skips.

use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use crate::support::{
    describe, key_env, python, run_bounded, try_run_bounded, Scratch, Server, KEY_ENV, UPSTREAM_KEY,
};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_openai_embeddings.py"
);
const GEMINI_PATH: &str = "/v1beta/models/gemini-embedding-001:batchEmbedContents";

/// Gemini's `batchEmbedContents`: one vector per request, `[len(text), 0.5, -0.25]` (exact
/// in `f32`, so the script can compare vectors exactly).
struct GeminiEmbeddings;

impl Respond for GeminiEmbeddings {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let mut embeddings = Vec::new();
        for r in body["requests"].as_array().into_iter().flatten() {
            if r["model"] != "models/gemini-embedding-001" {
                return ResponseTemplate::new(400).set_body_json(json!({"error": {
                    "code": 400, "message": "model mismatch", "status": "INVALID_ARGUMENT"}}));
            }
            let text = r["content"]["parts"][0]["text"]
                .as_str()
                .unwrap_or_default();
            embeddings.push(json!({"values": [text.chars().count(), 0.5, -0.25]}));
        }
        ResponseTemplate::new(200).set_body_json(json!({ "embeddings": embeddings }))
    }
}

#[tokio::test]
async fn openai_python_sdk_embeddings_fail_over_from_openai_to_gemini() {
    let mut probe = python();
    probe.args(["-c", "import openai; print(openai.__version__)"]);
    match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => {}
        other => panic!(
            "this test needs the official `openai` package in $SWITCHYARD_PYTHON (default python3).\n\
             Install it: python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt\n\
             then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{}",
            other.map_or_else(|e| e.to_string(), |o| describe(&o))
        ),
    }
    let broken = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header(
            "authorization",
            format!("Bearer {UPSTREAM_KEY}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {
            "message": "The engine is currently overloaded", "type": "server_error",
            "param": null, "code": null}})))
        .mount(&broken)
        .await;
    let gemini = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(GEMINI_PATH))
        .and(header("x-goog-api-key", UPSTREAM_KEY))
        .respond_with(GeminiEmbeddings)
        .mount(&gemini)
        .await;
    let config = format!(
        "[[providers]]\nname = \"openai-broken\"\nkind = \"openai\"\nmodel = \"text-embedding-3-small\"\n\
         api_key_env = \"{KEY_ENV}\"\nbase_url = \"{}/v1\"\n\n\
         [[providers]]\nname = \"gemini\"\nkind = \"gemini\"\nmodel = \"gemini-embedding-001\"\n\
         api_key_env = \"{KEY_ENV}\"\nbase_url = \"{}/v1beta\"\n\n\
         [[routes]]\nname = \"embed\"\nproviders = [\"openai-broken\", \"gemini\"]\n\
         retry = {{ max_attempts = 1 }}\n\n\
         [[routes]]\nname = \"chat\"\nproviders = [\"sim\"]\n\n\
         [[providers]]\nname = \"sim\"\nkind = \"simulated\"\nfailure_rate = 0.0\nlatency_range_ms = [1, 3]\nseed = 1\n",
        broken.uri(),
        gemini.uri()
    );
    let server = Server::start(Scratch::new("e2e", "embeddings"), &config, &key_env());
    let mut script = python();
    script.args([SCRIPT, &format!("{}/v1", server.base)]);
    let out = run_bounded(script, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "the openai SDK embeddings script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("all openai SDK embeddings checks passed"),
        "{stdout}"
    );
    let broken_hits = broken.received_requests().await.unwrap_or_default();
    assert!(
        !broken_hits.is_empty(),
        "the OpenAI provider was tried first"
    );
    let sent: Value = serde_json::from_slice(&broken_hits[0].body).unwrap();
    assert_eq!(sent["model"], "text-embedding-3-small");
    assert_eq!(
        sent["encoding_format"], "float",
        "upstream always gets floats"
    );
    let gemini_hits = gemini.received_requests().await.unwrap_or_default();
    assert!(!gemini_hits.is_empty(), "the Gemini provider answered");
    assert!(gemini_hits.iter().all(|r| r.url.path() == GEMINI_PATH));
}
