//! One keep-alive HTTP/1 connection and the exchanges on it.
//!
//! Owns [`Target`] (where requests go) and [`Exchange`] (a connection that reconnects after
//! an error, and one POST's response read to the end). Does not time anything but the
//! first token: the worker times the exchange.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Where requests go: `http://HOST:PORT/PATH` (no TLS, no redirects).
#[derive(Debug, Clone)]
pub struct Target {
    /// As given.
    pub url: String,
    /// `HOST:PORT`, also the `Host` header.
    authority: String,
    /// The request target, `/` at least.
    path: String,
}

impl Target {
    /// Parse an `http://` URL.
    pub fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url:?}: only http:// URLs"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !authority.contains(':') {
            return Err(format!("{url:?}: give the port"));
        }
        Ok(Self {
            url: url.to_owned(),
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// How one exchange ended (transport errors are the `Err` of [`Exchange::send`]).
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The HTTP status.
    pub status: u16,
    /// Streams: when the first token arrived.
    pub first_token: Option<Instant>,
    /// Streams: `data: [DONE]` was seen; plain responses: always.
    pub complete: bool,
}

/// A connection to the target that reconnects after an error.
pub struct Exchange {
    target: Target,
    body: Bytes,
    stream: bool,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Drives the connection; replaced on reconnect, dropped with the exchange.
    driver: JoinSet<()>,
}

impl Exchange {
    /// Not connected yet: the first [`send`](Self::send) connects.
    pub fn new(target: Target, body: Bytes, stream: bool) -> Self {
        Self {
            target,
            body,
            stream,
            sender: None,
            driver: JoinSet::new(),
        }
    }

    /// POST the body and read the whole response.
    pub async fn send(&mut self) -> Result<Outcome, String> {
        let result = self.try_send().await;
        if result.is_err() {
            self.sender = None;
        }
        result
    }

    async fn try_send(&mut self) -> Result<Outcome, String> {
        if self.sender.is_none() {
            self.sender = Some(self.connect().await?);
        }
        let Some(sender) = &mut self.sender else {
            return Err("not connected".to_owned());
        };
        sender.ready().await.map_err(|e| e.to_string())?;
        let request = Request::post(self.target.path.as_str())
            .header(HOST, self.target.authority.as_str())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(self.body.clone()))
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut events = Events::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let (true, Some(data)) = (self.stream, frame.data_ref()) {
                events.push(data);
            }
        }
        Ok(Outcome {
            status,
            first_token: events.first_token,
            complete: !self.stream || events.done,
        })
    }

    async fn connect(&mut self) -> Result<SendRequest<Full<Bytes>>, String> {
        let tcp = TcpStream::connect(self.target.authority.as_str())
            .await
            .map_err(|e| format!("connect {}: {e}", self.target.authority))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) = http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
        self.driver.abort_all();
        self.driver.spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// What a streamed body has shown so far.
#[derive(Default)]
struct Events {
    /// The body so far (a stream of the canonical answer is about 15 KB).
    seen: Vec<u8>,
    /// Where the search for the first token resumes.
    scanned: usize,
    first_token: Option<Instant>,
    done: bool,
}

impl Events {
    const CONTENT: &'static [u8] = b"\"content\":\"";
    const DONE: &'static [u8] = b"data: [DONE]";

    fn push(&mut self, data: &[u8]) {
        self.seen.extend_from_slice(data);
        if self.first_token.is_none() {
            while let Some(at) = find(&self.seen[self.scanned..], Self::CONTENT) {
                let value = self.scanned + at + Self::CONTENT.len();
                match self.seen.get(value) {
                    None => break,
                    Some(b'"') => self.scanned = value,
                    Some(_) => {
                        self.first_token = Some(Instant::now());
                        break;
                    }
                }
            }
            // Keep a partial marker at the end for the next frame.
            let keep = Self::CONTENT.len();
            self.scanned = self.scanned.max(self.seen.len().saturating_sub(keep));
        }
        let tail = self
            .seen
            .len()
            .saturating_sub(data.len() + Self::DONE.len());
        self.done = self.done || find(&self.seen[tail..], Self::DONE).is_some();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_token_skips_empty_content_and_survives_splits() {
        let mut e = Events::default();
        e.push(b"data: {\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}\n\n");
        assert!(e.first_token.is_none());
        e.push(b"data: {\"delta\":{\"conte");
        assert!(e.first_token.is_none());
        e.push(b"nt\":\"A\"}}\n\ndata: [DO");
        assert!(e.first_token.is_some());
        assert!(!e.done);
        e.push(b"NE]\n\n");
        assert!(e.done);
    }

    #[test]
    fn targets_need_http_and_a_port() {
        let t = Target::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
        assert_eq!(t.authority, "127.0.0.1:9");
        assert_eq!(t.path, "/v1/chat/completions");
        assert!(Target::parse("https://x:1/").is_err());
        assert!(Target::parse("http://x/").is_err());
    }
}
