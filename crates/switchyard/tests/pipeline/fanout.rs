//! `n` > 1 answers on a vendor without `n` (`provider/fanout.rs`), through the gateway:
//! one attempt of `n` calls merged into `n` choices (plain and streamed), usage and cost
//! summed, one failed call failing the attempt over, the stream's first-token and stall
//! timeouts across the merged stream, and budgets that reserve for every answer.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use switchyard::chat::FinishReason;
use switchyard::gateway::{ChatStream, StreamEvent};
use switchyard::provider::anthropic::AnthropicCodec;
use switchyard::provider::codec::Codec;
use switchyard::provider::fanout::CALLS_AT_ONCE;
use switchyard::provider::scripted::{ScriptedProvider, Step, StreamStep};
use switchyard::{
    ChatChunk, ChatRequest, ErrorKind, Gateway, GatewayError, Money, Price, ProviderReply,
    ProviderSpec, Route, Usage,
};

use super::stream_timeouts;

/// A scripted stand-in for an Anthropic model: Anthropic's field table, `n` by calls.
fn claude(model: &str) -> ScriptedProvider {
    ScriptedProvider::new(model)
        .declaring(<AnthropicCodec as Codec>::support)
        .fanning_out()
}

/// $1 / $2 per million input / output tokens.
fn price() -> Price {
    Price::from_usd_per_mtok(1.0, 2.0, None, None).unwrap()
}

fn gateway(primary: &Arc<ScriptedProvider>, backup: &Arc<ScriptedProvider>) -> Gateway {
    let spec = |name: &str, p: &Arc<ScriptedProvider>| {
        stream_timeouts(ProviderSpec::new(name, p.clone()).price(price())).max_attempts(1)
    };
    Gateway::builder()
        .provider(spec("claude", primary))
        .provider(spec("gpt", backup))
        .route(Route::new("main", &["claude", "gpt"]))
        .build()
        .unwrap()
}

fn asking(n: u32) -> ChatRequest {
    ChatRequest {
        n: Some(n),
        ..ChatRequest::from_prompt("name a colour")
    }
}

#[tokio::test(start_paused = true)]
async fn n_calls_answer_as_n_choices_with_usage_and_cost_summed() {
    let primary = Arc::new(
        claude("c")
            .then(Step::text("red").after(Duration::from_secs(2)))
            .then(Step::text("green").after(Duration::from_secs(1)))
            .then(Step::text("blue")),
    );
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = gateway(&primary, &backup);
    let resp = gw.chat("main", &asking(3)).await.unwrap();
    assert_eq!(resp.provider, "claude");
    assert_eq!(resp.text, "red");
    let rest: Vec<&str> = resp.alternatives.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(rest, ["green", "blue"]);
    let usage = Usage {
        input_tokens: 30,
        output_tokens: 3 + 5 + 4,
        ..Usage::default()
    };
    assert_eq!(resp.usage, Some(usage));
    assert_eq!(resp.cost, Some(price().cost(&usage)));
    // one attempt in the trail; three calls upstream, each for one answer
    assert_eq!(resp.attempts.len(), 1);
    assert_eq!(primary.calls(), 3);
    assert!(primary.requests().iter().all(|r| r.n.is_none()));
    assert_eq!(backup.calls(), 0);
}

/// One of the calls fails: the attempt fails (the other calls are cancelled at once) and
/// the route fails over to a vendor that takes `n` itself.
#[tokio::test(start_paused = true)]
async fn one_failed_call_fails_the_attempt_over() {
    let primary = Arc::new(
        claude("c")
            .then(Step::text("red").after(Duration::from_secs(20)))
            .then(Step::fail(ErrorKind::Overloaded).after(Duration::from_secs(1)))
            .then(Step::text("blue").after(Duration::from_secs(20))),
    );
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = gateway(&primary, &backup);
    let started = tokio::time::Instant::now();
    let resp = gw.chat("main", &asking(3)).await.unwrap();
    assert_eq!(resp.provider, "gpt");
    assert!(resp.failed_over);
    assert_eq!(resp.attempts[0].outcome.label(), "failed:overloaded");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(1),
        "no wait for the others"
    );
    assert_eq!(primary.in_flight(), 0, "the other calls were cancelled");
    assert_eq!(backup.requests()[0].n, Some(3), "the backup takes n itself");
}

/// Drain a committed stream: its chunks and its final event.
async fn drain(mut s: ChatStream) -> (Vec<ChatChunk>, StreamEvent) {
    let mut chunks = Vec::new();
    while let Some(e) = s.next().await {
        match e {
            StreamEvent::Chunk(c) => chunks.push(c),
            end => return (chunks, end),
        }
    }
    panic!("stream ended without Done or Failed");
}

#[tokio::test(start_paused = true)]
async fn a_stream_of_n_calls_streams_each_choice_by_index() {
    let primary = Arc::new(
        claude("c")
            .then(Step::stream_words(&["Ma", "genta"]))
            .then(Step::stream_words(&["Te", "al"])),
    );
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = gateway(&primary, &backup);
    let s = gw.stream("main", asking(2)).await.unwrap();
    assert_eq!(s.provider, "claude");
    let (chunks, end) = drain(s).await;
    let zero: String = chunks.iter().map(|c| c.text.as_str()).collect();
    let one: String = (chunks.iter())
        .flat_map(|c| &c.choices)
        .filter(|d| d.index == 1)
        .map(|d| d.text.as_str())
        .collect();
    assert_eq!((zero.as_str(), one.as_str()), ("Magenta", "Teal"));
    let finishes: Vec<_> = chunks
        .iter()
        .filter_map(|c| c.finish_reason.clone())
        .collect();
    assert_eq!(
        finishes,
        [FinishReason::Stop],
        "one finish, after both answers"
    );
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    let usage = Usage {
        input_tokens: 20,
        output_tokens: 4,
        ..Usage::default()
    };
    assert_eq!(resp.usage, Some(usage));
    assert_eq!(resp.cost, Some(price().cost(&usage)));
    assert_eq!(primary.calls(), 2);
}

/// Before the first content chunk of any answer, a refused call fails the stream over as
/// invisibly as a plain request; so does the first-token timeout when no call has
/// produced anything.
#[tokio::test(start_paused = true)]
async fn before_the_commit_a_failed_or_silent_call_fails_over() {
    let primary = Arc::new(
        claude("c")
            .then(Step::stream_words(&["late"]).after(Duration::from_secs(3)))
            .then(Step::rate_limited(Duration::from_secs(1)).after(Duration::from_secs(1)))
            .then(Step::Stream(vec![StreamStep::Hang]))
            .then(Step::Stream(vec![StreamStep::Hang])),
    );
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = gateway(&primary, &backup);
    let (chunks, end) = drain(gw.stream("main", asking(2)).await.unwrap()).await;
    assert!(matches!(end, StreamEvent::Done(_)), "{end:?}");
    assert!(chunks.iter().all(|c| !c.text.contains("late")));
    let StreamEvent::Done(resp) = end else {
        unreachable!()
    };
    assert_eq!(resp.provider, "gpt");
    assert_eq!(resp.attempts[0].outcome.label(), "failed:rate_limited");
    assert_eq!(primary.in_flight(), 0);

    // both calls accepted, neither says anything: the first-token timeout (10 s) holds
    tokio::time::sleep(Duration::from_secs(2)).await; // past the Retry-After's cooling
    let started = tokio::time::Instant::now();
    let resp = gw.stream("main", asking(2)).await.unwrap();
    assert_eq!(resp.provider, "gpt");
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(primary.in_flight(), 0);
}

/// After the commit, an answer whose call goes quiet stalls the merged stream even while
/// the others finished: the stall timeout fires, and a stream of several answers is
/// never rescued (the trail says `multi_choice`).
#[tokio::test(start_paused = true)]
async fn a_call_that_stalls_after_the_commit_fails_the_stream_honestly() {
    let quiet = Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Lav".into(),
            ..ChatChunk::default()
        }),
        StreamStep::Hang,
    ]);
    let primary = Arc::new(claude("c").then(Step::stream_words(&["Ochre"])).then(quiet));
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = gateway(&primary, &backup);
    let s = gw.stream("main", asking(2)).await.unwrap();
    let started = tokio::time::Instant::now();
    let (_, end) = drain(s).await;
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(5),
        "the stall timeout"
    );
    let labels: Vec<String> = (err.attempts().iter()).map(|a| a.outcome.label()).collect();
    assert!(labels.contains(&"failed:timeout".to_owned()), "{labels:?}");
    assert!(
        labels.contains(&"skipped:multi_choice".to_owned()),
        "{labels:?}"
    );
    assert_eq!(backup.calls(), 0);
    assert_eq!(primary.in_flight(), 0);
}

/// A client cannot make one request hold more than [`CALLS_AT_ONCE`] upstream calls:
/// 128 answers are served in waves.
#[tokio::test(start_paused = true)]
async fn a_hostile_n_holds_at_most_the_bound_in_flight() {
    let primary = Arc::new(claude("c").otherwise(Step::text("x").after(Duration::from_secs(1))));
    let backup = Arc::new(ScriptedProvider::new("g"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("claude", primary.clone()).timeout(Duration::from_secs(60)))
        .provider(ProviderSpec::new("gpt", backup.clone()))
        .route(Route::new("main", &["claude", "gpt"]).deadline(Duration::from_secs(60)))
        .build()
        .unwrap();
    let resp = gw.chat("main", &asking(128)).await.unwrap();
    assert_eq!(resp.alternatives.len(), 127);
    let times = primary.call_times();
    assert_eq!(times.len(), 128);
    let first = times[0];
    let at_once = times.iter().filter(|t| **t == first).count();
    assert_eq!(at_once, CALLS_AT_ONCE);
    // too many answers is the caller's mistake: refused, not failed over
    let err = gw.chat("main", &asking(129)).await.unwrap_err();
    assert!(err.to_string().contains("at most 128"), "{err}");
    assert_eq!(backup.calls(), 0);
}

/// The budget hole of issue 23: `n: 128, max_tokens: 1000` reserved one answer. Now a
/// vendor with `n` reserves the prompt once and 128 answers' output; a vendor without
/// it 128 calls of prompt and output. Either way the request does not fit $0.05.
#[tokio::test(start_paused = true)]
async fn budgets_reserve_every_answer() {
    // gpt-4o-mini's rates: $0.15 / $0.60 per million
    let mini = Price::from_usd_per_mtok(0.15, 0.6, None, None).unwrap();
    for fans_out in [false, true] {
        let p = ScriptedProvider::new("p");
        let p = Arc::new(if fans_out { p.fanning_out() } else { p });
        let gw = Gateway::builder()
            .provider(ProviderSpec::new("p", p.clone()).price(mini))
            .route(Route::new("main", &["p"]).budget(Money::from_usd(0.05)))
            .build()
            .unwrap();
        let req = asking(128).with_max_tokens(1000);
        let err = gw.chat("main", &req).await.unwrap_err();
        assert!(
            matches!(err, GatewayError::BudgetExceeded { .. }),
            "{fans_out}: {err}"
        );
        assert_eq!(p.calls(), 0, "refused before dispatch");
        // one answer fits
        assert!(gw
            .chat("main", &asking(1).with_max_tokens(1000))
            .await
            .is_ok());
    }
}

/// What is held while the calls run: input once + n × output on a vendor with `n`,
/// n × (input + output) on one without; settled to the real, summed cost.
#[tokio::test(start_paused = true)]
async fn the_reservation_covers_n_answers_and_settles_to_the_summed_cost() {
    let slow = Step::Reply(ProviderReply {
        text: "ok".into(),
        finish_reason: Some(FinishReason::Stop),
        usage: Some(Usage {
            input_tokens: 12,
            output_tokens: 40,
            ..Usage::default()
        }),
        ..ProviderReply::default()
    })
    .after(Duration::from_secs(1));
    // "name a colour": 13 bytes + 8 per message bound the input
    let (input, output, n) = (13 + 8, 100, 4);
    for (fans_out, calls, answers_per_call) in [(false, 1, n), (true, n, 1)] {
        let p = ScriptedProvider::new("p").otherwise(slow.clone());
        let p = Arc::new(if fans_out { p.fanning_out() } else { p });
        let gw = Gateway::builder()
            .provider(ProviderSpec::new("p", p.clone()).price(price()))
            .route(Route::new("main", &["p"]).budget(Money::from_usd(10.0)))
            .build()
            .unwrap();
        let call = {
            let gw = gw.clone();
            tokio::spawn(async move { gw.chat("main", &asking(n).with_max_tokens(output)).await })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let held = gw.budget("main").await.unwrap().reserved;
        let per_call =
            i64::from(input) * 1_000_000 + i64::from(output * answers_per_call) * 2_000_000;
        assert_eq!(
            held,
            Money::from_picos(per_call * i64::from(calls)),
            "{fans_out}"
        );
        let resp = call.await.unwrap().unwrap();
        let books = gw.budget("main").await.unwrap();
        assert_eq!(books.reserved, Money::ZERO);
        assert_eq!(Some(books.spent), resp.cost);
        let billed = Usage {
            input_tokens: 12 * u64::from(calls),
            output_tokens: 40 * u64::from(calls),
            ..Usage::default()
        };
        assert_eq!(resp.usage, Some(billed), "{fans_out}");
    }
}
