//! The contract suite's harness: breaker helpers, replicas sharing a Redis prefix
//! ([`Fleet`]), bounded polls ([`eventually`]) and a TCP proxy that can cut Redis off
//! ([`Proxy`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchyard::breaker::{Admission, BreakerConfig, CircuitState, Cooldown, Op, Transition};
use switchyard::clock::{Clock, UnixMillis};
use switchyard::cost::Money;
use switchyard::error::{BreakerEffect, ErrorKind};
use switchyard::state::{RedisConfig, RedisState, SharedState};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const REDIS_URL: &str = "redis://127.0.0.1:6379";
pub const T0: u64 = 1_800_000_000_000;
pub const LEASE: Duration = Duration::from_secs(10);
pub const USD: i64 = 1_000_000_000_000;

pub type Store = Arc<dyn SharedState>;

// ---------------------------------------------------------------------------------
// Harness

pub fn at(secs: u64) -> UnixMillis {
    T0 + secs * 1000
}

pub fn cfg(threshold: u32) -> BreakerConfig {
    BreakerConfig {
        failure_threshold: threshold,
        cooldown: Cooldown {
            base: Duration::from_secs(10),
            max: Duration::from_secs(40),
        },
    }
}

pub fn usd(n: i64) -> Money {
    Money::from_picos(n * USD)
}

pub async fn admit(s: &Store, p: &str, c: &BreakerConfig, now: UnixMillis) -> Admission {
    let op = Op::Admit { lease_for: LEASE };
    s.breaker_op(p, c, now, op).await.admission
}

/// One failed turn (an attempt, then the turn's verdict); the turn's transition.
pub async fn fail_turn(
    s: &Store,
    p: &str,
    c: &BreakerConfig,
    now: UnixMillis,
    lease: Option<u64>,
) -> Option<Transition> {
    let (kind, effect) = (ErrorKind::Server, BreakerEffect::CountFailure);
    let attempt = Op::AttemptFailed {
        kind,
        effect,
        retry_after: None,
        lease,
    };
    s.breaker_op(p, c, now, attempt).await;
    let turn = Op::TurnFailed {
        kind,
        effect,
        lease,
    };
    s.breaker_op(p, c, now, turn).await.transition
}

pub async fn state_of(s: &Store, p: &str, now: UnixMillis) -> CircuitState {
    s.breaker(p).await.snapshot(now).state
}

/// Poll `check` until it holds, for at most `bound` of real time.
pub async fn eventually<F, Fut>(bound: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + bound;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < end,
            "not within {bound:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

pub fn unique_prefix(test: &str) -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("sy-test:{test}:{:08x}{n}", fastrand::u32(..))
}

pub fn test_config(url: &str, prefix: &str) -> RedisConfig {
    RedisConfig {
        prefix: prefix.to_owned(),
        // Generous so a loaded CI machine does not degrade the store mid-test; the
        // degradation tests use an unreachable port instead.
        op_timeout: Duration::from_secs(1),
        sync_interval: Duration::from_millis(50),
        ..RedisConfig::new(url)
    }
}

/// Replicas sharing one prefix, each with its background task running.
pub struct Fleet {
    pub prefix: String,
    pub replicas: Vec<RedisState>,
    stops: Vec<CancellationToken>,
    tasks: Vec<Option<JoinHandle<()>>>,
}

impl Fleet {
    pub async fn start(test: &str, n: usize) -> Fleet {
        let mut fleet = Fleet {
            prefix: unique_prefix(test),
            replicas: Vec::new(),
            stops: Vec::new(),
            tasks: Vec::new(),
        };
        for _ in 0..n {
            let cfg = test_config(REDIS_URL, &fleet.prefix);
            fleet.add(cfg).await;
        }
        fleet
    }

    pub async fn add(&mut self, cfg: RedisConfig) -> RedisState {
        let state = RedisState::connect(cfg, Clock::system()).await;
        let status = state.status();
        assert!(
            status.connected,
            "Redis at {REDIS_URL} is not reachable ({:?}). The Redis contract tests need it: \
             run scripts/test (it starts redis-server) or start one on 127.0.0.1:6379.",
            status.last_error
        );
        let stop = CancellationToken::new();
        self.tasks
            .push(Some(tokio::spawn(state.background(stop.clone()))));
        self.stops.push(stop);
        self.replicas.push(state.clone());
        state
    }

    pub fn store(&self, i: usize) -> Store {
        Arc::new(self.replicas[i].clone())
    }

    pub async fn listening(&self) {
        for r in &self.replicas {
            eventually(Duration::from_secs(5), "replica subscribed", || async {
                r.listening()
            })
            .await;
        }
    }

    /// Stop replica `i`'s background task (a replica that died: nothing more reaches
    /// Redis from it).
    pub async fn kill(&mut self, i: usize) {
        self.stops[i].cancel();
        if let Some(task) = self.tasks[i].take() {
            task.await.unwrap();
        }
    }

    /// Stop every replica and delete the keys, after checking that no replica ever
    /// degraded (a degraded store answers locally, which would hide a broken script).
    pub async fn stop(self) {
        for (i, r) in self.replicas.iter().enumerate() {
            let status = r.status();
            assert!(
                status.connected && status.last_error.is_none(),
                "replica {i} degraded during the test: {status:?}"
            );
        }
        self.stop_after_outage().await;
    }

    /// Stop every replica and delete the keys.
    pub async fn stop_after_outage(self) {
        for s in &self.stops {
            s.cancel();
        }
        for t in self.tasks.into_iter().flatten() {
            t.await.unwrap();
        }
        delete_keys(&self.prefix).await;
    }
}

pub async fn delete_keys(prefix: &str) {
    let client = ::redis::Client::open(REDIS_URL).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    if !keys.is_empty() {
        let _: i64 = ::redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

// ---------------------------------------------------------------------------------
// A TCP proxy in front of Redis that can be cut and restored: an honest outage.

pub struct Proxy {
    pub addr: SocketAddr,
    up: Arc<AtomicBool>,
    cut: Arc<Mutex<CancellationToken>>,
    /// Fired by `freeze`: connections stay open but nothing more is forwarded.
    frozen: CancellationToken,
    /// Fired on drop: frozen connections close.
    gone: CancellationToken,
    /// While set, Redis's replies are read and thrown away (commands still run).
    muted: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Proxy {
    pub async fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let cut = Arc::new(Mutex::new(CancellationToken::new()));
        let (frozen, gone) = (CancellationToken::new(), CancellationToken::new());
        let (up2, cut2) = (up.clone(), cut.clone());
        let (frozen2, gone2) = (frozen.clone(), gone.clone());
        let muted = Arc::new(AtomicBool::new(false));
        let muted2 = muted.clone();
        let task = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    continue; // refused: dropped at once
                }
                let cut = cut2.lock().unwrap().clone();
                let stops = [cut, frozen2.clone(), gone2.clone()];
                tokio::spawn(pipe(inbound, stops, muted2.clone()));
            }
        });
        Proxy {
            addr,
            up,
            cut,
            frozen,
            gone,
            muted,
            task,
        }
    }

    /// Lose Redis's replies from now on (until `unmute`): what it is sent still runs.
    pub fn mute(&self) {
        self.muted.store(true, Ordering::SeqCst);
    }

    pub fn unmute(&self) {
        self.muted.store(false, Ordering::SeqCst);
    }

    /// Close every connection and refuse new ones.
    pub fn down(&self) {
        self.up.store(false, Ordering::SeqCst);
        let mut cut = self.cut.lock().unwrap();
        cut.cancel();
        *cut = CancellationToken::new();
    }

    pub fn up(&self) {
        self.up.store(true, Ordering::SeqCst);
    }

    /// Redis hangs: connections stay open, nothing is answered.
    pub fn freeze(&self) {
        self.frozen.cancel();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut.lock().unwrap().cancel();
        self.gone.cancel();
    }
}

/// Forward one connection until it is cut (closed), frozen (held open, silent, until the
/// proxy goes) or done; replies are dropped while `muted`.
async fn pipe(
    inbound: TcpStream,
    [cut, frozen, gone]: [CancellationToken; 3],
    muted: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let Ok(outbound) = TcpStream::connect("127.0.0.1:6379").await else {
        return;
    };
    let (mut from_client, mut to_client) = inbound.into_split();
    let (mut from_redis, mut to_redis) = outbound.into_split();
    let commands = tokio::io::copy(&mut from_client, &mut to_redis);
    let replies = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = from_redis.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(());
            }
            if !muted.load(Ordering::SeqCst) {
                to_client.write_all(&buf[..n]).await?;
            }
        }
    };
    tokio::select! {
        _ = commands => return,
        _ = replies => return,
        () = cut.cancelled() => return,
        () = gone.cancelled() => return,
        () = frozen.cancelled() => {}
    }
    tokio::select! {
        () = cut.cancelled() => {}
        () = gone.cancelled() => {}
    }
}

// ---------------------------------------------------------------------------------
// A Redis of the test's own, for what must not touch the shared one's settings (memory
// limits, eviction policies, renamed commands).

/// A `redis-server` child on a free port, started with `args` (no persistence), killed on
/// drop.
pub struct PrivateRedis {
    child: std::process::Child,
    pub port: u16,
}

impl PrivateRedis {
    /// Start one and wait (at most 10 s) until it answers. Fails the test when
    /// `redis-server` is not on PATH (scripts/test needs it for the shared one too).
    pub async fn start(args: &[&str]) -> PrivateRedis {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = std::process::Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(args)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("redis-server on PATH (apt-get install redis-server)");
            let end = tokio::time::Instant::now() + Duration::from_secs(10);
            while tokio::time::Instant::now() < end {
                if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                    return PrivateRedis { child, port };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // the port was taken meanwhile: another one
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A connection of the test's own.
    pub async fn conn(&self) -> ::redis::aio::MultiplexedConnection {
        let client = ::redis::Client::open(self.url()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
