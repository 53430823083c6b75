//! One request's journey through a route: the attempt loop every request runs, plain or
//! streamed.
//!
//! For each planned candidate: budget-unpriced check → the request's fields
//! (`fields_for`: a degradable field it cannot honour dropped, a contract one a skip, by
//! the route's `unsupported_fields`; `docs/fields.md`) → breaker admission → the output
//! bound (the route's default `max_tokens` is set when a budgeted request's worst case is
//! otherwise unknown) → reservation of the worst case (`budget.rs`) → the retry loop under
//! the deadline (`attempt.rs`) → breaker verdict → settle or release (and an overrun alert
//! when the reported usage passed the bound) → answer, fail over, or return (`answer.rs`).
//! Guards give back a probe lease and a reservation if the caller drops the request
//! mid-flight. Streams use the same loop, with "answered" meaning "the first content chunk
//! arrived" (the commit point); the committed stream (`gateway/stream/`) then owns the
//! run, and its rescues take their turns on it. An embeddings request runs the same loop
//! with [`Call::Embed`]: no output bound, its inputs' token bound reserved at the input
//! price, and its vectors settled in `embed.rs`.

mod answer;
mod attempt;
mod budget;
mod embed;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold::Guard;
pub(super) use super::hold::Reservation;
use super::{budget_scope, Budget, CallOptions, Gateway, Slot};
use crate::breaker::{Admission, Op, SkipReason};
use crate::chat::{ChatChunk, ChatRequest, ChatResponse, Field, FieldSet, ProviderReply, Support};
use crate::clock::UnixMillis;
use crate::cost::{BudgetState, Money};
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::{AttemptError, ErrorKind, GatewayError, ProviderError};
use crate::observe::{Attempt, Outcome};
use crate::provider::ChunkStream;
use crate::route::{plan, Api, Candidate, Probe, Route, UnsupportedFields};
use crate::state::{Cleanup, SharedState};

pub(super) use answer::{failed_over, reported, Completion};
pub(super) use budget::{check_usage, cost_of, Limits};

/// How one provider's turn ended.
#[allow(clippy::large_enum_variant)] // short-lived, on the stack
pub(super) enum TurnEnd {
    Answered(Won),
    Skipped,
    Failed(ProviderError),
    Refused(String, BudgetState, Money),
}

/// What kind of call a turn makes, and the request it carries.
#[derive(Clone, Copy)]
pub(super) enum Call<'r> {
    /// A plain chat completion.
    Send(&'r ChatRequest),
    /// A streamed chat completion, answered at its commit point.
    Stream(&'r ChatRequest),
    /// An embeddings call.
    Embed(&'r EmbeddingRequest),
}

impl<'r> Call<'r> {
    /// The chat request of a chat call.
    fn chat(self) -> Option<&'r ChatRequest> {
        match self {
            Self::Send(req) | Self::Stream(req) => Some(req),
            Self::Embed(_) => None,
        }
    }

    /// The same kind of call carrying `req` instead (a chat request the turn bounded).
    fn with_chat<'a>(self, req: &'a ChatRequest) -> Call<'a>
    where
        'r: 'a,
    {
        match self {
            Self::Send(_) => Call::Send(req),
            Self::Stream(_) => Call::Stream(req),
            Self::Embed(e) => Call::Embed(e),
        }
    }
}

/// Why a request stops before trying every candidate.
pub(super) enum Stop {
    /// A budget (scope, books) refused before dispatch.
    Refused(String, BudgetState, Money),
    /// An error the route does not fail over, returned as itself.
    Returned {
        provider: String,
        error: ProviderError,
    },
}

/// A successful call's result.
#[allow(clippy::large_enum_variant)] // one per call, moved once: boxing costs more
pub(super) enum Answer {
    Reply(ProviderReply),
    /// An embeddings call's vectors (one per input).
    Vectors(EmbeddingReply),
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
    /// The HTTP status of the answer, when the call was scoped (`propagate`).
    pub status: Option<u16>,
    pub reservation: Option<Reservation>,
    pub limits: Limits,
    /// The request's fields the provider was called without (`docs/fields.md`).
    pub dropped: FieldSet,
}

/// One request in flight: the runner a plain request and a stream (through its rescues)
/// share, and the trail it leaves.
pub(super) struct Run {
    pub gw: Gateway,
    pub route: Arc<Route>,
    pub started: Instant,
    pub deadline: Instant,
    /// Slot indices in the order the route tries them (fixed when the first turn starts).
    pub plan: Vec<usize>,
    pub attempts: Vec<Attempt>,
    pub errors: Vec<AttemptError>,
    /// Set when the deadline cut a turn short or left candidates untried.
    pub deadline_hit: bool,
    /// Every budget this request spends against: the route's, then the caller's.
    pub budgets: Vec<Budget>,
    /// What every upstream call carries (request id, trace context).
    pub upstream: crate::propagate::Upstream,
    /// The earliest moment a rate-limited candidate accepts again (its Retry-After, or the
    /// end of its cooling): what a request that met only rate limits tells its caller.
    retry_at: Option<UnixMillis>,
    /// Set once the caller has (or will be given) the outcome. A run dropped before
    /// that was abandoned by its caller: `Drop` tells observers, with the trail so far.
    /// A committed stream owns its run and sets this when it reports (`stream/live.rs`).
    pub settled: bool,
    /// The fields of `docs/fields.md` the request uses (set when the first turn starts).
    pub fields: FieldSet,
    /// A wildcard route's template, built for the model the client named: the plan's
    /// [`RESOLVED`] entry. `None` on other routes.
    pub resolved: Option<Arc<Slot>>,
    /// The latest turn was admitted as the half-open circuit's probe: every try recorded
    /// from then on (its attempts, and a stream it opened when that ends) is marked so.
    probing: bool,
    /// A committed stream's continuation is taking its turn: its request carries another
    /// provider's text as a prefill, so a refusal that blames the request is the rescue's
    /// failure, not this provider's ([`Run::declines`]). Set by `stream/rescue.rs`.
    pub continuing: bool,
    /// The latest attempt timed out for the request's own size (`attempt::outgrows`): not
    /// retried there, and nothing to the provider's breaker ([`Run::policy_for`]).
    outgrown: bool,
    rng: fastrand::Rng,
}

/// The plan entry that stands for [`Run::resolved`] (never a registered slot's index).
pub(in crate::gateway) const RESOLVED: usize = usize::MAX;

/// The slots a run's plan indexes, held apart from the run so a turn can borrow one while
/// the run changes (two reference counts, no allocation).
pub(in crate::gateway) struct Slots {
    pub gw: Gateway,
    resolved: Option<Arc<Slot>>,
}

impl Slots {
    /// The slot plan entry `i` names.
    pub fn get(&self, i: usize) -> &Slot {
        pick(&self.gw, self.resolved.as_deref(), i)
    }
}

/// Plan entry `i`: the resolved template for [`RESOLVED`], else a registered slot.
fn pick<'a>(gw: &'a Gateway, resolved: Option<&'a Slot>, i: usize) -> &'a Slot {
    match resolved {
        Some(slot) if i == RESOLVED => slot,
        _ => &gw.inner.slots[i],
    }
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
            match self.route.api {
                Api::Chat => o.on_complete(&self.route.name, Err(&err)),
                Api::Embeddings => o.on_embedded(&self.route.name, Err(&err)),
            }
        }
    }
}

impl Run {
    pub(super) fn new(
        gw: &Gateway,
        route: &Arc<Route>,
        resolved: Option<Arc<Slot>>,
        opts: &CallOptions,
    ) -> Self {
        let started = gw.inner.clock.now();
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
            plan: Vec::new(),
            attempts: Vec::new(),
            errors: Vec::new(),
            deadline_hit: false,
            retry_at: None,
            budgets: budgets_of(route, opts),
            upstream: opts.upstream.clone(),
            settled: false,
            fields: FieldSet::EMPTY,
            resolved,
            probing: false,
            continuing: false,
            outgrown: false,
            rng,
        }
    }

    /// The slots the plan indexes, to borrow one across a `&mut self` call.
    pub(in crate::gateway) fn slots(&self) -> Slots {
        Slots {
            gw: self.gw.clone(),
            resolved: self.resolved.clone(),
        }
    }

    /// The slot plan entry `i` names.
    pub(in crate::gateway) fn slot_at(&self, i: usize) -> &Slot {
        pick(&self.gw, self.resolved.as_deref(), i)
    }

    /// A non-streaming request, start to finish.
    pub(super) async fn execute(mut self, req: &ChatRequest) -> Result<ChatResponse, GatewayError> {
        let result = match self.first_answer(Call::Send(req)).await {
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
        call: Call<'_>,
    ) -> Result<(usize, Won), GatewayError> {
        self.plan = self.order();
        self.fields = call
            .chat()
            .map_or(FieldSet::EMPTY, ChatRequest::fields_used);
        for pos in 0..self.plan.len() {
            match self.candidate(self.plan[pos], call).await {
                Ok(Some(won)) => {
                    if self.plan[pos] == RESOLVED {
                        self.keep_answered();
                    }
                    return Ok((pos, won));
                }
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
        call: Call<'_>,
    ) -> Result<Option<Won>, Stop> {
        if self.time_left().is_zero() {
            self.deadline_hit = true;
            return Ok(None);
        }
        let slots = self.slots(); // the slot outlives the turn's `&mut self`
        let slot = slots.get(i);
        match self.turn(slot, call).await {
            TurnEnd::Answered(won) => Ok(Some(won)),
            TurnEnd::Skipped => Ok(None),
            TurnEnd::Refused(scope, books, needed) => Err(Stop::Refused(scope, books, needed)),
            TurnEnd::Failed(err) if !self.route.policy_for(err.kind).fail_over => {
                Err(Stop::Returned {
                    provider: slot.spec.name.clone(),
                    error: err,
                })
            }
            TurnEnd::Failed(_) => Ok(None),
        }
    }

    /// The wildcard model on trial answered: from now on it is the route's slot of that
    /// name (kept, while the route has room), and the answer is reported under it.
    fn keep_answered(&mut self) {
        let Some(trial) = self.resolved.take() else {
            return;
        };
        let tried = trial.spec.name.clone();
        let kept = self.gw.keep_answered(&self.route, trial);
        // the turn's earlier attempts were this model's too
        for a in (self.attempts.iter_mut().rev()).take_while(|a| a.provider == tried) {
            a.provider.clone_from(&kept.spec.name);
        }
        self.resolved = Some(kept);
    }

    /// The error for a stop, carrying the trail so far.
    pub(super) fn stopped(&mut self, stop: Stop) -> GatewayError {
        let attempts = std::mem::take(&mut self.attempts);
        match stop {
            Stop::Refused(scope, books, needed) => GatewayError::BudgetExceeded {
                scope,
                needed,
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
        if let Some(err) = self.none_can_honour() {
            return err;
        }
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
            Outcome::Skipped { reason, .. } => *reason == SkipReason::Cooling,
            Outcome::Success
            | Outcome::Rescue { .. }
            | Outcome::Diverged { .. }
            | Outcome::Declined { .. } => false,
        });
        let every = (self.plan.iter()).all(|&i| {
            let name = &self.slot_at(i).spec.name;
            self.attempts.iter().any(|a| a.provider == *name)
        });
        let at = self.retry_at.filter(|_| only && every)?;
        Some(Duration::from_millis(at.saturating_sub(self.now())))
    }

    /// When every candidate was skipped as unable to honour the request's fields: the
    /// client's error naming the fields and the providers.
    fn none_can_honour(&mut self) -> Option<GatewayError> {
        let mut fields = FieldSet::EMPTY;
        let mut providers = Vec::new();
        for a in &self.attempts {
            let Outcome::Skipped {
                reason: SkipReason::CannotHonour,
                fields: named,
            } = &a.outcome
            else {
                return None;
            };
            // the fields the skip named: declared unsupported, or unsupported in
            // combination for this request (`Provider::cannot_honour`)
            for f in Field::ALL
                .into_iter()
                .filter(|f| named.iter().any(|n| n == f.name()))
            {
                fields.insert(f);
            }
            providers.push(a.provider.clone());
        }
        if providers.is_empty() {
            return None;
        }
        Some(GatewayError::CannotHonour {
            fields: fields.names().into_iter().map(str::to_owned).collect(),
            providers,
            attempts: std::mem::take(&mut self.attempts),
        })
    }

    /// The request's fields for which `slot`'s provider declares `support`.
    pub(super) fn fields_with(&self, slot: &Slot, support: Support) -> FieldSet {
        if self.fields.is_empty() {
            return FieldSet::EMPTY;
        }
        self.fields.with(|f| slot.support(f), support)
    }

    /// A rate-limited candidate accepts again at `at_ms`.
    fn note_retry_at(&mut self, at_ms: UnixMillis) {
        self.retry_at = Some(self.retry_at.map_or(at_ms, |t| t.min(at_ms)));
    }

    /// Note when a candidate skipped as cooling accepts again.
    async fn note_cooling(&mut self, slot: &Slot) {
        let now = self.now();
        let breaker = self.state().breaker(&slot.spec.name).await;
        let until = breaker.snapshot(now).cooling_until_ms;
        self.note_retry_at(until.unwrap_or(now));
    }

    /// Slot indices in the order the route tries them.
    fn order(&self) -> Vec<usize> {
        let template = self.resolved.is_some();
        let slots: Vec<usize> = (self.route.providers.iter().enumerate())
            .filter_map(|(k, name)| match k {
                0 if template => Some(RESOLVED),
                _ => self.gw.inner.by_name.get(name).copied(),
            })
            .collect();
        let candidates: Vec<Candidate> = slots
            .iter()
            .map(|&i| {
                let s = self.slot_at(i);
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

    pub(super) fn now(&self) -> UnixMillis {
        self.gw.inner.clock.unix_ms()
    }

    fn state(&self) -> &Arc<dyn SharedState> {
        &self.gw.inner.state
    }

    pub(super) async fn breaker(&self, slot: &Slot, op: Op) -> crate::breaker::Applied {
        if slot.keep_as.is_some() {
            // a wildcard model on trial has no circuit yet (`wildcard.rs`)
            return crate::breaker::Applied {
                admission: Admission::Admit,
                transition: None,
            };
        }
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
    pub(super) fn record(&mut self, mut attempt: Attempt) {
        // when it began, after the run started: now less its latency (a skip: now)
        let began = (self.gw.inner.clock.now() - self.started).saturating_sub(attempt.latency);
        attempt.start = Some(began);
        attempt.probe = self.probing && attempt.was_called();
        for o in &self.gw.inner.observers {
            o.on_attempt(&self.route.name, &attempt);
        }
        self.attempts.push(attempt);
    }

    /// Skip `slot`: it cannot honour `fields` of the request.
    fn skip_unhonoured(&mut self, slot: &Slot, fields: FieldSet) -> TurnEnd {
        let names = fields.names().into_iter().map(str::to_owned).collect();
        self.skip_naming(slot, SkipReason::CannotHonour, names)
    }

    /// Skip `slot` for `reason`, naming the fields that caused it.
    fn skip_naming(&mut self, slot: &Slot, reason: SkipReason, fields: Vec<String>) -> TurnEnd {
        let model = slot.spec.provider.model().to_owned();
        let mut attempt = Attempt::skipped(&slot.spec.name, &model, reason);
        attempt.outcome = Outcome::Skipped { reason, fields };
        self.record(attempt);
        TurnEnd::Skipped
    }

    fn skip(&mut self, slot: &Slot, reason: SkipReason) -> TurnEnd {
        let model = slot.spec.provider.model().to_owned();
        self.record(Attempt::skipped(&slot.spec.name, &model, reason));
        TurnEnd::Skipped
    }

    /// What `slot` is sent of `req`, by the route's `unsupported_fields`
    /// (`docs/fields.md`): `Ok(None)` for the request as it is; `Ok(Some((copy, dropped)))`
    /// for a copy without the fields it cannot honour that the route lets go; `Err` with
    /// the fields that make it skip. Fields it cannot honour together with the rest of the
    /// request (`Provider::cannot_honour`: a thinking budget `max_tokens` leaves no room
    /// for, a format that needs the tool slot the client's tools use) go too when a
    /// degradable one is among them and the route is not strict; else they skip it.
    fn fields_for(
        &self,
        slot: &Slot,
        req: &ChatRequest,
    ) -> Result<Option<(ChatRequest, FieldSet)>, FieldSet> {
        if self.fields.is_empty() {
            return Ok(None);
        }
        let mode = self.route.unsupported_fields;
        let droppable = |set: FieldSet| match mode {
            UnsupportedFields::Strict => FieldSet::EMPTY,
            UnsupportedFields::Degrade => set.degradable(),
            UnsupportedFields::Drop => set,
        };
        let cannot = self.fields_with(slot, Support::Unsupported);
        let mut dropped = droppable(cannot);
        let skip = cannot.minus(dropped);
        if !skip.is_empty() {
            return Err(skip);
        }
        let mut cleared = (!dropped.is_empty()).then(|| req.without(dropped));
        let provider = &slot.spec.provider;
        let clash = provider.cannot_honour(cleared.as_ref().unwrap_or(req));
        if !clash.is_empty() {
            let go = match mode {
                UnsupportedFields::Strict => FieldSet::EMPTY,
                UnsupportedFields::Degrade | UnsupportedFields::Drop => clash.degradable(),
            };
            if go.is_empty() {
                return Err(clash);
            }
            let fewer = cleared.as_ref().unwrap_or(req).without(go);
            let still = provider.cannot_honour(&fewer);
            if !still.is_empty() {
                return Err(still);
            }
            dropped = dropped.union(go);
            cleared = Some(fewer);
        }
        Ok(cleared.map(|r| (r, dropped)))
    }

    /// One provider's turn: fields, admission, reservation, the retry loop, the verdict.
    async fn turn(&mut self, slot: &Slot, call: Call<'_>) -> TurnEnd {
        if let Call::Send(req) | Call::Stream(req) = call {
            let native = req.native.as_ref().filter(|n| n.required);
            if let Some(n) = native.filter(|n| slot.spec.provider.native_kind() != Some(n.kind)) {
                let fields = n.required_by.clone();
                return self.skip_naming(slot, SkipReason::NeedsNative, fields);
            }
        }
        if !self.budgets.is_empty() && slot.price.is_none() && !self.route.allow_unpriced {
            return self.skip(slot, SkipReason::Unpriced);
        }
        let (cleared, dropped) = match call.chat().map(|req| self.fields_for(slot, req)) {
            Some(Err(fields)) => return self.skip_unhonoured(slot, fields),
            Some(Ok(Some((req, dropped)))) => (Some(req), dropped),
            Some(Ok(None)) | None => (None, FieldSet::EMPTY),
        };
        let call = cleared.as_ref().map_or(call, |req| call.with_chat(req));
        let limit = if self.route.probe == Probe::SingleAttempt {
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
        self.probing = lease.is_some();
        let mut probe = lease.map(|lease| {
            Guard::new(
                self.state(),
                Cleanup::ReleaseProbe {
                    provider: slot.spec.name.clone(),
                    lease,
                },
            )
        });
        let (bounded, mut limits) = self.bounded(slot, call);
        let call = bounded.as_ref().map_or(call, |req| call.with_chat(req));
        let reservation = match self.reserve(slot, call, limits.output).await {
            Ok(r) => r,
            Err((scope, books, needed)) => return TurnEnd::Refused(scope, books, needed),
        };
        limits.input = reservation.as_ref().map(|r| r.input_tokens);
        let mut progress = crate::embedding::EmbeddingProgress::default();
        let end = self.attempts_loop(slot, call, lease, &mut progress).await;
        if let Some(p) = probe.as_mut() {
            p.disarm(); // the breaker gets its verdict below (or releases the lease itself)
        }
        match end {
            Ok((answer, latency, attempt, status)) => {
                self.breaker(slot, Op::Succeeded { lease }).await;
                TurnEnd::Answered(Won {
                    answer,
                    latency,
                    attempt,
                    status,
                    reservation,
                    limits,
                    dropped,
                })
            }
            Err(err) => {
                // what answered calls billed though the turn failed (an embeddings
                // fan-out's), on its last attempt: settled, else nothing was billed
                let spent = (self.attempts.last()).and_then(|a| a.reported.as_ref()?.spent);
                match (reservation, spent) {
                    (Some(r), Some(cost)) => r.settle(self.state().as_ref(), Some(cost)).await,
                    (Some(mut r), None) => r.release_now(),
                    (None, _) => {}
                }
                let effect = self.breaker_effect(&err);
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

    /// A continuation's prefill refused for what it asked (an error blaming the request):
    /// the rescue's failure, recorded as declined and kept from the provider's breaker,
    /// failures and the request's errors. Any other failure of a continuation (a 5xx, a
    /// timeout, a bad key) is the provider's own, as on any call.
    pub(super) fn declines(&self, err: &ProviderError) -> bool {
        self.continuing && err.kind.blame() == crate::error::Blame::Client
    }

    /// What `err` does to the provider's breaker: the route's policy, or nothing for a
    /// declined continuation.
    pub(super) fn breaker_effect(&self, err: &ProviderError) -> crate::error::BreakerEffect {
        if self.declines(err) {
            crate::error::BreakerEffect::Ignore
        } else {
            self.policy_for(err).breaker
        }
    }

    /// The route's policy for `err`; for a timeout the request's own size caused
    /// ([`Run::outgrown`]), no retry on that provider and no breaker effect (a probe that
    /// ends so gives the probe back).
    pub(super) fn policy_for(&self, err: &ProviderError) -> crate::fault::KindPolicy {
        let policy = self.route.policy_for(err.kind);
        if self.outgrown && err.kind == ErrorKind::Timeout {
            return crate::fault::KindPolicy {
                retry: false,
                breaker: crate::error::BreakerEffect::Ignore,
                ..policy
            };
        }
        policy
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
        self.record_failure_spending(slot, model, attempt, err, latency, None);
    }

    /// [`Run::record_failure`], with what the turn it ends billed though it failed
    /// ([`crate::observe::Reported::spent`]).
    pub(super) fn record_failure_spending(
        &mut self,
        slot: &Slot,
        model: &str,
        attempt: u32,
        err: &ProviderError,
        latency: Duration,
        spent: Option<crate::observe::Reported>,
    ) {
        if self.declines(err) {
            let outcome = Outcome::Declined {
                kind: err.kind,
                message: err.message.clone(),
            };
            return self.record(Attempt {
                provider: slot.spec.name.clone(),
                model: model.to_owned(),
                attempt,
                outcome,
                status: err.status,
                latency,
                start: None,
                probe: false, // set by `record`
                reported: None,
            });
        }
        if err.kind == ErrorKind::RateLimited {
            let wait = err.retry_after.map_or(0, crate::clock::duration_ms);
            self.note_retry_at(self.now().saturating_add(wait));
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
            start: None,
            probe: false, // set by `record`
            reported: spent,
        });
    }
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
