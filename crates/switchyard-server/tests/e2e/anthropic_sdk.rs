//! The official `anthropic` Python SDK, unchanged, against the proxy's Messages dialect,
//! every call failing over from broken Anthropic upstreams to an OpenAI one: `create`,
//! `stream` (`text_stream`, `get_final_message`), a tool-use loop with `tool_result`,
//! Claude Code's request shape (betas, adaptive thinking, effort, context management, a
//! system turn) streamed, `count_tokens` (failing over between Anthropic providers; a route
//! without one is a 400), and the SDK's typed exceptions for our errors. The checks live in
//! `tests/python/test_anthropic_sdk.py`; this test stands up the mock upstreams and the
//! proxy and runs it with `$SWITCHYARD_PYTHON`. Without the SDK it fails with the install
//! command — never skips.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    describe, key_env, openai_provider, python, route, run_bounded, try_run_bounded, Scratch,
    Server, CHAT_PATH, KEY_ENV, UPSTREAM_KEY,
};
use crate::upstream::{completion, ok_completion, ok_stream, sse};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_anthropic_sdk.py"
);
const REQUIREMENTS: &str = "tests/python/requirements.txt";
/// The client token the script authenticates with (as `x-api-key`).
const TOKEN: &str = "sy-e2e-anthropic-sdk-token-7c1e9a44";
/// The model id the Anthropic providers are configured with.
const CLAUDE_MODEL: &str = "claude-sonnet-5-20260101";

pub fn anthropic_provider(name: &str, uri: &str) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"anthropic\"\nmodel = \"{CLAUDE_MODEL}\"\napi_key_env = \"{KEY_ENV}\"\nbase_url = \"{uri}\"\n\n"
    )
}

/// An Anthropic upstream whose Messages calls are overloaded (529) and whose token count
/// answers `count`.
pub async fn claude(count: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(529).set_body_json(json!({
            "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages/count_tokens"))
        .respond_with(count)
        .mount(&server)
        .await;
    server
}

/// The OpenAI upstream that answers everything: a tool result gets the weather, a request
/// offering `get_weather` gets a call to it, a stream gets a streamed answer, anything
/// else "Paris".
pub async fn gpt() -> MockServer {
    let server = MockServer::start().await;
    let call = json!({"role": "assistant", "content": null, "tool_calls": [{
        "id": "call_w1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]});
    let mut tool_call = completion("");
    tool_call["choices"][0]["message"] = call;
    tool_call["choices"][0]["finish_reason"] = json!("tool_calls");
    let mocks = [
        ("\"role\":\"tool\"", ok_completion("It is sunny in Paris.")),
        (
            "get_weather",
            ResponseTemplate::new(200).set_body_json(tool_call),
        ),
        (
            "\"stream\":true",
            ok_stream(sse(&["The capital ", "of France ", "is Paris."], true)),
        ),
        ("", ok_completion("Paris")),
    ];
    for (priority, (needle, response)) in (1u8..).zip(mocks) {
        Mock::given(method("POST"))
            .and(path(CHAT_PATH))
            .and(body_string_contains(needle))
            .respond_with(response)
            .with_priority(priority)
            .mount(&server)
            .await;
    }
    server
}

fn sdk_available() -> Result<(), String> {
    let mut probe = python();
    probe.args(["-c", "import anthropic; print(anthropic.__version__)"]);
    match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(describe(&out)),
        Err(e) => Err(format!("cannot run the interpreter: {e}")),
    }
}

#[tokio::test]
async fn anthropic_python_sdk_fails_over_to_openai_through_the_messages_dialect() {
    if let Err(why) = sdk_available() {
        panic!(
            "this test needs the official `anthropic` package in $SWITCHYARD_PYTHON (default python3).\n\
             Install it: python3 -m venv .venv && .venv/bin/pip install -r {REQUIREMENTS}\n\
             then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{why}"
        );
    }
    let broken = claude(ResponseTemplate::new(500).set_body_json(json!({
        "type": "error", "error": {"type": "api_error", "message": "Internal server error"}})))
    .await;
    let counting =
        claude(ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 42}))).await;
    let openai = gpt().await;
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    // no field settings: gpt-4o-mini does not reason (the price table says so), and a
    // route's default degrades the thinking a Claude-shaped request asks for, so it
    // answers without it (docs/fields.md)
    let retry = "retry = { max_attempts = 1 }";
    let config = format!(
        "{}{}{}{}{}[[keys]]\nname = \"sdk\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
        anthropic_provider("claude-broken", &broken.uri()),
        anthropic_provider("claude-counting", &counting.uri()),
        openai_provider("gpt", &openai.uri(), ""),
        route(
            "claude-sonnet-5",
            &["claude-broken", "claude-counting", "gpt"],
            retry
        ),
        route("gpt-only", &["gpt"], retry),
    );
    let server = Server::start(Scratch::new("e2e", "anthropic-sdk"), &config, &key_env());
    let mut script = python();
    script.args([SCRIPT, &server.base, TOKEN]);
    let out = run_bounded(script, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "the anthropic SDK script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("all anthropic SDK checks passed"),
        "{stdout}"
    );

    // The Anthropic upstreams were called as Anthropic: their key, their model, the betas.
    let counted: Vec<_> = counting
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.url.path() == "/v1/messages/count_tokens")
        .collect();
    assert_eq!(counted.len(), 1, "one count reached the counting provider");
    let r = &counted[0];
    assert_eq!(r.headers.get("x-api-key").unwrap(), UPSTREAM_KEY);
    assert_eq!(r.headers.get("anthropic-version").unwrap(), "2023-06-01");
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["model"], CLAUDE_MODEL, "{body}");
    assert_eq!(body["messages"][0]["content"], "How many tokens is this?");
    // The OpenAI upstream got OpenAI requests with its own model.
    let asked: Vec<Value> = openai
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert!(asked.len() >= 5, "{}", asked.len());
    assert!(asked.iter().all(|b| b["model"] == "gpt-4o-mini"));
    assert!(asked.iter().all(|b| b.get("reasoning_effort").is_none()));
}
