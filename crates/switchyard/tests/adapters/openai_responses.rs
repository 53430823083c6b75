//! OpenAI providers that speak the Responses API upstream (`api = "responses"`) in the
//! shared suite, plus what only they do: the exact body, a native body sent as written,
//! and a built-in tool's output items kept for the Responses dialect, plain and streamed.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::chat::{ImageSource, Native, Role, ToolCall, ToolChoice};
use switchyard::clock::Clock;
use switchyard::provider::http::Transport;
use switchyard::provider::openai::responses::{OpenAiResponses, NATIVE_KIND};
use switchyard::provider::openai::OpenAiConfig;
use switchyard::provider::secret::Secret;
use switchyard::{ChatRequest, Provider};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::{self, RequestView, Turn, VendorHarness, KEY};

/// The Responses adapter, configured the way the SDKs are: `base_url` ends in `/v1`.
pub struct Harness;

impl VendorHarness for Harness {
    fn vendor(&self) -> &'static str {
        "openai_responses"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        Arc::new(build(server_uri, key, clock))
    }

    fn completion_path(&self, _stream: bool) -> String {
        "/v1/responses".to_owned()
    }

    fn health_path(&self) -> Option<String> {
        Some("/v1/models".to_owned())
    }

    fn view(&self, request: &wiremock::Request) -> RequestView {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if !body.is_null() {
            assert_eq!(
                body["store"],
                json!(false),
                "the gateway keeps conversations"
            );
        }
        let credential = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned);
        let mut view = RequestView {
            model: body["model"].as_str().map(str::to_owned),
            system: body["instructions"].as_str().map(str::to_owned),
            max_tokens: body["max_output_tokens"]
                .as_u64()
                .map(|n| u32::try_from(n).unwrap()),
            stream: body["stream"] == json!(true),
            credential,
            tool_choice: tool_choice(&body["tool_choice"]),
            tools: body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect(),
            ..RequestView::default()
        };
        for item in body["input"].as_array().into_iter().flatten() {
            match item["type"].as_str() {
                Some("function_call") => {
                    let call = ToolCall {
                        id: item["call_id"].as_str().unwrap().to_owned(),
                        name: item["name"].as_str().unwrap().to_owned(),
                        arguments: item["arguments"].as_str().unwrap().to_owned(),
                    };
                    match view.turns.last_mut() {
                        Some(t) if t.role == Role::Assistant => t.tool_calls.push(call),
                        _ => view.turns.push(Turn {
                            tool_calls: vec![call],
                            ..Turn::text(Role::Assistant, "")
                        }),
                    }
                }
                Some("function_call_output") => {
                    let (text, images) = content(&item["output"]);
                    view.turns.push(Turn {
                        images,
                        tool_result_for: item["call_id"].as_str().map(str::to_owned),
                        ..Turn::text(Role::Tool, &text)
                    });
                }
                Some("message") => {
                    let (text, images) = content(&item["content"]);
                    let role = match item["role"].as_str().unwrap() {
                        "system" | "developer" => {
                            view.system = Some(text);
                            continue;
                        }
                        "user" => Role::User,
                        "assistant" => Role::Assistant,
                        other => panic!("unexpected role {other}"),
                    };
                    view.turns.push(Turn {
                        images,
                        ..Turn::text(role, &text)
                    });
                }
                other => panic!("unexpected input item {other:?}"),
            }
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

fn build(server_uri: &str, key: Option<Secret>, clock: Clock) -> OpenAiResponses {
    let config = OpenAiConfig {
        api_key: key,
        clock,
        ..OpenAiConfig::new("gpt-4o-mini").base_url(format!("{server_uri}/v1"))
    };
    OpenAiResponses::new(config, &Transport::default()).unwrap()
}

/// A message's (or an output's) text and images.
fn content(content: &Value) -> (String, Vec<ImageSource>) {
    match content {
        Value::String(text) => (text.clone(), Vec::new()),
        Value::Array(parts) => {
            let mut text = String::new();
            let mut images = Vec::new();
            for part in parts {
                match part["type"].as_str() {
                    Some("input_text" | "output_text") => {
                        text.push_str(part["text"].as_str().unwrap());
                    }
                    Some("input_image") => images.push(image(part["image_url"].as_str().unwrap())),
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
        Value::Object(_) => Some(ToolChoice::Tool(value["name"].as_str().unwrap().to_owned())),
        _ => None,
    }
}

/// A shared-shape request reaches the vendor as exactly this body.
#[tokio::test]
async fn the_exact_upstream_body() {
    let server = MockServer::start().await;
    let want = json!({
        "model": "gpt-4o-mini",
        "instructions": "Answer briefly.",
        "input": [{"type": "message", "role": "user", "content": suite::PROMPT}],
        "max_output_tokens": 100,
        "store": false,
        "stream": false,
    });
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(body_json(&want))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            suite::fixture("openai_responses", "completion_text.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let p = build(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    let mut req = ChatRequest::from_prompt(suite::PROMPT).with_max_tokens(100);
    req.messages
        .insert(0, switchyard::Message::system("Answer briefly."));
    let reply = p.send(&req).await.unwrap();
    assert_eq!(reply.text, suite::ANSWER);
    assert!(
        reply.native.is_none(),
        "a shared-shape request keeps no native answer"
    );
}

/// The client's Responses body with a built-in tool.
fn native_request() -> ChatRequest {
    let client = json!({
        "model": "route",
        "input": [{"role": "user", "content": "Any news?"}],
        "tools": [{"type": "web_search"}],
        "include": ["reasoning.encrypted_content"],
    });
    ChatRequest {
        native: Some(Native::new(NATIVE_KIND, client).required(true)),
        ..ChatRequest::from_prompt("Any news?")
    }
}

fn searched() -> Value {
    json!([
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "news"}},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Quiet day.", "annotations": []}]},
    ])
}

/// A native body goes as written (built-in tools included); the answer keeps the
/// upstream's output items.
#[tokio::test]
async fn a_native_body_and_its_built_in_items() {
    let server = MockServer::start().await;
    let want = json!({
        "model": "gpt-4o-mini",
        "input": [{"role": "user", "content": "Any news?"}],
        "tools": [{"type": "web_search"}],
        "include": ["reasoning.encrypted_content"],
        "stream": false,
    });
    let answer = json!({"id": "resp_up", "object": "response", "status": "completed",
        "model": "gpt-4o-mini", "output": searched(),
        "usage": {"input_tokens": 9, "output_tokens": 3}});
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_json(&want))
        .respond_with(ResponseTemplate::new(200).set_body_json(&answer))
        .expect(1)
        .mount(&server)
        .await;
    let p = build(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    assert_eq!(p.native_kind(), Some(NATIVE_KIND));
    let reply = p.send(&native_request()).await.unwrap();
    assert_eq!(reply.text, "Quiet day.");
    assert_eq!(reply.usage.unwrap().output_tokens, 3);
    assert_eq!(reply.native.unwrap()["output"], searched());
}

/// Streamed: the built-in item's events come through as native pieces, the text as text,
/// and the finish chunk carries the final response.
#[tokio::test]
async fn a_native_stream_passes_built_in_items_on() {
    let events = [
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_up", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
            "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.completed", "sequence_number": 2, "output_index": 0, "item_id": "ws_1"}),
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": searched()[0]}),
        json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 1,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 5, "output_index": 1, "item_id": "msg_1", "content_index": 0, "delta": "Quiet day."}),
        json!({"type": "response.completed", "sequence_number": 6, "response": {"id": "resp_up", "object": "response",
            "status": "completed", "model": "gpt-4o-mini", "output": searched(),
            "usage": {"input_tokens": 9, "output_tokens": 3}}}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let p = build(&server.uri(), Some(Secret::new(KEY)), Clock::system());
    let items = suite::collect(p.stream(&native_request()).await.unwrap()).await;
    let chunks: Vec<_> = items.into_iter().map(Result::unwrap).collect();
    let natives: Vec<&str> = chunks
        .iter()
        .filter(|c| c.finish_reason.is_none())
        .filter_map(|c| c.native.as_ref()?["type"].as_str())
        .collect();
    assert_eq!(
        natives,
        [
            "response.output_item.added",
            "response.web_search_call.completed",
            "response.output_item.done"
        ]
    );
    let text: String = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(text, "Quiet day.");
    let last = chunks.last().unwrap();
    assert_eq!(last.usage.unwrap().input_tokens, 9);
    assert_eq!(last.native.as_ref().unwrap()["output"], searched());
}
