//! Upstreams for the proxy to call: wiremock servers answering in OpenAI's documented
//! formats (the conversation of the adapter fixtures in
//! `crates/switchyard/tests/fixtures/openai/`), the strict vendors ([`StrictOpenAi`],
//! [`StrictAnthropic`]) that refuse what the real one refuses, so that a leaked field fails
//! the test, and [`RawUpstream`] for the one thing a mock cannot do — keep a connection
//! open without sending anything more.

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

// ---------------------------------------------------------------- a strict OpenAI

/// Chat Completions request fields OpenAI defines (its API reference); any other is its
/// 400 `Unrecognized request argument supplied`.
const OPENAI_FIELDS: &[&str] = &[
    "messages",
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];
/// The keys of a message, of a content part and of a tool, as OpenAI defines them.
const MESSAGE_KEYS: &[&str] = &[
    "role",
    "content",
    "name",
    "tool_calls",
    "tool_call_id",
    "refusal",
    "audio",
    "function_call",
];
const PART_KEYS: &[&str] = &["type", "text", "image_url", "input_audio", "file"];
const TOOL_KEYS: &[&str] = &["type", "function"];
const FUNCTION_KEYS: &[&str] = &["name", "description", "parameters", "strict"];

/// Why OpenAI would refuse this Chat Completions body, if it would: a field or key it does
/// not define (Anthropic's `thinking`, `output_config`, `context_management`, a
/// `cache_control` on a part, ...), `reasoning_effort` for a model that does not reason,
/// more output tokens than the model can write, or a `tool` message whose call is not in
/// the assistant turn before it.
pub fn openai_refuses(body: &Value) -> Option<String> {
    let unknown = |v: &Value, known: &[&str], at: &str| {
        v.as_object()?
            .keys()
            .find(|k| !known.contains(&k.as_str()))
            .map(|k| format!("Unrecognized request argument supplied: {at}{k}"))
    };
    if let Some(why) = unknown(body, OPENAI_FIELDS, "") {
        return Some(why);
    }
    let model = body["model"].as_str().unwrap_or_default();
    let reasons = model.starts_with('o') || model.starts_with("gpt-5");
    if body.get("reasoning_effort").is_some() && !reasons {
        return Some(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.".into(),
        );
    }
    // the completion limits OpenAI states for the models these tests stand in for
    let limit = match model {
        "gpt-4o-mini" => Some(16_384),
        "gpt-4.1-mini" => Some(32_768),
        _ => None,
    };
    let asked = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64);
    if let (Some(asked), Some(limit)) = (asked, limit) {
        if asked > limit {
            return Some(format!(
                "max_tokens is too large: {asked}. This model supports at most {limit} \
                 completion tokens, whereas you provided {asked}."
            ));
        }
    }
    for (i, m) in body["messages"].as_array()?.iter().enumerate() {
        if let Some(why) = unknown(m, MESSAGE_KEYS, &format!("messages[{i}].")) {
            return Some(why);
        }
        for (j, part) in m["content"].as_array().into_iter().flatten().enumerate() {
            if let Some(why) = unknown(part, PART_KEYS, &format!("messages[{i}].content[{j}].")) {
                return Some(why);
            }
        }
    }
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        let at = format!("tools[{i}].");
        if let Some(why) = unknown(t, TOOL_KEYS, &at)
            .or_else(|| unknown(&t["function"], FUNCTION_KEYS, &format!("{at}function.")))
        {
            return Some(why);
        }
    }
    let calls = |m: &Value| strings(&m["tool_calls"], "/id");
    let results = |m: &Value| {
        (m["tool_call_id"].as_str().into_iter())
            .map(str::to_owned)
            .collect()
    };
    (!results_follow_calls(&body["messages"], calls, results)).then(|| {
        "messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
            .to_owned()
    })
}

/// A Chat Completions upstream that checks each request as OpenAI does
/// ([`openai_refuses`]: 400 in OpenAI's shape) and answers the valid ones with `answer`.
pub struct StrictOpenAi<F>(pub F);

impl<F: Fn(&Value) -> ResponseTemplate + Send + Sync + 'static> wiremock::Respond
    for StrictOpenAi<F>
{
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return error_response(
                400,
                "We could not parse the JSON body of your request.",
                "invalid_request_error",
                None,
            );
        };
        match openai_refuses(&body) {
            Some(why) => error_response(400, &why, "invalid_request_error", None),
            None => (self.0)(&body),
        }
    }
}

// ---------------------------------------------------------------- a strict Anthropic

/// The top-level fields of Anthropic's Messages request (its API reference, with the
/// betas' `container`, `mcp_servers` and `context_management`); any other is its 400
/// `<field>: Extra inputs are not permitted` (`thread` included: the gateway never
/// forwards the message-threads beta).
const MESSAGES_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "metadata",
    "stop_sequences",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "tools",
    "tool_choice",
    "thinking",
    "service_tier",
    "output_config",
    "cache_control",
    "container",
    "mcp_servers",
    "context_management",
];

/// Why Anthropic would refuse this Messages body, if it would: a top-level field it does
/// not define (`seed`, `n`, `thread`, ...), a thinking budget under 1024 tokens or not
/// below `max_tokens`, or a `tool_result` whose `tool_use` is not in the turn before it.
pub fn anthropic_refuses(body: &Value) -> Option<String> {
    let fields = body.as_object()?;
    if let Some(extra) = fields
        .keys()
        .find(|k| !MESSAGES_FIELDS.contains(&k.as_str()))
    {
        return Some(format!("{extra}: Extra inputs are not permitted"));
    }
    if body["thinking"]["type"] == "enabled" {
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 {
            return Some(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        if body["max_tokens"].as_u64().unwrap_or(0) <= budget {
            return Some("`max_tokens` must be greater than `thinking.budget_tokens`".into());
        }
    }
    let blocks = |m: &Value, kind: &str, field: &str| -> Vec<String> {
        let of_kind = m["content"].as_array().into_iter().flatten();
        (of_kind.filter(|b| b["type"] == kind))
            .filter_map(|b| b[field].as_str().map(str::to_owned))
            .collect()
    };
    let calls = |m: &Value| blocks(m, "tool_use", "id");
    let results = |m: &Value| blocks(m, "tool_result", "tool_use_id");
    (!results_follow_calls(&body["messages"], calls, results)).then(|| {
        "messages: tool_result block(s) provided when previous message does not contain \
         tool_use"
            .to_owned()
    })
}

/// An Anthropic error response.
pub fn anthropic_error(status: u16, kind: &str, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"type": "error",
        "error": {"type": kind, "message": message}}))
}

/// A Messages API upstream that checks each request as Anthropic does
/// ([`anthropic_refuses`]: 400 in Anthropic's shape) and answers the valid ones with
/// `answer`.
pub struct StrictAnthropic<F>(pub F);

impl<F: Fn(&Value) -> ResponseTemplate + Send + Sync + 'static> wiremock::Respond
    for StrictAnthropic<F>
{
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return anthropic_error(
                400,
                "invalid_request_error",
                "There was an error parsing the body of your request.",
            );
        };
        match anthropic_refuses(&body) {
            Some(why) => anthropic_error(400, "invalid_request_error", &why),
            None => (self.0)(&body),
        }
    }
}

// ---------------------------------------------------------------- reading what a mock saw

/// Whether every tool result among `messages` answers a call still open: one made by the
/// last turn that made calls, with only results since (`calls` reads a turn's call ids,
/// `results` a turn's answered ids). What both vendors require of a conversation
/// (Anthropic's results in the one turn after the calls, OpenAI's in the `tool` messages
/// right after them).
fn results_follow_calls(
    messages: &Value,
    calls: impl Fn(&Value) -> Vec<String>,
    results: impl Fn(&Value) -> Vec<String>,
) -> bool {
    let mut open: Vec<String> = Vec::new();
    messages.as_array().into_iter().flatten().all(|m| {
        let answered = results(m);
        let ok = answered.iter().all(|id| open.contains(id));
        let made = calls(m);
        if !made.is_empty() {
            open = made;
        } else if answered.is_empty() {
            open.clear();
        } else {
            open.retain(|id| !answered.contains(id));
        }
        ok
    })
}

/// The strings at `pointer` in each element of the array `v`.
pub fn strings(v: &Value, pointer: &str) -> Vec<String> {
    (v.as_array().into_iter().flatten())
        .filter_map(|x| {
            x.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// The text of a `content`: a string, or the text of its blocks / parts.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The JSON bodies of every request a mock received, in order.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    (server.received_requests().await.unwrap_or_default().iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
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

#[test]
fn the_strict_mocks_refuse_what_their_vendors_refuse() {
    let ok = json!({"model": "m", "max_tokens": 64, "messages": []});
    assert_eq!(anthropic_refuses(&ok), None);
    let seed = json!({"model": "m", "max_tokens": 64, "messages": [], "seed": 7});
    assert_eq!(
        anthropic_refuses(&seed).as_deref(),
        Some("seed: Extra inputs are not permitted")
    );
    let thinking = |budget: u64| {
        json!({"model": "m", "max_tokens": 64, "messages": [],
               "thinking": {"type": "enabled", "budget_tokens": budget}})
    };
    assert!(anthropic_refuses(&thinking(63)).is_some());
    assert!(anthropic_refuses(&thinking(1024)).is_some());
    let call = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"}]});
    let claude = |messages: Value| json!({"model": "m", "max_tokens": 64, "messages": messages});
    assert_eq!(anthropic_refuses(&claude(json!([call, result]))), None);
    assert!(anthropic_refuses(&claude(json!([result]))).is_some());

    let calls = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    let answer = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "42"});
    let gpt = |messages: Value| json!({"model": "gpt-4o-mini", "messages": messages});
    let both = gpt(json!([calls, answer("call_1"), answer("call_2")]));
    assert_eq!(openai_refuses(&both), None);
    assert!(openai_refuses(&gpt(json!([answer("call_1")]))).is_some());
    let plain = json!({"role": "user", "content": "hi"});
    assert!(openai_refuses(&gpt(json!([calls, plain, answer("call_1")]))).is_some());
}
