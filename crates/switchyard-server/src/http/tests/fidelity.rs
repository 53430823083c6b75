//! Output fidelity through the router (issue 15): a refusal and the upstream's
//! `system_fingerprint` reach each dialect where it has a place for them, log
//! probabilities come back in Chat Completions stream chunks and in the Responses
//! dialect's parts and text deltas, and a streamed `n` > 1 answer is chunks of each
//! choice's index (never rescued once it breaks: `multi_choice` in the trail).

use super::*;
use switchyard::chat::{ChoiceDelta, FinishReason};
use switchyard::{ChatChunk, ProviderReply, Usage};

fn post_to(path: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn one(step: Step) -> Fixture {
    fixture(
        ScriptedProvider::new("p").then(step),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]),
    )
}

fn refused() -> Step {
    Step::Reply(ProviderReply {
        refusal: "I can't help with that.".into(),
        system_fingerprint: Some("fp_1a2b".into()),
        finish_reason: Some(FinishReason::Stop),
        usage: Some(Usage {
            input_tokens: 5,
            output_tokens: 6,
            ..Usage::default()
        }),
        ..ProviderReply::default()
    })
}

fn entries(token: &str) -> Value {
    json!([{"token": token, "logprob": -0.25, "bytes": token.as_bytes(),
        "top_logprobs": [{"token": token, "logprob": -0.25, "bytes": token.as_bytes()}]}])
}

/// A stream: "Hi" with log probabilities, then a refusal piece, then the finish.
fn refusing_stream() -> Step {
    Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Hi".into(),
            logprobs: Some(entries("Hi")),
            system_fingerprint: Some("fp_1a2b".into()),
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            refusal: "but no.".into(),
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            finish_reason: Some(FinishReason::Stop),
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            }),
            ..ChatChunk::default()
        }),
    ])
}

fn data_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_chat_refusal_is_message_refusal_with_the_fingerprint() {
    let f = one(refused());
    let v = json_body(call(&f.state, post(&chat("smart"))).await).await;
    let message = &v["choices"][0]["message"];
    assert_eq!(message["refusal"], "I can't help with that.", "{v}");
    assert_eq!(message["content"], Value::Null);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["system_fingerprint"], "fp_1a2b");
}

#[tokio::test]
async fn a_chat_stream_carries_logprobs_refusal_and_fingerprint_per_chunk() {
    let f = one(refusing_stream());
    let mut body = chat("smart");
    body["stream"] = json!(true);
    body["logprobs"] = json!(true);
    let chunks = data_events(&text_body(call(&f.state, post(&body)).await).await);
    let text = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["content"] == "Hi")
        .unwrap();
    assert_eq!(text["choices"][0]["logprobs"]["content"], entries("Hi"));
    assert_eq!(text["system_fingerprint"], "fp_1a2b");
    let refusal = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["refusal"].is_string())
        .unwrap();
    assert_eq!(refusal["choices"][0]["delta"]["refusal"], "but no.");
    assert!(refusal["choices"][0]["delta"].get("content").is_none());
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["system_fingerprint"], "fp_1a2b", "kept once seen");
    assert!(
        chunks[0].get("system_fingerprint").is_none(),
        "not seen yet"
    );
}

/// Two answers streamed: each later answer's pieces are a choice of its index (a role on
/// its first piece, its own finish), and answer 0 finishes last, in `done`.
#[tokio::test]
async fn a_chat_stream_of_two_choices_has_chunks_of_each_index() {
    let alt = |text: &str, finish: Option<FinishReason>| ChoiceDelta {
        index: 1,
        text: text.into(),
        finish_reason: finish,
        ..ChoiceDelta::default()
    };
    let f = one(Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Hel".into(),
            choices: vec![alt("Bon", None)],
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            choices: vec![alt("jour", Some(FinishReason::Stop))],
            ..ChatChunk::default()
        }),
        StreamStep::Chunk(ChatChunk {
            text: "lo".into(),
            finish_reason: Some(FinishReason::Length),
            ..ChatChunk::default()
        }),
    ]));
    let mut body = chat("smart");
    body["stream"] = json!(true);
    body["n"] = json!(2);
    let chunks = data_events(&text_body(call(&f.state, post(&body)).await).await);
    assert_eq!(f.primary.requests()[0].n, Some(2));
    let of = |i: u64| -> Vec<Value> {
        chunks
            .iter()
            .flat_map(|c| c["choices"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["index"] == i)
            .collect()
    };
    let text = |cs: &[Value]| -> String {
        cs.iter()
            .filter_map(|c| c["delta"]["content"].as_str())
            .collect()
    };
    let (zero, first) = (of(0), of(1));
    assert_eq!(text(&zero), "Hello");
    assert_eq!(text(&first), "Bonjour");
    assert_eq!(first[0]["delta"]["role"], "assistant");
    assert_eq!(
        first
            .iter()
            .filter(|c| c["delta"].get("role").is_some())
            .count(),
        1
    );
    let finishes = |cs: &[Value]| -> Vec<String> {
        cs.iter()
            .filter_map(|c| c["finish_reason"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(finishes(&first), ["stop"]);
    assert_eq!(finishes(&zero), ["length"]);
    let last_zero = chunks
        .iter()
        .rposition(|c| {
            c["choices"][0]["index"] == 0 && c["choices"][0]["finish_reason"] == "length"
        })
        .unwrap();
    assert_eq!(last_zero, chunks.len() - 1, "answer 0 finishes the stream");
}

/// A stream of two answers that breaks after its first chunk is not rescued: the
/// candidates left are skipped as `multi_choice` and the stream ends with the error.
#[tokio::test]
async fn a_broken_stream_of_two_choices_is_not_rescued() {
    let f = fixture(
        ScriptedProvider::new("p").then(Step::Stream(vec![
            StreamStep::Chunk(ChatChunk {
                text: "Hel".into(),
                ..ChatChunk::default()
            }),
            StreamStep::End,
        ])),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["Hel", "lo"])),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = chat("smart");
    body["stream"] = json!(true);
    body["n"] = json!(2);
    let text = text_body(call(&f.state, post(&body)).await).await;
    assert!(!text.contains("[DONE]"), "{text}");
    let last = data_events(&text).pop().unwrap();
    assert!(last["error"].is_object(), "{last}");
    assert_eq!(f.backup.calls(), 0, "no rescue was tried");
    let trail = last.to_string();
    assert!(trail.contains("multi_choice"), "{trail}");
}

#[tokio::test]
async fn a_responses_refusal_is_a_refusal_part_and_logprobs_fill_the_text_part() {
    let f = one(Step::Reply(ProviderReply {
        text: "Hi".into(),
        refusal: "but no.".into(),
        logprobs: Some(json!({ "content": entries("Hi") })),
        finish_reason: Some(FinishReason::ContentFilter),
        ..ProviderReply::default()
    }));
    let body = json!({"model": "smart", "input": "hi", "top_logprobs": 1,
        "include": ["message.output_text.logprobs"]});
    let v = json_body(call(&f.state, post_to("/v1/responses", &body)).await).await;
    let sent = &f.primary.requests()[0];
    assert_eq!((sent.logprobs, sent.top_logprobs), (true, Some(1)));
    assert_eq!(v["status"], "incomplete", "{v}");
    assert_eq!(v["incomplete_details"]["reason"], "content_filter");
    assert_eq!(v["top_logprobs"], 1);
    let content = &v["output"][0]["content"];
    assert_eq!(content[0]["type"], "output_text");
    assert_eq!(content[0]["logprobs"], entries("Hi"));
    assert_eq!(content[1], json!({"type": "refusal", "refusal": "but no."}));
}

#[tokio::test]
async fn a_responses_stream_has_refusal_events_and_logprobs_on_text_deltas() {
    let f = one(refusing_stream());
    let body = json!({"model": "smart", "input": "hi", "stream": true,
        "include": ["message.output_text.logprobs"]});
    let events =
        data_events(&text_body(call(&f.state, post_to("/v1/responses", &body)).await).await);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.content_part.added",
            "response.refusal.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.refusal.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(events[4]["logprobs"], entries("Hi"));
    assert_eq!(events[5]["content_index"], 1);
    assert_eq!(events[5]["part"], json!({"type": "refusal", "refusal": ""}));
    assert_eq!(
        (
            events[6]["delta"].clone(),
            events[6]["content_index"].clone()
        ),
        (json!("but no."), json!(1))
    );
    assert_eq!(events[7]["logprobs"], entries("Hi"));
    assert_eq!(events[9]["refusal"], "but no.");
    let done = &events[12]["response"];
    let content = &done["output"][0]["content"];
    assert_eq!(content[0]["logprobs"], entries("Hi"));
    assert_eq!(content[1], json!({"type": "refusal", "refusal": "but no."}));
}

#[tokio::test]
async fn a_messages_client_reads_a_refusal_as_text_with_stop_reason_refusal() {
    let f = one(refused());
    let body = json!({"model": "smart", "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello"}]});
    let v = json_body(call(&f.state, post_to("/v1/messages", &body)).await).await;
    assert_eq!(v["stop_reason"], "refusal", "{v}");
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "I can't help with that."}])
    );
}

/// `(primary, backup)`: a native provider of `kind` first, a plain one second.
fn native_first(kind: &'static str, route: Route) -> Fixture {
    fixture(
        ScriptedProvider::new("native").taking_native(kind),
        ScriptedProvider::new("plain"),
        &[],
        route,
    )
}

async fn status_and_error(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    (status, json_body(resp).await)
}

/// A Responses field OpenAI does not define is OpenAI's 400 naming it; a route with
/// `passthrough_unknown` sends it in the client's body to its `api = "responses"`
/// providers only (the others skipped as `needs_native`); without one, a 400 says so.
#[tokio::test]
async fn unknown_responses_fields_pass_only_to_native_providers_on_a_passthrough_route() {
    let kind = switchyard::provider::openai::responses::NATIVE_KIND;
    let body = json!({"model": "smart", "input": "hi", "frobnicate": {"x": 1}, "zap": true});
    let f = native_first(kind, Route::new("smart", &["primary", "backup"]));
    let (status, err) =
        status_and_error(call(&f.state, post_to("/v1/responses", &body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "frobnicate", "{err}");
    assert_eq!(err["error"]["message"], "Unknown parameter: 'frobnicate'.");
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);

    let route = Route::new("smart", &["backup", "primary"]).passthrough_unknown(true);
    let f = native_first(kind, route);
    let resp = call(&f.state, post_to("/v1/responses", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    let v = json_body(resp).await;
    assert_eq!(
        v["switchyard"]["attempts"][0]["reason"], "needs_native",
        "{v}"
    );
    assert_eq!(f.backup.calls(), 0);
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert!(native.required);
    assert_eq!(native.body.to_value()["frobnicate"], json!({"x": 1}));
    assert_eq!(native.body.to_value()["zap"], true);

    let plain = fixture(
        ScriptedProvider::new("p"),
        ScriptedProvider::new("b"),
        &[],
        Route::new("smart", &["primary", "backup"]).passthrough_unknown(true),
    );
    let (status, err) =
        status_and_error(call(&plain.state, post_to("/v1/responses", &body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "frobnicate");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("frobnicate, zap: unknown"), "{message}");
    assert!(message.contains("api = \"responses\""), "{message}");
}

/// The same for Messages: Anthropic's 400 (`Extra inputs are not permitted`), or on a
/// passthrough route the client's body to its Anthropic providers only.
#[tokio::test]
async fn unknown_messages_fields_pass_only_to_anthropic_on_a_passthrough_route() {
    let body = json!({"model": "smart", "max_tokens": 64, "frobnicate": 1,
        "messages": [{"role": "user", "content": "hello"}]});
    let f = native_first("anthropic", Route::new("smart", &["primary", "backup"]));
    let (status, err) =
        status_and_error(call(&f.state, post_to("/v1/messages", &body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["type"], "error", "{err}");
    assert_eq!(
        err["error"]["message"],
        "frobnicate: Extra inputs are not permitted"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);

    let route = Route::new("smart", &["backup", "primary"]).passthrough_unknown(true);
    let f = native_first("anthropic", route);
    let resp = call(&f.state, post_to("/v1/messages", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(f.backup.calls(), 0, "a plain provider cannot honour it");
    let native = f.primary.requests()[0].native.clone().unwrap();
    assert!(native.required);
    assert_eq!(native.body.to_value()["frobnicate"], 1);
    // only top-level fields pass: an unknown field of a turn is refused by its path
    let mut nested = body.clone();
    nested.as_object_mut().unwrap().remove("frobnicate");
    nested["messages"][0]["frob"] = json!(1);
    let (status, err) =
        status_and_error(call(&f.state, post_to("/v1/messages", &nested)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        err["error"]["message"],
        "messages.0.frob: Extra inputs are not permitted"
    );
}

#[tokio::test]
async fn a_messages_stream_reads_a_refusal_as_text_deltas_with_stop_reason_refusal() {
    let f = one(refusing_stream());
    let body = json!({"model": "smart", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "hello"}]});
    let events =
        data_events(&text_body(call(&f.state, post_to("/v1/messages", &body)).await).await);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "content_block_delta")
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, "Hibut no.");
    let delta = events
        .iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "refusal", "{delta}");
}

/// A streamed `n` > 1 on a route of vendors without `n` (Anthropic) is served by one call
/// per answer: each choice streams at its own index, the stream finishes once.
#[tokio::test]
async fn a_streamed_n_above_one_is_served_by_calls_where_no_vendor_has_n() {
    use switchyard::provider::anthropic::AnthropicCodec;
    use switchyard::provider::codec::Codec;
    let claude = |m: &str| {
        ScriptedProvider::new(m)
            .declaring(<AnthropicCodec as Codec>::support)
            .fanning_out()
    };
    let f = fixture(
        claude("c1").then(Step::stream_words(&["Hel", "lo"])),
        claude("c2"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let mut body = chat("smart");
    body["stream"] = json!(true);
    body["n"] = json!(2);
    let chunks = data_events(&text_body(call(&f.state, post(&body)).await).await);
    assert_eq!(f.primary.calls(), 2, "one call per answer");
    assert!(f.primary.requests().iter().all(|r| r.n.is_none()));
    assert_eq!(f.backup.calls(), 0);
    let text = |i: u64| -> String {
        (chunks.iter())
            .flat_map(|c| c["choices"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["index"] == i)
            .filter_map(|c| c["delta"]["content"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(text(0), "Hello");
    assert_eq!(text(1), "ok from c1");
    let finishes = (chunks.iter())
        .flat_map(|c| c["choices"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["finish_reason"].is_string())
        .count();
    assert_eq!(finishes, 2, "each answer finishes once");
}

/// `n` is bounded (OpenAI's 128) before anything is dispatched: a client cannot make the
/// gateway open a hundred calls to a vendor without `n`, or ask for an absurd count.
#[tokio::test]
async fn n_above_128_is_refused_naming_n_before_any_call() {
    use switchyard::provider::anthropic::AnthropicCodec;
    use switchyard::provider::codec::Codec;
    let claude = |m: &str| {
        ScriptedProvider::new(m)
            .declaring(<AnthropicCodec as Codec>::support)
            .fanning_out()
    };
    let f = fixture(
        claude("c1"),
        claude("c2"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    for n in [json!(129), json!(4_294_967_296_u64), json!(-1)] {
        for stream in [false, true] {
            let mut body = chat("smart");
            body["stream"] = json!(stream);
            body["n"] = n.clone();
            let (status, err) = status_and_error(call(&f.state, post(&body)).await).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{n}: {err}");
            assert_eq!(err["error"]["param"], "n", "{n}: {err}");
        }
    }
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

/// A tool setting the shared shape has no room for (Anthropic's `strict`, ...) goes to
/// Anthropic in the client's body and is named when another vendor answers: never dropped
/// unsaid; odd or too many names collapse into `tools.*`.
#[tokio::test]
async fn unmodelled_messages_tool_settings_are_named_when_another_vendor_answers() {
    let f = one(Step::text("ok"));
    let tool = |extra: Value| {
        let mut t = json!({"name": "f", "input_schema": {"type": "object"}});
        for (k, v) in extra.as_object().unwrap() {
            t[k] = v.clone();
        }
        t
    };
    let body = json!({"model": "smart", "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [tool(json!({"strict": true, "defer_loading": false})),
                  tool(json!({"bad key\n": 1}))]});
    let resp = call(&f.state, post_to("/v1/messages", &body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "tools.defer_loading, tools.strict, tools.*"
    );
}
