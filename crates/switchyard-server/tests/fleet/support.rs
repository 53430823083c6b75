//! The harness, on `tests/common`: the fleet's config (the shared primary + fallback
//! config plus one attempt per provider and the state backend), `switchyard serve`
//! replicas (restartable in the same directory) and their HTTP surface, the money
//! arithmetic of a budget, and bounded polling.
//!
//! Nothing here sleeps to let background work happen: waits poll a condition under
//! [`WAIT`].

use std::future::Future;
use std::time::Duration;

use faultline::Handle;
use serde_json::Value;
use switchyard::cost::ESTIMATE_TOKENS_PER_MESSAGE;
use switchyard::Money;
use tokio::time::Instant;

pub use crate::common::conf::{upstream, Conf, ROUTE};
use crate::common::http::{chat_request, client, MAX_TOKENS};
pub use crate::common::http::{Reply, PROMPT};
use crate::common::serve::{command, Launch, Process};
pub use crate::common::serve::{Scratch, WAIT};

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

impl Backend {
    /// Its `[state]` section.
    fn section(&self) -> String {
        match self {
            Backend::Memory => "[state]\nbackend = \"memory\"\n".to_owned(),
            Backend::Redis {
                url,
                prefix,
                timeout,
            } => format!(
                "[state]\nbackend = \"redis\"\nurl = \"{url}\"\nprefix = \"{prefix}\"\ntimeout = \"{timeout}\"\n"
            ),
        }
    }
}

impl Conf {
    /// The primary + fallback config on `upstream` with one attempt per provider (so
    /// faultline's counts are requests), on `backend`.
    pub fn fleet(upstream: &Handle, backend: Backend) -> Self {
        Conf::new(upstream)
            .route("retry = { max_attempts = 1, base_delay = \"5ms\", max_delay = \"20ms\", max_retry_after = \"1s\" }")
            .section(&backend.section())
    }
}

// ---------------------------------------------------------------- directories

/// A fresh directory holding `conf` as `switchyard.toml`: a replica's config and request
/// log, outliving its restarts.
pub fn config_dir(tag: &str, conf: &Conf) -> Scratch {
    let dir = Scratch::new("fleet", tag);
    dir.write("switchyard.toml", &conf.toml());
    dir
}

// ---------------------------------------------------------------- replicas

/// A running `switchyard serve`, killed on drop (its output shown if the test failed).
pub struct Replica {
    /// `A`, `B`: for messages.
    pub name: &'static str,
    process: Process,
    http: reqwest::Client,
}

impl std::ops::Deref for Replica {
    type Target = Process;
    fn deref(&self) -> &Process {
        &self.process
    }
}

impl std::ops::DerefMut for Replica {
    fn deref_mut(&mut self) -> &mut Process {
        &mut self.process
    }
}

impl Replica {
    /// `switchyard serve --config DIR/switchyard.toml --listen 127.0.0.1:0` in `dir`;
    /// returns once it prints its listening line.
    pub async fn start(name: &'static str, dir: &Scratch) -> Self {
        let config = dir.file("switchyard.toml");
        let mut cmd = command(
            &["serve", "--config", config.to_str().unwrap()],
            &[],
            &dir.path,
        );
        cmd.args(["--listen", "127.0.0.1:0"]);
        let process = Launch::spawn(&format!("replica {name}"), cmd)
            .wait()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "replica {name} exited ({}):\n{}{}\nconfig:\n{}",
                    e.status,
                    e.stdout,
                    e.stderr,
                    std::fs::read_to_string(&config).unwrap_or_default()
                )
            });
        Self {
            name,
            process,
            http: client(),
        }
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

/// Replicas A and B on the same config (each in its own directory).
pub async fn pair(tag: &str, conf: &Conf) -> (Replica, Replica, [Scratch; 2]) {
    let dirs = [
        config_dir(&format!("{tag}-a"), conf),
        config_dir(&format!("{tag}-b"), conf),
    ];
    let a = Replica::start("A", &dirs[0]).await;
    let b = Replica::start("B", &dirs[1]).await;
    (a, b, dirs)
}

/// A chat request body for the route.
pub fn body(stream: bool) -> Value {
    chat_request(ROUTE, PROMPT, stream)
}

// ---------------------------------------------------------------- replies

impl Reply {
    /// Assert a refusal for the budget: 402 `budget_exceeded`.
    #[track_caller]
    pub fn assert_budget_exceeded(&self) {
        assert_eq!(self.status, 402, "body: {}", self.text);
        assert!(self.text.contains("budget_exceeded"), "body: {}", self.text);
    }
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
