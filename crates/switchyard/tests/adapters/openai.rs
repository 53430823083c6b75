//! OpenAI in the shared suite, plus the HTTP behaviour only this adapter has (bearer vs
//! custom key header, organization and extra headers, servers that ignore `stream: true`,
//! the usage grace, body limits, `openai-processing-ms`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchyard::chat::{FinishReason, ImageSource, Role, ToolCall, ToolChoice};
use switchyard::clock::Clock;
use switchyard::provider::http::{HttpSettings, Transport};
use switchyard::provider::openai::{OpenAi, OpenAiConfig};
use switchyard::provider::secret::Secret;
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::{self, RequestView, Turn, VendorHarness, ANSWER, KEY, PROMPT};

/// The OpenAI adapter, configured the way the SDKs are: `base_url` ends in `/v1`.
pub struct Harness;

impl VendorHarness for Harness {
    fn vendor(&self) -> &'static str {
        "openai"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        let config = OpenAiConfig {
            api_key: key,
            clock,
            ..OpenAiConfig::new("gpt-4o-mini").base_url(format!("{server_uri}/v1"))
        };
        Arc::new(OpenAi::new(config, &Transport::default()).unwrap())
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/v1/chat/completions".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/v1/models".to_owned())
    }

    fn view(&self, request: &wiremock::Request) -> RequestView {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let credential = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let mut view = RequestView {
            model: body["model"].as_str().map(str::to_owned),
            max_tokens: body["max_completion_tokens"]
                .as_u64()
                .or_else(|| body["max_tokens"].as_u64())
                .map(|n| u32::try_from(n).unwrap()),
            stream: body["stream"] == json!(true),
            credential,
            tool_choice: tool_choice(&body["tool_choice"]),
            tools: body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect(),
            ..RequestView::default()
        };
        for m in body["messages"].as_array().into_iter().flatten() {
            let (text, images) = content(&m["content"]);
            let role = match m["role"].as_str().unwrap() {
                "system" | "developer" => {
                    view.system = Some(text);
                    continue;
                }
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "tool" => Role::Tool,
                other => panic!("unexpected role {other}"),
            };
            view.turns.push(Turn {
                role,
                text,
                images,
                tool_calls: m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| ToolCall {
                        id: c["id"].as_str().unwrap().to_owned(),
                        name: c["function"]["name"].as_str().unwrap().to_owned(),
                        arguments: c["function"]["arguments"].as_str().unwrap().to_owned(),
                    })
                    .collect(),
                tool_result_for: m["tool_call_id"].as_str().map(str::to_owned),
            });
        }
        view
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let kind = if status >= 500 {
            "server_error"
        } else {
            "invalid_request_error"
        };
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
    }
}

/// A message's text and images.
fn content(content: &Value) -> (String, Vec<ImageSource>) {
    match content {
        Value::String(text) => (text.clone(), Vec::new()),
        Value::Array(parts) => {
            let mut text = String::new();
            let mut images = Vec::new();
            for part in parts {
                match part["type"].as_str() {
                    Some("text") => text.push_str(part["text"].as_str().unwrap()),
                    Some("image_url") => {
                        images.push(image(part["image_url"]["url"].as_str().unwrap()));
                    }
                    other => panic!("unexpected part {other:?}"),
                }
            }
            (text, images)
        }
        _ => (String::new(), Vec::new()),
    }
}

/// A `data:` URL back to base64, anything else as a URL.
fn image(url: &str) -> ImageSource {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"));
    match inline {
        Some((media_type, data)) => ImageSource::Base64 {
            media_type: media_type.to_owned(),
            data: data.to_owned(),
        },
        None => ImageSource::Url {
            url: url.to_owned(),
        },
    }
}

fn tool_choice(value: &Value) -> Option<ToolChoice> {
    match value {
        Value::String(s) if s == "auto" => Some(ToolChoice::Auto),
        Value::String(s) if s == "none" => Some(ToolChoice::None),
        Value::String(s) if s == "required" => Some(ToolChoice::Required),
        Value::Object(_) => Some(ToolChoice::Tool(
            value["function"]["name"].as_str().unwrap().to_owned(),
        )),
        _ => None,
    }
}

fn build(config: OpenAiConfig) -> OpenAi {
    OpenAi::new(config, &Transport::default()).unwrap()
}

fn text_fixture() -> String {
    suite::fixture("openai", "completion_text.json")
}

#[tokio::test]
async fn headers_organization_extras_and_a_trailing_slash() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("openai-organization", "org-switchyard"))
        .and(header("http-referer", "https://example.com/app"))
        .and(header("content-type", "application/json"))
        .and(header("accept", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_fixture(), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let config = OpenAiConfig {
        organization: Some("org-switchyard".into()),
        ..OpenAiConfig::new("gpt-4o-mini")
            .base_url(format!("{}/v1/", server.uri()))
            .api_key(Secret::new(KEY))
            .header("HTTP-Referer", "https://example.com/app")
    };
    let reply = build(config)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    assert_eq!(reply.text, ANSWER);
}

#[tokio::test]
async fn no_key_sends_no_authorization_and_a_custom_key_header_replaces_bearer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_fixture(), "application/json"))
        .expect(2)
        .mount(&server)
        .await;
    let local = OpenAiConfig::new("llama3.2").base_url(format!("{}/v1", server.uri()));
    build(local.clone())
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let azure = OpenAiConfig {
        api_key_header: Some("api-key".into()),
        ..local.api_key(Secret::new(KEY))
    };
    build(azure)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
    assert!(requests[0].headers.get("api-key").is_none());
    assert!(requests[1].headers.get("authorization").is_none());
    assert_eq!(requests[1].headers.get("api-key").unwrap(), KEY);
}

#[tokio::test]
async fn streaming_request_shape_and_a_server_that_ignores_stream() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("accept", "text/event-stream"))
        .and(body_partial_json(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_fixture(), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let (text, _, finish, usage) = suite::assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, Some(suite::answer_usage()));
}

#[tokio::test]
async fn an_html_page_instead_of_a_stream_is_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>captive portal</html>", "text/html"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let Err(err) = p.stream(&ChatRequest::from_prompt(PROMPT)).await else {
        panic!("HTML is not a stream")
    };
    assert_eq!(err.kind, ErrorKind::Malformed);
}

/// Finish but neither usage nor `[DONE]`, connection held open: the stream ends after the
/// grace, without usage.
#[tokio::test]
async fn finish_without_usage_ends_after_the_grace() {
    let body = suite::fixture("openai", "stream_text_open.sse");
    let usage_event = body.trim_end().rsplit("\n\n").next().unwrap().to_owned();
    assert!(usage_event.contains("\"usage\":{"));
    let body = body.replace(&usage_event, ": no usage today");
    let items = crate::raw::with_raw_sse(vec![body.into_bytes()], true, |uri| async move {
        let config = OpenAiConfig {
            usage_grace: Duration::from_millis(50),
            ..OpenAiConfig::new("gpt-4o-mini").base_url(format!("{uri}/v1"))
        };
        suite::collect(
            build(config)
                .stream(&ChatRequest::from_prompt(PROMPT))
                .await
                .unwrap(),
        )
        .await
    })
    .await;
    let (text, _, finish, usage) = suite::assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, None);
}

#[tokio::test]
async fn a_body_past_the_limit_is_malformed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text_fixture(), "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let config = OpenAiConfig {
        http: HttpSettings {
            max_body_bytes: 256,
            ..HttpSettings::default()
        },
        ..OpenAiConfig::new("gpt-4o-mini").base_url(format!("{}/v1", server.uri()))
    };
    let err = build(config)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
}

/// A chunked body (no `content-length`) is counted while it is read: exactly the limit is
/// fine, one byte less is refused.
#[tokio::test]
async fn a_chunked_body_is_counted_against_the_limit() {
    let body = text_fixture().into_bytes();
    for (limit, ok) in [(body.len(), true), (body.len() - 1, false)] {
        let pieces: Vec<Vec<u8>> = body.chunks(100).map(<[u8]>::to_vec).collect();
        let result =
            crate::raw::with_raw_server("application/json", pieces, false, |uri| async move {
                let config = OpenAiConfig {
                    http: HttpSettings {
                        max_body_bytes: limit,
                        ..HttpSettings::default()
                    },
                    ..OpenAiConfig::new("gpt-4o-mini").base_url(format!("{uri}/v1"))
                };
                build(config).send(&ChatRequest::from_prompt(PROMPT)).await
            })
            .await;
        match result {
            Ok(reply) => assert!(ok && reply.text == ANSWER),
            Err(err) => assert!(!ok && err.kind == ErrorKind::Malformed, "{err}"),
        }
    }
}

#[tokio::test]
async fn processing_time_header_is_the_reported_latency() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(text_fixture(), "application/json")
                .insert_header("openai-processing-ms", "321"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.reported_latency, Some(Duration::from_millis(321)));
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(307)
                .insert_header("location", "https://elsewhere.example/v1/chat/completions"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!((err.kind, err.status), (ErrorKind::Server, Some(307)));
}

/// An upstream reporting a 4 MiB (streamed: 1 MiB) model name: the reply and the stream's
/// chunks keep its first 256 bytes, marked cut (`…[+N bytes]`), never the whole name.
#[tokio::test]
async fn a_huge_reported_model_is_cut() {
    let huge = "m".repeat(4 << 20);
    let mut plain: Value = serde_json::from_str(&text_fixture()).unwrap();
    plain["model"] = json!(huge);
    // in every event, 1 MiB each (the stream stays under the body limit)
    let sse = suite::fixture("openai", "stream_text.sse")
        .replace("gpt-4o-mini-2024-07-18", &huge[..1 << 20]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(plain.to_string(), "application/json"),
        )
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let cut = format!("{}…[+{} bytes]", "m".repeat(256), (4 << 20) - 256);
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.model.as_deref(), Some(cut.as_str()));
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let models: Vec<&str> = (items.iter())
        .filter_map(|c| c.as_ref().unwrap().model.as_deref())
        .collect();
    let streamed_cut = format!("{}…[+{} bytes]", "m".repeat(256), (1 << 20) - 256);
    assert!(!models.is_empty());
    assert!(models.iter().all(|m| *m == streamed_cut));
    assert_eq!(suite::assemble(&items).0, ANSWER);
}
