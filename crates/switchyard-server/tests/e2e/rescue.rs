//! A committed stream cut mid-answer (some chunks, then the connection ends with no finish
//! signal and no `[DONE]`): rescued by restart-and-splice when the fallback reproduces the
//! same text, else ended with an explicit `error` event and no `[DONE]`.

use serde_json::{json, Value};

use crate::support::{
    describe, key_env, metric, openai_provider, route, sse_data, stream_body, streamed_text,
    switchyard, Reply, Scratch, Server, ANSWER, UPSTREAM_KEY,
};
use crate::upstream::{calls, ok_stream, sse, upstream, RawUpstream};

/// The cut primary: the first 30 characters of [`ANSWER`], then the connection ends.
const SENT: &str = "The capital of France is Paris";

/// A route of a primary that cuts its stream and a fallback answering `fallback_pieces`.
async fn cut_then(fallback_pieces: &[&str], tag: &str) -> (Server, Reply) {
    cut_then_in(Scratch::new("e2e", tag), fallback_pieces, "").await
}

/// [`cut_then`] serving from `scratch`, with `head` at the top of the config (a
/// `[server]` section).
async fn cut_then_in(scratch: Scratch, fallback_pieces: &[&str], head: &str) -> (Server, Reply) {
    let primary = upstream(ok_stream(sse(
        &["The capital of France", " is Paris"],
        false,
    )))
    .await;
    let fallback = upstream(ok_stream(sse(fallback_pieces, true))).await;
    let retry = "retry = { max_attempts = 1 }";
    let config = format!(
        "{head}{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["primary", "fallback"], retry)
    );
    let server = Server::start(scratch, &config, &key_env());
    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    assert_eq!(calls(&primary).await.len(), 1);
    assert_eq!(calls(&fallback).await.len(), 1);
    (server, reply)
}

fn chunks(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.as_str() != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}")))
        .collect()
}

#[tokio::test]
async fn cut_stream_is_rescued_by_restart_and_splice() {
    // The restart says the same words in different pieces.
    let (_server, reply) = cut_then(
        &["The capital", " of France is", " Paris (Île-de-France)."],
        "splice",
    )
    .await;
    reply.expect_status(200);
    assert_eq!(
        reply.header("x-switchyard-provider"),
        "primary",
        "it committed"
    );

    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), ANSWER, "the full text exactly once");
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{}",
        reply.text
    );
    assert_eq!(events.iter().filter(|e| *e == "[DONE]").count(), 1);
    let chunks = chunks(&events);
    assert!(
        chunks.iter().all(|c| c.get("error").is_none()),
        "{}",
        reply.text
    );
    let finishes: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["choices"][0]["finish_reason"].is_string())
        .collect();
    assert_eq!(finishes.len(), 1, "{}", reply.text);
    assert_eq!(finishes[0]["choices"][0]["finish_reason"], "stop");

    // The trail says what happened: the primary broke, the fallback restarted.
    let trail = chunks
        .iter()
        .find_map(|c| c.get("switchyard"))
        .unwrap_or_else(|| panic!("a trail on the last chunks: {}", reply.text));
    let attempts = trail["attempts"].as_array().unwrap();
    assert!(
        attempts
            .iter()
            .any(|a| a["provider"] == "primary" && a["outcome"] == "failed"),
        "{trail}"
    );
    assert!(
        attempts.iter().any(|a| a["provider"] == "fallback"
            && a["outcome"] == "rescue"
            && a["method"] == "restart"),
        "{trail}"
    );
    assert!(!reply.everything().contains(UPSTREAM_KEY));
}

#[tokio::test]
async fn unrescuable_cut_ends_with_an_error_event_and_no_done() {
    // The restart says something else: splicing it would garble the answer.
    let (_server, reply) = cut_then(&["Lyon is", " lovely in spring."], "diverge").await;
    reply.expect_status(200);

    let events = sse_data(&reply.text);
    assert!(
        events.iter().all(|e| e != "[DONE]"),
        "a broken stream must not look finished: {}",
        reply.text
    );
    assert_eq!(streamed_text(&events), SENT, "only what the primary sent");
    let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
    let error = &last["error"];
    assert!(error.is_object(), "the last event is an error: {last}");
    let message = error["message"].as_str().unwrap();
    // the primary's cut, laid at its door, and what the rescue came to
    assert!(
        message.starts_with("primary: malformed: "),
        "the client hears the original failure, not the rescue's: {message}"
    );
    assert!(
        message.ends_with(
            "; no honest rescue: fallback's restart diverged at character 0 of the 30 already sent"
        ),
        "{message}"
    );
    let chunks = chunks(&events);
    assert!(
        chunks
            .iter()
            .all(|c| !c["choices"][0]["finish_reason"].is_string()),
        "no finish reason on a broken stream: {}",
        reply.text
    );
    assert!(
        !streamed_text(&events).contains("Lyon"),
        "nothing of the diverging restart reaches the client"
    );
}

#[tokio::test]
async fn stalled_stream_is_rescued_by_restart_and_splice() {
    // Two chunks, then the primary goes quiet with the connection open.
    let primary = RawUpstream::start(RawUpstream::sse_head(&sse(
        &["The capital of France", " is Paris"],
        false,
    )))
    .await;
    let fallback = upstream(ok_stream(sse(&[ANSWER], true))).await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri, "stall_timeout = \"300ms\""),
        openai_provider("fallback", &fallback.uri(), ""),
        route(
            "smart",
            &["primary", "fallback"],
            "retry = { max_attempts = 1 }"
        )
    );
    let server = Server::start(Scratch::new("e2e", "stall"), &config, &key_env());
    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    assert_eq!(reply.header("x-switchyard-provider"), "primary");
    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), ANSWER, "the full text exactly once");
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{}",
        reply.text
    );
    let trail = chunks(&events)
        .into_iter()
        .find_map(|c| c.get("switchyard").cloned())
        .unwrap_or_else(|| panic!("a trail on the last chunks: {}", reply.text));
    let stalled = trail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provider"] == "primary" && a["outcome"] == "failed")
        .cloned()
        .unwrap_or_else(|| panic!("the stall is in the trail: {trail}"));
    assert_eq!(stalled["kind"], "timeout", "{stalled}");
    assert_eq!(primary.hits(), 1);
    assert_eq!(calls(&fallback).await.len(), 1);
}

/// A restart that diverged is the rescue's failure, not the fallback's: nothing that
/// counts failures per provider counts it against the fallback — its breaker, the metrics,
/// the dashboard's card, `switchyard report` — while the cut primary's failure is counted.
#[tokio::test]
async fn a_diverging_rescue_is_not_counted_against_the_fallback() {
    let scratch = Scratch::new("e2e", "blame");
    let log = scratch.file("requests.jsonl");
    let head = format!("[server]\nrequest_log = {:?}\n\n", log.to_str().unwrap());
    let (server, reply) = cut_then_in(scratch, &["Lyon is", " lovely in spring."], &head).await;
    reply.expect_status(200);

    let metrics = server.get("/metrics", &[]).await.text;
    let fallback = [("provider", "fallback")];
    assert_eq!(
        metric(
            &metrics,
            "switchyard_attempts_total",
            &[fallback[0], ("outcome", "failed")]
        ),
        None,
        "no failed attempt of the fallback:\n{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            "switchyard_attempts_total",
            &[fallback[0], ("outcome", "diverged")]
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            "switchyard_attempts_total",
            &[("provider", "primary"), ("outcome", "failed")]
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            "switchyard_breaker_consecutive_failures",
            &fallback
        ),
        Some(0.0),
        "{metrics}"
    );

    let overview = server.get("/admin/overview", &[]).await.json();
    let card = |name: &str| {
        overview["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("a card for {name}: {overview}"))
    };
    let fb = card("fallback");
    assert_eq!(fb["errors"], json!({}), "{fb}");
    assert_eq!(fb["errors_total"], 0, "{fb}");
    assert_eq!(fb["circuit"]["last_error"], Value::Null, "{fb}");
    assert_eq!(fb["failovers_from"], 0, "{fb}");
    assert_eq!(card("primary")["errors"], json!({"malformed": 1}));

    let out = switchyard(
        &["report", "--json", log.to_str().unwrap()],
        &[],
        &std::env::temp_dir(),
    );
    assert!(out.status.success(), "{}", describe(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |name: &str| {
        report["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["provider"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("a row for {name}: {report}"))
    };
    assert_eq!(row("fallback")["failures"], json!({}), "{report}");
    assert_eq!(
        row("primary")["failures"],
        json!({"malformed": 1}),
        "{report}"
    );
    assert_eq!(report["totals"]["broken_streams"], 1, "{report}");
}
