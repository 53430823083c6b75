//! Fleet budgets and rate limits: Lua scripts while connected, local books while not.
//!
//! Owns the budget scripts' callers (reserve, settle/release, read), what this replica
//! knows that Redis does not (spend and reservations from an outage, pushed on resync),
//! the local enforcement while degraded, and the GCRA call.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;

use super::scripts::{GCRA, RESERVE, SETTLE};
use super::Inner;
use crate::clock::{duration_ms, UnixMillis};
use crate::cost::{BudgetState, Money};
use crate::ratelimit::{spacing_us, PERIOD};

/// Set in the ids of reservations made locally while degraded: Redis never saw them, so
/// settling one only adds spend.
pub(super) const LOCAL_ID: u64 = 1 << 63;

/// Keeps the GCRA's Lua arithmetic (doubles) exact.
const MAX_EXACT_US: u64 = 1 << 52;

/// The Redis reservation behind `id`, unless it was made locally.
pub(super) fn remote_id(id: u64) -> Option<u64> {
    (id & LOCAL_ID == 0).then_some(id)
}

/// What this replica knows of one budget beyond Redis: the spend Redis last reported, and
/// what Redis has not (yet, or not knowingly) been told. Everything owed is sent again until
/// Redis answers; Redis counts each settle and each push once however often it arrives
/// (`scripts::SETTLE`), so a lost reply never counts spend twice.
#[derive(Debug, Default)]
pub(super) struct Books {
    /// Settled spend as Redis last reported it.
    known_spent: Money,
    /// Held by reservations made here while degraded (Redis never saw them).
    local_reserved: Money,
    /// Spend settled here on local reservations and not sent yet.
    fresh: Money,
    /// Redis reservations to drop (released here, or reserved with a lost reply), not sent
    /// yet (dropping one twice is harmless).
    drop: Vec<u64>,
    /// Settles of Redis reservations not known to have reached Redis: (id, spend).
    settles: Vec<(u64, Money)>,
    /// Pushes of spend whose answer was lost: (push id, spend), sent again with the same id.
    sent: Vec<(u64, Money)>,
}

impl Books {
    /// Spend settled here that Redis is not known to have.
    fn pending(&self) -> Money {
        let owed = self.settles.iter().chain(&self.sent).map(|(_, m)| *m);
        owed.fold(self.fresh, |a, b| a + b)
    }

    fn owes(&self) -> bool {
        self.fresh != Money::ZERO
            || !self.drop.is_empty()
            || !self.settles.is_empty()
            || !self.sent.is_empty()
    }
}

/// One call of the settle script: what it adds, settles and drops.
#[derive(Debug, Clone, Default)]
pub(super) struct Push {
    /// Spend to add.
    spend: Money,
    /// The Redis reservation `spend` settles (counted only while it is held or lapsed).
    settles: Option<u64>,
    /// The push's id, for spend on no Redis reservation (counted once per id).
    id: Option<u64>,
    /// Reservations to drop.
    drops: Vec<u64>,
}

/// The books as a budget script returns them.
#[derive(Debug, Clone, Copy)]
struct Remote {
    spent: Money,
    reserved: Money,
}

fn money(s: &str) -> Option<Money> {
    s.parse().ok().map(Money::from_picos)
}

impl Inner {
    pub(super) async fn reserve(
        &self,
        scope: &str,
        limit: Money,
        amount: Money,
        lease: Duration,
    ) -> Result<u64, BudgetState> {
        let now = self.clock.unix_ms();
        let extra = self.with_books(scope, |b| b.pending() + b.local_reserved);
        // chosen here, so a reservation whose reply is lost can still be dropped
        let id = fastrand::u64(1..LOCAL_ID);
        let mut inv = RESERVE.prepare_invoke();
        inv.key(self.keys.books(scope))
            .key(self.keys.leases(scope))
            .arg(now)
            .arg(limit.picos())
            .arg(amount.picos())
            .arg(extra.picos())
            .arg(now.saturating_add(duration_ms(lease)))
            .arg(id);
        let reply: Option<(i64, String, String)> = self
            .link
            .call("budget reserve", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await;
        let parsed = reply.and_then(|(code, s, r)| Some((code, self.note(scope, &s, &r)?)));
        match parsed {
            Some((1, _)) => Ok(id),
            Some((0, remote)) => Err(self.view(scope, limit, Some(remote))),
            _ => {
                // Unknown outcome (no reply, or a reply we cannot read): the script may
                // have reserved in Redis. Drop that id at the next resync (a tombstone
                // stops it if it has not run yet) and hold the money locally.
                self.keep_drop(scope, id);
                self.reserve_local(scope, limit, amount)
            }
        }
    }

    fn reserve_local(&self, scope: &str, limit: Money, amount: Money) -> Result<u64, BudgetState> {
        let mut books = self.books();
        let b = books.entry(scope.to_owned()).or_default();
        let state = BudgetState {
            limit,
            spent: b.known_spent + b.pending(),
            reserved: b.local_reserved,
        };
        if state.spent + state.reserved + amount > limit {
            return Err(state);
        }
        b.local_reserved += amount;
        Ok(LOCAL_ID | (self.local_ids.fetch_add(1, Ordering::Relaxed) + 1))
    }

    pub(super) async fn settle(&self, scope: &str, id: u64, reserved: Money, actual: Money) {
        let remote = self.release_now(scope, id, reserved);
        self.spend(scope, actual, remote).await;
    }

    pub(super) async fn budget(&self, scope: &str, limit: Money) -> BudgetState {
        let remote = self.push(scope, Push::default()).await;
        self.view(scope, limit, remote)
    }

    /// The books as this replica sees them: Redis's (or the last known spend) plus what
    /// Redis has not heard of yet.
    fn view(&self, scope: &str, limit: Money, remote: Option<Remote>) -> BudgetState {
        self.with_books(scope, |b| BudgetState {
            limit,
            spent: remote.map_or(b.known_spent, |r| r.spent) + b.pending(),
            reserved: remote.map_or(Money::ZERO, |r| r.reserved) + b.local_reserved,
        })
    }

    /// Give back a local reservation at once; returns the Redis reservation id otherwise.
    pub(super) fn release_now(&self, scope: &str, id: u64, amount: Money) -> Option<u64> {
        let remote = remote_id(id);
        if remote.is_none() {
            self.with_books(scope, |b| {
                b.local_reserved = b.local_reserved.saturating_sub(amount);
            });
        }
        remote
    }

    /// Record `spend` in Redis: settling Redis reservation `id`, or (`None`: a local
    /// reservation's) as a push with an id of its own. Kept for the resync when Redis does
    /// not answer; never counted twice.
    pub(super) async fn spend(&self, scope: &str, spend: Money, id: Option<u64>) {
        if let Some(id) = id {
            let push = Push {
                spend,
                settles: Some(id),
                ..Push::default()
            };
            if self.push(scope, push).await.is_none() {
                self.with_books(scope, |b| b.settles.push((id, spend)));
            }
            return;
        }
        if spend == Money::ZERO {
            return;
        }
        if !self.link.is_connected() {
            self.with_books(scope, |b| b.fresh += spend);
            return;
        }
        let push_id = fastrand::u64(1..);
        let push = Push {
            spend,
            id: Some(push_id),
            ..Push::default()
        };
        if self.push(scope, push).await.is_none() {
            self.with_books(scope, |b| b.sent.push((push_id, spend)));
        }
    }

    /// Drop Redis reservation `id` (released, or reserved with a lost reply), or keep the
    /// drop for the resync.
    pub(super) async fn drop_remote(&self, scope: &str, id: u64) {
        let push = Push {
            drops: vec![id],
            ..Push::default()
        };
        if self.push(scope, push).await.is_none() {
            self.keep_drop(scope, id);
        }
    }

    /// A drop for the resync.
    pub(super) fn keep_drop(&self, scope: &str, id: u64) {
        self.with_books(scope, |b| b.drop.push(id));
    }

    /// A settle (`Some` Redis reservation) or local spend for the resync.
    pub(super) fn keep_spend(&self, scope: &str, spend: Money, id: Option<u64>) {
        self.with_books(scope, |b| match id {
            Some(id) => b.settles.push((id, spend)),
            None => b.fresh += spend,
        });
    }

    async fn push(&self, scope: &str, push: Push) -> Option<Remote> {
        let conn = self.link.conn()?;
        self.push_on(&conn, scope, push).await
    }

    async fn push_on(
        &self,
        conn: &MultiplexedConnection,
        scope: &str,
        push: Push,
    ) -> Option<Remote> {
        let mut inv = SETTLE.prepare_invoke();
        let id = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
        inv.key(self.keys.books(scope))
            .key(self.keys.leases(scope))
            .arg(self.clock.unix_ms())
            .arg(push.spend.picos())
            .arg(id(push.settles))
            .arg(id(push.id))
            .arg(push.drops);
        let (s, r): (String, String) = self
            .link
            .call_on(conn, "budget settle", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await?;
        self.note(scope, &s, &r)
    }

    /// Send what was kept during an outage: local spend (under a push id chosen now, kept
    /// until answered), drops, then settles and pushes not known to have arrived. `None` if
    /// Redis failed (what is left stays owed).
    pub(super) async fn sync_budgets(&self, conn: &MultiplexedConnection) -> Option<()> {
        let owing: Vec<String> = (self.books().iter())
            .filter(|(_, b)| b.owes())
            .map(|(scope, _)| scope.clone())
            .collect();
        for scope in owing {
            let (drops, settles, sent) = self.with_books(&scope, |b| {
                if b.fresh != Money::ZERO {
                    b.sent.push((fastrand::u64(1..), b.fresh));
                    b.fresh = Money::ZERO;
                }
                (b.drop.clone(), b.settles.clone(), b.sent.clone())
            });
            if !drops.is_empty() {
                let push = Push {
                    drops: drops.clone(),
                    ..Push::default()
                };
                self.push_on(conn, &scope, push).await?;
                self.with_books(&scope, |b| b.drop.retain(|id| !drops.contains(id)));
            }
            for (id, spend) in settles {
                let push = Push {
                    spend,
                    settles: Some(id),
                    ..Push::default()
                };
                self.push_on(conn, &scope, push).await?;
                self.with_books(&scope, |b| b.settles.retain(|s| s.0 != id));
            }
            for (id, spend) in sent {
                let push = Push {
                    spend,
                    id: Some(id),
                    ..Push::default()
                };
                self.push_on(conn, &scope, push).await?;
                self.with_books(&scope, |b| b.sent.retain(|s| s.0 != id));
            }
        }
        Some(())
    }

    /// Spend not yet in Redis, by scope.
    pub(super) fn pending_spend(&self) -> HashMap<String, Money> {
        self.books()
            .iter()
            .filter(|(_, b)| b.pending() != Money::ZERO)
            .map(|(scope, b)| (scope.clone(), b.pending()))
            .collect()
    }

    /// Remember what Redis said (the spend enforced while degraded).
    fn note(&self, scope: &str, spent: &str, reserved: &str) -> Option<Remote> {
        let remote = Remote {
            spent: money(spent)?,
            reserved: money(reserved)?,
        };
        self.with_books(scope, |b| b.known_spent = remote.spent);
        Some(remote)
    }

    fn books(&self) -> MutexGuard<'_, HashMap<String, Books>> {
        // The books stay usable after a panic elsewhere: every update is one assignment.
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_books<R>(&self, scope: &str, f: impl FnOnce(&mut Books) -> R) -> R {
        f(self.books().entry(scope.to_owned()).or_default())
    }

    pub(super) async fn rate(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
    ) -> Result<(), Duration> {
        match self.gcra(bucket, limit, cost, now, true).await {
            Some(0) => Ok(()),
            Some(wait_us) => Err(Duration::from_micros(wait_us)),
            None => self.mirror.rate_local(bucket, limit, cost, now),
        }
    }

    pub(super) async fn rate_add(&self, bucket: &str, limit: u64, amount: u64, now: UnixMillis) {
        if self.gcra(bucket, limit, amount, now, false).await.is_none() {
            self.mirror.rate_add_local(bucket, limit, amount, now);
        }
    }

    /// One GCRA call: `Some(0)` admitted (or added), `Some(wait µs)`, `None` if degraded.
    async fn gcra(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
        check: bool,
    ) -> Option<u64> {
        let t = spacing_us(limit);
        let period_us = u64::try_from(PERIOD.as_micros()).unwrap_or(u64::MAX);
        let mut inv = GCRA.prepare_invoke();
        inv.key(self.keys.rate(bucket))
            .arg(now.saturating_mul(1000))
            .arg(cost.max(1).saturating_mul(t).min(MAX_EXACT_US))
            .arg(cost.saturating_mul(t).min(MAX_EXACT_US))
            .arg(period_us.max(t))
            .arg(if check { "1" } else { "0" });
        self.link
            .call("rate limit", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await
    }
}
