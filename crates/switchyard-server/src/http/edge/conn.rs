//! One client connection: hyper's HTTP/1 driver plus the edge's watchdog.
//!
//! [`ConnState`] is what the edge knows of a connection, kept in atomics that its three
//! parts update: the service marks a request busy and its response body idle again
//! (`Served`), the socket wrapper ([`Watched`]) notes the first byte after an idle
//! gap, and the watchdog in [`drive`] closes the connection when its current wait is
//! over: `header_read_timeout` from the accept (or from the first byte after an idle gap)
//! until a request head is complete, `idle_timeout` between requests. A busy connection
//! has no such deadline (its body has `body_read_timeout`; its handler, the route's own
//! deadline). Writes have theirs, whatever the state: [`Watched`] closes the connection
//! when the client takes no bytes for `write_timeout`, or when a response's own deadline
//! ([`Delivery`]) passes while its writes wait (`write.rs`). The accept loop and shutdown steer a connection through its command
//! ([`Command`]): drain (finish the request in progress, then close) or close now.
//!
//! [`Watched`] also replaces hyper's own answer to a request it cannot parse (a status
//! line and `content-length: 0`, written before any handler runs) with the same status
//! and an OpenAI error body (`errors::parse_failure`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::http::{Request, Response};
use axum::response::IntoResponse as _;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tower_service::Service as _;

use super::body::{Timed, Tracked};
use super::write::{self, Delivery, WriteClock};
use super::{errors, Edge, Socket};

/// What the edge has asked of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Command {
    /// Nothing: serve requests.
    Serve = 0,
    /// Shutting down: finish the request in progress (if any), then close.
    Drain = 1,
    /// Close now (evicted at the connection cap, or the grace period is over).
    Close = 2,
}

/// One connection's state, shared by its watchdog, its socket and its requests.
#[derive(Debug)]
pub(super) struct ConnState {
    /// Registry key.
    pub(super) id: u64,
    /// A request is being served: from its parsed head to the end of its response body.
    busy: AtomicBool,
    /// A response has been completed: the connection is a keep-alive one between requests.
    served: AtomicBool,
    /// A byte has arrived since the current wait began.
    heard: AtomicBool,
    /// When the current wait began, ms since the edge's epoch: the accept, the end of the
    /// last response, or the first byte after an idle gap.
    since: AtomicU64,
    command: AtomicU8,
    /// Wakes the watchdog when `command` changes.
    control: tokio::sync::Notify,
    /// The response being written, when it asked for a deadline or wants to hear that its
    /// client stopped reading (locked only when a write has to wait, and per response).
    delivery: Mutex<Option<Delivery>>,
}

impl ConnState {
    pub(super) fn new(id: u64, now_ms: u64) -> Self {
        Self {
            id,
            busy: AtomicBool::new(false),
            served: AtomicBool::new(false),
            heard: AtomicBool::new(false),
            since: AtomicU64::new(now_ms),
            command: AtomicU8::new(Command::Serve as u8),
            control: tokio::sync::Notify::new(),
            delivery: Mutex::new(None),
        }
    }

    /// Ask the connection to drain or close; its watchdog wakes to act on it.
    pub(super) fn command(&self, c: Command) {
        self.command.fetch_max(c as u8, Ordering::AcqRel);
        self.control.notify_one();
    }

    fn current(&self) -> Command {
        match self.command.load(Ordering::Acquire) {
            0 => Command::Serve,
            1 => Command::Drain,
            _ => Command::Close,
        }
    }

    pub(super) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// Since when an idle connection has been waiting (for eviction: the oldest goes).
    pub(super) fn waiting_since(&self) -> u64 {
        self.since.load(Ordering::Acquire)
    }

    fn begin_request(&self) {
        self.busy.store(true, Ordering::Release);
    }

    /// The response being written from now on.
    fn deliver(&self, delivery: Option<Delivery>) {
        *self.delivery.lock().unwrap_or_else(PoisonError::into_inner) = delivery;
    }

    /// When the response being written must be over, if it said.
    fn response_deadline(&self) -> Option<tokio::time::Instant> {
        let delivery = self.delivery.lock().unwrap_or_else(PoisonError::into_inner);
        delivery.as_ref().and_then(Delivery::deadline)
    }

    /// The client stopped taking bytes: tell the response being written.
    fn client_stopped_reading(&self) {
        let delivery = self.delivery.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = delivery.as_ref() {
            d.mark_stopped();
        }
    }

    /// The response is over (sent or dropped): idle from `now_ms`.
    pub(super) fn end_request(&self, now_ms: u64) {
        self.deliver(None);
        self.since.store(now_ms, Ordering::Release);
        self.heard.store(false, Ordering::Release);
        self.served.store(true, Ordering::Release);
        self.busy.store(false, Ordering::Release);
    }

    /// Bytes arrived on the socket.
    fn on_read(&self, now: impl FnOnce() -> u64) {
        if self.busy.load(Ordering::Acquire) || self.heard.load(Ordering::Acquire) {
            return;
        }
        self.heard.store(true, Ordering::Release);
        // a fresh connection's head deadline runs from the accept, not its first byte
        if self.served.load(Ordering::Acquire) {
            self.since.store(now(), Ordering::Release);
        }
    }

    /// How long until the watchdog looks again; `None` when the current wait is over. It
    /// looks at least every `header_read_timeout`: the first byte after an idle gap moves
    /// the deadline earlier without waking it (waking it would cost every request), so a
    /// head trickled after a gap is closed within twice that timeout of its first byte.
    fn next_look(&self, limits: &super::Limits, now_ms: u64) -> Option<Duration> {
        let every = limits.header_read_timeout.min(limits.idle_timeout);
        match self.deadline(limits) {
            Some(deadline) if deadline <= now_ms => None,
            Some(deadline) => Some(Duration::from_millis(deadline - now_ms).min(every)),
            // a request in service has no head deadline
            None => Some(every),
        }
    }

    /// When the current wait ends, ms since the epoch; `None` while a request is served.
    fn deadline(&self, limits: &super::Limits) -> Option<u64> {
        if self.is_busy() {
            return None;
        }
        let between_requests =
            self.served.load(Ordering::Acquire) && !self.heard.load(Ordering::Acquire);
        let window = if between_requests {
            limits.idle_timeout
        } else {
            limits.header_read_timeout
        };
        let window = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        Some(self.waiting_since().saturating_add(window))
    }
}

/// Serve one connection until it ends, times out, or is told to close.
pub(super) async fn drive<T: Socket>(edge: Arc<Edge>, io: T, conn: Arc<ConnState>) {
    if first_bytes(&edge, &io, &conn).await {
        serve_http(&edge, io, &conn).await;
    }
    edge.forget(&conn);
}

/// Wait for the client's first bytes before building any HTTP state (hyper allocates its
/// 8 KiB read buffer on its first read, also for a client that never sends anything).
/// False when the head deadline passes first or the edge says drain or close.
async fn first_bytes<T: Socket>(edge: &Edge, io: &T, conn: &ConnState) -> bool {
    tokio::select! {
        () = io.arrival() => true,
        () = tokio::time::sleep(edge.limits.header_read_timeout) => false,
        () = conn.control.notified() => conn.current() == Command::Serve,
    }
}

/// HTTP/1 on the connection, under the watchdog and the edge's commands.
async fn serve_http<T: Socket>(edge: &Arc<Edge>, io: T, conn: &Arc<ConnState>) {
    let Some(first_look) = conn.next_look(&edge.limits, edge.now_ms()) else {
        return;
    };
    let io = TokioIo::new(Watched::new(io, Arc::clone(conn), Arc::clone(edge)));
    let link = Arc::new(Link {
        edge: Arc::clone(edge),
        conn: Arc::clone(conn),
    });
    let service = hyper::service::service_fn(move |req| Arc::clone(&link).serve(req));
    let http = edge.http.serve_connection(io, service);
    tokio::pin!(http);
    let watchdog = tokio::time::sleep(first_look);
    tokio::pin!(watchdog);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = http.as_mut() => break,
            () = conn.control.notified() => match conn.current() {
                Command::Serve => {}
                Command::Drain if conn.is_busy() => {
                    if !draining {
                        draining = true;
                        http.as_mut().graceful_shutdown();
                    }
                }
                Command::Drain | Command::Close => break,
            },
            () = &mut watchdog => match conn.next_look(&edge.limits, edge.now_ms()) {
                Some(wait) => watchdog.as_mut().reset(tokio::time::Instant::now() + wait),
                None => break,
            },
        }
    }
}

/// What a connection's requests share.
pub(super) struct Link {
    edge: Arc<Edge>,
    conn: Arc<ConnState>,
}

/// A request's bookkeeping, undone on drop: its connection goes back to idle and its
/// in-flight slot (if it took one) is freed.
pub(super) struct Served {
    link: Arc<Link>,
    slot: bool,
}

impl Drop for Served {
    fn drop(&mut self) {
        let edge = &self.link.edge;
        if self.slot {
            edge.release_slot();
        }
        self.link.conn.end_request(edge.now_ms());
    }
}

impl Link {
    /// One request: take an in-flight slot (or answer 503), give the body its read
    /// deadline, route it, and hand the response to hyper with the bookkeeping attached.
    async fn serve(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Tracked<Served>>, std::convert::Infallible> {
        self.conn.begin_request();
        let exempt = super::EXEMPT_FROM_IN_FLIGHT.contains(&req.uri().path());
        let slot = !exempt && self.edge.take_slot();
        // held from here: if the client goes first, the future drops it and the slot returns
        let served = Served { link: self, slot };
        let edge = &served.link.edge;
        let response = if exempt || slot {
            let timeout = edge.limits.body_read_timeout;
            let req = req.map(|b| axum::body::Body::new(Timed::new(b, timeout)));
            let req = match &edge.fast {
                Some(fast) => fast.answer(req),
                None => Err(req),
            };
            match req {
                Ok(answer) => answer.await,
                Err(req) => match edge.router.clone().call(req).await {
                    Ok(r) => r,
                    Err(never) => match never {},
                },
            }
        } else {
            errors::overloaded().into_response()
        };
        (served.link.conn).deliver(response.extensions().get::<Delivery>().cloned());
        Ok(response.map(|inner| Tracked {
            inner,
            _guard: served,
        }))
    }
}

/// A client socket as hyper sees it: notes arrivals for the watchdog, times writes that
/// wait for the client, and swaps hyper's bodiless parse-error responses for OpenAI-shaped
/// ones.
struct Watched<T> {
    io: T,
    conn: Arc<ConnState>,
    edge: Arc<Edge>,
    /// Since when writes have waited for the client, if they do.
    clock: WriteClock,
    /// Our replacement for hyper's error response, and how much of it is written. Once
    /// set, everything hyper writes is discarded (it closes the connection next).
    replacement: Option<(Vec<u8>, usize)>,
}

impl<T> Watched<T> {
    fn new(io: T, conn: Arc<ConnState>, edge: Arc<Edge>) -> Self {
        Self {
            io,
            conn,
            edge,
            clock: WriteClock::default(),
            replacement: None,
        }
    }

    /// A write's outcome, under the write clock: one that has to wait fails once the
    /// client has taken nothing for `write_timeout` or the response's deadline has passed.
    fn timed(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        if written.is_ready() {
            self.clock.progress();
            return written;
        }
        let timeout = self.edge.limits.write_timeout;
        let conn = &self.conn;
        ready!(self
            .clock
            .poll_expired(cx, timeout, || conn.response_deadline()));
        self.conn.client_stopped_reading();
        Poll::Ready(Err(write::stopped_reading(timeout)))
    }

    /// Is `buf` hyper's own answer to a request it could not parse? Such a response has
    /// one of hyper's parse-error statuses, is written with no request in service, and
    /// (unlike every response of ours) has no `content-type`. Runs on every write: the
    /// cheap tests come first.
    fn hypers_parse_error(&self, buf: &[u8]) -> Option<Vec<u8>> {
        let status = match buf.strip_prefix(b"HTTP/1.1 ")?.get(..4)? {
            b"400 " => 400,
            b"414 " => 414,
            b"431 " => 431,
            _ => return None,
        };
        if self.conn.is_busy() {
            return None;
        }
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
        let typed = buf[..head_end]
            .windows(CONTENT_TYPE.len())
            .any(|w| w.eq_ignore_ascii_case(CONTENT_TYPE));
        if typed {
            return None;
        }
        errors::parse_failure(status, super::MAX_HEADER_BYTES)
    }
}

/// How a `content-type` header starts in a response head.
const CONTENT_TYPE: &[u8] = b"\r\ncontent-type:";

impl<T: AsyncWrite + Unpin> Watched<T> {
    /// Write out the replacement, if any; ready when none is left to write.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some((bytes, written)) = &mut self.replacement else {
            return Poll::Ready(Ok(()));
        };
        while *written < bytes.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        Poll::Ready(Ok(()))
    }

    /// Replace (or keep discarding) what hyper writes — `len` bytes starting with `head`;
    /// `None` when they go out as they are.
    fn poll_swap(
        &mut self,
        cx: &mut Context<'_>,
        head: &[u8],
        len: usize,
    ) -> Option<Poll<io::Result<usize>>> {
        if self.replacement.is_none() {
            let ours = self.hypers_parse_error(head)?;
            self.replacement = Some((ours, 0));
        }
        Some(self.poll_replacement(cx).map_ok(|()| len))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            let edge = &this.edge;
            this.conn.on_read(|| edge.now_ms());
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(swapped) = this.poll_swap(cx, buf, buf.len()) {
            return swapped;
        }
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        this.timed(cx, written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // hyper writes a head as one slice: the first non-empty one tells
        let head = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        let len = bufs.iter().map(|b| b.len()).sum();
        if let Some(swapped) = this.poll_swap(cx, head, len) {
            return swapped;
        }
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.timed(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_replacement(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
