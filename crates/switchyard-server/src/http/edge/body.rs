//! The bodies the edge wraps: a request body with a read deadline ([`Timed`]), and a
//! response body that carries its request's bookkeeping until hyper is done with it
//! ([`Tracked`], holding a guard — the connection's `conn::Served` — so that the
//! connection goes back to idle and the in-flight slot is freed when the last byte is
//! handed over, or when the response is dropped unfinished).

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The request body did not arrive within `[server] body_read_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub struct BodyTimeout(pub Duration);

/// Is a `BodyTimeout` anywhere in `err`'s chain of sources? (Body readers wrap the
/// body's error in their own.)
#[must_use]
pub fn is_body_timeout(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<BodyTimeout>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// A request body that fails with [`BodyTimeout`] once it has kept its reader waiting
/// `timeout`. The clock starts the first time the reader has to wait (a body already in
/// hyper's buffer never arms a timer).
pub(super) struct Timed<B> {
    inner: B,
    timeout: Duration,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B> Timed<B> {
    pub(super) fn new(inner: B, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            deadline: None,
        }
    }
}

impl<B> Body for Timed<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => {
                let timeout = this.timeout;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Box::new(BodyTimeout(timeout)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that holds `G` (its request's bookkeeping, undone on drop) until hyper
/// drops it.
pub(super) struct Tracked<G> {
    pub(super) inner: axum::body::Body,
    pub(super) _guard: G,
}

impl<G: Unpin> Body for Tracked<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
