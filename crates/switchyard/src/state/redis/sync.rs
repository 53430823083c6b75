//! The background task: keeping the mirror in step with the fleet and Redis in step with
//! this replica.
//!
//! Owns the session loop (pub/sub messages, the periodic poll, draining queued
//! cleanups), the reconnect while degraded (one try per `sync_interval`), the resync that
//! ends an outage (push what was kept locally, then pull), and the final drain on stop.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ::redis::aio::MultiplexedConnection;
use ::redis::Msg;
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::state::Cleanup;

/// Queued cleanups pushed after the stop signal, at most (each bounded by `op_timeout`).
const FINAL_DRAIN: usize = 1024;

/// Run until `stop` fires (see [`super::RedisState::background`]).
pub(super) async fn run(inner: Arc<Inner>, stop: CancellationToken) {
    let taken = inner.queue_rx.lock().ok().and_then(|mut rx| rx.take());
    let Some(mut queue) = taken else {
        tracing::warn!("shared state: background already running; this one ends now");
        return;
    };
    while !stop.is_cancelled() {
        if let Some(messages) = inner.start_session().await {
            inner.listening.store(true, Ordering::Release);
            inner.session(messages, &mut queue, &stop).await;
            inner.listening.store(false, Ordering::Release);
        }
        if !stop.is_cancelled() {
            inner.wait_degraded(&mut queue, &stop).await;
        }
    }
    inner.final_drain(&mut queue).await;
}

impl Inner {
    /// Connect (unless connected), subscribe, resync, and publish the connection.
    async fn start_session(&self) -> Option<impl Stream<Item = Msg> + Unpin> {
        let conn = match self.link.conn() {
            Some(conn) => conn,
            None => self.link.open().await?,
        };
        // Subscribed before the resync, so no write between the two is missed.
        let pubsub = self.link.subscribe(&self.keys.channel()).await?;
        self.resync(&conn).await?;
        self.link.up(conn);
        Some(pubsub.into_on_message())
    }

    /// Push what was kept locally, then reconcile breakers. `None` if Redis failed.
    pub(super) async fn resync(&self, conn: &MultiplexedConnection) -> Option<()> {
        self.sync_budgets(conn).await?;
        self.sync_breakers(conn).await
    }

    /// Serve a live session until Redis fails or `stop` fires.
    async fn session(
        &self,
        mut messages: impl Stream<Item = Msg> + Unpin,
        queue: &mut mpsc::Receiver<Cleanup>,
        stop: &CancellationToken,
    ) {
        let mut tick = tokio::time::interval(self.sync_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.reset();
        while self.link.is_connected() {
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = self.link.lost.notified() => {}
                msg = messages.next() => match msg {
                    Some(msg) => self.on_pubsub(&msg),
                    None => self.link.fail("pub/sub connection closed"),
                },
                Some(cleanup) = queue.recv() => self.cleanup_remote(cleanup).await,
                _ = tick.tick() => self.poll().await,
            }
        }
    }

    fn on_pubsub(&self, msg: &Msg) {
        match msg.get_payload::<String>() {
            Ok(payload) => self.on_message(&payload),
            Err(e) => tracing::warn!(error = %e, "shared state: unreadable pub/sub payload"),
        }
    }

    /// The periodic poll: backs pub/sub up and pushes anything kept locally.
    async fn poll(&self) {
        if let Some(conn) = self.link.conn() {
            let _ = self.resync(&conn).await;
        }
        self.kv_reconnect().await;
    }

    /// Degraded: apply cleanups locally until it is time to try Redis again.
    async fn wait_degraded(&self, queue: &mut mpsc::Receiver<Cleanup>, stop: &CancellationToken) {
        let retry = tokio::time::sleep(self.sync_interval);
        tokio::pin!(retry);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                () = &mut retry => {
                    self.kv_reconnect().await;
                    return;
                }
                Some(cleanup) = queue.recv() => self.cleanup_failed(cleanup),
            }
        }
    }

    /// After `stop`: push what is already queued (or keep it, if Redis is away).
    async fn final_drain(&self, queue: &mut mpsc::Receiver<Cleanup>) {
        for _ in 0..FINAL_DRAIN {
            let Ok(cleanup) = queue.try_recv() else {
                return;
            };
            if self.link.is_connected() {
                self.cleanup_remote(cleanup).await;
            } else {
                self.cleanup_failed(cleanup);
            }
        }
    }
}
