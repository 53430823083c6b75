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
    assert_eq!(reply.id.as_deref(), Some("sy-resp-0001"), "responseId");
    assert_eq!(reply.model.as_deref(), Some("gemini-2.5-flash"));
    assert!(reply.tool_calls.is_empty());
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
    assert_eq!(last.id.as_deref(), Some("sy-stream-0101"), "responseId");
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

#[test]
fn candidates_and_logprobs_read_as_choices_in_openai_shape() {
    let body = serde_json::json!({"candidates": [
        {"index": 0, "content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP",
         "logprobsResult": {
            "topCandidates": [{"candidates": [
                {"token": "Hi", "logProbability": -0.1}, {"token": "Hey", "logProbability": -2.5}]}],
            "chosenCandidates": [{"token": "Hi", "logProbability": -0.1}]}},
        {"index": 1, "content": {"role": "model", "parts": [{"text": "Hello"}]}, "finishReason": "STOP"}
    ]});
    let reply = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(reply.text, "Hi");
    assert_eq!(
        reply.logprobs.unwrap(),
        serde_json::json!({"content": [{"token": "Hi", "logprob": -0.1, "bytes": null,
            "top_logprobs": [{"token": "Hi", "logprob": -0.1, "bytes": null},
                             {"token": "Hey", "logprob": -2.5, "bytes": null}]}]})
    );
    assert_eq!(reply.alternatives.len(), 1);
    assert_eq!(reply.alternatives[0].text, "Hello");
}

fn shipped(model: &str) -> crate::cost::Price {
    crate::cost::PriceTable::builtin()
        .lookup(model)
        .unwrap()
        .price
}

/// `candidatesTokenCount` excludes thoughts; both are output, billed at the output rate,
/// and context-cache reads at the cached rate (not the full input price).
#[test]
fn thoughts_and_cached_content_are_priced_exactly() {
    let usage = parse_response(fixture!("completion_thinking.json").as_bytes())
        .unwrap()
        .usage
        .unwrap();
    // gemini-2.5-pro: 128 × $1.25 + 1920 × $0.125 + (4 + 896) × $10 per MTok
    assert_eq!(
        shipped("gemini-2.5-pro").cost(&usage).to_string(),
        "$0.0094"
    );
}

/// Prompts above 200k tokens are billed at Gemini 2.5 Pro's long-context rates, output
/// (thoughts included) too.
#[test]
fn long_prompts_are_priced_at_the_long_context_tier() {
    let usage = |prompt: u64, cached: u64| {
        let body = json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
                "candidatesTokenCount": 1_000, "thoughtsTokenCount": 3_000}});
        parse_response(body.to_string().as_bytes())
            .unwrap()
            .usage
            .unwrap()
    };
    let pro = shipped("gemini-2.5-pro");
    let long = usage(250_000, 200_000);
    assert_eq!((long.output_tokens, long.reasoning_tokens), (4_000, 3_000));
    // 50k × $2.50 + 200k × $0.25 + 4k × $15 per MTok
    assert_eq!(pro.cost(&long).to_string(), "$0.235");
    // exactly 200k: the base rates, 200k × $1.25 + 4k × $10
    assert_eq!(pro.cost(&usage(200_000, 0)).to_string(), "$0.29");
}

/// With `candidateCount` = 2 candidate 1's pieces ride on the chunk as choice 1 (with its
/// own call numbering and log probabilities), and the finish signal comes with the chunk
/// where the last candidate finishes, carrying candidate 0's reason.
#[test]
fn a_stream_of_two_candidates_finishes_when_both_have() {
    let mut parser = StreamParser::with_candidates(2);
    let mut next =
        |v: serde_json::Value| match parser.parse_event(&SseEvent::message(v.to_string())) {
            Ok(Parsed::Chunk(c)) => c,
            other => panic!("{other:?}"),
        };
    let first = next(json!({"candidates": [
        {"index": 0, "content": {"role": "model", "parts": [{"text": "Hi"}]}},
        {"index": 1, "content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
         "logprobsResult": {"topCandidates": [], "chosenCandidates": [{"token": "f", "logProbability": -0.3}]}}]}));
    assert_eq!(first.text, "Hi");
    assert_eq!(first.finish_reason, None);
    let alt = &first.choices[0];
    assert_eq!((alt.index, alt.tool_calls[0].index), (1, 0));
    assert_eq!(alt.tool_calls[0].name.as_deref(), Some("f"));
    assert_eq!(alt.logprobs.as_ref().unwrap()[0]["token"], "f");
    let second = next(json!({"candidates": [
        {"index": 1, "content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]}));
    assert_eq!(
        second.choices[0].finish_reason,
        Some(FinishReason::ToolCalls)
    );
    assert_eq!(second.finish_reason, None, "candidate 0 is still going");
    let last = next(json!({"candidates": [
        {"index": 0, "content": {"role": "model", "parts": [{"text": "!"}]}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}}));
    assert_eq!(last.text, "!");
    assert_eq!(last.finish_reason, Some(FinishReason::Length));
}
