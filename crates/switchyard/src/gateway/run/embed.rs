//! An embeddings request's answer: the success recorded, the usage checked against the
//! reservation's input bound, the reservation settled at the exact cost, and the response
//! built with the request's trail.

use super::{check_usage, cost_of, failed_over, Answer, Call, Run, Won};
use crate::embedding::{EmbeddingRequest, EmbeddingResponse};
use crate::error::GatewayError;

impl Run {
    /// An embeddings request, start to finish: the same attempt loop as chat.
    pub(in crate::gateway) async fn embed(
        mut self,
        req: &EmbeddingRequest,
    ) -> Result<EmbeddingResponse, GatewayError> {
        let result = match self.first_answer(Call::Embed(req)).await {
            Ok((pos, won)) => Ok(self.embedded(pos, won).await),
            Err(e) => Err(e),
        };
        self.settled = true;
        result
    }

    async fn embedded(&mut self, pos: usize, won: Won) -> EmbeddingResponse {
        let Answer::Vectors(reply) = won.answer else {
            unreachable!("an embeddings turn answers with vectors")
        };
        let slots = self.slots();
        let (gw, slot) = (&slots.gw, slots.get(self.plan[pos]));
        let model = reply
            .model
            .unwrap_or_else(|| slot.spec.provider.model().to_owned());
        let reported = super::reported(None, None, reply.usage, won.status);
        self.record_success(slot, &model, won.attempt, won.latency, reported);
        let usage = reply.usage.as_ref();
        check_usage(gw, &self.route.name, slot, &model, won.limits, usage);
        let cost = cost_of(None, usage, slot.price, 1);
        if let Some(r) = won.reservation {
            r.settle(self.state().as_ref(), cost).await;
        }
        let attempts = std::mem::take(&mut self.attempts);
        EmbeddingResponse {
            vectors: reply.vectors,
            provider: slot.spec.name.clone(),
            model,
            failed_over: failed_over(&attempts, &slot.spec.name),
            usage: reply.usage,
            cost,
            attempts,
            latency: gw.inner.clock.now() - self.started,
        }
    }
}
