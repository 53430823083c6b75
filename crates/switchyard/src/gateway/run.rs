//! One request's journey through a route.
//!
//! For each planned candidate: budget-unpriced check → breaker admission → reservation →
//! the retry loop under the deadline → breaker verdict → settle or release → answer, fail
//! over, or return. Guards give back a probe lease and a reservation if the caller drops
//! the request mid-flight.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{budget_scope, Gateway, Slot};
use crate::breaker::{Admission, Now, Op, SkipReason};
use crate::chat::{ChatRequest, ChatResponse, ProviderReply};
use crate::cost::{estimate_cost, BudgetState, Money, Price};
use crate::error::{AttemptError, ErrorKind, GatewayError, ProviderError};
use crate::observe::{Attempt, Outcome};
use crate::retry::{self, Backoff, Decision};
use crate::route::{plan, Candidate, Route};
use crate::state::{Cleanup, SharedState};

/// How one provider's turn ended.
enum TurnEnd {
    Answered(Box<ChatResponse>),
    Skipped,
    Failed(ProviderError),
    Refused(BudgetState),
}

/// One request in flight.
pub(super) struct Run<'a> {
    gw: &'a Gateway,
    route: &'a Route,
    req: &'a ChatRequest,
    started: Instant,
    deadline: Instant,
    request_index: u64,
    attempts: Vec<Attempt>,
    errors: Vec<AttemptError>,
    /// Set when the deadline cut a turn short or left candidates untried.
    deadline_hit: bool,
    rng: fastrand::Rng,
}

impl<'a> Run<'a> {
    pub(super) fn new(gw: &'a Gateway, route: &'a Route, req: &'a ChatRequest) -> Self {
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
            gw,
            route,
            req,
            started,
            deadline: started + route.deadline,
            request_index,
            attempts: Vec::new(),
            errors: Vec::new(),
            deadline_hit: false,
            rng,
        }
    }

    pub(super) async fn execute(mut self) -> Result<ChatResponse, GatewayError> {
        for i in self.plan() {
            let slot = &self.gw.inner.slots[i];
            if self.time_left().is_zero() {
                self.deadline_hit = true;
                break;
            }
            match self.turn(slot).await {
                TurnEnd::Answered(resp) => return Ok(*resp),
                TurnEnd::Skipped => {}
                TurnEnd::Refused(books) => return Err(self.refused(books)),
                TurnEnd::Failed(err) => {
                    if !self.route.policy_for(err.kind).fail_over {
                        return Err(GatewayError::Provider {
                            provider: slot.spec.name.clone(),
                            error: err,
                            attempts: self.attempts,
                        });
                    }
                }
            }
        }
        Err(if self.deadline_hit {
            GatewayError::DeadlineExceeded {
                deadline: self.route.deadline,
                errors: self.errors,
                attempts: self.attempts,
            }
        } else {
            GatewayError::AllFailed {
                errors: self.errors,
                attempts: self.attempts,
            }
        })
    }

    fn plan(&self) -> Vec<usize> {
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

    fn time_left(&self) -> Duration {
        self.deadline
            .saturating_duration_since(self.gw.inner.clock.now())
    }

    fn now(&self) -> Now {
        Now {
            ms: self.gw.inner.clock.unix_ms(),
            request: self.request_index,
        }
    }

    fn state(&self) -> &Arc<dyn SharedState> {
        &self.gw.inner.state
    }

    async fn breaker(&self, slot: &Slot, op: Op) -> crate::breaker::Applied {
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

    fn record(&mut self, attempt: Attempt) {
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
    async fn turn(&mut self, slot: &Slot) -> TurnEnd {
        if self.route.budget.is_some() && slot.price.is_none() && !self.route.allow_unpriced {
            return self.skip(slot, SkipReason::Unpriced);
        }
        let lease_for = slot.spec.timeout.min(self.time_left());
        let admission = self.breaker(slot, Op::Admit { lease_for }).await.admission;
        let lease = match admission {
            Admission::Reject(reason) => return self.skip(slot, reason),
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
        let reservation = match self.reserve(slot).await {
            Ok(r) => r,
            Err(books) => return TurnEnd::Refused(books),
        };
        let end = self.attempts_loop(slot, lease).await;
        if let Some(p) = probe.as_mut() {
            p.disarm(); // the breaker has its verdict (or has released the lease itself)
        }
        match end {
            Ok((reply, latency, attempt)) => {
                let resp = self
                    .answer(slot, reply, latency, attempt, reservation)
                    .await;
                self.breaker(slot, Op::Succeeded { lease }).await;
                TurnEnd::Answered(Box::new(resp))
            }
            Err(err) => {
                if let Some(mut r) = reservation {
                    r.release_now();
                }
                let effect = self.route.policy_for(err.kind).breaker;
                self.breaker(
                    slot,
                    Op::TurnFailed {
                        kind: err.kind,
                        effect,
                        lease,
                    },
                )
                .await;
                TurnEnd::Failed(err)
            }
        }
    }

    /// Reserve the request's estimated cost against the route's budget.
    async fn reserve(&self, slot: &Slot) -> Result<Option<Reservation>, BudgetState> {
        let Some(limit) = self.route.budget else {
            return Ok(None);
        };
        let amount = estimate_cost(self.req, &slot.price.unwrap_or_default());
        let scope = budget_scope(&self.route.name);
        self.state().reserve(&scope, limit, amount).await?;
        Ok(Some(Reservation {
            amount,
            guard: Guard::new(
                self.state(),
                Cleanup::ReleaseBudget {
                    scope: scope.clone(),
                    amount,
                },
            ),
            scope,
        }))
    }

    fn refused(self, books: BudgetState) -> GatewayError {
        GatewayError::BudgetExceeded {
            scope: budget_scope(&self.route.name),
            limit: books.limit,
            spent: books.spent,
            reserved: books.reserved,
            attempts: self.attempts,
        }
    }

    /// The retry loop: attempts on one provider until success, a stop, or the deadline.
    async fn attempts_loop(
        &mut self,
        slot: &Slot,
        lease: Option<u64>,
    ) -> Result<(ProviderReply, Duration, u32), ProviderError> {
        let max_attempts = slot
            .spec
            .max_attempts
            .unwrap_or(self.route.retry.max_attempts);
        let mut backoff = Backoff::with_rng(
            self.route.retry.base_delay,
            self.route.retry.max_delay,
            self.rng.fork(),
        );
        let mut attempt = 0;
        loop {
            attempt += 1;
            let time_left = self.time_left();
            let timeout = slot.spec.timeout.min(time_left);
            if let Some(lease) = lease {
                let until_ms = self.now().ms + crate::clock::duration_ms(timeout);
                self.breaker(slot, Op::Renew { lease, until_ms }).await;
            }
            let started = self.gw.inner.clock.now();
            let result = tokio::time::timeout(timeout, slot.spec.provider.send(self.req)).await;
            let latency = self.gw.inner.clock.now() - started;
            let err = match result {
                Ok(Ok(reply)) => return Ok((reply, latency, attempt)),
                Ok(Err(e)) => e,
                Err(_) => {
                    if timeout < slot.spec.timeout {
                        self.deadline_hit = true;
                    }
                    ProviderError::new(
                        ErrorKind::Timeout,
                        format!("no response within {}ms", timeout.as_millis()),
                    )
                }
            };
            self.record_failure(slot, attempt, &err, latency);
            let policy = self.route.policy_for(err.kind);
            self.breaker(
                slot,
                Op::AttemptFailed {
                    kind: err.kind,
                    effect: policy.breaker,
                    retry_after: err.retry_after,
                    lease,
                },
            )
            .await;
            let wait = backoff.next().unwrap_or_default();
            let time_left = self.time_left();
            match retry::decide(
                &policy,
                &self.route.retry,
                max_attempts,
                attempt,
                &err,
                wait,
                time_left,
            ) {
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

    fn record_failure(
        &mut self,
        slot: &Slot,
        attempt: u32,
        err: &ProviderError,
        latency: Duration,
    ) {
        self.errors.push(AttemptError {
            provider: slot.spec.name.clone(),
            error: err.clone(),
        });
        self.record(Attempt {
            provider: slot.spec.name.clone(),
            model: slot.spec.provider.model().to_owned(),
            attempt,
            outcome: Outcome::Failed {
                kind: err.kind,
                message: err.message.clone(),
            },
            status: err.status,
            latency,
        });
    }

    /// Record the success, settle the reservation, and build the completion.
    async fn answer(
        &mut self,
        slot: &Slot,
        reply: ProviderReply,
        latency: Duration,
        attempt: u32,
        reservation: Option<Reservation>,
    ) -> ChatResponse {
        slot.observe_latency(latency.as_secs_f64() * 1000.0);
        let model = reply
            .model
            .clone()
            .unwrap_or_else(|| slot.spec.provider.model().to_owned());
        self.record(Attempt {
            provider: slot.spec.name.clone(),
            model: model.clone(),
            attempt,
            outcome: Outcome::Success,
            status: None,
            latency,
        });
        let cost = cost_of(&reply, slot.price);
        if let Some(r) = reservation {
            r.settle(self.state().as_ref(), cost).await;
        }
        let failed_over = self.attempts.iter().any(|a| a.provider != slot.spec.name);
        ChatResponse {
            text: reply.text,
            tool_calls: reply.tool_calls,
            finish_reason: reply.finish_reason,
            provider: slot.spec.name.clone(),
            model,
            failed_over,
            usage: reply.usage.unwrap_or_default(),
            cost,
            attempts: std::mem::take(&mut self.attempts),
            latency: self.gw.inner.clock.now() - self.started,
            provider_latency: reply.reported_latency,
        }
    }
}

/// The exact cost of a reply: what the provider billed, else usage × price; `None` when
/// either is unknown.
fn cost_of(reply: &ProviderReply, price: Option<Price>) -> Option<Money> {
    reply
        .reported_cost
        .or_else(|| Some(price?.cost(reply.usage.as_ref()?)))
}

/// Runs a [`Cleanup`] when dropped unless disarmed: what a cancelled request still owes.
struct Guard {
    state: Arc<dyn SharedState>,
    cleanup: Option<Cleanup>,
}

impl Guard {
    fn new(state: &Arc<dyn SharedState>, cleanup: Cleanup) -> Self {
        Self {
            state: Arc::clone(state),
            cleanup: Some(cleanup),
        }
    }

    fn disarm(&mut self) {
        self.cleanup = None;
    }

    fn fire(&mut self) {
        if let Some(c) = self.cleanup.take() {
            self.state.cleanup(c);
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.fire();
    }
}

/// A budget reservation, released on drop unless settled.
struct Reservation {
    scope: String,
    amount: Money,
    guard: Guard,
}

impl Reservation {
    async fn settle(mut self, state: &dyn SharedState, cost: Option<Money>) {
        self.guard.disarm();
        // Unknown cost (unpriced but allowed, or no usage reported): keep the estimate.
        state
            .settle(&self.scope, self.amount, cost.unwrap_or(self.amount))
            .await;
    }

    fn release_now(&mut self) {
        self.guard.fire();
    }
}
