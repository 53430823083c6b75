//! Streaming: the commit point, and honest rescue after it.
//!
//! [`Gateway::stream`] runs the same turns as a plain request, but a turn "answers" when
//! the first content chunk arrives: everything before that (connect errors, error
//! statuses, an error as the first event, the first-token timeout) fails over invisibly.
//! From the first chunk on the stream is *committed*. Each later chunk must arrive within
//! the stall timeout; the stream is complete at the vendor's finish signal. A cut, stall or
//! malformed chunk after commit is rescued when it honestly can be:
//! 1. continuation: a later provider that declares prefill support gets the original
//!    messages plus the text already sent as an assistant prefill; its output is appended;
//! 2. restart and splice: a later provider gets the original request; its output is held
//!    until it has reproduced exactly what was sent, then the rest streams on (a restart
//!    that diverges cannot be spliced);
//! 3. otherwise the stream ends with [`StreamEvent::Failed`] carrying the original
//!    failure — never a rescue's own error (such as a prefill rejection).
//!
//! What was delivered is kept for those rescues only up to the gateway's rescue buffer
//! limit ([`GatewayBuilder::rescue_buffer_bytes`](super::GatewayBuilder::rescue_buffer_bytes)):
//! an endless fast stream must not hold its whole text in memory. Past the limit the kept
//! text is dropped and the stream is served on unrescuable; if it breaks, the trail marks
//! the remaining candidates skipped (`rescue_buffer_full`) and it ends as in 3.
//!
//! Dropping the stream cancels the upstream call; what was used is still reported.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::{Stream, StreamExt as _};
use tokio::time::Instant;

use super::run::{
    check_usage, cost_of, failed_over, Answer, Call, Completion, Limits, Reservation, Run, Won,
};
use super::Gateway;
use crate::breaker::{Op, SkipReason};
use crate::chat::{
    ChatChunk, ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolCallDelta, Usage,
};
use crate::cost::Money;
use crate::error::{ErrorKind, GatewayError, ProviderError};
use crate::observe::{Attempt, Outcome};
use crate::provider::ChunkStream;
use crate::route::Route;

/// One item of a committed stream.
#[derive(Debug, Clone)]
pub enum StreamEvent {
    /// Content (text or tool-call deltas), and on the last chunk the finish reason.
    Chunk(ChatChunk),
    /// The stream finished; the whole completion (text, usage, cost, trail). A stream that
    /// passed the rescue buffer limit kept none of its text or tool calls: they are empty
    /// here (each was delivered in its chunk).
    Done(Box<ChatResponse>),
    /// The stream broke after commit and could not be rescued. Nothing follows.
    Failed(Box<GatewayError>),
}

/// A committed stream: who committed it, and the events that follow.
pub struct ChatStream {
    /// The provider whose first chunk committed the stream.
    pub provider: String,
    /// Its model.
    pub model: String,
    /// Another provider was tried or skipped before it.
    pub failed_over: bool,
    /// The trail up to the commit point.
    pub attempts: Vec<Attempt>,
    cancelled: CancelSlot,
    inner: Pin<Box<dyn Stream<Item = StreamEvent> + Send>>,
}

/// Where a stream dropped before its end leaves its partial completion (what was
/// delivered and used), for callers that log it after dropping the stream.
#[derive(Debug, Clone, Default)]
pub struct CancelSlot(Arc<std::sync::Mutex<Option<ChatResponse>>>);

impl CancelSlot {
    /// The partial completion, once the stream has been dropped unfinished.
    #[must_use]
    pub fn take(&self) -> Option<ChatResponse> {
        self.0.lock().ok().and_then(|mut p| p.take())
    }

    fn put(&self, resp: ChatResponse) {
        if let Ok(mut p) = self.0.lock() {
            *p = Some(resp);
        }
    }
}

impl ChatStream {
    /// A handle that receives the partial completion if this stream is dropped unfinished.
    #[must_use]
    pub fn cancel_slot(&self) -> CancelSlot {
        self.cancelled.clone()
    }
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("provider", &self.provider)
            .field("failed_over", &self.failed_over)
            .finish_non_exhaustive()
    }
}

impl Stream for ChatStream {
    type Item = StreamEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEvent>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Gateway {
    /// Stream `req` through route `route`. Returns once the stream is committed (its first
    /// content chunk has arrived); failures before that fail over invisibly.
    ///
    /// # Errors
    /// As [`Gateway::chat`], for failures before the commit point.
    pub async fn stream(&self, route: &str, req: ChatRequest) -> Result<ChatStream, GatewayError> {
        self.stream_with(route, req, &super::CallOptions::default())
            .await
    }

    /// [`Gateway::stream`] with per-call options (the caller's budgets).
    ///
    /// # Errors
    /// As [`Gateway::chat`], for failures before the commit point.
    pub async fn stream_with(
        &self,
        route: &str,
        req: ChatRequest,
        opts: &super::CallOptions,
    ) -> Result<ChatStream, GatewayError> {
        let route = Arc::clone(self.route_arc(route)?);
        let result = if req.messages.is_empty() {
            Err(GatewayError::InvalidRequest(
                "messages must not be empty".to_owned(),
            ))
        } else {
            self.open(&route, Arc::new(req), opts).await
        };
        if let Err(e) = &result {
            for o in &self.inner.observers {
                o.on_complete(&route.name, Err(e));
            }
        }
        result
    }

    async fn open(
        &self,
        route: &Arc<Route>,
        req: Arc<ChatRequest>,
        opts: &super::CallOptions,
    ) -> Result<ChatStream, GatewayError> {
        let mut run = Run::new(self, route, opts);
        let (pos, won) = run.first_answer(&req, Call::Stream).await?;
        Ok(Live::commit(run, req, pos, won).into_stream())
    }
}

/// How upstream text is being passed on.
enum Mode {
    /// Straight through.
    Pass,
    /// A restart: hold text until it has reproduced `expect`, then pass the rest.
    Splice { expect: String, got: String },
}

/// The restart did not reproduce what was sent.
struct Diverged;

/// Which rung of the rescue ladder to try next on a candidate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rung {
    Continuation,
    Restart,
}

/// What the client has been sent, kept (up to the rescue buffer limit) for a
/// continuation's prefill, a restart's splice and the final response.
#[derive(Default)]
struct Kept {
    /// Text delivered.
    text: String,
    /// Tool calls delivered so far, whole.
    tool_calls: Vec<ToolCall>,
    /// Tool-call deltas were delivered (a prefill cannot continue those).
    sent_tools: bool,
    /// Bytes of text and tool-call fragments delivered; past the limit nothing more is kept.
    bytes: usize,
    /// The limit was passed: `text` and `tool_calls` were dropped, and a break can no
    /// longer be rescued.
    unrescuable: bool,
}

impl Kept {
    /// Keep a delivered chunk's content while the total stays within `limit`; once past
    /// it, drop (and free) all that was kept: the stream is served on but can no longer
    /// be rescued.
    fn keep(&mut self, chunk: &ChatChunk, limit: usize) {
        self.sent_tools |= !chunk.tool_calls.is_empty();
        if self.unrescuable {
            return;
        }
        let tools: usize = chunk
            .tool_calls
            .iter()
            .map(|d| {
                d.arguments.len()
                    + d.id.as_ref().map_or(0, String::len)
                    + d.name.as_ref().map_or(0, String::len)
            })
            .sum();
        self.bytes = self
            .bytes
            .saturating_add(chunk.text.len())
            .saturating_add(tools);
        if self.bytes > limit {
            self.unrescuable = true;
            self.text = String::new();
            self.tool_calls = Vec::new();
            return;
        }
        self.text.push_str(&chunk.text);
        merge_tool_deltas(&mut self.tool_calls, &chunk.tool_calls);
    }
}

/// One provider's part of a committed stream: from its commit (or rescue) to its end.
struct Segment {
    upstream: Option<ChunkStream>,
    reservation: Option<Reservation>,
    /// What the call was allowed (its usage is checked against it).
    limits: Limits,
    /// The usage the vendor reported.
    usage: Option<Usage>,
    /// Content chunks the provider produced (delivered or held back by a splice): the
    /// output estimate of a segment that broke or was cancelled before the vendor
    /// reported usage (about one token per chunk).
    chunks: u64,
    started: Instant,
}

impl Segment {
    /// A segment whose turn `won` with `stream`; the call started `latency` before `now`.
    fn opened(won: Won, now: Instant) -> (Self, Vec<ChatChunk>) {
        let Answer::Opened { stream, head } = won.answer else {
            unreachable!("a stream turn answers with an opened stream")
        };
        let segment = Self {
            upstream: Some(stream),
            reservation: won.reservation,
            limits: won.limits,
            usage: None,
            chunks: 0,
            started: now - won.latency,
        };
        (segment, head)
    }
}

/// Everything a committed stream owns besides its request's run.
struct Live {
    /// The request's runner and trail: rescues take their turns on it.
    run: Run,
    req: Arc<ChatRequest>,
    /// Position in the run's plan of the provider currently streaming.
    pos: usize,
    segment: Segment,
    mode: Mode,
    queue: VecDeque<StreamEvent>,
    kept: Kept,
    /// Usage and cost of closed segments (`None` until some segment reported or was
    /// estimated; a cost turns `None` once a billed segment's cost is unknown).
    usage: Option<Usage>,
    cost: Option<Money>,
    model: String,
    finish: Option<FinishReason>,
    /// The failure that broke the committed stream first: what the client hears if no
    /// rescue works.
    cause: Option<ProviderError>,
    /// Next rescue candidate (position in the plan) and rung.
    next: (usize, Rung),
    cancelled: CancelSlot,
}

impl Live {
    /// Take over a run whose turn at `pos` reached the commit point. The run stays
    /// unsettled: the stream reports how the request ended.
    fn commit(run: Run, req: Arc<ChatRequest>, pos: usize, won: Won) -> Live {
        let (segment, head) = Segment::opened(won, run.gw.inner.clock.now());
        let model = run.gw.inner.slots[run.plan[pos]]
            .spec
            .provider
            .model()
            .to_owned();
        let mut live = Live {
            segment,
            run,
            req,
            pos,
            mode: Mode::Pass,
            queue: VecDeque::new(),
            kept: Kept::default(),
            usage: None,
            cost: Some(Money::ZERO),
            model,
            finish: None,
            cause: None,
            next: (pos + 1, Rung::Continuation),
            cancelled: CancelSlot::default(),
        };
        for chunk in head {
            // the first segment passes straight through: it cannot diverge
            let _ = live.take(chunk);
        }
        live
    }

    fn into_stream(self) -> ChatStream {
        let provider = self.slot().spec.name.clone();
        ChatStream {
            failed_over: failed_over(&self.run.attempts, &provider),
            provider,
            model: self.model.clone(),
            attempts: self.run.attempts.clone(),
            cancelled: self.cancelled.clone(),
            // boxed: the state moves through every poll, and a pointer is cheaper to move
            inner: Box::pin(futures_util::stream::unfold(
                Box::new(self),
                |mut live| async move {
                    let event = live.next_event().await?;
                    Some((event, live))
                },
            )),
        }
    }

    fn slot(&self) -> &super::Slot {
        &self.run.gw.inner.slots[self.run.plan[self.pos]]
    }

    async fn next_event(&mut self) -> Option<StreamEvent> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            let stall = self.slot().spec.stall_timeout.min(self.run.time_left());
            let upstream = self.segment.upstream.as_mut()?;
            match tokio::time::timeout(stall, upstream.next()).await {
                Ok(Some(Ok(chunk))) => {
                    if self.take(chunk).is_err() {
                        self.diverged();
                        self.rescue().await;
                    }
                }
                Ok(Some(Err(e))) => self.broken(e).await,
                Ok(None) => {
                    let msg = "stream closed before the finish signal";
                    self.broken(ProviderError::new(ErrorKind::Malformed, msg))
                        .await;
                }
                Err(_) if stall < self.slot().spec.stall_timeout => self.out_of_time(),
                Err(_) => {
                    let msg = format!("stream stalled for {}ms", stall.as_millis());
                    self.broken(ProviderError::new(ErrorKind::Timeout, msg))
                        .await;
                }
            }
        }
    }

    /// Pass a chunk on (through the splice, if one is running); finish on the signal.
    fn take(&mut self, mut chunk: ChatChunk) -> Result<(), Diverged> {
        if let Some(m) = &chunk.model {
            self.model.clone_from(m);
        }
        if let Some(u) = chunk.usage {
            self.segment.usage = Some(u);
        }
        if chunk.has_content() {
            self.segment.chunks += 1;
        }
        if let Mode::Splice { expect, got } = &mut self.mode {
            got.push_str(&chunk.text);
            if got.len() < expect.len() {
                if !expect.starts_with(got.as_str()) || chunk.finish_reason.is_some() {
                    return Err(Diverged);
                }
                chunk.text.clear(); // held back: the client already has it
                if chunk.tool_calls.is_empty() {
                    return Ok(());
                }
            } else {
                if !got.starts_with(expect.as_str()) {
                    return Err(Diverged);
                }
                chunk.text = got[expect.len()..].to_owned();
                self.mode = Mode::Pass;
            }
        }
        let finish = chunk.finish_reason.clone();
        if chunk.has_content() {
            self.kept
                .keep(&chunk, self.run.gw.inner.rescue_buffer_bytes);
        }
        if chunk.has_content() || finish.is_some() {
            self.queue.push_back(StreamEvent::Chunk(chunk));
        }
        if let Some(f) = finish {
            self.finish = Some(f);
            self.finished();
        }
        Ok(())
    }

    /// The finish signal arrived: record, settle, and queue the summary.
    fn finished(&mut self) {
        self.segment.upstream = None;
        let latency = self.run.gw.inner.clock.now() - self.segment.started;
        let gw = self.run.gw.clone();
        let slot = &gw.inner.slots[self.run.plan[self.pos]];
        let attempt = self.tries_on_current();
        self.run.record_success(slot, &self.model, attempt, latency);
        self.close_segment(true);
        let resp = self.response();
        self.report(Ok(&resp));
        self.queue.push_back(StreamEvent::Done(Box::new(resp)));
    }

    /// Tries on the current provider in this request (for the trail's attempt number).
    fn tries_on_current(&self) -> u32 {
        let name = &self.slot().spec.name;
        let n = (self.run.attempts.iter())
            .filter(|a| &a.provider == name && matches!(a.outcome, Outcome::Failed { .. }))
            .count();
        u32::try_from(n + 1).unwrap_or(u32::MAX)
    }

    /// Record the current segment's failure.
    fn record_failed(&mut self, err: &ProviderError) {
        let latency = self.run.gw.inner.clock.now() - self.segment.started;
        let gw = self.run.gw.clone();
        let slot = &gw.inner.slots[self.run.plan[self.pos]];
        let attempt = self.tries_on_current();
        (self.run).record_failure(slot, &self.model, attempt, err, latency);
    }

    /// Fold the current segment's usage and cost into the totals and settle its
    /// reservation. A finished segment is billed for the usage the vendor reported (an
    /// unreported one has unknown cost); a broken or cancelled one for what it reported,
    /// else one output token per chunk it produced — the vendor billed those too.
    fn close_segment(&mut self, finished: bool) {
        let (gw, slot) = (&self.run.gw, self.slot());
        let usage = self.segment.usage.as_ref();
        let limits = self.segment.limits;
        check_usage(gw, &self.run.route.name, slot, &self.model, limits, usage);
        let chunks = std::mem::take(&mut self.segment.chunks);
        let usage = self.segment.usage.take().or_else(|| {
            // a broken segment was billed for what it produced; estimate it
            (!finished && chunks > 0).then(|| Usage {
                output_tokens: chunks,
                ..Usage::default()
            })
        });
        let billed = finished || usage.is_some();
        let cost = cost_of(None, usage.as_ref(), self.slot().price);
        if let Some(u) = usage {
            self.usage = Some(self.usage.map_or(u, |total| total.plus(u)));
        }
        if billed {
            self.cost = self.cost.zip(cost).map(|(a, b)| a + b);
        }
        if let Some(mut r) = self.segment.reservation.take() {
            if billed {
                r.settle_detached(self.run.gw.inner.state.as_ref(), cost);
            } else {
                r.release_now();
            }
        }
    }

    /// The committed stream broke: count it against the provider and climb the ladder.
    async fn broken(&mut self, err: ProviderError) {
        self.segment.upstream = None;
        self.record_failed(&err);
        let effect = self.run.route.policy_for(err.kind).breaker;
        let ops = [
            Op::AttemptFailed {
                kind: err.kind,
                effect,
                retry_after: err.retry_after,
                lease: None,
            },
            Op::TurnFailed {
                kind: err.kind,
                effect,
                lease: None,
            },
        ];
        for op in ops {
            self.run.breaker(self.slot(), op).await;
        }
        self.close_segment(false);
        self.cause.get_or_insert(err);
        self.rescue().await;
    }

    /// The request's deadline passed mid-stream. That is the caller's limit, not the
    /// provider's fault: no breaker verdict, no rescue (there is no time left for one);
    /// the stream ends with `DeadlineExceeded` and no `[DONE]`.
    fn out_of_time(&mut self) {
        self.segment.upstream = None;
        let deadline = self.run.route.deadline;
        let msg = format!(
            "the route's deadline of {}ms passed mid-stream",
            deadline.as_millis()
        );
        self.record_failed(&ProviderError::new(ErrorKind::Timeout, msg));
        self.close_segment(false);
        let err = GatewayError::DeadlineExceeded {
            deadline,
            errors: self.run.errors.clone(),
            attempts: self.run.attempts.clone(),
        };
        self.report(Err(&err));
        self.queue.push_back(StreamEvent::Failed(Box::new(err)));
    }

    /// A restart produced different text than was sent: it cannot be spliced. Not the
    /// provider's fault, so the breaker is not told.
    fn diverged(&mut self) {
        self.segment.upstream = None;
        let err = ProviderError::new(
            ErrorKind::Malformed,
            "restart diverged from the text already sent; cannot splice",
        );
        self.record_failed(&err);
        self.close_segment(false);
        self.mode = Mode::Pass;
    }

    /// Climb the rescue ladder from `self.next`; on success a new upstream is live, else
    /// the stream ends with the original failure.
    async fn rescue(&mut self) {
        if self.kept.unrescuable {
            self.skip_rescuers();
        } else if !self.kept.sent_tools {
            while let Some((pos, rung)) = self.next_rung() {
                if self.try_rung(pos, rung).await {
                    return;
                }
            }
        }
        let cause = self
            .cause
            .clone()
            .unwrap_or_else(|| ProviderError::new(ErrorKind::Malformed, "stream broke"));
        let err = GatewayError::Provider {
            provider: self.slot().spec.name.clone(),
            error: cause,
            attempts: self.run.attempts.clone(),
        };
        self.report(Err(&err));
        self.queue.push_back(StreamEvent::Failed(Box::new(err)));
    }

    /// The stream passed the rescue buffer limit: record every candidate left as skipped
    /// for that reason (the trail says why none was asked), and use them up.
    fn skip_rescuers(&mut self) {
        let gw = self.run.gw.clone();
        let plan = std::mem::take(&mut self.run.plan);
        for &i in plan.get(self.next.0..).unwrap_or_default() {
            let spec = &gw.inner.slots[i].spec;
            let skip = Attempt::skipped(
                &spec.name,
                spec.provider.model(),
                SkipReason::RescueBufferFull,
            );
            self.run.record(skip);
        }
        self.next = (plan.len(), Rung::Continuation);
        self.run.plan = plan;
    }

    /// The next (candidate, rung) to try, advancing the cursor.
    fn next_rung(&mut self) -> Option<(usize, Rung)> {
        let (pos, rung) = self.next;
        let slot = self.run.gw.inner.slots.get(*self.run.plan.get(pos)?)?;
        if rung == Rung::Continuation {
            self.next = (pos, Rung::Restart);
            if slot.spec.supports_prefill && !self.kept.text.is_empty() {
                return Some((pos, Rung::Continuation));
            }
        }
        self.next = (pos + 1, Rung::Continuation);
        Some((pos, Rung::Restart))
    }

    /// Try one rung; true when a rescue stream is live and its head passed the splice.
    async fn try_rung(&mut self, pos: usize, rung: Rung) -> bool {
        if self.run.time_left().is_zero() {
            return false;
        }
        let req = match rung {
            Rung::Continuation => continuation_of(&self.req, &self.kept.text),
            Rung::Restart => ChatRequest::clone(&self.req),
        };
        let turn = self.run.candidate(self.run.plan[pos], &req, Call::Stream);
        let Ok(Some(won)) = turn.await else {
            return false;
        };
        let (latency, attempt) = (won.latency, won.attempt);
        let (segment, head) = Segment::opened(won, self.run.gw.inner.clock.now());
        self.pos = pos;
        self.segment = segment;
        let method = match rung {
            Rung::Continuation => "continuation",
            Rung::Restart => "restart",
        };
        let attempt = Attempt {
            provider: self.slot().spec.name.clone(),
            model: self.slot().spec.provider.model().to_owned(),
            attempt,
            outcome: Outcome::Rescue {
                method: method.to_owned(),
            },
            status: None,
            latency,
        };
        self.run.record(attempt);
        self.mode = match rung {
            Rung::Continuation => Mode::Pass,
            Rung::Restart => Mode::Splice {
                expect: self.kept.text.clone(),
                got: String::new(),
            },
        };
        for chunk in head {
            if self.take(chunk).is_err() {
                self.diverged();
                return false;
            }
        }
        true
    }

    /// The completion so far.
    fn response(&self) -> ChatResponse {
        let completion = Completion {
            text: self.kept.text.clone(),
            tool_calls: self.kept.tool_calls.clone(),
            finish_reason: self.finish.clone(),
            model: self.model.clone(),
            usage: self.usage,
            cost: self.cost,
            provider_latency: None,
            max_tokens_applied: self.segment.limits.applied,
        };
        (self.run).response(self.slot(), completion, self.run.attempts.clone())
    }

    /// Tell observers how the request ended, once (settling the run).
    fn report(&mut self, result: Result<&ChatResponse, &GatewayError>) {
        if std::mem::replace(&mut self.run.settled, true) {
            return;
        }
        for o in &self.run.gw.inner.observers {
            o.on_complete(&self.run.route.name, result);
        }
    }
}

impl Drop for Live {
    /// The client went away mid-stream: the upstream call is dropped with us; bill what
    /// the vendor reported, or estimate one token per content chunk it produced.
    fn drop(&mut self) {
        if self.run.settled {
            return;
        }
        self.close_segment(false);
        let partial = self.response();
        self.cancelled.put(partial.clone());
        let err = GatewayError::Cancelled {
            partial: Some(Box::new(partial)),
            attempts: Vec::new(),
        };
        self.report(Err(&err));
    }
}

/// The original request plus the text already sent, as an assistant prefill.
fn continuation_of(req: &ChatRequest, sent: &str) -> ChatRequest {
    let mut next = req.clone();
    next.messages.push(Message::assistant(sent));
    next
}

/// Fold streamed tool-call fragments into whole calls, by index.
fn merge_tool_deltas(calls: &mut Vec<ToolCall>, deltas: &[ToolCallDelta]) {
    for d in deltas {
        let i = d.index as usize;
        while calls.len() <= i {
            calls.push(ToolCall {
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
        }
        let call = &mut calls[i];
        if let Some(id) = &d.id {
            call.id.clone_from(id);
        }
        if let Some(name) = &d.name {
            call.name.push_str(name);
        }
        call.arguments.push_str(&d.arguments);
    }
}
