//! Slow request bodies against the real binary over sockets (keys mode, `[server]
//! max_in_flight = 8`): a key that would be refused anyway (no route, over its rpm) is
//! refused before its body is read, so eight connections trickling bodies do not hold the
//! server's eight slots; a key at its `max_in_flight` is refused at once while its own
//! trickling requests hold their places, and another key is still served. Outcomes only:
//! which answer came, never how long it took.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::{chat_body, metric, route, simulated_provider, Scratch, Server, WAIT};

fn hash(token: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// Every key's token is `sy-e2e-admission-<name>`.
const ADMIN: &str = "sy-e2e-admission-ops";
const GOOD: &str = "sy-e2e-admission-good";

fn config() -> String {
    let key = |name: &str, extra: &str| {
        format!(
            "[[keys]]\nname = \"{name}\"\nsha256 = \"{}\"\n{extra}\n\n",
            hash(&format!("sy-e2e-admission-{name}"))
        )
    };
    format!(
        "[server]\nmax_in_flight = 8\n\n{}{}{}{}{}{}{}",
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], ""),
        key("lost", "routes = []"),
        key("slow", "routes = [\"*\"]\nrpm = 1"),
        key("busy", "routes = [\"*\"]\nmax_in_flight = 2"),
        key("good", "routes = [\"*\"]"),
        key("ops", "routes = []\nadmin = true"),
    )
}

fn addr(server: &Server) -> SocketAddr {
    server.base.trim_start_matches("http://").parse().unwrap()
}

/// A connection that sends a request head for a 100,000-byte body as key `name`, then 10
/// bytes of it, and no more.
async fn trickling(addr: SocketAddr, name: &str) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         authorization: Bearer sy-e2e-admission-{name}\r\ncontent-length: 100000\r\n\r\n{{\"model\":"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp
}

/// The status of the response that arrives on `tcp` while its body is still unsent
/// (bounded by [`WAIT`]; 0 when none came).
async fn status_before_the_body(tcp: &mut TcpStream) -> u16 {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(WAIT, read).await;
    let text = String::from_utf8_lossy(&got);
    text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Wait (bounded by [`WAIT`], polling `/metrics`) until `n` requests are in flight.
async fn in_flight_reaches(server: &Server, n: f64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        let text = server
            .get("/metrics", &[("authorization", &format!("Bearer {ADMIN}"))])
            .await
            .text;
        if metric(&text, "switchyard_in_flight_requests", &[]).is_some_and(|v| v >= n) {
            return;
        }
    }
    panic!("{n} requests never were in flight");
}

#[tokio::test]
async fn slow_bodies_of_keys_refused_anyway_hold_no_slot() {
    let server = Server::start(Scratch::new("e2e", "admission-refused"), &config(), &[]);
    let addr = addr(&server);
    let good = [("authorization", format!("Bearer {GOOD}"))];
    let good: Vec<(&str, &str)> = good.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // as many trickling bodies as the server has slots, from a key with no route
    let mut lost = Vec::new();
    for _ in 0..8 {
        lost.push(trickling(addr, "lost").await);
    }
    for tcp in &mut lost {
        assert_eq!(status_before_the_body(tcp).await, 403);
    }
    server
        .chat_with(&chat_body("smart", "hi"), &good)
        .await
        .expect_status(200);
    // an rpm-1 key: its first request waits for its body, the other seven are refused
    let mut slow = vec![trickling(addr, "slow").await];
    in_flight_reaches(&server, 1.0).await;
    for _ in 0..7 {
        let mut tcp = trickling(addr, "slow").await;
        assert_eq!(status_before_the_body(&mut tcp).await, 429);
        slow.push(tcp);
    }
    server
        .chat_with(&chat_body("smart", "hi"), &good)
        .await
        .expect_status(200);
}

#[tokio::test]
async fn a_key_at_its_cap_of_requests_in_flight_is_refused_and_others_are_served() {
    let server = Server::start(Scratch::new("e2e", "admission-cap"), &config(), &[]);
    let addr = addr(&server);
    let held = [trickling(addr, "busy").await, trickling(addr, "busy").await];
    in_flight_reaches(&server, 2.0).await;
    let mut third = trickling(addr, "busy").await;
    assert_eq!(status_before_the_body(&mut third).await, 429);
    let reply = server
        .chat_with(
            &chat_body("smart", "hi"),
            &[("authorization", &format!("Bearer {GOOD}"))],
        )
        .await;
    reply.expect_status(200);
    drop(held);
}
