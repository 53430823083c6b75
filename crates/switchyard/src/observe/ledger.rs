//! The ledger: per-provider calls, tokens, exact cost, unpriced calls and failures by kind.
//!
//! An [`Observer`]: it counts what the gateway reports and decides nothing. Budgets are
//! enforced elsewhere (`state`), before dispatch.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use super::{Attempt, Observer, Outcome};
use crate::chat::ChatResponse;
use crate::cost::Money;
use crate::error::{ErrorKind, GatewayError};

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
    /// Failed attempts by kind (never billed).
    pub failures: BTreeMap<ErrorKind, u64>,
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

    fn with_row(&self, provider: &str, f: impl FnOnce(&mut LedgerRow)) {
        if let Ok(mut rows) = self.rows.lock() {
            f(rows.entry(provider.to_owned()).or_default());
        }
    }
}

impl Observer for Ledger {
    fn on_attempt(&self, _route: &str, attempt: &Attempt) {
        if let Outcome::Failed { kind, .. } = attempt.outcome {
            self.with_row(&attempt.provider, |row| {
                *row.failures.entry(kind).or_default() += 1;
            });
        }
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
            row.calls += 1;
            if let Some(u) = resp.usage {
                row.input_tokens += u.input_tokens;
                row.output_tokens += u.output_tokens;
            }
            match resp.cost {
                Some(cost) => row.cost += cost,
                None => row.unpriced_calls += 1,
            }
        });
    }
}
