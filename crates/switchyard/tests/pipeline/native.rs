//! Requests only native providers may answer (a Responses request's built-in tools): every
//! other provider is skipped, recorded as `needs_native`, and a broken stream of one is not
//! continued in the shared shape.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::json;
use switchyard::chat::Native;
use switchyard::gateway::StreamEvent;
use switchyard::provider::scripted::{ScriptedProvider, Step, StreamStep};
use switchyard::{ChatRequest, ErrorKind, GatewayError};

use super::{priced, route, stream_timeouts, two};

const KIND: &str = "openai-responses";

fn req(required: bool) -> ChatRequest {
    let body = json!({"input": "news?", "tools": [{"type": "web_search"}]});
    ChatRequest {
        native: Some(Native::new(KIND, body).required(required)),
        ..ChatRequest::from_prompt("news?")
    }
}

#[tokio::test(start_paused = true)]
async fn providers_that_cannot_take_the_body_are_skipped_and_recorded() {
    let plain = Arc::new(ScriptedProvider::new("chat-model"));
    let native = Arc::new(ScriptedProvider::new("codex").taking_native(KIND));
    let gw = two(&plain, &native, route(&["primary", "backup"]));
    let resp = gw.chat("main", &req(true)).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert!(resp.failed_over);
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["skipped:needs_native", "success"]);
    assert_eq!(plain.calls(), 0, "a skipped provider is never called");

    // a native body that is not required goes to whoever is first
    let resp = gw.chat("main", &req(false)).await.unwrap();
    assert_eq!(resp.provider, "primary");
}

#[tokio::test(start_paused = true)]
async fn with_no_native_provider_every_one_is_skipped() {
    let a = Arc::new(ScriptedProvider::new("a"));
    let b = Arc::new(ScriptedProvider::new("b").taking_native("anthropic"));
    let gw = two(&a, &b, route(&["primary", "backup"]));
    let err = gw.chat("main", &req(true)).await.unwrap_err();
    let GatewayError::AllFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    let labels: Vec<_> = attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["skipped:needs_native", "skipped:needs_native"]);
}

#[tokio::test(start_paused = true)]
async fn a_broken_native_stream_is_restarted_never_continued() {
    let Step::Stream(mut steps) = Step::stream_words(&["The ", "quick ", "fox."]) else {
        unreachable!()
    };
    steps.truncate(2);
    steps.push(StreamStep::Fail(switchyard::ProviderError::new(
        ErrorKind::Server,
        "cut",
    )));
    let cut = Step::Stream(steps);
    let first = Arc::new(ScriptedProvider::new("p").taking_native(KIND).then(cut));
    let second = Arc::new(
        ScriptedProvider::new("b")
            .taking_native(KIND)
            .otherwise(Step::stream_words(&["The ", "quick ", "fox."])),
    );
    let gw = switchyard::Gateway::builder()
        .provider(stream_timeouts(priced("primary", &first)))
        .provider(stream_timeouts(
            priced("backup", &second).supports_prefill(true),
        ))
        .route(
            route(&["primary", "backup"]).retry(switchyard::retry::RetryPolicy {
                max_attempts: 1,
                base_delay: Duration::from_millis(100),
                max_delay: Duration::from_secs(1),
                max_retry_after: Duration::from_secs(5),
            }),
        )
        .build()
        .unwrap();
    let mut s = gw.stream("main", req(true)).await.unwrap();
    let mut text = String::new();
    let end = loop {
        match s.next().await.unwrap() {
            StreamEvent::Chunk(c) => text.push_str(&c.text),
            other => break other,
        }
    };
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(text, "The quick fox.");
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["failed:server", "rescue:restart", "success"]);
    let sent = &second.requests()[0];
    assert!(sent.native.is_some(), "the restart keeps the native body");
}

/// Issue 24 item 4: the body a native provider sends carries what the shared shape does not
/// model (here a 200 KB Responses item), and a budget reserves for it on that provider only:
/// a provider that sends the shared shape reserves the shared shape's bound.
#[tokio::test(start_paused = true)]
async fn a_native_body_is_reserved_at_its_bytes_on_a_provider_that_sends_it() {
    use switchyard::Money;
    let body = json!({"input": [
        {"type": "custom_tool_call_output", "call_id": "c", "output": "x".repeat(200_000)}]});
    let req = ChatRequest {
        max_tokens: Some(100),
        native: Some(Native::new(KIND, body)),
        ..ChatRequest::from_prompt("summarise")
    };
    // $1 per million input tokens: 200,000 bytes are $0.20, the shared shape a few micro-dollars
    let budget = Money::from_usd(0.01);
    let native = Arc::new(ScriptedProvider::new("codex").taking_native(KIND));
    let plain = Arc::new(ScriptedProvider::new("chat-model"));
    let gw = two(&native, &plain, route(&["primary"]).budget(budget));
    let err = gw.chat("main", &req).await.unwrap_err();
    let GatewayError::BudgetExceeded { needed, .. } = &err else {
        panic!("{err:?}");
    };
    // the refusal says what the request would have reserved: the 200 KB at $1 per million
    assert!(*needed >= Money::from_usd(0.2), "{needed}");
    let message = err.to_string();
    assert!(
        message.contains(&format!("this request may cost up to {needed}")),
        "{message}"
    );
    assert_eq!(native.calls(), 0, "refused before dispatch");

    let gw = two(&native, &plain, route(&["backup"]).budget(budget));
    let resp = gw.chat("main", &req).await.unwrap();
    assert_eq!(resp.provider, "backup", "the shared shape fits the budget");
}
