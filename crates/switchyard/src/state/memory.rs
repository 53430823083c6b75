//! In-process state: one mutex-guarded map per concern, never held across an await.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Cleanup, SharedState};
use crate::breaker::{Applied, Breaker, BreakerConfig, Now, Op};
use crate::cost::{BudgetState, Money};

/// The default store: this process only.
#[derive(Debug, Default)]
pub struct MemoryState {
    breakers: Mutex<HashMap<String, Breaker>>,
    budgets: Mutex<HashMap<String, BudgetState>>,
}

impl MemoryState {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Start a budget's books with spend already settled (restored after a restart).
    pub fn restore_spend(&self, scope: &str, spent: Money) {
        if let Ok(mut b) = self.budgets.lock() {
            b.entry(scope.to_owned()).or_default().spent += spent;
        }
    }

    fn with_budget<R>(
        &self,
        scope: &str,
        limit: Money,
        f: impl FnOnce(&mut BudgetState) -> R,
    ) -> Option<R> {
        let mut budgets = self.budgets.lock().ok()?;
        let b = budgets.entry(scope.to_owned()).or_default();
        b.limit = limit;
        Some(f(b))
    }

    fn release(&self, scope: &str, amount: Money) {
        if let Ok(mut budgets) = self.budgets.lock() {
            if let Some(b) = budgets.get_mut(scope) {
                b.release(amount);
            }
        }
    }
}

#[async_trait]
impl SharedState for MemoryState {
    async fn breaker_op(&self, provider: &str, cfg: &BreakerConfig, now: Now, op: Op) -> Applied {
        let Ok(mut map) = self.breakers.lock() else {
            // A poisoned map means a panic elsewhere; admit rather than fail requests.
            return Applied {
                admission: crate::breaker::Admission::Admit,
                transition: None,
            };
        };
        map.entry(provider.to_owned())
            .or_default()
            .apply(cfg, now, op)
    }

    async fn breaker(&self, provider: &str) -> Breaker {
        self.breakers
            .lock()
            .ok()
            .and_then(|m| m.get(provider).copied())
            .unwrap_or_default()
    }

    async fn reserve(&self, scope: &str, limit: Money, amount: Money) -> Result<(), BudgetState> {
        self.with_budget(scope, limit, |b| {
            if b.try_reserve(amount) {
                Ok(())
            } else {
                Err(*b)
            }
        })
        .unwrap_or(Err(BudgetState::new(limit)))
    }

    async fn settle(&self, scope: &str, reserved: Money, actual: Money) {
        if let Ok(mut budgets) = self.budgets.lock() {
            budgets
                .entry(scope.to_owned())
                .or_default()
                .settle(reserved, actual);
        }
    }

    async fn budget(&self, scope: &str, limit: Money) -> BudgetState {
        self.with_budget(scope, limit, |b| *b)
            .unwrap_or_else(|| BudgetState::new(limit))
    }

    fn cleanup(&self, cleanup: Cleanup) {
        match cleanup {
            Cleanup::ReleaseProbe { provider, lease } => {
                if let Ok(mut map) = self.breakers.lock() {
                    if let Some(b) = map.get_mut(&provider) {
                        b.release(lease);
                    }
                }
            }
            Cleanup::ReleaseBudget { scope, amount } => self.release(&scope, amount),
            Cleanup::SettleBudget {
                scope,
                reserved,
                actual,
            } => {
                if let Ok(mut budgets) = self.budgets.lock() {
                    budgets.entry(scope).or_default().settle(reserved, actual);
                }
            }
        }
    }
}
