//! Fleet state in Redis: breakers, the half-open probe lease, budgets and rate limits
//! shared by every replica, with a local mirror that keeps serving when Redis is away.
//!
//! Owns [`RedisState`] (a [`SharedState`]), its configuration, the Redis key layout and
//! Lua scripts, the pub/sub listener and the resync after an outage. Decisions stay the
//! pure functions of `breaker`, `cost` and `ratelimit`; this module only makes them
//! atomic across processes. It spawns nothing: the server runs [`RedisState::background`]
//! on its task tracker. (The `redis` crate runs one driver task per open connection,
//! owned by the connection handle and ended when it is dropped.)
//!
//! # Consistency while connected
//! - Breakers: Redis holds the truth per provider; state changes are compare-and-set
//!   (read, apply [`Breaker::apply`] in Rust, write back if unchanged, bounded retries)
//!   and published, so every replica's mirror follows within one pub/sub hop; a poll
//!   every `sync_interval` backs pub/sub up. Admission reads the mirror only (no Redis
//!   round trip) except to take the half-open probe lease, which is one `SET NX PX` for
//!   the whole fleet: exactly one probe, expiring with its holder. A mirror may admit
//!   traffic for at most one pub/sub hop after another replica opened a circuit.
//! - Budgets: reserve, settle and release are Lua scripts over integer pico-dollars, so
//!   the fleet never reserves past a limit; a reservation whose holder died lapses after
//!   its lease. A settle or push whose reply is lost is sent again on resync and counted
//!   once: a settle adds spend only while its reservation is held (or lapsed unsettled), a
//!   push of spend made while degraded carries an id Redis remembers for a day. A write
//!   Redis did not answer is never recorded as done: it stays owed until Redis answers.
//! - Rate limits: one GCRA per bucket in a Lua script, with `ratelimit::Gcra`'s exact
//!   integer arithmetic (µs; exact while timestamps stay below 2⁵³ µs, year 2255).
//!
//! # Consistency while degraded
//! Any Redis call that errs or takes longer than `op_timeout` marks the store degraded;
//! from then on every operation is answered locally, without waiting on Redis, until the
//! background task reconnects and resyncs. Requests never fail because Redis did.
//! - Breakers run on the local mirror: this replica opens and probes on its own evidence
//!   (one probe per replica, not per fleet). On resync, circuits this replica opened that
//!   Redis does not know are pushed; everything else is pulled from Redis.
//! - Budgets are enforced locally on the last spend read from Redis plus this replica's
//!   own spend and reservations since. **A fleet can overspend a budget by what its
//!   replicas spend while partitioned from Redis**: each one only sees its own spend.
//!   Local spend is kept as pending deltas per scope and pushed (`HINCRBY`) on resync.
//! - Rate limits count this replica's traffic only: a fleet of N degraded replicas can
//!   admit up to N times a limit.
//! - Stored values (`kv_*`) travel on a connection of their own (to `store_url` when set:
//!   a Redis of their own, which cannot then evict budget books or fill the memory budget
//!   writes need), so their outage, or a write their Redis refuses (`OOM`), degrades them
//!   alone. Values written while their Redis is away (or refusing) stay on this replica
//!   (its mirror) until they expire: other replicas do not see them, and they are not
//!   pushed on resync. A read that Redis misses also looks in the mirror; a delete deletes
//!   in both.
//!
//! Before a server trusts a Redis with budgets it reads its `maxmemory-policy`
//! ([`eviction_policy`]): an `allkeys-*` policy can evict budget books.
//!
//! Standalone Redis (or one shard): the scripts touch keys derived from their arguments.
//! Paused tokio time does not mix with real sockets: under `start_paused` the op timeout
//! fires at once and the store degrades, so timing tests use the memory store.

mod breakers;
mod budgets;
mod credentials;
mod kv;
mod link;
mod policy;
mod scripts;
mod sync;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Cleanup, FleetSink, MemoryState, SharedState, StateStatus};
use crate::breaker::{Applied, Breaker, BreakerConfig, Op};
use crate::clock::{Clock, UnixMillis};
use crate::cost::{BudgetState, Money};
use budgets::Books;
use link::Link;
pub use policy::{eviction_policy, Eviction};
use scripts::Keys;

/// Cleanups queued for Redis before `cleanup` stops queueing and counts drops.
const QUEUE_CAPACITY: usize = 65_536;

/// How to reach Redis and how long to wait for it.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` (the password never appears in errors,
    /// logs, `Debug` or [`StateStatus`]).
    pub url: String,
    /// Prefix of every key and channel, so several gateways (or tests) can share a
    /// Redis. Default `switchyard`.
    pub prefix: String,
    /// The longest any request waits on Redis; past it the store degrades to local
    /// state. Default 50 ms.
    pub op_timeout: Duration,
    /// How often the background task polls Redis (backing up pub/sub) and, while
    /// degraded, tries to reconnect. Default 1 s.
    pub sync_interval: Duration,
    /// What stored values (`kv_*`) written while Redis is away may cost this replica's
    /// memory (its mirror's bound). Default [`super::KV_MEMORY_BYTES`].
    pub local_store_bytes: usize,
    /// Where stored values (`kv_*`: stored conversations) go: a Redis of their own, so
    /// that they can neither evict budget state nor fill the memory budget writes need
    /// (`None`, the default: `url`). Either way they travel on a connection of their own,
    /// so a large value never delays a budget call, and a write Redis refuses (`OOM`) is
    /// that value's failure only.
    pub store_url: Option<String>,
}

impl RedisConfig {
    /// Defaults for everything but the URL.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: "switchyard".to_owned(),
            op_timeout: Duration::from_millis(50),
            sync_interval: Duration::from_secs(1),
            local_store_bytes: super::KV_MEMORY_BYTES,
            store_url: None,
        }
    }

    /// The URL with its passwords replaced by `***` (the userinfo's, found without parsing
    /// the URL, and `pass` / `password` query parameters').
    #[must_use]
    pub fn redacted_url(&self) -> String {
        credentials::mask(&self.url)
    }

    /// Check the URL can be read as written, before anything parses it.
    ///
    /// # Errors
    /// A password (or user name) holding `/`, `?` or `#` unescaped: a URL parser would
    /// misread the host. The message shows the URL masked and says to percent-encode.
    pub fn check_url(&self) -> Result<(), String> {
        let urls = std::iter::once(&self.url).chain(&self.store_url);
        urls.filter_map(|u| credentials::problem(u))
            .next()
            .map_or(Ok(()), Err)
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.redacted_url())
            .field("prefix", &self.prefix)
            .field("op_timeout", &self.op_timeout)
            .field("sync_interval", &self.sync_interval)
            .field("local_store_bytes", &self.local_store_bytes)
            .field(
                "store_url",
                &self.store_url.as_deref().map(credentials::mask),
            )
            .finish()
    }
}

/// A [`SharedState`] shared by a fleet through Redis (see the module docs for what it
/// guarantees, connected and degraded). Cheap to clone: clones share one store.
#[derive(Clone)]
pub struct RedisState {
    inner: Arc<Inner>,
}

/// Everything a replica's store holds; shared by the handle and the background task.
struct Inner {
    keys: Keys,
    /// This process in the fleet (`hex`), written into the probe leases it holds.
    replica: String,
    clock: Clock,
    sync_interval: Duration,
    link: Link,
    /// The connection stored values (`kv_*`) take: to `store_url`, else to `url` beside
    /// `link`. Its failures degrade stored values only.
    kv_link: Link,
    /// The local half: breaker mirror (admission) and rate windows used while degraded.
    mirror: MemoryState,
    /// The newest shared version merged into the mirror, per provider, so a slow poll
    /// never rolls back what pub/sub already delivered.
    versions: Mutex<HashMap<String, u64>>,
    /// What this replica knows of each budget beyond Redis (last spend read; spend and
    /// reservations not yet in Redis).
    books: Mutex<HashMap<String, Books>>,
    /// Ids of reservations made locally while degraded (with [`budgets::LOCAL_ID`] set).
    local_ids: AtomicU64,
    queue: mpsc::Sender<Cleanup>,
    /// The receiving end, taken by the first `background` call.
    queue_rx: Mutex<Option<mpsc::Receiver<Cleanup>>>,
    /// Cleanups not queued because the queue was full (applied locally instead).
    dropped: AtomicU64,
    /// True while the background task is subscribed to breaker changes.
    listening: AtomicBool,
    /// Told of circuit changes other replicas make (`SharedState::watch_fleet`).
    fleet: OnceLock<FleetSink>,
}

impl RedisState {
    /// Connect to Redis. Never fails and never blocks longer than about
    /// `max(op_timeout, sync_interval)`: an unreachable Redis (or an unparseable URL) gives a
    /// store that starts degraded, serving locally, and connects from
    /// [`background`](Self::background) when Redis answers.
    pub async fn connect(cfg: RedisConfig, clock: Clock) -> RedisState {
        let (queue, rx) = mpsc::channel(QUEUE_CAPACITY);
        let connect_timeout = cfg.sync_interval.max(cfg.op_timeout);
        let inner = Inner {
            keys: Keys::new(&cfg.prefix),
            replica: format!("{:016x}", fastrand::u64(..)),
            clock,
            sync_interval: cfg.sync_interval,
            link: Link::new(
                &cfg.url,
                cfg.op_timeout,
                connect_timeout,
                clock,
                "shared state",
            ),
            kv_link: Link::new(
                cfg.store_url.as_deref().unwrap_or(&cfg.url),
                cfg.op_timeout,
                connect_timeout,
                clock,
                "stored conversations",
            ),
            mirror: MemoryState::with_kv_limit(cfg.local_store_bytes),
            versions: Mutex::default(),
            books: Mutex::default(),
            local_ids: AtomicU64::new(0),
            queue,
            queue_rx: Mutex::new(Some(rx)),
            dropped: AtomicU64::new(0),
            listening: AtomicBool::new(false),
            fleet: OnceLock::new(),
        };
        let (conn, kv_conn) = tokio::join!(inner.link.open(), inner.kv_link.open());
        if let Some(conn) = conn {
            if inner.resync(&conn).await.is_some() {
                inner.link.up(conn);
            }
        }
        if let Some(kv_conn) = kv_conn {
            inner.kv_link.up(kv_conn);
        }
        RedisState {
            inner: Arc::new(inner),
        }
    }

    /// The store's background work: the pub/sub listener (other replicas' breaker
    /// changes), the periodic poll, draining cleanups queued by `Drop`, reconnecting and
    /// resyncing after an outage. The server spawns it once on its task tracker; it
    /// returns promptly after `stop` fires (after pushing what is already queued, each
    /// call bounded by `op_timeout`). Without it the store still answers, but sees other
    /// replicas' changes only through its own writes, cleanups stay queued and a lost
    /// connection stays lost. A second call returns a future that ends at once.
    pub fn background(&self, stop: CancellationToken) -> impl Future<Output = ()> + Send + 'static {
        let inner = Arc::clone(&self.inner);
        async move { sync::run(inner, stop).await }
    }

    /// This replica's id in the fleet (random per process).
    #[must_use]
    pub fn replica_id(&self) -> &str {
        &self.inner.replica
    }

    /// The local mirror (breakers as this replica sees them; rate windows used while
    /// degraded). For reports; decisions go through [`SharedState`].
    #[must_use]
    pub fn mirror(&self) -> &MemoryState {
        &self.inner.mirror
    }

    /// True while the background task is subscribed to breaker changes (so a circuit
    /// opened elsewhere reaches this replica's mirror within one pub/sub hop).
    #[must_use]
    pub fn listening(&self) -> bool {
        self.inner.listening.load(Ordering::Acquire)
    }

    /// Cleanups that found the queue full and were applied locally only (their Redis
    /// side is left to lapse or to the next resync). For metrics.
    #[must_use]
    pub fn dropped_cleanups(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Spend recorded locally and not yet pushed to Redis, by scope (non-zero only
    /// after an outage, until the resync). For metrics and tests.
    #[must_use]
    pub fn pending_spend(&self) -> HashMap<String, Money> {
        self.inner.pending_spend()
    }
}

impl fmt::Debug for RedisState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisState")
            .field("replica", &self.inner.replica)
            .field("status", &self.inner.link.status())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl SharedState for RedisState {
    async fn breaker_op(
        &self,
        provider: &str,
        cfg: &BreakerConfig,
        now: UnixMillis,
        op: Op,
    ) -> Applied {
        self.inner.breaker_op(provider, cfg, now, op).await
    }

    /// As mirrored on this replica (at most one pub/sub hop behind the fleet).
    async fn breaker(&self, provider: &str) -> Breaker {
        self.inner.mirror.breaker(provider).await
    }

    async fn reserve(
        &self,
        scope: &str,
        limit: Money,
        amount: Money,
        lease: Duration,
    ) -> Result<u64, BudgetState> {
        self.inner.reserve(scope, limit, amount, lease).await
    }

    async fn settle(&self, scope: &str, id: u64, reserved: Money, actual: Money) {
        self.inner.settle(scope, id, reserved, actual).await;
    }

    async fn budget(&self, scope: &str, limit: Money) -> BudgetState {
        self.inner.budget(scope, limit).await
    }

    async fn rate(
        &self,
        bucket: &str,
        limit: u64,
        cost: u64,
        now: UnixMillis,
    ) -> Result<(), Duration> {
        self.inner.rate(bucket, limit, cost, now).await
    }

    async fn rate_add(&self, bucket: &str, limit: u64, amount: u64, now: UnixMillis) {
        self.inner.rate_add(bucket, limit, amount, now).await;
    }

    /// One `SET PX` in a script (take if free, renew if ours); while Redis is away each
    /// replica holds its own leases locally (so each checks on its own until it is back).
    async fn try_lease(&self, name: &str, holder: &str, ttl: Duration, now: UnixMillis) -> bool {
        self.inner.try_lease(name, holder, ttl, now).await
    }

    /// One script (delete if ours) in Redis, and the local mirror's (a lease taken while
    /// Redis was away).
    async fn release_lease(&self, name: &str, holder: &str) -> bool {
        self.inner.release_lease(name, holder).await
    }

    async fn kv_put(&self, key: &str, value: Vec<u8>, ttl: Duration, now: UnixMillis) -> bool {
        self.inner.kv_put(key, value, ttl, now).await
    }

    async fn kv_get(&self, key: &str, now: UnixMillis) -> Option<Vec<u8>> {
        self.inner.kv_get(key, now).await
    }

    async fn kv_delete(&self, key: &str, now: UnixMillis) -> bool {
        self.inner.kv_delete(key, now).await
    }

    /// Applied locally at once (probe lease, local reservations) and queued for Redis;
    /// a full queue applies the Redis side at the next resync instead and counts a drop.
    fn cleanup(&self, cleanup: Cleanup) {
        self.inner.cleanup(cleanup);
    }

    /// Changes merged from the fleet (pub/sub, the poll, the resync) whose circuit state
    /// differs from the mirror's; never this replica's own writes (their echo included).
    fn watch_fleet(&self, sink: FleetSink) {
        let _ = self.inner.fleet.set(sink);
    }

    fn status(&self) -> StateStatus {
        self.inner.link.status()
    }
}

impl Inner {
    fn cleanup(&self, cleanup: Cleanup) {
        let queued = self.cleanup_now(cleanup);
        if let Some(rest) = queued {
            if let Err(e) = self.queue.try_send(rest) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.cleanup_failed(e.into_inner());
            }
        }
    }

    /// The local part of a cleanup; returns what is left for Redis.
    fn cleanup_now(&self, cleanup: Cleanup) -> Option<Cleanup> {
        match cleanup {
            Cleanup::ReleaseProbe {
                ref provider,
                lease,
            } => {
                self.mirror.apply(
                    provider,
                    &BreakerConfig::default(),
                    self.now(),
                    Op::Release { lease },
                );
                Some(cleanup)
            }
            Cleanup::ReleaseBudget { scope, id, amount } => self
                .release_now(&scope, id, amount)
                .map(|id| Cleanup::ReleaseBudget { scope, id, amount }),
            Cleanup::SettleBudget {
                scope,
                id,
                reserved,
                actual,
            } => {
                self.release_now(&scope, id, reserved);
                Some(Cleanup::SettleBudget {
                    scope,
                    id,
                    reserved,
                    actual,
                })
            }
            Cleanup::ReleaseLease {
                ref name,
                ref holder,
            } => {
                self.mirror.release_lease_local(name, holder);
                Some(cleanup)
            }
        }
    }

    /// The Redis part of a cleanup, from the background task.
    async fn cleanup_remote(&self, cleanup: Cleanup) {
        match cleanup {
            Cleanup::ReleaseProbe { provider, lease } => {
                self.release_probe_key(&provider, lease).await;
            }
            Cleanup::ReleaseBudget { scope, id, .. } => {
                if let Some(id) = budgets::remote_id(id) {
                    self.drop_remote(&scope, id).await;
                }
            }
            Cleanup::SettleBudget {
                scope, id, actual, ..
            } => self.spend(&scope, actual, budgets::remote_id(id)).await,
            Cleanup::ReleaseLease { name, holder } => {
                self.release_lease_key(&name, &holder).await;
            }
        }
    }

    /// A cleanup that cannot reach Redis now: keep its budget part for the resync (a
    /// probe lease or a named lease expires by itself).
    fn cleanup_failed(&self, cleanup: Cleanup) {
        match cleanup {
            Cleanup::ReleaseProbe { .. } | Cleanup::ReleaseLease { .. } => {}
            Cleanup::ReleaseBudget { scope, id, .. } => {
                if let Some(id) = budgets::remote_id(id) {
                    self.keep_drop(&scope, id);
                }
            }
            Cleanup::SettleBudget {
                scope, id, actual, ..
            } => self.keep_spend(&scope, actual, budgets::remote_id(id)),
        }
    }

    async fn try_lease(&self, name: &str, holder: &str, ttl: Duration, now: UnixMillis) -> bool {
        let mut inv = scripts::LEASE_TAKE.prepare_invoke();
        inv.key(self.keys.lease(name))
            .arg(holder)
            .arg(crate::clock::duration_ms(ttl).max(1));
        let held: Option<i64> = self
            .link
            .call(
                "lease",
                |mut c| async move { inv.invoke_async(&mut c).await },
            )
            .await;
        match held {
            Some(n) => n == 1,
            None => self.mirror.lease_local(name, holder, ttl, now),
        }
    }

    async fn release_lease(&self, name: &str, holder: &str) -> bool {
        // a lease taken while Redis was away lives in the mirror only: give back both
        let local = self.mirror.release_lease_local(name, holder);
        let remote = self.release_lease_key(name, holder).await;
        local || remote
    }

    /// The Redis part of giving a lease back: true when it was `holder`'s there.
    async fn release_lease_key(&self, name: &str, holder: &str) -> bool {
        let mut inv = scripts::LEASE_RELEASE.prepare_invoke();
        inv.key(self.keys.lease(name)).arg(holder);
        let released: Option<i64> = self
            .link
            .call("lease release", |mut c| async move {
                inv.invoke_async(&mut c).await
            })
            .await;
        released == Some(1)
    }

    fn now(&self) -> UnixMillis {
        self.clock.unix_ms()
    }
}
