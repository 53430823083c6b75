//! A committed stream at work: chunks passed on (through a splice while one runs), each
//! segment closed (usage checked, cost billed, reservation settled) when it finishes,
//! breaks or is cancelled, and the request reported once.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use tokio::time::Instant;

use super::{CancelSlot, ChatStream, Diverged, Kept, Live, Mode, Rung, Segment, StreamEvent};
use crate::breaker::Op;
use crate::chat::{ChatChunk, ChatRequest, ChatResponse, Usage};
use crate::cost::Money;
use crate::error::{AttemptError, ErrorKind, GatewayError, ProviderError};
use crate::gateway::run::{check_usage, cost_of, failed_over, reported, Completion, Run, Won};
use crate::gateway::Slot;
use crate::observe::{Attempt, Outcome};

impl Live {
    /// Take over a run whose turn at `pos` reached the commit point. The run stays
    /// unsettled: the stream reports how the request ended.
    pub(super) fn commit(run: Run, req: Arc<ChatRequest>, pos: usize, won: Won) -> Live {
        let (segment, head) = Segment::opened(won, run.gw.inner.clock.now());
        let model = (run.slot_at(run.plan[pos]).spec)
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
            unrescued: Vec::new(),
            next: (pos + 1, Rung::Continuation),
            cancelled: CancelSlot::default(),
            stall_timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            stall_armed: None,
        };
        for chunk in head {
            // the first segment passes straight through: it cannot diverge
            let _ = live.take(chunk);
        }
        live
    }

    pub(super) fn into_stream(self) -> ChatStream {
        let provider = self.slot().spec.name.clone();
        ChatStream {
            failed_over: failed_over(&self.run.attempts, &provider),
            provider,
            model: self.model.clone(),
            attempts: self.run.attempts.clone(),
            dropped: self.segment.dropped,
            deadline: self.run.deadline,
            cancelled: self.cancelled.clone(),
            inner: Box::pin(Committed {
                live: Some(Box::new(self)),
                work: None,
            }),
        }
    }

    pub(super) fn slot(&self) -> &Slot {
        self.run.slot_at(self.run.plan[self.pos])
    }

    /// A read of the upstream that brought no chunk: `Ready(Some(job))`, work to run
    /// before the stream goes on (a break counted, the rescue ladder climbed);
    /// `Ready(None)`, read on (the deadline passed: the stream's end is queued); `Pending`,
    /// the read waits (the stall timer armed).
    fn missed(&mut self, read: Missed, cx: &mut Context<'_>) -> Poll<Option<Job>> {
        let stall = match read {
            Missed::Broke(e) => {
                self.stall_armed = None;
                return Poll::Ready(Some(Job::Broken(e)));
            }
            Missed::Ended => {
                self.stall_armed = None;
                let msg = "stream closed before the finish signal";
                let e = ProviderError::new(ErrorKind::Malformed, msg);
                return Poll::Ready(Some(Job::Broken(e)));
            }
            Missed::Waiting => match self.stall_armed {
                Some(stall) => stall,
                None => {
                    // armed only when a read waits: one timer for the stream, moved
                    // on when a wait starts (pushing a deadline later does not touch
                    // the timer wheel; a fresh timeout per chunk would)
                    let stall = self.slot().spec.stall_timeout.min(self.run.time_left());
                    self.stall_timer.as_mut().reset(deadline_after(stall));
                    self.stall_armed = Some(stall);
                    stall
                }
            },
        };
        if self.stall_timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.stall_armed = None;
        if stall < self.slot().spec.stall_timeout {
            self.out_of_time();
            return Poll::Ready(None);
        }
        let msg = format!("stream stalled for {}ms", stall.as_millis());
        Poll::Ready(Some(Job::Broken(ProviderError::new(
            ErrorKind::Timeout,
            msg,
        ))))
    }

    /// Pass a chunk on: into the queue, after anything already there (a head read up to
    /// a commit point).
    pub(super) fn take(&mut self, mut chunk: ChatChunk) -> Result<(), Diverged> {
        let at = self.queue.len();
        if self.pass(&mut chunk)? {
            // before the end `pass` may have queued after it
            self.queue.insert(at, StreamEvent::Chunk(chunk));
        }
        Ok(())
    }

    /// Pass a chunk on (through the splice, if one is running); finish on the signal.
    /// True when the chunk (changed where it lies) goes on to the client, before what this
    /// queued (the end, at the finish signal).
    fn pass(&mut self, chunk: &mut ChatChunk) -> Result<bool, Diverged> {
        if let Some(m) = &chunk.model {
            self.model.clone_from(m);
        }
        if let Some(u) = chunk.usage {
            self.segment.usage = Some(u);
        }
        if chunk.id.is_some() {
            self.segment.id = chunk.id.take();
        }
        if let Some(f) = &chunk.system_fingerprint {
            self.kept.system_fingerprint = Some(f.clone());
        }
        if chunk.has_content() {
            self.segment.chunks += 1;
        }
        if let Mode::Splice { expect, got } = &mut self.mode {
            // a restart's reasoning is not for a client that already has the answer's start
            chunk.thinking.clear();
            if chunk.finish_reason.is_none() {
                chunk.native = None;
            }
            got.push_str(&chunk.text);
            if got.len() < expect.len() {
                if !expect.starts_with(got.as_str()) || chunk.finish_reason.is_some() {
                    return Err(Diverged::between(expect, got));
                }
                chunk.text.clear(); // held back: the client already has it
                if chunk.tool_calls.is_empty() {
                    return Ok(false);
                }
            } else {
                if !got.starts_with(expect.as_str()) {
                    return Err(Diverged::between(expect, got));
                }
                chunk.text = got[expect.len()..].to_owned();
                self.mode = Mode::Pass;
            }
        }
        let finish = chunk.finish_reason.clone();
        if finish.is_some() && chunk.native.is_some() {
            self.kept.native.clone_from(&chunk.native);
        }
        if chunk.has_content() {
            self.kept.keep(chunk, self.run.gw.inner.rescue_buffer_bytes);
        }
        let out = chunk.has_content() || finish.is_some();
        if let Some(f) = finish {
            self.finish = Some(f);
            self.finished();
        }
        Ok(out)
    }

    /// The finish signal arrived: record, settle, and queue the summary.
    fn finished(&mut self) {
        self.segment.upstream = None;
        let latency = self.run.gw.inner.clock.now() - self.segment.started;
        let slots = self.run.slots();
        let slot = slots.get(self.run.plan[self.pos]);
        let attempt = self.tries_on_current();
        let s = &mut self.segment;
        let reported = reported(s.id.take(), self.finish.as_ref(), s.usage, s.status);
        self.run
            .record_success(slot, &self.model, attempt, latency, reported);
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
        let slots = self.run.slots();
        let slot = slots.get(self.run.plan[self.pos]);
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
        let cost = cost_of(None, usage.as_ref(), self.slot().price, limits.calls);
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
        let provider = self.slot().spec.name.clone();
        self.cause.get_or_insert(AttemptError {
            provider,
            error: err,
        });
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

    /// A restart produced different text than was sent: it cannot be spliced. That is
    /// the rescue's failure, not the provider's (it answered; its answer is simply another
    /// one): the trail records the divergence, never a failure, and neither the breaker
    /// nor the request's errors hear of it.
    pub(super) fn diverged(&mut self, d: &Diverged) {
        self.segment.upstream = None;
        let slot = self.slot();
        let (provider, model) = (
            slot.spec.name.clone(),
            slot.spec.provider.model().to_owned(),
        );
        let sent = u64::try_from(self.kept.text.chars().count()).unwrap_or(u64::MAX);
        self.unrescued.push(format!(
            "{provider}'s restart diverged at character {} of the {sent} already sent",
            d.at
        ));
        let attempt = Attempt {
            model,
            attempt: self.tries_on_current(),
            outcome: Outcome::Diverged { at: d.at, sent },
            status: None,
            latency: self.run.gw.inner.clock.now() - self.segment.started,
            start: None,
            probe: false, // set by `record`
            reported: None,
            provider,
        };
        self.run.record(attempt);
        self.close_segment(false);
        self.mode = Mode::Pass;
    }

    /// The completion so far.
    fn response(&self) -> ChatResponse {
        let completion = Completion {
            text: self.kept.text.clone(),
            tool_calls: self.kept.tool_calls.clone(),
            thinking: Vec::new(),
            finish_reason: self.finish.clone(),
            native: self.kept.native.clone(),
            model: self.model.clone(),
            usage: self.usage,
            cost: self.cost,
            provider_latency: None,
            max_tokens_applied: self.segment.limits.applied,
            dropped: self.segment.dropped,
        };
        ChatResponse {
            refusal: self.kept.refusal.clone(),
            system_fingerprint: self.kept.system_fingerprint.clone(),
            ..(self.run).response(self.slot(), completion, self.run.attempts.clone())
        }
    }

    /// Tell observers how the request ended, once (settling the run).
    pub(super) fn report(&mut self, result: Result<&ChatResponse, &GatewayError>) {
        if std::mem::replace(&mut self.run.settled, true) {
            return;
        }
        for o in &self.run.gw.inner.observers {
            o.on_complete(&self.run.route.name, result);
        }
    }
}

/// What a read of the upstream brought, when not a chunk.
enum Missed {
    /// An error.
    Broke(ProviderError),
    /// The end, before the finish signal.
    Ended,
    /// Nothing yet.
    Waiting,
}

/// The awaiting work of a committed stream.
enum Job {
    /// The upstream broke (an error, an early end, a stall): count it, then rescue.
    Broken(ProviderError),
    /// A restart diverged (already recorded): climb on.
    Rescue,
}

impl Job {
    async fn run(self, mut live: Box<Live>) -> Box<Live> {
        match self {
            Self::Broken(e) => live.broken(e).await,
            Self::Rescue => live.rescue().await,
        }
        live
    }
}

/// The stream of a committed [`Live`], polled by hand: the state stays in its box, and
/// only a [`Job`] runs as a future (holding the state until it is done). Dropped
/// midway, it drops the state either way (see `Drop for Live`).
struct Committed {
    live: Option<Box<Live>>,
    work: Option<Pin<Box<dyn Future<Output = Box<Live>> + Send>>>,
}

impl Stream for Committed {
    type Item = StreamEvent;

    /// The next event, polled by hand: a chunk goes from the upstream to the caller
    /// without passing through a queue or a future's state (changed where it lies, then
    /// moved once, into what this returns). What must await runs as a [`Job`].
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamEvent>> {
        let this = self.get_mut();
        loop {
            if let Some(work) = &mut this.work {
                let live = std::task::ready!(work.as_mut().poll(cx));
                this.work = None;
                this.live = Some(live);
            }
            let Some(live) = this.live.as_mut() else {
                return Poll::Ready(None);
            };
            let job = loop {
                if let Some(e) = live.queue.pop_front() {
                    return Poll::Ready(Some(e));
                }
                let Some(upstream) = live.segment.upstream.as_mut() else {
                    return Poll::Ready(None);
                };
                let mut next = upstream.poll_next_unpin(cx);
                if let Poll::Ready(Some(Ok(chunk))) = &mut next {
                    live.stall_armed = None;
                    match live.pass(chunk) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(d) => {
                            live.diverged(&d);
                            break Job::Rescue;
                        }
                    }
                }
                let read = match next {
                    Poll::Ready(Some(Ok(chunk))) => {
                        return Poll::Ready(Some(StreamEvent::Chunk(chunk)));
                    }
                    Poll::Ready(Some(Err(e))) => Missed::Broke(e),
                    Poll::Ready(None) => Missed::Ended,
                    Poll::Pending => Missed::Waiting,
                };
                match live.missed(read, cx) {
                    Poll::Ready(Some(job)) => break job,
                    Poll::Ready(None) => {}
                    Poll::Pending => return Poll::Pending,
                }
            };
            if let Some(live) = this.live.take() {
                this.work = Some(Box::pin(job.run(live)));
            }
        }
    }
}

/// `after` from now, as `tokio::time::timeout` counts it (a span too long to add is
/// as good as never).
fn deadline_after(after: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

impl Drop for Live {
    /// The client went away mid-stream: the upstream call is dropped with us; bill what
    /// the vendor reported, or estimate one token per content chunk it produced. A stream
    /// that finished but whose end its caller never took leaves that completion instead.
    fn drop(&mut self) {
        if self.run.settled {
            let done = self.queue.iter().find_map(|e| match e {
                StreamEvent::Done(resp) => Some(resp),
                _ => None,
            });
            if let Some(resp) = done {
                self.cancelled.put((**resp).clone());
            }
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
