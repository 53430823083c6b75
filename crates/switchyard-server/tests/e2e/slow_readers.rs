//! Clients that open a stream and stop reading it (a small receive buffer, nothing read
//! after the first bytes), over real sockets: the route's deadline and the server's write
//! timeout hold whatever the client does. The upstream call is cancelled, the in-flight slot
//! comes back (another request is answered at `max_in_flight = 1`), and the request-log line
//! says the client stopped reading, with what the upstream produced. Outcomes only — never
//! how long anything took.

use std::net::SocketAddr;
use std::path::Path;

use faultline::{Fault, Script};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::common::conf::{self, Conf};
use crate::support::{chat_body, eventually, lines_of, stream_body, Scratch, Server, WAIT};

/// Open a stream on a socket with a 4 KiB receive buffer, read its first 200 bytes, and
/// return the socket without reading more.
async fn open_and_stop_reading(addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut tcp = socket.connect(addr).await.unwrap();
    let body = stream_body(conf::ROUTE, "tell me everything").to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    let mut first = vec![0u8; 200];
    tcp.read_exact(&mut first).await.unwrap();
    assert!(
        first.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    tcp
}

/// A request that must be answered once the stuck stream's slot is back (503 until then).
async fn answered_once_the_slot_is_back(server: &Server) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = server.chat(&chat_body(conf::ROUTE, "my turn?")).await;
        if reply.status == 200 {
            return;
        }
        assert_eq!(reply.status, 503, "{}", reply.text);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the slot never came back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The one request-log line of the stuck stream.
async fn stuck_line(log: &Path) -> Value {
    eventually("the stuck stream's log line", || !lines_of(log).is_empty()).await;
    serde_json::from_str(&lines_of(log)[0]).unwrap()
}

/// A flooding primary (content as fast as it is read, never ending), then healthy.
async fn flooding_upstream() -> faultline::Handle {
    let upstream = conf::upstream().await;
    let flood = Fault::Flood { chunk_bytes: 1000 };
    upstream.script("primary", Script::queue([flood], Fault::Ok));
    upstream
}

/// Check the upstream was cancelled, the log line, and that the slot came back.
async fn assert_let_go(server: &Server, upstream: &faultline::Handle, log: &Path) {
    eventually("the upstream call cancelled", || {
        upstream
            .attempts("primary")
            .first()
            .is_some_and(|a| a.client_gone())
    })
    .await;
    let line = stuck_line(log).await;
    assert_eq!(line["status"], 499, "{line}");
    assert_eq!(line["error"], "client_stopped_reading", "{line}");
    assert_eq!(line["stream"], true, "{line}");
    // what the upstream produced is billed as far as known: one token per chunk it sent
    let produced = line["usage"]["output_tokens"].as_u64().unwrap_or(0);
    assert!(produced > 0, "{line}");
    answered_once_the_slot_is_back(server).await;
}

#[tokio::test]
async fn a_stream_whose_client_stops_reading_ends_at_the_routes_deadline() {
    let upstream = flooding_upstream().await;
    let scratch = Scratch::new("e2e", "slow-reader-deadline");
    let log = scratch.file("requests.jsonl");
    // the write timeout is far beyond the test: only the deadline can end the stream
    let toml = Conf::new(&upstream)
        .request_log()
        .server("max_in_flight = 1")
        .route("deadline = \"2s\"")
        .toml();
    let server = Server::start(scratch, &toml, &[]);
    let addr: SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let stuck = open_and_stop_reading(addr).await;
    assert_let_go(&server, &upstream, &log).await;
    drop(stuck);
}

#[tokio::test]
async fn a_stream_whose_client_stops_reading_ends_at_the_write_timeout() {
    let upstream = flooding_upstream().await;
    let scratch = Scratch::new("e2e", "slow-reader-write");
    let log = scratch.file("requests.jsonl");
    // the route's deadline is far beyond the test: only the write timeout can end it
    let toml = Conf::new(&upstream)
        .request_log()
        .server("max_in_flight = 1")
        .server("write_timeout = \"1s\"")
        .route("deadline = \"10m\"")
        .toml();
    let server = Server::start(scratch, &toml, &[]);
    let addr: SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let stuck = open_and_stop_reading(addr).await;
    assert_let_go(&server, &upstream, &log).await;
    drop(stuck);
}
