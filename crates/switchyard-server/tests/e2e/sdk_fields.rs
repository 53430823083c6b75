//! Every request field of the official SDKs, end to end (issue 15): the `anthropic` SDK's
//! Messages call with every field it takes reaches a mock Anthropic natively (system,
//! block, tool and top-level `cache_control` with its `ttl`, `thinking`, `tool_choice` with
//! `disable_parallel_tool_use`, `metadata.user_id`, stop sequences, `service_tier`,
//! `output_config`, `inference_geo`, `speed`, `diagnostics`, the `anthropic-beta` header,
//! and `temperature`, `top_k`, `top_p` through `extra_body`: this SDK's `create` no longer
//! lists them); the beta client's SDK 2.15 fields (issue 23: a system turn inside `messages`
//! with `clear_at`, `output_config` and tool changes; `task_budget`, `billing_policy`,
//! `fallbacks`, `fallback_credit_token`) reach Anthropic as written and an OpenAI mock that
//! refuses what OpenAI refuses through the shared shape, `compaction` only where Anthropic
//! can answer; the `openai` SDK's Chat Completions call
//! with every field reaches a mock OpenAI (and its content-part `cache_control`, advisory
//! there, does not, named in `x-switchyard-ignored`); and the `openai` SDK's `parse` with a
//! pydantic model, plain and streamed, reaches an Anthropic model without structured
//! outputs as a forced tool with the cached system block, its JSON read back as content.
//! The client-side checks live in `tests/python/test_sdk_fields.py`; this test stands up
//! the mocks and the proxy, runs it with `$SWITCHYARD_PYTHON`, and checks each mock's
//! bodies. Without the SDKs it fails with the install command — never skips.

use serde_json::{json, Value};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support::{
    anthropic_provider, client_key, key_env, openai_provider, require_python, route, run_python,
    Scratch, Server, CHAT_PATH, KEY_ENV, UPSTREAM_KEY,
};
use crate::upstream::{completion, ok_completion, openai_refuses, StrictOpenAi};

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-sdk-fields-token-3e9d51a7";
/// A model with structured outputs.
const CLAUDE: &str = "claude-sonnet-5-20260101";
/// A model without them: JSON goes through a forced tool.
const CLAUDE_OLD: &str = "claude-sonnet-4-20250514";

/// An OpenAI provider serving a reasoning model (gpt-5-mini).
fn reasoning_openai_provider(name: &str, uri: &str) -> String {
    format!(
        "[[providers]]\nname = \"{name}\"\nkind = \"openai\"\nmodel = \"gpt-5-mini\"\napi_key_env = \"{KEY_ENV}\"\nbase_url = \"{uri}/v1\"\n\n"
    )
}

fn claude_message(model: &str, content: Value, stop: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_e2e1", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 9,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1200}}))
}

/// The Anthropic upstream of `claude-fields`: a thinking block, then "Sunny."
async fn claude_fields() -> MockServer {
    let server = MockServer::start().await;
    let content = json!([
        {"type": "thinking", "thinking": "Paris is usually mild.", "signature": "sig-e2e"},
        {"type": "text", "text": "Sunny."}]);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(claude_message(CLAUDE, content, "end_turn"))
        .mount(&server)
        .await;
    server
}

/// The Anthropic upstream of `claude-json`: the forced tool `Place` called with Paris,
/// plain or streamed in several input deltas.
async fn claude_json() -> MockServer {
    let server = MockServer::start().await;
    let deltas = ["{\"ci", "ty\": \"Pa", "ris\"}"];
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_e2e2", "type": "message",
            "role": "assistant", "model": CLAUDE_OLD, "content": [], "stop_reason": null,
            "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block":
            {"type": "tool_use", "id": "toolu_e2e", "name": "Place", "input": {}}}),
    ];
    events.extend(deltas.iter().map(|d| {
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": d}})
    }));
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use",
            "stop_sequence": null}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]);
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_string_contains("\"stream\":true"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(sse),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    let called = json!([{"type": "tool_use", "id": "toolu_e2e", "name": "Place",
                         "input": {"city": "Paris"}}]);
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(claude_message(CLAUDE_OLD, called, "tool_use"))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// The OpenAI upstream of `gpt-fields`: two JSON answers with log probabilities.
async fn gpt_fields() -> MockServer {
    let server = MockServer::start().await;
    let mut answer = completion("{\"city\":\"Paris\"}");
    answer["choices"][0]["logprobs"] = json!({"content": [{"token": "{\"", "logprob": -0.01,
        "bytes": [123, 34], "top_logprobs": [
            {"token": "{\"", "logprob": -0.01, "bytes": null},
            {"token": "{", "logprob": -5.2, "bytes": null}]}]});
    let mut second = answer["choices"][0].clone();
    second["index"] = json!(1);
    second["message"]["content"] = json!("{\"city\":\"Lyon\"}");
    answer["choices"].as_array_mut().unwrap().push(second);
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    server
}

/// The OpenAI upstream of `claude-beta-gpt` (a reasoning model): it refuses what OpenAI
/// refuses, and answers "Sunny."
async fn gpt_strict() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(StrictOpenAi(|_: &Value| ok_completion("Sunny.")))
        .mount(&server)
        .await;
    server
}

async fn bodies(server: &MockServer) -> Vec<(Request, Value)> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| {
            let body = serde_json::from_slice(&r.body).unwrap();
            (r, body)
        })
        .collect()
}

#[tokio::test]
async fn the_official_sdks_send_every_field_through_the_proxy() {
    require_python("anthropic, openai, pydantic");
    let (fields, json_out, gpt, strict) = (
        claude_fields().await,
        claude_json().await,
        gpt_fields().await,
        gpt_strict().await,
    );
    let config = format!(
        "{}{}{}{}{}{}{}{}{}",
        anthropic_provider("claude", CLAUDE, &fields.uri()),
        anthropic_provider("claude-old", CLAUDE_OLD, &json_out.uri()),
        // the mock stands in for a reasoning model (gpt-4o-mini is marked as not one)
        openai_provider("gpt", &gpt.uri(), "reasoning = true"),
        reasoning_openai_provider("gpt-strict", &strict.uri()),
        route("claude-fields", &["claude"], ""),
        route("claude-json", &["claude-old"], ""),
        route("gpt-fields", &["gpt"], ""),
        route("claude-beta-gpt", &["gpt-strict"], ""),
        client_key("sdk", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "sdk-fields"), &config, &key_env());
    run_python(
        "test_sdk_fields.py",
        &[&server.base, TOKEN],
        "all SDK field checks passed",
        &[&server],
    );

    // Anthropic got every Messages field as the SDK wrote it (the plain call, then the
    // beta client's).
    let got = bodies(&fields).await;
    assert_eq!(got.len(), 2, "{got:?}");
    beta_fields_reached_anthropic(&got[1]);
    let (request, body) = &got[0];
    assert_eq!(request.headers["x-api-key"], UPSTREAM_KEY);
    assert_eq!(
        request.headers["anthropic-beta"],
        "extended-cache-ttl-2025-04-11,fast-mode-2026-02-01"
    );
    assert_eq!(body["model"], CLAUDE, "{body}");
    assert_eq!(body["max_tokens"], 2048);
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a terse weather assistant.",
                "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    assert_eq!(body["metadata"], json!({"user_id": "user-42"}));
    assert_eq!(body["stop_sequences"], json!(["END"]));
    assert_eq!(
        (&body["temperature"], &body["top_k"], &body["top_p"]),
        (&json!(1.0), &json!(40), &json!(0.9))
    );
    assert_eq!(body["service_tier"], "standard_only");
    assert_eq!(body["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["output_config"], json!({"effort": "high"}));
    assert_eq!(
        (&body["inference_geo"], &body["speed"]),
        (&json!("us"), &json!("fast"))
    );
    assert_eq!(body["diagnostics"], json!({"previous_message_id": null}));

    // OpenAI got the beta request through the shared shape: nothing OpenAI refuses, the
    // system turn's text in place, its effort, the tool set after the tool changes
    let got = bodies(&strict).await;
    assert_eq!(got.len(), 1, "compaction never reached OpenAI: {got:?}");
    let body = &got[0].1;
    assert_eq!(openai_refuses(body), None, "{body}");
    assert_eq!(body["reasoning_effort"], "low", "{body}");
    assert_eq!(body["messages"][1]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "Answer in one word.");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["get_weather", "get_forecast"]);

    // OpenAI got every Chat Completions field; the advisory cache_control stayed behind.
    let got = bodies(&gpt).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let body = &got[0].1;
    for (field, value) in [
        ("seed", json!(7)),
        ("presence_penalty", json!(0.5)),
        ("frequency_penalty", json!(0.25)),
        ("logprobs", json!(true)),
        ("top_logprobs", json!(2)),
        ("n", json!(2)),
        ("parallel_tool_calls", json!(false)),
        ("reasoning_effort", json!("low")),
        ("service_tier", json!("flex")),
        ("metadata", json!({"team": "e2e"})),
        ("user", json!("user-42")),
        ("stop", json!(["END"])),
        ("max_completion_tokens", json!(300)),
        ("temperature", json!(0.2)),
        ("top_p", json!(0.9)),
    ] {
        assert_eq!(body[field], value, "{field}: {body}");
    }
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "answer");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(body["tools"][0]["function"]["name"], "noop");
    assert_eq!(body["messages"][0]["role"], "developer");
    assert_eq!(body["messages"][1]["role"], "system");
    assert!(!body.to_string().contains("cache_control"), "{body}");

    // Claude without structured outputs got a forced tool (never a prompt instruction),
    // with the cached system block, plain then streamed.
    let got = bodies(&json_out).await;
    assert_eq!(got.len(), 2, "{got:?}");
    for ((_, body), stream) in got.iter().zip([false, true]) {
        assert_eq!(body["model"], CLAUDE_OLD, "{body}");
        assert_eq!(body.get("stream").is_some(), stream, "{body}");
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You extract places.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
        );
        assert_eq!(body["tools"].as_array().unwrap().len(), 1, "{body}");
        assert_eq!(body["tools"][0]["name"], "Place");
        assert_eq!(
            body["tools"][0]["input_schema"]["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "Place", "disable_parallel_tool_use": true})
        );
        assert!(body.get("output_config").is_none(), "{body}");
    }
}

/// The beta client's request as Anthropic got it: its betas, the system turn with its
/// per-turn settings and tool changes, the new top-level fields.
fn beta_fields_reached_anthropic((request, body): &(Request, Value)) {
    let betas = request.headers["anthropic-beta"].to_str().unwrap();
    assert!(betas.contains("per-turn-control-2026-07-01"), "{betas}");
    let turn = &body["messages"][1];
    assert_eq!(turn["role"], "system", "{body}");
    assert_eq!(turn["clear_at"], "never");
    assert_eq!(turn["output_config"], json!({"effort": "low"}));
    assert_eq!(turn["content"][1]["type"], "tool_removal");
    assert_eq!(
        turn["content"][2]["tool"]["definition"]["name"],
        "get_forecast"
    );
    assert_eq!(body["output_config"]["task_budget"]["total"], 200_000);
    assert_eq!(body["billing_policy"]["bill_to"], "self");
    assert_eq!(body["diagnostics"]["previous_message_id"], "msg_e2e0");
    assert_eq!(body["fallbacks"], "default");
    assert_eq!(body["fallback_credit_token"]["mode"], "best_effort");
}
