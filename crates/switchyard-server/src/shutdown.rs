//! Shutdown: the one place that spawns, and the signal that stops everything.
//!
//! Owns the [`Tasks`] tracker (background work — the request-log writer, health checks —
//! and client connections are spawned only through one, so shutdown can wait for them)
//! and [`signal`], which resolves on SIGTERM or Ctrl-C. `serve` stops accepting on the
//! signal, gives in-flight requests the grace period, ends what is still open, then closes
//! the background tracker and waits for the request log to flush.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Tracks every background task and tells them when to stop.
#[derive(Clone, Debug, Default)]
pub struct Tasks {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Tasks {
    /// A fresh tracker.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Run `fut` in the background, tracked.
    #[allow(clippy::disallowed_methods)] // the one sanctioned spawn
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(fut);
    }

    /// Cancelled when shutdown begins; long-running tasks select on it.
    #[must_use]
    pub fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Take no more tasks and wait (at most `within`) for the tracked ones to finish,
    /// without telling them to stop. Returns false if some were still running.
    pub async fn wait(&self, within: Duration) -> bool {
        self.tracker.close();
        tokio::time::timeout(within, self.tracker.wait())
            .await
            .is_ok()
    }

    /// Begin shutdown and wait (at most `grace`) for every tracked task to finish.
    /// Returns false if some were still running at the deadline.
    pub async fn close(&self, grace: Duration) -> bool {
        self.stop.cancel();
        self.tracker.close();
        tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_ok()
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
