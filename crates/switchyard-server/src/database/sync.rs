//! Keeping the in-memory key table current: one connection of its own LISTENs on
//! [`CHANNEL`](super::CHANNEL) (every change NOTIFYs it at commit, so a change on any
//! replica reaches every replica within a round trip) and the whole table is read again on
//! each notification and every `[database] resync` besides (the safety net for a
//! notification lost with a connection). Losing the connection marks the database down and
//! reconnects with backoff; the table in memory keeps serving meanwhile.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;

use super::{keys, Database, StoreError, CHANNEL};

/// The first wait before reconnecting; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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
    let (client, mut connection) = db.pg.connect(NoTls).await?;
    let (notified, mut notifications) = mpsc::channel::<()>(1);
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let driver = async move {
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(_)) => {
                    // one pending reload covers every notification before it
                    let _ = notified.try_send(());
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
        loop {
            let live = keys::load_live(&client).await?;
            db.keys.replace(live);
            db.set_up(true);
            *backoff = MIN_BACKOFF;
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                _ = notifications.recv() => {}
                _ = resync.tick() => {}
            }
        }
    };
    tokio::select! {
        e = driver => Err(e),
        r = work => r,
    }
}
