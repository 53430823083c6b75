//! The harness: a config for a fleet (primary + fallback on one faultline, a route, the
//! state backend), `switchyard serve` replicas as child processes (restartable in the
//! same directory), their HTTP surface, the money arithmetic of a budget, and bounded
//! polling.
//!
//! Nothing here sleeps to let background work happen: waits poll a condition under
//! [`WAIT`].

use std::future::Future;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use faultline::Handle;
use serde_json::{json, Value};
use switchyard::cost::ESTIMATE_TOKENS_PER_MESSAGE;
use switchyard::Money;
use tokio::time::Instant;

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(20);
/// The route every test uses.
pub const ROUTE: &str = "chat";
/// The one prompt every request sends.
pub const PROMPT: &str = "Why put a gateway in front of a model?";
/// `max_tokens` of every request.
pub const MAX_TOKENS: u64 = 64;

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

// ---------------------------------------------------------------- money

/// The price line given to both providers: $1 per million input tokens, $10 per million
/// output tokens.
pub const PRICE: &str = "price = { input_per_mtok = 1.0, output_per_mtok = 10.0 }";
/// [`PRICE`] per token, in pico-dollars.
const INPUT_PICOS_PER_TOKEN: i64 = 1_000_000;
const OUTPUT_PICOS_PER_TOKEN: i64 = 10_000_000;

/// What the gateway reserves for one request at [`PRICE`]: the input bound (one token per
/// byte of text, plus a per-message overhead) at the input price, plus `max_tokens` at
/// the output price. For [`PROMPT`]: (38 + 8) × $1/M + 64 × $10/M = $0.000686.
pub fn estimate() -> Money {
    let input = PROMPT.len() as i64 + ESTIMATE_TOKENS_PER_MESSAGE as i64;
    Money::from_picos(input * INPUT_PICOS_PER_TOKEN + MAX_TOKENS as i64 * OUTPUT_PICOS_PER_TOKEN)
}

/// What one canonical answer costs at [`PRICE`]: faultline reports 24 prompt tokens and
/// 60 completion tokens, so 24 × $1/M + 60 × $10/M = $0.000624.
pub fn answer_cost() -> Money {
    let output = faultline::token_count() as i64;
    Money::from_picos(
        faultline::PROMPT_TOKENS as i64 * INPUT_PICOS_PER_TOKEN + output * OUTPUT_PICOS_PER_TOKEN,
    )
}

/// `n` times `m`.
pub fn times(m: Money, n: usize) -> Money {
    Money::from_picos(m.picos() * n as i64)
}

/// A dollar amount from JSON as exact money (the server converts from exact amounts, so
/// this round-trips).
pub fn usd(v: &Value) -> Money {
    Money::from_usd(
        v.as_f64()
            .unwrap_or_else(|| panic!("not a dollar amount: {v}")),
    )
}

// ---------------------------------------------------------------- config

/// Where the replicas keep breakers, budgets and rate limits.
#[derive(Debug, Clone)]
pub enum Backend {
    /// One process's memory.
    Memory,
    /// Redis at `url` under `prefix`, waiting at most `timeout` per call.
    Redis {
        /// `redis://127.0.0.1:PORT`.
        url: String,
        /// The key prefix (unique per test).
        prefix: String,
        /// `[state] timeout`.
        timeout: &'static str,
    },
}

/// `[[providers]] primary` and `fallback` (models `primary` and `fallback` on one
/// faultline), `[[routes]] chat = [primary, fallback]`, optional `[[keys]]`, and `[state]`.
#[derive(Debug, Clone)]
pub struct Conf {
    base_url: String,
    primary: Vec<String>,
    fallback: Vec<String>,
    route: Vec<String>,
    extra: Vec<String>,
    request_log: bool,
    backend: Backend,
}

impl Conf {
    /// The two providers on `upstream`, a 20 s deadline, one attempt per provider (so
    /// faultline's counts are requests), on `backend`.
    pub fn new(upstream: &Handle, backend: Backend) -> Self {
        Self {
            base_url: upstream.base_url(),
            primary: Vec::new(),
            fallback: Vec::new(),
            route: vec![
                "deadline = \"20s\"".to_owned(),
                "retry = { max_attempts = 1, base_delay = \"5ms\", max_delay = \"20ms\", max_retry_after = \"1s\" }".to_owned(),
            ],
            extra: Vec::new(),
            request_log: false,
            backend,
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

    /// The same line for both providers.
    pub fn both(self, line: &str) -> Self {
        self.primary(line).fallback(line)
    }

    /// A line for the route.
    pub fn route(mut self, line: &str) -> Self {
        self.route.push(line.to_owned());
        self
    }

    /// A top-level section (e.g. a `[[keys]]` entry), verbatim.
    pub fn section(mut self, text: &str) -> Self {
        self.extra.push(text.to_owned());
        self
    }

    /// `[server] request_log = "requests.jsonl"` (relative to the replica's directory).
    pub fn request_log(mut self) -> Self {
        self.request_log = true;
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
        let server = if self.request_log {
            "[server]\nrequest_log = \"requests.jsonl\"\n\n"
        } else {
            ""
        };
        let state = match &self.backend {
            Backend::Memory => "[state]\nbackend = \"memory\"\n".to_owned(),
            Backend::Redis {
                url,
                prefix,
                timeout,
            } => format!(
                "[state]\nbackend = \"redis\"\nurl = \"{url}\"\nprefix = \"{prefix}\"\ntimeout = \"{timeout}\"\n"
            ),
        };
        format!(
            "{server}{}{}[[routes]]\nname = \"{ROUTE}\"\nproviders = [\"primary\", \"fallback\"]\n{}\n\n{}\n{state}",
            provider("primary", &self.primary),
            provider("fallback", &self.fallback),
            self.route.join("\n"),
            self.extra.join("\n"),
        )
    }
}

// ---------------------------------------------------------------- directories

/// A fresh directory (config, request log) that outlives a replica's restarts; removed
/// on drop.
#[derive(Debug)]
pub struct Dir {
    /// Its path.
    pub path: PathBuf,
}

impl Dir {
    /// A new directory holding `conf` as `switchyard.toml`.
    pub fn new(tag: &str, conf: &Conf) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("switchyard-fleet-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("switchyard.toml"), conf.toml()).unwrap();
        Self { path }
    }

    /// The config's path.
    pub fn config(&self) -> PathBuf {
        self.path.join("switchyard.toml")
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------- replicas

/// A running `switchyard serve`, killed on drop (its output shown if the test failed).
pub struct Replica {
    /// `A`, `B`: for messages.
    pub name: &'static str,
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    output: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    http: reqwest::Client,
}

impl Replica {
    /// `switchyard serve --config DIR/switchyard.toml --listen 127.0.0.1:0` in `dir`;
    /// returns once it prints its listening line.
    pub async fn start(name: &'static str, dir: &Dir) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--config", dir.config().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(&dir.path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for var in SCRUBBED_ENV {
            cmd.env_remove(var);
        }
        let mut child = cmd.spawn().expect("spawn switchyard serve");
        let output = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let out = Arc::clone(&output);
        let stdout = child.stdout.take().unwrap();
        let out_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("switchyard listening on ") {
                    let url = rest.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(url.to_owned());
                }
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
        let err = Arc::clone(&output);
        let mut stderr = child.stderr.take().unwrap();
        let err_reader = std::thread::spawn(move || {
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
            if let Ok(url) = rx.try_recv() {
                break url;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "replica {name} exited ({status}):\n{}\nconfig:\n{}",
                    output.lock().unwrap(),
                    std::fs::read_to_string(dir.config()).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "replica {name} did not start within {WAIT:?}:\n{}",
                output.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(
            base.starts_with("http://127.0.0.1:"),
            "replica {name} listens on {base}"
        );
        Self {
            name,
            child,
            base,
            output,
            readers: vec![out_reader, err_reader],
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

    /// SIGTERM, then wait (bounded) for the process to exit.
    pub async fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {} failed", self.name);
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "replica {} did not exit within {WAIT:?} of SIGTERM:\n{}",
                self.name,
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        status
    }

    /// A plain completion on the route, tagged `id`, with extra headers.
    pub async fn chat_with(&self, id: &str, headers: &[(&str, &str)]) -> Reply {
        self.post(id, body(false), headers).await
    }

    /// A plain completion on the route, tagged `id`.
    pub async fn chat(&self, id: &str) -> Reply {
        self.chat_with(id, &[]).await
    }

    /// A streamed completion on the route, read to its end.
    pub async fn stream(&self, id: &str) -> Reply {
        self.post(id, body(true), &[]).await
    }

    async fn post(&self, id: &str, body: Value, headers: &[(&str, &str)]) -> Reply {
        let mut req = self
            .http
            .post(self.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {id} to replica {}: {e}", self.name));
        Reply::read(resp).await
    }

    /// `GET /admin/health`.
    pub async fn health(&self) -> Value {
        let resp = self
            .http
            .get(self.url("/admin/health"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET /admin/health from replica {}: {e}", self.name));
        assert_eq!(resp.status(), 200, "/admin/health of replica {}", self.name);
        serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
    }

    /// A provider's entry in `/admin/health`.
    pub async fn provider(&self, name: &str) -> Value {
        let h = self.health().await;
        h["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no provider {name} in replica {}'s {h}", self.name))
    }

    /// What this replica's ledger says it spent (its own calls only).
    pub async fn ledger(&self) -> Money {
        let h = self.health().await;
        h["ledger"]
            .as_object()
            .unwrap()
            .values()
            .map(|row| usd(&row["cost"]))
            .fold(Money::ZERO, |a, b| a + b)
    }

    /// `GET /metrics`.
    pub async fn metrics(&self) -> String {
        let resp = self.http.get(self.url("/metrics")).send().await.unwrap();
        assert_eq!(resp.status(), 200, "/metrics of replica {}", self.name);
        resp.text().await.unwrap()
    }

    /// `switchyard_state_connected` from `/metrics`.
    pub async fn state_connected_metric(&self) -> Option<f64> {
        let text = self.metrics().await;
        text.lines().find_map(|l| {
            l.strip_prefix("switchyard_state_connected ")
                .and_then(|v| v.trim().parse().ok())
        })
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- replica {} output\n{}", self.name, self.output());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Replicas A and B on the same config (each in its own directory).
pub async fn pair(tag: &str, conf: &Conf) -> (Replica, Replica, [Dir; 2]) {
    let dirs = [
        Dir::new(&format!("{tag}-a"), conf),
        Dir::new(&format!("{tag}-b"), conf),
    ];
    let a = Replica::start("A", &dirs[0]).await;
    let b = Replica::start("B", &dirs[1]).await;
    (a, b, dirs)
}

/// The tests' HTTP client: no proxy, bounded.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// A chat request body for the route.
pub fn body(stream: bool) -> Value {
    let mut b = json!({
        "model": ROUTE,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": MAX_TOKENS,
    });
    if stream {
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_usage": true});
    }
    b
}

// ---------------------------------------------------------------- replies

/// A whole response (a stream read to its end).
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: reqwest::header::HeaderMap,
    /// Body text.
    pub text: String,
}

impl Reply {
    async fn read(resp: reqwest::Response) -> Self {
        Self {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            text: resp.text().await.expect("read the body"),
        }
    }

    /// A header ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as JSON (a plain response or an error).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// An SSE body's JSON events.
    fn events(&self) -> Vec<Value> {
        self.text
            .split("\n\n")
            .filter_map(|e| {
                let data: String = e
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                serde_json::from_str(&data).ok()
            })
            .collect()
    }

    /// Is this a stream (`text/event-stream`)?
    pub fn is_stream(&self) -> bool {
        self.header("content-type").starts_with("text/event-stream")
    }

    /// The answer's text (a plain body's message, or a stream's deltas).
    pub fn content(&self) -> String {
        if self.is_stream() {
            return self
                .events()
                .iter()
                .filter_map(|v| {
                    v["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned)
                })
                .collect();
        }
        self.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The `switchyard` trail (a plain body's, or a stream's last).
    pub fn trail(&self) -> Value {
        if self.is_stream() {
            return self
                .events()
                .into_iter()
                .rev()
                .find_map(|v| v.get("switchyard").cloned())
                .unwrap_or(Value::Null);
        }
        self.json()["switchyard"].clone()
    }

    /// The trail's attempts as labels: `primary:failed`, `primary:skipped:circuit_open`.
    pub fn labels(&self) -> Vec<String> {
        trail_labels(&self.trail())
    }

    /// Assert a 200 carrying the whole canonical answer.
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

    /// Assert a refusal for the budget: 402 `budget_exceeded`.
    #[track_caller]
    pub fn assert_budget_exceeded(&self) {
        assert_eq!(self.status, 402, "body: {}", self.text);
        assert!(self.text.contains("budget_exceeded"), "body: {}", self.text);
    }
}

/// The outcomes in a `switchyard` trail, as labels (`failed`, `success`,
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

/// Poll `check` until it gives `Ok`, bounded by [`WAIT`]; on timeout the panic shows the
/// last `Err` (what was observed instead).
pub async fn poll<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        match check().await {
            Ok(v) => return v,
            Err(seen) => assert!(
                Instant::now() < deadline,
                "timed out after {WAIT:?} waiting for {what}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait until `replica` reports `provider` in breaker `state`.
pub async fn breaker_state(replica: &Replica, provider: &str, state: &str) -> Value {
    poll(
        &format!("replica {} to show {provider} {state}", replica.name),
        || async {
            let p = replica.provider(provider).await;
            if p["state"] == state {
                Ok(p)
            } else {
                Err(p.to_string())
            }
        },
    )
    .await
}

/// Wait until `replica`'s `/admin/health` says `state.connected == connected`.
pub async fn state_connected(replica: &Replica, connected: bool) -> Value {
    poll(
        &format!(
            "replica {} to report state.connected == {connected}",
            replica.name
        ),
        || async {
            let s = replica.health().await["state"].clone();
            if s["connected"] == connected {
                Ok(s)
            } else {
                Err(s.to_string())
            }
        },
    )
    .await
}

/// A fresh faultline on a free port.
pub async fn upstream() -> Handle {
    faultline::Server::new().start().await.unwrap()
}
