//! Replies: messages (text, tool calls, thinking, refusals, usage with cache reads and
//! writes), malformed bodies, stream events and the error table.

use super::*;

#[test]
fn text_message_with_normalised_usage() {
    let reply = parse_response(fixture!("completion_text.json").as_bytes()).unwrap();
    assert_eq!(
        reply.text,
        "The capital of France is Paris (Île-de-France)."
    );
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(reply.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(reply.id.as_deref(), Some("msg_01SyCapital00000000000001"));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 25,
            output_tokens: 12,
            cached_input_tokens: 5,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        })
    );
}

/// Anthropic's `input_tokens` excludes cache reads and writes; the shared shape counts the
/// whole prompt, so nothing is billed twice or lost.
#[test]
fn cache_reads_and_writes_are_added_to_input() {
    let reply = parse_response(fixture!("completion_prompt_cache.json").as_bytes()).unwrap();
    let usage = reply.usage.unwrap();
    assert_eq!(usage.input_tokens, 30 + 2000 + 1500);
    assert_eq!(usage.cached_input_tokens, 2000);
    assert_eq!(usage.cache_write_tokens, 1500);
    assert_eq!(usage.uncached_input_tokens(), 30);
    assert_eq!(usage.output_tokens, 14);
}

#[test]
fn tool_use_message() {
    let reply = parse_response(fixture!("completion_tool_call.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "I'll look up the current weather in Paris.");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        reply.tool_calls,
        [ToolCall {
            id: "toolu_01SyWeather000000000001".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }]
    );
}

#[test]
fn thinking_is_not_text_and_text_blocks_are_joined() {
    let reply = parse_response(fixture!("completion_thinking.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "27 × 453 = 12,231");
    assert_eq!(
        reply.thinking,
        vec![
            crate::chat::Thinking {
                text: "27 * 453 = 27 * 400 + 27 * 53 = 10800 + 1431 = 12231.".into(),
                signature: Some("EqQBCgIYAhIMsyFakeSignature0000000000".into()),
                redacted: None,
            },
            crate::chat::Thinking {
                text: String::new(),
                signature: None,
                redacted: Some(
                    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into()
                ),
            },
        ],
        "thinking blocks kept in order, the redacted one's data opaque"
    );
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    let usage = reply.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (46, 2048));
}

#[test]
fn a_refusal_is_a_content_filter_finish() {
    let reply = parse_response(fixture!("completion_refusal.json").as_bytes()).unwrap();
    assert_eq!(reply.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(reply.text, "");
}

#[test]
fn stop_reasons_are_normalised() {
    let cases = [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("tool_use", FinishReason::ToolCalls),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
        ("something_new", FinishReason::Other("something_new".into())),
    ];
    for (wire, ours) in cases {
        assert_eq!(finish_reason(wire), ours);
    }
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
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let err = parse_response(overloaded.to_string().as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert_eq!(err.vendor_code.as_deref(), Some("overloaded_error"));
    let context = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215823 tokens > 200000 maximum"}});
    assert_eq!(
        parse_response(context.to_string().as_bytes())
            .unwrap_err()
            .kind,
        ErrorKind::ContextLength
    );
}

/// Every event of a fixture, through one parser.
fn events(sse: &str) -> Vec<Result<Parsed, ProviderError>> {
    let mut parser = EventParser::new();
    SseParser::new()
        .push(sse.as_bytes())
        .iter()
        .map(|e| parser.parse_event(e))
        .collect()
}

fn chunks(sse: &str) -> Vec<ChatChunk> {
    events(sse)
        .into_iter()
        .filter_map(|p| match p.unwrap() {
            Parsed::Chunk(c) => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn stream_fixture_text_finish_and_merged_usage() {
    let parsed: Vec<Parsed> = events(fixture!("stream_text.sse"))
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(parsed.last(), Some(&Parsed::Done), "message_stop");
    let chunks = chunks(fixture!("stream_text.sse"));
    let text: String = chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(text, "The capital of France is Paris (Île-de-France).");
    let finish = chunks.last().unwrap();
    assert_eq!(finish.finish_reason, Some(FinishReason::Stop));
    assert_eq!(finish.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    // message_start's id, handed on with the finish chunk only
    assert_eq!(finish.id.as_deref(), Some("msg_01SyCapital00000000000101"));
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c.id.is_none()));
    assert_eq!(
        finish
            .usage
            .map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)),
        Some((25, 12, 5)),
        "input from message_start, output from message_delta"
    );
    assert!(chunks[..chunks.len() - 1]
        .iter()
        .all(|c| c.finish_reason.is_none() && c.usage.is_none()));
}

#[test]
fn stream_fixture_tool_call_maps_block_index_to_call_index() {
    let deltas: Vec<ToolCallDelta> = chunks(fixture!("stream_tool_call.sse"))
        .into_iter()
        .flat_map(|c| c.tool_calls)
        .collect();
    assert_eq!(
        deltas[0].id.as_deref(),
        Some("toolu_01SyWeather000000000101")
    );
    assert_eq!(deltas[0].name.as_deref(), Some("get_weather"));
    assert!(
        deltas.iter().all(|d| d.index == 0),
        "content block 1 is tool call 0"
    );
    let args: String = deltas.iter().map(|d| d.arguments.as_str()).collect();
    assert_eq!(args, r#"{"city": "Paris"}"#);
}

#[test]
fn a_tool_call_without_arguments_gets_an_empty_object() {
    let mut p = EventParser::new();
    let start = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}});
    let Parsed::Chunk(first) = p.parse_event(&event("content_block_start", start)).unwrap() else {
        panic!()
    };
    assert_eq!(first.tool_calls[0].arguments, "");
    let stop = json!({"type": "content_block_stop", "index": 0});
    let Parsed::Chunk(last) = p
        .parse_event(&event("content_block_stop", stop.clone()))
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(last.tool_calls[0].arguments, "{}");
    assert_eq!(
        p.parse_event(&event("content_block_stop", stop)).unwrap(),
        Parsed::Skip
    );
}

#[test]
fn pings_and_unknown_events_are_skipped() {
    let mut p = EventParser::new();
    let skipped = [
        event("ping", json!({"type": "ping"})),
        event(
            "brand_new_event",
            json!({"type": "brand_new_event", "x": 1}),
        ),
    ];
    for e in &skipped {
        assert_eq!(p.parse_event(e).unwrap(), Parsed::Skip, "{}", e.data);
    }
}

/// Reasoning blocks are passed on (every dialect surfaces them), numbered among
/// themselves; a thinking delta for a block that is not a thinking block is malformed.
#[test]
fn reasoning_pieces_pass_text_signature_and_redacted_data_on() {
    use crate::chat::ThinkingDelta;
    let mut p = EventParser::new();
    let piece = |p: &mut EventParser, name: &str, data: Value| match p
        .parse_event(&event(name, data))
        .unwrap()
    {
        Parsed::Chunk(c) => c.thinking,
        other => panic!("{other:?}"),
    };
    let start = piece(
        &mut p,
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    );
    assert_eq!(
        start,
        vec![ThinkingDelta::default()],
        "the start opens block 0"
    );
    let text = piece(
        &mut p,
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me see"}}),
    );
    assert_eq!(text[0].text, "Let me see");
    let sig = piece(
        &mut p,
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
    );
    assert_eq!(sig[0].signature.as_deref(), Some("EqQB"));
    assert_eq!(sig[0].index, 0);
    let redacted = piece(
        &mut p,
        "content_block_start",
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "redacted_thinking", "data": "ZW5j"}}),
    );
    assert_eq!(
        redacted,
        vec![ThinkingDelta {
            index: 1,
            redacted: Some("ZW5j".into()),
            ..ThinkingDelta::default()
        }]
    );
    let stray = event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 5, "delta": {"type": "thinking_delta", "thinking": "x"}}),
    );
    assert_eq!(
        p.parse_event(&stray).unwrap_err().kind,
        crate::error::ErrorKind::Malformed
    );
}

/// Newer API versions repeat the (cumulative) input counts on `message_delta`: the latest
/// value wins, nothing is summed twice.
#[test]
fn message_delta_usage_replaces_earlier_counts() {
    let mut p = EventParser::new();
    let start = json!({"type": "message_start", "message": {"model": "claude-x", "usage":
        {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 1}}});
    p.parse_event(&event("message_start", start)).unwrap();
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 50, "output_tokens": 30}});
    let Parsed::Chunk(finish) = p.parse_event(&event("message_delta", delta)).unwrap() else {
        panic!()
    };
    assert_eq!(finish.finish_reason, Some(FinishReason::Length));
    assert_eq!(
        finish.usage,
        Some(Usage {
            input_tokens: 160,
            output_tokens: 30,
            cached_input_tokens: 100,
            cache_write_tokens: 50,
            cache_write_1h_tokens: 0,
            reasoning_tokens: 0,
        })
    );
}

#[test]
fn stream_errors_and_garbage() {
    let first = events(fixture!("stream_error_first.sse"));
    assert_eq!(first[0].as_ref().unwrap_err().kind, ErrorKind::Overloaded);

    let mut p = EventParser::new();
    let rate =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    // by the data's type, even without the SSE event name
    assert_eq!(
        p.parse_event(&SseEvent::message(rate.to_string()))
            .unwrap_err()
            .kind,
        ErrorKind::RateLimited
    );
    let not_json = event("error", json!(null));
    let not_json = SseEvent {
        data: "upstream went away".into(),
        ..not_json
    };
    let err = p.parse_event(&not_json).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server);
    assert!(err.message.contains("upstream went away"));

    for garbage in [
        "{\"type\": \"content_block_delta\", \"index\": ",
        "<html>",
        "{}",
    ] {
        let err = p.parse_event(&SseEvent::message(garbage)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{garbage}");
    }
    let orphan = json!({"type": "content_block_delta", "index": 7, "delta": {"type": "input_json_delta", "partial_json": "{"}});
    let err = p
        .parse_event(&event("content_block_delta", orphan))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}

/// errors.json, straight through `classify` (the shared suite runs it over HTTP too).
#[test]
fn error_table_classifies() {
    crate::provider::error_body::table::assert_classifies(fixture!("errors.json"), classify);
}

#[test]
fn reset_headers_only_name_the_wait_of_a_rate_limit() {
    let now = httpdate::parse_http_date("Sun, 29 Nov 2026 10:00:00 GMT").unwrap();
    let mut headers = ::http::HeaderMap::new();
    http::insert_header(&mut headers, "anthropic-ratelimit-requests-remaining", "0").unwrap();
    http::insert_header(
        &mut headers,
        "anthropic-ratelimit-requests-reset",
        "2026-11-29T10:00:12Z",
    )
    .unwrap();
    let body = json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}});
    let failure = HttpFailure {
        status: 500,
        headers,
        body: body.to_string().into(),
    };
    let err = classify(&failure, now);
    assert_eq!((err.kind, err.retry_after), (ErrorKind::Server, None));
}

#[test]
fn absurd_usage_is_malformed_even_when_the_parts_add_up_past_u64() {
    let message = |usage: &str| {
        format!(
            r#"{{"type":"message","role":"assistant","model":"m","content":[{{"type":"text","text":"hi"}}],
            "stop_reason":"end_turn","usage":{usage}}}"#
        )
    };
    // input + cache reads + cache writes once wrapped; each alone is also absurd
    let wrap = message(
        r#"{"input_tokens":18446744073709551615,"cache_read_input_tokens":5,"output_tokens":1}"#,
    );
    let err = parse_response(wrap.as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
    let output = message(r#"{"input_tokens":1,"output_tokens":200000000}"#);
    assert_eq!(
        parse_response(output.as_bytes()).unwrap_err().kind,
        ErrorKind::Malformed
    );

    // in a stream, an absurd count in message_start fails before any content (fails over)
    let start = r#"{"type":"message_start","message":{"model":"m","content":[],"usage":{"input_tokens":9223372036854775808,"output_tokens":1}}}"#;
    let mut parser = EventParser::new();
    let err = parser
        .parse_event(&SseEvent {
            event: "message_start".into(),
            ..SseEvent::message(start)
        })
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}

fn message_with_usage(usage: &Value) -> Vec<u8> {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "usage": usage})
    .to_string()
    .into_bytes()
}

/// `cache_creation` splits the writes by TTL; the 1-hour part is counted apart so it is
/// priced at its own rate, and the ledger's sum is exact.
#[test]
fn one_hour_cache_writes_are_counted_and_priced_apart() {
    let usage = json!({"input_tokens": 20_000, "cache_read_input_tokens": 20_000,
        "cache_creation_input_tokens": 10_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 6_000, "ephemeral_1h_input_tokens": 4_000},
        "output_tokens": 3_000});
    let u = parse_response(&message_with_usage(&usage))
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(
        u,
        Usage {
            input_tokens: 50_000,
            output_tokens: 3_000,
            cached_input_tokens: 20_000,
            cache_write_tokens: 10_000,
            cache_write_1h_tokens: 4_000,
            reasoning_tokens: 0,
        }
    );
    // Haiku 5.5 as shipped: 20k × $0.10 + 20k × $0.01 + 6k × $0.125 + 4k × $0.20
    // + 3k × $0.50 per MTok = 0.002 + 0.0002 + 0.00075 + 0.0008 + 0.0015
    let price = crate::cost::PriceTable::builtin()
        .lookup("claude-haiku-5-5")
        .unwrap()
        .price;
    assert_eq!(price.cost(&u).to_string(), "$0.00525");

    // only the split (no total): the total is its sum
    let split_only = json!({"input_tokens": 1, "output_tokens": 1,
        "cache_creation": {"ephemeral_5m_input_tokens": 7, "ephemeral_1h_input_tokens": 5}});
    let u = parse_response(&message_with_usage(&split_only))
        .unwrap()
        .usage
        .unwrap();
    assert_eq!((u.cache_write_tokens, u.cache_write_1h_tokens), (12, 5));
    assert_eq!(u.input_tokens, 13);
}

/// In a stream, `message_start` carries the cache split and `message_delta` may repeat or
/// omit it: the finish chunk keeps the latest split.
#[test]
fn streamed_one_hour_cache_writes_survive_the_delta() {
    let mut p = EventParser::new();
    let start = json!({"type": "message_start", "message": {"model": "claude-x", "usage":
        {"input_tokens": 10, "cache_creation_input_tokens": 300,
         "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200},
         "output_tokens": 1}}});
    p.parse_event(&event("message_start", start)).unwrap();
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 40}});
    let Parsed::Chunk(finish) = p.parse_event(&event("message_delta", delta)).unwrap() else {
        panic!()
    };
    let u = finish.usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.cache_write_tokens,
            u.cache_write_1h_tokens,
            u.output_tokens
        ),
        (310, 300, 200, 40)
    );
    let mut p = EventParser::new();
    p.parse_event(&event(
        "message_start",
        json!({"type": "message_start", "message": {"usage":
        {"input_tokens": 10, "cache_creation": {"ephemeral_1h_input_tokens": 200}}}}),
    ))
    .unwrap();
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 2, "cache_creation_input_tokens": 250,
            "cache_creation": {"ephemeral_5m_input_tokens": 50}}});
    let Parsed::Chunk(finish) = p.parse_event(&event("message_delta", delta)).unwrap() else {
        panic!()
    };
    let u = finish.usage.unwrap();
    assert_eq!((u.cache_write_tokens, u.cache_write_1h_tokens), (250, 200));
}

/// Anthropic reports no thinking count: thinking is in `output_tokens` and billed there.
#[test]
fn thinking_is_billed_as_output_without_a_separate_count() {
    let usage = json!({"input_tokens": 1_000, "output_tokens": 5_000});
    let u = parse_response(&message_with_usage(&usage))
        .unwrap()
        .usage
        .unwrap();
    assert_eq!((u.output_tokens, u.reasoning_tokens), (5_000, 0));
    let price = crate::cost::PriceTable::builtin()
        .lookup("claude-haiku-5-5")
        .unwrap()
        .price;
    // 1k × $0.10 + 5k × $0.50 per MTok
    assert_eq!(price.cost(&u).to_string(), "$0.0026");
}
