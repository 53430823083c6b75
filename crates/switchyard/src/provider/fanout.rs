//! `n` answers from a vendor whose API has no `n` (Anthropic, Bedrock's Converse, OpenAI's
//! Responses API): `n` calls of one answer each, merged into one answer of `n` choices.
//!
//! Owns the fan-out every such provider shares ([`send`], [`stream`]): at most
//! [`CALLS_AT_ONCE`] calls in flight, the next started as one ends; call `i` is choice `i`
//! (its text, refusal, tool calls, log probabilities and finish reason); usage is the sum
//! of the calls' usage (unknown when any call reports none), so the cost follows from it.
//! One failed call fails the whole answer: the calls still in flight are dropped, which
//! cancels them, and the caller (the gateway's attempt loop) sees one failed attempt to
//! retry or fail over. Everything runs on the caller's task (futures polled together, no
//! spawned tasks), so dropping the answer cancels every call.
//!
//! A merged stream carries choice 0's pieces in a chunk's own fields and choice `i`'s as a
//! [`ChoiceDelta`] of index `i`, like a vendor stream of several answers: each later
//! choice's finish reason is on its last piece, choice 0's is held until every choice has
//! finished and then ends the stream, with the summed usage. Every piece a call streams is
//! passed on (an empty chunk where the shared shape has no place for it, such as a later
//! choice's reasoning), so the gateway's stall timeout sees the calls' activity. Does not
//! know any vendor: `provider/codec.rs` runs it for each vendor that declares one answer
//! per call (`Codec::ONE_ANSWER_PER_CALL`).

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, FuturesUnordered, SelectAll};
use futures_util::StreamExt as _;

use super::ChunkStream;
use crate::chat::{ChatChunk, ChatRequest, Choice, ChoiceDelta, FinishReason, ProviderReply};
use crate::chat::{Field, FieldSet, Usage};
use crate::error::{ErrorKind, ProviderError};

/// The most calls of one fanned-out request in flight at once. A request for more answers
/// gets them in waves: the next call starts when one ends. Eight runs the usual `n` (2 to
/// 8) in the time of one call, while one request can neither hold more than eight
/// upstream connections nor spend a vendor's per-key concurrency on itself alone.
pub const CALLS_AT_ONCE: usize = 8;

/// The most answers one request may ask for: OpenAI's documented bound on `n`, which the
/// Chat Completions dialect enforces too. A library caller asking for more is refused
/// before any call is made.
pub const MAX_ANSWERS: u32 = 128;

/// The answers `req` asks for when a vendor without `n` must serve it by several calls:
/// `Some(n)` for `n` > 1, `None` for one answer (one plain call).
#[must_use]
pub fn answers(req: &ChatRequest) -> Option<u32> {
    req.n.filter(|&n| n > 1)
}

/// `req` as each call of a fan-out sends it: the same request asking for one answer.
#[must_use]
pub fn single(req: &ChatRequest) -> ChatRequest {
    let mut n = FieldSet::EMPTY;
    n.insert(Field::N);
    req.without(n)
}

/// `BadRequest` (naming `n`) when `n` is above [`MAX_ANSWERS`].
fn check(n: u32) -> Result<(), ProviderError> {
    if n <= MAX_ANSWERS {
        return Ok(());
    }
    Err(ProviderError::new(
        ErrorKind::BadRequest,
        format!("n: {n} answers asked for; at most {MAX_ANSWERS}"),
    ))
}

/// `n` answers from `n` calls of `one` (each a call for one answer), at most
/// [`CALLS_AT_ONCE`] in flight, merged into one reply ([`merge`]). The first failure is
/// returned as soon as it arrives; the calls still in flight are dropped with it.
///
/// # Errors
/// `BadRequest` for `n` above [`MAX_ANSWERS`]; otherwise the first call's error.
pub async fn send<F, Fut>(n: u32, one: F) -> Result<ProviderReply, ProviderError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<ProviderReply, ProviderError>>,
{
    check(n)?;
    let calls = futures_util::stream::iter(0..n).map(|i| {
        let call = one();
        async move { (i, call.await) }
    });
    let mut done = calls.buffer_unordered(CALLS_AT_ONCE);
    let mut replies: Vec<Option<ProviderReply>> = vec![None; n as usize];
    while let Some((i, reply)) = done.next().await {
        replies[i as usize] = Some(reply?);
    }
    Ok(merge(replies.into_iter().flatten().collect()))
}

/// One reply of the answers of several calls, in order: the first is choice 0 (the
/// reply's own fields), the rest its alternatives. Usage is the sum (unknown when any
/// call reports none), a cost the vendor billed the sum (unknown when any is), the
/// reported latency the longest.
#[must_use]
pub fn merge(replies: Vec<ProviderReply>) -> ProviderReply {
    let mut usage = Some(Usage::default());
    let mut cost = Some(crate::money::Money::ZERO);
    let mut latency = None;
    for r in &replies {
        usage = usage.zip(r.usage).map(|(a, b)| a.plus(b));
        cost = cost.zip(r.reported_cost).map(|(a, b)| a + b);
        latency = latency.max(r.reported_latency);
    }
    let mut replies = replies.into_iter();
    let Some(mut first) = replies.next() else {
        return ProviderReply::default();
    };
    first.alternatives = replies
        .map(|r| Choice {
            text: r.text,
            refusal: r.refusal,
            tool_calls: r.tool_calls,
            finish_reason: r.finish_reason,
            logprobs: r.logprobs,
        })
        .collect();
    first.usage = usage;
    first.reported_cost = cost;
    first.reported_latency = latency;
    first
}

/// What opens one call's stream (for one answer), as often as a fan-out needs one.
pub type Open =
    Arc<dyn Fn() -> BoxFuture<'static, Result<ChunkStream, ProviderError>> + Send + Sync>;

/// `n` answers streamed from `n` streamed calls opened by `open`, merged into one stream
/// (see the module docs). Returns once the first [`CALLS_AT_ONCE`] calls have been
/// accepted (any refusal fails it); later calls are opened as earlier ones end, and a
/// failure of any call is the merged stream's error item, after which it ends.
///
/// # Errors
/// `BadRequest` for `n` above [`MAX_ANSWERS`]; the first failure to open a call.
pub async fn stream(n: u32, open: Open) -> Result<ChunkStream, ProviderError> {
    check(n)?;
    let first = n.min(u32::try_from(CALLS_AT_ONCE).unwrap_or(u32::MAX));
    let opened = futures_util::future::try_join_all((0..first).map(|_| open())).await?;
    let mut merge = Merged::new(n, open);
    for (i, stream) in (0..first).zip(opened) {
        merge.add(i, stream);
    }
    // boxed: the state moves through every poll, and a pointer is cheaper to move
    Ok(Box::pin(futures_util::stream::unfold(
        Box::new(merge),
        |mut m| async move {
            let item = m.next().await?;
            Some((item, m))
        },
    )))
}

/// A call's stream item tagged with its choice; `None` when the call's stream ended.
type Tagged = (u32, Option<Result<ChatChunk, ProviderError>>);

/// What a merged stream's calls did next.
#[allow(clippy::large_enum_variant)] // one per item, moved once: boxing costs more
enum Event {
    /// Choice `i`'s call was opened, or refused.
    Opened(u32, Result<ChunkStream, ProviderError>),
    /// Choice `i`'s call streamed an item, or ended (`None`).
    Item(u32, Option<Result<ChatChunk, ProviderError>>),
}

/// The state of a merged stream.
struct Merged {
    /// Opens the call of one more choice.
    open: Open,
    /// Answers asked for.
    n: u32,
    /// The next choice to open a call for.
    next: u32,
    /// Calls being opened, by choice.
    opening: FuturesUnordered<BoxFuture<'static, (u32, Result<ChunkStream, ProviderError>)>>,
    /// Calls streaming, each item tagged with its choice.
    live: SelectAll<BoxStream<'static, Tagged>>,
    /// Calls opening or streaming.
    in_flight: usize,
    /// Which choices have finished, and how many.
    finished: Vec<bool>,
    done: u32,
    /// Choice 0's finish reason, held until every choice has finished.
    first: Option<FinishReason>,
    /// The latest usage each choice's call reported.
    usage: Vec<Option<Usage>>,
    /// Set after the last item (the stream's finish, or an error).
    ended: bool,
}

impl Merged {
    fn new(n: u32, open: Open) -> Self {
        Self {
            open,
            n,
            next: 0,
            opening: FuturesUnordered::new(),
            live: SelectAll::new(),
            in_flight: 0,
            finished: vec![false; n as usize],
            done: 0,
            first: None,
            usage: vec![None; n as usize],
            ended: false,
        }
    }

    /// Stream choice `i` from `stream`.
    fn add(&mut self, i: u32, stream: ChunkStream) {
        let tagged = stream
            .map(move |item| (i, Some(item)))
            .chain(futures_util::stream::once(async move { (i, None) }));
        self.live.push(tagged.boxed());
        self.in_flight += 1;
        self.next = self.next.max(i + 1);
    }

    /// Open calls for the next choices while fewer than [`CALLS_AT_ONCE`] are in flight.
    fn top_up(&mut self) {
        while self.in_flight < CALLS_AT_ONCE && self.next < self.n {
            let (i, open) = (self.next, (self.open)());
            self.opening.push(Box::pin(async move { (i, open.await) }));
            self.in_flight += 1;
            self.next += 1;
        }
    }

    /// The next merged item; `None` after the stream's finish or its error.
    async fn next(&mut self) -> Option<Result<ChatChunk, ProviderError>> {
        loop {
            if self.ended {
                return None;
            }
            self.top_up();
            // openings first: each ends once, so they cannot starve the streams
            let event = tokio::select! {
                biased;
                Some((i, opened)) = self.opening.next(), if !self.opening.is_empty() => {
                    Event::Opened(i, opened)
                }
                Some((i, item)) = self.live.next(), if !self.live.is_empty() => {
                    Event::Item(i, item)
                }
                else => return None,
            };
            let item = match event {
                Event::Opened(i, Ok(stream)) => {
                    self.in_flight -= 1; // counted again by `add`
                    self.add(i, stream);
                    continue;
                }
                Event::Opened(_, Err(e)) | Event::Item(_, Some(Err(e))) => Err(e),
                Event::Item(i, Some(Ok(chunk))) => Ok(self.piece(i, chunk)),
                Event::Item(i, None) => match self.ended_call(i) {
                    Ok(()) => continue,
                    Err(e) => Err(e),
                },
            };
            if item.as_ref().map_or(true, |c| c.finish_reason.is_some()) {
                self.ended = true;
            }
            return Some(item);
        }
    }

    /// Choice `i`'s call ended: an error unless it had finished.
    fn ended_call(&mut self, i: u32) -> Result<(), ProviderError> {
        self.in_flight -= 1;
        if self.finished[i as usize] {
            return Ok(());
        }
        Err(ProviderError::new(
            ErrorKind::Malformed,
            format!("stream closed before the finish signal (answer {i})"),
        ))
    }

    /// Choice `i`'s chunk as a piece of the merged stream; on the last choice's finish,
    /// the stream's finish (choice 0's reason) and the summed usage.
    fn piece(&mut self, i: u32, mut chunk: ChatChunk) -> ChatChunk {
        if let Some(u) = chunk.usage.take() {
            self.usage[i as usize] = Some(u);
        }
        chunk.choices.clear(); // a call asked for one answer
        let finish = chunk.finish_reason.take();
        let mut out = if i == 0 {
            chunk
        } else {
            later(i, chunk, finish.clone())
        };
        if let Some(f) = finish {
            if !std::mem::replace(&mut self.finished[i as usize], true) {
                self.done += 1;
            }
            if i == 0 {
                self.first = Some(f);
            }
        }
        if self.done == self.n {
            out.finish_reason = Some(self.first.take().unwrap_or(FinishReason::Stop));
            out.usage =
                (self.usage.iter()).try_fold(Usage::default(), |sum, u| u.map(|u| sum.plus(u)));
        }
        out
    }
}

/// Choice `i`'s (`i` > 0) chunk as a merged chunk carrying it as a [`ChoiceDelta`]: an
/// empty chunk when it carries nothing a later choice has a place for (a reasoning piece).
fn later(i: u32, chunk: ChatChunk, finish: Option<FinishReason>) -> ChatChunk {
    let delta = ChoiceDelta {
        index: i,
        text: chunk.text,
        refusal: chunk.refusal,
        tool_calls: chunk.tool_calls,
        logprobs: chunk.logprobs,
        finish_reason: finish,
    };
    let carries = !delta.text.is_empty()
        || !delta.refusal.is_empty()
        || !delta.tool_calls.is_empty()
        || delta.logprobs.is_some()
        || delta.finish_reason.is_some();
    ChatChunk {
        choices: if carries { vec![delta] } else { Vec::new() },
        model: chunk.model,
        system_fingerprint: chunk.system_fingerprint,
        ..ChatChunk::default()
    }
}

#[cfg(test)]
mod tests;
