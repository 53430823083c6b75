//! The fan-out under paused time, with in-memory calls: merged answers and streams, the
//! bound on calls in flight, and one failure failing (and cancelling) the rest.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::time::{sleep, Instant};

use super::*;

/// Counts calls in flight (and the most at once) while its guards live.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
    started: AtomicUsize,
}

struct Held(Arc<Gauge>);

impl Gauge {
    fn enter(self: &Arc<Self>) -> Held {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        Held(Arc::clone(self))
    }
    fn now(&self) -> usize {
        self.now.load(Ordering::SeqCst)
    }
    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn reply(text: &str, finish: FinishReason) -> ProviderReply {
    ProviderReply {
        text: text.to_owned(),
        finish_reason: Some(finish),
        usage: Some(usage(10, 2)),
        ..ProviderReply::default()
    }
}

/// `n` calls answering in reverse order of starting (call `i` takes `n - i` seconds),
/// each its call number as text.
#[tokio::test(start_paused = true)]
async fn answers_come_back_in_call_order_with_usage_summed() {
    let gauge = Arc::new(Gauge::default());
    let counter = AtomicUsize::new(0);
    let n = 3;
    let got = send(n, || {
        let i = counter.fetch_add(1, Ordering::SeqCst);
        let held = gauge.enter();
        async move {
            sleep(Duration::from_secs(u64::from(n) - i as u64)).await;
            drop(held);
            let finish = if i == 1 {
                FinishReason::Length
            } else {
                FinishReason::Stop
            };
            Ok(reply(&format!("answer {i}"), finish))
        }
    })
    .await
    .unwrap();
    assert_eq!(got.text, "answer 0");
    assert_eq!(got.finish_reason, Some(FinishReason::Stop));
    let rest: Vec<_> = (got.alternatives.iter())
        .map(|c| (c.text.as_str(), c.finish_reason.clone()))
        .collect();
    assert_eq!(
        rest,
        [
            ("answer 1", Some(FinishReason::Length)),
            ("answer 2", Some(FinishReason::Stop))
        ]
    );
    assert_eq!(got.usage, Some(usage(30, 6)));
    assert_eq!(gauge.most(), 3, "three calls at once");
}

/// A request for 20 answers never has more than eight calls in flight: they start in
/// waves as earlier ones end, and all twenty answer.
#[tokio::test(start_paused = true)]
async fn calls_in_flight_are_bounded() {
    let gauge = Arc::new(Gauge::default());
    let starts = Mutex::new(Vec::new());
    let t0 = Instant::now();
    let got = send(20, || {
        starts.lock().unwrap().push(Instant::now() - t0);
        let held = gauge.enter();
        async move {
            sleep(Duration::from_secs(1)).await;
            drop(held);
            Ok(reply("a", FinishReason::Stop))
        }
    })
    .await
    .unwrap();
    assert_eq!(got.alternatives.len(), 19);
    assert_eq!(gauge.most(), CALLS_AT_ONCE);
    let starts = starts.into_inner().unwrap();
    let at = |s: u64| starts.iter().filter(|t| t.as_secs() == s).count();
    assert_eq!((at(0), at(1), at(2)), (8, 8, 4), "{starts:?}");
    assert_eq!(got.usage, Some(usage(200, 40)));
}

/// The first failure is the answer's, as soon as it arrives; the other calls are dropped
/// (cancelled) with it, and no call is started after it.
#[tokio::test(start_paused = true)]
async fn one_failed_call_fails_the_answer_and_cancels_the_rest() {
    let gauge = Arc::new(Gauge::default());
    let counter = AtomicUsize::new(0);
    let t0 = Instant::now();
    let err = send(12, || {
        let i = counter.fetch_add(1, Ordering::SeqCst);
        let held = gauge.enter();
        async move {
            let _held = held;
            if i == 2 {
                sleep(Duration::from_secs(1)).await;
                return Err(ProviderError::new(ErrorKind::Overloaded, "busy"));
            }
            sleep(Duration::from_secs(30)).await;
            Ok(reply("a", FinishReason::Stop))
        }
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert_eq!(
        Instant::now() - t0,
        Duration::from_secs(1),
        "not after the others"
    );
    assert_eq!(gauge.now(), 0, "every other call was cancelled");
    assert_eq!(
        gauge.started(),
        CALLS_AT_ONCE,
        "nothing started after the failure"
    );
}

/// `n` is bounded (OpenAI's 128) before anything is called, whatever a library caller
/// asks for.
#[tokio::test]
async fn more_answers_than_the_bound_are_refused_before_any_call() {
    let calls = AtomicUsize::new(0);
    let err = send(u32::MAX, || {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok(ProviderReply::default()) }
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("at most 128"), "{}", err.message);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let open: Open = Arc::new(|| Box::pin(async { unreachable!("no call is opened") }));
    let err = stream(MAX_ANSWERS + 1, open).await.err().unwrap();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(send(MAX_ANSWERS, || async { Ok(ProviderReply::default()) })
        .await
        .is_ok());
}

#[test]
fn merged_usage_and_cost_are_unknown_when_any_call_reports_none() {
    let mut quiet = reply("b", FinishReason::Stop);
    quiet.usage = None;
    let mut first = reply("a", FinishReason::Stop);
    first.reported_cost = Some(crate::money::Money::from_usd(0.5));
    let merged = merge(vec![first.clone(), quiet]);
    assert_eq!((merged.usage, merged.reported_cost), (None, None));
    let both = merge(vec![first.clone(), first]);
    assert_eq!(both.reported_cost, Some(crate::money::Money::from_usd(1.0)));
    assert_eq!(
        single(&ChatRequest {
            n: Some(4),
            ..ChatRequest::default()
        })
        .n,
        None
    );
}

/// One scripted stream step: wait, then yield.
#[allow(clippy::large_enum_variant)] // a test script
enum Beat {
    Wait(u64),
    Chunk(ChatChunk),
    Fail(ProviderError),
}

fn text(t: &str) -> Beat {
    Beat::Chunk(ChatChunk {
        text: t.to_owned(),
        ..ChatChunk::default()
    })
}

fn finish(f: FinishReason, output: u64) -> Beat {
    Beat::Chunk(ChatChunk {
        finish_reason: Some(f),
        usage: Some(usage(10, output)),
        ..ChatChunk::default()
    })
}

/// A stream playing `beats`, counted in flight by `held` until it ends or is dropped.
fn play(beats: Vec<Beat>, held: Held) -> ChunkStream {
    Box::pin(futures_util::stream::unfold(
        (beats.into_iter(), held),
        |(mut beats, held)| async move {
            loop {
                match beats.next()? {
                    Beat::Wait(s) => sleep(Duration::from_secs(s)).await,
                    Beat::Chunk(c) => return Some((Ok(c), (beats, held))),
                    Beat::Fail(e) => return Some((Err(e), (beats, held))),
                }
            }
        },
    ))
}

/// An opener playing `scripts[i]` for the `i`th call it opens.
fn opener(gauge: &Arc<Gauge>, scripts: Vec<Vec<Beat>>) -> Open {
    let scripts = Arc::new(Mutex::new(
        scripts.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    let (gauge, count) = (Arc::clone(gauge), Arc::new(AtomicUsize::new(0)));
    Arc::new(move || {
        let i = count.fetch_add(1, Ordering::SeqCst);
        let beats = scripts.lock().unwrap()[i].take().unwrap();
        let held = gauge.enter();
        Box::pin(async move { Ok(play(beats, held)) })
    })
}

async fn all(stream: ChunkStream) -> Vec<Result<ChatChunk, ProviderError>> {
    stream.collect().await
}

/// Each choice's pieces carry its index (choice 0's in the chunk's own fields); a later
/// choice's finish is on its piece; choice 0's finish is held until every choice has
/// finished and ends the stream, with the summed usage.
#[tokio::test(start_paused = true)]
async fn a_merged_stream_carries_each_choice_by_index() {
    let gauge = Arc::new(Gauge::default());
    let scripts = vec![
        vec![
            text("Hel"),
            Beat::Wait(1),
            text("lo"),
            finish(FinishReason::Stop, 2),
        ],
        vec![
            Beat::Wait(2),
            text("Bon"),
            text("jour"),
            finish(FinishReason::Length, 3),
        ],
    ];
    let chunks = all(stream(2, opener(&gauge, scripts)).await.unwrap()).await;
    let chunks: Vec<ChatChunk> = chunks.into_iter().map(Result::unwrap).collect();
    let zero: String = chunks.iter().map(|c| c.text.as_str()).collect();
    let one: String = (chunks.iter())
        .flat_map(|c| &c.choices)
        .map(|d| {
            assert_eq!(d.index, 1);
            d.text.as_str()
        })
        .collect();
    assert_eq!((zero.as_str(), one.as_str()), ("Hello", "Bonjour"));
    let last = chunks.last().unwrap();
    assert_eq!(
        last.finish_reason,
        Some(FinishReason::Stop),
        "choice 0's reason"
    );
    assert_eq!(last.choices[0].finish_reason, Some(FinishReason::Length));
    assert_eq!(last.usage, Some(usage(20, 5)));
    let finishes = chunks.iter().filter(|c| c.finish_reason.is_some()).count();
    assert_eq!(finishes, 1, "the stream finishes once");
    assert!(chunks[..chunks.len() - 1].iter().all(|c| c.usage.is_none()));
    assert_eq!(gauge.now(), 0);
}

/// Streams in waves: with more answers than calls at once, a later call is opened only
/// when an earlier one ends; every choice is streamed.
#[tokio::test(start_paused = true)]
async fn a_merged_stream_opens_later_calls_as_earlier_ones_end() {
    let gauge = Arc::new(Gauge::default());
    let n = CALLS_AT_ONCE + 3;
    let scripts = (0..n)
        .map(|_| vec![Beat::Wait(1), text("x"), finish(FinishReason::Stop, 1)])
        .collect();
    let merged = stream(u32::try_from(n).unwrap(), opener(&gauge, scripts))
        .await
        .unwrap();
    assert_eq!(gauge.started(), CALLS_AT_ONCE, "the first wave is open");
    let chunks: Vec<ChatChunk> = all(merged).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(gauge.most(), CALLS_AT_ONCE);
    assert_eq!(gauge.started(), n);
    let mut seen: Vec<u32> = (chunks.iter())
        .flat_map(|c| c.choices.iter().map(|d| d.index))
        .collect();
    seen.dedup();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, (1..u32::try_from(n).unwrap()).collect::<Vec<_>>());
    assert_eq!(
        chunks.last().unwrap().usage,
        Some(usage(10 * n as u64, n as u64))
    );
}

/// A call that fails mid-stream fails the merged stream (its error is the last item);
/// the other calls are dropped with it.
#[tokio::test(start_paused = true)]
async fn a_failed_call_ends_the_merged_stream_with_its_error() {
    let gauge = Arc::new(Gauge::default());
    let busy = ProviderError::new(ErrorKind::Overloaded, "busy");
    let scripts = vec![
        vec![text("a"), Beat::Wait(60), finish(FinishReason::Stop, 1)],
        vec![text("b"), Beat::Wait(1), Beat::Fail(busy)],
        vec![text("c"), Beat::Wait(60), finish(FinishReason::Stop, 1)],
    ];
    let mut merged = stream(3, opener(&gauge, scripts)).await.unwrap();
    let mut items = Vec::new();
    while let Some(item) = merged.next().await {
        items.push(item);
    }
    let err = items.pop().unwrap().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded);
    assert!(items.iter().all(Result::is_ok));
    drop(merged);
    assert_eq!(gauge.now(), 0);
}

/// A call whose stream ends before its finish signal fails the merged stream; so does a
/// call refused when the first wave opens.
#[tokio::test(start_paused = true)]
async fn a_call_cut_short_or_refused_fails_the_merged_stream() {
    let gauge = Arc::new(Gauge::default());
    let scripts = vec![
        vec![text("a"), finish(FinishReason::Stop, 1)],
        vec![text("b")],
    ];
    let items = all(stream(2, opener(&gauge, scripts)).await.unwrap()).await;
    let err = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
    assert!(err.message.contains("answer 1"), "{}", err.message);

    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let open: Open = Arc::new(move || {
        let i = counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if i == 1 {
                return Err(ProviderError::new(ErrorKind::RateLimited, "slow down"));
            }
            Ok(Box::pin(futures_util::stream::pending()) as ChunkStream)
        })
    });
    let err = stream(3, open).await.err().unwrap();
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

/// What a later choice streams that the shared shape has no place for (its reasoning)
/// still comes through as an empty chunk: the gateway's stall timer sees the call alive,
/// and nothing is committed by it.
#[tokio::test(start_paused = true)]
async fn a_later_choice_s_reasoning_is_an_empty_chunk() {
    let gauge = Arc::new(Gauge::default());
    let thinking = Beat::Chunk(ChatChunk {
        thinking: vec![crate::chat::ThinkingDelta {
            index: 0,
            text: "hmm".into(),
            ..crate::chat::ThinkingDelta::default()
        }],
        ..ChatChunk::default()
    });
    let scripts = vec![
        vec![Beat::Wait(5), text("a"), finish(FinishReason::Stop, 1)],
        vec![
            Beat::Wait(1),
            thinking,
            Beat::Wait(9),
            finish(FinishReason::Stop, 1),
        ],
    ];
    let mut merged = stream(2, opener(&gauge, scripts)).await.unwrap();
    let t0 = Instant::now();
    let first = merged.next().await.unwrap().unwrap();
    assert_eq!(Instant::now() - t0, Duration::from_secs(1));
    assert!(
        !first.has_content() && first.finish_reason.is_none(),
        "{first:?}"
    );
}
