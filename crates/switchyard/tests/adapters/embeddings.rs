//! Embeddings calls over HTTP: OpenAI's `/embeddings` and Gemini's `batchEmbedContents`
//! against a mock that checks what the vendor checks (path, key header, body), every row
//! of each vendor's error table classified on the embeddings endpoint too, and the key
//! never in an error.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::embedding::{EmbeddingInput, EmbeddingRequest};
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::gemini::{Gemini, GeminiConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use switchyard::provider::secret::Secret;
use switchyard::{ErrorKind, Provider};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::KEY;

const OPENAI_MODEL: &str = "text-embedding-3-small";
const OPENAI_PATH: &str = "/v1/embeddings";
const GEMINI_MODEL: &str = "gemini-embedding-001";
const GEMINI_PATH: &str = "/v1beta/models/gemini-embedding-001:batchEmbedContents";

fn openai(server: &MockServer) -> Arc<dyn Provider> {
    let config = OpenAiConfig {
        api_key: Some(Secret::new(KEY)),
        clock: Clock::system(),
        ..OpenAiConfig::new(OPENAI_MODEL).base_url(format!("{}/v1", server.uri()))
    };
    Arc::new(OpenAi::new(config, &Transport::default()).unwrap())
}

fn gemini(server: &MockServer) -> Arc<dyn Provider> {
    let config = GeminiConfig {
        api_key: Some(Secret::new(KEY)),
        ..GeminiConfig::new(GEMINI_MODEL).base_url(format!("{}/v1beta", server.uri()))
    };
    Arc::new(Gemini::new(config, &Transport::default()).unwrap())
}

pub(crate) fn request() -> EmbeddingRequest {
    EmbeddingRequest {
        user: Some("user-7".to_owned()),
        ..EmbeddingRequest::texts(&["first text", "second"]).dimensions(2)
    }
}

#[tokio::test]
async fn openai_posts_the_documented_body_and_orders_vectors_by_index() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(OPENAI_PATH))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(body_json(json!({
            "model": OPENAI_MODEL,
            "input": ["first text", "second"],
            "encoding_format": "float",
            "dimensions": 2,
            "user": "user-7",
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list",
            "data": [
                {"object": "embedding", "index": 1, "embedding": [0.5, -0.25]},
                {"object": "embedding", "index": 0, "embedding": [0.125, 1.0]},
            ],
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 5, "total_tokens": 5},
        })))
        .expect(1)
        .mount(&server)
        .await;
    let reply = openai(&server).embed(&request()).await.unwrap();
    assert_eq!(reply.vectors, [vec![0.125, 1.0], vec![0.5, -0.25]]);
    assert_eq!(reply.model.as_deref(), Some(OPENAI_MODEL));
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (5, 0));
}

#[tokio::test]
async fn openai_sends_token_arrays_as_arrays() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(OPENAI_PATH))
        .and(body_json(json!({
            "model": OPENAI_MODEL,
            "input": [[1, 2, 3], [4]],
            "encoding_format": "float",
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [
                {"index": 0, "embedding": [1.0]},
                {"index": 1, "embedding": [2.0]},
            ],
            "usage": {"prompt_tokens": 4, "total_tokens": 4},
        })))
        .expect(1)
        .mount(&server)
        .await;
    let req = EmbeddingRequest {
        inputs: vec![
            EmbeddingInput::Tokens(vec![1, 2, 3]),
            EmbeddingInput::Tokens(vec![4]),
        ],
        ..EmbeddingRequest::default()
    };
    let reply = openai(&server).embed(&req).await.unwrap();
    assert_eq!(reply.vectors, [vec![1.0], vec![2.0]]);
}

#[tokio::test]
async fn a_compatible_server_without_indices_answers_in_list_order() {
    let server = MockServer::start().await;
    Mock::given(path(OPENAI_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": [{"embedding": [1.0]}, {"embedding": [2.0]}],
        })))
        .mount(&server)
        .await;
    let reply = openai(&server).embed(&request()).await.unwrap();
    assert_eq!(reply.vectors, [vec![1.0], vec![2.0]]);
    assert_eq!(reply.usage, None);
}

#[tokio::test]
async fn openai_replies_that_are_not_embeddings_are_malformed_or_classified() {
    let server = MockServer::start().await;
    let provider = openai(&server);
    for (body, kind) in [
        (
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}),
            ErrorKind::Malformed,
        ),
        (json!({"object": "list"}), ErrorKind::Malformed),
        (
            json!({"data": [{"index": 1, "embedding": [1.0]}, {"embedding": [2.0]}]}),
            ErrorKind::Malformed,
        ),
        (
            json!({"error": {"message": "The server had an error", "type": "server_error", "code": null}}),
            ErrorKind::Server,
        ),
    ] {
        server.reset().await;
        Mock::given(path(OPENAI_PATH))
            .respond_with(ResponseTemplate::new(200).set_body_json(&body))
            .mount(&server)
            .await;
        let err = provider.embed(&request()).await.unwrap_err();
        assert_eq!(err.kind, kind, "{body}: {err}");
    }
}

#[tokio::test]
async fn gemini_posts_one_request_per_input_naming_the_model() {
    let server = MockServer::start().await;
    let one = |text: &str| {
        json!({
            "model": "models/gemini-embedding-001",
            "content": {"parts": [{"text": text}]},
            "outputDimensionality": 2,
        })
    };
    Mock::given(method("POST"))
        .and(path(GEMINI_PATH))
        .and(header("x-goog-api-key", KEY))
        .and(body_json(
            json!({"requests": [one("first text"), one("second")]}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "embeddings": [{"values": [0.25, 0.5]}, {"values": [-1.0, 0.0]}],
        })))
        .expect(1)
        .mount(&server)
        .await;
    let reply = gemini(&server).embed(&request()).await.unwrap();
    assert_eq!(reply.vectors, [vec![0.25, 0.5], vec![-1.0, 0.0]]);
    assert_eq!(
        reply.usage, None,
        "the Gemini API reports no usage for embeddings"
    );
    let requests = server.received_requests().await.unwrap();
    assert!(!requests[0].url.as_str().contains(KEY));
}

#[tokio::test]
async fn gemini_refuses_token_inputs_without_calling() {
    let server = MockServer::start().await;
    let req = EmbeddingRequest {
        inputs: vec![EmbeddingInput::Tokens(vec![1, 2])],
        ..EmbeddingRequest::default()
    };
    let err = gemini(&server).embed(&req).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("token-id inputs"), "{err}");
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_vendor_without_embeddings_refuses_without_calling() {
    let server = MockServer::start().await;
    let config = AnthropicConfig::new("claude-sonnet-4-5").base_url(server.uri());
    let anthropic = Anthropic::new(config, &Transport::default()).unwrap();
    let err = anthropic.embed(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ModelNotFound);
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// Every row of the vendor's error table, answered on the embeddings endpoint, with the
/// key echoed into the message: classified as the table says, the key never in the error.
pub(crate) async fn errors_classify(
    provider: &dyn Provider,
    server: &MockServer,
    at: &str,
    vendor: &str,
) {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/{vendor}/errors.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(rows.len() > 10);
    for row in rows {
        let mut body = row["body"].clone();
        if let Some(m) = body.pointer_mut("/error/message") {
            *m = json!(format!("{} (key {KEY})", m.as_str().unwrap_or_default()));
        }
        let mut response =
            ResponseTemplate::new(u16::try_from(row["status"].as_u64().unwrap()).unwrap())
                .set_body_json(&body);
        for (name, value) in row["headers"].as_object().into_iter().flatten() {
            response = response.insert_header(name.as_str(), value.as_str().unwrap());
        }
        server.reset().await;
        Mock::given(path(at))
            .respond_with(response)
            .mount(server)
            .await;
        let err = provider.embed(&request()).await.unwrap_err();
        let want: ErrorKind = serde_json::from_value(row["kind"].clone()).unwrap();
        assert_eq!(err.kind, want, "{}: {err}", row["name"]);
        assert!(
            !err.to_string().contains(KEY),
            "{}: key in {err}",
            row["name"]
        );
        assert!(!format!("{err:?}").contains(KEY), "{}", row["name"]);
    }
}

#[tokio::test]
async fn openai_embedding_errors_classify_as_the_table_says() {
    let server = MockServer::start().await;
    errors_classify(openai(&server).as_ref(), &server, OPENAI_PATH, "openai").await;
}

#[tokio::test]
async fn gemini_embedding_errors_classify_as_the_table_says() {
    let server = MockServer::start().await;
    errors_classify(gemini(&server).as_ref(), &server, GEMINI_PATH, "gemini").await;
}
