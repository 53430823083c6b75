//! Request mapping, feature by feature: messages, images, sampling, tools, tool history,
//! streaming options and configuration errors.

use super::*;

#[test]
fn plain_text_request_is_minimal() {
    let req = ChatRequest::from_prompt("What is the capital of France?");
    assert_eq!(
        body(&req, false),
        json!({
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": "What is the capital of France?"}]
        })
    );
}

#[test]
fn system_and_turns_keep_their_order() {
    let req = ChatRequest {
        messages: vec![
            Message::system("Answer in one word."),
            Message::user("Capital of France?"),
            Message::assistant("Paris."),
            Message::user("And of Italy?"),
        ],
        ..ChatRequest::default()
    };
    let roles: Vec<_> = body(&req, false)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}:{}",
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            "system:Answer in one word.",
            "user:Capital of France?",
            "assistant:Paris.",
            "user:And of Italy?"
        ]
    );
}

#[test]
fn images_become_image_url_parts() {
    let mut message = Message::user("What is in these images?");
    message.content.push(ContentPart::Image {
        source: ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        detail: Some("low".into()),
    });
    message.content.push(ContentPart::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        },
        detail: None,
    });
    let req = ChatRequest {
        messages: vec![message],
        ..ChatRequest::default()
    };
    assert_eq!(
        body(&req, false)["messages"][0]["content"],
        json!([
            {"type": "text", "text": "What is in these images?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ])
    );
}

#[test]
fn an_image_alone_is_still_sent() {
    let mut message = Message::user("");
    message.content = vec![ContentPart::Image {
        source: ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        detail: None,
    }];
    let req = ChatRequest {
        messages: vec![message],
        ..ChatRequest::default()
    };
    assert_eq!(
        body(&req, false)["messages"][0]["content"],
        json!([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}])
    );
}

#[test]
fn sampling_stop_user_and_response_formats() {
    let mut req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    req.temperature = Some(0.5);
    req.top_p = Some(0.25);
    req.stop = vec!["\n\n".into(), "END".into()];
    req.user = Some("user-42".into());
    req.response_format = Some(ResponseFormat::JsonObject);
    let b = body(&req, false);
    assert_eq!(b["temperature"], json!(0.5));
    assert_eq!(b["top_p"], json!(0.25));
    assert_eq!(b["stop"], json!(["\n\n", "END"]));
    assert_eq!(b["user"], json!("user-42"));
    assert_eq!(b["max_completion_tokens"], json!(64));
    assert!(b.get("max_tokens").is_none());
    assert_eq!(b["response_format"], json!({"type": "json_object"}));

    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "answer".into(),
        schema: json!({"type": "object"}),
        strict: Some(true),
    });
    assert_eq!(
        body(&req, false)["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}})
    );
    req.response_format = Some(ResponseFormat::Text);
    assert_eq!(
        body(&req, false)["response_format"],
        json!({"type": "text"})
    );
}

#[test]
fn use_max_tokens_switches_the_field_name() {
    let req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    let config = OpenAiConfig {
        use_max_tokens: true,
        ..OpenAiConfig::new("llama3")
    };
    let b = body_with(config, &req, false);
    assert_eq!(b["max_tokens"], json!(64));
    assert!(b.get("max_completion_tokens").is_none());
}

#[test]
fn tools_and_every_tool_choice() {
    let mut req = ChatRequest::from_prompt("Weather in Paris?");
    req.tools = vec![weather_tool()];
    let b = body(&req, false);
    assert_eq!(
        b["tools"],
        json!([{"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }}])
    );
    assert!(b.get("tool_choice").is_none());
    let cases = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ),
    ];
    for (choice, expected) in cases {
        req.tool_choice = Some(choice);
        assert_eq!(body(&req, false)["tool_choice"], expected);
    }
}

#[test]
fn tool_history_round_trips() {
    let mut assistant = Message::assistant("");
    assistant.content.clear();
    assistant.tool_calls = vec![ToolCall {
        id: "call_1".into(),
        name: "get_weather".into(),
        arguments: r#"{"city":"Paris"}"#.into(),
    }];
    let req = ChatRequest {
        messages: vec![
            Message::user("Weather in Paris?"),
            assistant,
            Message::tool_result("call_1", "get_weather", r#"{"temp_c":18}"#),
        ],
        tools: vec![weather_tool()],
        ..ChatRequest::default()
    };
    let b = body(&req, false);
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
        ]})
    );
    assert_eq!(
        b["messages"][2],
        json!({"role": "tool", "content": "{\"temp_c\":18}", "tool_call_id": "call_1"})
    );

    let mut orphan = Message::tool_result("x", "get_weather", "{}");
    orphan.tool_call_id = None;
    let bad = ChatRequest {
        messages: vec![orphan],
        ..ChatRequest::default()
    };
    let err = provider(OpenAiConfig::new("m"))
        .build_request(&bad, false)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
}

#[test]
fn streaming_requests_ask_for_usage() {
    let b = body(&ChatRequest::from_prompt("hi"), true);
    assert_eq!(b["stream"], json!(true));
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
    let b = body(&ChatRequest::from_prompt("hi"), false);
    assert!(b.get("stream").is_none() && b.get("stream_options").is_none());
}

#[test]
fn config_errors_are_reported_and_never_show_the_key() {
    let bad = |c: OpenAiConfig| OpenAi::new(c, &Transport::default()).unwrap_err();
    assert!(bad(OpenAiConfig::new("m").base_url("localhost:8000/v1"))
        .0
        .contains("base_url"));
    assert!(bad(OpenAiConfig::new("m").api_key(Secret::new("")))
        .0
        .contains("empty"));
    let err = bad(OpenAiConfig::new("m").api_key(Secret::new("sk-bad\nkey")));
    assert!(!err.0.contains("sk-bad"), "{err}");
    assert!(bad(OpenAiConfig::new("m").header("bad header", "v"))
        .0
        .contains("header"));
    let p = provider(OpenAiConfig::new("m").api_key(Secret::new("sk-visible-nowhere")));
    assert!(!format!("{p:?}").contains("sk-visible-nowhere"));
}

/// A server that refuses `stream_options` (and reports usage unasked) gets none.
#[test]
fn stream_usage_off_sends_no_stream_options() {
    let config = OpenAiConfig {
        stream_usage: false,
        ..OpenAiConfig::new("m")
    };
    let b = body_with(config, &ChatRequest::from_prompt("hi"), true);
    assert_eq!(b["stream"], json!(true));
    assert!(b.get("stream_options").is_none(), "{b}");
}

/// Mistral takes only nine alphanumerics: other ids become a stable hash, the same for a
/// call and the result answering it; ids already in that form are kept.
#[test]
fn alnum9_tool_call_ids_pair_calls_with_their_results() {
    let call = |id: &str| {
        let mut m = Message::assistant("");
        m.content.clear();
        m.tool_calls = vec![ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            arguments: "{}".into(),
        }];
        m
    };
    let req = ChatRequest {
        messages: vec![
            Message::user("Weather?"),
            call("toolu_01A09q90qw90lq917835lq9"),
            Message::tool_result("toolu_01A09q90qw90lq917835lq9", "get_weather", "{}"),
            call("abcDEF123"),
            Message::tool_result("abcDEF123", "get_weather", "{}"),
            call("call_2"),
            Message::tool_result("call_2", "get_weather", "{}"),
        ],
        ..ChatRequest::default()
    };
    let config = || OpenAiConfig {
        tool_call_ids: ToolCallIds::Alnum9,
        ..OpenAiConfig::new("mistral-large-latest")
    };
    let b = body_with(config(), &req, false);
    let ids: Vec<(String, String)> = [1, 3, 5]
        .iter()
        .map(|&i| {
            (
                b["messages"][i]["tool_calls"][0]["id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                b["messages"][i + 1]["tool_call_id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    for (call, result) in &ids {
        assert_eq!(call, result);
        assert_eq!(call.len(), 9, "{call}");
        assert!(call.bytes().all(|b| b.is_ascii_alphanumeric()), "{call}");
    }
    assert_eq!(ids[1].0, "abcDEF123");
    assert_ne!(ids[0].0, ids[2].0);
    // Stable: the same history maps to the same ids on the next call.
    assert_eq!(body_with(config(), &req, false), b);
    // The default leaves ids alone.
    let plain = body(&req, false);
    assert_eq!(
        plain["messages"][1]["tool_calls"][0]["id"],
        json!("toolu_01A09q90qw90lq917835lq9")
    );
}
