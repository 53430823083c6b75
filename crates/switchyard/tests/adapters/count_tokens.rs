//! `Provider::count_tokens`: Anthropic's `POST {base}/v1/messages/count_tokens` with the
//! provider's key, version, model and the client's betas; its errors classified with the key
//! scrubbed; every other vendor refuses without a call.

use serde_json::json;
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use switchyard::provider::secret::Secret;
use switchyard::{ErrorKind, Provider};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::KEY;

fn claude(uri: &str) -> Anthropic {
    let config = AnthropicConfig::new("claude-sonnet-4-5")
        .base_url(format!("{uri}/"))
        .api_key(Secret::new(KEY));
    Anthropic::new(config, &Transport::default()).unwrap()
}

#[tokio::test]
async fn anthropic_counts_with_its_model_key_and_the_clients_betas() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages/count_tokens"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("anthropic-beta", "context-management-2025-06-27"))
        .and(body_partial_json(
            json!({"model": "claude-sonnet-4-5", "system": "be brief"}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 1234})))
        .expect(1)
        .mount(&server)
        .await;
    let body = json!({"model": "my-route", "system": "be brief",
                      "messages": [{"role": "user", "content": "hi"}]});
    let n = claude(&server.uri())
        .count_tokens(&body, Some("context-management-2025-06-27"))
        .await
        .unwrap();
    assert_eq!(n, 1234);
}

#[tokio::test]
async fn count_errors_are_classified_and_never_carry_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages/count_tokens"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "type": "error",
            "error": {"type": "authentication_error", "message": format!("invalid x-api-key {KEY}")}})))
        .mount(&server)
        .await;
    let body = json!({"model": "r", "messages": []});
    let err = claude(&server.uri())
        .count_tokens(&body, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(!err.message.contains(KEY), "{}", err.message);

    // a 200 without a count is malformed, not zero
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages/count_tokens"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"tokens": 5})))
        .mount(&server)
        .await;
    let err = claude(&server.uri())
        .count_tokens(&body, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}

#[tokio::test]
async fn other_vendors_cannot_count() {
    let server = MockServer::start().await;
    let openai = OpenAi::new(
        OpenAiConfig::new("gpt-4o-mini").base_url(format!("{}/v1", server.uri())),
        &Transport::default(),
    )
    .unwrap();
    let err = openai
        .count_tokens(&json!({"model": "r"}), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("openai"), "{}", err.message);
    assert!(server.received_requests().await.unwrap().is_empty());
}
