//! Fleet breakers: the mirror answers admission; Redis holds the truth per provider.
//!
//! Owns how a breaker [`Op`] reaches Redis: admission reads the mirror and, in half-open,
//! takes the fleet's probe lease; a change to the shared state is a compare-and-set loop
//! (read, apply the pure transition in Rust, write back if unchanged) published to every
//! replica; an op that changes nothing shared (a success while healthy: the hot path)
//! stays local. Also owns the merge of what Redis says into the mirror (pub/sub, poll,
//! resync) and pushing circuits opened locally during an outage.

use ::redis::aio::MultiplexedConnection;
use ::redis::AsyncCommands;
use serde::{Deserialize, Serialize};

use super::scripts::{BREAKER_ALL, BREAKER_CAS, BREAKER_TTL, PROBE_RELEASE, PROBE_RENEW};
use super::Inner;
use crate::breaker::{
    Admission, Applied, Breaker, BreakerConfig, CircuitState, Op, SkipReason, Transition, Trigger,
};
use crate::clock::{duration_ms, UnixMillis};
use crate::state::SharedState;

/// Compare-and-set attempts before an op falls back to the mirror alone.
const CAS_TRIES: usize = 8;

/// A breaker as stored in Redis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stored {
    /// Bumped by every write, so replicas merge only newer states.
    v: u64,
    /// [`Breaker::shared`].
    b: Breaker,
}

/// A write, as published on the channel.
#[derive(Debug, Serialize, Deserialize)]
struct Message {
    p: String,
    v: u64,
    b: Breaker,
    /// The replica that wrote it (absent from an older replica's messages).
    #[serde(default)]
    r: String,
}

/// Whose change a merge brings into the mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whose {
    /// This replica's own write: it reported the change when it made it.
    Own,
    /// Another replica's (or one of unknown origin, read back from Redis).
    Fleet,
}

impl Stored {
    fn parse(raw: Option<&str>, provider: &str) -> Stored {
        let Some(raw) = raw else {
            return Stored::default();
        };
        serde_json::from_str(raw).unwrap_or_else(|e| {
            tracing::warn!(provider, error = %e, "shared state: unreadable breaker in Redis; overwriting");
            Stored::default()
        })
    }
}

impl Inner {
    pub(super) async fn breaker_op(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Applied {
        match op {
            Op::Admit { lease_for } => self.admit(provider, cfg, now, lease_for).await,
            Op::Renew { lease, until_ms } => {
                let applied = self.mirror.apply(provider, cfg, now, op);
                let ms = until_ms.saturating_sub(now).max(1);
                self.renew_probe_key(provider, lease, ms).await;
                applied
            }
            Op::Release { lease } => {
                let applied = self.mirror.apply(provider, cfg, now, op);
                self.release_probe_key(provider, lease).await;
                applied
            }
            Op::AttemptFailed { .. }
            | Op::TurnFailed { .. }
            | Op::Succeeded { .. }
            | Op::CheckFailed { .. }
            | Op::CheckPassed { .. } => {
                let applied = self.verdict(provider, cfg, now, op).await;
                if let Some(lease) = probe_over(op, &applied) {
                    self.release_probe_key(provider, lease).await;
                }
                applied
            }
        }
    }

    /// Admission from the mirror; a half-open admission must also win the fleet's lease.
    async fn admit(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        lease_for: std::time::Duration,
    ) -> Applied {
        let applied = self
            .mirror
            .apply(provider, cfg, now, Op::Admit { lease_for });
        let Admission::Probe { lease } = applied.admission else {
            return applied;
        };
        let key = self.keys.probe(provider);
        let holder = self.holder(lease);
        let ms = duration_ms(lease_for).max(1);
        let won = self
            .link
            .call("probe lease", |mut c| async move {
                ::redis::cmd("SET")
                    .arg(&key)
                    .arg(&holder)
                    .arg("NX")
                    .arg("PX")
                    .arg(ms)
                    .query_async::<Option<String>>(&mut c)
                    .await
            })
            .await;
        match won {
            // Another replica probes: give the local lease back.
            Some(None) => {
                self.mirror.apply(provider, cfg, now, Op::Release { lease });
                Applied {
                    admission: Admission::Reject(SkipReason::ProbeInFlight),
                    transition: None,
                }
            }
            // Won, or Redis is away and this replica probes on its own.
            Some(Some(_)) | None => applied,
        }
    }

    /// An op that may change the shared state: through Redis when it does.
    async fn verdict(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Applied {
        let mut preview = self.mirror.breaker(provider).await;
        let before = preview.shared();
        preview.apply(cfg, now, op);
        if preview.shared() == before || !self.link.is_connected() {
            return self.mirror.apply(provider, cfg, now, op);
        }
        match self.compare_and_set(provider, cfg, now, op).await {
            Some(applied) => applied,
            None => self.mirror.apply(provider, cfg, now, op),
        }
    }

    /// Read, apply, write back if unchanged; retried on conflict. `None` if Redis failed
    /// or the retries ran out.
    async fn compare_and_set(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Option<Applied> {
        for _ in 0..CAS_TRIES {
            let (raw, stored) = self.read_breaker(provider).await?;
            let mut work = self.mirror.breaker(provider).await;
            work.merge_shared(stored.b);
            let applied = work.apply(cfg, now, op);
            if work.shared() == stored.b {
                // The fleet already had it: only local effects (the probe lease) remain.
                self.merge(provider, stored, Whose::Fleet);
                return Some(self.mirror.apply(provider, cfg, now, op));
            }
            let next = Stored {
                v: stored.v + 1,
                b: work.shared(),
            };
            if self.write_breaker(provider, raw.as_deref(), next).await? {
                self.merge(provider, next, Whose::Own);
                return Some(applied);
            }
        }
        tracing::warn!(
            provider,
            "shared state: breaker write kept conflicting; applied locally"
        );
        None
    }

    async fn read_breaker(&self, provider: &str) -> Option<(Option<String>, Stored)> {
        let key = self.keys.breaker(provider);
        let raw: Option<String> = self
            .link
            .call("breaker read", |mut c| async move { c.get(&key).await })
            .await?;
        let stored = Stored::parse(raw.as_deref(), provider);
        Some((raw, stored))
    }

    /// The compare-and-set write; `Some(false)` on conflict.
    async fn write_breaker(
        &self,
        provider: &str,
        expected: Option<&str>,
        next: Stored,
    ) -> Option<bool> {
        let conn = self.link.conn()?;
        self.write_breaker_on(&conn, provider, expected, next).await
    }

    async fn write_breaker_on(
        &self,
        conn: &MultiplexedConnection,
        provider: &str,
        expected: Option<&str>,
        next: Stored,
    ) -> Option<bool> {
        let value = serde_json::to_string(&next).ok()?;
        let message = serde_json::to_string(&Message {
            p: provider.to_owned(),
            v: next.v,
            b: next.b,
            r: self.replica.clone(),
        })
        .ok()?;
        let mut inv = BREAKER_CAS.prepare_invoke();
        inv.key(self.keys.breaker(provider))
            .key(self.keys.breaker_index())
            .arg(expected.unwrap_or(""))
            .arg(value)
            .arg(duration_ms(BREAKER_TTL))
            .arg(self.keys.channel())
            .arg(message)
            .arg(provider);
        let written: i64 = self
            .link
            .call_on(conn, "breaker write", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await?;
        Some(written == 1)
    }

    /// Merge a shared state into the mirror if it is newer than what was merged last; a
    /// change of circuit state that another replica made goes to the fleet sink.
    pub(super) fn merge(&self, provider: &str, stored: Stored, whose: Whose) {
        let Ok(mut versions) = self.versions.lock() else {
            return;
        };
        let known = versions.entry(provider.to_owned()).or_insert(0);
        if stored.v <= *known {
            return;
        }
        *known = stored.v;
        // merged under the versions' lock: an older state never lands after a newer one
        let merged = self.mirror.merge_breaker(provider, stored.b);
        drop(versions);
        if let (Some((before, after)), Whose::Fleet) = (merged, whose) {
            self.tell_fleet(provider, &before, &after);
        }
    }

    /// Tell the fleet sink (if one watches) of the circuit change between `before` and
    /// `after`, as of now.
    fn tell_fleet(&self, provider: &str, before: &Breaker, after: &Breaker) {
        let Some(sink) = self.fleet.get() else {
            return;
        };
        let now = self.clock.unix_ms();
        let (from, to) = (before.state(now), after.state(now));
        if from == to {
            return;
        }
        let seen = after.snapshot(now);
        let open = to == CircuitState::Open;
        let transition = Transition {
            cause: seen.opened_by.filter(|_| open),
            cooldown_ms: open.then(|| seen.last_open_until.saturating_sub(now)),
            ..Transition::new(from, to, now, Trigger::Fleet)
        };
        sink(provider, &transition);
    }

    /// A write published by some replica (this one included: its own echo changes
    /// nothing it has not reported).
    pub(super) fn on_message(&self, payload: &str) {
        match serde_json::from_str::<Message>(payload) {
            Ok(m) => {
                let whose = if m.r == self.replica {
                    Whose::Own
                } else {
                    Whose::Fleet
                };
                self.merge(&m.p, Stored { v: m.v, b: m.b }, whose);
            }
            Err(e) => tracing::warn!(error = %e, "shared state: unreadable breaker message"),
        }
    }

    /// Pull every breaker from Redis into the mirror, pushing first the circuits this
    /// replica opened that Redis does not know (opened while degraded, or Redis lost
    /// them). `None` if Redis failed.
    pub(super) async fn sync_breakers(&self, conn: &MultiplexedConnection) -> Option<()> {
        let mut inv = BREAKER_ALL.prepare_invoke();
        inv.key(self.keys.breaker_index())
            .arg(self.keys.breaker_prefix());
        let flat: Vec<String> = self
            .link
            .call_on(conn, "breaker poll", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await?;
        let mut remote: std::collections::HashMap<String, String> = flat
            .chunks_exact(2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect();
        for (provider, local) in self.mirror.breakers() {
            let raw = remote.remove(&provider);
            self.reconcile(conn, &provider, local, raw).await?;
        }
        for (provider, raw) in remote {
            self.merge(
                &provider,
                Stored::parse(Some(&raw), &provider),
                Whose::Fleet,
            );
        }
        Some(())
    }

    async fn reconcile(
        &self,
        conn: &MultiplexedConnection,
        provider: &str,
        local: Breaker,
        raw: Option<String>,
    ) -> Option<()> {
        let stored = Stored::parse(raw.as_deref(), provider);
        if newer_opening(&local, &stored.b) {
            let next = Stored {
                v: stored.v + 1,
                b: local.shared(),
            };
            if self
                .write_breaker_on(conn, provider, raw.as_deref(), next)
                .await?
            {
                self.merge(provider, next, Whose::Own);
            }
            return Some(());
        }
        if raw.is_none() {
            // Gone from Redis (expired, flushed): the next write starts versions anew.
            if let Ok(mut versions) = self.versions.lock() {
                versions.remove(provider);
            }
            return Some(());
        }
        self.merge(provider, stored, Whose::Fleet);
        Some(())
    }

    /// Give the fleet's probe lease back if this replica holds it as `lease`.
    pub(super) async fn release_probe_key(&self, provider: &str, lease: u64) {
        let mut inv = PROBE_RELEASE.prepare_invoke();
        inv.key(self.keys.probe(provider)).arg(self.holder(lease));
        let _: Option<i64> = self
            .link
            .call("probe release", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await;
    }

    async fn renew_probe_key(&self, provider: &str, lease: u64, ms: u64) {
        let mut inv = PROBE_RENEW.prepare_invoke();
        inv.key(self.keys.probe(provider))
            .arg(self.holder(lease))
            .arg(ms);
        let _: Option<i64> = self
            .link
            .call("probe renew", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await;
    }

    fn holder(&self, lease: u64) -> String {
        format!("{}:{lease}", self.replica)
    }
}

/// The lease whose probe ended with `op` (its key must go), if any.
fn probe_over(op: Op, applied: &Applied) -> Option<u64> {
    match op {
        Op::Succeeded { lease } | Op::TurnFailed { lease, .. } => lease,
        Op::AttemptFailed { lease, .. } => lease.filter(|_| {
            applied
                .transition
                .is_some_and(|t| t.to == CircuitState::Open)
        }),
        Op::Release { lease } => Some(lease),
        Op::Admit { .. } | Op::Renew { .. } | Op::CheckFailed { .. } | Op::CheckPassed { .. } => {
            None
        }
    }
}

/// True when `local` is open on an opening more recent than any `remote` knows.
fn newer_opening(local: &Breaker, remote: &Breaker) -> bool {
    // Read at time 0, any opening is not closed: only the raw state tag matters here.
    let l = local.snapshot(0);
    let r = remote.snapshot(0);
    l.state != CircuitState::Closed && l.last_open_until > r.last_open_until
}
