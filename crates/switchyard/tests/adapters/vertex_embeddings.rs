//! Vertex AI embeddings over HTTP: `…/publishers/google/models/{model}:predict` against a
//! mock that answers only the bearer token the JWT-verifying token endpoint issued
//! (`vertex.rs`), checking the Text Embeddings API's body; a request split within each
//! model's per-call limits (one instance for `gemini-embedding-001`, 250 for
//! `text-embedding-005`), its vectors joined in order and its `token_count`s summed;
//! Google's error table classified on `:predict`, the token never in an error; Claude and
//! token-id inputs refused without a call.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::embedding::{EmbeddingInput, EmbeddingRequest};
use switchyard::provider::token::TokenSource;
use switchyard::{ErrorKind, Provider};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::embeddings::{errors_classify, request};
use crate::vertex::{key_file, model_path, mount_token_endpoint, suite_token_uri, tokens, vertex};

const TOKEN: &str = "ya29.issued-for-embeddings";

/// `:predict` as Google answers it: per instance, `[chars, 0.5]` (or `outputDimensionality`
/// values) and `token_count` = the text's length. Refuses a body that is not the Text
/// Embeddings API's, or more instances than `max_instances`.
struct Predict {
    max_instances: usize,
}

impl Respond for Predict {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let refuse = |why: &str| {
            ResponseTemplate::new(400).set_body_json(json!({"error": {
                "code": 400, "message": why, "status": "INVALID_ARGUMENT"}}))
        };
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let Some(instances) = body["instances"].as_array() else {
            return refuse("instances is required");
        };
        if instances.len() > self.max_instances {
            return refuse("too many instances");
        }
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        if keys.iter().any(|k| *k != "instances" && *k != "parameters") {
            return refuse("unknown field");
        }
        let dims = body["parameters"]["outputDimensionality"].as_u64();
        let mut predictions = Vec::new();
        for instance in instances {
            let Some(text) = instance["content"].as_str() else {
                return refuse("content is required");
            };
            let n = text.chars().count();
            let values: Vec<Value> = match dims {
                Some(d) => (0..d).map(|i| json!(i)).collect(),
                None => vec![json!(n), json!(0.5)],
            };
            predictions.push(json!({"embeddings": {
                "statistics": {"truncated": false, "token_count": n},
                "values": values,
            }}));
        }
        ResponseTemplate::new(200).set_body_json(json!({ "predictions": predictions }))
    }
}

/// A provider for `model` on `server`, with tokens from a token endpoint on it issuing
/// [`TOKEN`]; the count of tokens issued.
async fn provider(
    server: &MockServer,
    model: &str,
) -> (Arc<dyn Provider>, Arc<std::sync::atomic::AtomicUsize>) {
    let issued = mount_token_endpoint(server, &[TOKEN], 3600).await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let source = tokens(&file, Clock::system()) as Arc<dyn TokenSource>;
    (
        vertex(&server.uri(), model, Some(source), Clock::system()),
        issued,
    )
}

async fn mount_predict(server: &MockServer, model: &str, max_instances: usize, calls: u64) {
    Mock::given(method("POST"))
        .and(path(format!("{}:predict", model_path("google", model))))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(Predict { max_instances })
        .expect(calls)
        .mount(server)
        .await;
}

fn sent_instances(requests: &[Request]) -> Vec<usize> {
    requests
        .iter()
        .filter(|r| r.url.path().ends_with(":predict"))
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["instances"].as_array().unwrap().len()
        })
        .collect()
}

#[tokio::test]
async fn gemini_embedding_001_sends_one_instance_per_call_with_the_issued_token() {
    let server = MockServer::start().await;
    let model = "gemini-embedding-001";
    mount_predict(&server, model, 1, 3).await;
    let (p, issued) = provider(&server, model).await;
    let req = EmbeddingRequest::texts(&["a", "bb", "ccc"]);
    let reply = p.embed(&req).await.unwrap();
    assert_eq!(
        reply.vectors,
        [vec![1.0, 0.5], vec![2.0, 0.5], vec![3.0, 0.5]]
    );
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (6, 0));
    assert_eq!(
        issued.load(Ordering::SeqCst),
        1,
        "one exchange for every call"
    );
    server.verify().await;
    let requests = server.received_requests().await.unwrap();
    assert_eq!(sent_instances(&requests), [1, 1, 1]);
    let one: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    assert!(one["instances"][0].get("task_type").is_none());
    assert!(
        one.get("parameters").is_none(),
        "no dimensions, no parameters"
    );
}

#[tokio::test]
async fn text_embedding_005_sends_up_to_250_instances_per_call_with_the_dimensions() {
    let server = MockServer::start().await;
    let model = "text-embedding-005";
    mount_predict(&server, model, 250, 2).await;
    let (p, _) = provider(&server, model).await;
    let texts: Vec<String> = (0..300).map(|i| format!("text {i}")).collect();
    let req = EmbeddingRequest::texts(&texts).dimensions(3);
    let reply = p.embed(&req).await.unwrap();
    assert_eq!(reply.vectors.len(), 300);
    assert!(reply.vectors.iter().all(|v| v == &[0.0, 1.0, 2.0]));
    let chars: u64 = texts.iter().map(|t| u64::try_from(t.len()).unwrap()).sum();
    assert_eq!(reply.usage.unwrap().input_tokens, chars);
    server.verify().await;
    let requests = server.received_requests().await.unwrap();
    let mut sent = sent_instances(&requests);
    sent.sort_unstable();
    assert_eq!(sent, [50, 250]);
    for r in requests
        .iter()
        .filter(|r| r.url.path().ends_with(":predict"))
    {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["parameters"], json!({"outputDimensionality": 3}));
    }
}

#[tokio::test]
async fn vertex_embedding_errors_classify_as_the_table_says() {
    let server = MockServer::start().await;
    let model = "text-embedding-005";
    // the suite's token endpoint issues the suite's key: the table checks it never shows
    let file = key_file(suite_token_uri(), "TEST-ONLY-private-key.pem");
    let source = tokens(&file, Clock::system()) as Arc<dyn TokenSource>;
    let p = vertex(&server.uri(), model, Some(source), Clock::system());
    let at = format!("{}:predict", model_path("google", model));
    errors_classify(p.as_ref(), &server, &at, "gemini").await;
}

#[tokio::test]
async fn claude_and_token_inputs_are_refused_without_calling() {
    let server = MockServer::start().await;
    let (claude, _) = provider(&server, "claude-sonnet-4@20250514").await;
    let err = claude.embed(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ModelNotFound, "{err}");
    let (gemini, _) = provider(&server, "gemini-embedding-001").await;
    let req = EmbeddingRequest {
        inputs: vec![
            EmbeddingInput::Text("fine".into()),
            EmbeddingInput::Tokens(vec![1, 2]),
        ],
        ..EmbeddingRequest::default()
    };
    let err = gemini.embed(&req).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("token-id inputs"), "{err}");
    assert!(server.received_requests().await.unwrap().is_empty());
}
