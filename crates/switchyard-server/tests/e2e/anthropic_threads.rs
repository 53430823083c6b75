//! The official `anthropic` SDK's `client.beta.messages.tool_runner(...)` with its
//! defaults — a message thread (`thread: create`, then `continue` with only the tool
//! result) — completing a tool loop through the gateway: across a failover from a 529ing
//! Anthropic to OpenAI on an untuned route, and across two replicas sharing Redis (turn 1
//! on one, turn 2 on the other). The client-side checks live in
//! `tests/python/test_anthropic_threads.py`; this file stands up the mock vendors and the
//! gateways and checks what each vendor saw: the whole conversation on the second turn (the
//! gateway expanded the `continue`), never `thread` or the threads beta. The mocks refuse
//! what their vendor refuses (fields it does not define, a tool result without its call), so
//! a leaked field or a turn sent without its history fails the test.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::anthropic_sdk::{anthropic_provider, claude};
use crate::support::{
    describe, key_env, openai_provider, python, route, run_bounded, try_run_bounded, Scratch,
    Server, CHAT_PATH,
};
use crate::upstream::completion;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_anthropic_threads.py"
);
/// The client token the script authenticates with (as `x-api-key`).
const TOKEN: &str = "sy-e2e-anthropic-threads-token-4d0b7e";
const BETA: &str = "message-threads-2026-08-12";

/// Chat Completions request fields OpenAI documents.
const OPENAI_FIELDS: [&str; 27] = [
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stream_options",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "seed",
    "service_tier",
    "reasoning_effort",
    "metadata",
    "store",
    "prediction",
    "verbosity",
];
/// Messages API request fields Anthropic documents (`thread` only with the threads beta,
/// which the gateway never forwards).
const ANTHROPIC_FIELDS: [&str; 16] = [
    "model",
    "max_tokens",
    "messages",
    "system",
    "stream",
    "stop_sequences",
    "temperature",
    "top_p",
    "top_k",
    "tools",
    "tool_choice",
    "thinking",
    "metadata",
    "output_config",
    "service_tier",
    "cache_control",
];

fn sdk_available() {
    let mut probe = python();
    probe.args(["-c", "import anthropic; print(anthropic.__version__)"]);
    let found = match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(describe(&out)),
        Err(e) => Err(format!("cannot run the interpreter: {e}")),
    };
    if let Err(why) = found {
        panic!(
            "this test needs the official `anthropic` package in $SWITCHYARD_PYTHON (default python3).\n\
             Install it: python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt\n\
             then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{why}"
        );
    }
}

fn key(name: &str) -> String {
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    format!("[[keys]]\nname = \"{name}\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n\n")
}

/// Whether every tool result among `messages` answers a call of the turn before it
/// (`calls` reads a turn's call ids, `results` a turn's answered ids).
fn results_follow_calls(
    messages: &[Value],
    calls: impl Fn(&Value) -> Vec<String>,
    results: impl Fn(&Value) -> Vec<String>,
) -> bool {
    let mut open: Vec<String> = Vec::new();
    messages.iter().all(|m| {
        let answered = results(m);
        let ok = answered.iter().all(|id| open.contains(id));
        let made = calls(m);
        if !made.is_empty() || !answered.is_empty() {
            open = made;
        }
        ok
    })
}

/// The text of a `content`: a string, or the text of its blocks / parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| {
            x.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// A mock OpenAI: 400 for a field OpenAI does not define or a tool message without its
/// call; a tool result gets what the tool said, a request offering `get_weather` a call to
/// it.
struct Gpt;

impl Gpt {
    fn refuse(body: &Value) -> Option<String> {
        let fields = body.as_object()?;
        if let Some(k) = fields.keys().find(|k| !OPENAI_FIELDS.contains(&k.as_str())) {
            return Some(format!("Unrecognized request argument supplied: {k}"));
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let calls = |m: &Value| strings(&m["tool_calls"], "/id");
        let results = |m: &Value| {
            m["tool_call_id"]
                .as_str()
                .map(|id| vec![id.to_owned()])
                .unwrap_or_default()
        };
        (!results_follow_calls(&messages, calls, results)).then(|| {
            "messages with role 'tool' must be a response to a preceding message with \
             'tool_calls'"
                .to_owned()
        })
    }
}

impl Respond for Gpt {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if let Some(why) = Gpt::refuse(&body) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": why, "type": "invalid_request_error", "param": null, "code": null}}));
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if let Some(tool) = messages.iter().rev().find(|m| m["role"] == "tool") {
            let said = text_of(&tool["content"]);
            return ResponseTemplate::new(200)
                .set_body_json(completion(&format!("The tool says: {said}")));
        }
        if body["tools"].to_string().contains("get_weather") {
            let mut call = completion("");
            call["choices"][0]["message"] = json!({"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_w1", "type": "function", "function":
                    {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]});
            call["choices"][0]["finish_reason"] = json!("tool_calls");
            return ResponseTemplate::new(200).set_body_json(call);
        }
        ResponseTemplate::new(200).set_body_json(completion("Paris"))
    }
}

/// A mock Anthropic that answers: 400 for a field Anthropic does not define (`thread`
/// included: the gateway forwards no threads beta) or a tool result without its call; a
/// tool result gets what the tool said, a request offering `get_weather` a call to it.
struct Claude;

impl Claude {
    fn refuse(body: &Value) -> Option<String> {
        let fields = body.as_object()?;
        if let Some(k) = fields
            .keys()
            .find(|k| !ANTHROPIC_FIELDS.contains(&k.as_str()))
        {
            return Some(format!("{k}: Extra inputs are not permitted"));
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let blocks = |m: &Value, kind: &str, field: &str| -> Vec<String> {
            m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == kind)
                .filter_map(|b| b[field].as_str().map(str::to_owned))
                .collect()
        };
        let calls = |m: &Value| blocks(m, "tool_use", "id");
        let results = |m: &Value| blocks(m, "tool_result", "tool_use_id");
        (!results_follow_calls(&messages, calls, results)).then(|| {
            "messages: tool_result block(s) provided when previous message does not contain \
             tool_use"
                .to_owned()
        })
    }
}

impl Respond for Claude {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if let Some(why) = Claude::refuse(&body) {
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error",
                "error": {"type": "invalid_request_error", "message": why}}));
        }
        let last = body["messages"].as_array().and_then(|m| m.last().cloned());
        let said = last.as_ref().and_then(|m| {
            m["content"]
                .as_array()?
                .iter()
                .find(|b| b["type"] == "tool_result")
                .map(|b| text_of(&b["content"]))
        });
        let (content, stop) = match said {
            Some(said) => (
                json!([{"type": "text", "text": format!("The tool says: {said}")}]),
                "end_turn",
            ),
            None => (
                json!([{"type": "tool_use", "id": "toolu_w1", "name": "get_weather",
                        "input": {"city": "Paris"}}]),
                "tool_use",
            ),
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_vendor01", "type": "message", "role": "assistant",
            "model": "claude-sonnet-5-20260101", "content": content,
            "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 30, "output_tokens": 9}}))
    }
}

/// The JSON bodies a mock received at `at`, with their `anthropic-beta` header.
async fn bodies(server: &MockServer, at: &str) -> Vec<(Value, String)> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == at)
        .map(|r| {
            let beta = r
                .headers
                .get("anthropic-beta")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            (serde_json::from_slice(&r.body).unwrap(), beta)
        })
        .collect()
}

fn run_script(args: &[&str], servers: &[&Server]) {
    let mut script = python();
    script.arg(SCRIPT).args(args);
    let out = run_bounded(script, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs: Vec<String> = servers.iter().map(|s| s.output()).collect();
    assert!(
        out.status.success() && stdout.contains("all anthropic threads checks passed"),
        "the anthropic threads script failed\n{}\n--- gateway(s)\n{}",
        describe(&out),
        logs.join("\n---\n")
    );
}

#[tokio::test]
async fn the_sdks_default_tool_runner_fails_over_mid_thread_to_openai() {
    sdk_available();
    let overloaded = claude(ResponseTemplate::new(404)).await;
    let gpt = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(Gpt)
        .mount(&gpt)
        .await;
    // an untuned route, as the README writes one
    let config = format!(
        "{}{}{}{}",
        anthropic_provider("claude", &overloaded.uri()),
        openai_provider("gpt", &gpt.uri(), ""),
        route("claude-sonnet-5", &["claude", "gpt"], ""),
        key("sdk"),
    );
    let server = Server::start(Scratch::new("e2e", "threads-failover"), &config, &key_env());
    run_script(&["failover", &server.base, TOKEN], &[&server]);

    let asked = bodies(&gpt, CHAT_PATH).await;
    assert_eq!(asked.len(), 2, "{asked:?}");
    let roles = |b: &Value| strings(&b["messages"], "/role");
    assert_eq!(roles(&asked[0].0), ["user"]);
    // the continue carried the tool result alone; OpenAI got the whole conversation
    let whole = &asked[1].0;
    assert_eq!(roles(whole), ["user", "assistant", "tool"], "{whole}");
    assert_eq!(
        whole["messages"][0]["content"],
        "What is the weather in Paris?"
    );
    assert_eq!(whole["messages"][1]["tool_calls"][0]["id"], "call_w1");
    assert_eq!(whole["messages"][2]["tool_call_id"], "call_w1");
    assert_eq!(
        text_of(&whole["messages"][2]["content"]),
        "It is sunny in Paris."
    );
    assert_eq!(
        whole["tools"][0]["function"]["name"], "get_weather",
        "the thread's tools"
    );
    // the Anthropic provider was tried on both turns, never with `thread` or the beta
    let tried = bodies(&overloaded, "/v1/messages").await;
    assert!(tried.len() >= 2, "{}", tried.len());
    for (body, beta) in &tried {
        assert!(body.get("thread").is_none(), "{body}");
        assert!(!beta.contains(BETA), "{beta}");
    }
    let last = &tried.last().unwrap().0;
    assert_eq!(
        strings(&last["messages"], "/role"),
        ["user", "assistant", "user"]
    );
}

#[tokio::test]
async fn the_sdks_default_tool_runner_continues_a_thread_on_another_replica() {
    sdk_available();
    let vendor = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Claude)
        .mount(&vendor)
        .await;
    let prefix = format!("sy-e2e-threads-{}", std::process::id());
    let config = format!(
        "{}{}{}[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\nprefix = \"{prefix}\"\n\
         timeout = \"500ms\"\n",
        anthropic_provider("claude", &vendor.uri()),
        route("claude-sonnet-5", &["claude"], ""),
        key("sdk"),
    );
    let a = Server::start(Scratch::new("e2e", "threads-a"), &config, &key_env());
    let b = Server::start(Scratch::new("e2e", "threads-b"), &config, &key_env());
    run_script(&["replicas", &a.base, &b.base, TOKEN], &[&a, &b]);

    let asked = bodies(&vendor, "/v1/messages").await;
    assert_eq!(
        asked.len(),
        2,
        "the refused third continue reached no vendor: {asked:?}"
    );
    for (body, beta) in &asked {
        assert!(body.get("thread").is_none(), "{body}");
        assert!(!beta.contains(BETA), "{beta}");
    }
    // replica B, which never saw turn 1, sent the whole conversation from Redis
    let whole = &asked[1].0;
    assert_eq!(
        strings(&whole["messages"], "/role"),
        ["user", "assistant", "user"]
    );
    assert_eq!(whole["messages"][1]["content"][0]["id"], "toolu_w1");
    assert_eq!(
        whole["messages"][2]["content"][0]["tool_use_id"],
        "toolu_w1"
    );
    assert_eq!(
        whole["tools"][0]["name"], "get_weather",
        "the thread's tools"
    );
}
