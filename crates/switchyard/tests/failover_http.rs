//! The gateway failing over across real HTTP adapters, against wiremock vendors: Anthropic
//! overloaded → OpenAI answers; OpenAI 429 with Retry-After → waits (short) or fails over
//! (long); a 401 opens the circuit at once and the next request skips the provider.
//! Over real sockets these tests assert on conduct (who was called, how often), never on
//! durations.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
use switchyard::provider::gemini::{Gemini, GeminiConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use switchyard::provider::secret::Secret;
use switchyard::retry::RetryPolicy;
use switchyard::{Gateway, ProviderSpec, Route};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(vendor: &str, name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/{vendor}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn anthropic(server: &MockServer) -> ProviderSpec {
    let cfg = AnthropicConfig::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key(Secret::new("sk-ant-test"));
    let p = Anthropic::new(cfg, &Transport::default()).unwrap();
    ProviderSpec::new("claude", Arc::new(p))
}

fn openai(server: &MockServer) -> ProviderSpec {
    let cfg = OpenAiConfig::new("gpt-4o-mini")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(Secret::new("sk-test"));
    let p = OpenAi::new(cfg, &Transport::default()).unwrap();
    ProviderSpec::new("gpt", Arc::new(p))
}

fn gemini(server: &MockServer) -> ProviderSpec {
    let cfg = GeminiConfig::new("gemini-2.5-flash")
        .base_url(format!("{}/v1beta", server.uri()))
        .api_key(Secret::new("goog-test"));
    let p = Gemini::new(cfg, &Transport::default()).unwrap();
    ProviderSpec::new("gemini", Arc::new(p))
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
    }
}

async fn openai_answers(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("openai", "completion_text.json"),
            "application/json",
        ))
        .mount(server)
        .await;
}

fn calls(requests: &[wiremock::Request]) -> usize {
    requests.len()
}

#[tokio::test]
async fn anthropic_overloaded_fails_over_to_openai() {
    let (claude, gpt) = (MockServer::start().await, MockServer::start().await);
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(529).set_body_json(overloaded))
        .mount(&claude)
        .await;
    openai_answers(&gpt).await;
    let gw = Gateway::builder()
        .provider(anthropic(&claude))
        .provider(openai(&gpt))
        .route(Route::new("smart", &["claude", "gpt"]).retry(retry()))
        .build()
        .unwrap();
    let reply = gw.complete("hello").await.unwrap();
    assert_eq!(reply.provider, "gpt");
    assert!(reply.failed_over);
    let labels: Vec<_> = reply.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(
        labels,
        ["failed:overloaded", "failed:overloaded", "success"],
        "overloaded is retried once, then failed over"
    );
    assert_eq!(reply.attempts[0].status, Some(529));
    assert_eq!(calls(&claude.received_requests().await.unwrap()), 2);
    assert!(
        reply.usage.unwrap().input_tokens > 0,
        "usage comes from the fallback's response"
    );
}

#[tokio::test]
async fn rate_limit_with_a_short_retry_after_waits_and_retries() {
    let gpt = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after-ms", "200")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})),
        )
        .up_to_n_times(1)
        .mount(&gpt)
        .await;
    openai_answers(&gpt).await;
    let backup = MockServer::start().await;
    let gw = Gateway::builder()
        .provider(openai(&gpt))
        .provider(gemini(&backup))
        .route(Route::new("smart", &["gpt", "gemini"]).retry(retry()))
        .build()
        .unwrap();
    let reply = gw.complete("hello").await.unwrap();
    assert_eq!(reply.provider, "gpt", "the retry after the wait succeeded");
    assert_eq!(reply.attempts[0].outcome.label(), "failed:rate_limited");
    assert_eq!(calls(&gpt.received_requests().await.unwrap()), 2);
    assert!(backup.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn rate_limit_with_a_long_retry_after_fails_over_now_and_cools_the_provider() {
    let (gpt, goog) = (MockServer::start().await, MockServer::start().await);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "120")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})),
        )
        .mount(&gpt)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-flash:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("gemini", "completion_text.json"),
            "application/json",
        ))
        .mount(&goog)
        .await;
    let gw = Gateway::builder()
        .provider(openai(&gpt))
        .provider(gemini(&goog))
        .route(Route::new("smart", &["gpt", "gemini"]).retry(retry()))
        .build()
        .unwrap();
    let reply = gw.complete("hello").await.unwrap();
    assert_eq!(reply.provider, "gemini");
    assert_eq!(
        calls(&gpt.received_requests().await.unwrap()),
        1,
        "a 120 s wait does not fit: fail over at once"
    );
    // the provider asked for 120 s: it is skipped until then
    let next = gw.complete("again").await.unwrap();
    assert_eq!(next.attempts[0].outcome.label(), "skipped:cooling");
    assert_eq!(calls(&gpt.received_requests().await.unwrap()), 1);
}

#[tokio::test]
async fn unauthorized_opens_the_circuit_at_once() {
    let (gpt, claude) = (MockServer::start().await, MockServer::start().await);
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": "Incorrect API key provided: sk-test.", "type": "invalid_request_error", "code": "invalid_api_key"}}),
        ))
        .mount(&gpt)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("anthropic", "completion_text.json"),
            "application/json",
        ))
        .mount(&claude)
        .await;
    let gw = Gateway::builder()
        .provider(openai(&gpt))
        .provider(anthropic(&claude))
        .route(Route::new("smart", &["gpt", "claude"]).retry(retry()))
        .build()
        .unwrap();
    let first = gw.complete("one").await.unwrap();
    assert_eq!(first.provider, "claude");
    assert_eq!(first.attempts[0].outcome.label(), "failed:auth");
    assert!(
        !format!("{:?}", first.attempts).contains("sk-test"),
        "the key never appears in the trail"
    );
    assert_eq!(gw.health_states().await["gpt"], "auth_failed");
    let second = gw.complete("two").await.unwrap();
    assert_eq!(second.attempts[0].outcome.label(), "skipped:circuit_open");
    assert_eq!(
        calls(&gpt.received_requests().await.unwrap()),
        1,
        "not called again"
    );
}
