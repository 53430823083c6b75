//! Real Claude Code (npm `@anthropic-ai/claude-code` 2.1.332, `claude -p`), unchanged,
//! through the Messages dialect while its own vendor is down, on routes with no field
//! settings at all (issue 23): it streams to `/v1/messages?beta=true` with its betas,
//! adaptive thinking, effort, context management, cached system blocks and — from the
//! session's first request — a system turn inside `messages` carrying `output_config`
//! (the per-turn beta), and the answer comes from an OpenAI model that does not reason,
//! through a tool round trip: the model calls Claude Code's `Read` on a file in the test's
//! scratch directory, Claude Code runs it and sends the result, the model answers from it.
//! The OpenAI upstream refuses what OpenAI refuses (a field it does not define, reasoning
//! on a model without it), so an Anthropic-only field that leaked would fail the test.
//! Offline: every request goes to loopback. The binary is `$SWITCHYARD_CLAUDE`
//! (`scripts/test` installs it from `tests/agents/`); without it the test fails with the
//! install command — never skips.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::anthropic_sdk::{anthropic_provider, claude};
use crate::support::{
    client_key, describe, key_env, lines_of, openai_provider, route, run_bounded, Scratch, Server,
    CHAT_PATH, PROXY_ENV, UPSTREAM_MODEL,
};
use crate::upstream::{calls, completion, ok_completion, ok_stream, sse, StrictOpenAi};

/// The client token Claude Code sends (`ANTHROPIC_AUTH_TOKEN`, as a bearer token).
const TOKEN: &str = "sy-e2e-claude-code-token-3f0a6d21";
/// What the file Claude Code reads for the model says.
const NOTE: &str = "the magic word is PAPAYA";
/// The model's answer once it has read the note.
const ANSWER: &str = "The note says the magic word is PAPAYA.";

fn claude_binary() -> PathBuf {
    let found = std::env::var_os("SWITCHYARD_CLAUDE").map(PathBuf::from);
    match found {
        Some(path) if path.is_file() => path,
        other => panic!(
            "this test needs Claude Code: npm install --prefix tests/agents \
             (or run scripts/test), then SWITCHYARD_CLAUDE=$PWD/tests/agents/node_modules/.bin/claude \
             (got {other:?})"
        ),
    }
}

/// OpenAI's stream of one call to `Read` with `file_path`.
fn read_call_stream(file_path: &str) -> String {
    let arguments = json!({"file_path": file_path}).to_string();
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"id": "chatcmpl-e2e0201", "object": "chat.completion.chunk",
            "created": 1_764_410_400, "model": UPSTREAM_MODEL,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let usage = json!({"id": "chatcmpl-e2e0201", "object": "chat.completion.chunk",
        "created": 1_764_410_400, "model": UPSTREAM_MODEL, "choices": [],
        "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}});
    [
        chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": "call_read1", "type": "function",
                "function": {"name": "Read", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        format!("data: {usage}\n\ndata: [DONE]\n\n"),
    ]
    .concat()
}

/// The model behind the OpenAI upstream: with the note's text in a tool result, the
/// answer; offered Claude Code's `Read`, a call to it on `note`; otherwise a short text.
fn model(note: String) -> impl Fn(&Value) -> ResponseTemplate + Send + Sync + 'static {
    move |body: &Value| {
        let stream = body["stream"] == true;
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let read = messages
            .iter()
            .any(|m| m["role"] == "tool" && m["content"].to_string().contains(NOTE));
        let offered = body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "Read"));
        let text = match (read, offered) {
            (true, _) => ANSWER,
            (false, true) if stream => return ok_stream(read_call_stream(&note)),
            (false, true) => {
                let mut call = completion("");
                call["choices"][0]["message"] = json!({"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_read1", "type": "function", "function":
                        {"name": "Read", "arguments": json!({"file_path": note}).to_string()}}]});
                call["choices"][0]["finish_reason"] = json!("tool_calls");
                return ResponseTemplate::new(200).set_body_json(call);
            }
            (false, false) => "OK.",
        };
        if stream {
            ok_stream(sse(&[text], true))
        } else {
            ok_completion(text)
        }
    }
}

async fn openai(note: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(StrictOpenAi(model(note)))
        .mount(&server)
        .await;
    server
}

/// The Chat Completions bodies `server` received.
async fn bodies(server: &MockServer) -> Vec<Value> {
    (calls(server).await.iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn claude_code_fails_over_from_anthropic_to_openai_on_an_untuned_route() {
    let binary = claude_binary();
    let scratch = Scratch::new("e2e", "claude-code");
    let work = scratch.file("work");
    std::fs::create_dir_all(&work).unwrap();
    let note = work.join("note.txt");
    std::fs::write(&note, format!("{NOTE}\n")).unwrap();
    let note = note.to_string_lossy().into_owned();
    let down = claude(ResponseTemplate::new(529)).await;
    let gpt = openai(note.clone()).await;
    let log = scratch.file("requests.jsonl");
    let home = scratch.file("home");
    std::fs::create_dir_all(&home).unwrap();
    // the routes as a new user writes them: providers, nothing else
    let config = format!(
        "[server]\nrequest_log = {log:?}\n\n{}{}{}{}{}",
        anthropic_provider("claude", &down.uri()),
        openai_provider("gpt", &gpt.uri(), ""),
        route("claude-sonnet-5", &["claude", "gpt"], ""),
        route("claude-haiku-4-5-20251001", &["claude", "gpt"], ""),
        client_key("claude-code", TOKEN),
    );
    let server = Server::start(scratch, &config, &key_env());

    let mut cmd = Command::new(binary);
    for var in
        PROXY_ENV
            .iter()
            .chain(&["ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", "CLAUDE_CONFIG_DIR"])
    {
        cmd.env_remove(var);
    }
    cmd.current_dir(&work)
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", &server.base)
        .env("ANTHROPIC_AUTH_TOKEN", TOKEN)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // the model capability Anthropic serves a signed-in account (offline, Claude Code
        // cannot fetch it): with it, the session's first request carries the per-turn beta
        // and a system turn with output_config, as it does against Anthropic
        .env(
            "CLAUDE_CODE_MODEL_CAPABILITIES",
            "claude-sonnet-5=per_turn_effort",
        )
        .args([
            "-p",
            "Read note.txt in this directory and tell me what it says.",
            "--model",
            "claude-sonnet-5",
            "--allowedTools",
            "Read",
        ])
        .stdin(std::process::Stdio::null());
    let out = run_bounded(cmd, Duration::from_secs(240));
    assert!(
        out.status.success(),
        "claude -p failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("PAPAYA"),
        "{stdout}\n--- server\n{}",
        server.output()
    );

    // Claude Code's first request, as Anthropic got it: the per-turn beta, and a system
    // turn carrying output_config (the shape the dialect used to refuse)
    let first = &down.received_requests().await.unwrap()[0];
    let betas = first.headers["anthropic-beta"].to_str().unwrap().to_owned();
    assert!(betas.contains("per-turn-control-2026-07-01"), "{betas}");
    let first: Value = serde_json::from_slice(&first.body).unwrap();
    let turn = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "system")
        .unwrap_or_else(|| panic!("no system turn in {}", first["messages"]));
    assert!(turn["output_config"]["effort"].is_string(), "{turn}");

    // every Messages request was accepted (none a 400 that would make Claude Code turn a
    // beta off) and answered by OpenAI after Anthropic's 529
    let lines: Vec<Value> = lines_of(&log)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<&Value> = lines.iter().filter(|l| l["api"] == "messages").collect();
    assert!(messages.len() >= 2, "a tool round trip: {lines:?}");
    for line in &messages {
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(line["provider"], "gpt", "{line}");
        assert_eq!(line["failed_over"], true, "{line}");
        assert_eq!(line["key"], "claude-code", "{line}");
    }
    assert!(messages.iter().any(|l| l["stream"] == true), "{lines:?}");

    // what reached OpenAI: only OpenAI's fields (the mock refuses any other: none was
    // refused), the system turn's text in place, the tool round trip
    let asked = bodies(&gpt).await;
    for body in &asked {
        assert_eq!(crate::upstream::openai_refuses(body), None, "{body}");
        assert_eq!(body["model"], "gpt-4o-mini");
        assert!(body.get("reasoning_effort").is_none(), "{body}");
    }
    let start = &asked[0];
    assert!(
        start["tools"].as_array().is_some_and(|t| t.len() > 5),
        "{}",
        start["tools"]
    );
    let roles: Vec<&str> = start["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    let user = roles.iter().position(|r| *r == "user").unwrap();
    assert!(
        roles[user..].contains(&"system"),
        "the system turn after the user turn stays in place: {roles:?}"
    );
    let returned = asked.iter().any(|b| {
        b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool" && m["content"].to_string().contains(NOTE))
    });
    assert!(returned, "Claude Code ran Read and sent its result back");
}
