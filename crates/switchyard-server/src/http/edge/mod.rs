//! The connection-level edge: the accept loop and every limit that protects the server
//! from slow, idle or too many clients, in front of the router (`crate::http::app`).
//!
//! Owns [`Limits`] (`[server]`: header read, body read, idle and write timeouts, the
//! connection and in-flight caps) and [`Edge`], which accepts connections (with `TCP_NODELAY`) and
//! drives each with hyper's HTTP/1 connection and a watchdog (`conn`); a connection holds
//! no HTTP state (no read buffer) until its first bytes arrive. At the connection
//! cap a new client is not refused while others merely wait: the connection that has been
//! idle (or reading a head) the longest is closed to make room; only when every
//! connection is serving a request is the new one closed at once. Running out of file
//! descriptors evicts the same way. Requests beyond the in-flight cap get 503 with
//! `Retry-After` at once; [`EXEMPT_FROM_IN_FLIGHT`] lists the probes that are never shed.
//! A client that stops reading its response is let go when it has taken no bytes for the
//! write timeout, or when the response's own deadline passes ([`Delivery`], `write.rs`):
//! a response is produced only as fast as it is written, so nothing else would notice.
//!
//! Shutdown ([`Edge::drain`], [`Edge::close_all`]) is sequenced by `crate::cli::serve`.
//! Does not own request-level checks (keys, body size, fields: the handlers).

mod body;
mod conn;
mod errors;
mod write;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

use crate::config::{self, Config};
use crate::shutdown::Tasks;
use conn::{Command, ConnState};

pub use body::is_body_timeout;
pub use errors::{body_timeout, method_not_allowed, shutting_down};
pub use write::Delivery;

/// Paths that never take an in-flight slot: liveness, readiness and metrics must answer
/// while the server sheds load, so an orchestrator can tell busy from dead.
pub const EXEMPT_FROM_IN_FLIGHT: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Largest request head (request line and headers) hyper accepts; larger gets 431.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Default `[server] header_read_timeout`.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `[server] body_read_timeout`.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `[server] idle_timeout`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default `[server] write_timeout`: a client that takes no bytes for this long is gone in
/// all but name (a slow mobile link still takes some every few seconds).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `[server] max_in_flight`.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;
/// The most connections the default `[server] max_connections` allows, whatever the
/// open-file limit.
const MAX_DEFAULT_CONNECTIONS: usize = 10_000;
/// File descriptors kept out of the default connection cap (log file, listener, Redis).
const RESERVED_FDS: usize = 64;
/// Pause after a failed accept (out of file descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The `[server]` limits, resolved with their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From the accept, or the first byte after an idle gap, to a complete request head.
    pub header_read_timeout: Duration,
    /// Longest wait for a request body, from the first time its reader has to wait.
    pub body_read_timeout: Duration,
    /// Longest gap between requests on a keep-alive connection.
    pub idle_timeout: Duration,
    /// Longest a write may wait for the client to take bytes; then the connection closes
    /// (and the response, with everything its request holds, is dropped).
    pub write_timeout: Duration,
    /// Most open client connections.
    pub max_connections: usize,
    /// Most requests being served at once (the probes in [`EXEMPT_FROM_IN_FLIGHT`] aside).
    pub max_in_flight: usize,
}

impl Limits {
    /// The limits `config` sets, defaults for the rest.
    ///
    /// # Errors
    /// A duration that does not parse (validation has reported it already).
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let s = &config.server;
        let or = |v: Option<&str>, default| v.map_or(Ok(default), config::duration);
        Ok(Self {
            header_read_timeout: or(
                s.header_read_timeout.as_deref(),
                DEFAULT_HEADER_READ_TIMEOUT,
            )?,
            body_read_timeout: or(s.body_read_timeout.as_deref(), DEFAULT_BODY_READ_TIMEOUT)?,
            idle_timeout: or(s.idle_timeout.as_deref(), DEFAULT_IDLE_TIMEOUT)?,
            write_timeout: or(s.write_timeout.as_deref(), DEFAULT_WRITE_TIMEOUT)?,
            max_connections: s
                .max_connections
                .unwrap_or_else(|| default_max_connections(open_file_limit())),
            max_in_flight: s.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
        })
    }
}

/// Half the open-file limit less a reserve (each proxied request may also hold an
/// upstream connection), capped at [`MAX_DEFAULT_CONNECTIONS`]; the cap itself when the
/// limit is unknown.
fn default_max_connections(open_files: Option<u64>) -> usize {
    open_files
        .and_then(|n| usize::try_from(n).ok())
        .map_or(MAX_DEFAULT_CONNECTIONS, |n| {
            (n.saturating_sub(RESERVED_FDS) / 2).clamp(16, MAX_DEFAULT_CONNECTIONS)
        })
}

/// The soft limit on open files (`Max open files` in `/proc/self/limits`; Linux only).
fn open_file_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// A request's answer from a [`Shortcut`].
pub type Answer = std::pin::Pin<Box<dyn Future<Output = axum::response::Response> + Send>>;

/// A way past the router for the requests it takes: their answer, or the request back
/// for the router. Whatever it takes it must answer as the router would.
pub trait Shortcut: Send + Sync + 'static {
    /// `request`'s answer when this takes it; else the request, unchanged.
    ///
    /// # Errors
    /// The request, when the router must answer it.
    fn answer(&self, request: axum::extract::Request) -> Result<Answer, axum::extract::Request>;
}

/// The edge: one router, the limits, and the open connections.
pub struct Edge {
    limits: Limits,
    /// Built once; each request gets a clone (a reference count).
    router: Router,
    /// Requests answered without the router (the server's: the model APIs' requests that
    /// need no more of it than their handler, `crate::http::app::FastPath`); none in the
    /// edge's own tests.
    fast: Option<Box<dyn Shortcut>>,
    http: hyper::server::conn::http1::Builder,
    conns: Registry,
    in_flight: AtomicUsize,
    /// Time zero of the connections' clocks (ms since it, in atomics).
    epoch: tokio::time::Instant,
}

impl Edge {
    /// An edge serving `router` within `limits`.
    #[must_use]
    pub fn new(limits: Limits, router: Router) -> Arc<Self> {
        Self::build(limits, router, None)
    }

    /// An edge serving `router` within `limits`, with the requests `fast` takes answered
    /// by it instead (the server: `crate::cli::serve`).
    #[must_use]
    pub fn with_fast_path(limits: Limits, router: Router, fast: impl Shortcut) -> Arc<Self> {
        Self::build(limits, router, Some(Box::new(fast)))
    }

    fn build(limits: Limits, router: Router, fast: Option<Box<dyn Shortcut>>) -> Arc<Self> {
        let mut http = hyper::server::conn::http1::Builder::new();
        // the watchdog in `conn` times heads and idle gaps (hyper's own header timer
        // cannot tell an idle keep-alive gap from a slow head)
        http.header_read_timeout(None)
            .max_header_size(MAX_HEADER_BYTES);
        Arc::new(Self {
            limits,
            router,
            fast,
            http,
            conns: Registry::default(),
            in_flight: AtomicUsize::new(0),
            epoch: tokio::time::Instant::now(),
        })
    }

    /// Connections open now.
    #[must_use]
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Accept and serve connections on `listener` (each a task in `tasks`) until `stop`
    /// resolves; the listener is closed on return.
    pub async fn accept_until(
        self: &Arc<Self>,
        listener: TcpListener,
        tasks: &Tasks,
        stop: impl Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        loop {
            let accepted = tokio::select! {
                () = &mut stop => return,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    self.admit(tcp, tasks);
                }
                Err(e) => {
                    if out_of_descriptors(&e) {
                        self.conns.evict_idlest();
                    }
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    /// Serve `io` as a new connection (tracked in `tasks`), making room at the cap by
    /// evicting the longest-idle connection; closed at once when every one is busy.
    pub fn admit<T: Socket>(self: &Arc<Self>, io: T, tasks: &Tasks) {
        let Some(conn) = self.conns.open(self.limits.max_connections, self.now_ms()) else {
            return; // dropped: closed
        };
        tasks.spawn(conn::drive(Arc::clone(self), io, conn));
    }

    /// Shutdown begins: idle connections close now, busy ones after their response.
    pub fn drain(&self) {
        self.conns.command_all(Command::Drain);
    }

    /// The grace period is over: every connection closes now.
    pub fn close_all(&self) {
        self.conns.command_all(Command::Close);
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// An in-flight slot, if one is free.
    fn take_slot(&self) -> bool {
        let before = self.in_flight.fetch_add(1, Ordering::AcqRel);
        if before < self.limits.max_in_flight {
            return true;
        }
        self.release_slot();
        false
    }

    fn release_slot(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    fn forget(&self, conn: &ConnState) {
        self.conns.remove(conn.id);
    }
}

/// A client connection: bytes both ways, and a wait for the first ones that reads none.
pub trait Socket: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static {
    /// Resolves once there is something to read (or the peer has gone).
    fn arrival(&self) -> impl Future<Output = ()> + Send + '_;
}

impl Socket for TcpStream {
    async fn arrival(&self) {
        // a peek, not `readable()`: that one may resolve for a socket with nothing to read
        let mut byte = [0u8; 1];
        let _ = self.peek(&mut byte).await;
    }
}

/// In-memory connections (tests): no readiness to wait for, HTTP starts at once.
impl Socket for tokio::io::DuplexStream {
    fn arrival(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::ready(())
    }
}

/// `EMFILE` / `ENFILE`: the process or the system is out of file descriptors.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}

/// The open connections, for the cap, eviction and shutdown.
#[derive(Default)]
struct Registry {
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// Register a new connection; at `cap`, first evict the longest-idle one. `None`
    /// when every connection is busy.
    fn open(&self, cap: usize, now_ms: u64) -> Option<Arc<ConnState>> {
        let mut conns = self.lock();
        if conns.len() >= cap && !Self::evict_from(&mut conns) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(ConnState::new(id, now_ms));
        conns.insert(id, Arc::clone(&conn));
        Some(conn)
    }

    fn evict_idlest(&self) -> bool {
        Self::evict_from(&mut self.lock())
    }

    /// Close the connection that has waited longest without a request in service (the
    /// earlier accepted of equals).
    fn evict_from(conns: &mut HashMap<u64, Arc<ConnState>>) -> bool {
        let victim = conns
            .values()
            .filter(|c| !c.is_busy())
            .min_by_key(|c| (c.waiting_since(), c.id))
            .map(|c| c.id);
        let Some(conn) = victim.and_then(|id| conns.remove(&id)) else {
            return false;
        };
        conn.command(Command::Close);
        true
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn command_all(&self, c: Command) {
        for conn in self.lock().values() {
            conn.command(c);
        }
    }
}

#[cfg(test)]
mod tests;
