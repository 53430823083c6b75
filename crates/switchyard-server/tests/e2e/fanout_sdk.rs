//! `n=2` from the official `openai` Python SDK on a route `[openai (down), anthropic]` with
//! no field settings (issue 23): OpenAI answers 500, the proxy fails over to Anthropic,
//! which has no `n`, and Anthropic answers twice — one call per answer — plain and
//! streamed. The Anthropic mock refuses any field Messages does not define (`n` first) with
//! Anthropic's 400 `<field>: Extra inputs are not permitted`, so a leaked field fails the
//! test. The client-side checks live in `tests/python/test_fanout_sdk.py`; this test
//! stands up the mocks and the proxy and checks what each upstream received. Needs the SDK
//! in `$SWITCHYARD_PYTHON` (fails with the install command, never skips).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{
    describe, key_env, openai_provider, python, route, run_bounded, try_run_bounded, Scratch,
    Server, CHAT_PATH, KEY_ENV,
};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_fanout_sdk.py"
);
/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-fanout-sdk-token-5c02e1";
const CLAUDE: &str = "claude-sonnet-4-5";

/// The top-level fields of Anthropic's Messages API (its reference); any other is refused.
const MESSAGES_FIELDS: [&str; 14] = [
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
];

/// Anthropic's Messages API: "Red." then "Blue." (alternating by call), 7 input and 2
/// output tokens a call, plain or streamed; a field it does not define is a 400.
#[derive(Default)]
struct Claude {
    calls: AtomicUsize,
}

impl Claude {
    fn events(text: &str) -> String {
        let events = [
            json!({"type": "message_start", "message": {"id": "msg_fan", "type": "message",
                "role": "assistant", "model": CLAUDE, "content": [], "stop_reason": null,
                "usage": {"input_tokens": 7, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                "stop_sequence": null}, "usage": {"output_tokens": 2}}),
            json!({"type": "message_stop"}),
        ];
        (events.iter())
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect()
    }
}

impl Respond for Claude {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let fields = body
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>());
        if let Some(extra) = (fields.unwrap_or_default().into_iter())
            .find(|k| !MESSAGES_FIELDS.contains(&k.as_str()))
        {
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error",
                "error": {"type": "invalid_request_error",
                          "message": format!("{extra}: Extra inputs are not permitted")}}));
        }
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let text = if n % 2 == 0 { "Red." } else { "Blue." };
        if body["stream"] == true {
            return ResponseTemplate::new(200)
                .set_body_raw(Self::events(text), "text/event-stream");
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_fan", "type": "message", "role": "assistant", "model": CLAUDE,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": null, "usage": {"input_tokens": 7, "output_tokens": 2}}))
    }
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    (server.received_requests().await.unwrap_or_default().iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn openai_sdk_n_2_fails_over_to_anthropic_answering_once_per_call() {
    let mut probe = python();
    probe.args(["-c", "import openai; print(openai.__version__)"]);
    if let Err(why) = match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(describe(&out)),
        Err(e) => Err(format!("cannot run the interpreter: {e}")),
    } {
        panic!(
            "this test needs the official `openai` package in $SWITCHYARD_PYTHON.\n\
             Install it: python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt\n{why}"
        );
    }
    let openai = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({"error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error", "param": null, "code": null}})))
        .mount(&openai)
        .await;
    let anthropic = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Claude::default())
        .mount(&anthropic)
        .await;
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let config = format!(
        "{}[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nmodel = \"{CLAUDE}\"\n\
         api_key_env = \"{KEY_ENV}\"\nbase_url = \"{}\"\n\n{}\
         [[keys]]\nname = \"python\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
        openai_provider("gpt", &openai.uri(), ""),
        anthropic.uri(),
        route("fanout", &["gpt", "claude"], ""),
    );
    let server = Server::start(Scratch::new("e2e", "fanout-sdk"), &config, &key_env());
    let mut script = python();
    script.args([SCRIPT, &format!("{}/v1", server.base), TOKEN]);
    let out = run_bounded(script, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "the fan-out SDK script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all fan-out SDK checks passed"), "{stdout}");

    // OpenAI was asked for both answers at once (it takes `n`), and failed
    let asked = bodies(&openai).await;
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|b| b["n"] == 2), "{asked:?}");
    // Anthropic: one call per answer, none carrying `n`; two plain, two streamed
    let asked = bodies(&anthropic).await;
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked.iter().all(|b| b.get("n").is_none()), "{asked:?}");
    let streamed = asked.iter().filter(|b| b["stream"] == true).count();
    assert_eq!(streamed, 2, "{asked:?}");
}
