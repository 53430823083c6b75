//! Requests: every mapping rule, feature by feature, and config errors.

use super::*;

#[test]
fn plain_text_request_always_carries_max_tokens() {
    let req = ChatRequest::from_prompt("What is the capital of France?");
    assert_eq!(
        body(&req, false),
        json!({
            "model": MODEL,
            "max_tokens": 4096,
            "messages": [{"role": "user", "content": [text("What is the capital of France?")]}]
        })
    );
    let config = AnthropicConfig::new(MODEL).default_max_tokens(1000);
    assert_eq!(body_with(config.clone(), &req, false)["max_tokens"], 1000);
    let capped = req.with_max_tokens(64);
    assert_eq!(body_with(config, &capped, false)["max_tokens"], 64);
}

#[test]
fn system_messages_are_lifted_wherever_they_stand() {
    let req = conversation(vec![
        Message::system("Answer in one word."),
        Message::user("Capital of France?"),
        Message::system("Be polite."),
        Message::assistant("Paris."),
        Message::user("And of Italy?"),
    ]);
    let b = body(&req, false);
    assert_eq!(b["system"], "Answer in one word.\n\nBe polite.");
    let roles: Vec<_> = b["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert!(body(&ChatRequest::from_prompt("hi"), false)
        .get("system")
        .is_none());
}

#[test]
fn consecutive_roles_are_merged_into_alternating_turns() {
    let req = conversation(vec![
        Message::user("First question."),
        Message::user("Second question."),
        Message::assistant("One answer."),
        Message::user("Thanks."),
    ]);
    assert_eq!(
        body(&req, false)["messages"],
        json!([
            {"role": "user", "content": [text("First question."), text("Second question.")]},
            {"role": "assistant", "content": [text("One answer.")]},
            {"role": "user", "content": [text("Thanks.")]}
        ])
    );
}

#[test]
fn tool_results_are_user_turns_and_lead_them() {
    let req = conversation(vec![
        Message::user("Weather in Paris and Rome?"),
        {
            let mut m = tool_calling("toolu_1", r#"{"city":"Paris"}"#);
            m.tool_calls.push(ToolCall {
                id: "toolu_2".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "Rome"}"#.into(),
            });
            m
        },
        Message::tool_result("toolu_1", "get_weather", r#"{"temp_c":18}"#),
        Message::user("Answer in Celsius."),
        Message::tool_result("toolu_2", "get_weather", r#"{"temp_c":24}"#),
    ]);
    let b = body(&req, false);
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}
        ]})
    );
    assert_eq!(
        b["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"temp_c\":18}"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "{\"temp_c\":24}"},
            text("Answer in Celsius.")
        ]})
    );
    assert_eq!(b["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn assistant_text_with_tool_calls_and_empty_arguments() {
    let mut m = tool_calling("toolu_1", "  ");
    m.content = vec![ContentPart::Text {
        text: "Let me check.".into(),
    }];
    let req = conversation(vec![Message::user("Time?"), m]);
    assert_eq!(
        body(&req, false)["messages"][1]["content"],
        json!([text("Let me check."), {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}])
    );
}

#[test]
fn invalid_tool_arguments_are_a_bad_request_not_garbage() {
    for arguments in [r#"{"city": "Par"#, "[1, 2]", "\"Paris\"", "null"] {
        let req = conversation(vec![
            Message::user("Weather?"),
            tool_calling("toolu_1", arguments),
        ]);
        let err = error_of(&req);
        assert_eq!(err.kind, ErrorKind::BadRequest, "{arguments}");
        assert!(err.message.contains("toolu_1"), "{err}");
    }
    let mut orphan = Message::tool_result("x", "get_weather", "{}");
    orphan.tool_call_id = None;
    assert_eq!(
        error_of(&conversation(vec![orphan])).kind,
        ErrorKind::BadRequest
    );
}

#[test]
fn a_final_assistant_message_is_a_trimmed_prefill() {
    let req = conversation(vec![
        Message::user("Name a city."),
        Message::assistant("The city is \n "),
    ]);
    assert_eq!(
        body(&req, false)["messages"][1],
        json!({"role": "assistant", "content": [text("The city is")]})
    );
    // only the final assistant turn is trimmed
    let req = conversation(vec![
        Message::user("Name a city."),
        Message::assistant("Paris. "),
        Message::user("Another?"),
    ]);
    assert_eq!(
        body(&req, false)["messages"][1]["content"],
        json!([text("Paris. ")])
    );
    // a whitespace-only prefill is no prefill
    let req = conversation(vec![Message::user("Hi"), Message::assistant("  \n")]);
    assert_eq!(body(&req, false)["messages"].as_array().unwrap().len(), 1);
    // leading whitespace and inner whitespace are kept
    let req = conversation(vec![Message::user("Hi"), Message::assistant(" a  b\t")]);
    assert_eq!(
        body(&req, false)["messages"][1]["content"],
        json!([text(" a  b")])
    );
}

/// Stream rescue by continuation: the caller's prefill plus the text already sent, as two
/// assistant messages, become one prefill that continues exactly where the text stopped.
#[test]
fn a_continuation_joins_prefill_and_sent_text() {
    let req = conversation(vec![
        Message::system("Reply in JSON."),
        Message::user("Capital of France?"),
        Message::assistant("{\"capital\": "),
        Message::assistant("\"Paris\", \"region\": "),
    ]);
    let b = body(&req, true);
    assert_eq!(
        b["messages"][1],
        json!({"role": "assistant", "content": [text("{\"capital\": \"Paris\", \"region\":")]})
    );
    assert_eq!(b["stream"], true);
}

/// Claude usually restarts with the whitespace the prefill trim removed; the caller has it
/// already, so it is dropped once and prefill + reply join exactly.
#[test]
fn the_trimmed_whitespace_is_not_repeated_at_the_seam() {
    let cases: [(&str, &[&str], &str); 7] = [
        (" ", &[" the", " end"], "the end"),
        (" ", &["the"], "the"),
        ("\n\n", &["\n", "\nNext"], "Next"),
        ("\n\n", &["\n", "x \n"], "x \n"),
        (" ", &["  two"], " two"),
        (" ", &["", " a"], "a"),
        ("", &[" kept"], " kept"),
    ];
    for (trimmed, pieces, expected) in cases {
        let mut seam = Seam::new(trimmed.to_owned());
        let mut out = String::new();
        for piece in pieces {
            let mut piece = (*piece).to_owned();
            seam.apply(&mut piece);
            out.push_str(&piece);
        }
        assert_eq!(out, expected, "{trimmed:?} {pieces:?}");
    }
}

#[test]
fn a_streamed_continuation_starts_where_the_prefill_stopped() {
    let mut p = EventParser::for_call(" ".to_owned(), None);
    let delta = |t: &str| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
        )
    };
    let text = |parsed: Parsed| match parsed {
        Parsed::Chunk(c) => c.text,
        other => panic!("{other:?}"),
    };
    assert_eq!(text(p.parse_event(&delta(" is")).unwrap()), "is");
    assert_eq!(text(p.parse_event(&delta(" Paris")).unwrap()), " Paris");
}

#[test]
fn images_by_url_base64_and_data_url() {
    let mut message = Message::user("What is in these images?");
    for source in [
        ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        },
        ImageSource::Url {
            url: "data:image/jpeg;base64,/9j/4AAQ".into(),
        },
    ] {
        message.content.push(ContentPart::Image {
            source,
            detail: Some("low".into()),
        });
    }
    assert_eq!(
        body(&conversation(vec![message]), false)["messages"][0]["content"],
        json!([
            text("What is in these images?"),
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}
        ])
    );
}

#[test]
fn images_where_anthropic_takes_none_are_refused() {
    let image = ContentPart::Image {
        source: ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        detail: None,
    };
    for role in [Role::System, Role::Assistant] {
        let mut m = Message::text(role, "look");
        m.content.push(image.clone());
        let req = conversation(vec![Message::user("hi"), m, Message::user("ok")]);
        assert_eq!(error_of(&req).kind, ErrorKind::BadRequest, "{role:?}");
    }
    let mut m = Message::user("look");
    m.content.push(ContentPart::Image {
        source: ImageSource::Url {
            url: "data:image/png,rawbytes".into(),
        },
        detail: None,
    });
    assert_eq!(error_of(&conversation(vec![m])).kind, ErrorKind::BadRequest);
}

#[test]
fn a_tool_result_with_an_image_carries_blocks() {
    let mut result = Message::tool_result("toolu_1", "screenshot", "Here it is.");
    result.content.push(ContentPart::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        },
        detail: None,
    });
    let empty = Message::tool_result("toolu_2", "screenshot", "");
    let req = conversation(vec![
        Message::user("Screenshot?"),
        tool_calling("toolu_1", "{}"),
        result,
        empty,
    ]);
    assert_eq!(
        body(&req, false)["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                text("Here it is."),
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_2"}
        ])
    );
}

#[test]
fn sampling_stop_sequences_and_user() {
    let mut req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    req.temperature = Some(0.5);
    req.top_p = Some(0.25);
    req.stop = vec!["\n\nHuman:".into(), "END".into()];
    req.user = Some("user-42".into());
    let b = body(&req, false);
    assert_eq!(b["temperature"], json!(0.5));
    assert_eq!(b["top_p"], json!(0.25));
    assert_eq!(b["stop_sequences"], json!(["\n\nHuman:", "END"]));
    assert_eq!(b["metadata"], json!({"user_id": "user-42"}));
    assert!(b.get("stop").is_none() && b.get("user").is_none());
    assert!(b.get("stream").is_none());
}

#[test]
fn tools_and_every_tool_choice() {
    let mut req = ChatRequest::from_prompt("Weather in Paris?");
    req.tools = vec![weather_tool()];
    let b = body(&req, false);
    assert_eq!(
        b["tools"],
        json!([{
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }])
    );
    assert!(b.get("tool_choice").is_none());
    let cases = [
        (ToolChoice::Auto, json!({"type": "auto"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({"type": "tool", "name": "get_weather"}),
        ),
    ];
    for (choice, expected) in cases {
        req.tool_choice = Some(choice);
        assert_eq!(body(&req, false)["tool_choice"], expected);
    }
    // without tools, `auto` and `none` say nothing; a required tool still fails loudly
    req.tools.clear();
    for (choice, sent) in [
        (ToolChoice::Auto, false),
        (ToolChoice::None, false),
        (ToolChoice::Required, true),
    ] {
        req.tool_choice = Some(choice.clone());
        assert_eq!(
            body(&req, false).get("tool_choice").is_some(),
            sent,
            "{choice:?}"
        );
    }
}

#[test]
fn nothing_to_send_is_a_bad_request() {
    let req = conversation(vec![Message::system("Only a system prompt.")]);
    assert_eq!(error_of(&req).kind, ErrorKind::BadRequest);
    assert_eq!(
        error_of(&conversation(vec![Message::user("")])).kind,
        ErrorKind::BadRequest
    );
}

#[test]
fn config_errors_are_reported_and_never_show_the_key() {
    let bad = |c: AnthropicConfig| Anthropic::new(c, &Transport::default()).unwrap_err();
    assert!(
        bad(AnthropicConfig::new(MODEL).base_url("api.anthropic.com"))
            .0
            .contains("base_url")
    );
    assert!(bad(AnthropicConfig::new(MODEL).api_key(Secret::new("")))
        .0
        .contains("empty"));
    let err = bad(AnthropicConfig::new(MODEL).api_key(Secret::new("sk-ant-bad\nkey")));
    assert!(!err.0.contains("sk-ant-bad"), "{err}");
    assert!(bad(AnthropicConfig::new(MODEL).header("bad header", "v"))
        .0
        .contains("header"));
    assert!(
        bad(AnthropicConfig::new(MODEL).anthropic_version("2023\n06"))
            .0
            .contains("anthropic-version")
    );
    let p = provider(AnthropicConfig::new(MODEL).api_key(Secret::new("sk-ant-visible-nowhere")));
    assert!(!format!("{p:?}").contains("sk-ant-visible-nowhere"));
    assert_eq!(
        p.endpoints().call.as_str(),
        "https://api.anthropic.com/v1/messages"
    );
    assert_eq!(
        p.endpoints().health.as_str(),
        "https://api.anthropic.com/v1/models"
    );
}

#[test]
fn reasoning_effort_budget_is_cut_below_max_tokens_and_refused_under_the_minimum() {
    use crate::chat::ReasoningEffort;
    use crate::provider::anthropic::request::thinking;
    let t = serde_json::to_value(thinking(Some(ReasoningEffort::High), 5000).unwrap()).unwrap();
    assert_eq!(
        t,
        serde_json::json!({"type": "enabled", "budget_tokens": 4999})
    );
    let off = serde_json::to_value(thinking(Some(ReasoningEffort::None), 5000).unwrap()).unwrap();
    assert_eq!(off, serde_json::json!({"type": "disabled"}));
    let err = thinking(Some(ReasoningEffort::Low), 1024).unwrap_err();
    assert_eq!(err.kind, crate::error::ErrorKind::BadRequest);
    assert!(err.message.contains("max_tokens"), "{}", err.message);
}

/// A budget that does not fit `max_tokens` is a field the codec cannot honour for that
/// request (the gateway then sends it without thinking), never a refusal on the wire;
/// one that fits, or a native body (Anthropic judges the client's own), is no clash.
#[test]
fn thinking_that_does_not_fit_max_tokens_cannot_be_honoured() {
    use crate::chat::ReasoningEffort;
    let p = provider(AnthropicConfig::new(MODEL));
    let mut req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    req.reasoning_effort = Some(ReasoningEffort::Low);
    assert_eq!(p.codec().cannot_honour(&req).names(), ["reasoning_effort"]);
    let without = req.without(p.codec().cannot_honour(&req));
    assert!(p.build_request(&without, false).is_ok());
    req.max_tokens = Some(1025);
    assert!(
        p.codec().cannot_honour(&req).is_empty(),
        "a budget of 1024 fits"
    );
    req.max_tokens = None;
    assert!(
        p.codec().cannot_honour(&req).is_empty(),
        "the default max_tokens fits"
    );
    req.reasoning_effort = Some(ReasoningEffort::None);
    req.max_tokens = Some(64);
    assert!(
        p.codec().cannot_honour(&req).is_empty(),
        "thinking off always fits"
    );
    let mut marked = ChatRequest::from_prompt("hi");
    marked.messages.insert(0, Message::system(""));
    marked.messages[0].cache.push(crate::chat::CachePoint {
        part: 0,
        control: crate::chat::CacheControl::default(),
    });
    assert_eq!(
        p.codec().cannot_honour(&marked).names(),
        ["cache_control"],
        "Anthropic caches no empty block"
    );
    req.reasoning_effort = Some(ReasoningEffort::High);
    req.native = Some(crate::chat::Native::new(
        "anthropic",
        serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}),
    ));
    assert!(p.codec().cannot_honour(&req).is_empty());
}

fn signed(text: &str, signature: &str) -> crate::chat::Thinking {
    crate::chat::Thinking {
        text: text.into(),
        signature: Some(signature.into()),
        redacted: None,
    }
}

/// Reasoning in history goes back to Anthropic as it came: first in its assistant turn
/// (even when a text message before it is merged into the same turn), signature and
/// redacted data kept; reasoning another vendor sent (no signature) is left out.
#[test]
fn thinking_in_history_leads_its_assistant_turn_with_its_signature() {
    let mut call = tool_calling("toolu_1", r#"{"city":"Paris"}"#);
    call.thinking = vec![
        signed("Look it up.", "c2ln"),
        crate::chat::Thinking {
            redacted: Some("ZW5j".into()),
            ..crate::chat::Thinking::default()
        },
        crate::chat::Thinking {
            text: "unsigned, from another vendor".into(),
            ..crate::chat::Thinking::default()
        },
    ];
    let req = conversation(vec![
        Message::user("Weather in Paris?"),
        Message::assistant("Let me check."),
        call,
        Message::tool_result("toolu_1", "get_weather", "sunny"),
    ]);
    let sent = body(&req, false);
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "ZW5j"},
            text("Let me check."),
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
        ])
    );
    assert!(!sent.to_string().contains("unsigned"), "{sent}");
}

/// A final assistant turn is a prefill: Anthropic takes no reasoning there (with thinking
/// off it refuses it; with thinking on it refuses the prefill), so it goes; reasoning with
/// nothing else is no turn at all.
#[test]
fn a_prefill_and_a_reasoning_only_message_carry_no_thinking() {
    let mut prefill = Message::assistant("The answer is ");
    prefill.thinking = vec![signed("Hmm.", "c2ln")];
    let sent = body(
        &conversation(vec![Message::user("Question?"), prefill]),
        false,
    );
    assert_eq!(
        sent["messages"][1]["content"],
        json!([text("The answer is")])
    );
    let mut alone = Message::assistant("");
    alone.content.clear();
    alone.thinking = vec![signed("Hmm.", "c2ln")];
    let sent = body(
        &conversation(vec![Message::user("a"), alone, Message::user("b")]),
        false,
    );
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": [text("a"), text("b")]}])
    );
}

fn native_with_prefill(body: Value, prefill: &str) -> ChatRequest {
    let mut native = crate::chat::Native::new("anthropic", body);
    native.prefill = Some(prefill.into());
    ChatRequest {
        native: Some(native),
        ..ChatRequest::from_prompt("hi")
    }
}

/// A rescue's continuation of a native body: the prefill is appended as an assistant turn
/// (trailing whitespace trimmed, and dropped once from the reply), with thinking off (no
/// prefill with thinking on) and everything else as the client sent it.
#[test]
fn a_native_continuation_appends_the_prefill_with_thinking_off() {
    let client = json!({
        "model": "route", "max_tokens": 100,
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Count to three."}]
    });
    let p = provider(AnthropicConfig::new(MODEL));
    let req = native_with_prefill(client.clone(), "One, two, ");
    let (bytes, trimmed) = p.codec().encode(&req, true).unwrap();
    let sent: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(trimmed.trimmed, " ");
    assert!(sent.get("thinking").is_none() && sent.get("context_management").is_none());
    assert_eq!(sent["system"], client["system"], "cache_control kept");
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": "Count to three."},
            {"role": "assistant", "content": [text("One, two,")]}
        ])
    );
    let seam = p.codec().parse_reply(
        &serde_json::to_vec(&json!({"type": "message", "content": [text(" three.")],
            "stop_reason": "end_turn"}))
        .unwrap(),
        trimmed,
    );
    assert_eq!(
        seam.unwrap().text,
        "three.",
        "the trimmed space dropped once"
    );
}

/// The client's own prefill ends the body: the text already sent joins its last text block.
#[test]
fn a_native_continuation_joins_the_clients_prefill() {
    let client = json!({
        "model": "route", "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "Count to three."},
            {"role": "assistant", "content": "One,"}
        ]
    });
    let p = provider(AnthropicConfig::new(MODEL));
    let (bytes, trimmed) = p
        .codec()
        .encode(&native_with_prefill(client, " two,"), false)
        .unwrap();
    let sent: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(trimmed.trimmed, "");
    assert_eq!(sent["messages"][1]["content"], json!([text("One, two,")]));
    assert_eq!(sent["messages"].as_array().unwrap().len(), 2);
}

/// A native body with a prefill is not another codec's: `native_for` hides it, so a codec
/// that cannot append the prefill sends the shared shape (which has it).
#[test]
fn a_native_body_with_a_prefill_is_only_for_a_codec_that_appends_it() {
    let req = native_with_prefill(json!({"messages": []}), "x");
    assert!(req.native_for("anthropic").is_none());
    assert!(req.native_continuing("anthropic").is_some());
    assert!(req.native_continuing("openai").is_none());
}
