//! A raw HTTP/1.1 client over a TCP socket (no HTTP library that could retry, buffer or
//! hide a reset), shared by the test files.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods
)]

use std::time::Duration;

use faultline::{Attempt, Handle, Server};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// How long silence must last before a test calls the server silent.
pub const QUIET: Duration = Duration::from_millis(300);
/// The longest any wait here may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// How a raw exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The response was complete (content-length reached, or the last chunk arrived).
    Complete,
    /// The server closed the connection first (FIN).
    Closed,
    /// The server reset the connection (RST).
    Reset,
    /// Nothing arrived for [`QUIET`]; the connection is still open.
    Silent,
}

/// What a raw client saw.
#[derive(Debug)]
pub struct Raw {
    pub status: Option<u16>,
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    pub end: End,
    /// When the headers arrived, since the request was sent.
    pub headers_at: Option<Duration>,
    /// When the exchange ended.
    pub ended_at: Duration,
    /// Kept open (for [`End::Silent`]) so the test decides when the client leaves.
    pub socket: Option<TcpStream>,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.text()))
    }

    /// The SSE `data:` payloads.
    pub fn events(&self) -> Vec<String> {
        self.text()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").unwrap_or(e).to_owned())
            .collect()
    }

    /// Each SSE frame as (its `event:` name, or "" without one; its `data:`).
    pub fn frames(&self) -> Vec<(String, String)> {
        self.text()
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| {
                let mut event = String::new();
                let mut data = String::new();
                for line in f.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        event = v.to_owned();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = v.to_owned();
                    }
                }
                (event, data)
            })
            .collect()
    }

    /// The streamed text, from the chunks that parse.
    pub fn streamed_text(&self) -> String {
        self.events()
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }
}

/// POST `body` to `path` and read until the response is complete, the connection ends,
/// or the server goes quiet.
pub async fn post(server: &Handle, path: &str, body: &Value) -> Raw {
    post_quiet(server, path, body, QUIET).await
}

/// [`post`], calling the server silent after `quiet`.
pub async fn post_quiet(server: &Handle, path: &str, body: &Value, quiet: Duration) -> Raw {
    let body = serde_json::to_vec(body).unwrap();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nhost: faultline\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    exchange(server, &req, quiet).await
}

pub async fn get(server: &Handle, path: &str) -> Raw {
    let req = format!("GET {path} HTTP/1.1\r\nhost: faultline\r\n\r\n");
    exchange(server, req.as_bytes(), QUIET).await
}

pub async fn exchange(server: &Handle, request: &[u8], quiet: Duration) -> Raw {
    let mut socket = TcpStream::connect(server.addr()).await.unwrap();
    let started = Instant::now();
    socket.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut headers_at = None;
    let end = loop {
        if let Some(parsed) = parse(&buf) {
            headers_at.get_or_insert(started.elapsed());
            if parsed.complete {
                break End::Complete;
            }
        }
        match tokio::time::timeout(quiet, socket.read(&mut chunk)).await {
            Err(_) => break End::Silent,
            Ok(Ok(0)) => break End::Closed,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break End::Reset,
            Ok(Err(e)) => panic!("read: {e}"),
        }
    };
    let ended_at = started.elapsed();
    let parsed = parse(&buf);
    Raw {
        status: parsed.as_ref().map(|p| p.status),
        headers: parsed
            .as_ref()
            .map(|p| p.headers.clone())
            .unwrap_or_default(),
        body: parsed.map(|p| p.body).unwrap_or_default(),
        end,
        headers_at,
        ended_at,
        socket: (end == End::Silent).then_some(socket),
    }
}

pub struct Parsed {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub complete: bool,
}

/// Parse what has arrived: `None` until the head is complete.
pub fn parse(buf: &[u8]) -> Option<Parsed> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..head_end]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buf[head_end + 4..];
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let (body, complete) = if let Some(len) = get("content-length") {
        let len: usize = len.parse().unwrap();
        (rest[..rest.len().min(len)].to_vec(), rest.len() >= len)
    } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        dechunk(rest)
    } else {
        (rest.to_vec(), false)
    };
    Some(Parsed {
        status,
        headers,
        body,
        complete,
    })
}

/// Decode the complete chunks of a chunked body; true once the last chunk arrived.
pub fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = std::str::from_utf8(&rest[..line_end]).unwrap();
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).unwrap();
        let data = &rest[line_end + 2..];
        if size == 0 {
            return (body, data.starts_with(b"\r\n"));
        }
        if data.len() < size + 2 {
            return (body, false);
        }
        body.extend_from_slice(&data[..size]);
        rest = &data[size + 2..];
    }
}

/// `model`'s attempts once `cond` holds for them, bounded by [`WAIT`].
pub async fn attempts_when(
    server: &Handle,
    model: &str,
    cond: impl Fn(&[Attempt]) -> bool,
) -> Vec<Attempt> {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = server.attempts(model);
        if cond(&got) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "attempts of {model} never matched: {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub async fn start() -> Handle {
    Server::new().start().await.unwrap()
}
