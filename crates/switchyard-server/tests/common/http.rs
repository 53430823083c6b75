//! Talking to a `switchyard serve` child: the client, a whole response, SSE and trail
//! parsing, request bodies, bounded polling.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::serve::WAIT;

/// The tests' one HTTP client: no proxy (traffic stays on 127.0.0.1), bounded.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(WAIT)
        .build()
        .unwrap()
}

/// The prompt of the faultline suites' requests.
pub const PROMPT: &str = "Why put a gateway in front of a model?";
/// `max_tokens` of every chat request the suites send.
pub const MAX_TOKENS: u64 = 64;

/// A chat request for `model` asking for at most [`MAX_TOKENS`]; streamed ones ask for the
/// usage chunk.
pub fn chat_request(model: &str, prompt: &str, stream: bool) -> Value {
    let mut b = json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
    });
    if stream {
        b["stream"] = json!(true);
        b["stream_options"] = json!({"include_usage": true});
    }
    b
}

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
    /// Read all of `resp`.
    pub async fn read(resp: reqwest::Response) -> Self {
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

    /// Is this a stream (`text/event-stream`)?
    pub fn is_stream(&self) -> bool {
        self.header("content-type").starts_with("text/event-stream")
    }

    /// A stream's events that parse as JSON.
    pub fn json_events(&self) -> Vec<Value> {
        sse_data(&self.text)
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }

    /// The answer's text: a plain body's message, or a stream's deltas.
    pub fn content(&self) -> String {
        if self.is_stream() {
            return streamed_text(&sse_data(&self.text));
        }
        self.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The `switchyard` trail: a plain body's, or a stream's last.
    pub fn trail(&self) -> Value {
        if self.is_stream() {
            return self
                .json_events()
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

    /// Assert a 200 carrying the whole of faultline's canonical answer.
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

/// Poll `cond` until it holds, bounded by [`WAIT`].
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
