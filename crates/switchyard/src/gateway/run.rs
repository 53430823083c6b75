//! One request's journey through a route.
//!
//! For each planned candidate: budget-unpriced check → breaker admission → the output
//! bound (the route's default `max_tokens` is set when a budgeted request's worst case is
//! otherwise unknown) → reservation of the worst case → the retry loop under the deadline
//! → breaker verdict → settle or release (and an overrun alert when the reported usage
//! passed the bound) → answer, fail over, or return. Guards give back a probe lease and a reservation if the caller drops
//! the request mid-flight. Streams use the same turn, with "answered" meaning "the first
//! content chunk arrived" (the commit point); `stream.rs` takes over from there.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::time::Instant;

pub(super) use super::hold::Reservation;
use super::hold::{Guard, Hold, RESERVATION_SLACK};
use super::{budget_scope, Budget, CallOptions, Gateway, Slot};
use crate::breaker::{Admission, Now, Op, SkipReason};
use crate::chat::{
    ChatChunk, ChatRequest, ChatResponse, FinishReason, ProviderReply, ToolCall, Usage,
};
use crate::clock::UnixMillis;
use crate::cost::{estimate_input_tokens, BudgetState, Money, Price};
use crate::error::{AttemptError, ErrorKind, GatewayError, ProviderError};
use crate::observe::{Attempt, Outcome, Overrun};
use crate::provider::ChunkStream;
use crate::retry::{self, Backoff, Decision};
use crate::route::{plan, Candidate, Route};
use crate::state::{Cleanup, SharedState};

/// How one provider's turn ended.
#[allow(clippy::large_enum_variant)] // short-lived, on the stack
pub(super) enum TurnEnd {
    Answered(Won),
    Skipped,
    Failed(ProviderError),
    Refused(String, BudgetState),
}

/// What kind of call a turn makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    Send,
    Stream,
}

/// Why a request stops before trying every candidate.
pub(super) enum Stop {
    /// A budget (scope, books) refused before dispatch.
    Refused(String, BudgetState),
    /// An error the route does not fail over, returned as itself.
    Returned {
        provider: String,
        error: ProviderError,
    },
}

/// A successful call's result.
pub(super) enum Answer {
    Reply(ProviderReply),
    /// A stream that reached its first content chunk (or its finish signal).
    Opened {
        stream: ChunkStream,
        /// Chunks received up to and including the first content chunk.
        head: Vec<ChatChunk>,
    },
}

/// A turn that got an answer, with what settling it needs.
pub(super) struct Won {
    pub answer: Answer,
    pub latency: Duration,
    pub attempt: u32,
    pub reservation: Option<Reservation>,
    pub limits: Limits,
}

/// What one turn's call was allowed, and what its reservation assumed: reported usage is
/// checked against these when the call settles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Limits {
    /// The most output tokens the call may produce: the client's `max_tokens`, else the
    /// adapter's default, else the model's output limit, else (budgeted requests only)
    /// the route's `default_max_tokens`. `None`: unknown, and no budget needed it.
    pub output: Option<u64>,
    /// The input-token bound the reservation was sized by; `None` when none was held.
    pub input: Option<u64>,
    /// The route's `default_max_tokens`, when the gateway set it on the request.
    pub applied: Option<u32>,
}

/// How long one attempt may take, before the deadline clamps it.
#[derive(Debug, Clone, Copy)]
struct AttemptLimits {
    /// The whole call (a stream: until its connection is accepted).
    timeout: Duration,
    /// Streams: until the first content chunk.
    first_token: Duration,
}

impl AttemptLimits {
    fn of(spec: &super::ProviderSpec) -> Self {
        Self {
            timeout: spec.timeout,
            first_token: spec.first_token_timeout,
        }
    }

    /// A probe's: the probe limit bounds the first token too.
    fn probe(spec: &super::ProviderSpec) -> Self {
        let timeout = spec.probe_limit();
        Self {
            timeout,
            first_token: spec.first_token_timeout.min(timeout),
        }
    }
}

/// One request in flight: the runner a plain request and a stream (through its rescues)
/// share, and the trail it leaves.
pub(super) struct Run {
    pub gw: Gateway,
    pub route: Arc<Route>,
    pub started: Instant,
    pub deadline: Instant,
    pub request_index: u64,
    /// Slot indices in the order the route tries them (fixed when the first turn starts).
    pub plan: Vec<usize>,
    pub attempts: Vec<Attempt>,
    pub errors: Vec<AttemptError>,
    /// Set when the deadline cut a turn short or left candidates untried.
    pub deadline_hit: bool,
    /// Every budget this request spends against: the route's, then the caller's.
    pub budgets: Vec<Budget>,
    /// The earliest moment a rate-limited candidate accepts again (its Retry-After, or the
    /// end of its cooling): what a request that met only rate limits tells its caller.
    retry_at: Option<UnixMillis>,
    /// Set once the caller has (or will be given) the outcome. A run dropped before
    /// that was abandoned by its caller: `Drop` tells observers, with the trail so far.
    /// A committed stream owns its run and sets this when it reports (`stream.rs`).
    pub settled: bool,
    rng: fastrand::Rng,
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let err = GatewayError::Cancelled {
            partial: None,
            attempts: std::mem::take(&mut self.attempts),
        };
        for o in &self.gw.inner.observers {
            o.on_complete(&self.route.name, Err(&err));
        }
    }
}

impl Run {
    pub(super) fn new(gw: &Gateway, route: &Arc<Route>, opts: &CallOptions) -> Self {
        let started = gw.inner.clock.now();
        let request_index = gw
            .inner
            .requests
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let rng = gw
            .inner
            .rng
            .lock()
            .map(|mut r| fastrand::Rng::with_seed(r.u64(..)))
            .unwrap_or_default();
        Self {
            gw: gw.clone(),
            route: Arc::clone(route),
            started,
            deadline: started + route.deadline,
            request_index,
            plan: Vec::new(),
            attempts: Vec::new(),
            errors: Vec::new(),
            deadline_hit: false,
            retry_at: None,
            budgets: budgets_of(route, opts),
            settled: false,
            rng,
        }
    }

    /// A non-streaming request, start to finish.
    pub(super) async fn execute(mut self, req: &ChatRequest) -> Result<ChatResponse, GatewayError> {
        let result = match self.first_answer(req, Call::Send).await {
            Ok((pos, won)) => Ok(self.answer(pos, won).await),
            Err(e) => Err(e),
        };
        self.settled = true;
        result
    }

    /// The attempt loop of every request, plain or streamed: the candidates in plan order
    /// until one answers (for a stream: reaches its commit point). Returns its position in
    /// the plan and its win; an error settles the run (the caller reports it).
    pub(super) async fn first_answer(
        &mut self,
        req: &ChatRequest,
        call: Call,
    ) -> Result<(usize, Won), GatewayError> {
        self.plan = self.order();
        for pos in 0..self.plan.len() {
            match self.candidate(self.plan[pos], req, call).await {
                Ok(Some(won)) => return Ok((pos, won)),
                Ok(None) => {}
                Err(stop) => {
                    self.settled = true;
                    return Err(self.stopped(stop));
                }
            }
        }
        self.settled = true;
        Err(self.exhausted())
    }

    /// One candidate's turn (slot index `i`), mapped to: an answer, "try the next one"
    /// (`None`), or a stop that ends the request.
    pub(super) async fn candidate(
        &mut self,
        i: usize,
        req: &ChatRequest,
        call: Call,
    ) -> Result<Option<Won>, Stop> {
        if self.time_left().is_zero() {
            self.deadline_hit = true;
            return Ok(None);
        }
        let gw = self.gw.clone(); // the slot outlives the turn's `&mut self`
        let slot = &gw.inner.slots[i];
        match self.turn(slot, req, call).await {
            TurnEnd::Answered(won) => Ok(Some(won)),
            TurnEnd::Skipped => Ok(None),
            TurnEnd::Refused(scope, books) => Err(Stop::Refused(scope, books)),
            TurnEnd::Failed(err) if !self.route.policy_for(err.kind).fail_over => {
                Err(Stop::Returned {
                    provider: slot.spec.name.clone(),
                    error: err,
                })
            }
            TurnEnd::Failed(_) => Ok(None),
        }
    }

    /// The error for a stop, carrying the trail so far.
    pub(super) fn stopped(&mut self, stop: Stop) -> GatewayError {
        let attempts = std::mem::take(&mut self.attempts);
        match stop {
            Stop::Refused(scope, books) => GatewayError::BudgetExceeded {
                scope,
                limit: books.limit,
                spent: books.spent,
                reserved: books.reserved,
                attempts,
            },
            Stop::Returned { provider, error } => GatewayError::Provider {
                provider,
                error,
                attempts,
            },
        }
    }

    /// The error once every candidate has been tried or skipped.
    pub(super) fn exhausted(&mut self) -> GatewayError {
        let rate_limited = self.rate_limited_for();
        let errors = std::mem::take(&mut self.errors);
        let attempts = std::mem::take(&mut self.attempts);
        if let Some(retry_after) = rate_limited {
            return GatewayError::RateLimited {
                retry_after,
                errors,
                attempts,
            };
        }
        if self.deadline_hit {
            GatewayError::DeadlineExceeded {
                deadline: self.route.deadline,
                errors,
                attempts,
            }
        } else {
            GatewayError::AllFailed { errors, attempts }
        }
    }

    /// When every provider of the route was tried or skipped, and each one only failed
    /// with rate limits or was skipped as cooling: the wait until the earliest of them
    /// accepts again.
    fn rate_limited_for(&self) -> Option<Duration> {
        let only = self.attempts.iter().all(|a| match &a.outcome {
            Outcome::Failed { kind, .. } => *kind == ErrorKind::RateLimited,
            Outcome::Skipped { reason } => *reason == SkipReason::Cooling,
            Outcome::Success | Outcome::Rescue { .. } => false,
        });
        let every =
            (self.route.providers.iter()).all(|p| self.attempts.iter().any(|a| a.provider == *p));
        let at = self.retry_at.filter(|_| only && every)?;
        Some(Duration::from_millis(at.saturating_sub(self.now().ms)))
    }

    /// A rate-limited candidate accepts again at `at_ms`.
    fn note_retry_at(&mut self, at_ms: UnixMillis) {
        self.retry_at = Some(self.retry_at.map_or(at_ms, |t| t.min(at_ms)));
    }

    /// Note when a candidate skipped as cooling accepts again.
    async fn note_cooling(&mut self, slot: &Slot) {
        let now = self.now();
        let breaker = self.state().breaker(&slot.spec.name).await;
        let until = breaker.snapshot(&self.route.breaker, now).cooling_until_ms;
        self.note_retry_at(until.unwrap_or(now.ms));
    }

    /// Slot indices in the order the route tries them.
    fn order(&self) -> Vec<usize> {
        let slots: Vec<usize> = self
            .route
            .providers
            .iter()
            .filter_map(|name| self.gw.inner.by_name.get(name).copied())
            .collect();
        let candidates: Vec<Candidate> = slots
            .iter()
            .map(|&i| {
                let s = &self.gw.inner.slots[i];
                Candidate {
                    nominal_cost: s.price.map(|p| p.nominal_cost()),
                    latency_ms: s.latency(),
                }
            })
            .collect();
        plan(self.route.order, &candidates)
            .into_iter()
            .map(|k| slots[k])
            .collect()
    }

    /// What is left of the request's deadline.
    pub(super) fn time_left(&self) -> Duration {
        self.deadline
            .saturating_duration_since(self.gw.inner.clock.now())
    }

    pub(super) fn now(&self) -> Now {
        Now {
            ms: self.gw.inner.clock.unix_ms(),
            request: self.request_index,
        }
    }

    fn state(&self) -> &Arc<dyn SharedState> {
        &self.gw.inner.state
    }

    pub(super) async fn breaker(&self, slot: &Slot, op: Op) -> crate::breaker::Applied {
        let applied = self
            .state()
            .breaker_op(&slot.spec.name, &self.route.breaker, self.now(), op)
            .await;
        if let Some(t) = &applied.transition {
            for o in &self.gw.inner.observers {
                o.on_transition(&slot.spec.name, t);
            }
        }
        applied
    }

    /// Tell observers of an attempt and add it to the trail.
    pub(super) fn record(&mut self, attempt: Attempt) {
        for o in &self.gw.inner.observers {
            o.on_attempt(&self.route.name, &attempt);
        }
        self.attempts.push(attempt);
    }

    fn skip(&mut self, slot: &Slot, reason: SkipReason) -> TurnEnd {
        let model = slot.spec.provider.model().to_owned();
        self.record(Attempt::skipped(&slot.spec.name, &model, reason));
        TurnEnd::Skipped
    }

    /// One provider's turn: admission, reservation, the retry loop, the verdict.
    async fn turn(&mut self, slot: &Slot, req: &ChatRequest, call: Call) -> TurnEnd {
        if !self.budgets.is_empty() && slot.price.is_none() && !self.route.allow_unpriced {
            return self.skip(slot, SkipReason::Unpriced);
        }
        let limit = if self.route.breaker.single_attempt_probes() {
            slot.spec.probe_limit()
        } else {
            slot.spec.timeout
        };
        let lease_for = limit.min(self.time_left());
        let lease = match self.breaker(slot, Op::Admit { lease_for }).await.admission {
            Admission::Reject(reason) => {
                if reason == SkipReason::Cooling {
                    self.note_cooling(slot).await;
                }
                return self.skip(slot, reason);
            }
            Admission::Admit => None,
            Admission::Probe { lease } => Some(lease),
        };
        let mut probe = lease.map(|lease| {
            Guard::new(
                self.state(),
                Cleanup::ReleaseProbe {
                    provider: slot.spec.name.clone(),
                    lease,
                },
            )
        });
        let (req, mut limits) = self.bounded(slot, req);
        let reservation = match self.reserve(slot, &req, limits.output).await {
            Ok(r) => r,
            Err((scope, books)) => return TurnEnd::Refused(scope, books),
        };
        limits.input = reservation.as_ref().map(|r| r.input_tokens);
        let end = self.attempts_loop(slot, &req, call, lease).await;
        if let Some(p) = probe.as_mut() {
            p.disarm(); // the breaker gets its verdict below (or releases the lease itself)
        }
        match end {
            Ok((answer, latency, attempt)) => {
                self.breaker(slot, Op::Succeeded { lease }).await;
                TurnEnd::Answered(Won {
                    answer,
                    latency,
                    attempt,
                    reservation,
                    limits,
                })
            }
            Err(err) => {
                if let Some(mut r) = reservation {
                    r.release_now();
                }
                let effect = self.route.policy_for(err.kind).breaker;
                let op = Op::TurnFailed {
                    kind: err.kind,
                    effect,
                    lease,
                };
                self.breaker(slot, op).await;
                TurnEnd::Failed(err)
            }
        }
    }

    /// The turn's output bound, and the request as it is sent: when it spends against a
    /// budget, sets no `max_tokens`, and the model's output limit is unknown, with the
    /// route's `default_max_tokens` set (a clone; rare, since the price table knows the
    /// limits of the models it prices).
    fn bounded<'r>(&self, slot: &Slot, req: &'r ChatRequest) -> (Cow<'r, ChatRequest>, Limits) {
        let known = req
            .max_tokens
            .or_else(|| slot.spec.provider.default_max_tokens())
            .or(slot.max_output_tokens);
        if let Some(n) = known {
            let limits = Limits {
                output: Some(u64::from(n)),
                ..Limits::default()
            };
            return (Cow::Borrowed(req), limits);
        }
        if self.budgets.is_empty() || slot.price.is_none() {
            return (Cow::Borrowed(req), Limits::default());
        }
        let n = self.route.default_max_tokens;
        let limits = Limits {
            output: Some(u64::from(n)),
            input: None,
            applied: Some(n),
        };
        (Cow::Owned(req.clone().with_max_tokens(n)), limits)
    }

    /// Reserve the request's worst case (input bound at the dearest input rate, `output`
    /// tokens at the output rate) against every budget that applies (the route's, the
    /// caller's); all or nothing.
    async fn reserve(
        &self,
        slot: &Slot,
        req: &ChatRequest,
        output: Option<u64>,
    ) -> Result<Option<Reservation>, (String, BudgetState)> {
        if self.budgets.is_empty() {
            return Ok(None);
        }
        let input_tokens = estimate_input_tokens(req);
        let price = slot.price.unwrap_or_default();
        let amount = price.worst_case(input_tokens, output.unwrap_or(0));
        // a lapsed reservation must not free money a live request may still spend
        let lease = self.time_left() + RESERVATION_SLACK;
        let mut holds = Vec::with_capacity(self.budgets.len());
        for b in &self.budgets {
            let id = self
                .state()
                .reserve(&b.scope, b.limit, amount, lease)
                .await
                .map_err(|books| (b.scope.clone(), books))?;
            let cleanup = Cleanup::ReleaseBudget {
                scope: b.scope.clone(),
                id,
                amount,
            };
            holds.push(Hold {
                scope: b.scope.clone(),
                id,
                guard: Guard::new(self.state(), cleanup),
            });
        }
        Ok(Some(Reservation {
            amount,
            input_tokens,
            holds,
        }))
    }

    /// The retry loop: attempts on one provider until success, a stop, or the deadline.
    async fn attempts_loop(
        &mut self,
        slot: &Slot,
        req: &ChatRequest,
        call: Call,
        lease: Option<u64>,
    ) -> Result<(Answer, Duration, u32), ProviderError> {
        // A half-open probe is one attempt under the probe's own limit: its outcome alone
        // decides the circuit, and a failure fails the request over at once.
        let (max_attempts, limits) = match lease {
            Some(_) if self.route.breaker.single_attempt_probes() => {
                (1, AttemptLimits::probe(&slot.spec))
            }
            _ => (
                slot.spec
                    .max_attempts
                    .unwrap_or(self.route.retry.max_attempts),
                AttemptLimits::of(&slot.spec),
            ),
        };
        let mut backoff = Backoff::with_rng(
            self.route.retry.base_delay,
            self.route.retry.max_delay,
            self.rng.fork(),
        );
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Some(lease) = lease {
                let timeout = limits.timeout.min(self.time_left());
                let until_ms = self.now().ms + crate::clock::duration_ms(timeout);
                self.breaker(slot, Op::Renew { lease, until_ms }).await;
            }
            let started = self.gw.inner.clock.now();
            let result = self.attempt(slot, req, call, limits).await;
            let latency = self.gw.inner.clock.now() - started;
            let err = match result {
                Ok(answer) => return Ok((answer, latency, attempt)),
                Err(e) => e,
            };
            let model = slot.spec.provider.model();
            self.record_failure(slot, model, attempt, &err, latency);
            let policy = self.route.policy_for(err.kind);
            let op = Op::AttemptFailed {
                kind: err.kind,
                effect: policy.breaker,
                retry_after: err.retry_after,
                lease,
            };
            self.breaker(slot, op).await;
            let wait = backoff.next().unwrap_or_default();
            let (retry, left) = (&self.route.retry, self.time_left());
            match retry::decide(&policy, retry, max_attempts, attempt, &err, wait, left) {
                Decision::Retry(wait) => tokio::time::sleep(wait).await,
                Decision::Stop(reason) => {
                    if reason == retry::StopReason::NoTimeLeft {
                        self.deadline_hit = true;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// One attempt, bounded by `limits` (and the deadline: a limit the deadline cut short
    /// marks the deadline hit when it expires).
    async fn attempt(
        &mut self,
        slot: &Slot,
        req: &ChatRequest,
        call: Call,
        limits: AttemptLimits,
    ) -> Result<Answer, ProviderError> {
        let left = self.time_left();
        let timeout = limits.timeout.min(left);
        let clamped = left < limits.timeout;
        let provider = &slot.spec.provider;
        let result = match call {
            Call::Send => tokio::time::timeout(timeout, provider.send(req))
                .await
                .map(|r| r.map(Answer::Reply)),
            Call::Stream => {
                let first = limits.first_token.min(left);
                let clamped = clamped || left < limits.first_token;
                let opened =
                    tokio::time::timeout(first, open_stream(provider.as_ref(), req, timeout)).await;
                if opened.is_err() && clamped {
                    self.deadline_hit = true;
                }
                return opened.unwrap_or_else(|_| {
                    Err(ProviderError::new(
                        ErrorKind::Timeout,
                        format!("no first token within {}ms", first.as_millis()),
                    ))
                });
            }
        };
        result.unwrap_or_else(|_| {
            if clamped {
                self.deadline_hit = true;
            }
            Err(ProviderError::new(
                ErrorKind::Timeout,
                format!("no response within {}ms", timeout.as_millis()),
            ))
        })
    }

    /// Record a failed attempt (trail and errors; a rate limit notes when it ends).
    pub(super) fn record_failure(
        &mut self,
        slot: &Slot,
        model: &str,
        attempt: u32,
        err: &ProviderError,
        latency: Duration,
    ) {
        if err.kind == ErrorKind::RateLimited {
            let wait = err.retry_after.map_or(0, crate::clock::duration_ms);
            self.note_retry_at(self.now().ms.saturating_add(wait));
        }
        self.errors.push(AttemptError {
            provider: slot.spec.name.clone(),
            error: err.clone(),
        });
        self.record(Attempt {
            provider: slot.spec.name.clone(),
            model: model.to_owned(),
            attempt,
            outcome: Outcome::Failed {
                kind: err.kind,
                message: err.message.clone(),
            },
            status: err.status,
            latency,
        });
    }

    /// Record the success, check the usage against the limits, settle the reservation
    /// (at the real cost, whatever was reserved), and build the completion.
    async fn answer(&mut self, pos: usize, won: Won) -> ChatResponse {
        let Answer::Reply(reply) = won.answer else {
            unreachable!("a send turn answers with a reply")
        };
        let gw = self.gw.clone();
        let slot = &gw.inner.slots[self.plan[pos]];
        let model = reply
            .model
            .clone()
            .unwrap_or_else(|| slot.spec.provider.model().to_owned());
        self.record_success(slot, &model, won.attempt, won.latency);
        let usage = reply.usage.as_ref();
        check_usage(&gw, &self.route.name, slot, &model, won.limits, usage);
        let cost = cost_of(reply.reported_cost, usage, slot.price);
        if let Some(r) = won.reservation {
            r.settle(self.state().as_ref(), cost).await;
        }
        let completion = Completion {
            text: reply.text,
            tool_calls: reply.tool_calls,
            finish_reason: reply.finish_reason,
            model,
            usage: reply.usage,
            cost,
            provider_latency: reply.reported_latency,
            max_tokens_applied: won.limits.applied,
        };
        let attempts = std::mem::take(&mut self.attempts);
        self.response(slot, completion, attempts)
    }

    /// Record a successful attempt (its latency feeds the provider's average).
    pub(super) fn record_success(
        &mut self,
        slot: &Slot,
        model: &str,
        attempt: u32,
        latency: Duration,
    ) {
        slot.observe_latency(latency.as_secs_f64() * 1000.0);
        self.record(Attempt {
            provider: slot.spec.name.clone(),
            model: model.to_owned(),
            attempt,
            outcome: Outcome::Success,
            status: None,
            latency,
        });
    }

    /// The completion `slot` gave, with the request's trail (`attempts`) and latency.
    pub(super) fn response(
        &self,
        slot: &Slot,
        c: Completion,
        attempts: Vec<Attempt>,
    ) -> ChatResponse {
        ChatResponse {
            text: c.text,
            tool_calls: c.tool_calls,
            finish_reason: c.finish_reason,
            provider: slot.spec.name.clone(),
            model: c.model,
            failed_over: failed_over(&attempts, &slot.spec.name),
            usage: c.usage,
            cost: c.cost,
            attempts,
            latency: self.gw.inner.clock.now() - self.started,
            provider_latency: c.provider_latency,
            max_tokens_applied: c.max_tokens_applied,
        }
    }
}

/// What a completion says, apart from the request's trail and timing.
pub(super) struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<FinishReason>,
    pub model: String,
    pub usage: Option<Usage>,
    pub cost: Option<Money>,
    pub provider_latency: Option<Duration>,
    pub max_tokens_applied: Option<u32>,
}

/// True when the trail shows any provider other than `answering` tried or skipped.
pub(super) fn failed_over(attempts: &[Attempt], answering: &str) -> bool {
    attempts.iter().any(|a| a.provider != answering)
}

/// The route's budget (if any) followed by the caller's.
fn budgets_of(route: &Route, opts: &CallOptions) -> Vec<Budget> {
    let mut budgets = Vec::with_capacity(1 + opts.budgets.len());
    if let Some(limit) = route.budget {
        budgets.push(Budget {
            scope: budget_scope(&route.name),
            limit,
        });
    }
    budgets.extend(opts.budgets.iter().cloned());
    budgets
}

/// Open a stream and read up to its first content chunk (or its finish signal). The
/// connection must be accepted within `timeout`.
async fn open_stream(
    provider: &dyn crate::provider::Provider,
    req: &ChatRequest,
    timeout: Duration,
) -> Result<Answer, ProviderError> {
    let mut stream = tokio::time::timeout(timeout, provider.stream(req))
        .await
        .map_err(|_| {
            ProviderError::new(
                ErrorKind::Timeout,
                format!("no response within {}ms", timeout.as_millis()),
            )
        })??;
    let mut head = Vec::new();
    loop {
        match stream.next().await {
            Some(Ok(chunk)) => {
                let commit = chunk.has_content() || chunk.finish_reason.is_some();
                head.push(chunk);
                if commit {
                    return Ok(Answer::Opened { stream, head });
                }
            }
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ProviderError::new(
                    ErrorKind::Malformed,
                    "stream closed before any content or finish signal",
                ))
            }
        }
    }
}

/// Tell observers when a call's reported usage passed what it was allowed (output) or
/// what its reservation assumed (input). The budget may then be overspent by the
/// difference; the call is still settled at its real cost.
pub(super) fn check_usage(
    gw: &Gateway,
    route: &str,
    slot: &Slot,
    model: &str,
    limits: Limits,
    usage: Option<&Usage>,
) {
    let Some(u) = usage else { return };
    let output_over = limits.output.is_some_and(|n| u.output_tokens > n);
    let input_over = limits.input.is_some_and(|n| u.input_tokens > n);
    if !(output_over || input_over) {
        return;
    }
    let overrun = Overrun {
        provider: slot.spec.name.clone(),
        model: model.to_owned(),
        output_allowed: limits.output,
        output_reported: u.output_tokens,
        input_bound: limits.input,
        input_reported: u.input_tokens,
    };
    for o in &gw.inner.observers {
        o.on_overrun(route, &overrun);
    }
}

/// The exact cost of a call: what the provider billed, else usage × price; `None` when
/// either is unknown.
pub(super) fn cost_of(
    reported: Option<Money>,
    usage: Option<&crate::chat::Usage>,
    price: Option<Price>,
) -> Option<Money> {
    reported.or_else(|| Some(price?.cost(usage?)))
}
