//! The edge over in-memory connections (`tokio::io::duplex`) under paused time: what each
//! limit closes or answers, and when.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::*;

const SECOND: Duration = Duration::from_secs(1);

fn limits() -> Limits {
    Limits {
        header_read_timeout: Duration::from_secs(10),
        body_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(30),
        write_timeout: Duration::from_secs(20),
        max_connections: 100,
        max_in_flight: 100,
    }
}

/// `/ok`; `/echo` (reads the body, 408 on a body timeout); `/wait` (answers once `gate`
/// is notified); `/healthz`.
fn router(gate: Arc<Notify>) -> Router {
    Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route("/healthz", get(|| async { "live" }))
        .route(
            "/wait",
            get(move || async move {
                gate.notified().await;
                "done"
            }),
        )
        .route(
            "/echo",
            post(|body: axum::body::Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(b) => Ok(b),
                    Err(e) if is_body_timeout(&e) => Err(body_timeout()),
                    Err(e) => Err(crate::http::error::ApiError::bad_request(
                        None,
                        e.to_string(),
                    )),
                }
            }),
        )
        .method_not_allowed_fallback(method_not_allowed)
}

struct Fixture {
    edge: Arc<Edge>,
    tasks: Tasks,
    gate: Arc<Notify>,
}

impl Fixture {
    fn new(limits: Limits) -> Self {
        let gate = Arc::new(Notify::new());
        Self {
            edge: Edge::new(limits, router(Arc::clone(&gate))),
            tasks: Tasks::new(),
            gate,
        }
    }

    /// A new client connection.
    fn connect(&self) -> DuplexStream {
        let (client, server) = tokio::io::duplex(256 * 1024);
        self.edge.admit(server, &self.tasks);
        client
    }
}

async fn send(c: &mut DuplexStream, text: &str) {
    c.write_all(text.as_bytes()).await.unwrap();
}

fn get_request(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n")
}

/// One response: status, head (lowercased), body.
async fn response(c: &mut DuplexStream) -> (u16, String, String) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = c.read(&mut byte).await.unwrap();
        assert!(n > 0, "closed mid-head: {}", String::from_utf8_lossy(&buf));
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap().to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    c.read_exact(&mut body).await.unwrap();
    let status = head[9..12].parse().unwrap();
    (status, head, String::from_utf8(body).unwrap())
}

/// Does the server close the connection (before anything more is read)?
async fn closed(c: &mut DuplexStream) -> bool {
    let mut b = [0u8; 1];
    matches!(c.read(&mut b).await, Ok(0) | Err(_))
}

/// Is the connection still open after `wait` (nothing arrives meanwhile)?
async fn still_open_after(c: &mut DuplexStream, wait: Duration) -> bool {
    let mut b = [0u8; 1];
    tokio::time::timeout(wait, c.read(&mut b)).await.is_err()
}

fn error_code(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["error"]["code"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_nothing_is_closed_at_the_header_timeout() {
    let f = Fixture::new(limits());
    let start = Instant::now();
    let mut c = f.connect();
    assert!(still_open_after(&mut c, Duration::from_millis(9_900)).await);
    assert!(closed(&mut c).await);
    assert!(
        start.elapsed() < Duration::from_millis(10_100),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(f.edge.open_connections(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_head_trickled_a_byte_a_second_is_closed_at_the_header_timeout() {
    let f = Fixture::new(limits());
    let start = Instant::now();
    let mut c = f.connect();
    send(&mut c, "GET /ok HTTP/1.1\r\n").await;
    let mut sent = 0;
    while c.write_all(b"x").await.is_ok() && sent < 60 {
        sent += 1;
        let mut b = [0u8; 1];
        if let Ok(read) = tokio::time::timeout(SECOND, c.read(&mut b)).await {
            assert!(matches!(read, Ok(0) | Err(_)), "no response expected");
            break;
        }
    }
    assert!(closed(&mut c).await);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(10) && took < Duration::from_secs(12),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_connection_may_idle_for_the_idle_timeout_not_the_header_timeout() {
    let f = Fixture::new(Limits {
        header_read_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(10),
        ..limits()
    });
    let mut c = f.connect();
    send(&mut c, &get_request("/ok")).await;
    assert_eq!(response(&mut c).await.2, "ok");
    assert!(still_open_after(&mut c, Duration::from_secs(5)).await);
    // the same connection serves the next request
    send(&mut c, &get_request("/ok")).await;
    assert_eq!(response(&mut c).await.0, 200);
    let idle_from = Instant::now();
    assert!(closed(&mut c).await);
    let idle = idle_from.elapsed();
    assert!(
        idle >= Duration::from_secs(10) && idle < Duration::from_secs(11),
        "{idle:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn after_an_idle_gap_a_slow_head_gets_the_header_timeout_from_its_first_byte() {
    let f = Fixture::new(Limits {
        header_read_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(10),
        ..limits()
    });
    let mut c = f.connect();
    send(&mut c, &get_request("/ok")).await;
    response(&mut c).await;
    assert!(still_open_after(&mut c, Duration::from_secs(5)).await);
    send(&mut c, "GET /ok HTTP/1.1\r\n").await;
    let first_byte = Instant::now();
    assert!(closed(&mut c).await);
    let took = first_byte.elapsed();
    // the head's 2 s, not the idle gap's 10 s (seen at the watchdog's next look)
    assert!(
        took >= Duration::from_secs(2) && took <= Duration::from_secs(4),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_body_shorter_than_its_content_length_gets_408() {
    let f = Fixture::new(limits());
    let mut c = f.connect();
    send(
        &mut c,
        "POST /echo HTTP/1.1\r\nhost: test\r\ncontent-length: 100\r\n\r\n0123456789",
    )
    .await;
    let (status, head, body) = response(&mut c).await;
    assert_eq!(status, 408, "{head}{body}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(error_code(&body), "request_timeout");
    assert!(
        closed(&mut c).await,
        "a request with an unread body cannot keep the connection"
    );
}

#[tokio::test(start_paused = true)]
async fn a_chunked_body_that_never_ends_gets_408() {
    let f = Fixture::new(limits());
    let mut c = f.connect();
    send(
        &mut c,
        "POST /echo HTTP/1.1\r\nhost: test\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n",
    )
    .await;
    // a chunk now and then does not extend the deadline
    for _ in 0..3 {
        tokio::time::sleep(SECOND).await;
        send(&mut c, "1\r\nx\r\n").await;
    }
    let (status, _, body) = response(&mut c).await;
    assert_eq!(status, 408);
    assert_eq!(error_code(&body), "request_timeout");
}

#[tokio::test(start_paused = true)]
async fn a_whole_body_is_read_as_usual() {
    let f = Fixture::new(limits());
    let mut c = f.connect();
    send(
        &mut c,
        "POST /echo HTTP/1.1\r\nhost: test\r\ncontent-length: 5\r\n\r\nhello",
    )
    .await;
    assert_eq!(response(&mut c).await.2, "hello");
}

#[tokio::test(start_paused = true)]
async fn beyond_the_in_flight_cap_requests_get_503_at_once_but_probes_are_answered() {
    let f = Fixture::new(Limits {
        max_in_flight: 1,
        ..limits()
    });
    let mut busy = f.connect();
    send(&mut busy, &get_request("/wait")).await;
    tokio::task::yield_now().await;
    let mut other = f.connect();
    send(&mut other, &get_request("/ok")).await;
    let start = Instant::now();
    let (status, head, body) = response(&mut other).await;
    assert_eq!(status, 503, "{head}{body}");
    assert!(start.elapsed() < SECOND, "shed at once, not after a wait");
    assert!(head.contains("retry-after: 1"), "{head}");
    assert_eq!(error_code(&body), "server_overloaded");
    send(&mut other, &get_request("/healthz")).await;
    assert_eq!(response(&mut other).await.2, "live");
    // the slot comes back when the busy request's response is over
    f.gate.notify_waiters();
    assert_eq!(response(&mut busy).await.2, "done");
    send(&mut other, &get_request("/ok")).await;
    assert_eq!(response(&mut other).await.0, 200);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_mid_request_gives_its_in_flight_slot_back() {
    let f = Fixture::new(Limits {
        max_in_flight: 1,
        ..limits()
    });
    let mut leaving = f.connect();
    send(&mut leaving, &get_request("/wait")).await;
    tokio::task::yield_now().await;
    let mut other = f.connect();
    send(&mut other, &get_request("/ok")).await;
    assert_eq!(response(&mut other).await.0, 503);
    drop(leaving);
    let mut status = 503;
    for _ in 0..100 {
        tokio::task::yield_now().await;
        send(&mut other, &get_request("/ok")).await;
        status = response(&mut other).await.0;
        if status == 200 {
            break;
        }
    }
    assert_eq!(status, 200, "the slot came back when the client left");
}

#[tokio::test(start_paused = true)]
async fn at_the_connection_cap_the_longest_idle_connection_makes_room() {
    let f = Fixture::new(Limits {
        max_connections: 2,
        ..limits()
    });
    let mut oldest = f.connect();
    tokio::time::sleep(SECOND).await;
    let mut served = f.connect();
    send(&mut served, &get_request("/ok")).await;
    response(&mut served).await;
    tokio::time::sleep(SECOND).await;
    let mut newcomer = f.connect();
    assert!(closed(&mut oldest).await);
    send(&mut newcomer, &get_request("/ok")).await;
    assert_eq!(response(&mut newcomer).await.2, "ok");
    // the other idle one was not touched
    send(&mut served, &get_request("/ok")).await;
    assert_eq!(response(&mut served).await.0, 200);
}

#[tokio::test(start_paused = true)]
async fn at_the_cap_with_every_connection_busy_a_new_one_is_closed_at_once() {
    let f = Fixture::new(Limits {
        max_connections: 1,
        ..limits()
    });
    let mut busy = f.connect();
    send(&mut busy, &get_request("/wait")).await;
    tokio::task::yield_now().await;
    let start = Instant::now();
    let mut refused = f.connect();
    assert!(closed(&mut refused).await);
    assert!(start.elapsed() < SECOND);
    f.gate.notify_waiters();
    assert_eq!(response(&mut busy).await.2, "done");
}

#[tokio::test(start_paused = true)]
async fn hypers_own_parse_errors_get_openai_error_bodies() {
    let f = Fixture::new(limits());
    let mut c = f.connect();
    send(&mut c, "NOT HTTP AT ALL\r\n\r\n").await;
    let (status, head, body) = response(&mut c).await;
    assert_eq!(status, 400, "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(error_code(&body), "malformed_request");
    assert!(closed(&mut c).await);

    let mut c = f.connect();
    let huge = format!(
        "GET /ok HTTP/1.1\r\nhost: test\r\nx-big: {}\r\n\r\n",
        "a".repeat(MAX_HEADER_BYTES + 1)
    );
    let _ = c.write_all(huge.as_bytes()).await;
    let (status, _, body) = response(&mut c).await;
    assert_eq!(status, 431);
    assert_eq!(error_code(&body), "request_header_fields_too_large");
}

#[tokio::test(start_paused = true)]
async fn a_known_path_with_the_wrong_method_gets_405_json() {
    let f = Fixture::new(limits());
    let mut c = f.connect();
    send(&mut c, "DELETE /ok HTTP/1.1\r\nhost: test\r\n\r\n").await;
    let (status, head, body) = response(&mut c).await;
    assert_eq!(status, 405);
    assert!(head.contains("allow: get,head"), "{head}");
    assert_eq!(error_code(&body), "method_not_allowed");
}

#[tokio::test(start_paused = true)]
async fn draining_closes_idle_connections_and_lets_a_busy_one_finish() {
    let f = Fixture::new(limits());
    let mut idle = f.connect();
    let mut busy = f.connect();
    send(&mut busy, &get_request("/wait")).await;
    tokio::task::yield_now().await;
    f.edge.drain();
    assert!(closed(&mut idle).await);
    f.gate.notify_waiters();
    let (_, head, body) = response(&mut busy).await;
    assert_eq!(body, "done");
    assert!(head.contains("connection: close"), "{head}");
    assert!(closed(&mut busy).await);
    assert!(f.tasks.wait(SECOND).await);
}

#[tokio::test(start_paused = true)]
async fn close_all_ends_a_busy_connection() {
    let f = Fixture::new(limits());
    let mut busy = f.connect();
    send(&mut busy, &get_request("/wait")).await;
    tokio::task::yield_now().await;
    f.edge.close_all();
    assert!(closed(&mut busy).await);
    assert!(f.tasks.wait(SECOND).await);
}

#[test]
fn the_default_connection_cap_leaves_descriptors_for_upstreams() {
    assert_eq!(default_max_connections(Some(1024)), 480);
    assert_eq!(
        default_max_connections(Some(1 << 20)),
        MAX_DEFAULT_CONNECTIONS
    );
    assert_eq!(default_max_connections(Some(10)), 16);
    assert_eq!(default_max_connections(None), MAX_DEFAULT_CONNECTIONS);
}

#[test]
fn limits_come_from_server_with_defaults() {
    let mut config = Config::default();
    config.server.header_read_timeout = Some("3s".to_owned());
    config.server.max_in_flight = Some(7);
    let l = Limits::from_config(&config).unwrap();
    assert_eq!(l.header_read_timeout, Duration::from_secs(3));
    assert_eq!(l.body_read_timeout, DEFAULT_BODY_READ_TIMEOUT);
    assert_eq!(l.idle_timeout, DEFAULT_IDLE_TIMEOUT);
    assert_eq!(l.max_in_flight, 7);
    assert!(l.max_connections >= 16);
}

/// The wait before any HTTP state exists: pending on a socket with nothing to read (so
/// hyper's buffers are not allocated for a client that sends nothing), over once a byte
/// arrives.
#[tokio::test]
async fn a_tcp_connection_waits_for_its_first_byte_without_reading_it() {
    use futures_util::FutureExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    {
        let mut arrival = std::pin::pin!(server.arrival());
        assert!(
            arrival.as_mut().now_or_never().is_none(),
            "nothing to read yet"
        );
    }
    client.write_all(b"G").await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), server.arrival())
        .await
        .expect("the byte is seen");
    let mut byte = [0u8; 1];
    assert_eq!(
        server.try_read(&mut byte).unwrap(),
        1,
        "and left for hyper to read"
    );
}

/// An endless response body of 1 KiB chunks: how many it produced, and whether it was
/// dropped (with everything a real stream would hold).
#[derive(Clone, Default)]
struct Flood {
    produced: Arc<std::sync::atomic::AtomicUsize>,
    dropped: Arc<std::sync::atomic::AtomicBool>,
    /// The `Delivery` the response carried, when it asked for a deadline.
    delivery: Arc<std::sync::Mutex<Option<Delivery>>>,
}

/// Sets `dropped` when the body goes.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Flood {
    fn body(&self) -> axum::body::Body {
        let produced = Arc::clone(&self.produced);
        let flag = DropFlag(Arc::clone(&self.dropped));
        let chunks = futures_util::stream::poll_fn(move |_| {
            let _held = &flag;
            produced.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let chunk = axum::body::Bytes::from_static(&[b'x'; 1024]);
            std::task::Poll::Ready(Some(Ok::<_, std::convert::Infallible>(chunk)))
        });
        axum::body::Body::from_stream(chunks)
    }

    fn produced(&self) -> usize {
        self.produced.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn dropped(&self) -> bool {
        self.dropped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `/flood`: the endless body; `/flood-until`: the same, over 5 s from now whatever
    /// the client does (`Delivery::until`).
    fn router(&self) -> Router {
        let (plain, timed) = (self.clone(), self.clone());
        Router::new()
            .route("/flood", get(move || async move { plain.body() }))
            .route(
                "/flood-until",
                get(move || async move {
                    use axum::response::IntoResponse as _;
                    let delivery = Delivery::until(Instant::now() + 5 * SECOND);
                    *timed.delivery.lock().unwrap() = Some(delivery.clone());
                    let mut resp = timed.body().into_response();
                    resp.extensions_mut().insert(delivery);
                    resp
                }),
            )
    }
}

/// An edge over `flood`'s routes, and a client whose connection buffers 4 KiB.
fn flooded(limits: Limits, flood: &Flood) -> (Arc<Edge>, Tasks, DuplexStream) {
    let edge = Edge::new(limits, flood.router());
    let tasks = Tasks::new();
    let (client, server) = tokio::io::duplex(4096);
    edge.admit(server, &tasks);
    (edge, tasks, client)
}

fn in_flight(edge: &Edge) -> usize {
    edge.in_flight.load(std::sync::atomic::Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_is_let_go_at_the_write_timeout() {
    let flood = Flood::default();
    let (edge, _tasks, mut c) = flooded(limits(), &flood);
    send(&mut c, &get_request("/flood")).await;
    let mut first = [0u8; 200];
    c.read_exact(&mut first).await.unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200"));
    // the client reads nothing more; the body is not polled while its bytes wait, and
    // only a bounded amount is produced ahead of the client (backpressure, no queue)
    tokio::time::sleep(19 * SECOND).await;
    let ahead = flood.produced();
    assert!(
        ahead < 64,
        "{ahead} chunks produced ahead of a client that reads nothing"
    );
    assert!(!flood.dropped(), "let go before the write timeout");
    assert_eq!(in_flight(&edge), 1);
    tokio::time::sleep(2 * SECOND).await;
    assert!(
        flood.dropped(),
        "the response (and what it holds) is dropped"
    );
    assert_eq!(in_flight(&edge), 0, "the in-flight slot is back");
    assert_eq!(edge.open_connections(), 0, "the connection is closed");
}

#[tokio::test(start_paused = true)]
async fn a_response_deadline_holds_while_its_client_stops_reading() {
    let flood = Flood::default();
    let (edge, _tasks, mut c) = flooded(limits(), &flood);
    send(&mut c, &get_request("/flood-until")).await;
    let mut first = [0u8; 200];
    c.read_exact(&mut first).await.unwrap();
    tokio::time::sleep(4 * SECOND).await;
    assert!(!flood.dropped(), "let go before the deadline");
    tokio::time::sleep(2 * SECOND).await;
    assert!(
        flood.dropped(),
        "dropped at the deadline, long before the write timeout"
    );
    assert_eq!(in_flight(&edge), 0);
    let delivery = flood.delivery.lock().unwrap().clone().unwrap();
    assert!(delivery.client_stopped_reading(), "the response hears why");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_reads_slowly_but_steadily_is_not_let_go() {
    let flood = Flood::default();
    let (_edge, _tasks, mut c) = flooded(limits(), &flood);
    send(&mut c, &get_request("/flood")).await;
    let mut buf = [0u8; 1024];
    // a kilobyte every 5 s (within the 20 s write timeout) for two minutes
    for _ in 0..24 {
        c.read_exact(&mut buf).await.unwrap();
        tokio::time::sleep(5 * SECOND).await;
    }
    assert!(!flood.dropped(), "a reading client keeps its response");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_is_not_said_to_have_stopped_reading() {
    let flood = Flood::default();
    let (edge, _tasks, mut c) = flooded(limits(), &flood);
    send(&mut c, &get_request("/flood-until")).await;
    let mut first = [0u8; 200];
    c.read_exact(&mut first).await.unwrap();
    drop(c);
    tokio::time::sleep(SECOND).await;
    assert!(flood.dropped());
    assert_eq!(in_flight(&edge), 0);
    let delivery = flood.delivery.lock().unwrap().clone().unwrap();
    assert!(!delivery.client_stopped_reading());
}
