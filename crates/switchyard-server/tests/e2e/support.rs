//! The harness: the `switchyard` binary as a child process (on `tests/common`), an HTTP
//! client for it, the Python SDK scripts of `tests/python` run against it, SSE and
//! Prometheus parsing, and config snippets. The upstreams the proxy
//! calls are in `upstream.rs`.
//!
//! Every wait is bounded by [`WAIT`]; nothing sleeps to let background work happen — the
//! loops poll for a condition (the child exited, a log line appeared, the mock saw a call).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::common::http::chat_request;
pub use crate::common::http::client;
pub use crate::common::http::{eventually, sse_data, streamed_text, Reply};
use crate::common::serve::Launch;
pub use crate::common::serve::{command, Exited, Process, Scratch, PROXY_ENV, WAIT};

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

// ---------------------------------------------------------------- child processes

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

/// The Python interpreter the SDK tests run (`$SWITCHYARD_PYTHON`, default `python3`),
/// without the proxy variables or any OpenAI / Anthropic client settings of the caller's
/// environment, and writing no bytecode into `tests/python` (the scripts import
/// `checks.py`).
pub fn python() -> Command {
    let interpreter = std::env::var("SWITCHYARD_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut cmd = Command::new(interpreter);
    cmd.env("PYTHONDONTWRITEBYTECODE", "1");
    for var in PROXY_ENV.iter().chain(&[
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
    ]) {
        cmd.env_remove(var);
    }
    cmd
}

/// Fail — never skip — unless `$SWITCHYARD_PYTHON` can `import {modules}` (the official
/// SDKs the test drives), saying how to install them.
pub fn require_python(modules: &str) {
    let mut probe = python();
    probe.args(["-c", &format!("import {modules}")]);
    let found = match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => return,
        Ok(out) => describe(&out),
        Err(e) => format!("cannot run the interpreter: {e}"),
    };
    panic!(
        "this test needs `import {modules}` to work in $SWITCHYARD_PYTHON (default python3).\n\
         Install the packages: python3 -m venv .venv && .venv/bin/pip install -r \
         tests/python/requirements.txt\n\
         then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{found}"
    );
}

/// Run `tests/python/<script>` with `args` (bounded by two minutes): it must exit 0 having
/// printed `passed`, or the test fails with its output and that of `servers`.
pub fn run_python(script: &str, args: &[&str], passed: &str, servers: &[&Server]) -> Output {
    let path = format!("{}/../../tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = python();
    cmd.arg(path).args(args);
    let out = run_bounded(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs: Vec<String> = servers.iter().map(|s| s.output()).collect();
    assert!(
        out.status.success() && stdout.contains(passed),
        "{script} failed\n{}\n--- server(s)\n{}",
        describe(&out),
        logs.join("\n---\n")
    );
    out
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

/// A running `switchyard serve` and the directory it runs in. Killed on drop (SIGTERM
/// first via [`Process::terminate`] when a test wants the graceful path).
pub struct Server {
    process: Process,
    http: reqwest::Client,
    /// Where the config (and anything relative) lives; removed after the child is gone
    /// (fields drop in declaration order).
    _scratch: Scratch,
}

impl std::ops::Deref for Server {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.process
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Process {
        &mut self.process
    }
}

impl Server {
    /// `switchyard serve --config <config> --listen 127.0.0.1:0` with `envs` set on the
    /// child only. Panics if it does not start listening.
    pub fn start(scratch: Scratch, config: &str, envs: &[(&str, &str)]) -> Self {
        let path = scratch.write("switchyard.toml", config);
        let args = ["serve", "--config", path.to_str().unwrap()];
        Self::try_start(scratch, &args, "127.0.0.1:0", envs).unwrap_or_else(|r| {
            panic!(
                "server refused to start: {}\n{}{}\nconfig:\n{config}",
                r.status, r.stdout, r.stderr
            )
        })
    }

    /// Spawn `switchyard ARGS --listen LISTEN` and wait for its "listening" line; `Err` if
    /// it exits first.
    pub fn try_start(
        scratch: Scratch,
        args: &[&str],
        listen: &str,
        envs: &[(&str, &str)],
    ) -> Result<Self, Exited> {
        let mut cmd = command(args, envs, &scratch.path);
        cmd.args(["--listen", listen]);
        let process = Launch::spawn("switchyard", cmd).wait_blocking()?;
        Ok(Self {
            process,
            http: client(),
            _scratch: scratch,
        })
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

// ---------------------------------------------------------------- HTTP

/// A minimal chat request for `model`.
pub fn chat_body(model: &str, prompt: &str) -> Value {
    chat_request(model, prompt, false)
}

/// A streamed chat request for `model`, asking for the usage chunk.
pub fn stream_body(model: &str, prompt: &str) -> Value {
    chat_request(model, prompt, true)
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

/// A `[[providers]]` entry of kind `anthropic` serving `model` from a mock at `uri`, with
/// its key in [`KEY_ENV`].
pub fn anthropic_provider(name: &str, model: &str, uri: &str) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"anthropic\"\nmodel = \"{model}\"\napi_key_env = \"{KEY_ENV}\"\nbase_url = \"{uri}\"\n\n"
    )
}

/// A `[[keys]]` entry `name` for the client token `token`, on every route.
pub fn client_key(name: &str, token: &str) -> String {
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    format!("[[keys]]\nname = \"{name}\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n\n")
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
