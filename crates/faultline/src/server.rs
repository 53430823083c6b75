//! The server: listener, connections, routes, and the handle tests hold.
//!
//! faultline runs its own accept loop and drives each connection with hyper's HTTP/1
//! connection, so a request can order its own connection dropped ([`ConnCtl`]): that is
//! how `reset` closes a socket with no response (and an RST: `SO_LINGER` 0). Every socket
//! gets `TCP_NODELAY`. Connections are tracked in a `JoinSet` owned by the accept task,
//! which the [`Handle`] owns: dropping the handle stops everything.
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/responses` (the Responses API) and
//! `POST /v1/messages` (Anthropic Messages), each also without `/v1`; `GET /v1/models`; and
//! the control API — `POST /control/script`, `GET /control/attempts[?model=…]`,
//! `POST /control/reset`.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tower_service::Service as _;

use crate::fault::{Fault, Script};
use crate::record::{Attempt, Books};
use crate::respond::{self, Ask};
use crate::wire::{self, Api};

/// Largest request body read.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Attempts kept per model by default.
pub const DEFAULT_RECORD_LIMIT: usize = 100_000;

/// How to start a faultline server.
#[derive(Debug, Clone)]
pub struct Server {
    listen: SocketAddr,
    default: Script,
    scripts: Vec<(String, Script)>,
    record_limit: usize,
}

impl Default for Server {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            default: Script::default(),
            scripts: Vec::new(),
            record_limit: DEFAULT_RECORD_LIMIT,
        }
    }
}

/// The body of `POST /control/script` (and the binary's `--script`): a model's script.
/// `model` `"*"` sets the default for models without a script of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelScript {
    /// The request `model` it applies to.
    pub model: String,
    /// One fault per request, in order.
    #[serde(default)]
    pub faults: VecDeque<Fault>,
    /// After the queue.
    #[serde(default)]
    pub then: Fault,
}

impl ModelScript {
    /// The script part.
    #[must_use]
    pub fn script(&self) -> Script {
        Script {
            faults: self.faults.clone(),
            then: self.then.clone(),
        }
    }
}

impl Server {
    /// Listen on 127.0.0.1 with any free port; every model healthy.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Listen on `addr` instead.
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Start `model` with `script` (also restored by a reset).
    #[must_use]
    pub fn script(mut self, model: impl Into<String>, script: impl Into<Script>) -> Self {
        let model = model.into();
        let script = script.into();
        if model == "*" {
            self.default = script;
        } else {
            self.scripts.push((model, script));
        }
        self
    }

    /// Keep at most `n` attempts per model (later ones are served, not recorded).
    #[must_use]
    pub fn record_limit(mut self, n: usize) -> Self {
        self.record_limit = n;
        self
    }

    /// Bind and serve on the current tokio runtime until the [`Handle`] is dropped.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(self) -> io::Result<Handle> {
        let listener = TcpListener::bind(self.listen).await?;
        let addr = listener.local_addr()?;
        let books = Books::new(self.default, self.scripts, self.record_limit);
        let router = router(books.clone());
        let mut tasks = JoinSet::new();
        tasks.spawn(accept(listener, router));
        Ok(Handle { addr, books, tasks })
    }
}

/// A running server. Dropping it stops the server and closes every connection.
#[derive(Debug)]
pub struct Handle {
    addr: SocketAddr,
    books: Books,
    /// The accept task, which owns the connections' tasks.
    tasks: JoinSet<()>,
}

impl Handle {
    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the `base_url` an OpenAI client takes.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.uri())
    }

    /// Give `model` a new script (`"*"`: the default); its outage clock starts now.
    pub fn script(&self, model: &str, script: impl Into<Script>) {
        self.books.script(model, script.into());
    }

    /// `model`'s attempts so far, in arrival order.
    #[must_use]
    pub fn attempts(&self, model: &str) -> Vec<Attempt> {
        self.books.attempts(model)
    }

    /// Every model's attempts, in arrival order.
    #[must_use]
    pub fn all_attempts(&self) -> Vec<Attempt> {
        self.books.all_attempts()
    }

    /// The time attempts would be stamped with now (since start or the last reset).
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.books.elapsed()
    }

    /// Forget every attempt, restore the startup scripts, restart the clock.
    pub fn reset(&self) {
        self.books.reset();
    }

    /// Serve until the server stops (in practice: forever; for the binary).
    pub async fn serve_forever(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// A connection's control line, shared by its task and its requests.
#[derive(Debug, Default)]
pub(crate) struct ConnCtl {
    /// Close with an RST instead of a FIN.
    reset: AtomicBool,
    /// Wakes the connection task to drop the connection.
    drop_now: Notify,
}

impl ConnCtl {
    /// Drop the connection at once, with an RST.
    pub(crate) fn reset(&self) {
        self.reset.store(true, Ordering::SeqCst);
        self.drop_now.notify_one();
    }
}

/// A TCP stream that closes with an RST when its connection was reset.
struct Conn {
    tcp: TcpStream,
    ctl: Arc<ConnCtl>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.ctl.reset.load(Ordering::SeqCst) {
            let _ = self.tcp.set_zero_linger();
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

/// Accept connections forever; each runs in a task owned by this one.
async fn accept(listener: TcpListener, router: Router) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    conns.spawn(serve(tcp, router.clone()));
                }
                // out of file descriptors, or a connection that died in the backlog
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// One connection: HTTP/1 with keep-alive, until the client closes it or a request
/// orders it dropped.
async fn serve(tcp: TcpStream, router: Router) {
    let _ = tcp.set_nodelay(true);
    let ctl = Arc::new(ConnCtl::default());
    let io = TokioIo::new(Conn {
        tcp,
        ctl: Arc::clone(&ctl),
    });
    let for_requests = Arc::clone(&ctl);
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(Arc::clone(&for_requests));
        router.clone().call(req)
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::select! {
        _ = conn => {}
        () = ctl.drop_now.notified() => {}
    }
}

fn router(books: Books) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/responses", post(responses))
        .route("/responses", post(responses))
        .route("/v1/messages", post(messages))
        .route("/messages", post(messages))
        .route("/v1/models", get(models))
        .route("/control/script", post(script))
        .route("/control/attempts", get(attempts))
        .route("/control/reset", post(reset))
        .with_state(books)
}

async fn chat(State(books): State<Books>, request: Request) -> Response {
    answer(&books, request, Api::Chat).await
}

async fn responses(State(books): State<Books>, request: Request) -> Response {
    answer(&books, request, Api::Responses).await
}

async fn messages(State(books): State<Books>, request: Request) -> Response {
    answer(&books, request, Api::Messages).await
}

/// A request of `api`: read, recorded, answered as its fault says.
async fn answer(books: &Books, request: Request, api: Api) -> Response {
    let conn = request.extensions().get::<Arc<ConnCtl>>().cloned();
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await else {
        return respond::error(
            api,
            400,
            "could not read the body",
            "invalid_request_error",
            None,
            None,
        );
    };
    let req = match wire::parse(api, &body) {
        Ok(r) => r,
        Err(e) => {
            let message = format!("could not parse the body: {e}");
            return respond::error(api, 400, &message, "invalid_request_error", None, None);
        }
    };
    let prefill = req.prefill.as_deref();
    let arrival = books.arrive(&req.model, api, req.stream, prefill);
    let ask = Ask {
        api,
        model: &req.model,
        stream: req.stream,
        include_usage: req.include_usage,
        prefill,
    };
    respond::respond(&ask, arrival.fault, arrival.recorder, conn).await
}

async fn models(State(books): State<Books>) -> Response {
    let mut resp = Response::new(Body::from(wire::model_list(&books.models())));
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp
}

async fn script(State(books): State<Books>, Json(body): Json<ModelScript>) -> StatusCode {
    books.script(&body.model, body.script());
    StatusCode::NO_CONTENT
}

async fn attempts(State(books): State<Books>, request: Request) -> Response {
    let model = request.uri().query().and_then(|q| query_param(q, "model"));
    let list = match model {
        Some(m) => books.attempts(&m),
        None => books.all_attempts(),
    };
    Json(list).into_response()
}

async fn reset(State(books): State<Books>) -> StatusCode {
    books.reset();
    StatusCode::NO_CONTENT
}

/// The decoded value of `name` in a query string.
fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        assert_eq!(
            query_param("model=a%2Fb+c&x=1", "model").as_deref(),
            Some("a/b c")
        );
        assert_eq!(query_param("x=1", "model"), None);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
