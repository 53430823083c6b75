//! In-process state: one mutex-guarded map per concern, never held across an await, and
//! held only for short updates (the key-value part copies and frees values outside it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::kv::LocalKv;
use super::{Cleanup, SharedState, StateStatus};
use crate::breaker::{Admission, Applied, Breaker, BreakerConfig, Op};
use crate::clock::UnixMillis;
use crate::cost::{BudgetState, Money};
use crate::ratelimit::Gcra;

/// How many named leases the store holds before it first drops lapsed ones.
const LEASES_PURGED_FROM: usize = 1024;

/// The default store: this process only. Also the local half of a fleet store.
#[derive(Debug, Default)]
pub struct MemoryState {
    breakers: Mutex<HashMap<String, Breaker>>,
    budgets: Mutex<HashMap<String, BudgetState>>,
    windows: Mutex<HashMap<String, Gcra>>,
    /// Named leases: holder and expiry (Unix ms).
    leases: Mutex<HashMap<String, (String, UnixMillis)>>,
    /// Values with an expiry (`SharedState::kv_put`), bounded in bytes.
    kv: Mutex<LocalKv>,
    next_id: AtomicU64,
}

impl MemoryState {
    /// An empty store.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Add settled spend to a budget's books (restored after a restart, or synced from a
    /// shared store).
    pub fn restore_spend(&self, scope: &str, spent: Money) {
        if let Ok(mut b) = self.budgets.lock() {
            b.entry(scope.to_owned()).or_default().spent += spent;
        }
    }

    /// Replace a breaker's state (synced from a shared store).
    pub fn put_breaker(&self, provider: &str, breaker: Breaker) {
        if let Ok(mut map) = self.breakers.lock() {
            map.insert(provider.to_owned(), breaker);
        }
    }

    /// Take the fleet's view of a breaker atomically, keeping this replica's probe lease
    /// when it still applies (see [`Breaker::merge_shared`]; used by fleet stores).
    /// Returns the breaker before and after.
    pub fn merge_breaker(&self, provider: &str, shared: Breaker) -> Option<(Breaker, Breaker)> {
        let mut map = self.breakers.lock().ok()?;
        let breaker = map.entry(provider.to_owned()).or_default();
        let before = *breaker;
        breaker.merge_shared(shared);
        Some((before, *breaker))
    }

    /// Drop what `what` names (see [`SharedState::forget`]).
    pub fn forget_local(&self, what: &super::Forget) {
        if let Ok(mut map) = self.breakers.lock() {
            map.retain(|name, _| !what.breaker(name));
        }
        if let Ok(mut map) = self.budgets.lock() {
            map.retain(|scope, _| !what.scope(scope));
        }
        if let Ok(mut map) = self.windows.lock() {
            map.retain(|bucket, _| !what.scope(bucket));
        }
    }

    /// Every breaker, by provider.
    #[must_use]
    pub fn breakers(&self) -> HashMap<String, Breaker> {
        self.breakers.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Every budget's books, by scope.
    #[must_use]
    pub fn budgets(&self) -> HashMap<String, BudgetState> {
        self.budgets.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Apply `op` locally (also used by fleet stores while degraded).
    pub fn apply(&self, provider: &str, cfg: &BreakerConfig, now: UnixMillis, op: Op) -> Applied {
        let Ok(mut map) = self.breakers.lock() else {
            // A poisoned map means a panic elsewhere; admit rather than fail requests.
            return Applied {
                admission: Admission::Admit,
                transition: None,
            };
        };
        // the name copied only the first time it is seen (not per call, as `entry` would)
        if let Some(breaker) = map.get_mut(provider) {
            return breaker.apply(cfg, now, op);
        }
        map.entry(provider.to_owned())
            .or_default()
            .apply(cfg, now, op)
    }

    fn with_budget<R>(&self, scope: &str, f: impl FnOnce(&mut BudgetState) -> R) -> Option<R> {
        let mut budgets = self.budgets.lock().ok()?;
        // the scope copied only the first time it is seen
        if let Some(b) = budgets.get_mut(scope) {
            return Some(f(b));
        }
        Some(f(budgets.entry(scope.to_owned()).or_default()))
    }

    /// Reserve locally.
    ///
    /// # Errors
    /// The books, when the reservation does not fit.
    pub fn reserve_local(
        &self,
        scope: &str,
        limit: Money,
        amount: Money,
    ) -> Result<u64, BudgetState> {
        let fits = self
            .with_budget(scope, |b| {
                b.limit = limit;
                if b.try_reserve(amount) {
                    Ok(())
                } else {
                    Err(*b)
                }
            })
            .unwrap_or(Err(BudgetState::new(limit)));
        fits.map(|()| self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Settle locally.
    pub fn settle_local(&self, scope: &str, reserved: Money, actual: Money) {
        self.with_budget(scope, |b| b.settle(reserved, actual));
    }

    /// Release locally.
    pub fn release_local(&self, scope: &str, amount: Money) {
        self.with_budget(scope, |b| b.release(amount));
    }

    /// Rate-limit locally.
    ///
    /// # Errors
    /// The wait, when over the limit.
    pub fn rate_local(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
    ) -> Result<(), Duration> {
        let Ok(mut w) = self.windows.lock() else {
            return Ok(());
        };
        w.entry(bucket.to_owned())
            .or_default()
            .admit(limit, cost, now)
    }

    /// Count usage locally.
    pub fn rate_add_local(&self, bucket: &str, limit: u64, amount: u64, now: UnixMillis) {
        if let Ok(mut w) = self.windows.lock() {
            w.entry(bucket.to_owned())
                .or_default()
                .add(limit, amount, now);
        }
    }

    /// Take or renew a named lease locally (see [`SharedState::try_lease`]).
    pub fn lease_local(&self, name: &str, holder: &str, ttl: Duration, now: UnixMillis) -> bool {
        let Ok(mut leases) = self.leases.lock() else {
            return true; // a poisoned map: check rather than never check
        };
        let until = now.saturating_add(crate::clock::duration_ms(ttl));
        match leases.get_mut(name) {
            Some((current, expires)) if current != holder && now < *expires => false,
            Some(lease) => {
                *lease = (holder.to_owned(), until);
                true
            }
            None => {
                // leases nobody gave back (their holders renew no more) go once the map
                // has grown to each next power of two: amortised, never per call
                let held = leases.len();
                if held >= LEASES_PURGED_FROM && held.is_power_of_two() {
                    leases.retain(|_, (_, expires)| now < *expires);
                }
                leases.insert(name.to_owned(), (holder.to_owned(), until));
                true
            }
        }
    }

    /// Give a named lease back if `holder` holds it (see [`SharedState::release_lease`]).
    pub fn release_lease_local(&self, name: &str, holder: &str) -> bool {
        let Ok(mut leases) = self.leases.lock() else {
            return false;
        };
        if leases
            .get(name)
            .is_some_and(|(current, _)| current == holder)
        {
            leases.remove(name);
            return true;
        }
        false
    }

    /// A store whose key-value part holds at most `bytes` (default
    /// [`super::KV_MEMORY_BYTES`]): past it, expired values go first, then the soonest to expire.
    #[must_use]
    pub fn with_kv_limit(bytes: usize) -> Self {
        Self {
            kv: Mutex::new(LocalKv::with_limit(bytes)),
            ..Self::default()
        }
    }

    /// Keep a value locally (see [`SharedState::kv_put`]). The value is copied to an
    /// exact-length allocation, and whatever the write drops is freed, outside the lock:
    /// the lock is held for the map and order updates only (O(log n)).
    pub fn kv_put_local(&self, key: &str, value: Vec<u8>, ttl: Duration, now: UnixMillis) -> bool {
        let expires = now.saturating_add(crate::clock::duration_ms(ttl));
        let value: Arc<[u8]> = Arc::from(value);
        let Ok(mut kv) = self.kv.lock() else {
            return false;
        };
        let (kept, evicted) = kv.put(key, value, expires, now);
        drop(kv);
        drop(evicted);
        kept
    }

    /// A value kept locally, unless absent or expired (copied out after the lock is
    /// released).
    pub fn kv_get_local(&self, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        let (value, evicted) = self.kv.lock().ok()?.get(key, now);
        drop(evicted);
        value.map(|v| v.to_vec())
    }

    /// Delete a value kept locally: true when a live one was there.
    pub fn kv_delete_local(&self, key: &str, now: UnixMillis) -> bool {
        let Ok(mut kv) = self.kv.lock() else {
            return false;
        };
        let (live, evicted) = kv.delete(key, now);
        drop(kv);
        drop(evicted);
        live
    }

    /// Run a cleanup locally.
    pub fn cleanup_local(&self, cleanup: Cleanup) {
        match cleanup {
            Cleanup::ReleaseProbe { provider, lease } => {
                if let Ok(mut map) = self.breakers.lock() {
                    if let Some(b) = map.get_mut(&provider) {
                        b.release(lease);
                    }
                }
            }
            Cleanup::ReleaseBudget { scope, amount, .. } => self.release_local(&scope, amount),
            Cleanup::SettleBudget {
                scope,
                reserved,
                actual,
                ..
            } => self.settle_local(&scope, reserved, actual),
            Cleanup::ReleaseLease { name, holder } => {
                self.release_lease_local(&name, &holder);
            }
        }
    }
}

#[async_trait]
impl SharedState for MemoryState {
    async fn breaker_op(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Applied {
        self.apply(provider, cfg, now, op)
    }

    async fn try_lease(&self, name: &str, holder: &str, ttl: Duration, now: UnixMillis) -> bool {
        self.lease_local(name, holder, ttl, now)
    }

    async fn release_lease(&self, name: &str, holder: &str) -> bool {
        self.release_lease_local(name, holder)
    }

    async fn breaker(&self, provider: &str) -> Breaker {
        self.breakers
            .lock()
            .ok()
            .and_then(|m| m.get(provider).copied())
            .unwrap_or_default()
    }

    async fn reserve(
        &self,
        scope: &str,
        limit: Money,
        amount: Money,
        _lease: Duration,
    ) -> Result<u64, BudgetState> {
        // In one process a reservation cannot outlive its holder: drop guards release it.
        self.reserve_local(scope, limit, amount)
    }

    async fn settle(&self, scope: &str, _id: u64, reserved: Money, actual: Money) {
        self.settle_local(scope, reserved, actual);
    }

    async fn budget(&self, scope: &str, limit: Money) -> BudgetState {
        self.with_budget(scope, |b| {
            b.limit = limit;
            *b
        })
        .unwrap_or_else(|| BudgetState::new(limit))
    }

    async fn rate(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
    ) -> Result<(), Duration> {
        self.rate_local(bucket, limit, cost, now)
    }

    async fn rate_add(&self, bucket: &str, limit: u64, amount: u64, now: UnixMillis) {
        self.rate_add_local(bucket, limit, amount, now);
    }

    async fn kv_put(&self, key: &str, value: Vec<u8>, ttl: Duration, now: UnixMillis) -> bool {
        self.kv_put_local(key, value, ttl, now)
    }

    async fn kv_get(&self, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        self.kv_get_local(key, now)
    }

    async fn kv_delete(&self, key: &str, now: UnixMillis) -> bool {
        self.kv_delete_local(key, now)
    }

    fn cleanup(&self, cleanup: Cleanup) {
        self.cleanup_local(cleanup);
    }

    fn status(&self) -> StateStatus {
        StateStatus {
            backend: "memory",
            connected: true,
            degraded_since_ms: None,
            last_error: None,
        }
    }

    fn forget(&self, what: &super::Forget) {
        self.forget_local(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lapsed_leases_nobody_gave_back_do_not_pile_up() {
        let s = MemoryState::new();
        let ttl = Duration::from_millis(10);
        // many holders that never give their lease back, each lapsing 10 ms after it
        // was taken
        for i in 0..(4 * LEASES_PURGED_FROM) as u64 {
            assert!(s.lease_local(&format!("turn-{i}"), "h", ttl, i * 100));
        }
        let held = s.leases.lock().unwrap().len();
        assert!(held <= LEASES_PURGED_FROM, "{held} leases kept");
        // a live lease survives a purge
        assert!(!s.lease_local(
            &format!("turn-{}", 4 * LEASES_PURGED_FROM - 1),
            "other",
            ttl,
            (4 * LEASES_PURGED_FROM as u64 - 1) * 100 + 5
        ));
    }

    #[test]
    fn forget_drops_exactly_the_named_breakers_books_and_windows() {
        let s = MemoryState::new();
        for p in ["a", "a/gpt-4o", "ab", "b"] {
            s.put_breaker(p, Breaker::default());
        }
        for scope in [
            "route:r",
            "route:r:x",
            "key:k",
            "key:k:day:2026-12-02",
            "key:kk",
        ] {
            s.restore_spend(scope, Money::from_usd(1.0));
        }
        for bucket in ["key:k:rpm", "key:kk:rpm"] {
            assert!(s.rate_local(bucket, 1, 1, 0).is_ok());
        }
        s.forget_local(&super::super::Forget {
            breakers: vec!["a".into()],
            breaker_prefixes: vec!["a/".into()],
            scopes: vec!["route:r".into(), "key:k".into()],
            scope_prefixes: vec!["key:k:".into()],
        });
        let mut breakers: Vec<String> = s.breakers().into_keys().collect();
        breakers.sort();
        assert_eq!(breakers, ["ab", "b"]);
        let mut budgets: Vec<String> = s.budgets().into_keys().collect();
        budgets.sort();
        assert_eq!(budgets, ["key:kk", "route:r:x"]);
        // the forgotten window is empty again; the other is still used up
        assert!(s.rate_local("key:k:rpm", 1, 1, 0).is_ok());
        assert!(s.rate_local("key:kk:rpm", 1, 1, 0).is_err());
    }
}
