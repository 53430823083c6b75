//! How long a response may wait for its client to take bytes.
//!
//! A response body is produced only as fast as hyper can write it: when the client stops
//! reading, the socket's buffers fill, hyper stops asking the body for more, and whatever
//! the body's own timers are (a stream's deadline, its stall timeout) they are never
//! polled again. So the edge watches the writes instead ([`WriteClock`], in the socket
//! wrapper): once a write has to wait, the connection is closed if the client has taken no
//! bytes for `[server] write_timeout`, or when the response's own deadline passes
//! ([`Delivery`]), whichever is first. Closing drops the response, and with it everything
//! the request holds (the upstream call, buffered chunks, its in-flight slot); the
//! response's [`Delivery`] is marked so that what drops it can tell a client that stopped
//! reading from one that went away.

use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// What a response asks of the edge while it is written, and what the edge answers: put
/// one in the response's extensions. Its deadline is when the response must be over even
/// if the client is not reading (a stream's deadline); [`Delivery::client_stopped_reading`]
/// says, once the response is dropped, whether the edge closed the connection because the
/// client took no bytes.
#[derive(Debug, Clone, Default)]
pub struct Delivery(Arc<DeliveryState>);

#[derive(Debug, Default)]
struct DeliveryState {
    /// The response is over by then, whatever the client does.
    deadline: Option<Instant>,
    /// The edge gave up on the client: it stopped taking bytes.
    stopped: AtomicBool,
}

impl Delivery {
    /// A response that must be over by `deadline`.
    #[must_use]
    pub fn until(deadline: Instant) -> Self {
        Self(Arc::new(DeliveryState {
            deadline: Some(deadline),
            stopped: AtomicBool::new(false),
        }))
    }

    /// The edge closed the connection because its client stopped taking bytes (for the
    /// write timeout, or with writes waiting when the deadline passed).
    #[must_use]
    pub fn client_stopped_reading(&self) -> bool {
        self.0.stopped.load(Ordering::Acquire)
    }

    pub(super) fn deadline(&self) -> Option<Instant> {
        self.0.deadline
    }

    pub(super) fn mark_stopped(&self) {
        self.0.stopped.store(true, Ordering::Release);
    }
}

/// The error a write fails with once the client has kept it waiting too long.
pub(super) fn stopped_reading(timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("the client took no bytes within {timeout:?}"),
    )
}

/// A socket's write clock: armed when a write has to wait, disarmed by any progress.
#[derive(Debug, Default)]
pub(super) struct WriteClock {
    /// Fires when the current wait is over; `None` while writes go out.
    wait: Option<Pin<Box<Sleep>>>,
}

impl WriteClock {
    /// Bytes went out: the client is reading.
    pub(super) fn progress(&mut self) {
        self.wait = None;
    }

    /// A write had to wait (`cx` is registered with the socket). Ready once the client
    /// has taken nothing for `timeout` since the first write of this wait, or the
    /// response's `deadline` (asked for when the wait begins) has passed.
    pub(super) fn poll_expired(
        &mut self,
        cx: &mut Context<'_>,
        timeout: Duration,
        deadline: impl FnOnce() -> Option<Instant>,
    ) -> Poll<()> {
        let wait = self.wait.get_or_insert_with(|| {
            let until = Instant::now() + timeout;
            Box::pin(tokio::time::sleep_until(
                deadline().map_or(until, |d| d.min(until)),
            ))
        });
        wait.as_mut().poll(cx)
    }
}
