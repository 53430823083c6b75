//! The retry loop on one provider: attempts under their timeouts (a half-open probe's is
//! one attempt under the probe limit), each failure recorded and told to the breaker, and
//! the backoff between them; a stream attempt reads up to its commit point.
//!
//! A plain call's timeout is judged against the request's size ([`outgrows`]): one that
//! asked for more output than a healthy provider writes within the timeout proves nothing
//! about the provider, so it is not retried there and does not count against its breaker
//! (docs/design.md, "Circuit breaker").

use std::time::Duration;

use futures_util::StreamExt as _;

use super::{Answer, Call, Run};
use crate::breaker::Op;
use crate::chat::ChatRequest;
use crate::chat::Usage;
use crate::embedding::{EmbeddingProgress, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};
use crate::gateway::{ProviderSpec, Slot};
use crate::observe::Reported;
use crate::retry::{self, Backoff, Decision};
use crate::route::Probe;

/// The slowest pace, in output tokens a second, at which a healthy provider is taken to
/// write an answer: a plain call asking for more than its timeout allows at this pace may
/// time out for its own size. Low on purpose (large models under load write 20–40 a
/// second): a client must not be able to pass off a dead provider's timeout as its own.
pub(crate) const HEALTHY_PACE: u64 = 20;

/// Does `req` ask for more output than a healthy provider writes within `timeout`? Only the
/// request's own `max_tokens` (as sent) says: a request that names no size does not outgrow
/// any timeout.
#[must_use]
pub(crate) fn outgrows(req: &ChatRequest, timeout: Duration) -> bool {
    req.max_tokens.is_some_and(|asked| {
        u128::from(asked) * 1000 > timeout.as_millis() * u128::from(HEALTHY_PACE)
    })
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
    fn of(spec: &ProviderSpec) -> Self {
        Self {
            timeout: spec.timeout,
            first_token: spec.first_token_timeout,
        }
    }

    /// A probe's: the probe limit bounds the first token too.
    fn probe(spec: &ProviderSpec) -> Self {
        let timeout = spec.probe_limit();
        Self {
            timeout,
            first_token: spec.first_token_timeout.min(timeout),
        }
    }
}

impl Run {
    /// The retry loop: attempts on one provider until success, a stop, or the deadline.
    pub(super) async fn attempts_loop(
        &mut self,
        slot: &Slot,
        call: Call<'_>,
        lease: Option<u64>,
        progress: &mut EmbeddingProgress,
    ) -> Result<(Answer, Duration, u32, Option<u16>), ProviderError> {
        // A half-open probe is one attempt under the probe's own limit: its outcome alone
        // decides the circuit, and a failure fails the request over at once.
        let (max_attempts, limits) = match lease {
            Some(_) if self.route.probe == Probe::SingleAttempt => {
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
            self.outgrown = false;
            if let Some(lease) = lease {
                let timeout = limits.timeout.min(self.time_left());
                let until_ms = self.now() + crate::clock::duration_ms(timeout);
                self.breaker(slot, Op::Renew { lease, until_ms }).await;
            }
            let started = self.gw.inner.clock.now();
            let (result, status) = if self.upstream.is_empty() {
                (self.attempt(slot, call, limits, progress).await, None)
            } else {
                // the call's headers name the span of the trail entry it will become
                let headers = self.upstream.headers(self.attempts.len());
                // boxed: the task-local scope would otherwise move the attempt's whole
                // future once more per call
                let attempt = Box::pin(self.attempt(slot, call, limits, progress));
                let (result, returned) = crate::propagate::scoped(headers, attempt).await;
                if let Some(h) = returned.headroom {
                    for o in &self.gw.inner.observers {
                        o.on_headroom(&slot.spec.name, &h);
                    }
                }
                (result, returned.status)
            };
            let latency = self.gw.inner.clock.now() - started;
            let err = match result {
                Ok(answer) => return Ok((answer, latency, attempt, status)),
                Err(e) => e,
            };
            let policy = self.policy_for(&err);
            let wait = backoff.next().unwrap_or_default();
            let (retry, left) = (&self.route.retry, self.time_left());
            let decision = retry::decide(&policy, retry, max_attempts, attempt, &err, wait, left);
            // the turn ends here: what its answered calls billed goes on this attempt
            let spent = matches!(decision, Decision::Stop(_))
                .then(|| spent(slot, progress))
                .flatten();
            let model = slot.spec.provider.model();
            self.record_failure_spending(slot, model, attempt, &err, latency, spent);
            let op = Op::AttemptFailed {
                kind: err.kind,
                effect: policy.breaker,
                retry_after: err.retry_after,
                lease,
            };
            if !self.declines(&err) {
                self.breaker(slot, op).await; // a declined continuation is not its failure
            }
            match decision {
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
        call: Call<'_>,
        limits: AttemptLimits,
        progress: &mut EmbeddingProgress,
    ) -> Result<Answer, ProviderError> {
        let left = self.time_left();
        let timeout = limits.timeout.min(left);
        let clamped = left < limits.timeout;
        let provider = &slot.spec.provider;
        let result = match call {
            Call::Send(req) => tokio::time::timeout(timeout, provider.send(req))
                .await
                .map(|r| r.map(Answer::Reply)),
            Call::Embed(req) => {
                tokio::time::timeout(timeout, provider.embed_resuming(req, progress))
                    .await
                    .map(|r| r.and_then(|reply| one_per_input(req, reply).map(Answer::Vectors)))
            }
            Call::Stream(req) => {
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
            let mut message = format!("no response within {}ms", timeout.as_millis());
            if let Call::Send(req) = call {
                self.outgrown = outgrows(req, timeout);
                if self.outgrown {
                    let asked = req.max_tokens.unwrap_or_default();
                    message.push_str(&format!(
                        " for up to {asked} output tokens: the request's size, not counted against the provider"
                    ));
                }
            }
            Err(ProviderError::new(ErrorKind::Timeout, message))
        })
    }
}

/// What a provider's embeddings calls in `progress` billed: their usage (input tokens)
/// and its cost at `slot`'s price (usage unreported: the price of their inputs' token
/// bound, as reserved); `None` when no call was answered.
fn spent(slot: &Slot, progress: &EmbeddingProgress) -> Option<Reported> {
    let calls = progress.calls();
    if calls == 0 {
        return None;
    }
    let usage = progress.usage();
    let bound = Usage {
        input_tokens: progress.input_bound(),
        ..Usage::default()
    };
    let cost = slot
        .price
        .map(|p| p.cost_of_calls(usage.as_ref().unwrap_or(&bound), calls));
    Some(Reported {
        tokens: usage.map(|u| (u.input_tokens, 0)),
        spent: cost,
        ..Reported::default()
    })
}

/// An embeddings reply that has exactly one vector per input; any other is `Malformed`
/// (vectors cannot be matched to inputs, and a short answer must not be billed as whole).
fn one_per_input(
    req: &EmbeddingRequest,
    reply: EmbeddingReply,
) -> Result<EmbeddingReply, ProviderError> {
    if reply.vectors.len() == req.inputs.len() {
        return Ok(reply);
    }
    Err(ProviderError::new(
        ErrorKind::Malformed,
        format!(
            "{} embedding(s) for {} input(s)",
            reply.vectors.len(),
            req.inputs.len()
        ),
    ))
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
