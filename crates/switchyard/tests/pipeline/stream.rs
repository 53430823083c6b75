//! Streams: invisible failover before the first token, honest rescue after it.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use switchyard::gateway::StreamEvent;
use switchyard::provider::scripted::{ScriptedProvider, Step, StreamStep};
use switchyard::{ChatRequest, ErrorKind, Gateway, ProviderSpec, Role};

use super::sentence::{cut_after, drain, req, WORDS};
use super::{priced, route, stream_timeouts};

fn full() -> String {
    WORDS.concat()
}

fn gateway(primary: &Arc<ScriptedProvider>, backup: ProviderSpec) -> Gateway {
    Gateway::builder()
        .provider(stream_timeouts(priced("primary", primary)))
        .provider(stream_timeouts(backup))
        .route(route(&["primary", "backup"]))
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn errors_before_the_first_token_fail_over_invisibly() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .then(Step::Stream(vec![StreamStep::Fail(
                switchyard::ProviderError::new(ErrorKind::Overloaded, "overloaded as first event"),
            )])),
    );
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(&primary, priced("backup", &backup));
    let s = gw.stream("main", req()).await.unwrap();
    assert_eq!(s.provider, "backup");
    assert!(s.failed_over);
    let (text, end) = drain(s).await;
    assert_eq!(text, full());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(resp.usage.unwrap().output_tokens, 6);
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["failed:server", "failed:overloaded", "success"]);
}

#[tokio::test(start_paused = true)]
async fn first_token_timeout_fails_over() {
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Stream(vec![StreamStep::Hang])));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(&primary, priced("backup", &backup));
    let start = tokio::time::Instant::now();
    let s = gw.stream("main", req()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(s.attempts[0].outcome.label(), "failed:timeout");
    assert_eq!(primary.in_flight(), 0, "the silent upstream was cancelled");
    assert_eq!(drain(s).await.0, full());
}

#[tokio::test(start_paused = true)]
async fn cut_after_commit_is_restarted_and_spliced() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(&primary, priced("backup", &backup));
    let s = gw.stream("main", req()).await.unwrap();
    assert_eq!(s.provider, "primary");
    let (text, end) = drain(s).await;
    assert_eq!(text, full(), "the client receives exactly the answer, once");
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(resp.provider, "backup");
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["failed:malformed", "rescue:restart", "success"]);
    // the broken segment is billed too: 3 chunks produced (no usage reported) + the
    // restart's reported 10 in / 6 out
    assert_eq!(
        {
            let u = resp.usage.unwrap();
            (u.input_tokens, u.output_tokens)
        },
        (10, 9)
    );
    let expect = 10 * 1_000_000 + 9 * 2_000_000;
    assert_eq!(resp.cost, Some(switchyard::Money::from_picos(expect)));
    // the restart got the original request, no prefill
    assert_eq!(backup.requests()[0].messages.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn cut_after_commit_is_continued_where_prefill_is_supported() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(2)));
    let rest = Step::stream_words(&WORDS[2..]);
    let backup = Arc::new(ScriptedProvider::new("b").then(rest));
    let gw = gateway(&primary, priced("backup", &backup).supports_prefill(true));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, full());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(resp.attempts[1].outcome.label(), "rescue:continuation");
    let sent = &backup.requests()[0];
    let last = sent.messages.last().unwrap();
    assert_eq!(
        (last.role, last.joined_text()),
        (Role::Assistant, "The quick ".to_owned())
    );
}

/// Half-written JSON is not continued: a format guaranteed by a forced tool or constrained
/// decoding starts the value afresh, so a JSON stream is restarted and spliced even where a
/// prefill is supported.
#[tokio::test(start_paused = true)]
async fn a_json_stream_is_restarted_never_continued() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(2)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(&primary, priced("backup", &backup).supports_prefill(true));
    let mut json = req();
    json.response_format = Some(switchyard::chat::ResponseFormat::JsonObject);
    let (text, end) = drain(gw.stream("main", json).await.unwrap()).await;
    assert_eq!(text, full());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(resp.attempts[1].outcome.label(), "rescue:restart");
    assert_eq!(backup.requests()[0].messages.len(), 1, "no prefill");
}

/// A request with a native body (a Messages client's, for Anthropic) keeps it on a
/// continuation, with the text already sent as its prefill, so the client's vendor-only
/// fields reach the rescuer too; the shared shape carries the prefill as well.
#[tokio::test(start_paused = true)]
async fn a_continuation_keeps_the_native_body_with_the_prefill() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(2)));
    let backup = Arc::new(ScriptedProvider::new("b").then(Step::stream_words(&WORDS[2..])));
    let gw = gateway(&primary, priced("backup", &backup).supports_prefill(true));
    let body = serde_json::json!({"messages": [], "cache_control": {"type": "ephemeral"}});
    let native = switchyard::chat::Native::new("anthropic", body.clone());
    let request = ChatRequest {
        native: Some(native),
        ..req()
    };
    let (text, _) = drain(gw.stream("main", request).await.unwrap()).await;
    assert_eq!(text, full());
    assert_eq!(primary.requests()[0].native.as_ref().unwrap().prefill, None);
    let sent = &backup.requests()[0];
    let native = sent.native.as_ref().expect("the native body is kept");
    assert_eq!(native.body.to_value(), body);
    assert_eq!(native.prefill.as_deref(), Some("The quick "));
    assert_eq!(sent.messages.last().unwrap().joined_text(), "The quick ");
}

#[tokio::test(start_paused = true)]
async fn rejected_prefill_falls_back_to_restart_and_never_becomes_the_error() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(2)));
    let reject =
        switchyard::ProviderError::new(ErrorKind::BadRequest, "assistant prefill not supported")
            .with_status(400);
    let backup = Arc::new(
        ScriptedProvider::new("b")
            .then(Step::Fail(reject))
            .otherwise(Step::stream_words(&WORDS)),
    );
    let gw = gateway(&primary, priced("backup", &backup).supports_prefill(true));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, full());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(
        labels,
        [
            "failed:malformed",
            "declined:bad_request",
            "rescue:restart",
            "success"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn diverging_restart_ends_with_the_original_error_and_no_done() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let other = Step::stream_words(&["A ", "different ", "answer ", "entirely."]);
    let backup = Arc::new(ScriptedProvider::new("b").then(other));
    let gw = gateway(&primary, priced("backup", &backup));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(
        text, "The quick brown ",
        "nothing of the diverging restart leaked"
    );
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    let switchyard::GatewayError::Provider {
        provider, error, ..
    } = *err
    else {
        panic!()
    };
    assert_eq!(
        provider, "primary",
        "the provider that was cut, not the rescuer"
    );
    assert_eq!(error.kind, ErrorKind::Malformed);
    assert_eq!(
        error.message,
        "stream closed before the finish signal; no honest rescue: \
         backup's restart diverged at character 0 of the 16 already sent"
    );
}

#[tokio::test(start_paused = true)]
async fn stall_after_commit_is_rescued() {
    let Step::Stream(mut steps) = Step::stream_words(&WORDS) else {
        unreachable!()
    };
    steps.truncate(2);
    steps.push(StreamStep::Hang);
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Stream(steps)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(&primary, priced("backup", &backup));
    let start = tokio::time::Instant::now();
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, full());
    assert_eq!(start.elapsed(), Duration::from_secs(5), "one stall timeout");
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(resp.attempts[0].outcome.label(), "failed:timeout");
    assert_eq!(primary.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn finish_signal_without_done_completes_at_once() {
    let Step::Stream(mut steps) = Step::stream_words(&WORDS) else {
        unreachable!()
    };
    steps.push(StreamStep::Hang); // the vendor never sends [DONE] / never closes
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Stream(steps)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = gateway(&primary, priced("backup", &backup));
    let start = tokio::time::Instant::now();
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(text, full());
    assert!(matches!(end, StreamEvent::Done(_)));
    assert_eq!(primary.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn dropped_stream_cancels_upstream_and_records_usage() {
    let Step::Stream(mut steps) = Step::stream_words(&WORDS) else {
        unreachable!()
    };
    steps.insert(3, StreamStep::Hang);
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Stream(steps)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = gateway(&primary, priced("backup", &backup));
    let mut s = gw.stream("main", req()).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(s.next().await, Some(StreamEvent::Chunk(_))));
    }
    assert_eq!(primary.in_flight(), 1);
    drop(s);
    assert_eq!(primary.in_flight(), 0, "the upstream call was cancelled");
    let row = gw.ledger().summary().remove("primary").unwrap();
    assert_eq!((row.calls, row.output_tokens), (1, 3));
}

#[tokio::test(start_paused = true)]
async fn streamed_spend_is_settled_against_the_budget() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::stream_words(&WORDS)));
    let gw = Gateway::builder()
        .provider(priced("primary", &primary))
        .route(route(&["primary"]).budget(switchyard::Money::from_usd(1.0)))
        .build()
        .unwrap();
    let (_, end) = drain(gw.stream("main", req().with_max_tokens(100)).await.unwrap()).await;
    let StreamEvent::Done(resp) = end else {
        panic!()
    };
    let books = gw.budget("main").await.unwrap();
    assert_eq!(books.reserved, switchyard::Money::ZERO);
    assert_eq!(Some(books.spent), resp.cost);
    // 10 input tokens at $1 and 6 output at $2 per MTok, not $0
    assert_eq!(
        books.spent,
        switchyard::Money::from_picos(10 * 1_000_000 + 6 * 2_000_000)
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_mid_stream_is_reported_as_the_deadline_not_a_stall() {
    let steady: Vec<StreamStep> = WORDS
        .iter()
        .flat_map(|w| {
            [
                StreamStep::Chunk(switchyard::ChatChunk {
                    text: (*w).into(),
                    ..Default::default()
                }),
                StreamStep::Wait(Duration::from_secs(1)),
            ]
        })
        .collect();
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Stream(steady)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(stream_timeouts(priced("primary", &primary)))
        .provider(priced("backup", &backup))
        .route(route(&["primary", "backup"]).deadline(Duration::from_millis(3_500)))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(start.elapsed(), Duration::from_millis(3_500));
    assert_eq!(text, "The quick brown fox ");
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    assert!(
        matches!(*err, switchyard::GatewayError::DeadlineExceeded { .. }),
        "{err}"
    );
    assert_eq!(backup.calls(), 0, "no rescue without time for one");
    assert_eq!(
        gw.health_states().await["primary"],
        "closed",
        "the caller's deadline is not the provider's failure"
    );
}

/// A caller whose own client stops reading stops polling: nothing in the stream runs then
/// (no spawned task), so the stream states its deadline for the caller to drop it by, and
/// a stream dropped after its upstream finished, its end not yet taken, still leaves the
/// whole completion for the caller's log line.
#[tokio::test(start_paused = true)]
async fn a_stream_dropped_with_its_end_untaken_leaves_the_completion() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::stream_words(&WORDS)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = gateway(&primary, priced("backup", &backup));
    let start = tokio::time::Instant::now();
    let mut s = gw.stream("main", req()).await.unwrap();
    assert_eq!(s.deadline, start + route(&["primary"]).deadline);
    let cancelled = s.cancel_slot();
    loop {
        let Some(StreamEvent::Chunk(c)) = s.next().await else {
            panic!("the finish chunk comes before the end")
        };
        if c.finish_reason.is_some() {
            break;
        }
    }
    drop(s);
    let resp = cancelled
        .take()
        .expect("the completion the caller never took");
    assert_eq!(resp.text, full());
    assert_eq!(resp.usage.unwrap().output_tokens, 6);
}
