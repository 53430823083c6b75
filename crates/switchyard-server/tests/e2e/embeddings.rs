//! The official `openai` Python SDK's `embeddings.create` against the proxy, failing over
//! from a broken OpenAI-kind provider to a Gemini-kind one (both wiremock upstreams that
//! check what their vendor checks): float vectors, the SDK's default base64 (which it
//! decodes itself) and an explicit base64, all equal; `models.retrieve`; a token input the
//! Gemini provider cannot take. The same script against a Vertex AI provider of
//! `gemini-embedding-001` (a `:predict` mock taking one instance per call and only the token
//! a JWT-verifying token endpoint issued), plus the usage its `token_count`s add up to and
//! the cost. The checks live in `tests/python/test_openai_embeddings.py`, run with
//! `$SWITCHYARD_PYTHON` (default `python3`); without the SDK the test fails with the install
//! command, never skips.

use serde_json::{json, Value};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use crate::support::{key_env, require_python, run_python, Scratch, Server, KEY_ENV, UPSTREAM_KEY};

const SCRIPT: &str = "test_openai_embeddings.py";
const PASSED: &str = "all openai SDK embeddings checks passed";
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
    require_python("openai");
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
    let base = format!("{}/v1", server.base);
    run_python(SCRIPT, &[&base], PASSED, &[&server]);
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

const VERTEX_MODEL: &str = "gemini-embedding-001";
const VERTEX_TOKEN: &str = "ya29.e2e-vertex-token";
const SA_EMAIL: &str = "gateway@acme-e2e.iam.gserviceaccount.com";
const TEST_KEY: &str =
    include_str!("../../../switchyard/tests/fixtures/vertex/TEST-ONLY-private-key.pem");
const TEST_PUBLIC_KEY: &str =
    include_str!("../../../switchyard/tests/fixtures/vertex/TEST-ONLY-public-key.pem");

fn vertex_path() -> String {
    format!("/v1/projects/acme-e2e/locations/us-central1/publishers/google/models/{VERTEX_MODEL}:predict")
}

/// Google's token endpoint: a JWT-bearer grant whose assertion is signed with the test
/// key's private half (checked against its public half), issued by the service account,
/// for this endpoint, with the cloud-platform scope; answers [`VERTEX_TOKEN`].
struct TokenEndpoint {
    audience: String,
}

#[derive(serde::Deserialize)]
struct Claims {
    scope: String,
}

impl Respond for TokenEndpoint {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(&request.body)
                .into_owned()
                .collect();
        let refuse = |why: String| {
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": "invalid_grant", "error_description": why}))
        };
        if form.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        {
            return refuse("unsupported grant_type".into());
        }
        let Ok(key) = jsonwebtoken::DecodingKey::from_rsa_pem(TEST_PUBLIC_KEY.as_bytes()) else {
            return refuse("the test's public key".into());
        };
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.set_audience(&[&self.audience]);
        validation.set_issuer(&[SA_EMAIL]);
        let assertion = form.get("assertion").map_or("", String::as_str);
        match jsonwebtoken::decode::<Claims>(assertion, &key, &validation) {
            Ok(t) if t.claims.scope == "https://www.googleapis.com/auth/cloud-platform" => {
                ResponseTemplate::new(200).set_body_json(json!({
                    "access_token": VERTEX_TOKEN, "expires_in": 3600, "token_type": "Bearer"}))
            }
            Ok(_) => refuse("scope".into()),
            Err(e) => refuse(format!("Invalid JWT: {e}")),
        }
    }
}

/// Vertex AI's `:predict` for `gemini-embedding-001`: one instance per request (as Google
/// documents), answered `[len(text), 0.5, -0.25]` with the text's length as its
/// `token_count`.
struct VertexPredict;

impl Respond for VertexPredict {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let instances = body["instances"].as_array().cloned().unwrap_or_default();
        let content = instances.first().and_then(|i| i["content"].as_str());
        let (1, Some(text)) = (instances.len(), content) else {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {"code": 400,
                "message": "gemini-embedding-001 takes one instance", "status": "INVALID_ARGUMENT"}}));
        };
        let n = text.chars().count();
        ResponseTemplate::new(200).set_body_json(json!({"predictions": [{"embeddings": {
            "statistics": {"truncated": false, "token_count": n},
            "values": [n, 0.5, -0.25]}}]}))
    }
}

#[tokio::test]
async fn openai_python_sdk_embeddings_fail_over_from_openai_to_vertex() {
    let broken = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {
            "message": "The engine is currently overloaded", "type": "server_error",
            "param": null, "code": null}})))
        .mount(&broken)
        .await;
    let google = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(TokenEndpoint {
            audience: format!("{}/token", google.uri()),
        })
        .mount(&google)
        .await;
    Mock::given(method("POST"))
        .and(path(vertex_path()))
        .and(header(
            "authorization",
            format!("Bearer {VERTEX_TOKEN}").as_str(),
        ))
        .respond_with(VertexPredict)
        .mount(&google)
        .await;
    let scratch = Scratch::new("e2e", "embeddings-vertex");
    let key_file = scratch.write(
        "sa.json",
        &json!({"type": "service_account", "project_id": "acme-e2e", "private_key_id": "k1",
            "private_key": TEST_KEY, "client_email": SA_EMAIL, "client_id": "1",
            "token_uri": format!("{}/token", google.uri())})
        .to_string(),
    );
    let config = format!(
        "[[providers]]\nname = \"openai-broken\"\nkind = \"openai\"\nmodel = \"text-embedding-3-small\"\n\
         api_key_env = \"{KEY_ENV}\"\nbase_url = \"{}/v1\"\n\n\
         [[providers]]\nname = \"vertex\"\nkind = \"vertex\"\nproject = \"acme-e2e\"\n\
         location = \"us-central1\"\nmodel = \"{VERTEX_MODEL}\"\nbase_url = \"{}/v1\"\n\
         credentials_env = \"SWITCHYARD_E2E_VERTEX_KEY_FILE\"\n\n\
         [[routes]]\nname = \"embed\"\nproviders = [\"openai-broken\", \"vertex\"]\n\
         retry = {{ max_attempts = 1 }}\n\n\
         [[routes]]\nname = \"chat\"\nproviders = [\"sim\"]\n\n\
         [[providers]]\nname = \"sim\"\nkind = \"simulated\"\nfailure_rate = 0.0\nlatency_range_ms = [1, 3]\nseed = 1\n",
        broken.uri(),
        google.uri()
    );
    let key_path = key_file.to_str().unwrap().to_owned();
    let envs = [
        (KEY_ENV, UPSTREAM_KEY),
        ("SWITCHYARD_E2E_VERTEX_KEY_FILE", key_path.as_str()),
    ];
    let server = Server::start(scratch, &config, &envs);
    let base = format!("{}/v1", server.base);
    run_python(SCRIPT, &[&base, "vertex"], PASSED, &[&server]);
    let hits = google.received_requests().await.unwrap_or_default();
    let predicts: Vec<_> = hits
        .iter()
        .filter(|r| r.url.path() == vertex_path())
        .collect();
    assert!(!predicts.is_empty(), "the Vertex provider answered");
    for r in &predicts {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            body["instances"].as_array().map(Vec::len),
            Some(1),
            "{body}"
        );
    }
    let exchanges = hits.iter().filter(|r| r.url.path() == "/token").count();
    assert_eq!(exchanges, 1, "one token exchange serves every call");
}
