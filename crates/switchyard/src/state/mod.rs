//! Where breaker, budget and rate-limit state lives.
//!
//! Owns the narrow [`SharedState`] trait the gateway and server talk to: apply a breaker
//! [`Op`] atomically; reserve / settle / release budget money; count against a rate-limit
//! window; hold a named lease (one health checker per provider across a fleet); read all
//! of it back (and give a lease back early); keep small values with an expiry (`kv_*`: e.g. stored conversations); and
//! say whether the store is healthy. Decisions are the
//! pure functions in `breaker`, `cost` and `ratelimit` (GCRA); a store only makes them atomic.
//! The memory store is the default; the Redis store (fleet mode) implements the same trait
//! and degrades to a local memory store when Redis is away.

mod kv;
mod memory;
#[cfg(feature = "redis")]
pub mod redis;

use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;

#[cfg(feature = "redis")]
pub use self::redis::{eviction_policy, Eviction, RedisConfig, RedisState};
pub use kv::{KV_ENTRY_OVERHEAD, KV_MEMORY_BYTES};
pub use memory::MemoryState;

use crate::breaker::{Applied, Breaker, BreakerConfig, Op, Transition};
use crate::clock::UnixMillis;
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
        /// The reservation.
        id: u64,
        /// The amount reserved.
        reserved: Money,
        /// What was actually spent.
        actual: Money,
    },
    /// Give a budget reservation back.
    ReleaseBudget {
        /// Budget scope (route or key).
        scope: String,
        /// The reservation.
        id: u64,
        /// The amount reserved.
        amount: Money,
    },
    /// Give a named lease back (see [`SharedState::release_lease`]).
    ReleaseLease {
        /// The lease.
        name: String,
        /// Who holds it: nothing happens if someone else does by now.
        holder: String,
    },
}

/// How a store is doing, for health endpoints and metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateStatus {
    /// `memory` or `redis`.
    pub backend: &'static str,
    /// True when decisions are shared with the fleet (always true for memory: there is no
    /// fleet to disagree with).
    pub connected: bool,
    /// Since when the store has been running on local state only.
    pub degraded_since_ms: Option<UnixMillis>,
    /// The last error talking to the shared store (never a credential).
    pub last_error: Option<String>,
}

/// State a reload leaves behind: the breakers of providers whose definition changed or
/// went, the books and rate-limit windows of routes and keys that went
/// ([`SharedState::forget`]). Names are matched exactly, or by prefix where a prefix is
/// given (a wildcard template's models, `{template}/…`; a key's periods and windows,
/// `key:{name}:…`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Forget {
    /// Breakers, by provider name.
    pub breakers: Vec<String>,
    /// Breakers whose provider name starts with one of these.
    pub breaker_prefixes: Vec<String>,
    /// Budget books and rate-limit windows, by scope or bucket.
    pub scopes: Vec<String>,
    /// Budget books and rate-limit windows whose scope or bucket starts with one of these.
    pub scope_prefixes: Vec<String>,
}

impl Forget {
    /// Nothing to forget.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.breakers.is_empty()
            && self.breaker_prefixes.is_empty()
            && self.scopes.is_empty()
            && self.scope_prefixes.is_empty()
    }

    /// Whether breaker `provider` is to be forgotten.
    #[must_use]
    pub fn breaker(&self, provider: &str) -> bool {
        self.breakers.iter().any(|b| b == provider)
            || (self.breaker_prefixes.iter()).any(|p| provider.starts_with(p.as_str()))
    }

    /// Whether the books or window `scope` is to be forgotten.
    #[must_use]
    pub fn scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
            || (self.scope_prefixes.iter()).any(|p| scope.starts_with(p.as_str()))
    }
}

/// Told of each circuit change a fleet store learns from another replica (provider name,
/// the change as this replica saw it); must not block.
pub type FleetSink = std::sync::Arc<dyn Fn(&str, &Transition) + Send + Sync>;

/// Breaker, budget and rate-limit state, local or shared by a fleet.
#[async_trait]
pub trait SharedState: Send + Sync {
    /// Apply `op` to `provider`'s breaker atomically and return what it produced.
    async fn breaker_op(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Applied;

    /// The breaker of `provider` as stored (default if never touched).
    async fn breaker(&self, provider: &str) -> Breaker;

    /// Reserve `amount` of the budget `scope` (limit `limit`) if spend plus reservations
    /// plus it stays within the limit. The reservation lapses by itself after `lease` if
    /// its holder never settles or releases it (a replica that died). Returns the
    /// reservation's id, or the books as they stand.
    async fn reserve(
        &self,
        scope: &str,
        limit: Money,
        amount: Money,
        lease: Duration,
    ) -> Result<u64, BudgetState>;

    /// Replace reservation `id` by the real cost.
    async fn settle(&self, scope: &str, id: u64, reserved: Money, actual: Money);

    /// The books of `scope` (limit as given).
    async fn budget(&self, scope: &str, limit: Money) -> BudgetState;

    /// Count `cost` against `bucket` (a GCRA of `limit` per minute) if it fits (a `cost`
    /// of 0 only checks that the limit is not reached); otherwise the wait.
    async fn rate(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
    ) -> Result<(), Duration>;

    /// Count `amount` against `bucket` (limit `limit` per minute) unconditionally
    /// (tokens, known after the call).
    async fn rate_add(&self, bucket: &str, limit: u64, amount: u64, now: UnixMillis);

    /// Take or renew the lease `name` (a fleet-wide job, such as one provider's health
    /// checker) for `holder` until `ttl` after `now`: true when `holder` holds it now.
    /// Granted when nobody holds it, its holder's lease expired, or `holder` already holds
    /// it; a holder that stops renewing loses it after `ttl`, and another takes over.
    async fn try_lease(&self, name: &str, holder: &str, ttl: Duration, now: UnixMillis) -> bool;

    /// Give the lease `name` back if `holder` holds it, so that the next holder need not
    /// wait for it to lapse: true when it was `holder`'s (a lease held by another, or by
    /// nobody, is left as it is). Taking a lease with a holder nobody else uses, then
    /// giving it back, is a lock across the fleet that a crashed holder cannot keep
    /// longer than its `ttl`.
    async fn release_lease(&self, name: &str, holder: &str) -> bool;

    /// Keep `value` under `key` until `ttl` after `now`, replacing what was there. False
    /// when it was not kept (larger than the store's bound on a memory store). A fleet
    /// store keeps it in Redis, or on this replica only while Redis is away.
    async fn kv_put(&self, key: &str, value: Vec<u8>, ttl: Duration, now: UnixMillis) -> bool;

    /// The value under `key`, unless absent or expired.
    async fn kv_get(&self, key: &str, now: UnixMillis) -> Option<Vec<u8>>;

    /// Delete `key`: true when a live value was there.
    async fn kv_delete(&self, key: &str, now: UnixMillis) -> bool;

    /// Run `cleanup` without making the caller wait (called from `Drop`).
    fn cleanup(&self, cleanup: Cleanup);

    /// How the store is doing.
    fn status(&self) -> StateStatus;

    /// Tell `sink` of every circuit change another replica makes, as this store learns it
    /// (the replica that made it reports it itself, through its own gateway). The gateway
    /// calls this once when it is built; the memory store has no fleet and ignores it.
    fn watch_fleet(&self, _sink: FleetSink) {}

    /// Drop the state `what` names, so that what a reload changed or removed starts afresh
    /// (closed circuit, nothing spent, empty windows); a request still running on the old
    /// definition settles into fresh books. The default keeps everything: a fleet store's
    /// state is the fleet's, and another replica may still run the old definition.
    fn forget(&self, _what: &Forget) {}
}
