//! The harness, on `tests/common`: `switchyard serve` as a child process pointed at an
//! in-process faultline (the shared primary + fallback config, with a request log), its
//! HTTP surface, a stream reader that timestamps events, and bounded polling of
//! faultline's records.
//!
//! Nothing here sleeps to let background work happen: waits poll a condition under
//! [`WAIT`]. (Scenario 15 paces its requests on a fixed schedule; that is traffic, not a
//! wait.)

use std::time::Duration;

use faultline::{Attempt, Handle};
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::time::Instant;

pub use crate::common::conf::{upstream, Conf, ROUTE};
use crate::common::http::{chat_request, client};
pub use crate::common::http::{eventually, trail_labels, Reply, PROMPT};
pub use crate::common::serve::WAIT;
use crate::common::serve::{command, Launch, Process, Scratch};

// ---------------------------------------------------------------- the gateway process

/// A running `switchyard serve` in its own directory; killed on drop, showing its output
/// when the test failed.
pub struct Gateway {
    process: Process,
    http: reqwest::Client,
    /// Config and request log; removed after the process is gone (fields drop in order).
    dir: Scratch,
}

impl std::ops::Deref for Gateway {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.process
    }
}

impl Gateway {
    /// Write the config to a fresh directory and start the server on a free port.
    pub async fn start(conf: &Conf) -> Self {
        let dir = Scratch::new("conformance", "gateway");
        let toml = conf.clone().request_log().toml();
        let config = dir.write("switchyard.toml", &toml);
        let mut cmd = command(
            &["serve", "--config", config.to_str().unwrap()],
            &[],
            &dir.path,
        );
        cmd.args(["--listen", "127.0.0.1:0"]);
        let process = Launch::spawn("switchyard", cmd)
            .wait()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "switchyard exited ({}):\n{}{}\nconfig:\n{}",
                    e.status, e.stdout, e.stderr, toml
                )
            });
        Self {
            process,
            http: client(),
            dir,
        }
    }

    /// A plain completion on the route, tagged with `id` (its `x-request-id`).
    pub async fn chat(&self, id: &str) -> Reply {
        self.chat_on(ROUTE, id).await
    }

    /// A plain completion on `route`.
    pub async fn chat_on(&self, route: &str, id: &str) -> Reply {
        let resp = self
            .http
            .post(self.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body(route, false).to_string())
            .send()
            .await
            .expect("POST to switchyard");
        Reply::read(resp).await
    }

    /// A streamed completion on the route, read to its end.
    pub async fn stream(&self, id: &str) -> Streamed {
        Streamed::read(self.open_stream(id).await).await
    }

    /// Start a streamed completion; the caller reads (or drops) it.
    pub async fn open_stream(&self, id: &str) -> reqwest::Response {
        self.http
            .post(self.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body(ROUTE, true).to_string())
            .send()
            .await
            .expect("POST to switchyard")
    }

    /// `GET /admin/health`.
    pub async fn health(&self) -> Value {
        let resp = self
            .http
            .get(self.url("/admin/health"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
    }

    /// A provider's entry in `/admin/health`.
    pub async fn provider_health(&self, name: &str) -> Value {
        let h = self.health().await;
        h["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no provider {name} in {h}"))
    }

    /// The request log's lines so far.
    pub fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.file("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The request log's line for request `id`, once written.
    pub async fn log_line(&self, id: &str) -> Value {
        let mut found = None;
        eventually(&format!("the request log line of {id}"), || {
            found = self.log_lines().into_iter().find(|l| l["id"] == id);
            found.is_some()
        })
        .await;
        found.unwrap()
    }
}

/// A chat request body for `route`.
pub fn body(route: &str, stream: bool) -> Value {
    chat_request(route, PROMPT, stream)
}

// ---------------------------------------------------------------- replies

/// One SSE event and when it arrived.
#[derive(Debug, Clone)]
pub struct Event {
    /// Since the request was sent.
    pub at: Duration,
    /// The `data:` payload.
    pub data: String,
}

/// A whole streamed response (or the error a stream got before it committed).
#[derive(Debug)]
pub struct Streamed {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: reqwest::header::HeaderMap,
    /// The raw body.
    pub raw: String,
    /// The events, in order, with arrival times.
    pub events: Vec<Event>,
    /// When the body ended, since the request was sent.
    pub ended: Duration,
}

impl Streamed {
    async fn read(resp: reqwest::Response) -> Self {
        let started = Instant::now();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let mut bytes = resp.bytes_stream();
        let mut raw = Vec::new();
        let mut events = Vec::new();
        let mut consumed = 0;
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk.expect("read the stream");
            raw.extend_from_slice(&chunk);
            while let Some(end) = find(&raw[consumed..], b"\n\n") {
                let block = String::from_utf8_lossy(&raw[consumed..consumed + end]).into_owned();
                consumed += end + 2;
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if !data.is_empty() {
                    events.push(Event {
                        at: started.elapsed(),
                        data: data.join("\n"),
                    });
                }
            }
        }
        Self {
            status,
            headers,
            raw: String::from_utf8_lossy(&raw).into_owned(),
            events,
            ended: started.elapsed(),
        }
    }

    /// A header ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The events that parse as JSON.
    pub fn json_events(&self) -> Vec<Value> {
        self.events
            .iter()
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect()
    }

    /// The streamed text (choice 0's `delta.content`).
    pub fn text(&self) -> String {
        self.json_events()
            .iter()
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }

    /// `data: [DONE]` arrived.
    pub fn done(&self) -> bool {
        self.events.iter().any(|e| e.data == "[DONE]")
    }

    /// The in-band error event, if any.
    pub fn error(&self) -> Option<Value> {
        self.json_events()
            .into_iter()
            .find(|v| v.get("error").is_some())
    }

    /// The last event carrying `usage`.
    pub fn usage_event(&self) -> Option<Value> {
        self.json_events()
            .into_iter()
            .rev()
            .find(|v| v["usage"].is_object())
    }

    /// The `switchyard` trail of the last event carrying one.
    pub fn trail(&self) -> Option<Value> {
        self.json_events()
            .into_iter()
            .rev()
            .find_map(|v| v.get("switchyard").cloned())
    }

    /// When the last content chunk arrived.
    pub fn last_content_at(&self) -> Option<Duration> {
        self.events
            .iter()
            .rev()
            .find(|e| {
                serde_json::from_str::<Value>(&e.data)
                    .ok()
                    .and_then(|v| {
                        v["choices"][0]["delta"]["content"]
                            .as_str()
                            .map(|s| !s.is_empty())
                    })
                    .unwrap_or(false)
            })
            .map(|e| e.at)
    }

    /// Assert a committed stream that delivered exactly the canonical answer and `[DONE]`,
    /// with no error event.
    #[track_caller]
    pub fn assert_canonical(&self) {
        assert_eq!(self.status, 200, "body: {}", self.raw);
        assert_eq!(self.error(), None, "body: {}", self.raw);
        assert_eq!(
            self.text(),
            faultline::CANONICAL_ANSWER,
            "body: {}",
            self.raw
        );
        assert!(self.done(), "no [DONE]: {}", self.raw);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------- waiting

/// `model`'s attempts once `cond` holds for them, bounded by [`WAIT`].
pub async fn attempts_when(
    upstream: &Handle,
    model: &str,
    cond: impl Fn(&[Attempt]) -> bool,
) -> Vec<Attempt> {
    let deadline = Instant::now() + WAIT;
    loop {
        let got = upstream.attempts(model);
        if cond(&got) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting on {model}'s attempts: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
