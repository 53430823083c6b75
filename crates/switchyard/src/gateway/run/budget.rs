//! What a turn may spend: the output bound of the call, the worst-case reservation
//! against every budget that applies, and (when it settles) the check of the reported
//! usage against both, and the exact cost.
//!
//! A request for `n` answers is bounded for all of them (docs/design.md, "Cost and
//! budgets"): `n` times the output allowance, and the prompt once on a vendor that takes
//! `n` (one call reads it for every answer) or `n` times on one that serves `n` answers by
//! `n` calls (`Provider::calls_for`), each reading the whole prompt.

use super::super::hold::{Guard, Hold, RESERVATION_SLACK};
use super::{Call, Reservation, Run};
use crate::chat::{ChatRequest, Usage};
use crate::cost::{estimate_sent_input_tokens, BudgetState, Money, Price};
use crate::gateway::{Gateway, Slot};
use crate::observe::{BudgetExhausted, Overrun};
use crate::state::Cleanup;

/// What one turn's call was allowed, and what its reservation assumed: reported usage is
/// checked against these when the call settles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::gateway) struct Limits {
    /// The most output tokens the call may produce, every answer together: `n` times
    /// the client's `max_tokens`, else the adapter's default, else the model's output
    /// limit, else (budgeted requests only) the route's `default_max_tokens`. `None`:
    /// unknown, and no budget needed it.
    pub output: Option<u64>,
    /// The input-token bound the reservation was sized by, every upstream call together;
    /// `None` when none was held.
    pub input: Option<u64>,
    /// The route's `default_max_tokens`, when the gateway set it on the request.
    pub applied: Option<u32>,
    /// Upstream calls serving the call (`n` for a provider that fans `n` answers out; 0
    /// and 1 mean one): their summed usage is priced a call at a time ([`cost_of`]).
    pub calls: u32,
}

impl Run {
    /// The turn's output bound, and the chat request as it is sent when it differs from the
    /// caller's: when it asks for more output than the model's known limit, with that limit
    /// (the vendor would refuse it — OpenAI's "max_tokens is too large" — and no answer can
    /// be longer, so nothing is lost: a request written for one vendor's model fails over
    /// to a smaller one); when it spends against a budget, sets no `max_tokens`, and the
    /// model's output limit is unknown, with the route's `default_max_tokens` set (a clone;
    /// rare, since the price table knows the limits of the models it prices). An
    /// embeddings call produces no output tokens.
    pub(super) fn bounded(&self, slot: &Slot, call: Call<'_>) -> (Option<ChatRequest>, Limits) {
        let req = match call {
            Call::Send(req) | Call::Stream(req) => req,
            Call::Embed(_) => {
                let limits = Limits {
                    output: Some(0),
                    ..Limits::default()
                };
                return (None, limits);
            }
        };
        // every answer may use the whole allowance
        let answers = u64::from(req.n.unwrap_or(1).max(1));
        let calls = slot.spec.provider.calls_for(req);
        if let (Some(asked), Some(limit)) = (req.max_tokens, slot.max_output_tokens) {
            if asked > limit {
                let limits = Limits {
                    output: Some(u64::from(limit).saturating_mul(answers)),
                    calls,
                    ..Limits::default()
                };
                return (Some(req.clone().with_max_tokens(limit)), limits);
            }
        }
        let known = req
            .max_tokens
            .or_else(|| slot.spec.provider.default_max_tokens())
            .or(slot.max_output_tokens);
        if let Some(n) = known {
            let limits = Limits {
                output: Some(u64::from(n).saturating_mul(answers)),
                calls,
                ..Limits::default()
            };
            return (None, limits);
        }
        if self.budgets.is_empty() || slot.price.is_none() {
            let limits = Limits {
                calls,
                ..Limits::default()
            };
            return (None, limits);
        }
        let n = self.route.default_max_tokens;
        let limits = Limits {
            output: Some(u64::from(n).saturating_mul(answers)),
            input: None,
            applied: Some(n),
            calls,
        };
        (Some(req.clone().with_max_tokens(n)), limits)
    }

    /// Reserve the request's worst case (input bound at the dearest input rate — of the
    /// request as this provider sends it, its native body when it takes one —, `output`
    /// tokens — every answer's — at the output rate; for a provider that makes one call
    /// per answer, each call's share of the output with the whole input, times the calls)
    /// against every budget that applies (the route's, the caller's); all or nothing.
    pub(super) async fn reserve(
        &self,
        slot: &Slot,
        call: Call<'_>,
        output: Option<u64>,
    ) -> Result<Option<Reservation>, (String, BudgetState, Money)> {
        if self.budgets.is_empty() {
            return Ok(None);
        }
        let (input_tokens, calls) = match call {
            Call::Send(req) | Call::Stream(req) => (
                estimate_sent_input_tokens(req, slot.spec.provider.native_kind()),
                slot.spec.provider.calls_for(req).max(1),
            ),
            Call::Embed(req) => (req.input_token_bound(), 1),
        };
        let price = slot.price.unwrap_or_default();
        // `output` is `n` allowances and `calls` is 1 or `n`: each call's share is exact
        let per_call = output.unwrap_or(0) / u64::from(calls);
        let amount = price.worst_case_of_calls(calls, input_tokens, per_call);
        let input_tokens = input_tokens.saturating_mul(u64::from(calls));
        // a lapsed reservation must not free money a live request may still spend
        let lease = self.time_left() + RESERVATION_SLACK;
        let mut holds = Vec::with_capacity(self.budgets.len());
        for b in &self.budgets {
            let id = self
                .state()
                .reserve(&b.scope, b.limit, amount, lease)
                .await
                .map_err(|books| {
                    self.budget_refused(&b.scope, &books);
                    (b.scope.clone(), books, amount)
                })?;
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
        let exhausted = &self.gw.inner.exhausted;
        exhausted.admitted(self.budgets.iter().map(|b| b.scope.as_str()));
        Ok(Some(Reservation {
            amount,
            input_tokens,
            holds,
        }))
    }

    /// Budget `scope` refused with `books`: tell observers if it was not already known
    /// to be exhausted.
    fn budget_refused(&self, scope: &str, books: &BudgetState) {
        if !self.gw.inner.exhausted.refused(scope) {
            return;
        }
        let exhausted = BudgetExhausted {
            scope: scope.to_owned(),
            limit: books.limit,
            spent: books.spent,
            reserved: books.reserved,
        };
        for o in &self.gw.inner.observers {
            o.on_budget_exhausted(&self.route.name, &exhausted);
        }
    }
}

/// Tell observers when a call's reported usage passed what it was allowed (output) or
/// what its reservation assumed (input). The budget may then be overspent by the
/// difference; the call is still settled at its real cost.
pub(in crate::gateway) fn check_usage(
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

/// The exact cost of a call: what the provider billed, else usage × price (usage summed
/// over `calls` upstream calls priced a call at a time, [`Price::cost_of_calls`]); `None`
/// when either is unknown.
pub(in crate::gateway) fn cost_of(
    reported: Option<Money>,
    usage: Option<&crate::chat::Usage>,
    price: Option<Price>,
    calls: u32,
) -> Option<Money> {
    reported.or_else(|| Some(price?.cost_of_calls(usage?, calls)))
}
