//! Where breaker and budget state lives.
//!
//! Owns the narrow [`SharedState`] trait the gateway talks to: apply a breaker [`Op`]
//! atomically, reserve / settle / release budget money, and read both back. Decisions are
//! the pure functions in `breaker` and `cost`; a store only makes them atomic. The memory
//! store is the default; a Redis store (fleet mode) implements the same trait.

mod memory;

use async_trait::async_trait;

pub use memory::MemoryState;

use crate::breaker::{Applied, Breaker, BreakerConfig, Now, Op};
use crate::cost::{BudgetState, Money};

/// Work that must happen even when the request that owed it was dropped (a cancelled
/// probe's lease, a cancelled call's reservation). Stores run it without the caller
/// waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// Give a probe lease back.
    ReleaseProbe {
        /// Provider name.
        provider: String,
        /// The lease.
        lease: u64,
    },
    /// Replace a reservation by the real cost.
    SettleBudget {
        /// Budget scope (route or key).
        scope: String,
        /// The amount reserved.
        reserved: Money,
        /// What was actually spent.
        actual: Money,
    },
    /// Give a budget reservation back.
    ReleaseBudget {
        /// Budget scope (route or key).
        scope: String,
        /// The amount reserved.
        amount: Money,
    },
}

/// Breaker and budget state, local or shared by a fleet.
#[async_trait]
pub trait SharedState: Send + Sync {
    /// Apply `op` to `provider`'s breaker atomically and return what it produced.
    async fn breaker_op(&self, provider: &str, cfg: &BreakerConfig, now: Now, op: Op) -> Applied;

    /// The breaker of `provider` as stored (default if never touched).
    async fn breaker(&self, provider: &str) -> Breaker;

    /// Reserve `amount` of the budget `scope` (limit `limit`) if spend plus reservations
    /// plus it stays within the limit; otherwise return the books as they stand.
    async fn reserve(&self, scope: &str, limit: Money, amount: Money) -> Result<(), BudgetState>;

    /// Replace a reservation by the real cost.
    async fn settle(&self, scope: &str, reserved: Money, actual: Money);

    /// The books of `scope` (limit as given).
    async fn budget(&self, scope: &str, limit: Money) -> BudgetState;

    /// Run `cleanup` without making the caller wait (called from `Drop`).
    fn cleanup(&self, cleanup: Cleanup);
}
