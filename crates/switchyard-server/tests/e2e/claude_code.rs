//! Real Claude Code (npm `@anthropic-ai/claude-code`, `claude -p`), unchanged, through the
//! Messages dialect while its own vendor is down: it streams to `/v1/messages?beta=true`
//! with its betas, adaptive thinking, effort, context management and cached system blocks,
//! and the answer comes from an OpenAI upstream. Offline: every request goes to loopback.
//! The binary is `$SWITCHYARD_CLAUDE` (`scripts/test` installs it from `tests/agents/`);
//! without it the test fails with the install command — never skips.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::ResponseTemplate;

use crate::anthropic_sdk::{anthropic_provider, claude, gpt};
use crate::support::{
    describe, key_env, lines_of, openai_provider, route, run_bounded, Scratch, Server, PROXY_ENV,
};

/// The client token Claude Code sends (`ANTHROPIC_AUTH_TOKEN`, as a bearer token).
const TOKEN: &str = "sy-e2e-claude-code-token-3f0a6d21";

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

#[tokio::test]
async fn claude_code_fails_over_from_anthropic_to_openai() {
    let binary = claude_binary();
    let down = claude(ResponseTemplate::new(529)).await;
    let openai = gpt().await;
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let scratch = Scratch::new("e2e", "claude-code");
    let log = scratch.file("requests.jsonl");
    let home = scratch.file("home");
    std::fs::create_dir_all(&home).unwrap();
    // Claude Code asks for thinking on every request, and the OpenAI upstream's
    // gpt-4o-mini does not reason (the price table says so): the route drops what the
    // model cannot honour, so it answers without the thinking (docs/fields.md)
    let retry = "retry = { max_attempts = 1 }\nunsupported_fields = \"drop\"";
    let config = format!(
        "[server]\nrequest_log = {log:?}\n\n{}{}{}{}[[keys]]\nname = \"claude-code\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
        anthropic_provider("claude", &down.uri()),
        openai_provider("gpt", &openai.uri(), ""),
        route("claude-sonnet-5", &["claude", "gpt"], retry),
        route("claude-haiku-4-5-20251001", &["claude", "gpt"], retry),
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
    cmd.env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", &server.base)
        .env("ANTHROPIC_AUTH_TOKEN", TOKEN)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args([
            "-p",
            "What is the capital of France?",
            "--model",
            "claude-sonnet-5",
        ])
        .stdin(std::process::Stdio::null());
    let out = run_bounded(cmd, Duration::from_secs(180));
    assert!(
        out.status.success(),
        "claude -p failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("The capital of France is Paris."),
        "{stdout}\n--- server\n{}",
        server.output()
    );

    // Claude Code spoke Messages, streamed, and the OpenAI upstream answered.
    let lines: Vec<Value> = lines_of(&log)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answered: Vec<&Value> = lines
        .iter()
        .filter(|l| l["api"] == "messages" && l["status"] == 200)
        .collect();
    assert!(!answered.is_empty(), "{lines:?}");
    for line in &answered {
        assert_eq!(line["provider"], "gpt", "{line}");
        assert_eq!(line["failed_over"], true, "{line}");
        assert_eq!(line["key"], "claude-code", "{line}");
    }
    assert!(answered.iter().any(|l| l["stream"] == true), "{lines:?}");
    // what reached OpenAI: Claude Code's system blocks and tools, in OpenAI's shape
    let first: Value = openai.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(first["model"], "gpt-4o-mini");
    assert!(first.get("reasoning_effort").is_none(), "{first}");
    assert!(
        first["tools"].as_array().is_some_and(|t| t.len() > 5),
        "{}",
        json!(first["tools"])
    );
    assert_eq!(first["messages"][0]["role"], "system");
}
