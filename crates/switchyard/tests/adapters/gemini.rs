//! Gemini in the shared suite, plus the HTTP behaviour only this adapter has (the key in
//! `x-goog-api-key` and never in a URL, `alt=sse`, Google's non-SSE JSON-array stream,
//! blocked prompts, the usage grace).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchyard::chat::{FinishReason, ImageSource, Role, ToolCall, ToolChoice};
use switchyard::clock::Clock;
use switchyard::provider::gemini::{Gemini, GeminiConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::{self, RequestView, Turn, VendorHarness, ANSWER, KEY, PROMPT};

const MODEL: &str = "gemini-2.5-flash";

/// The Gemini adapter, with `base_url` ending in `/v1beta` as Google's is.
pub struct Harness;

impl VendorHarness for Harness {
    fn vendor(&self) -> &'static str {
        "gemini"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        let config = GeminiConfig {
            api_key: key,
            clock,
            ..GeminiConfig::new(MODEL).base_url(format!("{server_uri}/v1beta"))
        };
        Arc::new(Gemini::new(config, &Transport::default()).unwrap())
    }

    fn completion_path(&self, stream: bool) -> String {
        let method = if stream {
            "streamGenerateContent"
        } else {
            "generateContent"
        };
        format!("/v1beta/models/{MODEL}:{method}")
    }

    fn health_path(&self) -> Option<String> {
        Some(format!("/v1beta/models/{MODEL}"))
    }

    fn view(&self, request: &wiremock::Request) -> RequestView {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let url_path = request.url.path();
        let (model, method) = url_path
            .strip_prefix("/v1beta/models/")
            .and_then(|rest| rest.split_once(':'))
            .map_or((None, ""), |(m, v)| (Some(m.to_owned()), v));
        let config = &body["generationConfig"];
        let mut view = RequestView {
            model,
            stream: method == "streamGenerateContent" && request.url.query() == Some("alt=sse"),
            credential: request
                .headers
                .get("x-goog-api-key")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            max_tokens: config["maxOutputTokens"]
                .as_u64()
                .map(|n| u32::try_from(n).unwrap()),
            tools: body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|t| t["functionDeclarations"].as_array().unwrap())
                .map(|f| f["name"].as_str().unwrap().to_owned())
                .collect(),
            tool_choice: tool_choice(&body["toolConfig"]["functionCallingConfig"]),
            system: body["systemInstruction"]["parts"]
                .as_array()
                .map(|parts| parts.iter().filter_map(|p| p["text"].as_str()).collect()),
            ..RequestView::default()
        };
        for content in body["contents"].as_array().into_iter().flatten() {
            view.turns.extend(turns(content));
        }
        view
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        let name = match status {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            504 => "DEADLINE_EXCEEDED",
            _ => "INTERNAL",
        };
        json!({"error": {"code": status, "message": message, "status": name}})
    }
}

/// One Gemini content as turns: a `user` content's `functionResponse` parts are tool
/// results (one turn each), its other parts one user turn; a `model` content is one
/// assistant turn. Calls without an id get `call_<n>`, as the adapter numbers them.
fn turns(content: &Value) -> Vec<Turn> {
    let role = match content["role"].as_str().unwrap() {
        "user" => Role::User,
        "model" => Role::Assistant,
        other => panic!("unexpected role {other}"),
    };
    let mut out = Vec::new();
    let mut turn = Turn::text(role, "");
    for part in content["parts"].as_array().unwrap() {
        if let Some(text) = part["text"].as_str() {
            turn.text.push_str(text);
        } else if let Some(blob) = part.get("inlineData") {
            turn.images.push(ImageSource::Base64 {
                media_type: blob["mimeType"].as_str().unwrap().to_owned(),
                data: blob["data"].as_str().unwrap().to_owned(),
            });
        } else if let Some(file) = part.get("fileData") {
            turn.images.push(ImageSource::Url {
                url: file["fileUri"].as_str().unwrap().to_owned(),
            });
        } else if let Some(call) = part.get("functionCall") {
            let n = turn.tool_calls.len();
            turn.tool_calls.push(ToolCall {
                id: call["id"]
                    .as_str()
                    .map_or_else(|| format!("call_{n}"), str::to_owned),
                name: call["name"].as_str().unwrap().to_owned(),
                arguments: call["args"].to_string(),
            });
        } else if let Some(result) = part.get("functionResponse") {
            assert!(result["response"].is_object(), "response must be an object");
            out.push(Turn {
                role: Role::Tool,
                text: result["response"].to_string(),
                images: Vec::new(),
                tool_calls: Vec::new(),
                tool_result_for: result["name"].as_str().map(str::to_owned),
            });
        } else {
            panic!("unexpected part {part}");
        }
    }
    if !turn.text.is_empty() || !turn.images.is_empty() || !turn.tool_calls.is_empty() {
        out.push(turn);
    }
    out
}

fn tool_choice(config: &Value) -> Option<ToolChoice> {
    let allowed = config["allowedFunctionNames"].as_array();
    match config["mode"].as_str()? {
        "AUTO" => Some(ToolChoice::Auto),
        "NONE" => Some(ToolChoice::None),
        "ANY" => Some(match allowed.map(Vec::as_slice) {
            Some([one]) => ToolChoice::Tool(one.as_str().unwrap().to_owned()),
            _ => ToolChoice::Required,
        }),
        other => panic!("unexpected mode {other}"),
    }
}

fn fixture(name: &str) -> String {
    suite::fixture("gemini", name)
}

fn json_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "application/json")
}

/// Every call the adapter makes (complete, stream, health) carries the key in its header
/// and nowhere in the URL.
#[tokio::test]
async fn the_key_travels_only_in_its_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/v1beta/models/{MODEL}:generateContent")))
        .and(header("x-goog-api-key", KEY))
        .and(header("accept", "application/json"))
        .and(header("content-type", "application/json"))
        .and(header("x-proxy-route", "eu"))
        .respond_with(json_response(fixture("completion_text.json")))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!(
            "/v1beta/models/{MODEL}:streamGenerateContent"
        )))
        .and(query_param("alt", "sse"))
        .and(header("x-goog-api-key", KEY))
        .and(header("accept", "text/event-stream"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(fixture("stream_text.sse"), "text/event-stream"),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/v1beta/models/{MODEL}")))
        .and(header("x-goog-api-key", KEY))
        .respond_with(json_response(
            json!({"name": format!("models/{MODEL}")}).to_string(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let config = GeminiConfig::new(MODEL)
        .base_url(format!("{}/v1beta/", server.uri()))
        .api_key(Secret::new(KEY))
        .header("x-proxy-route", "eu");
    let p = Gemini::new(config, &Transport::default()).unwrap();
    assert_eq!(
        p.send(&ChatRequest::from_prompt(PROMPT))
            .await
            .unwrap()
            .text,
        ANSWER
    );
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    assert_eq!(suite::assemble(&items).0, ANSWER);
    p.check_health().await.unwrap();
    server.verify().await;
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        let url = request.url.as_str();
        assert!(!url.contains(KEY), "key in URL: {url}");
        assert!(request.url.query_pairs().all(|(k, _)| k != "key"), "{url}");
        assert!(request.headers.get("authorization").is_none());
    }
}

#[tokio::test]
async fn no_key_sends_no_key_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(fixture("completion_text.json")))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("x-goog-api-key").is_none());
}

/// Without `alt=sse` Google streams one JSON array; a proxy that drops the query (or a
/// server that answers the stream call with one response) is still read correctly.
#[tokio::test]
async fn a_stream_answered_with_json_is_read_the_same() {
    let chunks: Vec<Value> = fixture("stream_text_open.sse")
        .split("\r\n\r\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(&d.replace("\r\ndata: ", "")).unwrap())
        .collect();
    assert_eq!(chunks.len(), 3);
    let cut = Value::Array(chunks[..2].to_vec()).to_string();
    for (body, complete) in [
        (Value::Array(chunks).to_string(), true),
        (fixture("completion_text.json"), true),
        (cut, false),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(json_response(body))
            .expect(1)
            .mount(&server)
            .await;
        let p = Harness.provider(&server.uri(), None, Clock::system());
        let items =
            suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
        if complete {
            let (text, _, finish, usage) = suite::assemble(&items);
            assert_eq!(text, ANSWER);
            assert_eq!(finish, Some(FinishReason::Stop));
            assert_eq!(usage, Some(suite::answer_usage()));
        } else {
            let last = items.last().unwrap().as_ref().unwrap_err();
            assert_eq!(last.kind, ErrorKind::Malformed);
        }
    }
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

/// A blocked prompt is a 200: `send` fails with `ContentFiltered`, and so does the first
/// event of a stream.
#[tokio::test]
async fn a_blocked_prompt_is_content_filtered_both_ways() {
    let blocked = fixture("prompt_blocked.json");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(false)))
        .respond_with(json_response(blocked.clone()))
        .expect(1)
        .mount(&server)
        .await;
    let event = format!("data: {}\r\n\r\n", blocked.replace('\n', ""));
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(true)))
        .respond_with(ResponseTemplate::new(200).set_body_raw(event, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered, "{err}");
    let items = suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0].as_ref().unwrap_err().kind,
        ErrorKind::ContentFiltered
    );
}

/// Finish without usage, connection held open: the stream ends after the grace.
#[tokio::test]
async fn finish_without_usage_ends_after_the_grace() {
    let body = fixture("stream_text_open.sse");
    let last = body
        .trim_end()
        .rsplit("\r\n\r\n")
        .next()
        .unwrap()
        .to_owned();
    let mut chunk: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
    chunk.as_object_mut().unwrap().remove("usageMetadata");
    let body = body.replace(&last, &format!("data: {chunk}"));
    let items = crate::raw::with_raw_sse(vec![body.into_bytes()], true, |uri| async move {
        let config = GeminiConfig {
            usage_grace: Duration::from_millis(50),
            ..GeminiConfig::new(MODEL).base_url(format!("{uri}/v1beta"))
        };
        let p = Gemini::new(config, &Transport::default()).unwrap();
        suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await
    })
    .await;
    let (text, _, finish, usage) = suite::assemble(&items);
    assert_eq!(text, ANSWER);
    assert_eq!(finish, Some(FinishReason::Stop));
    assert_eq!(
        usage.map(|u| u.output_tokens),
        Some(7),
        "the latest usage seen (an earlier chunk's) is reported"
    );
}

#[tokio::test]
async fn a_safety_stop_is_returned_as_a_filtered_finish() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(fixture("completion_safety.json")))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(reply.text, "");
}

/// `n` = 2 is `candidateCount: 2`; Google streams both candidates by `index`, and the
/// stream runs until both have finished (here candidate 1 first, in its own chunk), the
/// second's text beside the first's.
#[tokio::test]
async fn a_stream_of_two_candidates_is_read_to_both_ends() {
    let chunk = |candidates: Value, usage: Option<Value>| {
        let mut c = json!({"candidates": candidates, "modelVersion": MODEL});
        if let Some(u) = usage {
            c["usageMetadata"] = u;
        }
        format!("data: {c}\r\n\r\n")
    };
    let text =
        |i: u32, t: &str| json!({"index": i, "content": {"role": "model", "parts": [{"text": t}]}});
    let finished = |i: u32, t: &str| {
        let mut c = text(i, t);
        c["finishReason"] = json!("STOP");
        c
    };
    let body = [
        chunk(json!([text(0, "Bon"), text(1, "Sal")]), None),
        chunk(json!([finished(1, "ut")]), None),
        chunk(
            json!([finished(0, "jour")]),
            Some(json!({"promptTokenCount": 3, "candidatesTokenCount": 6})),
        ),
    ]
    .concat();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(true)))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .expect(1)
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let req = ChatRequest {
        n: Some(2),
        ..ChatRequest::from_prompt(PROMPT)
    };
    let items = suite::collect(p.stream(&req).await.unwrap()).await;
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["generationConfig"]["candidateCount"], 2);
    let chunks: Vec<_> = items.into_iter().map(Result::unwrap).collect();
    let first: String = chunks.iter().map(|c| c.text.as_str()).collect();
    let second: String = (chunks.iter().flat_map(|c| &c.choices))
        .map(|c| c.text.as_str())
        .collect();
    assert_eq!((first.as_str(), second.as_str()), ("Bonjour", "Salut"));
    let last = chunks.last().unwrap();
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(last.usage.map(|u| u.output_tokens), Some(6));
    assert_eq!(
        chunks.iter().filter(|c| c.finish_reason.is_some()).count(),
        1,
        "one finish signal, at the end"
    );
}

/// Issue 24 item 3 for Gemini: `n` is `candidateCount`, so the reservation must cover
/// every candidate. The audit's case — 20 concurrent `n: 128, max_tokens: 1000` requests on
/// a route with a $0.05 budget — is refused before any call reaches Google.
#[tokio::test]
async fn candidate_count_is_reserved_for_every_candidate() {
    use switchyard::{Gateway, GatewayError, Money, ProviderSpec, Route};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(fixture("completion_text.json")))
        .mount(&server)
        .await;
    let p = Harness.provider(&server.uri(), None, Clock::system());
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("gemini", p))
        .route(Route::new("main", &["gemini"]).budget(Money::from_usd(0.05)))
        .build()
        .unwrap();
    assert!(
        gw.price_of("gemini").is_some(),
        "{MODEL} is in the shipped table"
    );
    let req = ChatRequest {
        n: Some(128),
        max_tokens: Some(1000),
        ..ChatRequest::from_prompt(PROMPT)
    };
    let answers = futures_util::future::join_all((0..20).map(|_| gw.chat("main", &req))).await;
    for a in &answers {
        assert!(
            matches!(a, Err(GatewayError::BudgetExceeded { .. })),
            "{a:?}"
        );
    }
    assert!(server.received_requests().await.unwrap().is_empty());
    let books = gw.budget("main").await.unwrap();
    assert_eq!((books.spent, books.reserved), (Money::ZERO, Money::ZERO));
    // one candidate fits the same budget
    let one = ChatRequest {
        max_tokens: Some(1000),
        ..ChatRequest::from_prompt(PROMPT)
    };
    assert!(gw.chat("main", &one).await.is_ok());
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}
