//! The cases every vendor adapter passes, over real HTTP.
//!
//! A vendor plugs in by implementing [`VendorHarness`] (how to build its provider against a
//! mock server, which paths it calls, how to read the request it sent back into a
//! vendor-neutral [`RequestView`]) and shipping fixtures under
//! `tests/fixtures/<vendor>/` that express the *same canonical conversation* in its own
//! wire format:
//!
//! | file | content |
//! |---|---|
//! | `completion_text.json` | reply [`ANSWER`], finish stop, usage = [`answer_usage`] |
//! | `completion_tool_call.json` | one call of `get_weather` with `{"city":"Paris"}` |
//! | `stream_text.sse` | [`ANSWER`] in several deltas (at least one event with multi-line `data:`, a comment), the finish signal, usage = [`answer_usage`], the vendor's end marker if it has one |
//! | `stream_text_open.sse` | the same up to finish + usage, no end marker (the suite holds the connection open after it) |
//! | `stream_tool_call.sse` | the `get_weather` call with its arguments split across deltas |
//! | `stream_cut.sse` | some text deltas, then nothing: no finish signal |
//! | `stream_error_first.sse` | first line `: expect <kind label>`, then an error as the first event |
//! | `errors.json` | `[{name, status, headers?, body \| body_text, content_type?, kind, retry_after_ms?}]` |
//! | `malformed.json` | `[{name, body}]`: 200 bodies that parse as JSON (or nearly) but are not a completion |
//!
//! Then one line in `main.rs`: `adapter_suite!(anthropic_suite, crate::anthropic::Harness);`.
//!
//! Tests never assert durations: a stream that must end "promptly" is collected under a
//! generous timeout while the server keeps the connection open.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};
use switchyard::chat::{
    ChatChunk, ContentPart, FinishReason, ImageSource, Message, Role, Tool, ToolCall, ToolChoice,
    Usage,
};
use switchyard::clock::Clock;
use switchyard::provider::secret::Secret;
use switchyard::provider::ChunkStream;
use switchyard::{ChatRequest, ErrorKind, Provider, ProviderError};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::raw::{closed_port_uri, with_raw_server};

/// The key every suite provider is configured with; no error may ever show it.
pub const KEY: &str = "sk-suite-0123456789abcdef-SECRET";
/// Wall time of the suite's clock: Sun, 29 Nov 2026 10:00:00 GMT (HTTP-date Retry-After
/// values in `errors.json` are relative to it).
pub const SUITE_NOW_MS: u64 = 1_795_946_400_000;
/// The canonical question.
pub const PROMPT: &str = "What is the capital of France?";
/// The canonical answer every text fixture carries (non-ASCII on purpose: split reads
/// must not break it).
pub const ANSWER: &str = "The capital of France is Paris (Île-de-France).";
/// The generous bound under which a stream must complete.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The canonical usage of [`ANSWER`], normalised: 25 prompt tokens of which 5 cached, 12
/// output tokens.
#[must_use]
pub fn answer_usage() -> Usage {
    Usage {
        input_tokens: 25,
        output_tokens: 12,
        cached_input_tokens: 5,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 0,
    }
}

/// What one vendor tells the suite.
pub trait VendorHarness: Sync {
    /// The fixture folder: `tests/fixtures/<vendor>/`.
    fn vendor(&self) -> &'static str;
    /// The provider under test, calling the mock at `server_uri` (`http://127.0.0.1:port`,
    /// no path) with `key` and `clock`.
    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider>;
    /// The path a completion call hits (streaming or not).
    fn completion_path(&self, stream: bool) -> String;
    /// The path the active health check GETs, if the adapter has one.
    fn health_path(&self) -> Option<String>;
    /// The request as the vendor received it, read back into the shared shape.
    fn view(&self, request: &wiremock::Request) -> RequestView;
    /// The vendor's error JSON for `status` carrying `message`. The suite also sends it as
    /// a stream event (`event: error` + `data: <it>`), which the adapter must classify.
    fn error_body(&self, status: u16, message: &str) -> Value;
    /// A stream fixture (server-sent events text) as the vendor frames it on the wire: the
    /// bytes and their media type. The default: the text as is, `text/event-stream`
    /// (Bedrock's harness encodes each event as an AWS event-stream frame).
    fn stream_body(&self, sse: &str) -> (Vec<u8>, &'static str) {
        (sse.as_bytes().to_vec(), "text/event-stream")
    }
    /// Whether the vendor takes images by URL (Bedrock takes bytes, and refuses a web URL
    /// before calling).
    fn takes_image_urls(&self) -> bool {
        true
    }
}

/// A received request, vendor-neutral.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestView {
    /// The model the request named (body or path).
    pub model: Option<String>,
    /// The system prompt, however the vendor carries it.
    pub system: Option<String>,
    /// The conversation, oldest first, system excluded.
    pub turns: Vec<Turn>,
    /// Names of the declared tools.
    pub tools: Vec<String>,
    /// The tool constraint.
    pub tool_choice: Option<ToolChoice>,
    /// The output cap.
    pub max_tokens: Option<u32>,
    /// Whether a stream was asked for.
    pub stream: bool,
    /// The credential as found in the vendor's auth header.
    pub credential: Option<String>,
}

/// One turn of a [`RequestView`].
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Who wrote it (tool results are [`Role::Tool`] whatever the vendor's framing).
    pub role: Role,
    /// Its text parts, joined.
    pub text: String,
    /// Its images.
    pub images: Vec<ImageSource>,
    /// Tool calls an assistant turn made.
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call id (or, for vendors without ids, the function name).
    pub tool_result_for: Option<String>,
}

impl Turn {
    /// A text turn.
    #[must_use]
    pub fn text(role: Role, text: &str) -> Self {
        Self {
            role,
            text: text.to_owned(),
            images: Vec::new(),
            tool_calls: Vec::new(),
            tool_result_for: None,
        }
    }
}

/// A fixture's text.
#[must_use]
pub fn fixture(vendor: &str, name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/{vendor}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn clock() -> Clock {
    Clock::anchored_at(SUITE_NOW_MS)
}

fn provider<H: VendorHarness>(h: &H, server: &MockServer) -> Arc<dyn Provider> {
    h.provider(&server.uri(), Some(Secret::new(KEY)), clock())
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        cache_control: None,
    }
}

/// Mount one response on the completion path, expected exactly once.
async fn mount<H: VendorHarness>(
    h: &H,
    server: &MockServer,
    stream: bool,
    response: ResponseTemplate,
) {
    Mock::given(method("POST"))
        .and(path(h.completion_path(stream)))
        .respond_with(response)
        .up_to_n_times(1)
        .expect(1)
        .mount(server)
        .await;
}

fn json_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// A 200 carrying the stream fixture text `sse`, framed the vendor's way.
fn stream_response<H: VendorHarness>(h: &H, sse: &str) -> ResponseTemplate {
    let (body, media_type) = h.stream_body(sse);
    ResponseTemplate::new(200).set_body_raw(body, media_type)
}

/// The only request the server received, after checking the call counts.
async fn only_request(server: &MockServer) -> wiremock::Request {
    server.verify().await;
    let mut requests = server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 1, "exactly one upstream call");
    requests.remove(0)
}

/// Send `req` against a fresh mock answering `fixture_name`; the reply and the view.
async fn send_fixture<H: VendorHarness>(
    h: &H,
    req: &ChatRequest,
    fixture_name: &str,
) -> (switchyard::ProviderReply, RequestView) {
    let server = MockServer::start().await;
    mount(
        h,
        &server,
        false,
        json_response(fixture(h.vendor(), fixture_name)),
    )
    .await;
    let p = provider(h, &server);
    let reply = p.send(req).await.unwrap_or_else(|e| panic!("{e}"));
    let view = h.view(&only_request(&server).await);
    assert_eq!(
        view.credential.as_deref(),
        Some(KEY),
        "the key reached its own provider"
    );
    assert_eq!(view.model.as_deref(), Some(p.model()));
    assert!(!view.stream);
    (reply, view)
}

/// Every item of a stream, within [`PATIENCE`].
pub async fn collect(stream: ChunkStream) -> Vec<Result<ChatChunk, ProviderError>> {
    tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
        .await
        .expect("the stream ended by itself")
}

/// A stream's chunks put together: text, tool calls (deltas merged by index), the finish
/// reason and usage. Panics on an `Err` item or a finish that is not on the last chunk.
#[must_use]
pub fn assemble(
    items: &[Result<ChatChunk, ProviderError>],
) -> (String, Vec<ToolCall>, Option<FinishReason>, Option<Usage>) {
    let mut text = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for (i, item) in items.iter().enumerate() {
        let chunk = item.as_ref().unwrap_or_else(|e| panic!("item {i}: {e}"));
        assert!(finish.is_none(), "nothing may follow the finish chunk");
        text.push_str(&chunk.text);
        for d in &chunk.tool_calls {
            let index = usize::try_from(d.index).unwrap();
            if calls.len() <= index {
                calls.resize(
                    index + 1,
                    ToolCall {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    },
                );
            }
            let call = &mut calls[index];
            if let Some(id) = &d.id {
                call.id.clone_from(id);
            }
            if let Some(name) = &d.name {
                call.name.clone_from(name);
            }
            call.arguments.push_str(&d.arguments);
        }
        finish.clone_from(&chunk.finish_reason);
        usage = usage.or(chunk.usage);
    }
    (text, calls, finish, usage)
}

fn assert_weather_call(calls: &[ToolCall]) {
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(!calls[0].id.is_empty());
    assert_eq!(calls[0].name, "get_weather");
    let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
    assert_eq!(args, json!({"city": "Paris"}));
}

/// The error's every printable form is free of [`KEY`].
fn assert_no_key(err: &ProviderError) {
    for text in [
        err.to_string(),
        format!("{err:?}"),
        serde_json::to_string(err).unwrap(),
    ] {
        assert!(!text.contains(KEY), "key leaked: {text}");
    }
}

// ---------------------------------------------------------------------------------------
// The cases.
// ---------------------------------------------------------------------------------------

/// A plain prompt: text, finish, normalised usage; the request carries the prompt, the cap
/// and the key.
pub async fn text<H: VendorHarness>(h: &H) {
    let req = ChatRequest::from_prompt(PROMPT).with_max_tokens(100);
    let (reply, view) = send_fixture(h, &req, "completion_text.json").await;
    assert_eq!(reply.text, ANSWER);
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(reply.usage, Some(answer_usage()));
    assert_eq!(view.turns, [Turn::text(Role::User, PROMPT)]);
    assert_eq!(view.system, None);
    assert_eq!(view.max_tokens, Some(100));
}

/// A system prompt reaches the vendor as its system instruction.
pub async fn system<H: VendorHarness>(h: &H) {
    let req = ChatRequest {
        messages: vec![
            Message::system("Answer in one sentence."),
            Message::user(PROMPT),
        ],
        ..ChatRequest::default()
    };
    let (_, view) = send_fixture(h, &req, "completion_text.json").await;
    assert_eq!(view.system.as_deref(), Some("Answer in one sentence."));
    assert_eq!(view.turns, [Turn::text(Role::User, PROMPT)]);
}

/// Turns keep their roles and order.
pub async fn multi_turn<H: VendorHarness>(h: &H) {
    let req = ChatRequest {
        messages: vec![
            Message::user("Capital of Italy?"),
            Message::assistant("Rome."),
            Message::user(PROMPT),
        ],
        ..ChatRequest::default()
    };
    let (reply, view) = send_fixture(h, &req, "completion_text.json").await;
    assert_eq!(reply.text, ANSWER);
    assert_eq!(
        view.turns,
        [
            Turn::text(Role::User, "Capital of Italy?"),
            Turn::text(Role::Assistant, "Rome."),
            Turn::text(Role::User, PROMPT),
        ]
    );
}

/// Image parts (by URL and inline base64) travel with the text; a vendor that takes no
/// image URLs refuses one before calling.
pub async fn image_part<H: VendorHarness>(h: &H) {
    let url = ImageSource::Url {
        url: "https://example.com/paris.png".into(),
    };
    let inline = ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "iVBORw0KGgoAAAANSUhEUg==".into(),
    };
    let sources = if h.takes_image_urls() {
        vec![url.clone(), inline.clone()]
    } else {
        let server = MockServer::start().await;
        let mut message = Message::user("Which city is this?");
        message.content.push(ContentPart::Image {
            source: url.clone(),
            detail: None,
        });
        let req = ChatRequest {
            messages: vec![message],
            ..ChatRequest::default()
        };
        let err = provider(h, &server).send(&req).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");
        assert!(server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty());
        vec![inline.clone()]
    };
    let mut message = Message::user("Which city is this?");
    for source in sources.clone() {
        message.content.push(ContentPart::Image {
            source,
            detail: None,
        });
    }
    let req = ChatRequest {
        messages: vec![message],
        ..ChatRequest::default()
    };
    let (_, view) = send_fixture(h, &req, "completion_text.json").await;
    assert_eq!(view.turns.len(), 1);
    assert_eq!(view.turns[0].text, "Which city is this?");
    assert_eq!(view.turns[0].images, sources);
}

/// A tool call comes out; its result goes back in, tied to the call.
pub async fn tools_round_trip<H: VendorHarness>(h: &H) {
    let mut req = ChatRequest::from_prompt("What's the weather in Paris?");
    req.tools = vec![weather_tool()];
    req.tool_choice = Some(ToolChoice::Auto);
    let (reply, view) = send_fixture(h, &req, "completion_tool_call.json").await;
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_weather_call(&reply.tool_calls);
    assert_eq!(view.tools, ["get_weather"]);
    assert_eq!(view.tool_choice, Some(ToolChoice::Auto));

    let call = reply.tool_calls[0].clone();
    let mut assistant = Message::assistant("");
    assistant.content.clear();
    assistant.tool_calls = vec![call.clone()];
    req.messages.push(assistant);
    req.messages.push(Message::tool_result(
        &call.id,
        &call.name,
        r#"{"temp_c":18}"#,
    ));
    let (reply, view) = send_fixture(h, &req, "completion_text.json").await;
    assert_eq!(reply.text, ANSWER);
    assert_eq!(view.turns.len(), 3, "{view:?}");
    assert_eq!(view.turns[1].role, Role::Assistant);
    assert_eq!(view.turns[1].tool_calls, std::slice::from_ref(&call));
    let result = &view.turns[2];
    assert_eq!(result.role, Role::Tool);
    let tied = result.tool_result_for.as_deref();
    assert!(
        tied == Some(call.id.as_str()) || tied == Some(call.name.as_str()),
        "{result:?}"
    );
    assert!(result.text.contains("temp_c"), "{result:?}");
}

/// A streamed answer (comments, multi-line data) ends at the finish with the usage.
pub async fn streaming_with_usage<H: VendorHarness>(h: &H) {
    let server = MockServer::start().await;
    mount(
        h,
        &server,
        true,
        stream_response(h, &fixture(h.vendor(), "stream_text.sse")),
    )
    .await;
    let stream = provider(h, &server)
        .stream(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let (text, calls, finish, usage) = assemble(&collect(stream).await);
    assert_eq!(text, ANSWER);
    assert!(calls.is_empty());
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, Some(answer_usage()));
    let view = h.view(&only_request(&server).await);
    assert!(view.stream);
    assert_eq!(view.credential.as_deref(), Some(KEY));
}

/// The same stream delivered in 1–7 byte pieces (inside UTF-8 characters, between `\r`
/// and `\n`) parses the same.
pub async fn streaming_split_reads<H: VendorHarness>(h: &H) {
    let (body, media_type) = h.stream_body(&fixture(h.vendor(), "stream_text.sse"));
    let mut pieces = Vec::new();
    let mut rest = body.as_slice();
    for size in (1..=7).cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        pieces.push(piece.to_vec());
        rest = tail;
    }
    let items = with_raw_server(media_type, pieces, true, |uri| async move {
        let p = h.provider(&uri, Some(Secret::new(KEY)), clock());
        collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await
    })
    .await;
    let (text, _, finish, usage) = assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, Some(answer_usage()));
}

/// Finish and usage arrive, then nothing: no end marker, connection left open. The stream
/// ends by itself (it must not wait for `[DONE]`).
pub async fn streaming_ends_at_finish_without_done<H: VendorHarness>(h: &H) {
    let (body, media_type) = h.stream_body(&fixture(h.vendor(), "stream_text_open.sse"));
    let items = with_raw_server(media_type, vec![body], true, |uri| async move {
        let p = h.provider(&uri, Some(Secret::new(KEY)), clock());
        collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await
    })
    .await;
    let (text, _, finish, usage) = assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(usage, Some(answer_usage()));
}

/// A streamed tool call: id and name first, arguments in pieces.
pub async fn streaming_tool_call<H: VendorHarness>(h: &H) {
    let server = MockServer::start().await;
    mount(
        h,
        &server,
        true,
        stream_response(h, &fixture(h.vendor(), "stream_tool_call.sse")),
    )
    .await;
    let mut req = ChatRequest::from_prompt("What's the weather in Paris?");
    req.tools = vec![weather_tool()];
    let stream = provider(h, &server).stream(&req).await.unwrap();
    let (_, calls, finish, _) = assemble(&collect(stream).await);
    assert_eq!(finish, Some(FinishReason::ToolCalls));
    assert_weather_call(&calls);
    server.verify().await;
}

/// A stream that ends before the finish signal is `Malformed`, never a short answer.
pub async fn stream_cut_before_finish_is_malformed<H: VendorHarness>(h: &H) {
    let server = MockServer::start().await;
    mount(
        h,
        &server,
        true,
        stream_response(h, &fixture(h.vendor(), "stream_cut.sse")),
    )
    .await;
    let stream = provider(h, &server)
        .stream(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let items = collect(stream).await;
    let (last, before) = items.split_last().unwrap();
    assert_eq!(last.as_ref().unwrap_err().kind, ErrorKind::Malformed);
    assert!(before
        .iter()
        .all(|c| c.as_ref().unwrap().finish_reason.is_none()));
    server.verify().await;
}

/// Every row of `errors.json`, through `send` and through `stream` (an error status
/// fails the stream call itself). One upstream call each: adapters never retry.
pub async fn every_error_class<H: VendorHarness>(h: &H) {
    let cases: Vec<Value> = serde_json::from_str(&fixture(h.vendor(), "errors.json")).unwrap();
    assert!(cases.len() >= 10, "errors.json covers the table");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let status = u16::try_from(case["status"].as_u64().unwrap()).unwrap();
        let (body, content_type) = match case.get("body_text") {
            Some(text) => (text.as_str().unwrap().to_owned(), "text/plain"),
            None => (case["body"].to_string(), "application/json"),
        };
        let content_type = case["content_type"].as_str().unwrap_or(content_type);
        let mut response = ResponseTemplate::new(status).set_body_raw(body, content_type);
        for (k, v) in case["headers"].as_object().into_iter().flatten() {
            response = response.insert_header(k.as_str(), v.as_str().unwrap());
        }
        let server = MockServer::start().await;
        mount(h, &server, false, response.clone()).await;
        mount(h, &server, true, response).await;
        let p = provider(h, &server);
        let sent = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
        let Err(streamed) = p.stream(&ChatRequest::from_prompt(PROMPT)).await else {
            panic!("{name}: an error status must fail the stream call")
        };
        for err in [&sent, &streamed] {
            assert_eq!(
                err.kind.label(),
                case["kind"].as_str().unwrap(),
                "{name}: {err}"
            );
            assert_eq!(err.status, Some(status), "{name}");
            assert_no_key(err);
            if let Some(ms) = case["retry_after_ms"].as_u64() {
                let expected = Duration::from_millis(ms);
                let got = err
                    .retry_after
                    .unwrap_or_else(|| panic!("{name}: no retry_after"));
                // HTTP-dates have whole seconds and the clock moved on a little.
                assert!(
                    got <= expected && got + Duration::from_secs(1) > expected,
                    "{name}: {got:?}"
                );
            }
        }
        server.verify().await;
    }
}

/// A 200 that is not a completion (HTML from a proxy, an empty body, JSON without the
/// vendor's structure) is `Malformed`.
pub async fn malformed_200<H: VendorHarness>(h: &H) {
    let mut cases = vec![
        (
            "html".to_owned(),
            "<!DOCTYPE html><html><body>Sign in to continue</body></html>".to_owned(),
            "text/html",
        ),
        ("empty".to_owned(), String::new(), "application/json"),
    ];
    let listed: Vec<Value> = serde_json::from_str(&fixture(h.vendor(), "malformed.json")).unwrap();
    for case in listed {
        cases.push((
            case["name"].as_str().unwrap().to_owned(),
            case["body"].as_str().unwrap().to_owned(),
            "application/json",
        ));
    }
    for (name, body, content_type) in cases {
        let server = MockServer::start().await;
        mount(
            h,
            &server,
            false,
            ResponseTemplate::new(200).set_body_raw(body, content_type),
        )
        .await;
        let err = provider(h, &server)
            .send(&ChatRequest::from_prompt(PROMPT))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{name}: {err}");
        server.verify().await;
    }
}

/// An error as the first event: the call is accepted (200), the first item is the
/// classified error, and nothing follows.
pub async fn error_in_first_sse_event<H: VendorHarness>(h: &H) {
    let body = fixture(h.vendor(), "stream_error_first.sse");
    let expected = body
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(": expect "))
        .expect("stream_error_first.sse starts with `: expect <kind>`")
        .trim()
        .to_owned();
    let server = MockServer::start().await;
    mount(h, &server, true, stream_response(h, &body)).await;
    let stream = provider(h, &server)
        .stream(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let items = collect(stream).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind.label(), expected, "{err}");
    assert_no_key(err);
    server.verify().await;
}

/// The key never appears in an error, even when the upstream echoes it back.
pub async fn key_never_in_errors<H: VendorHarness>(h: &H) {
    let echo = format!("Incorrect API key provided: {KEY}");
    let server = MockServer::start().await;
    let body = h.error_body(401, &echo).to_string();
    mount(
        h,
        &server,
        false,
        ResponseTemplate::new(401).set_body_raw(body.clone(), "application/json"),
    )
    .await;
    mount(
        h,
        &server,
        true,
        ResponseTemplate::new(401).set_body_raw(body, "application/json"),
    )
    .await;
    let p = provider(h, &server);
    let sent = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    let Err(streamed) = p.stream(&ChatRequest::from_prompt(PROMPT)).await else {
        panic!("401 must fail the stream call")
    };
    for err in [&sent, &streamed] {
        assert_eq!(err.kind, ErrorKind::Auth);
        assert!(err.message.contains("[redacted]"), "{err}");
        assert_no_key(err);
    }
    server.verify().await;

    let server = MockServer::start().await;
    let event = format!("event: error\ndata: {}\n\n", h.error_body(500, &echo));
    mount(h, &server, true, stream_response(h, &event)).await;
    let stream = provider(h, &server)
        .stream(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap();
    let items = collect(stream).await;
    assert_no_key(items[0].as_ref().unwrap_err());
    server.verify().await;

    let p = h.provider(&closed_port_uri().await, Some(Secret::new(KEY)), clock());
    assert_no_key(&p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err());
}

/// The active health check uses its free endpoint (never a completion).
pub async fn health_check<H: VendorHarness>(h: &H) {
    let server = MockServer::start().await;
    let Some(health) = h.health_path() else {
        provider(h, &server).check_health().await.unwrap();
        assert!(server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty());
        return;
    };
    Mock::given(method("GET"))
        .and(path(health.clone()))
        .respond_with(json_response(
            json!({"object": "list", "data": []}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let p = provider(h, &server);
    p.check_health().await.unwrap();
    let view = h.view(&only_request(&server).await);
    assert_eq!(view.credential.as_deref(), Some(KEY));

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(health))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_raw(h.error_body(401, "bad key").to_string(), "application/json"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let err = provider(h, &server).check_health().await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    server.verify().await;
}

/// Nobody listening: `Connection`, for both calls.
pub async fn connection_refused<H: VendorHarness>(h: &H) {
    let p = h.provider(&closed_port_uri().await, Some(Secret::new(KEY)), clock());
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    let Err(err) = p.stream(&ChatRequest::from_prompt(PROMPT)).await else {
        panic!("nothing listens")
    };
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
}

/// Expand the whole suite for one vendor: `adapter_suite!(module_name, HarnessValue);`.
macro_rules! adapter_suite {
    ($name:ident, $harness:expr) => {
        mod $name {
            adapter_suite!(@cases $harness;
                text, system, multi_turn, image_part, tools_round_trip,
                streaming_with_usage, streaming_split_reads, streaming_ends_at_finish_without_done,
                streaming_tool_call, stream_cut_before_finish_is_malformed, every_error_class,
                malformed_200, error_in_first_sse_event, key_never_in_errors, health_check,
                connection_refused);
        }
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                crate::suite::$case(&$harness).await;
            }
        )*
    };
}
