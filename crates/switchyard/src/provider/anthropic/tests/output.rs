//! Cache breakpoints on the blocks they mark, and JSON output: structured outputs on models
//! that have them, else a forced tool whose input comes back as the answer (plain and
//! streamed); never an instruction in the prompt.

use super::*;
use crate::chat::{CacheControl, CachePoint, CacheTtl, ReasoningEffort, ResponseFormat};

fn cached(mut m: Message, parts: &[(u32, Option<CacheTtl>)]) -> Message {
    m.cache = parts
        .iter()
        .map(|&(part, ttl)| CachePoint {
            part,
            control: CacheControl { ttl },
        })
        .collect();
    m
}

fn parts(role: Role, texts: &[&str]) -> Message {
    Message {
        content: texts
            .iter()
            .map(|t| ContentPart::Text {
                text: (*t).to_owned(),
            })
            .collect(),
        ..Message::text(role, "")
    }
}

#[test]
fn cache_breakpoints_go_on_the_blocks_they_mark_with_their_ttl() {
    let mut tool = weather_tool();
    tool.cache_control = Some(CacheControl::default());
    let mut req = conversation(vec![
        cached(
            parts(Role::System, &["A long static prompt.", "Today is Monday."]),
            &[(0, Some(CacheTtl::OneHour))],
        ),
        cached(
            parts(Role::User, &["<document>", "Summarise it."]),
            &[(0, None)],
        ),
        cached(Message::assistant("A summary."), &[(0, None)]),
        Message::user("Thanks."),
    ]);
    req.tools = vec![tool];
    let b = body(&req, false);
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        b["system"],
        json!([
            {"type": "text", "text": "A long static prompt.",
             "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            {"type": "text", "text": "Today is Monday."}
        ])
    );
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "<document>", "cache_control": ephemeral},
                text("Summarise it.")]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "A summary.", "cache_control": ephemeral}]},
            {"role": "user", "content": [text("Thanks.")]}
        ])
    );
    assert_eq!(b["tools"][0]["cache_control"], ephemeral);
}

#[test]
fn a_marked_tool_result_carries_the_mark() {
    let req = conversation(vec![
        Message::user("Weather?"),
        tool_calling("toolu_1", r#"{"city":"Paris"}"#),
        cached(
            Message::tool_result("toolu_1", "get_weather", "Sunny"),
            &[(0, None)],
        ),
    ]);
    let b = body(&req, false);
    assert_eq!(
        b["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny",
            "cache_control": {"type": "ephemeral"}})
    );
}

#[test]
fn more_breakpoints_than_anthropic_takes_or_one_on_empty_text_is_a_bad_request() {
    let five = conversation(vec![cached(
        parts(Role::User, &["a", "b", "c", "d", "e"]),
        &[(0, None), (1, None), (2, None), (3, None), (4, None)],
    )]);
    let err = error_of(&five);
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("at most 4"), "{err}");
    let empty = conversation(vec![cached(parts(Role::User, &["", "b"]), &[(0, None)])]);
    assert!(error_of(&empty).message.contains("empty text"));
}

#[test]
fn model_ids_say_whether_structured_outputs_exist() {
    for (model, has) in [
        ("claude-sonnet-4-5", true),
        ("claude-sonnet-4-5-20250929", true),
        ("claude-haiku-4-5-20251001", true),
        ("claude-opus-4-6", true),
        ("claude-sonnet-5", true),
        ("claude-sonnet-5-20260101", true),
        ("claude-sonnet-4-5@20250929", true),
        ("anthropic.claude-opus-4-5-20251101-v1:0", true),
        ("claude-opus-4-1-20250805", false),
        ("claude-sonnet-4-20250514", false),
        ("claude-3-7-sonnet-20250219", false),
        ("claude-3-5-haiku-latest", false),
        ("my-proxy-alias", false),
    ] {
        assert_eq!(has_structured_outputs(model), has, "{model}");
    }
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"], "additionalProperties": false})
}

fn asking_json(format: ResponseFormat) -> ChatRequest {
    let mut req = conversation(vec![
        Message::system("You extract places."),
        Message::user("I flew to Paris."),
    ]);
    req.response_format = Some(format);
    req
}

fn place() -> ResponseFormat {
    ResponseFormat::JsonSchema {
        name: "place".into(),
        schema: schema(),
        strict: Some(true),
    }
}

const OLD_MODEL: &str = "claude-sonnet-4-20250514";

#[test]
fn a_schema_goes_as_structured_outputs_where_the_model_has_them() {
    let mut req = asking_json(place());
    req.tools = vec![weather_tool()];
    let b = body(&req, false);
    assert_eq!(
        b["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema()}})
    );
    assert_eq!(b["system"], "You extract places.", "no instruction added");
    assert_eq!(
        b["tools"].as_array().unwrap().len(),
        1,
        "the client's tools"
    );
    assert!(b.get("tool_choice").is_none());
    // the config overrides the model's name either way
    let forced = AnthropicConfig {
        structured_outputs: Some(false),
        ..AnthropicConfig::new(MODEL)
    };
    req.tools.clear();
    assert!(body_with(forced, &req, false)
        .get("output_config")
        .is_none());
    let native = AnthropicConfig {
        structured_outputs: Some(true),
        ..AnthropicConfig::new(OLD_MODEL)
    };
    assert!(body_with(native, &req, false)
        .get("output_config")
        .is_some());
}

#[test]
fn without_structured_outputs_the_format_is_a_forced_tool() {
    let old = || AnthropicConfig::new(OLD_MODEL);
    let b = body_with(old(), &asking_json(place()), false);
    assert_eq!(b["system"], "You extract places.", "no instruction added");
    assert!(b.get("output_config").is_none());
    assert_eq!(
        b["tools"],
        json!([{"name": "place", "description": "The answer, as a JSON value in the requested format.",
            "input_schema": schema()}])
    );
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "place", "disable_parallel_tool_use": true})
    );
    // json_object: structured outputs take no open object, so a forced tool on every model
    for config in [old(), AnthropicConfig::new(MODEL)] {
        let b = body_with(config, &asking_json(ResponseFormat::JsonObject), true);
        assert_eq!(b["tools"][0]["name"], "json_response");
        assert_eq!(b["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(b["tool_choice"]["name"], "json_response");
        assert_eq!(b["system"], "You extract places.");
    }
    // text is no format at all
    let b = body_with(old(), &asking_json(ResponseFormat::Text), false);
    assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
}

#[test]
fn a_forced_tool_refuses_the_clients_tools_a_forcing_choice_and_thinking_by_name() {
    let p = provider(AnthropicConfig::new(OLD_MODEL));
    let refused = |req: &ChatRequest| p.build_request(req, false).unwrap_err();
    let mut req = asking_json(place());
    req.tools = vec![weather_tool()];
    assert_eq!(
        p.codec().cannot_honour(&req).names(),
        ["tools", "response_format"],
        "both contract fields: so the gateway skips this provider"
    );
    let native = provider(AnthropicConfig::new(MODEL));
    assert!(
        native.codec().cannot_honour(&req).is_empty(),
        "structured outputs take both"
    );
    let err = refused(&req);
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(
        err.message
            .contains("response_format json_schema with tools")
            && err.message.contains("structured outputs"),
        "{err}"
    );
    let mut req = asking_json(ResponseFormat::JsonObject);
    req.tool_choice = Some(ToolChoice::Required);
    assert!(refused(&req)
        .message
        .contains("response_format json_object with tool_choice"));
    let mut req = asking_json(place());
    req.reasoning_effort = Some(ReasoningEffort::Low);
    req.max_tokens = Some(4000);
    assert!(refused(&req).message.contains("with reasoning_effort"));
    assert_eq!(
        p.codec().cannot_honour(&req).names(),
        ["response_format", "reasoning_effort"],
        "thinking is degradable: the gateway drops it and keeps the format"
    );
    // thinking off, or a choice that forces nothing, is fine
    req.reasoning_effort = Some(ReasoningEffort::None);
    req.tool_choice = Some(ToolChoice::Auto);
    assert!(p.build_request(&req, false).is_ok());
    assert!(p.codec().cannot_honour(&req).is_empty());
}

fn forced_call() -> AnthropicCall {
    AnthropicCall {
        trimmed: String::new(),
        json_tool: Some("place".to_owned()),
    }
}

#[test]
fn the_forced_tools_input_comes_back_as_the_answer() {
    let p = provider(AnthropicConfig::new(OLD_MODEL));
    let reply = json!({"type": "message", "model": OLD_MODEL, "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "place",
            "input": {"city": "Paris"}}],
        "usage": {"input_tokens": 20, "output_tokens": 9}});
    let r = p
        .codec()
        .parse_reply(&serde_json::to_vec(&reply).unwrap(), forced_call())
        .unwrap();
    assert_eq!(r.text, r#"{"city":"Paris"}"#);
    assert!(r.tool_calls.is_empty(), "no tool call shown");
    assert_eq!(r.finish_reason, Some(FinishReason::Stop));
    // a reply cut before the call stays as it came
    let cut = json!({"type": "message", "stop_reason": "max_tokens", "content": []});
    let r = p
        .codec()
        .parse_reply(&serde_json::to_vec(&cut).unwrap(), forced_call())
        .unwrap();
    assert_eq!(
        (r.text.as_str(), r.finish_reason),
        ("", Some(FinishReason::Length))
    );
}

#[test]
fn streamed_the_forced_tools_input_deltas_are_text() {
    let p = provider(AnthropicConfig::new(OLD_MODEL));
    let mut parser = p.codec().events(forced_call());
    let events = [
        json!({"type": "message_start", "message": {"model": OLD_MODEL,
            "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "toolu_1", "name": "place", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta":
            {"type": "input_json_delta", "partial_json": "{\"city\": "}}),
        json!({"type": "content_block_delta", "index": 0, "delta":
            {"type": "input_json_delta", "partial_json": "\"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9}}),
    ];
    let chunks: Vec<ChatChunk> = events
        .into_iter()
        .filter_map(|data| {
            let name = data["type"].as_str().unwrap().to_owned();
            match parser.parse_event(&event(&name, data)).unwrap() {
                Parsed::Chunk(c) => Some(c),
                _ => None,
            }
        })
        .collect();
    let text: String = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(text, r#"{"city": "Paris"}"#);
    assert!(chunks.iter().all(|c| c.tool_calls.is_empty()));
    assert_eq!(
        chunks.last().unwrap().finish_reason,
        Some(FinishReason::Stop)
    );
    // a forced tool that ended without input answers an empty object
    let mut parser = p.codec().events(forced_call());
    let start = json!({"type": "content_block_start", "index": 0, "content_block":
        {"type": "tool_use", "id": "toolu_1", "name": "place", "input": {}}});
    assert_eq!(
        parser
            .parse_event(&event("content_block_start", start))
            .unwrap(),
        Parsed::Skip
    );
    let stop = json!({"type": "content_block_stop", "index": 0});
    let Parsed::Chunk(last) = parser
        .parse_event(&event("content_block_stop", stop))
        .unwrap()
    else {
        panic!("the empty object")
    };
    assert_eq!(last.text, "{}");
}
