//! Replies, stream events, finish reasons, usage and the error table.

use super::*;

#[test]
fn text_completion_with_cached_tokens() {
    let reply = parse_response(fixture!("completion_text.json").as_bytes()).unwrap();
    assert_eq!(
        reply.text,
        "The capital of France is Paris (Île-de-France)."
    );
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(reply.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(reply.id.as_deref(), Some("chatcmpl-sy0001"));
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
    assert_eq!(reply.reported_cost, None);
}

#[test]
fn tool_call_completion() {
    let reply = parse_response(fixture!("completion_tool_call.json").as_bytes()).unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        reply.tool_calls,
        [ToolCall {
            id: "call_sy0002".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }]
    );
}

#[test]
fn reasoning_tokens_stay_inside_output_and_cached_inside_input() {
    let reply = parse_response(fixture!("completion_reasoning.json").as_bytes()).unwrap();
    let usage = reply.usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.cached_input_tokens),
        (2048, 1920)
    );
    assert_eq!((usage.output_tokens, usage.reasoning_tokens), (900, 896));
    assert_eq!(usage.uncached_input_tokens(), 128);
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
}

#[test]
fn openrouter_cost_is_reported() {
    let reply = parse_response(fixture!("completion_openrouter_cost.json").as_bytes()).unwrap();
    assert_eq!(reply.reported_cost, Some(Money::from_usd(0.000_003_3)));
}

#[test]
fn a_refusal_is_the_refusal_not_the_text() {
    let reply = parse_response(fixture!("completion_refusal.json").as_bytes()).unwrap();
    assert_eq!(reply.refusal, "I'm sorry, I can't help with that.");
    assert_eq!(reply.text, "");
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
}

#[test]
fn the_system_fingerprint_is_kept_plain_and_streamed() {
    let body = json!({"model": "gpt-4o", "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.system_fingerprint.as_deref(), Some("fp_44709d6fcb"));
    let chunk = json!({"system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": {"refusal": "I can't"}, "finish_reason": null}]});
    let Parsed::Chunk(c) = parse_event(&SseEvent::message(chunk.to_string())).unwrap() else {
        panic!("not a chunk")
    };
    assert_eq!(c.system_fingerprint.as_deref(), Some("fp_44709d6fcb"));
    assert_eq!((c.text.as_str(), c.refusal.as_str()), ("", "I can't"));
    assert!(c.has_content());
}

/// With `n` = 2 each answer streams as its own choice and finishes on its own; the finish
/// signal (answer 0's reason) comes once both have finished, whichever finished first.
#[test]
fn a_stream_of_two_choices_finishes_when_both_have() {
    use crate::provider::codec::StreamEvents as _;
    let mut events = Events::new(2);
    let mut next = |v: Value| match events.parse_event(&SseEvent::message(v.to_string())) {
        Ok(Parsed::Chunk(c)) => c,
        other => panic!("{other:?}"),
    };
    let lp = json!([{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]);
    let a = next(
        json!({"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": {"content": lp}}]}),
    );
    assert_eq!((a.text.as_str(), a.logprobs.as_ref()), ("Hi", Some(&lp)));
    assert!(a.choices.is_empty());
    let b =
        next(json!({"choices": [{"index": 1, "delta": {"content": "Yo"}, "finish_reason": null}]}));
    assert_eq!(b.text, "");
    assert_eq!(b.choices.len(), 1);
    assert_eq!((b.choices[0].index, b.choices[0].text.as_str()), (1, "Yo"));
    assert!(b.has_content(), "a later answer's piece is content");
    let c = next(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}));
    assert_eq!(c.finish_reason, None, "answer 1 is still going");
    let d = next(json!({"choices": [{"index": 1, "delta": {}, "finish_reason": "stop"}]}));
    assert_eq!(d.choices[0].finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        d.finish_reason,
        Some(FinishReason::Length),
        "answer 0's reason"
    );
}

#[test]
fn odd_but_valid_shapes_from_compatible_servers() {
    let body = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}, "finish_reason": "eos"}]});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.text, "ab");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"x":1}"#);
    assert_eq!(reply.tool_calls[0].id, "call_0");
    assert_eq!(reply.finish_reason, Some(FinishReason::Other("eos".into())));
    assert_eq!(reply.usage, None);
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
    let quota = json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}});
    let err = parse_response(quota.to_string().as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::QuotaExhausted);
    assert_eq!(err.vendor_code.as_deref(), Some("insufficient_quota"));
    let vllm = json!({"object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "code": 400});
    assert_eq!(
        parse_response(vllm.to_string().as_bytes())
            .unwrap_err()
            .kind,
        ErrorKind::ContextLength
    );
}

/// Every event of a fixture, parsed.
fn events(sse: &str) -> Vec<Result<Parsed, ProviderError>> {
    SseParser::new()
        .push(sse.as_bytes())
        .iter()
        .map(parse_event)
        .collect()
}

#[test]
fn stream_fixture_text_finish_and_usage() {
    let parsed: Vec<Parsed> = events(fixture!("stream_text.sse"))
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let text: String = parsed
        .iter()
        .filter_map(|p| match p {
            Parsed::Chunk(c) => Some(c.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "The capital of France is Paris (Île-de-France).");
    let n = parsed.len();
    let Parsed::Chunk(finish) = &parsed[n - 3] else {
        panic!("{parsed:?}")
    };
    assert_eq!(finish.finish_reason, Some(FinishReason::Stop));
    // the id every chunk repeats is kept from the finishing one only
    assert_eq!(finish.id.as_deref(), Some("chatcmpl-sy0101"));
    let with_id = (parsed.iter())
        .filter(|p| matches!(p, Parsed::Chunk(c) if c.id.is_some()))
        .count();
    assert_eq!(with_id, 1);
    let Parsed::Chunk(usage) = &parsed[n - 2] else {
        panic!("{parsed:?}")
    };
    assert_eq!(
        usage
            .usage
            .map(|u| (u.input_tokens, u.output_tokens, u.cached_input_tokens)),
        Some((25, 12, 5))
    );
    assert!(usage.finish_reason.is_none() && usage.text.is_empty());
    assert_eq!(parsed[n - 1], Parsed::Done);
}

#[test]
fn stream_fixture_tool_call_deltas() {
    let deltas: Vec<ToolCallDelta> = events(fixture!("stream_tool_call.sse"))
        .into_iter()
        .filter_map(|p| match p.unwrap() {
            Parsed::Chunk(c) => Some(c.tool_calls),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(deltas[0].id.as_deref(), Some("call_sy0102"));
    assert_eq!(deltas[0].name.as_deref(), Some("get_weather"));
    assert!(deltas.iter().all(|d| d.index == 0));
    let args: String = deltas.iter().map(|d| d.arguments.as_str()).collect();
    assert_eq!(args, r#"{"city":"Paris"}"#);
}

#[test]
fn stream_errors_and_garbage() {
    let first = events(fixture!("stream_error_first.sse"));
    assert_eq!(first[0].as_ref().unwrap_err().kind, ErrorKind::Server);

    let garbage = parse_event(&SseEvent::message("{\"choices\": [")).unwrap_err();
    assert_eq!(garbage.kind, ErrorKind::Malformed);
    let html = parse_event(&SseEvent::message("<html>")).unwrap_err();
    assert_eq!(html.kind, ErrorKind::Malformed);

    let openrouter_mid_stream = json!({"id": "gen-1", "object": "chat.completion.chunk",
        "error": {"code": 502, "message": "Provider disconnected"},
        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]});
    let err = parse_event(&SseEvent::message(openrouter_mid_stream.to_string())).unwrap_err();
    assert_eq!((err.kind, err.status), (ErrorKind::Server, None));

    let named = SseEvent {
        event: "error".into(),
        ..SseEvent::message(r#"{"message": "rate limited", "code": "rate_limit_exceeded"}"#)
    };
    assert_eq!(
        parse_event(&named).unwrap_err().kind,
        ErrorKind::RateLimited
    );
}

#[test]
fn usage_chunk_with_null_choices_is_accepted() {
    let vllm = json!({"id": "x", "object": "chat.completion.chunk", "choices": null,
        "usage": {"prompt_tokens": 3, "completion_tokens": 4}});
    let Parsed::Chunk(chunk) = parse_event(&SseEvent::message(vllm.to_string())).unwrap() else {
        panic!()
    };
    assert_eq!(chunk.usage.map(|u| u.output_tokens), Some(4));
}

#[test]
fn finish_reasons_are_normalised() {
    let cases = [
        ("stop", FinishReason::Stop),
        ("length", FinishReason::Length),
        ("tool_calls", FinishReason::ToolCalls),
        ("function_call", FinishReason::ToolCalls),
        ("content_filter", FinishReason::ContentFilter),
        ("eos", FinishReason::Other("eos".into())),
    ];
    for (wire, ours) in cases {
        assert_eq!(finish_reason(wire), ours);
    }
}

/// errors.json, straight through `classify` (the shared suite runs it over HTTP too).
#[test]
fn error_table_classifies() {
    crate::provider::error_body::table::assert_classifies(fixture!("errors.json"), classify);
}

#[test]
fn a_numeric_code_stands_in_for_the_status() {
    let err = classify_value(
        &json!({"error": {"code": "429", "message": "Requests exceeded. Please retry after 6 seconds."}}),
    );
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.retry_after, Some(Duration::from_secs(6)));
}

#[test]
fn absurd_usage_is_malformed_so_the_call_fails_over() {
    let body = |usage: Value| {
        json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": usage})
            .to_string()
    };
    // 2^64-1 prompt tokens once made total_tokens wrap to 4 downstream
    let wrap = body(json!({"prompt_tokens": u64::MAX, "completion_tokens": 5}));
    let err = parse_response(wrap.as_bytes()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
    assert!(err.message.contains("input tokens"), "{}", err.message);
    let reasoning = body(json!({"prompt_tokens": 1, "completion_tokens": 5,
        "completion_tokens_details": {"reasoning_tokens": 9_223_372_036_854_775_808_u64}}));
    assert_eq!(
        parse_response(reasoning.as_bytes()).unwrap_err().kind,
        ErrorKind::Malformed
    );
    let plausible = body(json!({"prompt_tokens": 1_000_000, "completion_tokens": 128_000}));
    assert!(parse_response(plausible.as_bytes()).is_ok());

    let chunk = json!({"choices": [], "usage": {"prompt_tokens": 1_u64 << 63, "completion_tokens": 1_u64 << 63}});
    let err = parse_event(&SseEvent::message(chunk.to_string())).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
}

#[test]
fn several_choices_and_their_logprobs_come_back_in_index_order() {
    let body = serde_json::json!({"model": "gpt-4o", "choices": [
        {"index": 1, "message": {"role": "assistant", "content": "Bonjour"}, "finish_reason": "stop",
         "logprobs": null},
        {"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "length",
         "logprobs": {"content": [{"token": "Hello", "logprob": -0.2, "bytes": [72], "top_logprobs": []}]}}
    ]});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.finish_reason, Some(FinishReason::Length));
    assert_eq!(reply.logprobs.unwrap()["content"][0]["token"], "Hello");
    assert_eq!(reply.alternatives.len(), 1);
    assert_eq!(reply.alternatives[0].text, "Bonjour");
    assert_eq!(reply.alternatives[0].logprobs, None);
}

/// Choices already in order are taken as they came; a repeated index keeps its last
/// choice, in order or not.
#[test]
fn choices_in_order_stay_and_a_repeated_index_keeps_its_last() {
    let choice = |i: u32, text: &str| json!({"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"});
    let texts = |choices: Vec<Value>| {
        let reply = parse_response(json!({"choices": choices}).to_string().as_bytes()).unwrap();
        let mut all = vec![reply.text.clone()];
        all.extend(reply.alternatives.iter().map(|c| c.text.clone()));
        all
    };
    let in_order = texts(vec![choice(0, "a"), choice(1, "b"), choice(2, "c")]);
    assert_eq!(in_order, ["a", "b", "c"]);
    let repeated = texts(vec![choice(0, "a"), choice(1, "b"), choice(1, "B")]);
    assert_eq!(repeated, ["a", "B"]);
    let shuffled = texts(vec![choice(1, "b"), choice(0, "a"), choice(1, "B")]);
    assert_eq!(shuffled, ["a", "B"]);
}

/// Groq reports a stream's usage under `x_groq.usage` on its last chunk.
#[test]
fn groq_stream_usage_under_x_groq_counts() {
    let sse = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"llama-3.3-70b-versatile\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"x_groq\":{\"id\":\"req_1\",\"usage\":{\"prompt_tokens\":38,\"completion_tokens\":4,\"total_tokens\":42,\"queue_time\":0.09}}}\n\ndata: [DONE]\n\n";
    let parsed: Vec<Parsed> = events(sse).into_iter().map(Result::unwrap).collect();
    let Parsed::Chunk(last) = &parsed[0] else {
        panic!("{parsed:?}")
    };
    assert_eq!(
        last.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((38, 4))
    );
    assert_eq!(last.finish_reason, Some(FinishReason::Stop));
}

fn shipped(model: &str) -> crate::cost::Price {
    crate::cost::PriceTable::builtin()
        .lookup(model)
        .unwrap()
        .price
}

/// Reasoning tokens are part of `completion_tokens`: billed once, at the output rate.
#[test]
fn reasoning_and_cached_tokens_are_priced_exactly() {
    let reply = parse_response(fixture!("completion_reasoning.json").as_bytes()).unwrap();
    let usage = reply.usage.unwrap();
    // gpt-5-mini: 128 × $0.25 + 1920 × $0.025 + 900 × $2 per MTok (896 of the 900 reasoning)
    assert_eq!(shipped("gpt-5-mini").cost(&usage).to_string(), "$0.00188");
}

/// Above 272K input tokens GPT-6.2 Sol bills the whole request at its long-context rates.
#[test]
fn long_prompts_are_priced_at_the_long_context_tier() {
    let usage = |prompt: u64, cached: u64, completion: u64, reasoning: u64| {
        let usage = json!({"prompt_tokens": prompt, "completion_tokens": completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning}});
        let b = json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": usage});
        parse_response(b.to_string().as_bytes())
            .unwrap()
            .usage
            .unwrap()
    };
    let sol = shipped("gpt-6.2-sol");
    // 200k × $4 + 100k × $0.20 + 20k × $15 per MTok
    let long = usage(300_000, 100_000, 20_000, 15_000);
    assert_eq!(long.reasoning_tokens, 15_000);
    assert_eq!(sol.cost(&long).to_string(), "$1.12");
    // exactly at the threshold: the base rates, 272k × $2 + 1k × $10
    assert_eq!(sol.cost(&usage(272_000, 0, 1_000, 0)).to_string(), "$0.554");
    // one token above: 272,001 × $4 + 1k × $15
    assert_eq!(
        sol.cost(&usage(272_001, 0, 1_000, 0)).to_string(),
        "$1.103004"
    );
}

/// An OpenAI-compatible reasoning server's `reasoning_content` (DeepSeek, vLLM; newer
/// servers name it `reasoning`) is the answer's reasoning block: text, no signature.
#[test]
fn reasoning_content_is_an_unsigned_reasoning_block() {
    let body = |field: &str| {
        serde_json::json!({"object": "chat.completion", "model": "deepseek-reasoner",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                "content": "9.11 < 9.8", field: "Compare the decimals."}}]})
        .to_string()
    };
    for field in ["reasoning_content", "reasoning"] {
        let reply = parse_response(body(field).as_bytes()).unwrap();
        assert_eq!(reply.text, "9.11 < 9.8");
        assert_eq!(
            reply.thinking,
            vec![crate::chat::Thinking {
                text: "Compare the decimals.".into(),
                ..crate::chat::Thinking::default()
            }],
            "{field}"
        );
    }
    let plain = parse_response(fixture!("completion_text.json").as_bytes()).unwrap();
    assert!(plain.thinking.is_empty());
}

#[test]
fn streamed_reasoning_content_is_reasoning_block_zero() {
    let data = serde_json::json!({"object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"reasoning_content": "Compare", "content": null}}]});
    let event = SseEvent {
        event: String::new().into(),
        data: data.to_string(),
        id: None,
        retry: None,
    };
    let Parsed::Chunk(chunk) = parse_event(&event).unwrap() else {
        panic!("a chunk")
    };
    assert_eq!(chunk.text, "");
    assert_eq!(chunk.thinking.len(), 1);
    assert_eq!(
        (chunk.thinking[0].index, chunk.thinking[0].text.as_str()),
        (0, "Compare")
    );
    assert!(chunk.has_content());
}

/// What OpenAI answers to its own contract fields (spoken output, web search citations,
/// a deprecated function call) is the reply's `native`, for the Chat Completions dialect;
/// an empty `annotations` list (OpenAI sends one on every message) says nothing.
#[test]
fn audio_citations_and_function_calls_ride_in_native() {
    let body = serde_json::json!({"object": "chat.completion", "model": "gpt-4o-audio-preview",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": null, "annotations": [],
            "audio": {"id": "audio_1", "data": "UklGRg==", "expires_at": 1, "transcript": "Hi"}}}]});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    let native = reply.native.expect("audio kept");
    assert_eq!(native["choices"][0]["index"], 0);
    assert_eq!(native["choices"][0]["message"]["audio"]["transcript"], "Hi");
    assert!(native["choices"][0]["message"].get("annotations").is_none());

    let plain = serde_json::json!({"object": "chat.completion", "choices": [{"index": 0,
        "finish_reason": "stop", "message": {"role": "assistant", "content": "Hi",
        "annotations": []}}]});
    assert!(parse_response(plain.to_string().as_bytes())
        .unwrap()
        .native
        .is_none());

    let data = serde_json::json!({"object": "chat.completion.chunk", "choices": [{"index": 0,
        "delta": {"function_call": {"name": "f", "arguments": "{}"}}}]});
    let event = SseEvent {
        event: String::new().into(),
        data: data.to_string(),
        id: None,
        retry: None,
    };
    let Parsed::Chunk(chunk) = parse_event(&event).unwrap() else {
        panic!("a chunk")
    };
    assert!(
        chunk.has_content(),
        "a piece of the answer commits a stream"
    );
    let native = chunk.native.expect("the function call piece kept");
    assert_eq!(native["choices"][0]["delta"]["function_call"]["name"], "f");
}

#[test]
fn the_one_pass_reader_reads_what_the_value_reader_read() {
    for body in &reply_bodies() {
        assert_eq!(
            parse_response(body.as_bytes()),
            super::old_reply::parse_response(body.as_bytes()),
            "{body}"
        );
    }
}

/// Every reply body of these tests: the fixtures, the malformed ones, and answers of every
/// kind the reader knows (text, parts, reasoning, tool calls, extras, several choices,
/// errors, wrong types).
fn reply_bodies() -> Vec<String> {
    let mut bodies: Vec<String> = [
        fixture!("completion_text.json"),
        fixture!("completion_tool_call.json"),
        fixture!("completion_reasoning.json"),
        fixture!("completion_refusal.json"),
        fixture!("completion_openrouter_cost.json"),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let malformed: Vec<Value> = serde_json::from_str(fixture!("malformed.json")).unwrap();
    bodies.extend(
        malformed
            .iter()
            .map(|m| m["body"].as_str().unwrap().to_owned()),
    );
    let message = |m: Value| {
        json!({"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": m, "logprobs": null, "finish_reason": "stop"}]})
    };
    let messages = [
        json!({"role": "assistant", "content": "plain"}),
        json!({"role": "assistant", "content": "esc\"apes\n\\ \u{e9} \u{1F600} \t"}),
        json!({"role": "assistant", "content": null, "refusal": "no"}),
        json!({"role": "assistant"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "x"},
            "s", 3, {"type": "text", "text": "b\n"}]}),
        json!({"role": "assistant", "content": []}),
        json!({"content": true}),
        json!({"content": 3}),
        json!({"content": -3}),
        json!({"content": 2.5}),
        json!({"content": {"text": "an object"}}),
        json!({"content": "x", "reasoning_content": "think", "reasoning": "other"}),
        json!({"content": "x", "reasoning": "think\u{e9}"}),
        json!({"content": "x", "reasoning_content": "", "reasoning": "r"}),
        json!({"content": "x", "reasoning_content": null}),
        json!({"content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
            {"function": {"name": "g", "arguments": {"b": [1, 2]}}},
            {"function": {"name": "h", "arguments": null}},
            {"function": {"name": "i"}}]}),
        json!({"content": "x", "tool_calls": null}),
        json!({"content": "x", "audio": {"id": "a", "transcript": "Hi"},
            "annotations": [{"type": "url_citation"}], "function_call": {"name": "f"}}),
        json!({"content": "x", "audio": null, "annotations": [], "function_call": null}),
        json!("a string"),
        json!({"content": "x", "refusal": 5}),
    ];
    bodies.extend(messages.into_iter().map(|m| message(m).to_string()));
    let whole = [
        json!({"choices": [
            {"index": 2, "message": {"content": "two", "audio": {"id": "b"}}, "finish_reason": "length"},
            {"index": 0, "message": {"content": "zero", "reasoning": "r0"}, "finish_reason": "tool_calls",
             "logprobs": {"content": [{"token": "z", "logprob": -0.5}]}},
            {"index": 1, "message": {"content": "one", "reasoning": "r1"}, "finish_reason": "weird"},
            {"index": 0, "message": {"content": "zero again"}, "finish_reason": "content_filter"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 1},
                "completion_tokens_details": {"reasoning_tokens": 2}, "cost": 0.25},
            "system_fingerprint": "fp_1", "service_tier": "default"}),
        json!({"choices": [{"index": 0, "message": {"content": "a"}},
            {"index": 1, "message": {"content": 7}}]}),
        json!({"choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": "function_call"}],
            "usage": {"prompt_tokens": 1, "cost": -1.0}}),
        json!({"choices": [{"index": 0, "message": {"content": "a"}}],
            "usage": {"prompt_tokens": 10_000_000_000_u64}}),
        json!({"choices": [{"index": 0, "message": {"content": "a"}}], "usage": null,
            "id": null, "model": null}),
        json!({"error": {"message": "overloaded", "type": "server_error", "code": 529}}),
        json!({"object": "error", "message": "bad", "code": 400, "choices": []}),
        json!({"error": null, "choices": [{"message": {"content": "a"}}]}),
        json!({"choices": null}),
        json!([1, 2]),
    ];
    bodies.extend(whole.iter().map(Value::to_string));
    bodies.extend(["", "  \n", "{", "<html>502</html>", "{\"choices\":[{}]}"].map(str::to_owned));
    bodies
}

/// The members of faultline's answer (`crates/faultline/src/wire.rs`, `completion`), as
/// (key, value) at each level, for [`variants`] to reorder and change.
struct Shape {
    top: Vec<(&'static str, String)>,
    choice: Vec<(&'static str, String)>,
    message: Vec<(&'static str, String)>,
}

impl Shape {
    fn usual() -> Self {
        let own = |m: &[(&'static str, &str)]| m.iter().map(|&(k, v)| (k, v.to_owned())).collect();
        Shape {
            top: own(&[
                ("id", r#""chatcmpl-1""#),
                ("object", r#""chat.completion""#),
                ("created", "1700000000"),
                ("model", r#""gpt-4o-mini""#),
                ("system_fingerprint", r#""fp_1""#),
                ("choices", ""),
                (
                    "usage",
                    r#"{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}"#,
                ),
            ]),
            choice: own(&[
                ("index", "0"),
                ("message", ""),
                ("logprobs", "null"),
                ("finish_reason", r#""stop""#),
            ]),
            message: own(&[
                ("role", r#""assistant""#),
                ("content", r#""The capital of France is Paris.""#),
                ("refusal", "null"),
            ]),
        }
    }

    /// The body, members joined with `ws` around every token, each level's members
    /// rotated by `turn`.
    fn body(&self, ws: &str, turn: usize) -> String {
        let object = |members: &[(&str, String)], inner: &str| {
            let mut members: Vec<String> = (members.iter())
                .map(|(k, v)| {
                    let v = if v.is_empty() { inner } else { v.as_str() };
                    format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}")
                })
                .collect();
            let len = members.len().max(1);
            members.rotate_left(turn % len);
            format!("{{{}}}", members.join(","))
        };
        let message = object(&self.message, "");
        let choice = object(&self.choice, &message);
        let choices = format!("[{ws}{choice}{ws}]");
        format!("{ws}{}{ws}", object(&self.top, &choices))
    }

    fn set(members: &mut Vec<(&'static str, String)>, key: &'static str, value: Option<&str>) {
        members.retain(|(k, _)| *k != key);
        if let Some(v) = value {
            members.push((key, v.to_owned()));
        }
    }
}

/// Faultline's answer and its variants: members in every rotation and reversed, with
/// whitespace, each member changed to what answers carry (escapes, unicode, `null`,
/// absent, numbers of every form, usage details, extras, wrong types), duplicated, and the
/// answer cut at every byte.
fn variants() -> Vec<String> {
    let mut bodies = Vec::new();
    for ws in ["", " ", "\n\t ", "\r\n"] {
        for turn in 0..8 {
            bodies.push(Shape::usual().body(ws, turn));
        }
        let mut reversed = Shape::usual();
        reversed.top.reverse();
        reversed.choice.reverse();
        reversed.message.reverse();
        bodies.push(reversed.body(ws, 0));
    }
    let strings = [
        r#""plain""#,
        r#""""#,
        r#""esc\"apes\n\\ \/ \b\f\r\t""#,
        r#""\u00e9\u00E9 \u0041\u0000 \u2713""#,
        r#""\ud83d\ude00""#,
        r#""\ud83d""#,
        r#""\u00g9""#,
        r#""\x""#,
        "\"é ✓ 😀\"",
        "\"ctl\u{1}\"",
        "\"tab\t\"",
        r#""unterminated"#,
        "null",
        "7",
        "true",
        r#"["a"]"#,
        r#"{"a":1}"#,
    ];
    let numbers = [
        "0",
        "1",
        "12",
        "-1",
        "-0",
        "1.0",
        "1e3",
        "1E+2",
        "2.5e-3",
        "01",
        "1x",
        "00",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
        "1e400",
        "-1e400",
        "null",
        r#""3""#,
        "true",
        "[]",
        "{}",
    ];
    let mut one = |edit: &dyn Fn(&mut Shape)| {
        let mut shape = Shape::usual();
        edit(&mut shape);
        bodies.push(shape.body("", 0));
        bodies.push(shape.body(" ", 3));
    };
    for key in ["id", "model", "system_fingerprint", "object"] {
        for v in strings.iter().chain([&"\"error\""]) {
            let v: &str = v;
            one(&|s| Shape::set(&mut s.top, key, Some(v)));
        }
        one(&|s| Shape::set(&mut s.top, key, None));
    }
    for key in ["content", "refusal", "role"] {
        for v in strings
            .iter()
            .chain([&r#"[{"type":"text","text":"a"}]"#, &"[]"])
        {
            let v: &str = v;
            one(&|s| Shape::set(&mut s.message, key, Some(v)));
        }
        one(&|s| Shape::set(&mut s.message, key, None));
    }
    for v in strings {
        one(&|s| Shape::set(&mut s.choice, "finish_reason", Some(v)));
    }
    for key in ["finish_reason", "logprobs", "index"] {
        one(&|s| Shape::set(&mut s.choice, key, None));
    }
    for v in numbers
        .iter()
        .chain(&[r#"{"content":[]}"#, r#"{"content":null}"#])
    {
        let v: &str = v;
        one(&|s| Shape::set(&mut s.choice, "index", Some(v)));
        one(&|s| Shape::set(&mut s.choice, "logprobs", Some(v)));
    }
    for key in ["prompt_tokens", "completion_tokens", "total_tokens", "cost"] {
        for v in numbers
            .iter()
            .chain(&["0.25", "1e-3", "5", "-1.5", "1.7976931348623157e308"])
        {
            let v: &str = v;
            let usage = format!(r#"{{"prompt_tokens":1,"{key}":{v}}}"#);
            one(&|s| Shape::set(&mut s.top, "usage", Some(usage.as_str())));
        }
    }
    for (key, inner) in [
        ("prompt_tokens_details", "cached_tokens"),
        ("completion_tokens_details", "reasoning_tokens"),
    ] {
        let mut details: Vec<String> = numbers
            .iter()
            .map(|v| format!(r#"{{"audio_tokens":0,"{inner}":{v}}}"#))
            .collect();
        details.extend(
            [
                "null",
                "{}",
                "[]",
                "3",
                r#"{"audio_tokens":0}"#,
                r#"{"x":{"y":[1,{"z":null}]}}"#,
            ]
            .map(str::to_owned),
        );
        details.push(format!(r#"{{"{inner}":1,"{inner}":2}}"#));
        details.push(format!(r#"{{"{inner}":1,"a":2,"a":3}}"#));
        for d in &details {
            let usage = format!(
                r#"{{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500,"{key}":{d}}}"#
            );
            one(&|s| Shape::set(&mut s.top, "usage", Some(usage.as_str())));
        }
    }
    for usage in [
        "null",
        "{}",
        "[]",
        r#"{"prompt_tokens":1,"prompt_tokens":2}"#,
        r#"{"prompt_tokens":5,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0},"cost":0.000125}"#,
        r#"{"prompt_tokens":20000000000}"#,
    ] {
        one(&|s| Shape::set(&mut s.top, "usage", Some(usage)));
    }
    // what the gateway models besides the text: `null`, or serde's
    for key in [
        "tool_calls",
        "reasoning_content",
        "reasoning",
        "audio",
        "annotations",
        "function_call",
    ] {
        for v in [
            "null",
            "[]",
            r#""think""#,
            r#"[{"type":"url_citation"}]"#,
            r#"{"id":"a"}"#,
            r#"[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]"#,
        ] {
            one(&|s| Shape::set(&mut s.message, key, Some(v)));
        }
    }
    // extras nobody models, errors, several choices
    for (key, v) in [
        ("service_tier", r#""default""#),
        (
            "prompt_filter_results",
            r#"[{"prompt_index":0,"content_filter_results":{}}]"#,
        ),
        ("x", r#"{"a":[1,-2.5e3,true,false,null,"\u00e9",{}]}"#),
        ("x", r#""\ud800""#),
        ("x", "01"),
        ("x", "[1,]"),
        ("x", r#"{"a" 1}"#),
        ("error", "null"),
        ("error", r#"{"message":"overloaded","code":529}"#),
        ("message", r#""bad""#),
    ] {
        one(&|s| Shape::set(&mut s.top, key, Some(v)));
    }
    let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
    one(&|s| Shape::set(&mut s.top, "x", Some(deep.as_str())));
    one(&|s| Shape::set(&mut s.message, "x", Some(r#"{"nested":["ok"]}"#)));
    one(&|s| Shape::set(&mut s.choice, "content_filter_results", Some("{}")));
    for choices in [
        "[]",
        "null",
        "{}",
        r#"[{"index":0,"message":{"content":"a"}},{"index":1,"message":{"content":"b"}}]"#,
        r#"[{"index":1,"message":{"content":"a"}}]"#,
        r#"[{"index":0}]"#,
        r#"[{"index":0,"message":null}]"#,
        r#"[{"index":0,"message":"a"}]"#,
        r#"[{"index":0,"message":{}}]"#,
        r#"[{"message":{"content":"a"},"index":0,"index":0}]"#,
    ] {
        one(&|s| Shape::set(&mut s.top, "choices", Some(choices)));
    }
    // a duplicate of every member, at every level
    let usual = Shape::usual();
    for (k, v) in usual.top.iter().filter(|(_, v)| !v.is_empty()) {
        one(&|s| s.top.push((*k, v.clone())));
    }
    for (k, v) in usual.choice.iter().filter(|(_, v)| !v.is_empty()) {
        one(&|s| s.choice.push((*k, v.clone())));
    }
    for (k, v) in &usual.message {
        one(&|s| s.message.push((*k, v.clone())));
    }
    one(&|s| s.top.push(("choices", r#"[{"message":{}}]"#.to_owned())));
    // cut at every byte, and trailing bytes
    let whole = Shape::usual().body("", 0);
    bodies.extend((0..whole.len()).map(|n| whole[..n].to_owned()));
    bodies.extend(["x", " {}", ",", "}", "\u{0}"].map(|t| format!("{whole}{t}")));
    bodies.push("\"x\"".to_owned());
    bodies
}

/// The hand-read answer is the answer serde reads: for every body here, the reply (or the
/// error) is the serde reader's; where the scan takes a body, what it read is the very
/// completion serde reads from it; and it takes the usual ones.
#[test]
fn the_scanned_reply_is_the_reply_serde_reads() {
    use super::super::reply::{parse_response_serde, read, scan};
    let mut bodies = reply_bodies();
    bodies.extend(variants());
    let mut bytes: Vec<Vec<u8>> = bodies.iter().map(|b| b.clone().into_bytes()).collect();
    let mut latin = Shape::usual().body("", 0).into_bytes();
    latin.extend_from_slice(b" \xff");
    bytes.push(latin);
    let mut taken = 0;
    for body in &bytes {
        let text = String::from_utf8_lossy(body);
        assert_eq!(parse_response(body), parse_response_serde(body), "{text}");
        if let Some(scanned) = scan::completion(body) {
            taken += 1;
            assert_eq!(Some(scanned), read(body).ok(), "{text}");
        }
    }
    assert!(taken > 300, "the usual answers are read by hand: {taken}");
    let usual = Shape::usual().body("", 0);
    assert!(scan::completion(usual.as_bytes()).is_some());
    let text = fixture!("completion_text.json");
    assert!(scan::completion(text.as_bytes()).is_some(), "{text}");
}
