//! Request mapping, feature by feature: roles, system instruction, images, generation
//! config, tools, tool history, URLs and configuration errors.

use super::*;

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
    // Any other query parameter stays, after the path (and before `alt=sse`'s).
    let kept = provider(
        GeminiConfig::new("gemini-2.5-flash").base_url(format!("{DEFAULT_BASE_URL}?tenant=a")),
    );
    assert!(kept
        .endpoints()
        .stream
        .as_str()
        .ends_with("/models/gemini-2.5-flash:streamGenerateContent?alt=sse&tenant=a"));
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
