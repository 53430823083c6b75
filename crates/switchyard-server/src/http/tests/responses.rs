//! `POST /v1/responses` on the wire: the response object, the event sequence (plain, tool
//! calls, rescued, unrescuable), errors naming the field, and stored responses
//! (`previous_response_id`, `GET`, `DELETE`, scoped to the client key).

use super::*;
use switchyard::chat::{FinishReason, ToolCall, ToolCallDelta};
use switchyard::{ChatChunk, ProviderReply, Role, Usage};

fn post_responses(body: &Value) -> Request<Body> {
    Request::post("/v1/responses")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn with_key(mut req: Request<Body>, token: &str) -> Request<Body> {
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    req
}

/// `(event name, data)` of every event, checking each data's `type` and sequence.
fn named_events(text: &str) -> Vec<(String, Value)> {
    let out: Vec<(String, Value)> = text
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_owned();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str(), "{data}");
            (name, data)
        })
        .collect();
    for (i, (_, data)) in out.iter().enumerate() {
        assert_eq!(data["sequence_number"], i, "{data}");
    }
    out
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

fn tool_reply() -> Step {
    Step::Reply(ProviderReply {
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: r#"{"city":"Paris"}"#.into(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        usage: Some(Usage {
            input_tokens: 12,
            output_tokens: 7,
            ..Usage::default()
        }),
        ..ProviderReply::default()
    })
}

#[tokio::test]
async fn a_plain_answer_is_a_response_object() {
    let f = basic();
    let body = json!({"model": "smart", "input": "hello", "instructions": "be brief",
        "temperature": 0.5, "metadata": {"team": "a"}});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    let r = json_body(resp).await;
    assert_eq!(r["object"], "response");
    assert!(r["id"].as_str().unwrap().starts_with("resp_"), "{r}");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["model"], "primary-model");
    assert_eq!(r["instructions"], "be brief");
    assert_eq!(r["temperature"], 0.5);
    assert_eq!(r["metadata"]["team"], "a");
    assert_eq!(r["tools"], json!([]));
    assert_eq!(r["tool_choice"], "auto");
    assert_eq!(r["parallel_tool_calls"], true);
    let item = &r["output"][0];
    assert_eq!(item["type"], "message");
    assert!(item["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(item["role"], "assistant");
    assert_eq!(item["status"], "completed");
    assert_eq!(item["content"][0]["type"], "output_text");
    assert_eq!(item["content"][0]["text"], "ok from primary-model");
    assert_eq!(item["content"][0]["annotations"], json!([]));
    assert_eq!(r["usage"]["input_tokens"], 10);
    assert_eq!(r["usage"]["output_tokens"], 21);
    assert_eq!(r["usage"]["total_tokens"], 31);
    assert_eq!(r["usage"]["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(r["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
    assert_eq!(r["switchyard"]["provider"], "primary");
    assert_eq!(r["switchyard"]["stored"], true);
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.messages[0].role, Role::System);
    assert_eq!(sent.messages[0].joined_text(), "be brief");
    assert_eq!(sent.messages[1].joined_text(), "hello");
    assert_eq!(sent.temperature, Some(0.5));
}

#[tokio::test]
async fn the_length_limit_makes_an_incomplete_response() {
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Reply(ProviderReply {
            text: "cut sh".into(),
            finish_reason: Some(FinishReason::Length),
            ..ProviderReply::default()
        })),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "max_output_tokens": 3});
    let r = json_body(call(&f.state, post_responses(&body)).await).await;
    assert_eq!(r["status"], "incomplete");
    assert_eq!(r["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(r["max_output_tokens"], 3);
    assert_eq!(f.primary.requests()[0].max_tokens, Some(3));
}

#[tokio::test]
async fn a_function_tool_loop_carries_calls_and_outputs() {
    let f = fixture(
        ScriptedProvider::new("p").then(tool_reply()),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let tool = json!({"type": "function", "name": "get_weather", "description": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": true});
    let body = json!({"model": "smart", "input": [{"role": "user", "content": "weather?"}],
        "tools": [tool], "tool_choice": {"type": "function", "name": "get_weather"},
        "store": false});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(header(&resp, "x-switchyard-ignored"), "tools.strict");
    let r = json_body(resp).await;
    let item = &r["output"][0];
    assert_eq!(item["type"], "function_call", "{r}");
    assert!(item["id"].as_str().unwrap().starts_with("fc_"));
    assert_eq!(item["call_id"], "call_1");
    assert_eq!(item["name"], "get_weather");
    assert_eq!(item["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(item["status"], "completed");
    assert_eq!(r["tools"][0]["strict"], true);
    assert_eq!(r["tool_choice"]["name"], "get_weather");
    assert_eq!(r["switchyard"]["stored"], false);
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.tools[0].name, "get_weather");
    assert_eq!(
        sent.tool_choice,
        Some(switchyard::chat::ToolChoice::Tool("get_weather".into()))
    );

    // the next turn sends the call and its output back as items
    let next = json!({"model": "smart", "tools": [tool], "input": [
        {"role": "user", "content": "weather?"},
        {"type": "function_call", "id": "fc_x", "call_id": "call_1", "name": "get_weather",
         "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}]});
    let r = json_body(call(&f.state, post_responses(&next)).await).await;
    assert_eq!(r["output"][0]["content"][0]["text"], "ok from p");
    let sent = &f.primary.requests()[1];
    assert_eq!(sent.messages[1].role, Role::Assistant);
    assert_eq!(sent.messages[1].tool_calls[0].id, "call_1");
    assert_eq!(sent.messages[2].role, Role::Tool);
    assert_eq!(sent.messages[2].tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(sent.messages[2].name.as_deref(), Some("get_weather"));
    assert_eq!(sent.messages[2].joined_text(), "sunny");
}

#[tokio::test]
async fn client_mistakes_are_400s_naming_the_field() {
    let f = basic();
    let cases = [
        (
            json!({"model": "smart", "input": "x", "frobnicate": 1}),
            "frobnicate",
        ),
        (
            json!({"model": "smart", "input": "x", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
        ),
        (
            json!({"model": "smart", "input": [{"role": "user", "content": "x"},
                {"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "input[1].call_id",
        ),
        (
            json!({"model": "smart", "input": [{"type": "function_call_output",
                "call_id": "nope", "output": "x"}]}),
            "input[0].call_id",
        ),
        (
            json!({"model": "smart", "input": [{"role": "wizard", "content": "x"}]}),
            "input[0].role",
        ),
        (
            json!({"model": "smart", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
            "input[0].content[0].type",
        ),
        (
            json!({"model": "smart", "input": "x", "temperature": 7}),
            "temperature",
        ),
        (
            json!({"model": "smart", "input": "x", "max_output_tokens": "many"}),
            "max_output_tokens",
        ),
        (
            json!({"model": "smart", "input": "x", "tool_choice": {"type": "file_search"}}),
            "tool_choice.type",
        ),
        (
            json!({"model": "smart", "input": "x", "background": true}),
            "background",
        ),
        (json!({"model": "smart"}), "input"),
        (
            json!({"model": "smart", "input": "x", "user": "u".repeat(300)}),
            "user",
        ),
    ];
    for (body, param) in cases {
        let resp = call(&f.state, post_responses(&body)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let e = json_body(resp).await;
        assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
        assert_eq!(e["error"]["param"], param, "{body}: {e}");
    }
    let e = json_body(
        call(
            &f.state,
            post_responses(
                &json!({"model": "smart", "input": "x", "tools": [{"type": "web_search"}]}),
            ),
        )
        .await,
    )
    .await;
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("web_search"),
        "{e}"
    );
    assert_eq!(f.primary.calls(), 0);
}

/// `input` of neither kind is a 400 naming it and saying what it must be.
#[tokio::test]
async fn an_input_neither_text_nor_items_is_a_400_saying_what_it_must_be() {
    let f = basic();
    for input in [json!(5), json!({"role": "user"}), json!(true)] {
        let body = json!({"model": "smart", "input": input});
        let resp = call(&f.state, post_responses(&body)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let e = json_body(resp).await;
        assert_eq!(e["error"]["param"], "input", "{e}");
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("expected a string or an array of input items"),
            "{e}"
        );
    }
    assert_eq!(f.primary.calls(), 0);
}

/// `max_tool_calls` and `truncation: "auto"` change the answer and only the Responses API
/// has them: a route without a provider that takes the body as written refuses them by
/// name (never ignored); `truncation: "disabled"` is the default and goes anywhere.
#[tokio::test]
async fn responses_only_fields_are_refused_where_no_provider_takes_them() {
    let f = basic();
    for (extra, param) in [
        (json!({"max_tool_calls": 2}), "max_tool_calls"),
        (json!({"truncation": "auto"}), "truncation"),
    ] {
        let mut body = json!({"model": "smart", "input": "x"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let resp = call(&f.state, post_responses(&body)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let e = json_body(resp).await;
        assert_eq!(e["error"]["param"], param, "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(param),
            "{e}"
        );
    }
    assert_eq!(f.primary.calls(), 0);
    let body = json!({"model": "smart", "input": "x", "truncation": "disabled"});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
}

/// Keys inside input items and content parts that the shared shape does not model (a newer
/// item field, an earlier answer's citations) are never dropped unsaid: another vendor's
/// answer names them in `x-switchyard-ignored`, a few by name and the rest as `input.*`.
#[tokio::test]
async fn unmodelled_keys_inside_input_items_are_named() {
    let f = basic();
    let body = json!({"model": "smart", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "phase": "final_answer", "content": [{"type": "output_text", "text": "Hello.",
            "annotations": [{"type": "url_citation", "url": "https://example.com",
                             "start_index": 0, "end_index": 5, "title": "x"}]}]},
        {"type": "message", "role": "user", "content": "and?"}]});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "input.message.phase, input.output_text.annotations"
    );
    // ids, statuses and empty annotations are echoes that change nothing: not named
    let body = json!({"model": "smart", "input": [
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Hello.", "annotations": []}]},
        {"type": "message", "role": "user", "content": "and?"}]});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
    // many odd keys: a few named, the rest (and any name not plain) as input.*
    let mut item = json!({"type": "message", "role": "user", "content": "x", "a b": 1});
    for k in 0..12 {
        item[format!("k{k:02}")] = json!(k);
    }
    let body = json!({"model": "smart", "input": [item]});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let named = header(&resp, "x-switchyard-ignored").to_owned();
    assert!(named.contains("input.*"), "{named}");
    assert!(named.split(", ").count() <= 9, "{named}");
}

#[tokio::test]
async fn advisory_fields_are_named_in_the_ignored_header() {
    let f = basic();
    let body = json!({"model": "smart", "input": "x", "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "auto"}, "prompt_cache_key": "k",
        "client_metadata": {"a": "b"}, "store": false});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "client_metadata",
        "include reasoning.encrypted_content and reasoning.summary are honoured, \
         prompt_cache_key is carried to a provider that takes it"
    );
    let sent = &f.primary.requests()[0];
    assert_eq!(
        sent.reasoning_effort,
        Some(switchyard::chat::ReasoningEffort::Low),
        "reasoning.effort is carried"
    );
    assert_eq!(sent.prompt_cache_key.as_deref(), Some("k"));

    // a vendor with no place for OpenAI's cache key: named as ignored
    let f = fixture(
        anthropic_like("claude"),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "client_metadata, prompt_cache_key"
    );
}

/// A scripted provider declaring Anthropic's support table.
fn anthropic_like(model: &str) -> ScriptedProvider {
    use switchyard::provider::codec::Codec;
    ScriptedProvider::new(model)
        .declaring(<switchyard::provider::anthropic::AnthropicCodec as Codec>::support)
}

/// `text.verbosity` is degradable: carried to a provider that takes it (the shared
/// `verbosity`), dropped and named for one that cannot (Codex sends it on every request,
/// so it never stops a failover).
#[tokio::test]
async fn text_verbosity_is_carried_or_dropped_and_named() {
    let f = fixture(
        anthropic_like("claude"),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "x", "text": {"verbosity": "low"}});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(header(&resp, "x-switchyard-dropped"), "verbosity");
    assert_eq!(f.primary.requests()[0].verbosity, None);
    let v = json_body(resp).await;
    assert_eq!(v["switchyard"]["dropped"], json!(["verbosity"]), "{v}");

    let f = basic();
    let resp = call(&f.state, post_responses(&body)).await;
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
    assert_eq!(
        f.primary.requests()[0].verbosity,
        Some(switchyard::chat::Verbosity::Low)
    );
    let bad = json!({"model": "smart", "input": "x", "text": {"verbosity": "loud"}});
    let resp = call(&f.state, post_responses(&bad)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["param"], "text.verbosity");
}

#[tokio::test]
async fn a_stream_is_the_responses_event_sequence() {
    let f = fixture(
        ScriptedProvider::new("p").then(Step::stream_words(&["Hel", "lo ", "there."])),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "stream": true});
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(header(&resp, "content-type"), "text/event-stream");
    let ev = named_events(&text_body(resp).await);
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(ev[0].1["response"]["status"], "in_progress");
    let id = ev[0].1["response"]["id"].as_str().unwrap();
    assert_eq!(ev[4].1["delta"], "Hel");
    assert_eq!(ev[4].1["output_index"], 0);
    assert_eq!(ev[4].1["content_index"], 0);
    assert_eq!(ev[7].1["text"], "Hello there.");
    let done = &ev[10].1["response"];
    assert_eq!(done["id"], id);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Hello there.");
    assert_eq!(done["usage"]["output_tokens"], 3);
    assert_eq!(done["switchyard"]["provider"], "primary");
}

#[tokio::test]
async fn streamed_function_calls_get_their_own_items() {
    let delta = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| ToolCallDelta {
        index,
        id: id.map(str::to_owned),
        name: name.map(str::to_owned),
        arguments: args.to_owned(),
    };
    let steps = vec![
        StreamStep::Chunk(ChatChunk {
            text: "Checking.".into(),
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            tool_calls: vec![delta(0, Some("call_a"), Some("f"), "{\"a\":")],
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            tool_calls: vec![
                delta(1, Some("call_b"), Some("g"), "{}"),
                delta(0, None, None, "1}"),
            ],
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            finish_reason: Some(FinishReason::ToolCalls),
            ..ChatChunk::default()
        }),
    ];
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(steps)),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "stream": true, "store": false,
        "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "g"}]});
    let ev = named_events(&text_body(call(&f.state, post_responses(&body)).await).await);
    assert_eq!(
        names(&ev),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            // the text ends when the first call starts
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(ev[8].1["output_index"], 1);
    assert_eq!(ev[8].1["item"]["call_id"], "call_a");
    assert_eq!(ev[10].1["output_index"], 2);
    assert_eq!(ev[12].1["output_index"], 1, "call a's second piece");
    assert_eq!(ev[13].1["arguments"], "{\"a\":1}");
    assert_eq!(ev[13].1["name"], "f");
    let out = &ev[17].1["response"]["output"];
    assert_eq!(out[0]["type"], "message");
    assert_eq!(out[1]["call_id"], "call_a");
    assert_eq!(out[1]["arguments"], "{\"a\":1}");
    assert_eq!(out[2]["call_id"], "call_b");
}

#[tokio::test]
async fn a_cut_stream_is_rescued_and_completes() {
    let Step::Stream(mut steps) = Step::stream_words(&["The ", "quick ", "fox."]) else {
        unreachable!()
    };
    steps.truncate(2);
    steps.push(StreamStep::End);
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(steps)),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["The ", "quick ", "fox."])),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "stream": true});
    let ev = named_events(&text_body(call(&f.state, post_responses(&body)).await).await);
    let last = ev.last().unwrap();
    assert_eq!(last.0, "response.completed", "{:?}", names(&ev));
    let text: String = ev
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The quick fox.", "delivered once");
    let r = &last.1["response"];
    assert_eq!(r["output"][0]["content"][0]["text"], "The quick fox.");
    assert_eq!(r["switchyard"]["provider"], "backup");
    let labels: Vec<&str> = r["switchyard"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"rescue"), "{labels:?}");
}

#[tokio::test]
async fn an_unrescuable_stream_ends_failed_never_completed() {
    let steps = vec![
        StreamStep::Chunk(ChatChunk {
            text: "Half an ans".into(),
            ..ChatChunk::default()
        }),
        StreamStep::End,
    ];
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(steps)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "stream": true});
    let ev = named_events(&text_body(call(&f.state, post_responses(&body)).await).await);
    assert!(
        !names(&ev).contains(&"response.completed"),
        "{:?}",
        names(&ev)
    );
    let (name, data) = ev.last().unwrap();
    assert_eq!(name, "response.failed");
    let r = &data["response"];
    assert_eq!(r["status"], "failed");
    assert_eq!(r["error"]["code"], "server_error");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stream closed before the finish signal"),
        "{r}"
    );
    assert_eq!(r["output"][0]["content"][0]["text"], "Half an ans");
    assert_eq!(r["output"][0]["status"], "incomplete");
}

#[tokio::test]
async fn stored_responses_continue_and_can_be_fetched_and_deleted() {
    let f = basic();
    let first = json!({"model": "smart", "input": "my name is Ada", "instructions": "first rules"});
    let r1 = json_body(call(&f.state, post_responses(&first)).await).await;
    let id = r1["id"].as_str().unwrap().to_owned();

    let next = json!({"model": "smart", "input": "what is my name?", "previous_response_id": id,
        "instructions": "second rules", "stream": true});
    let ev = named_events(&text_body(call(&f.state, post_responses(&next)).await).await);
    let r2 = &ev.last().unwrap().1["response"];
    assert_eq!(r2["previous_response_id"], id.as_str());
    let sent = &f.primary.requests()[1];
    let texts: Vec<String> = sent.messages.iter().map(|m| m.joined_text()).collect();
    assert_eq!(
        texts,
        [
            "second rules",
            "my name is Ada",
            "ok from primary-model",
            "what is my name?"
        ],
        "the earlier instructions are not carried over"
    );

    let got = call(
        &f.state,
        Request::get(format!("/v1/responses/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(got.status(), StatusCode::OK);
    let got = json_body(got).await;
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["output"], r1["output"]);

    let del = call(
        &f.state,
        Request::delete(format!("/v1/responses/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(
        json_body(del).await,
        json!({"id": id, "object": "response.deleted", "deleted": true})
    );
    let gone = call(
        &f.state,
        Request::get(format!("/v1/responses/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    let resp = call(&f.state, post_responses(&next)).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let e = json_body(resp).await;
    assert_eq!(e["error"]["param"], "previous_response_id");
    assert_eq!(e["error"]["type"], "invalid_request_error");
    assert_eq!(f.primary.calls(), 2, "the refused turn reached no provider");
}

#[tokio::test]
async fn a_stored_response_belongs_to_its_key() {
    let f = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[key("alice", "sy-alice"), key("bob", "sy-bob")],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "secret"});
    let r = json_body(call(&f.state, with_key(post_responses(&body), "sy-alice")).await).await;
    let id = r["id"].as_str().unwrap().to_owned();
    let get = |token: &'static str| {
        with_key(
            Request::get(format!("/v1/responses/{id}"))
                .body(Body::empty())
                .unwrap(),
            token,
        )
    };
    assert_eq!(
        call(&f.state, get("sy-alice")).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        call(&f.state, get("sy-bob")).await.status(),
        StatusCode::NOT_FOUND
    );
    let unauth = Request::get(format!("/v1/responses/{id}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        call(&f.state, unauth).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let next = json!({"model": "smart", "input": "more", "previous_response_id": id});
    let resp = call(&f.state, with_key(post_responses(&next), "sy-bob")).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let del = with_key(
        Request::delete(format!("/v1/responses/{id}"))
            .body(Body::empty())
            .unwrap(),
        "sy-bob",
    );
    assert_eq!(call(&f.state, del).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        call(&f.state, get("sy-alice")).await.status(),
        StatusCode::OK,
        "still there"
    );
}

#[tokio::test]
async fn a_codex_shaped_request_is_served_and_its_advisory_fields_named() {
    let f = basic();
    let body = json!({
        "model": "smart", "stream": true, "store": false,
        "instructions": "You are a coding agent.",
        "input": [
            {"type": "message", "id": "msg_a", "role": "developer",
             "content": [{"type": "input_text", "text": "sandbox: read-only"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [],
             "encrypted_content": "gAAAA"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "shell",
             "arguments": "{\"command\":[\"ls\"]}"},
            {"type": "function_call_output", "call_id": "call_9",
             "output": "Cargo.toml\nsrc"}
        ],
        "tools": [{"type": "function", "name": "shell", "description": "run a command",
                   "strict": false, "parameters": {"type": "object", "properties": {}}}],
        "tool_choice": "auto", "parallel_tool_calls": false,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199-session", "text": {"verbosity": "low"},
        "client_metadata": {"x": "y"}
    });
    let resp = call(&f.state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "client_metadata, input.reasoning",
        "the cache key and verbosity are carried to a provider that takes them"
    );
    let ev = named_events(&text_body(resp).await);
    assert_eq!(ev.last().unwrap().0, "response.completed");
    let sent = &f.primary.requests()[0];
    let roles: Vec<Role> = sent.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::Developer,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(sent.messages[4].name.as_deref(), Some("shell"));
    assert_eq!(sent.verbosity, Some(switchyard::chat::Verbosity::Low));
    assert_eq!(sent.prompt_cache_key.as_deref(), Some("0199-session"));
}

#[tokio::test]
async fn a_stream_cut_by_the_token_limit_ends_incomplete() {
    let chunk = ChatChunk {
        text: "cut sh".into(),
        finish_reason: Some(FinishReason::Length),
        ..ChatChunk::default()
    };
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(vec![StreamStep::Chunk(chunk)])),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = json!({"model": "smart", "input": "hi", "stream": true, "max_output_tokens": 2});
    let ev = named_events(&text_body(call(&f.state, post_responses(&body)).await).await);
    let (name, data) = ev.last().unwrap();
    assert_eq!(name, "response.incomplete");
    assert_eq!(data["response"]["status"], "incomplete");
    assert_eq!(
        data["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    let item_done = &ev[ev.len() - 2].1;
    assert_eq!(item_done["item"]["status"], "incomplete");
}

#[tokio::test]
async fn log_lines_name_the_responses_api() {
    let insight = Arc::new(crate::telemetry::insight::Insight::new(
        switchyard::clock::Clock::system(),
    ));
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("p", Arc::new(ScriptedProvider::new("m"))).price(price()))
        .route(Route::new("smart", &["p"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    let state = AppState(Arc::new(shared));
    for stream in [false, true] {
        let body = json!({"model": "smart", "input": "hi", "stream": stream});
        let resp = call(&state, post_responses(&body)).await;
        assert_eq!(resp.status(), StatusCode::OK);
        text_body(resp).await;
        let entry = last_logged(&state);
        assert_eq!(entry.api, "responses");
        assert_eq!(entry.stream, stream);
        assert_eq!(entry.provider.as_deref(), Some("p"));
    }
}

#[tokio::test]
async fn text_format_becomes_the_shared_response_format_and_is_echoed() {
    let f = basic();
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let body = json!({"model": "smart", "input": "a number", "text": {"format":
        {"type": "json_schema", "name": "num", "schema": schema, "strict": true}}});
    let r = json_body(call(&f.state, post_responses(&body)).await).await;
    assert_eq!(r["text"]["format"]["type"], "json_schema");
    assert_eq!(r["text"]["format"]["name"], "num");
    assert_eq!(
        f.primary.requests()[0].response_format,
        Some(switchyard::chat::ResponseFormat::JsonSchema {
            name: "num".into(),
            schema,
            strict: Some(true),
        })
    );
    let body =
        json!({"model": "smart", "input": "json", "text": {"format": {"type": "json_object"}}});
    let r = json_body(call(&f.state, post_responses(&body)).await).await;
    assert_eq!(r["text"]["format"]["type"], "json_object");
    assert_eq!(
        f.primary.requests()[1].response_format,
        Some(switchyard::chat::ResponseFormat::JsonObject)
    );
}

#[tokio::test]
async fn a_function_call_output_answers_a_call_in_the_stored_conversation() {
    let f = fixture(
        ScriptedProvider::new("p").then(tool_reply()),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let tools = json!([{"type": "function", "name": "get_weather"}]);
    let first = json!({"model": "smart", "input": "weather?", "tools": tools});
    let r = json_body(call(&f.state, post_responses(&first)).await).await;
    let next = json!({"model": "smart", "tools": tools, "previous_response_id": r["id"],
        "input": [{"type": "function_call_output", "call_id": "call_1", "output": "rain"}]});
    let resp = call(&f.state, post_responses(&next)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let sent = &f.primary.requests()[1];
    let roles: Vec<Role> = sent.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
    assert_eq!(sent.messages[1].tool_calls[0].id, "call_1");
    assert_eq!(sent.messages[2].name.as_deref(), Some("get_weather"));
    assert_eq!(sent.messages[2].joined_text(), "rain");
}

/// A gateway whose route `smart` is one Anthropic provider on a mock upstream: a streamed
/// call gets `sse`, a plain one `reply`.
async fn anthropic_fixture(reply: Value, sse: String) -> (AppState, wiremock::MockServer) {
    use switchyard::provider::anthropic::{Anthropic, AnthropicConfig};
    use switchyard::provider::http::Transport;
    use wiremock::matchers::{body_partial_json, path};
    let claude = wiremock::MockServer::start().await;
    wiremock::Mock::given(path("/v1/messages"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&claude)
        .await;
    wiremock::Mock::given(path("/v1/messages"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(reply))
        .mount(&claude)
        .await;
    let config = AnthropicConfig::new("claude-test").base_url(claude.uri());
    let anthropic = Anthropic::new(config, &Transport::default()).unwrap();
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("claude", Arc::new(anthropic)))
        .route(Route::new("smart", &["claude"]))
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.max_body_bytes = 1 << 20;
    (AppState(Arc::new(shared)), claude)
}

/// Anthropic's answer to a tool-loop turn: a signed thinking block, a redacted one, a
/// tool call.
fn thinking_reply() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "ZW5j"},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 9}})
}

/// The same answer streamed, as Anthropic streams it.
fn thinking_sse() -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [],
            "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Look "}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "it up."}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "ZW5j"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use",
            "id": "toolu_1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{\"city\":\"Paris\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// Codex's first turn: stateless, asking for sealed reasoning and a summary.
fn codex_turn(input: Value, stream: bool) -> Value {
    json!({"model": "smart", "stream": stream, "store": false,
        "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"},
        "tools": [{"type": "function", "name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "input": input})
}

/// The next turn: the first turn's output items sent back, and the tool's answer.
fn next_turn(output: &[Value]) -> Value {
    let mut input = vec![json!({"role": "user", "content": "Weather in Paris?"})];
    input.extend(output.iter().cloned());
    input.push(json!({"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"}));
    codex_turn(Value::Array(input), false)
}

/// What Anthropic must get on the next turn: the thinking blocks, signature and redacted
/// data as they came, leading the tool turn.
async fn assert_thinking_went_back(claude: &wiremock::MockServer) {
    let received = claude.received_requests().await.unwrap();
    let sent: Value = serde_json::from_slice(&received.last().unwrap().body).unwrap();
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                 "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]}
        ])
    );
}

/// Anthropic's thinking answers a Responses client as reasoning items (the text as the
/// summary asked for, the blocks sealed in `encrypted_content`); sent back statelessly,
/// they reach Anthropic as the thinking blocks they were, so the loop keeps its thinking.
#[tokio::test]
async fn anthropic_thinking_round_trips_through_reasoning_items() {
    let (state, claude) = anthropic_fixture(thinking_reply(), thinking_sse()).await;
    let resp = call(
        &state,
        post_responses(&codex_turn(json!("Weather in Paris?"), false)),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = json_body(resp).await;
    let output = body["output"].as_array().unwrap().clone();
    let kinds: Vec<&str> = output.iter().map(|o| o["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["reasoning", "reasoning", "function_call"]);
    assert!(output[0]["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(
        output[0]["summary"],
        json!([{"type": "summary_text", "text": "Look it up."}])
    );
    assert_eq!(
        output[1]["summary"],
        json!([]),
        "a redacted block shows nothing"
    );
    for item in &output[..2] {
        let sealed = item["encrypted_content"].as_str().unwrap();
        assert!(
            sealed.starts_with("swy1:") && !sealed.contains("Look"),
            "{sealed}"
        );
    }
    let resp = call(&state, post_responses(&next_turn(&output))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers().get("x-switchyard-ignored").is_none(),
        "our reasoning items are carried"
    );
    assert_thinking_went_back(&claude).await;
}

/// Streamed: each reasoning block is its own item (added, its summary's part and text
/// events, done with the sealed block) before the function call; sent back, they reach
/// Anthropic as they came.
#[tokio::test]
async fn streamed_anthropic_thinking_is_reasoning_items_that_round_trip() {
    let (state, claude) = anthropic_fixture(thinking_reply(), thinking_sse()).await;
    let resp = call(
        &state,
        post_responses(&codex_turn(json!("Weather in Paris?"), true)),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let events = named_events(&text_body(resp).await);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let added = &events[2].1;
    assert_eq!(added["item"]["type"], "reasoning");
    assert_eq!(added["item"]["summary"], json!([]));
    let id = added["item"]["id"].as_str().unwrap();
    assert_eq!(events[3].1["item_id"], id);
    assert_eq!(
        events[3].1["part"],
        json!({"type": "summary_text", "text": ""})
    );
    assert_eq!(events[4].1["delta"], "Look ");
    assert_eq!(events[4].1["summary_index"], 0);
    assert_eq!(events[6].1["text"], "Look it up.");
    assert_eq!(
        events[7].1["part"],
        json!({"type": "summary_text", "text": "Look it up."})
    );
    let done: Vec<Value> = events
        .iter()
        .filter(|(n, _)| n == "response.output_item.done")
        .map(|(_, d)| d["item"].clone())
        .collect();
    assert_eq!(done[0]["id"], id);
    assert!(done[0]["encrypted_content"]
        .as_str()
        .unwrap()
        .starts_with("swy1:"));
    assert_eq!(done[1]["type"], "reasoning");
    assert_eq!(done[2]["type"], "function_call");
    let completed = &events.last().unwrap().1["response"]["output"];
    assert_eq!(completed.as_array().unwrap().as_slice(), done.as_slice());
    let resp = call(&state, post_responses(&next_turn(&done))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_thinking_went_back(&claude).await;
}

/// Without `include` and without `store`, reasoning items carry no sealed content; without
/// `reasoning.summary`, no summary (as OpenAI answers).
#[tokio::test]
async fn reasoning_items_carry_what_the_client_asked_for() {
    let (state, _claude) = anthropic_fixture(thinking_reply(), thinking_sse()).await;
    let body = json!({"model": "smart", "store": false, "input": "Weather in Paris?"});
    let out = json_body(call(&state, post_responses(&body)).await).await["output"].clone();
    assert_eq!(out[0]["type"], "reasoning");
    assert_eq!(out[0]["summary"], json!([]));
    assert!(out[0].get("encrypted_content").is_none(), "{out}");
    // stored: its items may come back as input, so they carry their sealed blocks
    let body = json!({"model": "smart", "input": "Weather in Paris?"});
    let out = json_body(call(&state, post_responses(&body)).await).await["output"].clone();
    assert!(out[0]["encrypted_content"]
        .as_str()
        .unwrap()
        .starts_with("swy1:"));
}

/// Sealed content that is ours but does not open is a 400 naming the item's field; a
/// reasoning item of OpenAI's own is left out, not refused.
#[tokio::test]
async fn a_tampered_reasoning_item_is_a_400_naming_it() {
    let (state, claude) = anthropic_fixture(thinking_reply(), thinking_sse()).await;
    let input = json!([
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "swy1:e30!"}
    ]);
    let resp = call(&state, post_responses(&codex_turn(input, false))).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body = json_body(resp).await;
    assert_eq!(body["error"]["param"], "input[1].encrypted_content");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed"),
        "{body}"
    );
    assert!(claude.received_requests().await.unwrap().is_empty());
}

/// An Azure provider with `api = "responses"`, built from config: a `/v1/responses`
/// request with a built-in tool reaches it as the client wrote it (the deployment as its
/// `model`, the key as `api-key`), and the upstream's output items come back.
#[tokio::test]
async fn an_azure_responses_provider_gets_the_clients_body() {
    use crate::config::{build_gateway, parse, Wiring};
    use wiremock::matchers::{header, method, path};

    let azure = wiremock::MockServer::start().await;
    let answer = json!({"id": "resp_up", "object": "response", "status": "completed",
        "model": "gpt-5-prod", "output": [
            {"type": "web_search_call", "id": "ws_1", "status": "completed",
                "action": {"type": "search", "query": "news"}},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Quiet day.", "annotations": []}]}],
        "usage": {"input_tokens": 9, "output_tokens": 3}});
    wiremock::Mock::given(method("POST"))
        .and(path("/openai/v1/responses"))
        .and(header("api-key", "azure-key-for-test"))
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(answer))
        .expect(1)
        .mount(&azure)
        .await;
    let text = format!(
        "[[providers]]\nname = \"az\"\nkind = \"azure\"\nendpoint = \"{}\"\ndeployment = \"gpt-5-prod\"\napi_version = \"v1\"\napi = \"responses\"\napi_key_env = \"AZ_KEY\"\nprice = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n[[routes]]\nname = \"smart\"\nproviders = [\"az\"]\n",
        azure.uri()
    );
    let config = parse(&text, "azure.toml").unwrap();
    let env = |v: &str| (v == "AZ_KEY").then(|| "azure-key-for-test".to_owned());
    let built = build_gateway(&config, &env, false, Wiring::default()).unwrap();
    let shared = Shared::for_tests(built.gateway, KeyStore::new(&[]), Arc::new(Metrics::new()));
    let state = AppState(Arc::new(shared));
    let body = json!({"model": "smart", "input": "Any news?", "store": false,
        "tools": [{"type": "web_search"}], "max_tool_calls": 3, "truncation": "auto"});
    let resp = call(&state, post_responses(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let got = json_body(resp).await;
    let kinds: Vec<&str> = (got["output"].as_array().unwrap().iter())
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["web_search_call", "message"]);
    let sent = &azure.received_requests().await.unwrap()[0];
    let upstream: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(upstream["model"], "gpt-5-prod");
    assert_eq!(upstream["tools"], json!([{"type": "web_search"}]));
    assert_eq!(upstream["input"], "Any news?");
    assert_eq!(upstream["max_tool_calls"], 3);
    assert_eq!(upstream["truncation"], "auto");
    assert!(sent.headers.get("authorization").is_none());
}
