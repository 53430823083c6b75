//! Hostile and careless clients at the connection level: many slow or silent connections
//! (the rest are still answered; the slow ones are closed), the connection cap (the
//! longest-idle connection makes room), a body that stops arriving (408), requests beyond
//! the in-flight cap (503 + `Retry-After`), and the HTTP layer's own errors (405, 431,
//! malformed request) in OpenAI's error JSON. Outcomes only: which connection was closed,
//! which answer came — never how long it took.

use std::net::SocketAddr;

use futures_util::future::join_all;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::conf::{self, Conf};
use crate::common::serve::Launch;
use crate::support::{
    chat_body, command, eventually, route, simulated_provider, Reply, Scratch, Server, WAIT,
};

/// A route `smart` on a simulated provider that answers at once, with `server` lines.
fn simulated(server: &str) -> String {
    format!(
        "[server]\n{server}\n\n{}{}",
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], "")
    )
}

fn addr(server: &Server) -> SocketAddr {
    server.base.trim_start_matches("http://").parse().unwrap()
}

/// Is the connection closed by the server (EOF or reset), waiting at most [`WAIT`]?
/// Panics if the server sends anything.
pub(crate) async fn closed_by_server(mut tcp: TcpStream) -> bool {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(WAIT, tcp.read(&mut buf)).await {
        Ok(Ok(0) | Err(_)) => true,
        Ok(Ok(n)) => panic!("unexpected bytes: {}", String::from_utf8_lossy(&buf[..n])),
        Err(_) => false,
    }
}

/// Everything the server sends on `tcp` after `request`, until it closes (bounded).
async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let _ = tcp.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(WAIT, tcp.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Status and parsed JSON body of a raw HTTP/1.1 response.
fn parse_raw(text: &str) -> (u16, String, Value) {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let json = serde_json::from_str(body).unwrap_or(Value::Null);
    (status, head.to_ascii_lowercase(), json)
}

#[tokio::test]
async fn normal_requests_are_answered_while_hundreds_of_slow_connections_are_held_and_the_slow_ones_are_closed(
) {
    let server = Server::start(
        Scratch::new("e2e", "slow-clients"),
        &simulated("header_read_timeout = \"2s\"\nmax_connections = 2000"),
        &[],
    );
    let addr = addr(&server);
    // 400 connections: half send nothing, half a head that never ends
    let mut slow = Vec::new();
    for i in 0..400 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 1 {
            tcp.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
                .await
                .unwrap();
        }
        slow.push(tcp);
    }
    let reply = server.chat(&chat_body("smart", "still there?")).await;
    reply.expect_status(200);
    let closed = join_all(slow.into_iter().map(closed_by_server)).await;
    let open = closed.iter().filter(|c| !**c).count();
    assert_eq!(open, 0, "{open} slow connection(s) still open");
    // and the server still answers afterwards
    server
        .chat(&chat_body("smart", "and now?"))
        .await
        .expect_status(200);
}

#[tokio::test]
async fn at_the_connection_cap_the_longest_idle_connections_make_room_for_new_clients() {
    // timeouts far beyond the test: only eviction can close anything
    let server = Server::start(
        Scratch::new("e2e", "cap"),
        &simulated("header_read_timeout = \"5m\"\nidle_timeout = \"5m\"\nmax_connections = 50"),
        &[],
    );
    let addr = addr(&server);
    let mut idle = Vec::new();
    for _ in 0..80 {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    let reply = server.chat(&chat_body("smart", "room for me?")).await;
    reply.expect_status(200);
    // the first 30 were the oldest when the last 30 arrived
    let oldest: Vec<TcpStream> = idle.drain(..30).collect();
    let closed = join_all(oldest.into_iter().map(closed_by_server)).await;
    assert!(closed.iter().all(|c| *c), "{closed:?}");
}

/// More clients than file descriptors: 400 silent connections against a server whose
/// open-file limit is 256 (and whose connection cap, set above it, cannot help). Accepting
/// fails for want of descriptors; the longest-idle connections are closed to make room,
/// so a normal client still gets its answer instead of waiting behind them for ever.
#[tokio::test]
async fn silent_connections_beyond_the_open_file_limit_do_not_lock_clients_out() {
    let scratch = Scratch::new("e2e", "fd-limit");
    let path = scratch.write(
        "switchyard.toml",
        &simulated("header_read_timeout = \"5m\"\nmax_connections = 1000"),
    );
    let inner = command(
        &[
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
        &scratch.path,
    );
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "ulimit -n 256 && exec \"$@\"", "sh"])
        .arg(inner.get_program())
        .args(inner.get_args())
        .current_dir(&scratch.path)
        .stdin(std::process::Stdio::null());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let server = Launch::spawn("switchyard", cmd).wait().await.unwrap();
    let addr: SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let mut silent = Vec::new();
    for _ in 0..400 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }
    let reply = Reply::read(
        crate::support::client()
            .post(server.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&chat_body("smart", "anyone home?")).unwrap())
            .send()
            .await
            .expect("an answer, not a connection left in the backlog"),
    )
    .await;
    reply.expect_status(200);
    assert!(
        closed_by_server(silent.remove(0)).await,
        "the oldest made room"
    );
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_in_openai_json() {
    let server = Server::start(
        Scratch::new("e2e", "body-timeout"),
        &simulated("body_read_timeout = \"1s\""),
        &[],
    );
    let head = "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n";
    for request in [
        format!("{head}content-length: 1000\r\n\r\n{{\"model\": \"smart\""),
        format!("{head}transfer-encoding: chunked\r\n\r\n5\r\n{{\"mod\r\n"),
    ] {
        let (status, head, body) =
            parse_raw(&raw_exchange(addr(&server), request.as_bytes()).await);
        assert_eq!(status, 408, "{head}{body}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert_eq!(body["error"]["code"], "request_timeout", "{body}");
        assert_eq!(body["error"]["type"], "invalid_request_error");
    }
}

#[tokio::test]
async fn http_layer_errors_have_openai_error_bodies() {
    let server = Server::start(Scratch::new("e2e", "http-errors"), &simulated(""), &[]);
    // 405: a known path, another method
    let reply = server.get("/v1/chat/completions", &[]).await;
    reply.expect_status(405);
    assert_eq!(reply.error()["code"], "method_not_allowed");
    assert_eq!(reply.header("allow"), "POST");
    // 431: a head over the limit
    let big = "a".repeat(70 * 1024);
    let reply = server.get("/v1/models", &[("x-big", big.as_str())]).await;
    reply.expect_status(431);
    assert_eq!(reply.error()["code"], "request_header_fields_too_large");
    // 400: not HTTP at all
    let (status, head, body) =
        parse_raw(&raw_exchange(addr(&server), b"HELLO THERE\r\n\r\n").await);
    assert_eq!(status, 400, "{head}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert_eq!(body["error"]["code"], "malformed_request", "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn requests_beyond_the_in_flight_cap_get_503_with_retry_after_and_probes_still_answer() {
    let upstream = conf::upstream().await;
    upstream.script("primary", faultline::Fault::Hang);
    let toml = Conf::new(&upstream).server("max_in_flight = 2").toml();
    let server = Server::start(Scratch::new("e2e", "in-flight"), &toml, &[]);
    let base = server.base.clone();
    let body = serde_json::to_vec(&chat_body(conf::ROUTE, "hold on")).unwrap();
    let held: Vec<_> = (0..2)
        .map(|_| {
            let req = crate::support::client()
                .post(format!("{base}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(body.clone())
                .send();
            tokio::spawn(req)
        })
        .collect();
    eventually("both requests held upstream", || {
        upstream.attempts("primary").len() == 2
    })
    .await;
    let reply = server.chat(&chat_body(conf::ROUTE, "one more")).await;
    reply.expect_status(503);
    assert_eq!(reply.header("retry-after"), "1");
    assert_eq!(reply.error()["code"], "server_overloaded");
    assert_eq!(
        upstream.attempts("primary").len(),
        2,
        "the shed request never went upstream"
    );
    server.get("/healthz", &[]).await.expect_status(200);
    server.get("/readyz", &[]).await.expect_status(200);
    for h in held {
        h.abort();
    }
}
