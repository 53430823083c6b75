//! Redis for the fleet tests: a dedicated `redis-server` child that a test may kill,
//! freeze and restart on the same port ([`RedisServer`]), a unique key prefix on the
//! shared one at 127.0.0.1:6379 for tests that only read and write ([`SharedRedis`]), and
//! a proxy that loses Redis's replies on cue ([`ReplyGate`]).
//!
//! Talks to Redis with a few bytes of RESP over a blocking socket (short timeouts): the
//! harness only needs PING and one EVAL.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::support::WAIT;

/// The Redis the machine runs (CI starts one if none answers).
const SHARED: &str = "127.0.0.1:6379";

/// Send one command; the first line of the reply (`+PONG`, `:3`, `-ERR ...`).
fn command(addr: &str, args: &[&str]) -> std::io::Result<String> {
    let addr: SocketAddr = addr.parse().expect("a socket address");
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    conn.write_all(req.as_bytes())?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 256];
    while !reply.windows(2).any(|w| w == b"\r\n") {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&reply);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

fn answers_ping(addr: &str) -> bool {
    command(addr, &["PING"]).is_ok_and(|r| r == "+PONG")
}

// ---------------------------------------------------------------- a dedicated server

/// A `redis-server` child on a free port (no persistence), killed on drop.
pub struct RedisServer {
    child: Option<Child>,
    /// Its port, kept across a restart.
    pub port: u16,
    dir: PathBuf,
    /// Settings it starts with beyond the harness's own (`--maxmemory-policy ...`).
    args: Vec<String>,
}

impl RedisServer {
    /// Start one and wait until it answers PING. Fails the test when `redis-server` is
    /// not on PATH: these tests are the proof of fleet mode and must not silently skip.
    pub async fn start(tag: &str) -> RedisServer {
        Self::start_with(tag, &[]).await
    }

    /// [`RedisServer::start`] with settings of its own (`["--maxmemory-policy",
    /// "allkeys-lru"]`).
    pub async fn start_with(tag: &str, args: &[&str]) -> RedisServer {
        let dir = std::env::temp_dir().join(format!(
            "switchyard-fleet-redis-{}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A port freed just now can be taken by someone else before redis-server binds it:
        // try a few.
        for _ in 0..5 {
            let port = free_port();
            let mut server = RedisServer {
                child: None,
                port,
                dir: dir.clone(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
            };
            if server.spawn().await {
                return server;
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kill it (SIGKILL: no goodbye to its clients) and wait for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(
            !answers_ping(&self.addr()),
            "something still answers on {} after the kill",
            self.addr()
        );
    }

    /// Freeze it (SIGSTOP): connections stay open and nothing is answered — Redis at
    /// its slowest.
    pub fn freeze(&mut self) {
        self.signal("-STOP");
    }

    /// Let a frozen server run again (SIGCONT).
    pub fn thaw(&mut self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("a running redis-server");
        let sent = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill {signal} redis-server failed");
    }

    /// Start it again on the same port (empty: nothing was persisted).
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "restart a killed server only");
        assert!(
            self.spawn().await,
            "redis-server did not come back on port {}",
            self.port
        );
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Spawn on `self.port`; true once it answers PING, false if it exited first.
    async fn spawn(&mut self) -> bool {
        let port = self.port.to_string();
        let spawned = Command::new("redis-server")
            .args(["--port", &port, "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(&self.args)
            .arg("--dir")
            .arg(&self.dir)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "redis-server is not on PATH: the fleet tests need it (apt-get install redis-server)"
            ),
            Err(e) => panic!("cannot start redis-server: {e}"),
        };
        let deadline = Instant::now() + WAIT;
        loop {
            if answers_ping(&self.addr()) {
                self.child = Some(child);
                return true;
            }
            if child.try_wait().unwrap().is_some() {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {port} did not answer within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// ---------------------------------------------------------------- the shared server

/// A unique key prefix on the shared Redis; its keys are deleted on drop.
pub struct SharedRedis {
    /// `[state] prefix`.
    pub prefix: String,
}

impl SharedRedis {
    /// Check the shared Redis answers (fail the test if not) and pick a fresh prefix.
    pub fn new(tag: &str) -> SharedRedis {
        assert!(
            answers_ping(SHARED),
            "no Redis answers at {SHARED}: run scripts/test (it starts redis-server) or start one"
        );
        let prefix = format!(
            "switchyard-fleet-test:{}:{:08x}:{tag}",
            std::process::id(),
            fastrand::u32(..)
        );
        SharedRedis { prefix }
    }

    /// `redis://127.0.0.1:6379`.
    pub fn url(&self) -> String {
        format!("redis://{SHARED}")
    }

    /// `127.0.0.1:6379`.
    pub fn addr(&self) -> &'static str {
        SHARED
    }

    /// The `[state]` of replicas that share this prefix, waiting at most `timeout` per call.
    pub fn backend(&self, timeout: &'static str) -> crate::support::Backend {
        crate::support::Backend::Redis {
            url: self.url(),
            prefix: self.prefix.clone(),
            timeout,
        }
    }
}

impl Drop for SharedRedis {
    fn drop(&mut self) {
        let script = "local n = 0 \
            for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k); n = n + 1 end \
            return n";
        let pattern = format!("{}:*", self.prefix);
        let _ = command(SHARED, &["EVAL", script, "0", &pattern]);
    }
}

// ---------------------------------------------------------------- a lossy link

/// A TCP proxy in front of a Redis that can lose its replies: while closed, what Redis
/// sends back is read and thrown away (commands still reach Redis and run). A reply lost
/// after its command ran — Redis stalled, or the network dropped it — in one switch.
pub struct ReplyGate {
    /// The port to point a replica at.
    pub port: u16,
    open: Arc<AtomicBool>,
    accept: tokio::task::JoinHandle<()>,
}

impl ReplyGate {
    /// A gate (open) in front of Redis at `target` (`127.0.0.1:PORT`).
    pub async fn start(target: &str) -> ReplyGate {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let gate = Arc::clone(&open);
        let target = target.to_owned();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = tokio::net::TcpStream::connect(&target).await else {
                    continue;
                };
                tokio::spawn(pipe(inbound, outbound, Arc::clone(&gate)));
            }
        });
        ReplyGate { port, open, accept }
    }

    /// `redis://127.0.0.1:PORT` (through the gate).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Lose every reply from now on.
    pub fn lose_replies(&self) {
        self.open.store(false, Ordering::SeqCst);
    }

    /// Deliver replies again.
    pub fn deliver_replies(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for ReplyGate {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Forward one connection until either side closes; replies only while `open`.
async fn pipe(
    inbound: tokio::net::TcpStream,
    outbound: tokio::net::TcpStream,
    open: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
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
            if open.load(Ordering::SeqCst) {
                to_client.write_all(&buf[..n]).await?;
            }
        }
    };
    tokio::select! {
        _ = commands => {}
        _ = replies => {}
    }
}
