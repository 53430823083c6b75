//! The rescue buffer: a committed stream keeps what it delivered only up to a limit;
//! past it the stream is served on but cannot be rescued, and the trail says so.

use std::sync::Arc;

use futures_util::StreamExt as _;
use switchyard::gateway::StreamEvent;
use switchyard::provider::scripted::{ScriptedProvider, Step, StreamStep};
use switchyard::{ChatChunk, ErrorKind, Gateway, GatewayError};

use super::sentence::{drain, req, WORDS};
use super::{priced, route, stream_timeouts};

/// 20 bytes in four chunks, then the stream ends without a finish signal.
const CUT: [&str; 4] = ["The ", "quick ", "brown ", "fox "];

fn cut(words: &[&str]) -> Step {
    let Step::Stream(mut steps) = Step::stream_words(words) else {
        unreachable!()
    };
    if let Some(StreamStep::Chunk(last)) = steps.last_mut() {
        last.finish_reason = None;
        last.usage = None;
    }
    steps.push(StreamStep::End);
    Step::Stream(steps)
}

fn gateway(primary: Step, backup: &Arc<ScriptedProvider>, limit: Option<usize>) -> Gateway {
    let primary = Arc::new(ScriptedProvider::new("p").then(primary));
    let mut b = Gateway::builder()
        .provider(stream_timeouts(priced("primary", &primary)))
        .provider(stream_timeouts(priced("backup", backup)))
        .route(route(&["primary", "backup"]));
    if let Some(limit) = limit {
        b = b.rescue_buffer_bytes(limit);
    }
    b.build().unwrap()
}

fn labels(attempts: &[switchyard::observe::Attempt]) -> Vec<String> {
    attempts.iter().map(|a| a.outcome.label()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_break_past_the_limit_ends_with_the_error_and_the_trail_says_why() {
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(cut(&CUT), &backup, Some(16));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, CUT.concat(), "the stream was served past the limit");
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    let GatewayError::Provider {
        provider,
        error,
        attempts,
    } = *err
    else {
        panic!()
    };
    assert_eq!(provider, "primary");
    assert_eq!(error.kind, ErrorKind::Malformed, "the original failure");
    assert_eq!(backup.calls(), 0, "no rescue was attempted");
    assert_eq!(
        labels(&attempts),
        ["failed:malformed", "skipped:rescue_buffer_full"]
    );
    assert_eq!(attempts[1].provider, "backup");
}

#[tokio::test(start_paused = true)]
async fn a_break_within_the_limit_is_still_rescued() {
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(cut(&CUT), &backup, Some(20));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, WORDS.concat());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(
        labels(&resp.attempts),
        ["failed:malformed", "rescue:restart", "success"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_default_limit_is_four_mib() {
    let chunk = "x".repeat(64 * 1024);
    let under: Vec<&str> = vec![chunk.as_str(); 64]; // exactly 4 MiB: kept
    let over: Vec<&str> = vec![chunk.as_str(); 65];
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = gateway(cut(&over), &backup, None);
    let (_, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    assert_eq!(
        labels(err.attempts()),
        ["failed:malformed", "skipped:rescue_buffer_full"]
    );
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&under)));
    let gw = gateway(cut(&under), &backup, None);
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert!(matches!(end, StreamEvent::Done(_)), "{end:?}");
    assert_eq!(text.len(), 4 * 1024 * 1024);
}

#[tokio::test(start_paused = true)]
async fn past_the_limit_nothing_is_kept_but_everything_is_delivered() {
    let tool = |args: &str| {
        StreamStep::Chunk(ChatChunk {
            tool_calls: vec![switchyard::chat::ToolCallDelta {
                index: 0,
                id: None,
                name: None,
                arguments: args.to_owned(),
            }],
            ..ChatChunk::default()
        })
    };
    let Step::Stream(mut steps) = Step::stream_words(&WORDS) else {
        unreachable!()
    };
    steps.insert(0, tool("{\"a\":"));
    steps.insert(1, tool("1}"));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = gateway(Step::Stream(steps), &backup, Some(16));
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, WORDS.concat());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    assert_eq!(labels(&resp.attempts), ["success"]);
    assert!(
        resp.text.is_empty() && resp.tool_calls.is_empty(),
        "{resp:?}"
    );
    assert_eq!(resp.usage.unwrap().output_tokens, 6, "still billed");
}

/// A stream that sent a reasoning piece commits on it, and a break after it is not
/// rescued (a restart would send the reasoning again): it ends with the error, like a
/// stream that sent tool calls.
#[tokio::test(start_paused = true)]
async fn a_break_after_thinking_was_sent_is_not_rescued() {
    let Step::Stream(mut steps) = cut(&CUT) else {
        unreachable!()
    };
    steps.insert(
        0,
        StreamStep::Chunk(ChatChunk {
            thinking: vec![switchyard::chat::ThinkingDelta {
                index: 0,
                text: "Let me see".into(),
                signature: Some("c2ln".into()),
                redacted: None,
            }],
            ..ChatChunk::default()
        }),
    );
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::stream_words(&WORDS)));
    let gw = gateway(Step::Stream(steps), &backup, None);
    let mut s = gw.stream("main", req()).await.unwrap();
    let Some(StreamEvent::Chunk(first)) = s.next().await else {
        panic!("the reasoning piece is delivered first")
    };
    assert_eq!(first.thinking[0].text, "Let me see");
    let (text, end) = drain(s).await;
    assert_eq!(text, CUT.concat());
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    assert_eq!(backup.calls(), 0, "no rescue was attempted");
    assert_eq!(labels(err.attempts()), ["failed:malformed"]);
}
