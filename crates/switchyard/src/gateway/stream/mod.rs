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
//!    failure, laid at the door of the provider that broke the stream — never a rescue's
//!    own error (such as a prefill rejection), though its message says what each rescue
//!    came to.
//!
//! A rescue that comes to nothing through no fault of the rescuer (a restart that
//! diverged, a continuation whose prefill it refused) is the rescue's failure: the trail
//! records it as `diverged` / `declined`, and the rescuer's breaker never hears of it.
//!
//! What was delivered is kept for those rescues only up to the gateway's rescue buffer
//! limit ([`GatewayBuilder::rescue_buffer_bytes`](super::GatewayBuilder::rescue_buffer_bytes)):
//! an endless fast stream must not hold its whole text in memory. Past the limit the kept
//! text is dropped and the stream is served on unrescuable; if it breaks, the trail marks
//! the remaining candidates skipped (`rescue_buffer_full`) and it ends as in 3.
//!
//! Dropping the stream cancels the upstream call; what was used is still reported. A
//! stream runs only while it is polled: its stall and deadline timers too. A caller that
//! stops polling (its own client stopped reading) must drop it by
//! [`ChatStream::deadline`] to have the upstream call cancelled then.
//!
//! Here: the public stream types, the opening (the run's attempt loop up to the commit
//! point), and the state a committed stream owns besides its run. `live.rs` passes chunks
//! on and closes segments; `rescue.rs` climbs the ladder; `kept.rs` keeps what was sent.

mod kept;
mod live;
mod rescue;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::time::Instant;

use super::run::{Answer, Call, Limits, Reservation, Run, Won};
use super::Gateway;
use crate::chat::{ChatChunk, ChatRequest, ChatResponse, FinishReason, Usage};
use crate::cost::Money;
use crate::error::{AttemptError, GatewayError};
use crate::observe::Attempt;
use crate::provider::ChunkStream;
use crate::route::Route;
use kept::Kept;

/// One item of a committed stream.
// Chunks are most of a stream's events: boxing them would cost an allocation per chunk
// to spare a copy of a few hundred bytes on the rare other variants.
#[allow(clippy::large_enum_variant)]
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
    /// The request's fields the committing provider was called without
    /// (`docs/fields.md`; `x-switchyard-dropped`). A rescue by another provider may drop
    /// others: the [`StreamEvent::Done`] completion names the last one's.
    pub dropped: crate::chat::FieldSet,
    /// When the route's deadline passes. A stream polled then ends with
    /// `DeadlineExceeded`; one its caller stops polling (a client that stopped reading)
    /// has no timer running, so the caller must drop it by then: dropping cancels the
    /// upstream call and frees what the stream holds.
    pub deadline: Instant,
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
        let requested = route;
        let route = Arc::clone(self.route_arc(requested)?);
        let result = if let Some(wrong) = super::wrong_api(&route, crate::route::Api::Chat) {
            Err(wrong)
        } else if req.messages.is_empty() {
            Err(GatewayError::InvalidRequest(
                "messages must not be empty".to_owned(),
            ))
        } else {
            match self.resolve(&route, requested) {
                Ok(resolved) => self.open(&route, resolved, Arc::new(req), opts).await,
                Err(e) => Err(e),
            }
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
        resolved: Option<Arc<super::Slot>>,
        req: Arc<ChatRequest>,
        opts: &super::CallOptions,
    ) -> Result<ChatStream, GatewayError> {
        let mut run = Run::new(self, route, resolved, opts);
        let (pos, won) = run.first_answer(Call::Stream(&req)).await?;
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

/// The restart did not reproduce what was sent: it matched the first `at` characters.
struct Diverged {
    at: u64,
}

impl Diverged {
    /// Where `got` (a restart's text) parts from `sent`, or ends short of it.
    fn between(sent: &str, got: &str) -> Self {
        let at = (sent.chars().zip(got.chars()))
            .take_while(|(a, b)| a == b)
            .count();
        Self {
            at: u64::try_from(at).unwrap_or(u64::MAX),
        }
    }
}

/// Which rung of the rescue ladder to try next on a candidate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rung {
    Continuation,
    Restart,
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
    /// The request's fields this provider was called without (`docs/fields.md`).
    dropped: crate::chat::FieldSet,
    /// The upstream's id of its answer, once a chunk stated it.
    id: Option<String>,
    /// The HTTP status its stream opened with.
    status: Option<u16>,
}

impl Segment {
    /// The segment a won stream turn opens, and the chunks read up to its commit point
    /// (its call started `won.latency` before `now`).
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
            dropped: won.dropped,
            id: None,
            status: won.status,
        };
        (segment, head)
    }
}

/// Everything a committed stream owns besides its request's run.
struct Live {
    /// The request's runner and trail: rescues take their turns on it.
    run: Run,
    /// The client's request, as rescues resend it.
    req: Arc<ChatRequest>,
    /// Position in the run's plan of the provider currently streaming.
    pos: usize,
    segment: Segment,
    mode: Mode,
    /// Events ready for the client.
    queue: VecDeque<StreamEvent>,
    kept: Kept,
    /// Usage and cost of closed segments (`None` until some segment reported or was
    /// estimated; a cost turns `None` once a billed segment's cost is unknown).
    usage: Option<Usage>,
    cost: Option<Money>,
    /// The model the completion names: the committing provider's, or the latest a chunk
    /// reported.
    model: String,
    finish: Option<FinishReason>,
    /// The failure that broke the committed stream first, and whose it was: what the
    /// client hears if no rescue works.
    cause: Option<AttemptError>,
    /// What each rescue tried came to, in words (`backup's restart diverged at character
    /// 16 of the 16 already sent`): added to the cause the client hears. One per rung
    /// tried at most, so bounded by the route's providers.
    unrescued: Vec<String>,
    /// Next rescue candidate (position in the plan) and rung.
    next: (usize, Rung),
    cancelled: CancelSlot,
    /// The stall timer, moved on when a read of the upstream starts to wait.
    stall_timer: Pin<Box<tokio::time::Sleep>>,
    /// The stall allowed the read that waits now (the timer is set for it); `None`
    /// between reads.
    stall_armed: Option<std::time::Duration>,
}
