//! Azure OpenAI in the shared suite (the OpenAI fixtures: Azure speaks Chat Completions),
//! both path styles and both auth styles, plus what only Azure does: `api-version` on the
//! classic path only, `api-key` vs `Authorization: Bearer`, the Entra token file re-read
//! after it changes, the content filter over HTTP and `x-ms-retry-after-ms`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard::clock::Clock;
use switchyard::provider::azure::entra::TokenFile;
use switchyard::provider::azure::{Azure, AzureAuth, AzureConfig, AzureResponses};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::suite::{fixture, RequestView, VendorHarness, KEY, PROMPT};

const DEPLOYMENT: &str = "gpt-4o-prod";
const VERSION: &str = "2024-10-21";

/// The v1 GA path with an `api-key`.
pub struct V1Harness;

/// The classic deployments path with an Entra token read from a file.
pub struct ClassicHarness;

/// A fresh file holding `token`, in a directory of its own.
fn token_file(token: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("switchyard-azure-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("token");
    std::fs::write(&path, token).unwrap();
    path
}

fn build(config: AzureConfig) -> Arc<dyn Provider> {
    Arc::new(Azure::new(config, &Transport::default()).unwrap())
}

impl VendorHarness for V1Harness {
    fn vendor(&self) -> &'static str {
        "openai"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        build(AzureConfig {
            auth: key.map_or(AzureAuth::None, AzureAuth::ApiKey),
            clock,
            ..AzureConfig::new(server_uri, DEPLOYMENT, "v1")
        })
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/openai/v1/chat/completions".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/openai/v1/models".to_owned())
    }

    fn view(&self, request: &Request) -> RequestView {
        assert_eq!(
            request.url.query(),
            None,
            "the v1 path takes no api-version"
        );
        assert!(request.headers.get("authorization").is_none());
        let mut view = crate::openai::Harness.view(request);
        view.credential = request
            .headers
            .get("api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        view
    }

    fn error_body(&self, status: u16, message: &str) -> serde_json::Value {
        crate::openai::Harness.error_body(status, message)
    }
}

impl VendorHarness for ClassicHarness {
    fn vendor(&self) -> &'static str {
        "openai"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        let auth = key.map_or(AzureAuth::None, |key| {
            let file = TokenFile::new(token_file(key.expose()), Duration::from_secs(10));
            AzureAuth::TokenFile(Arc::new(file))
        });
        build(AzureConfig {
            auth,
            clock,
            ..AzureConfig::new(server_uri, DEPLOYMENT, VERSION)
        })
    }

    fn completion_path(&self, _stream: bool) -> String {
        format!("/openai/deployments/{DEPLOYMENT}/chat/completions")
    }

    fn health_path(&self) -> Option<String> {
        Some("/openai/models".to_owned())
    }

    fn view(&self, request: &Request) -> RequestView {
        assert_eq!(
            request.url.query(),
            Some(format!("api-version={VERSION}").as_str())
        );
        assert!(request.headers.get("api-key").is_none());
        // the bearer credential, as OpenAI's view reads it
        crate::openai::Harness.view(request)
    }

    fn error_body(&self, status: u16, message: &str) -> serde_json::Value {
        crate::openai::Harness.error_body(status, message)
    }
}

/// The classic path with a token file: a token written to the file reaches the next call
/// once the file is looked at again (here at every call: recheck zero).
#[tokio::test]
async fn a_rewritten_token_file_is_sent_on_the_next_call() {
    let server = MockServer::start().await;
    let completion = format!("/openai/deployments/{DEPLOYMENT}/chat/completions");
    for token in ["entra-token-one", "entra-token-number-two"] {
        Mock::given(method("POST"))
            .and(path(completion.clone()))
            .and(query_param("api-version", VERSION))
            .and(header("authorization", format!("Bearer {token}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_raw(
                fixture("openai", "completion_text.json"),
                "application/json",
            ))
            .expect(1)
            .mount(&server)
            .await;
    }
    let path = token_file("entra-token-one");
    let file = Arc::new(TokenFile::new(&path, Duration::ZERO));
    let p = build(AzureConfig {
        auth: AzureAuth::TokenFile(file),
        ..AzureConfig::new(server.uri(), DEPLOYMENT, VERSION)
    });
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    std::fs::write(&path, "entra-token-number-two").unwrap();
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    server.verify().await;
}

/// A token given as is goes as `Authorization: Bearer`, never as `api-key`.
#[tokio::test]
async fn an_entra_token_is_a_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("openai", "completion_text.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let p = build(AzureConfig {
        auth: AzureAuth::Token(Secret::new(KEY)),
        ..AzureConfig::new(server.uri(), DEPLOYMENT, "v1")
    });
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    let sent = &server.received_requests().await.unwrap()[0];
    assert!(sent.headers.get("api-key").is_none());
    let body: serde_json::Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body["model"], DEPLOYMENT,
        "v1 names the deployment as the model"
    );
}

/// Azure's content filter over HTTP: the prompt refused (400, inner
/// `ResponsibleAIPolicyViolation`), and a stream filtered before its first word.
#[tokio::test]
async fn content_filter_both_ways() {
    let server = MockServer::start().await;
    let refused = json!({"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"self_harm": {"filtered": true, "severity": "medium"}}}}});
    Mock::given(method("POST"))
        .and(path("/openai/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(400).set_body_json(refused))
        .with_priority(2)
        .expect(1)
        .mount(&server)
        .await;
    let stream = concat!(
        "data: {\"id\":\"\",\"choices\":[],\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\",\"content_filter_results\":{\"violence\":{\"filtered\":true,\"severity\":\"high\"}}}]}\n\n",
        "data: [DONE]\n\n"
    );
    Mock::given(method("POST"))
        .and(path("/openai/v1/chat/completions"))
        .and(wiremock::matchers::body_partial_json(
            json!({"stream": true}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(stream, "text/event-stream"))
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    let p = V1Harness.provider(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered, "{err}");
    assert_eq!(err.status, Some(400));
    let items =
        crate::suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let err = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered, "{err}");
    server.verify().await;
}

/// A 429 with `x-ms-retry-after-ms` waits that long (finer than its `retry-after`).
#[tokio::test]
async fn x_ms_retry_after_ms_is_honoured() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/openai/deployments/{DEPLOYMENT}/chat/completions")))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "2")
                .insert_header("x-ms-retry-after-ms", "1250")
                .set_body_json(json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier."}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let p = ClassicHarness.provider(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.retry_after, Some(Duration::from_millis(1250)));
    server.verify().await;
}

/// Embeddings on both paths, through the OpenAI embeddings codec.
#[tokio::test]
async fn embeddings_on_both_paths() {
    let server = MockServer::start().await;
    let answer = json!({"object": "list", "model": "text-embedding-3-small",
        "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
        "usage": {"prompt_tokens": 3, "total_tokens": 3}});
    Mock::given(method("POST"))
        .and(path("/openai/v1/embeddings"))
        .and(header("api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer.clone()))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/emb/embeddings"))
        .and(query_param("api-version", VERSION))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .expect(1)
        .mount(&server)
        .await;
    let req = switchyard::EmbeddingRequest::texts(&["hi"]);
    for version in ["v1", VERSION] {
        let p = build(AzureConfig {
            auth: AzureAuth::ApiKey(Secret::new(KEY)),
            ..AzureConfig::new(server.uri(), "emb", version)
        });
        let reply = p.embed(&req).await.unwrap();
        assert_eq!(reply.vectors, [vec![0.5, -0.25]]);
    }
    server.verify().await;
}

/// The Responses API on the v1 path (`api = "responses"`) with an `api-key`.
pub struct ResponsesV1Harness;

/// The Responses API on the classic path (`/openai/responses?api-version=…`, no deployment
/// segment) with an Entra token given as is.
pub struct ResponsesClassicHarness;

const RESPONSES_VERSION: &str = "2025-04-01-preview";

fn build_responses(config: AzureConfig) -> Arc<dyn Provider> {
    Arc::new(AzureResponses::new(config, &Transport::default()).unwrap())
}

impl VendorHarness for ResponsesV1Harness {
    fn vendor(&self) -> &'static str {
        "openai_responses"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        build_responses(AzureConfig {
            auth: key.map_or(AzureAuth::None, AzureAuth::ApiKey),
            clock,
            ..AzureConfig::new(server_uri, DEPLOYMENT, "v1")
        })
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/openai/v1/responses".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/openai/v1/models".to_owned())
    }

    fn view(&self, request: &Request) -> RequestView {
        assert_eq!(
            request.url.query(),
            None,
            "the v1 path takes no api-version"
        );
        assert!(request.headers.get("authorization").is_none());
        let mut view = crate::openai_responses::Harness.view(request);
        view.credential = request
            .headers
            .get("api-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        view
    }

    fn error_body(&self, status: u16, message: &str) -> serde_json::Value {
        crate::openai_responses::Harness.error_body(status, message)
    }
}

impl VendorHarness for ResponsesClassicHarness {
    fn vendor(&self) -> &'static str {
        "openai_responses"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        build_responses(AzureConfig {
            auth: key.map_or(AzureAuth::None, AzureAuth::Token),
            clock,
            ..AzureConfig::new(server_uri, DEPLOYMENT, RESPONSES_VERSION)
        })
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/openai/responses".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/openai/models".to_owned())
    }

    fn view(&self, request: &Request) -> RequestView {
        assert_eq!(
            request.url.query(),
            Some(format!("api-version={RESPONSES_VERSION}").as_str())
        );
        assert!(request.headers.get("api-key").is_none());
        // the bearer credential, as the Responses view reads it
        crate::openai_responses::Harness.view(request)
    }

    fn error_body(&self, status: u16, message: &str) -> serde_json::Value {
        crate::openai_responses::Harness.error_body(status, message)
    }
}

/// A `/v1/responses` request's own body goes to an Azure Responses provider as written
/// (built-in tools and all), with the deployment as its `model`, on both path styles; the
/// answer keeps the upstream's output items for the Responses dialect.
#[tokio::test]
async fn a_native_responses_body_goes_as_written_on_both_paths() {
    use switchyard::chat::Native;
    use switchyard::provider::openai::responses::NATIVE_KIND;
    use wiremock::matchers::body_json;

    let client = json!({
        "model": "route",
        "input": [{"role": "user", "content": "Any news?"}],
        "tools": [{"type": "web_search"}],
        "include": ["reasoning.encrypted_content"],
    });
    let want = json!({
        "model": DEPLOYMENT,
        "input": [{"role": "user", "content": "Any news?"}],
        "tools": [{"type": "web_search"}],
        "include": ["reasoning.encrypted_content"],
        "stream": false,
    });
    let output = json!([
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "news"}},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Quiet day.", "annotations": []}]},
    ]);
    let answer = json!({"id": "resp_up", "object": "response", "status": "completed",
        "model": DEPLOYMENT, "output": output,
        "usage": {"input_tokens": 9, "output_tokens": 3}});
    for (version, route, auth) in [
        ("v1", "/openai/v1/responses", ("api-key", KEY.to_owned())),
        (
            RESPONSES_VERSION,
            "/openai/responses",
            ("authorization", format!("Bearer {KEY}")),
        ),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(route))
            .and(header(auth.0, auth.1.as_str()))
            .and(body_json(&want))
            .respond_with(ResponseTemplate::new(200).set_body_json(&answer))
            .expect(1)
            .mount(&server)
            .await;
        let secret = Secret::new(KEY);
        let p = build_responses(AzureConfig {
            auth: if version == "v1" {
                AzureAuth::ApiKey(secret)
            } else {
                AzureAuth::Token(secret)
            },
            ..AzureConfig::new(server.uri(), DEPLOYMENT, version)
        });
        assert_eq!(p.native_kind(), Some(NATIVE_KIND));
        assert_eq!(p.kind(), "azure");
        let req = ChatRequest {
            native: Some(Native::new(NATIVE_KIND, client.clone()).required(true)),
            ..ChatRequest::from_prompt("Any news?")
        };
        let reply = p.send(&req).await.unwrap();
        assert_eq!(reply.text, "Quiet day.");
        let kept = reply.native.expect("the upstream's response kept");
        assert_eq!(kept["output"][0]["type"], "web_search_call");
        server.verify().await;
    }
}

/// The Responses API's content filter: an answer withheld entirely (`incomplete`, reason
/// `content_filter`, no output) is a `content_filtered` error, as on the chat path.
#[tokio::test]
async fn a_withheld_responses_answer_is_content_filtered() {
    let server = MockServer::start().await;
    let withheld = json!({"id": "resp_f", "object": "response", "status": "incomplete",
        "incomplete_details": {"reason": "content_filter"}, "model": DEPLOYMENT,
        "output": [], "usage": {"input_tokens": 9, "output_tokens": 0}});
    Mock::given(method("POST"))
        .and(path("/openai/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(withheld))
        .expect(1)
        .mount(&server)
        .await;
    let p = build_responses(AzureConfig {
        auth: AzureAuth::ApiKey(Secret::new(KEY)),
        ..AzureConfig::new(server.uri(), DEPLOYMENT, "v1")
    });
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered, "{err}");
}
