//! Failover on default settings with the official `openai` Python SDK (issue 23): routes
//! with no field settings, `[openai (answering 500), anthropic]` and `[anthropic, openai]`.
//! `seed` and the penalties are answered by Anthropic without them (named as dropped);
//! `logprobs` is an error naming the skipped Anthropic provider and the field;
//! `reasoning_effort: "low"` with `max_tokens: 64` is answered by Anthropic without
//! thinking. The mock Anthropic refuses what Anthropic refuses (a top-level field its
//! Messages reference does not define: `seed: Extra inputs are not permitted`; a thinking
//! budget under 1024 or not below `max_tokens`), so a leaked field fails the test. The
//! client-side checks live in `tests/python/test_degrade_sdk.py`.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{
    describe, key_env, openai_provider, python, route, run_bounded, try_run_bounded, Scratch,
    Server, CHAT_PATH, KEY_ENV,
};
use crate::upstream::error_response;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_degrade_sdk.py"
);
const REQUIREMENTS: &str = "tests/python/requirements.txt";
/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-degrade-token-8c41f0a2";
const CLAUDE: &str = "claude-sonnet-4-5-20250929";

/// The top-level fields of Anthropic's Messages request reference.
const MESSAGES_FIELDS: [&str; 18] = [
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
    "container",
    "mcp_servers",
    "context_management",
];

/// A mock Anthropic that checks what Anthropic checks of these requests, answering
/// "Paris." when they pass and Anthropic's 400 when they do not.
struct StrictAnthropic;

impl StrictAnthropic {
    /// Anthropic's complaint about `body`, if it has one.
    fn refusal(body: &Value) -> Option<String> {
        let fields = body.as_object()?;
        if let Some(extra) = fields
            .keys()
            .find(|k| !MESSAGES_FIELDS.contains(&k.as_str()))
        {
            return Some(format!("{extra}: Extra inputs are not permitted"));
        }
        let thinking = body.get("thinking")?;
        if thinking["type"] != "enabled" {
            return None;
        }
        let budget = thinking["budget_tokens"].as_u64().unwrap_or(0);
        if budget < 1024 {
            return Some(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            );
        }
        let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
        (max_tokens <= budget)
            .then(|| "`max_tokens` must be greater than `thinking.budget_tokens`".into())
    }
}

impl Respond for StrictAnthropic {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if let Some(message) = Self::refusal(&body) {
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error",
                "error": {"type": "invalid_request_error", "message": message}}));
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_degrade", "type": "message", "role": "assistant", "model": CLAUDE,
            "content": [{"type": "text", "text": "Paris."}], "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 3,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}))
    }
}

fn sdk_available() -> Result<(), String> {
    let mut probe = python();
    probe.args(["-c", "import openai"]);
    match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(describe(&out)),
        Err(e) => Err(format!("cannot run the interpreter: {e}")),
    }
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap_or_default();
    (requests.iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[test]
fn the_strict_mock_refuses_what_anthropic_refuses() {
    let ok = json!({"model": "m", "max_tokens": 64, "messages": []});
    assert_eq!(StrictAnthropic::refusal(&ok), None);
    let seed = json!({"model": "m", "max_tokens": 64, "messages": [], "seed": 7});
    assert_eq!(
        StrictAnthropic::refusal(&seed).as_deref(),
        Some("seed: Extra inputs are not permitted")
    );
    let thinking = |budget: u64| {
        json!({"model": "m", "max_tokens": 64, "messages": [],
               "thinking": {"type": "enabled", "budget_tokens": budget}})
    };
    assert!(StrictAnthropic::refusal(&thinking(63)).is_some());
    assert!(StrictAnthropic::refusal(&thinking(1024)).is_some());
}

#[tokio::test]
async fn default_routes_fail_over_past_fields_anthropic_cannot_honour() {
    if let Err(why) = sdk_available() {
        panic!(
            "this test needs the official `openai` package in $SWITCHYARD_PYTHON (default \
             python3).\nInstall it: python3 -m venv .venv && .venv/bin/pip install -r \
             {REQUIREMENTS}\nthen run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{why}"
        );
    }
    let gpt = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(error_response(
            500,
            "The server had an error",
            "server_error",
            None,
        ))
        .mount(&gpt)
        .await;
    let claude = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(StrictAnthropic)
        .mount(&claude)
        .await;
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let anthropic = format!(
        "[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nmodel = \"{CLAUDE}\"\n\
         api_key_env = \"{KEY_ENV}\"\nbase_url = \"{}\"\n\n",
        claude.uri()
    );
    let config = format!(
        "{}{anthropic}{}{}[[keys]]\nname = \"sdk\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
        openai_provider("openai-down", &gpt.uri(), ""),
        route("failover", &["openai-down", "claude"], ""),
        route("claude-first", &["claude", "openai-down"], ""),
    );
    let server = Server::start(Scratch::new("e2e", "degrade"), &config, &key_env());
    let mut script = python();
    script.args([SCRIPT, &format!("{}/v1", server.base), TOKEN]);
    let out = run_bounded(script, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "the degrade script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all degrade checks passed"), "{stdout}");

    // Anthropic answered seed, the penalties and the thinking request, each without what
    // it cannot take; it was never asked for log probabilities
    let got = bodies(&claude).await;
    assert_eq!(got.len(), 3, "{got:?}");
    for body in &got {
        assert_eq!(StrictAnthropic::refusal(body), None, "{body}");
        for field in [
            "seed",
            "frequency_penalty",
            "presence_penalty",
            "logprobs",
            "thinking",
        ] {
            assert!(body.get(field).is_none(), "{field} leaked: {body}");
        }
    }
    assert_eq!(got[2]["max_tokens"], 64);
    assert!(!bodies(&gpt).await.is_empty(), "OpenAI was tried first");
}
