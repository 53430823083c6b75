//! Fixture tests: request mapping feature by feature, response / event parsing and
//! classification from `tests/fixtures/gemini/` (written from Google's documented formats).

use serde_json::{json, Value};

use super::reply::finish_reason;
use super::*;
use crate::chat::{
    ChatChunk, ContentPart, FinishReason, ImageSource, Message, ResponseFormat, Tool, ToolCall,
    ToolCallDelta, ToolChoice, Usage,
};
use crate::provider::sse::SseParser;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gemini/",
            $name
        ))
    };
}

fn provider(config: GeminiConfig) -> Gemini {
    Gemini::new(config, &Transport::default()).unwrap()
}

fn body(req: &ChatRequest) -> Value {
    let bytes = provider(GeminiConfig::new("gemini-2.5-flash"))
        .build_request(req)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn build_error(req: &ChatRequest) -> ProviderError {
    provider(GeminiConfig::new("gemini-2.5-flash"))
        .build_request(req)
        .unwrap_err()
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        messages,
        ..ChatRequest::default()
    }
}

fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Current weather for a city".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
    }
}

fn call(id: &str, city: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: format!(r#"{{"city":"{city}"}}"#),
    }
}

fn calling(calls: Vec<ToolCall>) -> Message {
    let mut m = Message::assistant("");
    m.content.clear();
    m.tool_calls = calls;
    m
}

#[test]
fn plain_text_request_is_minimal() {
    let req = ChatRequest::from_prompt("What is the capital of France?");
    assert_eq!(
        body(&req),
        json!({"contents": [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]})
    );
}

#[test]
fn system_becomes_system_instruction_and_same_role_turns_merge() {
    let req = request(vec![
        Message::system("Answer in one word."),
        Message::user("Capital of France?"),
        Message::user("Please."),
        Message::assistant("Paris."),
        Message::system("Be polite."),
        Message::assistant(""),
        Message::assistant("Anything else?"),
        Message::user("Italy?"),
    ]);
    let b = body(&req);
    assert_eq!(
        b["systemInstruction"],
        json!({"parts": [{"text": "Answer in one word."}, {"text": "Be polite."}]})
    );
    assert_eq!(
        b["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Capital of France?"}, {"text": "Please."}]},
            {"role": "model", "parts": [{"text": "Paris."}, {"text": "Anything else?"}]},
            {"role": "user", "parts": [{"text": "Italy?"}]}
        ])
    );
}

#[test]
fn system_instruction_takes_text_only() {
    let mut system = Message::system("Describe images tersely.");
    system
        .content
        .push(image(url("https://example.com/logo.png")));
    let b = body(&request(vec![system, Message::user("Hi")]));
    assert_eq!(
        b["systemInstruction"],
        json!({"parts": [{"text": "Describe images tersely."}]})
    );
}

#[test]
fn only_system_text_is_a_bad_request() {
    let err = build_error(&request(vec![Message::system("You are terse.")]));
    assert_eq!(err.kind, ErrorKind::BadRequest);
}

fn image(source: ImageSource) -> ContentPart {
    ContentPart::Image {
        source,
        detail: Some("low".into()),
    }
}

fn url(url: &str) -> ImageSource {
    ImageSource::Url { url: url.into() }
}

#[test]
fn images_become_inline_data_or_file_data() {
    let mut m = Message::user("What is in these images?");
    m.content.extend([
        image(ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }),
        image(url("data:image/webp;base64,UklGRg==")),
        image(url("https://example.com/cat.JPG?size=large#top")),
        image(url("https://example.com/render?id=7")),
        image(url(
            "https://generativelanguage.googleapis.com/v1beta/files/abc123",
        )),
    ]);
    assert_eq!(
        body(&request(vec![m]))["contents"][0]["parts"],
        json!([
            {"text": "What is in these images?"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}},
            {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.JPG?size=large#top"}},
            {"fileData": {"fileUri": "https://example.com/render?id=7"}},
            {"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc123"}}
        ])
    );
    let mut bad = Message::user("x");
    bad.content.push(image(url("data:image/png,rawbytes")));
    assert_eq!(build_error(&request(vec![bad])).kind, ErrorKind::BadRequest);
}

#[test]
fn generation_config_sampling_stop_and_json_modes() {
    let mut req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    req.temperature = Some(0.5);
    req.top_p = Some(0.25);
    req.stop = vec!["\n\n".into(), "END".into()];
    req.user = Some("user-42".into());
    req.response_format = Some(ResponseFormat::JsonObject);
    let b = body(&req);
    assert_eq!(
        b["generationConfig"],
        json!({"temperature": 0.5, "topP": 0.25, "maxOutputTokens": 64,
               "stopSequences": ["\n\n", "END"], "responseMimeType": "application/json"})
    );
    assert!(b.get("user").is_none(), "Gemini has no end-user field");

    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": false});
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "answer".into(),
        schema: schema.clone(),
        strict: Some(true),
    });
    let config = &body(&req)["generationConfig"];
    assert_eq!(config["responseMimeType"], json!("application/json"));
    assert_eq!(config["responseJsonSchema"], schema);
    assert!(config.get("responseSchema").is_none());

    let plain = ChatRequest {
        response_format: Some(ResponseFormat::Text),
        ..ChatRequest::from_prompt("hi")
    };
    assert!(body(&plain).get("generationConfig").is_none());
}

#[test]
fn tools_and_every_tool_choice() {
    let mut req = ChatRequest::from_prompt("Weather in Paris?");
    req.tool_choice = Some(ToolChoice::Required);
    assert!(
        body(&req).get("toolConfig").is_none(),
        "no tools, no tool config"
    );
    req.tools = vec![weather_tool()];
    req.tool_choice = None;
    let b = body(&req);
    assert_eq!(
        b["tools"],
        json!([{"functionDeclarations": [{
            "name": "get_weather",
            "description": "Current weather for a city",
            "parametersJsonSchema": weather_tool().parameters
        }]}])
    );
    assert!(b.get("toolConfig").is_none());
    let cases = [
        (ToolChoice::Auto, json!({"mode": "AUTO"})),
        (ToolChoice::None, json!({"mode": "NONE"})),
        (ToolChoice::Required, json!({"mode": "ANY"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
        ),
    ];
    for (choice, expected) in cases {
        req.tool_choice = Some(choice);
        assert_eq!(
            body(&req)["toolConfig"],
            json!({"functionCallingConfig": expected})
        );
    }
}

#[test]
fn tool_history_round_trips_with_merged_results() {
    let mut nameless = Message::tool_result("call_b", "", "18 degrees, sunny");
    nameless.name = None;
    let req = ChatRequest {
        messages: vec![
            Message::user("Weather in Paris and Rome?"),
            calling(vec![call("call_a", "Paris"), call("call_b", "Rome")]),
            Message::tool_result("call_a", "get_weather", r#"{"temp_c":18}"#),
            nameless,
            Message::user("And tomorrow?"),
        ],
        tools: vec![weather_tool()],
        ..ChatRequest::default()
    };
    let b = body(&req);
    let signature = FOREIGN_THOUGHT_SIGNATURE;
    assert_eq!(
        b["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": signature},
            {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}, "thoughtSignature": signature}
        ]})
    );
    assert_eq!(
        b["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temp_c": 18}}},
            {"functionResponse": {"name": "get_weather", "response": {"content": "18 degrees, sunny"}}},
            {"text": "And tomorrow?"}
        ]}),
        "parallel results share one user turn; the name is found by call id"
    );
    assert_eq!(b["contents"].as_array().unwrap().len(), 3);
}

#[test]
fn tool_results_that_are_not_objects_are_wrapped() {
    for (result, expected) in [
        ("[1,2]", json!({"content": [1, 2]})),
        ("42", json!({"content": 42})),
        ("\"done\"", json!({"content": "done"})),
        ("", json!({"content": ""})),
        ("{not json", json!({"content": "{not json"})),
    ] {
        let req = request(vec![
            Message::user("go"),
            calling(vec![call("c1", "Paris")]),
            Message::tool_result("c1", "get_weather", result),
        ]);
        assert_eq!(
            body(&req)["contents"][2]["parts"][0]["functionResponse"]["response"],
            expected,
            "{result}"
        );
    }
}

#[test]
fn replayed_arguments_must_be_a_json_object() {
    let with_args = |arguments: &str| {
        let mut c = call("c1", "Paris");
        c.arguments = arguments.into();
        request(vec![Message::user("go"), calling(vec![c])])
    };
    assert_eq!(
        body(&with_args(""))["contents"][1]["parts"][0]["functionCall"]["args"],
        json!({})
    );
    for bad in ["{\"city\":", "[\"Paris\"]", "null", "not json"] {
        let err = build_error(&with_args(bad));
        assert_eq!(err.kind, ErrorKind::BadRequest, "{bad}");
        assert!(err.message.contains("c1"), "{err}");
    }
    let mut orphan = Message::tool_result("nowhere", "", "{}");
    orphan.name = None;
    let err = build_error(&request(vec![Message::user("go"), orphan]));
    assert_eq!(err.kind, ErrorKind::BadRequest);
}

#[test]
fn urls_carry_the_model_and_never_the_key() {
    let p = provider(
        GeminiConfig::new("gemini-2.5-flash")
            .base_url("https://example.com/v1beta/")
            .api_key(Secret::new("AIza-secret")),
    );
    assert_eq!(
        p.endpoints().call.as_str(),
        "https://example.com/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        p.endpoints().stream.as_str(),
        "https://example.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        p.endpoints().health.as_str(),
        "https://example.com/v1beta/models/gemini-2.5-flash",
        "models.get of the configured model (the health check)"
    );
    for url in [
        &p.endpoints().call,
        &p.endpoints().stream,
        &p.endpoints().health,
    ] {
        assert!(!url.as_str().contains("AIza"), "{url}");
    }
    let key = p.json_headers().get("x-goog-api-key").unwrap();
    assert!(key.is_sensitive());
    let tuned = provider(GeminiConfig::new("tunedModels/my-model-123"));
    assert!(tuned
        .endpoints()
        .call
        .as_str()
        .ends_with("/v1beta/tunedModels/my-model-123:generateContent"));
    let prefixed = provider(GeminiConfig::new("models/gemini-2.5-pro"));
    assert!(prefixed
        .endpoints()
        .call
        .as_str()
        .ends_with("/v1beta/models/gemini-2.5-pro:generateContent"));
}

#[test]
fn config_errors_are_reported_and_never_show_the_key() {
    let bad = |c: GeminiConfig| Gemini::new(c, &Transport::default()).unwrap_err();
    let err = bad(GeminiConfig::new("gemini-2.5-flash")
        .base_url(format!("{DEFAULT_BASE_URL}?key=AIza-in-the-url")));
    assert!(err.0.contains("query"), "{err}");
    assert!(!err.0.contains("AIza"), "{err}");
    for model in [
        "",
        "gemini 2.5",
        "models/",
        "a/b",
        "x?y",
        "m:generateContent",
    ] {
        assert!(bad(GeminiConfig::new(model)).0.contains("model"), "{model}");
    }
    assert!(bad(GeminiConfig::new("m").api_key(Secret::new("")))
        .0
        .contains("empty"));
    let err = bad(GeminiConfig::new("m").api_key(Secret::new("AIza-bad\nkey")));
    assert!(!err.0.contains("AIza"), "{err}");
    assert!(bad(GeminiConfig::new("m").header("bad header", "v"))
        .0
        .contains("header"));
    let p = provider(GeminiConfig::new("m").api_key(Secret::new("AIza-visible-nowhere")));
    assert!(!format!("{p:?}").contains("AIza-visible-nowhere"));
}

#[test]
fn text_completion_with_cached_tokens() {
    let reply = parse_response(fixture!("completion_text.json").as_bytes()).unwrap();
    assert_eq!(
        reply.text,
        "The capital of France is Paris (Île-de-France)."
    );
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(reply.model.as_deref(), Some("gemini-2.5-flash"));
    assert!(reply.tool_calls.is_empty());
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 25,
            output_tokens: 12,
            cached_input_tokens: 5,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        })
    );
}

#[test]
fn a_function_call_is_a_tool_call_with_a_stable_id() {
    let reply = parse_response(fixture!("completion_tool_call.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(reply.tool_calls, [call("call_0", "Paris")]);
    let usage = reply.usage.unwrap();
    assert_eq!((usage.output_tokens, usage.reasoning_tokens), (46, 41));
}

#[test]
fn parallel_calls_keep_order_and_any_id_gemini_gives() {
    let reply = parse_response(fixture!("completion_parallel_calls.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "Checking both cities.");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    let calls: Vec<_> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0", "get_weather", r#"{"city":"Paris"}"#),
            ("fc-sy-2", "get_weather", r#"{"city":"Rome"}"#),
            ("call_2", "get_time", "{}"),
        ]
    );
}

#[test]
fn thoughts_are_skipped_and_counted_as_output() {
    let reply = parse_response(fixture!("completion_thinking.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "Paris.");
    assert_eq!(reply.model.as_deref(), Some("gemini-2.5-pro"));
    let usage = reply.usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.cached_input_tokens),
        (2048, 1920)
    );
    assert_eq!(usage.uncached_input_tokens(), 128);
    assert_eq!((usage.output_tokens, usage.reasoning_tokens), (900, 896));
}

#[test]
fn tool_use_prompt_tokens_are_input() {
    let body = json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 10, "toolUsePromptTokenCount": 7, "candidatesTokenCount": 1}});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    assert_eq!(reply.usage.map(|u| u.input_tokens), Some(17));
}

#[test]
fn a_safety_stop_is_a_content_filter_finish() {
    let reply = parse_response(fixture!("completion_safety.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(reply.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(reply.usage.map(|u| u.input_tokens), Some(14));
}

#[test]
fn a_blocked_prompt_is_content_filtered() {
    let err = parse_response(fixture!("prompt_blocked.json").as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered);
    assert_eq!(err.vendor_code.as_deref(), Some("PROHIBITED_CONTENT"));
    assert!(err.message.contains("PROHIBITED_CONTENT"), "{err}");
}

#[test]
fn malformed_bodies_are_never_empty_completions() {
    let cases: Vec<Value> = serde_json::from_str(fixture!("malformed.json")).unwrap();
    let mut bodies: Vec<String> = cases
        .iter()
        .map(|c| c["body"].as_str().unwrap().to_owned())
        .collect();
    bodies.extend([
        String::new(),
        "  \n".into(),
        "<html><body>Bad gateway</body></html>".into(),
    ]);
    for body in bodies {
        let err = parse_response(body.as_bytes()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{body:?}: {err}");
    }
}

#[test]
fn an_error_inside_a_200_is_classified() {
    let body = json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}});
    let err = parse_response(body.to_string().as_bytes()).unwrap_err();
    assert_eq!((err.kind, err.status), (ErrorKind::Overloaded, None));
}

#[test]
fn finish_reasons_are_normalised() {
    let cases = [
        ("STOP", false, FinishReason::Stop),
        ("STOP", true, FinishReason::ToolCalls),
        ("MAX_TOKENS", false, FinishReason::Length),
        ("SAFETY", false, FinishReason::ContentFilter),
        ("RECITATION", false, FinishReason::ContentFilter),
        ("BLOCKLIST", false, FinishReason::ContentFilter),
        ("PROHIBITED_CONTENT", false, FinishReason::ContentFilter),
        ("SPII", false, FinishReason::ContentFilter),
        ("IMAGE_SAFETY", false, FinishReason::ContentFilter),
        (
            "MALFORMED_FUNCTION_CALL",
            false,
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
        ("OTHER", false, FinishReason::Other("OTHER".into())),
    ];
    for (wire, called, ours) in cases {
        assert_eq!(finish_reason(wire, called), ours, "{wire}");
    }
}

/// Every event of an SSE text, parsed by one stream parser.
fn events(sse: &str) -> Vec<Result<Parsed, ProviderError>> {
    let mut parser = StreamParser::new();
    SseParser::new()
        .push(sse.as_bytes())
        .iter()
        .map(|e| parser.parse_event(e))
        .collect()
}

fn chunks(sse: &str) -> Vec<ChatChunk> {
    events(sse)
        .into_iter()
        .map(|p| match p.unwrap() {
            Parsed::Chunk(c) => c,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn data(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

#[test]
fn stream_fixture_text_finish_and_usage() {
    let chunks = chunks(fixture!("stream_text.sse"));
    assert_eq!(chunks.len(), 3);
    let text: String = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(text, "The capital of France is Paris (Île-de-France).");
    assert!(chunks[..2].iter().all(|c| c.finish_reason.is_none()));
    let last = &chunks[2];
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        last.usage
            .map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)),
        Some((25, 12, 5))
    );
    assert_eq!(last.model.as_deref(), Some("gemini-2.5-flash"));
}

#[test]
fn stream_fixture_tool_call_arrives_whole() {
    let chunks = chunks(fixture!("stream_tool_call.sse"));
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        chunks[0].tool_calls,
        [ToolCallDelta {
            index: 0,
            id: Some("call_0".into()),
            name: Some("get_weather".into()),
            arguments: r#"{"city":"Paris"}"#.into(),
        }]
    );
    assert_eq!(chunks[0].finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn calls_are_numbered_across_the_stream_and_remembered_at_the_finish() {
    let call = |city: &str| json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather", "args": {"city": city}}}]}}]});
    let finish = json!({"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}});
    let sse = [call("Paris"), call("Rome"), finish]
        .iter()
        .map(data)
        .collect::<String>();
    let chunks = chunks(&sse);
    let ids: Vec<_> = chunks
        .iter()
        .flat_map(|c| &c.tool_calls)
        .map(|d| (d.index, d.id.clone().unwrap()))
        .collect();
    assert_eq!(ids, [(0, "call_0".into()), (1, "call_1".into())]);
    assert_eq!(chunks[2].finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn stream_thoughts_are_skipped_and_a_safety_stop_is_a_filter() {
    let sse = [
        json!({"candidates": [{"content": {"parts": [{"text": "Let me think", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": "Once upon"}]}}]}),
        json!({"candidates": [{"finishReason": "SAFETY"}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 3}}),
    ]
    .iter()
    .map(data)
    .collect::<String>();
    let chunks = chunks(&sse);
    assert_eq!(chunks[0].text, "");
    assert_eq!(chunks[1].text, "Once upon");
    assert_eq!(chunks[2].finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(chunks[2].usage.map(|u| u.output_tokens), Some(5));
}

#[test]
fn stream_errors_blocks_and_garbage() {
    let first = events(fixture!("stream_error_first.sse"));
    assert_eq!(first[0].as_ref().unwrap_err().kind, ErrorKind::Overloaded);

    let mut parser = StreamParser::new();
    let blocked = SseEvent::message(r#"{"promptFeedback": {"blockReason": "SAFETY"}}"#);
    let err = parser.parse_event(&blocked).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered);

    for garbage in ["{\"candidates\": [", "<html>", "\"ok\"", "[]"] {
        let err = parser.parse_event(&SseEvent::message(garbage)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{garbage}");
    }
    let named = SseEvent {
        event: "error".into(),
        ..SseEvent::message(
            r#"{"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}"#,
        )
    };
    assert_eq!(
        parser.parse_event(&named).unwrap_err().kind,
        ErrorKind::RateLimited
    );
    assert_eq!(
        parser.parse_event(&SseEvent::message("  ")).unwrap(),
        Parsed::Skip
    );
}

/// errors.json, straight through `classify` (the shared suite runs it over HTTP too).
#[test]
fn error_table_classifies() {
    crate::provider::error_body::table::assert_classifies(fixture!("errors.json"), classify);
}

#[test]
fn vendor_codes_prefer_the_error_info_reason() {
    let body = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}});
    let err = classify_value(&body);
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(err.vendor_code.as_deref(), Some("API_KEY_INVALID"));
    let err = classify_value(&json!({"error": {"code": 500, "message": "", "status": "INTERNAL"}}));
    assert_eq!(err.kind, ErrorKind::Server);
    assert!(err.message.contains("INTERNAL"), "{err}");
}

#[test]
fn absurd_usage_is_malformed_so_the_call_fails_over() {
    let body = |usage: Value| {
        json!({"candidates": [{"content": {"parts": [{"text": "hi"}], "role": "model"},
            "finishReason": "STOP"}], "usageMetadata": usage})
        .to_string()
    };
    // prompt + tool-use prompt counts once summed without saturating
    let wrap = body(json!({"promptTokenCount": u64::MAX, "toolUsePromptTokenCount": 5}));
    let err = parse_response(wrap.as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
    let thoughts = body(json!({"promptTokenCount": 3, "thoughtsTokenCount": 100_000_001}));
    assert_eq!(
        parse_response(thoughts.as_bytes()).unwrap_err().kind,
        ErrorKind::Malformed
    );
    let mut parser = StreamParser::new();
    let err = parser
        .parse_event(&SseEvent::message(body(
            json!({"candidatesTokenCount": 1_u64 << 63}),
        )))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}
