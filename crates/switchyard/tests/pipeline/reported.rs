//! What each answered call reported of itself rides on its trail entry (for its span):
//! the upstream's id, the finish reason, its own usage; failures and skips carry none.

use std::sync::Arc;

use futures_util::StreamExt as _;
use switchyard::chat::FinishReason;
use switchyard::gateway::StreamEvent;
use switchyard::observe::Reported;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ChatRequest, ErrorKind, ProviderReply, Usage};

use super::{route, two};

fn answer(id: &str, finish: FinishReason, output_tokens: u64) -> Step {
    Step::Reply(ProviderReply {
        id: Some(id.to_owned()),
        text: "fine".into(),
        finish_reason: Some(finish),
        usage: Some(Usage {
            input_tokens: 12,
            output_tokens,
            ..Usage::default()
        }),
        ..ProviderReply::default()
    })
}

/// A failed-over plain request: the failure reports nothing, the answer its own id,
/// finish reason (OpenAI's word) and tokens.
#[tokio::test(start_paused = true)]
async fn a_plain_answer_reports_its_id_finish_and_usage() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Server)));
    let backup =
        Arc::new(ScriptedProvider::new("b").then(answer("msg_1", FinishReason::ToolCalls, 7)));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let (last, earlier) = resp.attempts.split_last().unwrap();
    assert!(earlier.iter().all(|a| a.reported.is_none()), "{earlier:?}");
    assert_eq!(
        last.reported,
        Some(Reported {
            id: Some("msg_1".into()),
            finish: Some("tool_calls".into()),
            tokens: Some((12, 7)),
            status: None, // no HTTP upstream
            spent: None,
        })
    );
    // carried in memory only: the trail's JSON (log line, response body) is unchanged
    let json = serde_json::to_string(last).unwrap();
    assert!(!json.contains("msg_1"), "{json}");
}

/// A streamed answer reports the same, the id taken from the chunk that carried it.
#[tokio::test(start_paused = true)]
async fn a_streamed_answer_reports_its_id_finish_and_usage() {
    let primary =
        Arc::new(ScriptedProvider::new("p").then(answer("resp_9", FinishReason::Length, 64)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let mut stream = gw
        .stream("main", ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let mut done = None;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Done(resp) = event {
            done = Some(resp);
        }
    }
    let resp = done.expect("the stream finished");
    let reported = resp.attempts.last().unwrap().reported.clone().unwrap();
    assert_eq!(reported.id.as_deref(), Some("resp_9"));
    assert_eq!(reported.finish.as_deref(), Some("length"));
    assert_eq!(reported.tokens, Some((12, 64)));
}
