//! Budgets that are exhausted: reported once per exhaustion, not once per refused request.
//!
//! Owns [`BudgetExhausted`] (what observers are told) and [`ExhaustedBudgets`], the gateway's
//! memory of the budgets that refused a request and have not admitted one since. A budget
//! is reported when it first refuses; it is reported again only after it has admitted a
//! request (room came back: reservations given back, a new period's scope) and then
//! refuses again. The memory is bounded ([`MAX_EXHAUSTED`]): past it the oldest budget is
//! forgotten (reported again if it refuses again). A request under a budget that is not
//! exhausted pays one atomic load.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use crate::money::Money;

/// Most exhausted budgets remembered at once.
pub const MAX_EXHAUSTED: usize = 1024;

/// A budget that refused a request for the first time since it last had room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BudgetExhausted {
    /// The budget's scope: `route:<name>`, or a key's (`key:<name>`,
    /// `key:<name>:day:YYYY-MM-DD`, `key:<name>:month:YYYY-MM`).
    pub scope: String,
    /// Its limit.
    pub limit: Money,
    /// Settled spend.
    pub spent: Money,
    /// Outstanding reservations.
    pub reserved: Money,
}

/// The scopes that refused and have not admitted since (see the module docs).
#[derive(Debug, Default)]
pub struct ExhaustedBudgets {
    /// How many scopes are held: read without the lock, so a budget with room costs a
    /// request one atomic load.
    held: AtomicUsize,
    /// Scope → when it was marked (a sequence number: the oldest goes first when full).
    scopes: Mutex<HashMap<String, u64>>,
    /// The next mark's sequence number.
    seq: AtomicU64,
}

impl ExhaustedBudgets {
    /// `scope` refused a request: true when it was not already exhausted (report it).
    pub fn refused(&self, scope: &str) -> bool {
        let Ok(mut scopes) = self.scopes.lock() else {
            return false;
        };
        if scopes.contains_key(scope) {
            return false;
        }
        if scopes.len() >= MAX_EXHAUSTED {
            let oldest = scopes
                .iter()
                .min_by_key(|(_, n)| **n)
                .map(|(s, _)| s.clone());
            if let Some(oldest) = oldest {
                scopes.remove(&oldest);
            }
        }
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        scopes.insert(scope.to_owned(), n);
        self.held.store(scopes.len(), Ordering::Release);
        true
    }

    /// Each of `scopes` admitted a request: forget those that were exhausted.
    pub fn admitted<'a>(&self, scopes: impl IntoIterator<Item = &'a str>) {
        if self.held.load(Ordering::Acquire) == 0 {
            return;
        }
        let Ok(mut held) = self.scopes.lock() else {
            return;
        };
        for scope in scopes {
            held.remove(scope);
        }
        self.held.store(held.len(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_reported_once_until_it_admits_again() {
        let budgets = ExhaustedBudgets::default();
        assert!(budgets.refused("route:smart"));
        assert!(
            !budgets.refused("route:smart"),
            "the second refusal is not news"
        );
        assert!(budgets.refused("key:ci"), "another budget is");
        budgets.admitted(["route:smart"]);
        assert!(
            budgets.refused("route:smart"),
            "exhausted again after room came back"
        );
        assert!(!budgets.refused("key:ci"));
    }

    #[test]
    fn the_memory_is_bounded_and_forgets_the_oldest_first() {
        let budgets = ExhaustedBudgets::default();
        for i in 0..=MAX_EXHAUSTED {
            assert!(budgets.refused(&format!("key:k{i}:day:2026-01-01")));
        }
        assert_eq!(budgets.held.load(Ordering::Acquire), MAX_EXHAUSTED);
        // the first was forgotten to make room: it is reported again; the newest is not
        assert!(budgets.refused("key:k0:day:2026-01-01"));
        assert!(!budgets.refused(&format!("key:k{MAX_EXHAUSTED}:day:2026-01-01")));
    }
}
