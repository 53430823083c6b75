//! Keeping the in-memory key table current: one connection of its own LISTENs on
//! [`CHANNEL`](super::CHANNEL) (every change NOTIFYs it at commit with what changed,
//! `key:<id>` or `team:<id>`, so a change on any replica reaches every replica within a
//! round trip). A key's notification re-reads that key only; a team's (its limits are part
//! of every key of it), or more notifications than [`MAX_PATCH`] at once, re-read the whole
//! table, as every `[database] resync` does (the safety net for a notification lost with a
//! connection). Losing the connection marks the database down and
//! reconnects with backoff; the table in memory keeps serving meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

use super::{keys, Database, StoreError, CHANNEL};

/// The first wait before reconnecting; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The most key notifications applied one by one; past it the whole table is read.
const MAX_PATCH: usize = 256;

/// What the notifications since the last read ask for.
enum Reload {
    /// These keys only.
    Keys(Vec<i64>),
    /// Everything.
    All,
}

/// The keys named by `payloads`, or everything (a team changed, an unknown payload, too
/// many, or notifications were dropped).
fn reload_for(payloads: &[String], dropped: bool) -> Reload {
    if dropped || payloads.len() > MAX_PATCH {
        return Reload::All;
    }
    let ids: Option<Vec<i64>> = payloads
        .iter()
        .map(|p| p.strip_prefix("key:")?.parse().ok())
        .collect();
    ids.map_or(Reload::All, Reload::Keys)
}

/// Run until `stop`: migrate, then listen and resync, reconnecting when the database goes.
pub async fn run(db: Arc<Database>, stop: CancellationToken) {
    let mut backoff = MIN_BACKOFF;
    loop {
        let ended = tokio::select! {
            () = stop.cancelled() => return,
            r = session(&db, &stop, &mut backoff) => r,
        };
        match ended {
            Ok(()) => return,
            Err(e) => {
                db.set_up(false);
                tracing::debug!(target: "switchyard::database", "key sync: {e}");
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection's life: `Ok` when stopped, `Err` when the connection failed.
async fn session(
    db: &Database,
    stop: &CancellationToken,
    backoff: &mut Duration,
) -> Result<(), StoreError> {
    db.migrate().await?;
    let (client, mut connection) = db.connect().await?;
    let (notified, mut notifications) = mpsc::channel::<String>(MAX_PATCH);
    let dropped = Arc::new(AtomicBool::new(false));
    let dropped_by_driver = Arc::clone(&dropped);
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver = async move {
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if notified.try_send(n.payload().to_owned()).is_err() {
                        // too many at once: the whole table is read instead
                        dropped_by_driver.store(true, Ordering::Relaxed);
                    }
                }
                Ok(_) => {}
                Err(e) => return StoreError::from(e),
            }
        }
        StoreError::Unavailable("the listening connection closed".to_owned())
    };
    let work = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        let mut resync = tokio::time::interval(db.resync);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        resync.reset(); // the first read is the loop's own, not a tick's
        let mut next = Reload::All;
        loop {
            match next {
                Reload::All => db.keys.replace(keys::load_live(&client).await?),
                Reload::Keys(ids) => db.keys.patch(&ids, keys::load_ids(&client, &ids).await?),
            }
            db.set_up(true);
            *backoff = MIN_BACKOFF;
            next = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                Some(first) = notifications.recv() => {
                    let mut payloads = vec![first];
                    while let Ok(p) = notifications.try_recv() {
                        payloads.push(p);
                    }
                    reload_for(&payloads, dropped.swap(false, Ordering::Relaxed))
                }
                _ = resync.tick() => Reload::All,
            };
        }
    };
    tokio::select! {
        e = driver => Err(e),
        r = work => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_notifications_reload_those_keys_and_anything_else_everything() {
        let p = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(
            matches!(reload_for(&p(&["key:3", "key:9"]), false), Reload::Keys(ids) if ids == [3, 9])
        );
        assert!(matches!(
            reload_for(&p(&["key:3", "team:1"]), false),
            Reload::All
        ));
        assert!(matches!(reload_for(&p(&["key:3"]), true), Reload::All));
        assert!(matches!(reload_for(&p(&["nonsense"]), false), Reload::All));
        let many: Vec<String> = (0..=MAX_PATCH).map(|i| format!("key:{i}")).collect();
        assert!(matches!(reload_for(&many, false), Reload::All));
    }
}
