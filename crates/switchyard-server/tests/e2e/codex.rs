//! The real Codex CLI (npm `@openai/codex`, `codex exec`), unchanged, through the Responses
//! dialect while its own vendor is down: it streams to `/v1/responses` with `store: false`,
//! `reasoning.summary`, `include: ["reasoning.encrypted_content"]`, `prompt_cache_key`,
//! `client_metadata`, `developer` input items with ids and its function tools, and the
//! answer comes from an Anthropic upstream (Codex configured with function tools only: its
//! built-in `web_search` is refused by name on a route without a provider that takes
//! Responses requests natively). With `web_search` on, a route of OpenAI providers with
//! `api = "responses"` gets Codex's body as written, after failing over from a broken one.
//! Offline: every request goes to loopback.
//! The binary is `$SWITCHYARD_CODEX` (`scripts/test` installs it from `tests/agents/`);
//! without it the test fails with the install command — never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::anthropic_sdk::anthropic_provider;
use crate::support::{
    client_key, describe, key_env, lines_of, openai_provider, route, run_bounded, Scratch, Server,
    PROXY_ENV,
};
use crate::upstream::ok_stream;

/// The client token Codex sends (from the env var its provider entry names).
const TOKEN: &str = "sy-e2e-codex-token-8c41e2b7";
/// What the Anthropic upstream says; Codex must print it.
const ANSWER: &str = "Hello from the fallback vendor.";
/// The route Codex asks for.
const MODEL: &str = "gpt-5.1-codex";

fn codex_binary() -> PathBuf {
    let found = std::env::var_os("SWITCHYARD_CODEX").map(PathBuf::from);
    match found {
        Some(path) if path.is_file() => path,
        other => panic!(
            "this test needs the Codex CLI: npm install --prefix tests/agents \
             (or run scripts/test), then SWITCHYARD_CODEX=$PWD/tests/agents/node_modules/.bin/codex \
             (got {other:?})"
        ),
    }
}

/// Anthropic's event stream saying `text`.
fn anthropic_stream(text: &str) -> String {
    let events: [(&str, Value); 6] = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_e2e_codex", "type": "message",
                "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 40, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                "stop_sequence": null}, "usage": {"output_tokens": 9}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

async fn mock(at: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

/// `codex exec "Say hello."` against `server` with its home under `home`; `settings` are
/// more top-level lines of its `config.toml`.
fn codex_exec(binary: &PathBuf, server: &Server, home: &Path, settings: &str) -> Output {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"{MODEL}\"\nmodel_provider = \"switchyard\"\n{settings}\n\
             [features]\nmulti_agent = false\n\n\
             [model_providers.switchyard]\nname = \"switchyard\"\nbase_url = \"{}/v1\"\n\
             env_key = \"SWITCHYARD_E2E_CODEX_KEY\"\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n",
            server.base
        ),
    )
    .unwrap();
    let mut cmd = Command::new(binary);
    for var in PROXY_ENV
        .iter()
        .chain(&["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"])
    {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home)
        .env("CODEX_HOME", &codex_home)
        .env("SWITCHYARD_E2E_CODEX_KEY", TOKEN)
        .current_dir(home)
        .args(["exec", "--skip-git-repo-check", "Say hello."])
        .stdin(std::process::Stdio::null());
    run_bounded(cmd, Duration::from_secs(180))
}

#[tokio::test]
async fn codex_fails_over_from_openai_to_anthropic() {
    let binary = codex_binary();
    let down = mock(
        "/v1/chat/completions",
        ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded",
            "type": "server_error", "param": null, "code": null}})),
    )
    .await;
    let anthropic = mock("/v1/messages", ok_stream(anthropic_stream(ANSWER))).await;
    let scratch = Scratch::new("e2e", "codex");
    let log = scratch.file("requests.jsonl");
    let home = scratch.file("home");
    let config = format!(
        "[server]\nrequest_log = {log:?}\n\n{}{}{}{}",
        openai_provider("gpt", &down.uri(), ""),
        anthropic_provider("claude", &anthropic.uri()),
        route(MODEL, &["gpt", "claude"], "retry = { max_attempts = 1 }"),
        client_key("codex", TOKEN),
    );
    let server = Server::start(scratch, &config, &key_env());
    let out = codex_exec(&binary, &server, &home, "web_search = \"disabled\"\n");
    assert!(
        out.status.success(),
        "codex exec failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(ANSWER),
        "{}\n--- server\n{}",
        describe(&out),
        server.output()
    );

    // Codex spoke Responses, streamed, and the Anthropic upstream answered.
    let lines: Vec<Value> = lines_of(&log)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answered: Vec<&Value> = lines
        .iter()
        .filter(|l| l["api"] == "responses" && l["status"] == 200)
        .collect();
    assert!(!answered.is_empty(), "{lines:?}");
    for line in &answered {
        assert_eq!(line["provider"], "claude", "{line}");
        assert_eq!(line["failed_over"], true, "{line}");
        assert_eq!(line["stream"], true, "{line}");
    }
    // what reached Anthropic: Codex's developer instructions as the system prompt, its tools
    let first: Value = anthropic.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert!(
        first["system"].is_string() || first["system"].is_array(),
        "{first}"
    );
    assert!(
        first["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{}",
        json!(first["tools"])
    );
}

/// The Responses event stream of an OpenAI provider saying `text`.
fn responses_stream(text: &str) -> String {
    let message = |status: &str, content: Value| {
        json!({"type": "message", "id": "msg_e2e_codex", "role": "assistant", "status": status,
            "content": content})
    };
    let done = message(
        "completed",
        json!([{"type": "output_text", "text": text, "annotations": []}]),
    );
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_e2e", "object": "response",
            "status": "in_progress", "model": "gpt-5.1-codex", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": message("in_progress", json!([]))}),
        json!({"type": "response.output_text.delta", "output_index": 0,
            "item_id": "msg_e2e_codex", "content_index": 0, "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
        json!({"type": "response.completed", "response": {"id": "resp_e2e", "object": "response",
            "status": "completed", "model": "gpt-5.1-codex", "output": [done],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}}}),
    ];
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut e = e.clone();
            e["sequence_number"] = json!(i);
            format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())
        })
        .collect()
}

/// Codex with its default built-in `web_search` on: the route's providers speak the
/// Responses API upstream (`api = "responses"`), so its request passes through as written
/// after the first one fails over.
#[tokio::test]
async fn codex_with_built_in_tools_goes_natively_to_responses_providers() {
    let binary = codex_binary();
    let down = mock(
        "/v1/responses",
        ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded",
            "type": "server_error", "param": null, "code": null}})),
    )
    .await;
    let up = mock("/v1/responses", ok_stream(responses_stream(ANSWER))).await;
    let scratch = Scratch::new("e2e", "codex-native");
    let log = scratch.file("requests.jsonl");
    let home = scratch.file("home");
    let config = format!(
        "[server]\nrequest_log = {log:?}\n\n{}{}{}{}",
        openai_provider("codex-down", &down.uri(), "api = \"responses\""),
        openai_provider("codex", &up.uri(), "api = \"responses\""),
        route(
            MODEL,
            &["codex-down", "codex"],
            "retry = { max_attempts = 1 }"
        ),
        client_key("codex", TOKEN),
    );
    let server = Server::start(scratch, &config, &key_env());
    let out = codex_exec(&binary, &server, &home, "");
    assert!(
        out.status.success(),
        "codex exec failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(ANSWER),
        "{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let answered: Vec<Value> = lines_of(&log)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["api"] == "responses" && l["status"] == 200)
        .collect();
    assert!(!answered.is_empty());
    for line in &answered {
        assert_eq!(line["provider"], "codex", "{line}");
        assert_eq!(line["failed_over"], true, "{line}");
    }
    // what reached the vendor: Codex's own body, its built-in web_search among its tools
    let first: Value = up.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    let tools = first["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["type"] == "web_search"),
        "{}",
        json!(tools)
    );
    assert_eq!(first["model"], "gpt-4o-mini", "the provider's model");
    assert!(first["include"].is_array(), "{first}");
}
