//! The README's first command — `switchyard serve` with no config, the embedded default's
//! simulated providers — driven by the official SDKs as frameworks drive them: the
//! `openai` SDK's `.parse` with pydantic models (Chat Completions and Responses), a
//! tool-call round trip (plain and streamed), `responses.input_items.list` paged; the
//! OpenAI Agents SDK's `Runner` with a function tool (and an `output_type`); the
//! `anthropic` SDK's `messages.create(tools=...)` and `models.list` / `retrieve`; `n=2`
//! (plain and streamed) answered with two choices. The
//! checks live in `tests/python/test_embedded_default.py` (generated JSON validated with
//! `jsonschema` against the schema sent); interpreter from `$SWITCHYARD_PYTHON`, failing
//! with the install command when the SDKs are missing, never skipping.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{describe, python, run_bounded, try_run_bounded, Scratch, Server};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_embedded_default.py"
);

fn embedded_default() -> Server {
    Server::try_start(
        Scratch::new("e2e", "embedded-sdks"),
        &["serve"],
        "127.0.0.1:0",
        &[],
    )
    .unwrap_or_else(|r| panic!("{}: {}", r.status, r.stderr))
}

#[tokio::test]
async fn sdks_get_tool_calls_and_structured_outputs_from_the_embedded_default() {
    let mut probe = python();
    probe.args(["-c", "import openai, anthropic, agents, jsonschema"]);
    match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => {}
        other => panic!(
            "this test needs the openai, anthropic and openai-agents packages in \
             $SWITCHYARD_PYTHON (default python3).\n\
             Install them: python3 -m venv .venv && .venv/bin/pip install -r tests/python/requirements.txt\n\
             then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{}",
            other.map_or_else(|e| e.to_string(), |o| describe(&o))
        ),
    }
    let server = embedded_default();
    let mut script = python();
    script.args([SCRIPT, &server.base]);
    let out = run_bounded(script, Duration::from_secs(240));
    assert!(
        out.status.success(),
        "the embedded default SDK script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("all embedded default checks passed"),
        "{stdout}"
    );
}

/// The wire without an SDK: a streamed chat tool call arrives as deltas whose pieces join
/// into the plain answer's arguments, and a request with a `response_format` gets JSON.
#[tokio::test]
async fn chat_tool_calls_stream_as_deltas_on_the_embedded_default() {
    let server = embedded_default();
    let tools = json!([{"type": "function", "function": {"name": "lookup", "parameters": {
        "type": "object", "properties": {"ids": {"type": "array", "minItems": 3,
        "items": {"type": "integer"}}, "note": {"type": "string", "minLength": 80}},
        "required": ["ids", "note"]}}}]);
    let body = json!({"model": "default", "tools": tools,
        "messages": [{"role": "user", "content": "look them up"}]});
    let plain = server.chat(&body).await;
    plain.expect_status(200);
    let call = plain.json()["choices"][0]["message"]["tool_calls"][0].clone();
    assert_eq!(plain.json()["choices"][0]["finish_reason"], "tool_calls");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(args["ids"].as_array().unwrap().len() >= 3, "{args}");
    assert!(
        args["note"].as_str().unwrap().chars().count() >= 80,
        "{args}"
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let reply = server.chat(&streamed).await;
    reply.expect_status(200);
    let chunks = reply.json_events();
    let deltas: Vec<&Value> = (chunks.iter())
        .filter_map(|c| c["choices"].get(0)?["delta"]["tool_calls"].get(0))
        .collect();
    assert!(deltas.len() > 1, "arguments come in pieces: {}", reply.text);
    assert_eq!(deltas[0]["id"], call["id"]);
    assert_eq!(deltas[0]["function"]["name"], "lookup");
    let joined: String = (deltas.iter())
        .map(|d| d["function"]["arguments"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(joined, call["function"]["arguments"].as_str().unwrap());
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"].get(0)?["finish_reason"].as_str());
    assert_eq!(finish, Some("tool_calls"));

    let format = json!({"model": "default", "response_format": {"type": "json_object"},
        "messages": [{"role": "user", "content": "Reply in JSON"}]});
    let reply = server.chat(&format).await;
    reply.expect_status(200);
    let content = reply.json()["choices"][0]["message"]["content"].clone();
    let parsed: Value = serde_json::from_str(content.as_str().unwrap()).unwrap();
    assert!(
        parsed["answer"].as_str().unwrap().contains("Reply in JSON"),
        "{parsed}"
    );
}

/// `n: 2` on the embedded default: two choices, the second its own answer, usage summed
/// over both calls; streamed, one choice per index, each finished, then the usage.
#[tokio::test]
async fn n_answers_are_served_plain_and_streamed_on_the_embedded_default() {
    let server = embedded_default();
    let body = json!({"model": "default", "n": 2, "max_tokens": 40,
        "messages": [{"role": "user", "content": "Name a colour"}]});
    let plain = server.chat(&body).await;
    plain.expect_status(200);
    let choices = plain.json()["choices"].as_array().unwrap().clone();
    assert_eq!(choices.len(), 2, "{}", plain.text);
    let texts: Vec<&str> = (choices.iter())
        .map(|c| c["message"]["content"].as_str().unwrap())
        .collect();
    assert!(texts[0].ends_with("Name a colour..."), "{texts:?}");
    assert!(
        texts[1].ends_with("Name a colour... (choice 1)"),
        "{texts:?}"
    );
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i, "{c}");
        assert_eq!(c["finish_reason"], "stop", "{c}");
    }
    let usage = &plain.json()["usage"];
    assert_eq!(usage["completion_tokens"], 80, "two calls of 40: {usage}");
    assert_eq!(usage["prompt_tokens"], 6, "the prompt read twice: {usage}");

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let reply = server.chat(&streamed).await;
    reply.expect_status(200);
    let mut joined = [String::new(), String::new()];
    let mut finishes = [0, 0];
    let mut usage = Value::Null;
    for chunk in reply.json_events() {
        for c in chunk["choices"].as_array().unwrap() {
            let i = c["index"].as_u64().unwrap() as usize;
            joined[i].push_str(c["delta"]["content"].as_str().unwrap_or_default());
            finishes[i] += usize::from(c["finish_reason"].is_string());
        }
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
    }
    assert!(joined[0].ends_with("Name a colour..."), "{joined:?}");
    assert!(
        joined[1].ends_with("Name a colour... (choice 1)"),
        "{joined:?}"
    );
    assert_eq!(finishes, [1, 1], "{}", reply.text);
    assert_eq!(usage["completion_tokens"], 80, "{usage}");
}

/// What the README says of endpoints it does not serve: a 404 in OpenAI's error shape
/// naming the path.
#[tokio::test]
async fn endpoints_not_served_are_404_unknown_url() {
    let server = embedded_default();
    let body = serde_json::to_vec(&json!({"model": "default", "prompt": "hi"})).unwrap();
    for path in [
        "/v1/completions",
        "/v1/complete",
        "/v1/images/generations",
        "/v1/audio/speech",
        "/v1/moderations",
        "/v1/batches",
        "/v1/messages/batches",
        "/v1/responses/resp_1/cancel",
    ] {
        let reply = server.post_raw(path, body.clone(), &[]).await;
        reply.expect_status(404);
        let error = &reply.json()["error"];
        assert_eq!(error["code"], "unknown_url", "{path}: {}", reply.text);
        assert!(error["message"].as_str().unwrap().contains(path), "{path}");
    }
    for path in [
        "/v1/files",
        "/v1/assistants",
        "/v1/vector_stores",
        "/v1/fine_tuning/jobs",
    ] {
        let reply = server.get(path, &[]).await;
        reply.expect_status(404);
        assert_eq!(reply.json()["error"]["code"], "unknown_url", "{path}");
    }
}
