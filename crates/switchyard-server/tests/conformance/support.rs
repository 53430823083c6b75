//! The harness: a faultline upstream in-process, `switchyard serve` as a child process
//! pointed at it, a config builder for the primary + fallback route, an HTTP client that
//! timestamps stream events, and bounded polling.
//!
//! Nothing here sleeps to let background work happen: waits poll a condition under
//! [`WAIT`]. (Scenario 15 paces its requests on a fixed schedule; that is traffic, not a
//! wait.)

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faultline::{Attempt, Handle};
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use tokio::time::Instant;

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(30);
/// The route every scenario uses.
pub const ROUTE: &str = "chat";

/// Environment a child must not inherit: ambient keys, proxies.
const SCRUBBED_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

// ---------------------------------------------------------------- config

/// `[[providers]] primary` and `fallback` (models `primary` and `fallback`, both on the
/// same faultline) and `[[routes]] chat = [primary, fallback]`, each with extra lines.
#[derive(Debug, Clone)]
pub struct Conf {
    base_url: String,
    primary: Vec<String>,
    fallback: Vec<String>,
    route: Vec<String>,
}

impl Conf {
    /// The two providers on `upstream`, a 20 s deadline, and fast retries.
    pub fn new(upstream: &Handle) -> Self {
        Self {
            base_url: upstream.base_url(),
            primary: Vec::new(),
            fallback: Vec::new(),
            route: vec!["deadline = \"20s\"".to_owned()],
        }
    }

    /// A line for the primary's `[[providers]]` entry.
    pub fn primary(mut self, line: &str) -> Self {
        self.primary.push(line.to_owned());
        self
    }

    /// A line for the fallback's `[[providers]]` entry.
    pub fn fallback(mut self, line: &str) -> Self {
        self.fallback.push(line.to_owned());
        self
    }

    /// A line for the route (a later `deadline` replaces the default).
    pub fn route(mut self, line: &str) -> Self {
        if line.starts_with("deadline") {
            self.route.retain(|l| !l.starts_with("deadline"));
        }
        self.route.push(line.to_owned());
        self
    }

    /// The TOML.
    pub fn toml(&self) -> String {
        let provider = |name: &str, lines: &[String]| {
            format!(
                "[[providers]]\nname = \"{name}\"\nkind = \"openai\"\nmodel = \"{name}\"\nbase_url = \"{}\"\n{}\n\n",
                self.base_url,
                lines.join("\n")
            )
        };
        format!(
            "[server]\nrequest_log = \"requests.jsonl\"\n\n{}{}[[routes]]\nname = \"{ROUTE}\"\nproviders = [\"primary\", \"fallback\"]\n{}\n",
            provider("primary", &self.primary),
            provider("fallback", &self.fallback),
            self.route.join("\n")
        )
    }
}

// ---------------------------------------------------------------- the gateway process

/// A running `switchyard serve`, killed on drop.
pub struct Gateway {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    dir: PathBuf,
    output: Arc<Mutex<String>>,
    http: reqwest::Client,
}

impl Gateway {
    /// Write the config to a fresh directory and start the server on a free port.
    pub async fn start(conf: &Conf) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("switchyard-conformance-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("switchyard.toml");
        std::fs::write(&config, conf.toml()).unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--config", config.to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in SCRUBBED_ENV {
            cmd.env_remove(var);
        }
        let mut child = cmd.spawn().expect("spawn switchyard serve");
        let output = Arc::new(Mutex::new(String::new()));
        let base = Arc::new(Mutex::new(None::<String>));
        let (out, out_base) = (Arc::clone(&output), Arc::clone(&base));
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("switchyard listening on ") {
                    let url = rest.split_whitespace().next().unwrap_or_default();
                    *out_base.lock().unwrap() = Some(url.to_owned());
                }
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
        let err = Arc::clone(&output);
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                err.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let deadline = Instant::now() + WAIT;
        let base = loop {
            if let Some(b) = base.lock().unwrap().clone() {
                break b;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "switchyard exited ({status}):\n{}\nconfig:\n{}",
                    output.lock().unwrap(),
                    conf.toml()
                );
            }
            assert!(Instant::now() < deadline, "switchyard did not start");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        Self {
            child,
            base,
            dir,
            output,
            http: client(),
        }
    }

    /// Everything the process printed so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A plain completion on the route, tagged with `id` (its `x-request-id`).
    pub async fn chat(&self, id: &str) -> Plain {
        self.chat_on(ROUTE, id).await
    }

    /// A plain completion on `route`.
    pub async fn chat_on(&self, route: &str, id: &str) -> Plain {
        let resp = self
            .http
            .post(self.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body(route, false).to_string())
            .send()
            .await
            .expect("POST to switchyard");
        Plain::read(resp).await
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
        std::fs::read_to_string(self.dir.join("requests.jsonl"))
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

impl Drop for Gateway {
    /// Stop the server; a failing test also shows what it printed.
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- switchyard output\n{}", self.output());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The suite's HTTP client: no proxy, bounded, no pooling surprises.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// A chat request body for `route`.
pub fn body(route: &str, stream: bool) -> Value {
    let mut b = json!({
        "model": route,
        "messages": [{"role": "user", "content": "Why put a gateway in front of a model?"}],
        "max_tokens": 64,
    });
    if stream {
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_usage": true});
    }
    b
}

// ---------------------------------------------------------------- replies

/// A whole non-streamed response.
#[derive(Debug)]
pub struct Plain {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: reqwest::header::HeaderMap,
    /// Body text.
    pub text: String,
}

impl Plain {
    async fn read(resp: reqwest::Response) -> Self {
        Self {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            text: resp.text().await.expect("read the body"),
        }
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// A header ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The answer's text.
    pub fn content(&self) -> String {
        self.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Assert a 200 whose answer is the whole canonical answer.
    #[track_caller]
    pub fn assert_canonical(&self) {
        assert_eq!(self.status, 200, "body: {}", self.text);
        assert_eq!(
            self.content(),
            faultline::CANONICAL_ANSWER,
            "body: {}",
            self.text
        );
    }
}

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

/// The outcomes in a `switchyard` trail, as labels (`failed`, `success`, `rescue:restart`,
/// `skipped:circuit_open`) with the provider: `primary:failed`.
pub fn trail_labels(trail: &Value) -> Vec<String> {
    trail["attempts"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|a| {
            let detail = a
                .get("method")
                .or_else(|| a.get("reason"))
                .and_then(Value::as_str)
                .map(|d| format!(":{d}"))
                .unwrap_or_default();
            format!(
                "{}:{}{detail}",
                a["provider"].as_str().unwrap_or("?"),
                a["outcome"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

// ---------------------------------------------------------------- waiting

/// Poll `cond` until it holds, bounded by [`WAIT`].
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

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

/// A fresh faultline on a free port.
pub async fn upstream() -> Handle {
    faultline::Server::new().start().await.unwrap()
}
