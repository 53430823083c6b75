//! The harness: scratch directories, the `switchyard` binary as a child process, an HTTP
//! client for it, SSE and Prometheus parsing, and config snippets. The upstreams the proxy
//! calls are in `upstream.rs`.
//!
//! Every wait is bounded by [`WAIT`]; nothing sleeps to let background work happen — the
//! loops poll for a condition (the child exited, a log line appeared, the mock saw a call).

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_switchyard");
/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(20);
/// The env var holding the upstream key (set on the child process only).
pub const KEY_ENV: &str = "SWITCHYARD_E2E_UPSTREAM_KEY";
/// A distinctive upstream key: it must never show up in a response, log or error.
pub const UPSTREAM_KEY: &str = "sk-e2e-upstream-9f2c71d04be3a5";
/// The upstream's answer (the adapter fixtures' canonical conversation).
pub const ANSWER: &str = "The capital of France is Paris (Île-de-France).";
/// The model the upstream reports (a dated snapshot, unlike the configured alias).
pub const UPSTREAM_MODEL: &str = "gpt-4o-mini-2024-07-18";
/// The upstream path the OpenAI adapter posts to under `base_url = <uri>/v1`.
pub const CHAT_PATH: &str = "/v1/chat/completions";

/// Environment variables a child must not inherit: ambient vendor keys, and proxies that
/// would send 127.0.0.1 traffic elsewhere.
const SCRUBBED_ENV: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    KEY_ENV,
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

// ---------------------------------------------------------------- scratch directories

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    /// Its path.
    pub path: PathBuf,
}

impl Scratch {
    /// A new, empty directory whose name says which test made it.
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("switchyard-e2e-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self { path }
    }

    /// The path of `name` inside it.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write `text` to `name` inside it.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.file(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------- child processes

/// A `switchyard` command with a scrubbed environment plus `envs`, run in `dir`.
pub fn command(args: &[&str], envs: &[(&str, &str)], dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// Run a command to completion, killing it if it takes longer than `limit`.
pub fn run_bounded(cmd: Command, limit: Duration) -> Output {
    let program = format!("{cmd:?}");
    try_run_bounded(cmd, limit).unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// [`run_bounded`], with a program that cannot be started as an `Err`.
pub fn try_run_bounded(mut cmd: Command, limit: Duration) -> std::io::Result<Output> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = cmd.spawn()?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(limit) {
        waiter.join().unwrap();
        return out;
    }
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status();
    panic!("{cmd:?} did not finish within {limit:?}");
}

/// `switchyard ARGS` in `dir` with the scrubbed environment, bounded by [`WAIT`].
pub fn switchyard(args: &[&str], envs: &[(&str, &str)], dir: &Path) -> Output {
    run_bounded(command(args, envs, dir), WAIT)
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A running `switchyard serve`. Killed on drop (SIGTERM first via [`Server::terminate`]
/// when a test wants the graceful path).
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    http: reqwest::Client,
    /// Where the config (and anything relative) lives; removed after the child is gone.
    _scratch: Scratch,
}

/// A server that exited instead of listening.
#[derive(Debug)]
pub struct Refused {
    /// Its exit status.
    pub status: ExitStatus,
    /// What it printed to stderr.
    pub stderr: String,
}

impl Server {
    /// `switchyard serve --config <config> --listen 127.0.0.1:0` with `envs` set on the
    /// child only. Panics if it does not start listening.
    pub fn start(scratch: Scratch, config: &str, envs: &[(&str, &str)]) -> Self {
        let path = scratch.write("switchyard.toml", config);
        let args = ["serve", "--config", path.to_str().unwrap()];
        Self::try_start(scratch, &args, "127.0.0.1:0", envs)
            .unwrap_or_else(|r| panic!("server refused to start: {}\n{}", r.status, r.stderr))
    }

    /// Spawn `switchyard ARGS --listen LISTEN` and wait for its "listening" line; `Err` if
    /// it exits first.
    pub fn try_start(
        scratch: Scratch,
        args: &[&str],
        listen: &str,
        envs: &[(&str, &str)],
    ) -> Result<Self, Refused> {
        let mut cmd = command(args, envs, &scratch.path);
        cmd.args(["--listen", listen])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn switchyard serve");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let out_pipe = child.stdout.take().unwrap();
        let out_buf = Arc::clone(&stdout);
        let out_reader = std::thread::spawn(move || {
            for line in BufReader::new(out_pipe).lines() {
                let Ok(line) = line else { break };
                // Record the line before announcing it: a test that reads `output()` as
                // soon as the server is up must see its listening line.
                {
                    let mut b = out_buf.lock().unwrap();
                    b.push_str(&line);
                    b.push('\n');
                }
                if let Some(url) = listening_url(&line) {
                    let _ = tx.send(url);
                }
            }
        });
        let mut err_pipe = child.stderr.take().unwrap();
        let err_buf = Arc::clone(&stderr);
        let err_reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                err_buf
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let readers = vec![out_reader, err_reader];
        match rx.recv_timeout(WAIT) {
            Ok(base) => Ok(Self {
                child,
                base,
                stdout,
                stderr,
                readers,
                http: client(),
                _scratch: scratch,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // stdout closed without a listening line: the process is exiting.
                let status = wait_blocking(&mut child);
                for r in readers {
                    let _ = r.join();
                }
                let stderr = stderr.lock().unwrap().clone();
                Err(Refused { status, stderr })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "switchyard did not print its listening line within {WAIT:?}; stderr:\n{}",
                    stderr.lock().unwrap()
                );
            }
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Everything the process wrote to stdout and stderr so far.
    pub fn output(&self) -> String {
        format!(
            "{}{}",
            self.stdout.lock().unwrap(),
            self.stderr.lock().unwrap()
        )
    }

    /// Send SIGTERM and wait (bounded) for the process to exit; the reader threads are
    /// joined, so [`Server::output`] is complete afterwards.
    pub async fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "switchyard did not exit within {WAIT:?} of SIGTERM; output:\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        status
    }

    /// POST a JSON body to `/v1/chat/completions` with extra headers.
    pub async fn chat_with(&self, body: &Value, headers: &[(&str, &str)]) -> Reply {
        self.post_raw(
            "/v1/chat/completions",
            serde_json::to_vec(body).unwrap(),
            headers,
        )
        .await
    }

    /// POST a JSON body to `/v1/chat/completions`.
    pub async fn chat(&self, body: &Value) -> Reply {
        self.chat_with(body, &[]).await
    }

    /// POST raw bytes as JSON to `path`.
    pub async fn post_raw(&self, path: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Reply {
        let mut req = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Reply::read(req.send().await.expect("POST to switchyard")).await
    }

    /// GET `path`.
    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = self.http.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Reply::read(req.send().await.expect("GET from switchyard")).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listening_url(line: &str) -> Option<String> {
    let rest = line.strip_prefix("switchyard listening on ")?;
    let url = rest.split_whitespace().next()?;
    assert!(
        url.starts_with("http://127.0.0.1:"),
        "tests listen on 127.0.0.1 only, got {line:?}"
    );
    Some(url.to_owned())
}

/// Wait for a child whose stdout already closed (it is exiting), bounded by [`WAIT`].
fn wait_blocking(child: &mut Child) -> ExitStatus {
    for _ in 0..2000 {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("switchyard closed stdout but did not exit within {WAIT:?}");
}

// ---------------------------------------------------------------- HTTP

/// The one HTTP client of these tests: no proxy, bounded.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// A whole response.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: reqwest::header::HeaderMap,
    /// Body.
    pub text: String,
}

impl Reply {
    async fn read(resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("read the response body");
        Self {
            status,
            headers,
            text,
        }
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text))
    }

    /// A header's value ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Headers and body as one string (to search for things that must not be there).
    pub fn everything(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.headers {
            s.push_str(&format!("{k}: {}\n", String::from_utf8_lossy(v.as_bytes())));
        }
        s.push_str(&self.text);
        s
    }

    /// Assert the status, showing the body when it differs.
    #[track_caller]
    pub fn expect_status(&self, status: u16) -> &Self {
        assert_eq!(
            self.status, status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// The `error` object of an OpenAI error body.
    pub fn error(&self) -> Value {
        let body = self.json();
        assert!(
            body["error"].is_object(),
            "not an error body: {}",
            self.text
        );
        body["error"].clone()
    }
}

/// The `data:` payloads of an SSE body, in order.
pub fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|event| {
            event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// The text carried by a stream's chunks (choice 0's `delta.content`).
pub fn streamed_text(events: &[String]) -> String {
    events
        .iter()
        .filter(|e| e.as_str() != "[DONE]")
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// A minimal chat request for `model`.
pub fn chat_body(model: &str, prompt: &str) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 64,
    })
}

/// A streamed chat request for `model`, asking for the usage chunk.
pub fn stream_body(model: &str, prompt: &str) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": 64,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

/// Poll `cond` until it holds, bounded by [`WAIT`].
pub async fn eventually<F: FnMut() -> bool>(what: &str, mut cond: F) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The non-empty lines of a file that may not exist yet.
pub fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------- config

/// A `[[providers]]` entry of kind `openai` pointing at a wiremock server, with its key in
/// [`KEY_ENV`]; `extra` is more `key = value` lines for the entry.
pub fn openai_provider(name: &str, uri: &str, extra: &str) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"openai\"\nmodel = \"gpt-4o-mini\"\napi_key_env = \"{KEY_ENV}\"\nbase_url = \"{uri}/v1\"\n{extra}\n\n"
    )
}

/// A simulated provider that answers at once (`failure_rate` as given).
pub fn simulated_provider(name: &str, failure_rate: f64) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"simulated\"\nfailure_rate = {failure_rate:?}\nlatency_range_ms = [1, 3]\ncost_per_1k_tokens = 0.002\nseed = 1\nlatency_scale = 1.0\n\n"
    )
}

/// A `[[routes]]` entry; `extra` is more lines for it.
pub fn route(name: &str, providers: &[&str], extra: &str) -> String {
    let list: Vec<String> = providers.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "[[routes]]\nname = \"{name}\"\nproviders = [{}]\n{extra}\n\n",
        list.join(", ")
    )
}

/// Fast retries so failover tests do not wait on backoff.
pub const FAST_RETRY: &str =
    "retry = { max_attempts = 2, base_delay = \"5ms\", max_delay = \"20ms\", max_retry_after = \"1s\" }";

/// The upstream key in the child's environment.
pub fn key_env() -> [(&'static str, &'static str); 1] {
    [(KEY_ENV, UPSTREAM_KEY)]
}

/// The value of the Prometheus sample `name{...}` whose labels include every `labels`
/// pair (`key="value"`).
pub fn metric(exposition: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        let (label_text, value) = match rest.strip_prefix('{') {
            Some(r) => r.split_once("} ")?,
            None => ("", rest.strip_prefix(' ')?),
        };
        labels
            .iter()
            .all(|(k, v)| label_text.split(',').any(|l| l == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}
