//! A plain request's answer: the success recorded, the usage checked, the reservation
//! settled, and the completion built (the one builder a committed stream uses too).

use std::time::Duration;

use super::{check_usage, cost_of, Answer, Run, Won};
use crate::chat::{ChatResponse, FieldSet, FinishReason, Support, Thinking, ToolCall, Usage};
use crate::cost::Money;
use crate::gateway::Slot;
use crate::observe::{Attempt, Outcome, Reported};

impl Run {
    /// Record the success, check the usage against the limits, settle the reservation
    /// (at the real cost, whatever was reserved), and build the completion.
    pub(super) async fn answer(&mut self, pos: usize, won: Won) -> ChatResponse {
        let Answer::Reply(reply) = won.answer else {
            unreachable!("a send turn answers with a reply")
        };
        let slots = self.slots();
        let (gw, slot) = (&slots.gw, slots.get(self.plan[pos]));
        let model = reply
            .model
            .clone()
            .unwrap_or_else(|| slot.spec.provider.model().to_owned());
        let reported = reported(
            reply.id,
            reply.finish_reason.as_ref(),
            reply.usage,
            won.status,
        );
        self.record_success(slot, &model, won.attempt, won.latency, reported);
        let usage = reply.usage.as_ref();
        check_usage(gw, &self.route.name, slot, &model, won.limits, usage);
        let cost = cost_of(reply.reported_cost, usage, slot.price, won.limits.calls);
        if let Some(r) = won.reservation {
            r.settle(self.state().as_ref(), cost).await;
        }
        let (logprobs, alternatives) = (reply.logprobs, reply.alternatives);
        let (refusal, system_fingerprint) = (reply.refusal, reply.system_fingerprint);
        let completion = Completion {
            text: reply.text,
            tool_calls: reply.tool_calls,
            thinking: reply.thinking,
            finish_reason: reply.finish_reason,
            model,
            usage: reply.usage,
            cost,
            provider_latency: reply.reported_latency,
            max_tokens_applied: won.limits.applied,
            native: reply.native,
            dropped: won.dropped,
        };
        let attempts = std::mem::take(&mut self.attempts);
        ChatResponse {
            logprobs,
            alternatives,
            refusal,
            system_fingerprint,
            ..self.response(slot, completion, attempts)
        }
    }

    /// Record a successful attempt (its latency feeds the provider's average) and what
    /// it reported of its answer.
    pub(in crate::gateway) fn record_success(
        &mut self,
        slot: &Slot,
        model: &str,
        attempt: u32,
        latency: Duration,
        reported: Reported,
    ) {
        slot.observe_latency(latency.as_secs_f64() * 1000.0);
        self.record(Attempt {
            provider: slot.spec.name.clone(),
            model: model.to_owned(),
            attempt,
            outcome: Outcome::Success,
            status: None,
            latency,
            start: None,
            probe: false, // set by `record`
            reported: Some(reported),
        });
    }

    /// The completion `slot` gave, with the request's trail (`attempts`) and latency.
    pub(in crate::gateway) fn response(
        &self,
        slot: &Slot,
        c: Completion,
        attempts: Vec<Attempt>,
    ) -> ChatResponse {
        ChatResponse {
            text: c.text,
            tool_calls: c.tool_calls,
            thinking: c.thinking,
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
            logprobs: None,
            alternatives: Vec::new(),
            refusal: String::new(),
            system_fingerprint: None,
            ignored: self.fields_with(slot, Support::Ignored),
            dropped: c.dropped,
            native: c.native,
            cache: None,
        }
    }
}

/// What a completion says, apart from the request's trail and timing.
pub(in crate::gateway) struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub thinking: Vec<Thinking>,
    pub finish_reason: Option<FinishReason>,
    pub model: String,
    pub usage: Option<Usage>,
    pub cost: Option<Money>,
    pub provider_latency: Option<Duration>,
    pub max_tokens_applied: Option<u32>,
    /// The upstream's whole answer in the request's native API, when it sent one.
    pub native: Option<std::sync::Arc<serde_json::Value>>,
    /// The request's fields the answering provider was called without.
    pub dropped: FieldSet,
}

/// What an answered call reported of itself, for its trail entry: the upstream's id (moved,
/// shared from then on), the finish reason's label (borrowed, unless the vendor's own),
/// the tokens, the HTTP status.
pub(in crate::gateway) fn reported(
    id: Option<String>,
    finish: Option<&FinishReason>,
    usage: Option<Usage>,
    status: Option<u16>,
) -> Reported {
    Reported {
        id: id.map(std::sync::Arc::from),
        finish: finish.map(|f| match f {
            FinishReason::Other(s) => std::borrow::Cow::Owned(s.clone()),
            known => std::borrow::Cow::Borrowed(known.as_openai_static()),
        }),
        tokens: usage.map(|u| (u.input_tokens, u.output_tokens)),
        status,
        spent: None,
    }
}

/// True when the trail shows any provider other than `answering` tried or skipped.
pub(in crate::gateway) fn failed_over(attempts: &[Attempt], answering: &str) -> bool {
    attempts.iter().any(|a| a.provider != answering)
}
