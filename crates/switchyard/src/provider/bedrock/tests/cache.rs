//! Prompt-cache breakpoints as Converse `cachePoint` blocks: placement, the models that
//! take them, what is refused, and the cache usage read back and priced.

use serde_json::{json, Value};

use super::*;
use crate::chat::{CacheControl, CachePoint, CacheTtl};

fn on(model: &str) -> BedrockCodec {
    BedrockCodec {
        model: model.into(),
    }
}

const SONNET_45: &str = "global.anthropic.claude-sonnet-4-5-20250929-v1:0";

fn marked(mut m: Message, part: u32, ttl: Option<CacheTtl>) -> Message {
    m.cache.push(CachePoint {
        part,
        control: CacheControl { ttl },
    });
    m
}

/// A request with four breakpoints (Bedrock's most): on a tool (1h), the system prompt's
/// second part, a user image and a tool result.
fn cached_request() -> ChatRequest {
    let system = Message {
        content: vec![
            ContentPart::Text {
                text: "Rules.".into(),
            },
            ContentPart::Text {
                text: "Long manual.".into(),
            },
            ContentPart::Text {
                text: "Today.".into(),
            },
        ],
        ..Message::system("")
    };
    let user = Message {
        content: vec![
            ContentPart::Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
                detail: None,
            },
            ContentPart::Text {
                text: "Weather?".into(),
            },
        ],
        ..Message::user("")
    };
    let call = Message {
        tool_calls: vec![ToolCall {
            id: "t1".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }],
        ..Message::assistant("Looking.")
    };
    ChatRequest {
        messages: vec![
            marked(system, 1, None),
            marked(user, 0, None),
            call,
            marked(Message::tool_result("t1", "get_weather", "Sunny"), 0, None),
        ],
        tools: vec![Tool {
            cache_control: Some(CacheControl {
                ttl: Some(CacheTtl::OneHour),
            }),
            ..weather()
        }],
        ..ChatRequest::from_prompt("")
    }
}

#[test]
fn cache_breakpoints_are_cache_points_after_the_blocks_they_close() {
    let (body, ()) = on(SONNET_45).encode(&cached_request(), false).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    let point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(
        body["system"],
        json!([{"text": "Rules."}, {"text": "Long manual."}, point, {"text": "Today."}])
    );
    assert_eq!(
        body["toolConfig"]["tools"],
        json!([
            {"toolSpec": {"name": "get_weather", "description": "Weather", "inputSchema": {"json":
                {"type": "object", "properties": {"city": {"type": "string"}}}}}},
            {"cachePoint": {"type": "default", "ttl": "1h"}},
        ])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"image": {"format": "png", "source": {"bytes": "AAAA"}}},
                point,
                {"text": "Weather?"},
            ]},
            {"role": "assistant", "content": [
                {"text": "Looking."},
                {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}},
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t1", "content": [{"text": "Sunny"}]}},
                point,
            ]},
        ])
    );
    // an assistant turn's marked text, before its tool calls (a TTL sent as given)
    let mut req = cached_request();
    req.messages[3].cache.clear();
    req.messages[2] = marked(req.messages[2].clone(), 0, Some(CacheTtl::FiveMinutes));
    let (body, ()) = on(SONNET_45).encode(&req, false).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body["messages"][1]["content"][1],
        json!({"cachePoint": {"type": "default", "ttl": "5m"}})
    );
    assert!(body["messages"][1]["content"][2].get("toolUse").is_some());
    assert_eq!(
        on(SONNET_45).model_support(Field::CacheControl),
        Support::Translated
    );
    assert!(on(SONNET_45).cannot_honour(&cached_request()).is_empty());
}

#[test]
fn models_that_do_not_cache_get_no_cache_points_and_ignore_the_field() {
    let req = cached_request();
    for model in [
        "meta.llama3-3-70b-instruct-v1:0",
        "mistral.mistral-large-2407-v1:0",
        "anthropic.claude-3-5-sonnet-20241022-v2:0",
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
    ] {
        let codec = on(model);
        assert_eq!(
            codec.model_support(Field::CacheControl),
            Support::Ignored,
            "{model}"
        );
        assert!(codec.cannot_honour(&req).is_empty(), "{model}");
        let (body, ()) = codec.encode(&req, false).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert!(!body.to_string().contains("cachePoint"), "{model}: {body}");
        // the system prompt stays one block per message
        assert_eq!(
            body["system"],
            json!([{"text": "Rules.Long manual.Today."}]),
            "{model}"
        );
    }
    // the vendor column: translated
    assert_eq!(
        BedrockCodec::support(Field::CacheControl),
        Support::Translated
    );
}

#[test]
fn which_models_cache_is_read_from_the_model_id() {
    use request::{caching, Caching};
    let claude = |one_hour| Caching::Claude { one_hour };
    for (model, expected) in [
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", claude(false)),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", claude(false)),
        ("anthropic.claude-sonnet-4-20250514-v1:0", claude(false)),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", claude(false)),
        (SONNET_45, claude(true)),
        ("eu.anthropic.claude-haiku-4-5-20251001-v1:0", claude(true)),
        (
            "global.anthropic.claude-opus-4-5-20251101-v1:0",
            claude(true),
        ),
        ("anthropic.claude-opus-4-6-v1", claude(true)),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-sonnet-4-5-20250929-v1:0",
            claude(true),
        ),
        ("amazon.nova-pro-v1:0", Caching::Nova),
        ("us.amazon.nova-premier-v1:0", Caching::Nova),
        ("anthropic.claude-3-haiku-20240307-v1:0", Caching::None),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", Caching::None),
        ("anthropic.claude-v2:1", Caching::None),
        ("meta.llama4-scout-17b-instruct-v1:0", Caching::None),
    ] {
        assert_eq!(caching(model), expected, "{model}");
    }
}

#[test]
fn breakpoints_a_caching_model_cannot_take_are_refused_not_shortened() {
    let mut one_hour = ChatRequest::from_prompt("Hi");
    let manual = marked(Message::system("Manual."), 0, Some(CacheTtl::OneHour));
    one_hour.messages.insert(0, manual);
    // Claude 4.5 takes it as asked
    let (body, ()) = on(SONNET_45).encode(&one_hour, false).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body["system"][1],
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    );
    // Claude 3.7 and Nova have no one-hour cache: cannot honour, and encode refuses
    for model in [
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "amazon.nova-lite-v1:0",
    ] {
        let codec = on(model);
        assert_eq!(
            codec.cannot_honour(&one_hour).names(),
            vec!["cache_control"],
            "{model}"
        );
        let err = codec.encode(&one_hour, false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(
            err.message.contains("models take a one-hour cache"),
            "{err}"
        );
    }
    // Nova caches no tool definitions; its system and messages it does
    let nova = on("amazon.nova-pro-v1:0");
    let tool_mark = ChatRequest {
        tools: vec![Tool {
            cache_control: Some(CacheControl::default()),
            ..weather()
        }],
        ..ChatRequest::from_prompt("Hi")
    };
    assert_eq!(
        nova.cannot_honour(&tool_mark).names(),
        vec!["cache_control"]
    );
    let err = nova.encode(&tool_mark, false).unwrap_err();
    assert_eq!(
        err.message,
        "cache_control on a tool: Amazon Nova on Bedrock caches no tool definitions \
         (\"amazon.nova-pro-v1:0\")"
    );
    let user_mark = ChatRequest {
        messages: vec![marked(Message::user("Long document."), 0, None)],
        ..ChatRequest::from_prompt("")
    };
    assert!(nova.cannot_honour(&user_mark).is_empty());
    let (body, ()) = nova.encode(&user_mark, false).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"text": "Long document."}, {"cachePoint": {"type": "default"}}])
    );
}

#[test]
fn bad_breakpoint_layouts_are_refused_with_the_reason() {
    let claude = on(SONNET_45);
    // a one-hour breakpoint after a five-minute one (tools come before system)
    let mut req = cached_request();
    req.tools[0].cache_control = Some(CacheControl::default());
    req.messages[0].cache[0].control.ttl = Some(CacheTtl::OneHour);
    let err = claude.encode(&req, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(
        err.message
            .contains("Bedrock wants one-hour breakpoints first"),
        "{err}"
    );
    assert_eq!(
        claude.cannot_honour(&req).names(),
        ["cache_control"],
        "so the gateway sends it without breakpoints (or skips, when strict)"
    );
    // five breakpoints
    let mut req = cached_request();
    req.tools[0].cache_control = None;
    for i in 0..2 {
        req.messages
            .push(marked(Message::user(format!("u{i}")), 0, None));
    }
    let err = claude.encode(&req, false).unwrap_err();
    assert!(err.message.contains("5 cache_control breakpoints"), "{err}");
    // a mark on an empty part
    let empty = ChatRequest {
        messages: vec![marked(Message::user(""), 0, None)],
        ..ChatRequest::from_prompt("")
    };
    let err = claude.encode(&empty, false).unwrap_err();
    assert!(err.message.contains("empty text part"), "{err}");
    assert_eq!(claude.cannot_honour(&empty).names(), ["cache_control"]);
}

/// Claude's thinking on Bedrock: a budget that does not fit `maxTokens`, or a model that
/// is not Claude, cannot be honoured (the gateway sends the request without it).
#[test]
fn thinking_that_cannot_be_sent_is_a_field_it_cannot_honour() {
    let claude = on(SONNET_45);
    let mut req = ChatRequest::from_prompt("hi").with_max_tokens(64);
    req.reasoning_effort = Some(crate::chat::ReasoningEffort::Low);
    assert_eq!(claude.cannot_honour(&req).names(), ["reasoning_effort"]);
    req.max_tokens = None;
    assert!(
        claude.cannot_honour(&req).is_empty(),
        "4096 by default fits"
    );
    let nova = on("amazon.nova-pro-v1:0");
    assert_eq!(nova.cannot_honour(&req).names(), ["reasoning_effort"]);
}

#[test]
fn cache_reads_and_writes_are_read_and_priced_one_hour_writes_apart() {
    let body = json!({
        "output": {"message": {"role": "assistant", "content": [{"text": "Hi."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 44,
                  "cacheReadInputTokens": 20, "cacheWriteInputTokens": 10,
                  "cacheDetails": [{"ttl": "1h", "inputTokens": 4}, {"ttl": "5m", "inputTokens": 6}]},
    });
    let reply = on(SONNET_45)
        .parse_reply(body.to_string().as_bytes(), ())
        .unwrap();
    let usage = reply.usage.unwrap();
    assert_eq!(
        usage,
        Usage {
            input_tokens: 40,
            output_tokens: 4,
            cached_input_tokens: 20,
            cache_write_tokens: 10,
            cache_write_1h_tokens: 4,
            ..Usage::default()
        }
    );
    let table = crate::cost::PriceTable::builtin();
    let price = &table.lookup(SONNET_45).unwrap().price;
    // $3 uncached, $0.30 read, $3.75 5-minute write, $6 1-hour write, $15 output per 1M:
    // 10*3 + 20*0.3 + 6*3.75 + 4*6 + 4*15 = $142.5 per 1M tokens, 1e6 picodollars each
    assert_eq!(price.cost(&usage).picos(), 142_500_000);
}

#[test]
fn the_provider_declares_what_its_model_takes() {
    use crate::provider::Provider;
    let transport = Transport::default();
    let provider =
        |model: &str| Bedrock::new(BedrockConfig::new("us-east-1", model), &transport).unwrap();
    // what the gateway reads (`x-switchyard-ignored`, skipping) is the model's answer
    let claude = provider(SONNET_45);
    let llama = provider("meta.llama3-3-70b-instruct-v1:0");
    assert_eq!(claude.support(Field::CacheControl), Support::Translated);
    assert_eq!(llama.support(Field::CacheControl), Support::Ignored);
    assert_eq!(llama.support(Field::Temperature), Support::Native);
    let nova = provider("us.amazon.nova-lite-v1:0");
    let tool_mark = ChatRequest {
        tools: vec![Tool {
            cache_control: Some(CacheControl::default()),
            ..weather()
        }],
        ..ChatRequest::from_prompt("Hi")
    };
    assert_eq!(
        nova.cannot_honour(&tool_mark).names(),
        vec!["cache_control"]
    );
    assert!(claude.cannot_honour(&tool_mark).is_empty());
}
