//! The Responses API (`/v1/responses`) and Anthropic Messages (`/v1/messages`): the same
//! answer, faults and records as chat, each in its own wire format, observed with the raw
//! client of `raw/mod.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    missing_docs
)]

mod raw;

use faultline::{Api, Fault, Outcome, Script, CANONICAL_ANSWER, PROMPT_TOKENS};
use raw::{attempts_when, post, start, End, Raw};
use serde_json::{json, Value};

fn responses(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "instructions": "Be terse.", "input": "Why a gateway?"})
}

fn messages(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 1024,
        "stream": stream,
        "system": "Be terse.",
        "messages": [{"role": "user", "content": "Why a gateway?"}],
    })
}

/// Each frame's (event name, parsed data); the data's `type` must equal the event name.
fn typed_frames(r: &Raw) -> Vec<(String, Value)> {
    r.frames()
        .into_iter()
        .map(|(event, data)| {
            let v: Value =
                serde_json::from_str(&data).unwrap_or_else(|e| panic!("{event}: {e}: {data}"));
            assert_eq!(v["type"], event.as_str(), "type names the event");
            (event, v)
        })
        .collect()
}

fn names(frames: &[(String, Value)]) -> Vec<&str> {
    frames.iter().map(|(n, _)| n.as_str()).collect()
}

/// The concatenated deltas of a Responses stream.
fn responses_text(frames: &[(String, Value)]) -> String {
    frames
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, v)| v["delta"].as_str().unwrap().to_owned())
        .collect()
}

/// The concatenated text deltas of a Messages stream.
fn messages_text(frames: &[(String, Value)]) -> String {
    frames
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, v)| v["delta"]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn responses_plain_is_a_response_object_with_usage() {
    let s = start().await;
    for path in ["/v1/responses", "/responses"] {
        let r = post(&s, path, &responses("gpt-r", false)).await;
        assert_eq!((r.status, r.end), (Some(200), End::Complete), "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["object"], "response");
        assert_eq!(v["model"], "gpt-r");
        assert_eq!(v["status"], "completed");
        let item = &v["output"][0];
        assert_eq!(
            (&item["type"], &item["role"], &item["status"]),
            (&json!("message"), &json!("assistant"), &json!("completed"))
        );
        assert_eq!(item["content"][0]["type"], "output_text");
        assert_eq!(item["content"][0]["text"], CANONICAL_ANSWER);
        assert_eq!(
            v["usage"],
            json!({
                "input_tokens": PROMPT_TOKENS,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 60,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": PROMPT_TOKENS + 60,
            })
        );
    }
    let a = attempts_when(&s, "gpt-r", |a| {
        a.len() == 2 && a.iter().all(|x| x.outcome == Outcome::Finished)
    })
    .await;
    assert_eq!((a[0].api, a[0].stream), (Api::Responses, false));
}

#[tokio::test]
async fn responses_stream_in_the_documented_event_order() {
    let s = start().await;
    let r = post(&s, "/v1/responses", &responses("gpt-r", true)).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let frames = typed_frames(&r);
    let mut want = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    want.extend(std::iter::repeat_n("response.output_text.delta", 60));
    want.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names(&frames), want);
    for (i, (_, v)) in frames.iter().enumerate() {
        assert_eq!(v["sequence_number"], i, "numbered in order");
    }
    assert_eq!(responses_text(&frames), CANONICAL_ANSWER);
    assert_eq!(frames[0].1["response"]["status"], "in_progress");
    assert_eq!(frames[0].1["response"]["output"], json!([]));
    assert_eq!(frames[64].1["text"], CANONICAL_ANSWER);
    let done = &frames[67].1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["model"], "gpt-r");
    assert_eq!(done["output"][0]["content"][0]["text"], CANONICAL_ANSWER);
    assert_eq!(done["usage"]["output_tokens"], 60);
    assert_eq!(done["usage"]["total_tokens"], PROMPT_TOKENS + 60);
    let a = attempts_when(&s, "gpt-r", |a| {
        a.len() == 1 && a[0].outcome == Outcome::Finished
    })
    .await;
    assert_eq!((a[0].api, a[0].stream), (Api::Responses, true));
}

#[tokio::test]
async fn responses_faults_statuses_cuts_and_errors() {
    let s = start().await;
    s.script(
        "m",
        Script::queue(
            [
                Fault::rate_limited(3),
                Fault::ContextLength,
                Fault::cut(40),
                Fault::ErrorEvent { after: 10 },
                Fault::ErrorEvent { after: 0 },
            ],
            Fault::Ok,
        ),
    );
    let r = post(&s, "/v1/responses", &responses("m", true)).await;
    assert_eq!(r.status, Some(429), "streams fail before their headers");
    assert_eq!(r.header("retry-after"), Some("3"));
    assert_eq!(r.json()["error"]["code"], "rate_limit_exceeded");
    let r = post(&s, "/v1/responses", &responses("m", false)).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["error"]["code"], "context_length_exceeded");
    assert_eq!(r.json()["error"]["param"], "input", "the Responses field");
    // cut: the opening and 40 deltas, then the body ends without the done events
    let r = post(&s, "/v1/responses", &responses("m", true)).await;
    assert_eq!(r.end, End::Complete);
    let frames = typed_frames(&r);
    assert_eq!(frames.len(), 4 + 40);
    assert_eq!(responses_text(&frames), faultline::prefix(40));
    // an in-band error event after 10 deltas ends the stream
    let r = post(&s, "/v1/responses", &responses("m", true)).await;
    let frames = typed_frames(&r);
    assert_eq!(responses_text(&frames), faultline::prefix(10));
    let (name, err) = frames.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(err["code"], "server_error");
    assert_eq!(err["sequence_number"], 14);
    assert!(!names(&frames).contains(&"response.completed"));
    // plain: a 200 whose response failed
    let r = post(&s, "/v1/responses", &responses("m", false)).await;
    assert_eq!(r.status, Some(200));
    assert_eq!(r.json()["status"], "failed");
    assert_eq!(r.json()["error"]["code"], "server_error");
    let kinds: Vec<_> = s.attempts("m").iter().map(|a| a.fault.clone()).collect();
    assert_eq!(kinds[2], Fault::cut(40));
}

#[tokio::test]
async fn responses_continue_an_assistant_prefill() {
    let s = start().await;
    let prefill = faultline::prefix(40);
    let body = json!({"model": "p", "stream": true, "input": [
        {"role": "user", "content": "Why a gateway?"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": prefill}]},
    ]});
    let r = post(&s, "/v1/responses", &body).await;
    let frames = typed_frames(&r);
    assert_eq!(
        format!("{prefill}{}", responses_text(&frames)),
        CANONICAL_ANSWER
    );
    let done = &frames.last().unwrap().1["response"];
    assert_eq!(done["usage"]["output_tokens"], 20);
    assert_eq!(s.attempts("p")[0].prefill.as_deref(), Some(prefill));
}

#[tokio::test]
async fn messages_plain_is_an_anthropic_message() {
    let s = start().await;
    for path in ["/v1/messages", "/messages", "/v1/messages?beta=true"] {
        let r = post(&s, path, &messages("claude-x", false)).await;
        assert_eq!((r.status, r.end), (Some(200), End::Complete), "{path}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(
            (&v["type"], &v["role"], &v["model"]),
            (&json!("message"), &json!("assistant"), &json!("claude-x"))
        );
        assert_eq!(
            v["content"],
            json!([{"type": "text", "text": CANONICAL_ANSWER}])
        );
        assert_eq!(v["stop_reason"], "end_turn");
        assert_eq!(v["usage"]["input_tokens"], PROMPT_TOKENS);
        assert_eq!(v["usage"]["output_tokens"], 60);
    }
    let a = attempts_when(&s, "claude-x", |a| {
        a.len() == 3 && a.iter().all(|x| x.outcome == Outcome::Finished)
    })
    .await;
    assert_eq!((a[0].api, a[0].stream), (Api::Messages, false));
}

#[tokio::test]
async fn messages_stream_in_the_documented_event_order() {
    let s = start().await;
    let r = post(&s, "/v1/messages", &messages("claude-x", true)).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let frames = typed_frames(&r);
    let mut want = vec!["message_start", "content_block_start", "ping"];
    want.extend(std::iter::repeat_n("content_block_delta", 60));
    want.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names(&frames), want);
    assert_eq!(messages_text(&frames), CANONICAL_ANSWER);
    let start = &frames[0].1["message"];
    assert_eq!(start["model"], "claude-x");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["usage"]["input_tokens"], PROMPT_TOKENS);
    assert_eq!(
        frames[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert!(frames[3..63]
        .iter()
        .all(|(_, v)| v["index"] == 0 && v["delta"]["type"] == "text_delta"));
    let delta = &frames[64].1;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], 60);
    let a = attempts_when(&s, "claude-x", |a| {
        a.len() == 1 && a[0].outcome == Outcome::Finished
    })
    .await;
    assert_eq!((a[0].api, a[0].stream), (Api::Messages, true));
}

#[tokio::test]
async fn messages_faults_in_anthropic_shapes() {
    let s = start().await;
    s.script(
        "c",
        Script::queue(
            [
                Fault::status(529),
                Fault::rate_limited(2),
                Fault::ContextLength,
                Fault::cut(30),
                Fault::ErrorEvent { after: 5 },
                Fault::Stall { after: 20 },
            ],
            Fault::Ok,
        ),
    );
    let r = post(&s, "/v1/messages", &messages("c", true)).await;
    assert_eq!(r.status, Some(529));
    assert_eq!(
        r.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    let r = post(&s, "/v1/messages", &messages("c", false)).await;
    assert_eq!(r.status, Some(429));
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(r.json()["type"], "error");
    assert_eq!(r.json()["error"]["type"], "rate_limit_error");
    let r = post(&s, "/v1/messages", &messages("c", false)).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("prompt is too long"));
    // cut after 30 tokens: no content_block_stop, message_delta or message_stop
    let r = post(&s, "/v1/messages", &messages("c", true)).await;
    assert_eq!(r.end, End::Complete);
    let frames = typed_frames(&r);
    assert_eq!(frames.len(), 3 + 30);
    assert_eq!(messages_text(&frames), faultline::prefix(30));
    // Anthropic's in-band error event
    let r = post(&s, "/v1/messages", &messages("c", true)).await;
    let frames = typed_frames(&r);
    assert_eq!(messages_text(&frames), faultline::prefix(5));
    let (name, err) = frames.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(err["error"]["type"], "overloaded_error");
    // a stall holds the connection after 20 tokens
    let mut r = post(&s, "/v1/messages", &messages("c", true)).await;
    assert_eq!((r.status, r.end), (Some(200), End::Silent));
    assert_eq!(messages_text(&typed_frames(&r)), faultline::prefix(20));
    drop(r.socket.take());
    let a = attempts_when(&s, "c", |a| a.len() == 6 && a[5].client_gone()).await;
    assert!(a.iter().all(|x| x.api == Api::Messages));
    // an unreadable body: a 400 in Anthropic's shape
    let r = post(&s, "/v1/messages", &json!({"messages": []})).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("model"));
}

#[tokio::test]
async fn messages_continue_an_assistant_prefill_or_reject_it() {
    let s = start().await;
    let prefill = faultline::prefix(58);
    let mut body = messages("c", false);
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": [{"type": "text", "text": prefill}]}));
    let r = post(&s, "/v1/messages", &body).await;
    assert_eq!(r.json()["content"][0]["text"], " and why.");
    assert_eq!(r.json()["usage"]["output_tokens"], 2);
    s.script("c", Fault::RejectPrefill);
    let r = post(&s, "/v1/messages", &body).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["type"], "error");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("prefill"));
}

#[tokio::test]
async fn no_done_and_finish_only_hold_the_connection_at_their_phase() {
    let s = start().await;
    s.script("m", Fault::NoDone);
    s.script("f", Fault::FinishOnly);
    // Messages: everything but message_stop; then silence
    let mut r = post(&s, "/v1/messages", &messages("m", true)).await;
    assert_eq!(r.end, End::Silent);
    let frames = typed_frames(&r);
    assert_eq!(names(&frames).last(), Some(&"message_delta"));
    assert_eq!(messages_text(&frames), CANONICAL_ANSWER);
    drop(r.socket.take());
    // Responses has no end marker: the whole stream, response.completed last, then silence
    let mut r = post(&s, "/v1/responses", &responses("m", true)).await;
    assert_eq!(r.end, End::Silent);
    assert_eq!(names(&typed_frames(&r)).last(), Some(&"response.completed"));
    drop(r.socket.take());
    // finish only: the text is done, but no usage (message_delta / response.completed)
    let mut r = post(&s, "/v1/messages", &messages("f", true)).await;
    assert_eq!(r.end, End::Silent);
    assert_eq!(names(&typed_frames(&r)).last(), Some(&"content_block_stop"));
    drop(r.socket.take());
    let mut r = post(&s, "/v1/responses", &responses("f", true)).await;
    assert_eq!(r.end, End::Silent);
    assert_eq!(
        names(&typed_frames(&r)).last(),
        Some(&"response.output_item.done")
    );
    drop(r.socket.take());
    attempts_when(&s, "f", |a| {
        a.len() == 2 && a.iter().all(|x| x.client_gone())
    })
    .await;
}
