//! Codec tests (bodies, replies, streams, errors, signing, prices); `cache.rs`: prompt-cache
//! breakpoints as `cachePoint` blocks and the cache usage they bill; `embed.rs`: embeddings
//! through InvokeModel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

use super::*;
use crate::chat::{
    ChatRequest, ContentPart, FinishReason, ImageSource, Message, Thinking, Tool, ToolCall,
    ToolChoice, Usage,
};
use crate::error::ErrorKind;
use crate::provider::codec::StreamEvents;
use crate::provider::sse::{Parsed, SseEvent};

fn codec() -> BedrockCodec {
    BedrockCodec {
        model: "anthropic.claude-3-5-haiku-20241022-v1:0".into(),
    }
}

fn encoded(req: &ChatRequest) -> Value {
    let (body, ()) = codec().encode(req, false).unwrap();
    serde_json::from_slice(&body).unwrap()
}

fn weather() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("Weather".into()),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        cache_control: None,
    }
}

#[test]
fn the_error_table_classifies() {
    crate::provider::error_body::table::assert_classifies(
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/bedrock/errors.json"
        )),
        classify,
    );
}

#[test]
fn stream_exceptions_classify_by_their_lower_camel_names() {
    for (name, kind) in [
        ("throttlingException", ErrorKind::RateLimited),
        ("serviceUnavailableException", ErrorKind::Overloaded),
        ("internalServerException", ErrorKind::Server),
        ("modelStreamErrorException", ErrorKind::Server),
        ("validationException", ErrorKind::BadRequest),
    ] {
        let err = classify::classify_exception(name, r#"{"message":"no"}"#);
        assert_eq!(err.kind, kind, "{name}");
        assert_eq!(err.status, None);
        assert_eq!(err.vendor_code.as_deref(), Some(name));
        assert_eq!(err.message, "no");
    }
    let err = classify::classify_exception(
        "validationException",
        r#"{"message":"Input is too long for requested model."}"#,
    );
    assert_eq!(err.kind, ErrorKind::ContextLength);
}

#[test]
fn the_body_carries_system_turns_inference_config_and_metadata() {
    let mut req = ChatRequest {
        messages: vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::user("Capital of France?"),
            Message::assistant("Paris."),
            Message::user("And Italy?"),
        ],
        max_tokens: Some(100),
        temperature: Some(0.5),
        top_p: Some(0.25),
        stop: vec!["END".into()],
        user: Some("user-42".into()),
        ..ChatRequest::default()
    };
    let mut metadata = serde_json::Map::new();
    metadata.insert("team".into(), json!("search"));
    metadata.insert("attempt".into(), json!(3));
    req.metadata = Some(metadata);
    let body = encoded(&req);
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"text": "Hi"}, {"text": "Capital of France?"}]},
            {"role": "assistant", "content": [{"text": "Paris."}]},
            {"role": "user", "content": [{"text": "And Italy?"}]},
        ])
    );
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 100, "temperature": 0.5, "topP": 0.25, "stopSequences": ["END"]})
    );
    assert_eq!(
        body["requestMetadata"],
        json!({"team": "search", "attempt": "3", "user": "user-42"})
    );
    assert!(body.get("toolConfig").is_none());
    assert!(body.get("additionalModelRequestFields").is_none());
}

#[test]
fn tools_choices_calls_and_results_take_converse_shapes() {
    let call = ToolCall {
        id: "tooluse_1".into(),
        name: "get_weather".into(),
        arguments: r#"{"city":"Paris"}"#.into(),
    };
    let mut assistant = Message::assistant("");
    assistant.content.clear();
    assistant.tool_calls = vec![call];
    assistant.thinking = vec![
        Thinking {
            text: "Need weather.".into(),
            signature: Some("sig".into()),
            redacted: None,
        },
        Thinking {
            text: "unsigned, another vendor's".into(),
            signature: None,
            redacted: None,
        },
    ];
    let mut req = ChatRequest {
        messages: vec![
            Message::user("Weather in Paris?"),
            assistant,
            Message::tool_result("tooluse_1", "get_weather", r#"{"temp_c":18}"#),
            Message::tool_result("tooluse_1", "get_weather", "plain text"),
        ],
        tools: vec![weather()],
        tool_choice: Some(ToolChoice::Tool("get_weather".into())),
        ..ChatRequest::default()
    };
    let body = encoded(&req);
    assert_eq!(
        body["toolConfig"],
        json!({
            "tools": [{"toolSpec": {
                "name": "get_weather",
                "description": "Weather",
                "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
            }}],
            "toolChoice": {"tool": {"name": "get_weather"}},
        })
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "Need weather.", "signature": "sig"}}},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
        ])
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"json": {"temp_c": 18}}]}},
            {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "plain text"}]}},
        ]})
    );

    req.tool_choice = Some(ToolChoice::Required);
    assert_eq!(
        encoded(&req)["toolConfig"]["toolChoice"],
        json!({"any": {}})
    );
    req.tool_choice = Some(ToolChoice::Auto);
    assert_eq!(
        encoded(&req)["toolConfig"]["toolChoice"],
        json!({"auto": {}})
    );
    req.tool_choice = None;
    assert!(encoded(&req)["toolConfig"].get("toolChoice").is_none());

    // `none` cannot be said while the history holds tool blocks
    req.tool_choice = Some(ToolChoice::None);
    let err = codec().encode(&req, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("tool_choice \"none\""), "{err}");
    // ... and without them it sends no tools at all
    let fresh = ChatRequest {
        tools: vec![weather()],
        tool_choice: Some(ToolChoice::None),
        ..ChatRequest::from_prompt("Hi")
    };
    assert!(encoded(&fresh).get("toolConfig").is_none());
}

#[test]
fn images_go_as_bytes_or_s3_and_web_urls_are_refused() {
    let with = |source: ImageSource| {
        let mut m = Message::user("What is this?");
        m.content.push(ContentPart::Image {
            source,
            detail: None,
        });
        ChatRequest {
            messages: vec![m],
            ..ChatRequest::default()
        }
    };
    let body = encoded(&with(ImageSource::Base64 {
        media_type: "image/jpeg".into(),
        data: "AAAA".into(),
    }));
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "jpeg", "source": {"bytes": "AAAA"}}})
    );
    let body = encoded(&with(ImageSource::Url {
        url: "data:image/webp;base64,UklG".into(),
    }));
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "webp", "source": {"bytes": "UklG"}}})
    );
    let body = encoded(&with(ImageSource::Url {
        url: "s3://bucket/cats/tom.PNG".into(),
    }));
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "png", "source": {"s3Location": {"uri": "s3://bucket/cats/tom.PNG"}}}})
    );
    for source in [
        ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        ImageSource::Base64 {
            media_type: "image/tiff".into(),
            data: "AAAA".into(),
        },
    ] {
        let err = codec().encode(&with(source), false).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest, "{err}");
    }
}

#[test]
fn unmodelled_fields_go_to_additional_model_request_fields() {
    let mut extra = serde_json::Map::new();
    extra.insert("top_k".into(), json!(40));
    let req = ChatRequest {
        passthrough: Some(std::sync::Arc::new(extra)),
        ..ChatRequest::from_prompt("Hi")
    };
    assert_eq!(
        encoded(&req)["additionalModelRequestFields"],
        json!({"top_k": 40})
    );
}

#[test]
fn a_reply_reads_text_tools_reasoning_usage_and_latency() {
    let body = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "s1"}}},
            {"text": "Calling."},
            {"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}},
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 44,
                  "cacheReadInputTokens": 20, "cacheWriteInputTokens": 10},
        "metrics": {"latencyMs": 250},
    });
    let reply = codec()
        .parse_reply(body.to_string().as_bytes(), ())
        .unwrap();
    assert_eq!(reply.text, "Calling.");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(reply.tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    assert_eq!(reply.thinking[0].signature.as_deref(), Some("s1"));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 40,
            output_tokens: 4,
            cached_input_tokens: 20,
            cache_write_tokens: 10,
            ..Usage::default()
        })
    );
    assert_eq!(
        reply.reported_latency,
        Some(std::time::Duration::from_millis(250))
    );
}

#[test]
fn stop_reasons_map() {
    for (reason, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("tool_use", FinishReason::ToolCalls),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("content_filtered", FinishReason::ContentFilter),
        ("guardrail_intervened", FinishReason::ContentFilter),
        ("something_new", FinishReason::Other("something_new".into())),
    ] {
        assert_eq!(reply::finish_reason(reason), finish, "{reason}");
    }
}

fn ev(name: &str, data: Value) -> SseEvent {
    SseEvent {
        event: name.to_owned().into(),
        data: data.to_string(),
        id: None,
        retry: None,
    }
}

#[test]
fn stream_events_number_tool_calls_and_reasoning_by_block() {
    let mut events = codec().events(());
    let chunk = |p: Parsed| match p {
        Parsed::Chunk(c) => c,
        other => panic!("{other:?}"),
    };
    let c = chunk(
        events
            .parse_event(&ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hm"}}}),
            ))
            .unwrap(),
    );
    assert_eq!(c.thinking[0].index, 0);
    assert_eq!(c.thinking[0].text, "Hm");
    let c = chunk(
        events
            .parse_event(&ev(
                "contentBlockStart",
                json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "a", "name": "f"}}}),
            ))
            .unwrap(),
    );
    assert_eq!(c.tool_calls[0].index, 0);
    assert_eq!(c.tool_calls[0].id.as_deref(), Some("a"));
    events
        .parse_event(&ev(
            "contentBlockStart",
            json!({"contentBlockIndex": 3, "start": {"toolUse": {"toolUseId": "b", "name": "g"}}}),
        ))
        .unwrap();
    let c = chunk(
        events
            .parse_event(&ev(
                "contentBlockDelta",
                json!({"contentBlockIndex": 3, "delta": {"toolUse": {"input": "{}"}}}),
            ))
            .unwrap(),
    );
    assert_eq!(c.tool_calls[0].index, 1);
    assert_eq!(c.tool_calls[0].arguments, "{}");
    let c = chunk(
        events
            .parse_event(&ev("messageStop", json!({"stopReason": "max_tokens"})))
            .unwrap(),
    );
    assert_eq!(c.finish_reason, Some(FinishReason::Length));
    let c = chunk(
        events
            .parse_event(&ev(
                "metadata",
                json!({"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3, "cacheWriteInputTokens": 7}}),
            ))
            .unwrap(),
    );
    let usage = c.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.cache_write_tokens), (8, 7));
    let err = events
        .parse_event(&ev(
            "exception:modelStreamErrorException",
            json!({"message": "x"}),
        ))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server);
}

#[test]
fn urls_encode_the_model_id_and_pick_the_health_resource() {
    let transport = Transport::default();
    let config = BedrockConfig::new("eu-west-1", "anthropic.claude-3-5-haiku-20241022-v1:0");
    let p = Bedrock::new(config, &transport).unwrap();
    assert_eq!(
        p.endpoints().call.as_str(),
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"
    );
    assert_eq!(
        p.endpoints().stream.as_str(),
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    );
    assert_eq!(
        p.endpoints().health.as_str(),
        "https://bedrock.eu-west-1.amazonaws.com/foundation-models/anthropic.claude-3-5-haiku-20241022-v1%3A0"
    );
    let profile = BedrockConfig::new("us-east-1", "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    assert!(profile
        .health_path()
        .starts_with("/inference-profiles/us.anthropic."));
    let arn = BedrockConfig::new(
        "us-east-1",
        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc",
    );
    assert_eq!(
        arn.health_path(),
        "/inference-profiles/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc"
    );
    for (arn, path) in [
        (
            "arn:aws:bedrock:us-east-1:123456789012:provisioned-model/abc",
            "/provisioned-model-throughput/",
        ),
        (
            "arn:aws:bedrock:us-east-1:123456789012:imported-model/xyz",
            "/imported-models/",
        ),
        (
            "arn:aws:bedrock:us-east-1:123456789012:custom-model/m/def",
            "/custom-models/",
        ),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0",
            "/foundation-models/",
        ),
    ] {
        let config = BedrockConfig::new("us-east-1", arn);
        assert!(config.health_path().starts_with(path), "{arn}");
    }
    for (region, model) in [
        ("", "m"),
        ("US East", "m"),
        ("us-east-1", ""),
        ("us-east-1", "a b"),
    ] {
        assert!(
            Bedrock::new(BedrockConfig::new(region, model), &transport).is_err(),
            "{region:?} {model:?}"
        );
    }
}

#[tokio::test]
async fn sigv4_signs_host_date_and_token_marking_secrets_sensitive() {
    use crate::provider::sign::{RequestSigner, Signable};
    let signer = sigv4::SigV4::new(
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: Some(Secret::new("session-token-value")),
        },
        "us-east-1",
        Clock::anchored_at(1_795_946_400_000),
    );
    let url = Endpoint::at(
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        "/model/m/converse",
    )
    .unwrap();
    let mut headers = HeaderMap::new();
    headers.insert("accept", "application/json".parse().unwrap());
    signer
        .sign(
            Signable {
                method: "POST",
                url: &url,
                body: b"{}",
            },
            &mut headers,
        )
        .await
        .unwrap();
    let auth = headers["authorization"].to_str().unwrap();
    assert!(
        auth.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-east-1/bedrock/aws4_request, SignedHeaders=accept;host;x-amz-date;x-amz-security-token, Signature="
        ),
        "{auth}"
    );
    assert!(headers["authorization"].is_sensitive());
    assert!(headers["x-amz-security-token"].is_sensitive());
    assert_eq!(headers["x-amz-date"], "20261129T100000Z");
    assert_eq!(headers["host"], "bedrock-runtime.us-east-1.amazonaws.com");
    let secrets: Vec<String> = signer
        .secrets()
        .iter()
        .map(|s| s.expose().to_owned())
        .collect();
    assert_eq!(
        secrets,
        [
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "session-token-value"
        ]
    );
    assert!(!format!("{signer:?}").contains("EXAMPLEKEY"));
}

#[test]
fn the_field_declarations_are_honest_about_what_encode_sends() {
    assert_eq!(BedrockCodec::support(Field::Temperature), Support::Native);
    assert_eq!(
        BedrockCodec::support(Field::Passthrough),
        Support::Translated
    );
    assert_eq!(BedrockCodec::support(Field::Seed), Support::Unsupported);
    assert_eq!(
        BedrockCodec::support(Field::ReasoningEffort),
        Support::Translated
    );
    assert_eq!(BedrockCodec::support(Field::ServiceTier), Support::Ignored);
    // unsupported fields are not sent
    let req = ChatRequest {
        seed: Some(7),
        top_k: Some(3),
        presence_penalty: Some(0.5),
        ..ChatRequest::from_prompt("Hi")
    };
    let body = encoded(&req).to_string();
    for name in ["seed", "top_k", "topK", "presence"] {
        assert!(!body.contains(name), "{name} in {body}");
    }
}

#[test]
fn the_shipped_prices_know_bedrock_model_ids_and_their_cache_rates() {
    let table = crate::cost::PriceTable::builtin();
    let global = table
        .lookup("global.anthropic.claude-sonnet-4-5-20250929-v1:0")
        .unwrap();
    assert_eq!(global.vendor, "bedrock");
    assert_eq!(global.price.input_micros_per_mtok, 3_000_000);
    assert_eq!(global.price.cached_input_micros_per_mtok, Some(300_000));
    assert_eq!(global.price.cache_write_micros_per_mtok, Some(3_750_000));
    // a geographic profile of a 4.5 model costs 10% more than the global one
    let us = table
        .lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        .unwrap();
    assert_eq!(us.price.input_micros_per_mtok, 3_300_000);
    assert_eq!(us.price.output_micros_per_mtok, 16_500_000);
    // older models: the in-region id and the US profile alike
    for id in [
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "us.anthropic.claude-3-5-haiku-20241022-v1:0",
    ] {
        let e = table.lookup(id).unwrap();
        assert_eq!(e.price.input_micros_per_mtok, 800_000, "{id}");
        assert_eq!(e.reasoning, Some(false), "{id}");
    }
    for id in [
        "mistral.mistral-large-2402-v1:0",
        "amazon.nova-pro-v1:0",
        "us.amazon.nova-premier-v1:0",
        "us.anthropic.claude-opus-4-1-20250805-v1:0",
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
    ] {
        assert!(table.lookup(id).is_some(), "{id}");
    }
    // rates no published page confirmed are left out (such a model follows the unpriced
    // rules) rather than guessed
    assert!(table.lookup("mistral.mistral-large-2407-v1:0").is_none());
    // Nova: a cache read at a quarter of the input rate; a write at the input rate
    for (id, input, cached) in [
        ("amazon.nova-pro-v1:0", 800_000, 200_000),
        ("us.amazon.nova-lite-v1:0", 60_000, 15_000),
        ("amazon.nova-micro-v1:0", 35_000, 8_750),
    ] {
        let p = &table.lookup(id).unwrap().price;
        assert_eq!(p.input_micros_per_mtok, input, "{id}");
        assert_eq!(p.cached_input_micros_per_mtok, Some(cached), "{id}");
        assert_eq!(p.cache_write_micros_per_mtok, None, "{id}");
    }
    // Meta Llama: the in-region id and the US profile at one rate, no caching billed, the
    // larger published output limit (an upper bound to reserve against), never reasoning
    for (id, input, output) in [
        ("meta.llama3-3-70b-instruct-v1:0", 720_000, 720_000),
        ("us.meta.llama3-3-70b-instruct-v1:0", 720_000, 720_000),
        ("us.meta.llama3-1-8b-instruct-v1:0", 220_000, 220_000),
        ("us.meta.llama3-2-1b-instruct-v1:0", 100_000, 100_000),
        (
            "us.meta.llama4-maverick-17b-instruct-v1:0",
            240_000,
            970_000,
        ),
        ("meta.llama4-scout-17b-instruct-v1:0", 170_000, 660_000),
    ] {
        let e = table.lookup(id).unwrap();
        assert_eq!(e.vendor, "bedrock", "{id}");
        assert_eq!(e.price.input_micros_per_mtok, input, "{id}");
        assert_eq!(e.price.output_micros_per_mtok, output, "{id}");
        assert_eq!(e.price.cached_input_micros_per_mtok, None, "{id}");
        assert_eq!(e.max_output_tokens, Some(8_192), "{id}");
        assert_eq!(e.reasoning, Some(false), "{id}");
    }
}

#[test]
fn every_credential_is_scrubbed_before_the_one_cut_to_length() {
    use crate::provider::http::{redact_all, MESSAGE_LIMIT};
    let key = Secret::new("AKIA-not-secret-but-scrubbed-0001");
    let token = Secret::new("SESSIONTOKENxyzw0123456789abcdef");
    // the token straddles the cut, 3 characters before it: scrubbed before the cut, none
    // of them survives (a cut first would leave "SES", too short to be recognised later)
    let message = format!("{}{} tail", "x".repeat(MESSAGE_LIMIT - 3), token.expose());
    let err = redact_all(&[key, token], ProviderError::new(ErrorKind::Auth, message));
    assert!(!err.message.contains("SES"), "{}", err.message);
}

#[test]
fn reasoning_effort_is_claude_thinking_and_refused_for_other_models() {
    use crate::chat::ReasoningEffort;
    let mut extra = serde_json::Map::new();
    extra.insert("top_k".into(), json!(5));
    let mut req = ChatRequest {
        reasoning_effort: Some(ReasoningEffort::Medium),
        passthrough: Some(std::sync::Arc::new(extra)),
        ..ChatRequest::from_prompt("Hi")
    };
    // no max_tokens: Anthropic's default is sent, and the budget fits under it
    let body = encoded(&req);
    assert_eq!(body["inferenceConfig"]["maxTokens"], 4096);
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 4095}})
    );
    req.max_tokens = Some(20_000);
    let body = encoded(&req);
    assert_eq!(body["inferenceConfig"]["maxTokens"], 20_000);
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"]["budget_tokens"],
        8192
    );
    req.reasoning_effort = Some(ReasoningEffort::None);
    assert_eq!(
        encoded(&req)["additionalModelRequestFields"]["thinking"],
        json!({"type": "disabled"})
    );
    req.reasoning_effort = Some(ReasoningEffort::Low);
    req.max_tokens = Some(1000);
    let err = codec().encode(&req, false).unwrap_err();
    assert!(err.message.contains("max_tokens above 1024"), "{err}");

    let nova = BedrockCodec {
        model: "amazon.nova-pro-v1:0".into(),
    };
    req.max_tokens = None;
    let err = nova.encode(&req, false).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("only Claude models"), "{err}");
}

mod cache;
mod embed;
