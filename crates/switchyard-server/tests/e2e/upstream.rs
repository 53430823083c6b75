//! Upstreams for the proxy to call: wiremock servers answering in OpenAI's documented
//! formats (the conversation of the adapter fixtures in
//! `crates/switchyard/tests/fixtures/openai/`), and [`RawUpstream`] for the one thing a
//! mock cannot do — keep a connection open without sending anything more.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{CHAT_PATH, UPSTREAM_MODEL};

// ---------------------------------------------------------------- wiremock upstreams

/// OpenAI's `chat.completion` object with `text` (usage: 25 prompt tokens of which 5
/// cached, 12 completion tokens).
pub fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-e2e0001",
        "object": "chat.completion",
        "created": 1_764_410_400,
        "model": UPSTREAM_MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": 25,
            "completion_tokens": 12,
            "total_tokens": 37,
            "prompt_tokens_details": {"cached_tokens": 5, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_e2e"
    })
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-e2e0101",
        "object": "chat.completion.chunk",
        "created": 1_764_410_400,
        "model": UPSTREAM_MODEL,
        "system_fingerprint": "fp_e2e",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        "usage": null
    });
    format!("data: {c}\n\n")
}

/// An OpenAI SSE body: a role chunk, one chunk per piece, then (when `finished`) the
/// finish chunk, the usage chunk and `[DONE]`. Without `finished` it is a cut stream: the
/// connection ends after the pieces with no finish signal.
pub fn sse(pieces: &[&str], finished: bool) -> String {
    let mut body = chunk(
        &json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    );
    for p in pieces {
        body.push_str(&chunk(&json!({"content": p}), None));
    }
    if finished {
        body.push_str(&chunk(&json!({}), Some("stop")));
        let usage = json!({
            "id": "chatcmpl-e2e0101",
            "object": "chat.completion.chunk",
            "created": 1_764_410_400,
            "model": UPSTREAM_MODEL,
            "choices": [],
            "usage": {"prompt_tokens": 25, "completion_tokens": 12, "total_tokens": 37}
        });
        body.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    }
    body
}

/// 200 with a chat completion of `text`.
pub fn ok_completion(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(completion(text))
}

/// 200 with an event stream.
pub fn ok_stream(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// An OpenAI error response.
pub fn error_response(
    status: u16,
    message: &str,
    kind: &str,
    code: Option<&str>,
) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "error": {"message": message, "type": kind, "param": null, "code": code}
    }))
}

/// A wiremock server answering every chat call with `response`.
pub async fn upstream(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

/// The chat calls a mock received.
pub async fn calls(server: &MockServer) -> Vec<wiremock::Request> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.url.path() == CHAT_PATH)
        .collect()
}

// ---------------------------------------------------------------- a raw upstream

/// A hand-written upstream for what wiremock cannot do: it answers every request with
/// `response` (status line, headers, and any body bytes) and then holds the connection
/// open — no more bytes, no close — until it is dropped.
pub struct RawUpstream {
    /// `http://127.0.0.1:PORT`.
    pub uri: String,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl RawUpstream {
    /// Listen on 127.0.0.1 and answer with `response`.
    pub async fn start(response: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}", listener.local_addr().unwrap());
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                if read_request(&mut socket).await.is_none() {
                    continue;
                }
                counter.fetch_add(1, Ordering::SeqCst);
                if socket.write_all(response.as_bytes()).await.is_ok() {
                    let _ = socket.flush().await;
                    held.push(socket); // open until the task is aborted
                }
            }
        });
        Self { uri, hits, task }
    }

    /// An SSE response head (no length: the body would run until close) plus `body`.
    pub fn sse_head(body: &str) -> String {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n{body}"
        )
    }

    /// Requests answered so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for RawUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Read one HTTP/1.1 request (headers, then `content-length` bytes of body).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let header_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(())
}
