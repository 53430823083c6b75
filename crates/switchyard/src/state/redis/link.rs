//! The connection to Redis, the time bound on every call, and the store's health.
//!
//! Owns the one command connection (a multiplexed connection shared by all requests),
//! what "connected" means (the last call answered in time), when the store degraded and
//! why, and keeping the URL's password out of every message. Does not reconnect by
//! itself: the background task does (`sync`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use ::redis::aio::{MultiplexedConnection, PubSub};
use ::redis::{AsyncConnectionConfig, Client, RedisResult};
use tokio::sync::Notify;

use super::credentials;
use crate::clock::{Clock, UnixMillis};
use crate::provider::secret::Secret;
use crate::state::StateStatus;

/// Whether `e` is Redis's own answer (an error reply such as `OOM`), not a broken or
/// silent connection.
fn answered(e: &::redis::RedisError) -> bool {
    matches!(
        e.kind(),
        ::redis::ErrorKind::Server(_) | ::redis::ErrorKind::Extension
    )
}

/// Redis as one replica sees it.
pub(super) struct Link {
    /// `None` when the URL cannot be used (the store then stays degraded).
    client: Option<Client>,
    /// The command connection while connected; `None` while degraded.
    conn: Mutex<Option<MultiplexedConnection>>,
    /// Mirrors `conn.is_some()` for the hot path's check.
    connected: AtomicBool,
    health: Mutex<Health>,
    op_timeout: Duration,
    connect_timeout: Duration,
    /// Scrubbed from every error message: the URL's passwords, as written and decoded.
    secrets: Vec<Secret>,
    clock: Clock,
    /// What this connection carries, in its log lines (`shared state`, `stored
    /// conversations`).
    label: &'static str,
    /// Woken when a call fails, so the background task reconnects at once.
    pub(super) lost: Notify,
}

#[derive(Debug, Default)]
struct Health {
    degraded_since_ms: Option<UnixMillis>,
    last_error: Option<String>,
}

impl Link {
    pub(super) fn new(
        url: &str,
        op_timeout: Duration,
        connect_timeout: Duration,
        clock: Clock,
        label: &'static str,
    ) -> Link {
        // checked (and masked) before the URL is parsed: a parser misreads such a URL
        let client = match credentials::problem(url) {
            Some(problem) => Err(problem),
            None => Client::open(url)
                .map_err(|e| format!("invalid Redis URL {}: {e}", credentials::mask(url))),
        };
        let link = Link {
            client: client.as_ref().ok().cloned(),
            conn: Mutex::new(None),
            connected: AtomicBool::new(false),
            health: Mutex::default(),
            op_timeout,
            connect_timeout,
            secrets: credentials::secrets(url),
            clock,
            label,
            lost: Notify::new(),
        };
        if let Err(e) = client {
            link.fail(&e);
        }
        link
    }

    /// True while calls go to Redis.
    pub(super) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// Run one call against the current connection, bounded by `op_timeout`. `None` when
    /// degraded, or when the call errs or is late (the store then degrades).
    pub(super) async fn call<T, F, Fut>(&self, what: &str, f: F) -> Option<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let conn = self.conn()?;
        self.call_on(&conn, what, f).await
    }

    /// [`call`](Self::call) on a given connection (a resync before it is published).
    pub(super) async fn call_on<T, F, Fut>(
        &self,
        conn: &MultiplexedConnection,
        what: &str,
        f: F,
    ) -> Option<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.call_on_within(conn, what, self.op_timeout, f).await
    }

    /// [`call`](Self::call) with its own time bound (at least `op_timeout`, for calls that
    /// move more bytes than a breaker's, such as stored values), and where an error Redis
    /// answers with (`OOM` when it is full, say) is only that call's failure: the
    /// connection works, so the link stays up. No answer in time, or a broken connection,
    /// degrades as any call.
    pub(super) async fn call_answered<T, F, Fut>(
        &self,
        what: &str,
        bound: Duration,
        f: F,
    ) -> Option<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let conn = self.conn()?;
        let bound = bound.max(self.op_timeout);
        match tokio::time::timeout(bound, f(conn)).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) if answered(&e) => {
                let error = self.scrub(&format!("{what}: {e}"));
                tracing::warn!(error = %error, "{}: Redis refused a write", self.label);
                None
            }
            Ok(Err(e)) => {
                self.fail(&format!("{what}: {e}"));
                None
            }
            Err(_) => {
                let ms = bound.as_millis();
                self.fail(&format!("{what}: no answer within {ms} ms"));
                None
            }
        }
    }

    async fn call_on_within<T, F, Fut>(
        &self,
        conn: &MultiplexedConnection,
        what: &str,
        bound: Duration,
        f: F,
    ) -> Option<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        match tokio::time::timeout(bound, f(conn.clone())).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.fail(&format!("{what}: {e}"));
                None
            }
            Err(_) => {
                let ms = bound.as_millis();
                self.fail(&format!("{what}: no answer within {ms} ms"));
                None
            }
        }
    }

    /// The command connection, while connected.
    pub(super) fn conn(&self) -> Option<MultiplexedConnection> {
        if !self.is_connected() {
            return None;
        }
        self.conn.lock().ok()?.clone()
    }

    /// Open a command connection and check it answers (bounded by the connect timeout).
    pub(super) async fn open(&self) -> Option<MultiplexedConnection> {
        let client = self.client.as_ref()?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(None);
        let opened = tokio::time::timeout(self.connect_timeout, async {
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            ::redis::cmd("PING")
                .query_async::<String>(&mut conn)
                .await?;
            Ok::<_, ::redis::RedisError>(conn)
        })
        .await;
        self.opened("connect", opened)
    }

    /// Open a pub/sub connection subscribed to `channel`.
    pub(super) async fn subscribe(&self, channel: &str) -> Option<PubSub> {
        let client = self.client.as_ref()?;
        let opened = tokio::time::timeout(self.connect_timeout, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, ::redis::RedisError>(pubsub)
        })
        .await;
        self.opened("subscribe", opened)
    }

    fn opened<T>(
        &self,
        what: &str,
        r: Result<RedisResult<T>, tokio::time::error::Elapsed>,
    ) -> Option<T> {
        match r {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                self.fail(&format!("{what}: {e}"));
                None
            }
            Err(_) => {
                let ms = self.connect_timeout.as_millis();
                self.fail(&format!("{what}: no answer within {ms} ms"));
                None
            }
        }
    }

    /// Publish a working connection: calls go to Redis again.
    pub(super) fn up(&self, conn: MultiplexedConnection) {
        if let Ok(mut slot) = self.conn.lock() {
            *slot = Some(conn);
        }
        if let Ok(mut h) = self.health.lock() {
            if let Some(since) = h.degraded_since_ms.take() {
                let down_ms = self.clock.unix_ms().saturating_sub(since);
                tracing::info!(down_ms, "{}: Redis reachable again, resynced", self.label);
            }
        }
        self.connected.store(true, Ordering::Release);
    }

    /// Record a failure and degrade: calls are answered locally until `up`.
    pub(super) fn fail(&self, error: &str) {
        let error = self.scrub(error);
        self.connected.store(false, Ordering::Release);
        if let Ok(mut slot) = self.conn.lock() {
            *slot = None;
        }
        if let Ok(mut h) = self.health.lock() {
            if h.degraded_since_ms.is_none() {
                h.degraded_since_ms = Some(self.clock.unix_ms());
                tracing::warn!(error = %error, "{}: Redis unavailable, serving from local state", self.label);
            }
            h.last_error = Some(error);
        }
        self.lost.notify_one();
    }

    /// Health for `/admin/health` and metrics.
    pub(super) fn status(&self) -> StateStatus {
        let (degraded_since_ms, last_error) = self
            .health
            .lock()
            .map(|h| (h.degraded_since_ms, h.last_error.clone()))
            .unwrap_or_default();
        StateStatus {
            backend: "redis",
            connected: self.is_connected(),
            degraded_since_ms,
            last_error,
        }
    }

    fn scrub(&self, message: &str) -> String {
        self.secrets
            .iter()
            .fold(message.to_owned(), |m, s| s.scrub(&m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn errors_never_carry_the_password() {
        let link = Link::new(
            "redis://:hunter2@127.0.0.1:1",
            Duration::from_millis(50),
            Duration::from_millis(200),
            Clock::system(),
            "shared state",
        );
        link.fail("connect to redis://:hunter2@127.0.0.1:1 failed (hunter2)");
        let status = link.status();
        assert!(!status.connected);
        assert!(status.degraded_since_ms.is_some());
        let err = status.last_error.unwrap();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("[redacted]"), "{err}");
    }

    #[tokio::test]
    async fn a_password_that_needs_escaping_is_refused_and_never_shown() {
        for url in [
            "redis://:pa/ss-word@127.0.0.1:6379",
            "redis://app:pa#ss-word@127.0.0.1:6379",
            "redis://app:pa?ss-word@127.0.0.1:6379/0",
            // parses, but as host `app`, port 1234 and a path holding the rest
            "redis://app:1234/ss-word@127.0.0.1",
        ] {
            let link = Link::new(
                url,
                Duration::from_millis(50),
                Duration::from_millis(200),
                Clock::system(),
                "shared state",
            );
            assert!(link.client.is_none(), "{url} must not be used");
            let err = link.status().last_error.unwrap();
            assert!(!err.contains("ss-word"), "{err}");
            assert!(err.contains(":***@127.0.0.1"), "{err}");
            assert!(err.contains("percent-encode"), "{err}");
        }
    }
}
