//! The ledger: per-provider calls, tokens, exact cost, unpriced calls, failures by kind,
//! usage overruns, and active health checks with what they cost (kept apart from `cost`:
//! health-check spend is the operator's, never a route's or a key's).
//!
//! An [`Observer`]: it counts what the gateway reports and decides nothing. Budgets are
//! enforced elsewhere (`state`), before dispatch. Token sums saturate: a hostile count can
//! pin a total at its maximum, never wrap it back to a small number.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use super::{Attempt, Observer, Outcome, Overrun};
use crate::chat::ChatResponse;
use crate::cost::Money;
use crate::embedding::EmbeddingResponse;
use crate::error::{ErrorKind, GatewayError};
use crate::health::CheckReport;

/// One provider's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LedgerRow {
    /// Successful calls (answers returned).
    pub calls: u64,
    /// Input tokens over those calls.
    pub input_tokens: u64,
    /// Output tokens over those calls.
    pub output_tokens: u64,
    /// Exact total of priced calls.
    pub cost: Money,
    /// Calls whose cost is unknown (not counted as $0 in `cost`).
    pub unpriced_calls: u64,
    /// Failed attempts by kind (billed only for what a failed embeddings fan-out's answered
    /// calls used, in `cost` and `input_tokens`).
    pub failures: BTreeMap<ErrorKind, u64>,
    /// Calls that reported more tokens than they were allowed or had reserved.
    pub overruns: u64,
    /// Active health checks run (from this process).
    pub health_checks: u64,
    /// What completion health checks cost (exact; listing checks cost nothing). Not in
    /// `cost`, nor in any budget.
    pub health_spend: Money,
    /// Answers a response cache in front of the gateway served again from this provider's
    /// stored ones (the server's per-route cache): no call was made, so not in `calls`.
    pub cache_hits: u64,
    /// What those answers cost when they were made (priced ones): what the cache saved.
    pub cache_saved: Money,
}

/// Totals per provider, keyed by configured name.
#[derive(Debug, Default)]
pub struct Ledger {
    rows: Mutex<BTreeMap<String, LedgerRow>>,
}

impl Ledger {
    /// An empty ledger.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of every provider's row, sorted by name.
    #[must_use]
    pub fn summary(&self) -> BTreeMap<String, LedgerRow> {
        self.rows.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Total exact cost over all providers.
    #[must_use]
    pub fn total_cost(&self) -> Money {
        self.summary().values().map(|r| r.cost).sum()
    }

    /// A response cache served one of `provider`'s stored answers again, which cost
    /// `saved` when it was made (`None`: unpriced): counted apart from `calls` and `cost`.
    pub fn record_cache_hit(&self, provider: &str, saved: Option<Money>) {
        self.with_row(provider, |row| {
            row.cache_hits = row.cache_hits.saturating_add(1);
            if let Some(saved) = saved {
                row.cache_saved += saved;
            }
        });
    }

    fn with_row(&self, provider: &str, f: impl FnOnce(&mut LedgerRow)) {
        if let Ok(mut rows) = self.rows.lock() {
            f(rows.entry(provider.to_owned()).or_default());
        }
    }
}

impl Observer for Ledger {
    /// Failures by kind; and what a failed turn billed though it failed (an embeddings
    /// fan-out's answered calls, on its last attempt), in the provider's cost and tokens.
    fn on_attempt(&self, _route: &str, attempt: &Attempt) {
        if let Outcome::Failed { kind, .. } = attempt.outcome {
            let reported = attempt.reported.as_ref();
            self.with_row(&attempt.provider, |row| {
                *row.failures.entry(kind).or_default() += 1;
                if let Some((input, _)) = reported.and_then(|r| r.tokens) {
                    row.input_tokens = row.input_tokens.saturating_add(input);
                }
                if let Some(cost) = reported.and_then(|r| r.spent) {
                    row.cost += cost;
                }
            });
        }
    }

    fn on_overrun(&self, _route: &str, overrun: &Overrun) {
        self.with_row(&overrun.provider, |row| row.overruns += 1);
    }

    fn on_health_check(&self, report: &CheckReport) {
        self.with_row(&report.provider, |row| {
            row.health_checks = row.health_checks.saturating_add(1);
            if let Some(cost) = report.cost {
                row.health_spend += cost;
            }
        });
    }

    fn on_embedded(&self, _route: &str, result: Result<&EmbeddingResponse, &GatewayError>) {
        let Ok(resp) = result else { return };
        self.with_row(&resp.provider, |row| {
            row.calls = row.calls.saturating_add(1);
            if let Some(u) = resp.usage {
                row.input_tokens = row.input_tokens.saturating_add(u.input_tokens);
            }
            match resp.cost {
                Some(cost) => row.cost += cost,
                None => row.unpriced_calls += 1,
            }
        });
    }

    fn on_complete(&self, _route: &str, result: Result<&ChatResponse, &GatewayError>) {
        let resp = match result {
            Ok(resp) => resp,
            Err(GatewayError::Cancelled {
                partial: Some(partial),
                ..
            }) => partial,
            Err(_) => return,
        };
        self.with_row(&resp.provider, |row| {
            row.calls = row.calls.saturating_add(1);
            if let Some(u) = resp.usage {
                row.input_tokens = row.input_tokens.saturating_add(u.input_tokens);
                row.output_tokens = row.output_tokens.saturating_add(u.output_tokens);
            }
            match resp.cost {
                Some(cost) => row.cost += cost,
                None => row.unpriced_calls += 1,
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::chat::Usage;

    fn answered(usage: Usage) -> ChatResponse {
        ChatResponse {
            text: String::new(),
            tool_calls: Vec::new(),
            thinking: Vec::new(),
            finish_reason: None,
            provider: "p".into(),
            model: "m".into(),
            failed_over: false,
            usage: Some(usage),
            cost: Some(Money::ZERO),
            attempts: Vec::new(),
            latency: Duration::ZERO,
            provider_latency: None,
            max_tokens_applied: None,
            ..ChatResponse::default()
        }
    }

    #[test]
    fn token_sums_saturate_instead_of_wrapping() {
        let ledger = Ledger::new();
        let half = Usage {
            input_tokens: 1 << 63,
            output_tokens: 1 << 63,
            ..Usage::default()
        };
        for _ in 0..2 {
            ledger.on_complete("r", Ok(&answered(half)));
        }
        let row = &ledger.summary()["p"];
        assert_eq!((row.calls, row.input_tokens), (2, u64::MAX), "not 0");
        assert_eq!(row.output_tokens, u64::MAX);
    }

    #[test]
    fn overruns_are_counted_per_provider() {
        let ledger = Ledger::new();
        let overrun = Overrun {
            provider: "p".into(),
            model: "m".into(),
            output_allowed: Some(4096),
            output_reported: 16_384,
            input_bound: None,
            input_reported: 10,
        };
        ledger.on_overrun("r", &overrun);
        assert_eq!(ledger.summary()["p"].overruns, 1);
    }
}
