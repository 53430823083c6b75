//! A plain and a streamed completion through the proxy to a wiremock OpenAI upstream.

use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::Mock;

use crate::support::{
    chat_body, eventually, key_env, lines_of, openai_provider, route, sse_data, stream_body,
    streamed_text, Scratch, Server, ANSWER, CHAT_PATH, UPSTREAM_KEY, UPSTREAM_MODEL,
};
use crate::upstream::{calls, ok_completion, ok_stream, sse, RawUpstream};

/// $0.15 / $0.60 per MTok: 25 input (5 cached, billed at the input price) + 12 output
/// = 25 × 0.15 + 12 × 0.60 = 10.95 µ$.
const PRICE: &str = "price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }";

#[tokio::test]
async fn plain_completion_is_openai_shaped_and_says_who_answered() {
    let upstream = wiremock::MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .and(header("authorization", format!("Bearer {UPSTREAM_KEY}")))
        .respond_with(ok_completion(ANSWER))
        .expect(2)
        .mount(&upstream)
        .await;
    let scratch = Scratch::new("e2e", "plain");
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nrequest_log = {:?}\n\n{}{}",
        log.to_str().unwrap(),
        openai_provider("gpt", &upstream.uri(), PRICE),
        route("smart", &["gpt"], "")
    );
    let server = Server::start(scratch, &config, &key_env());

    let reply = server
        .chat_with(
            &chat_body("smart", "What is the capital of France?"),
            &[("x-request-id", "e2e-plain-1")],
        )
        .await;
    reply.expect_status(200);

    // OpenAI's shape, the upstream's model, and the trail.
    let body = reply.json();
    assert_eq!(body["object"], "chat.completion");
    assert!(
        body["id"].as_str().unwrap().starts_with("chatcmpl-"),
        "{body}"
    );
    assert!(body["created"].as_u64().is_some(), "{body}");
    assert_eq!(body["model"], UPSTREAM_MODEL);
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], ANSWER);
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(body["usage"]["prompt_tokens"], 25);
    assert_eq!(body["usage"]["completion_tokens"], 12);
    assert_eq!(body["usage"]["total_tokens"], 37);
    let trail = &body["switchyard"];
    assert_eq!(trail["provider"], "gpt");
    assert_eq!(trail["failed_over"], false);
    assert_eq!(trail["attempts"].as_array().unwrap().len(), 1, "{trail}");
    assert_eq!(trail["attempts"][0]["outcome"], "success");
    assert!(
        (trail["cost_usd"].as_f64().unwrap() - 0.000_010_95).abs() < 1e-12,
        "{trail}"
    );

    // Who answered, in headers.
    assert_eq!(reply.header("x-switchyard-provider"), "gpt");
    assert_eq!(reply.header("x-switchyard-attempts"), "1");
    assert_eq!(reply.header("x-switchyard-failed-over"), "false");
    assert_eq!(reply.header("x-switchyard-cost-usd"), "0.00001095");
    assert_eq!(reply.header("x-request-id"), "e2e-plain-1");

    // What the upstream saw: the right path, the key from the env var, OpenAI's names.
    let seen = calls(&upstream).await;
    assert_eq!(seen.len(), 1);
    let call = &seen[0];
    assert_eq!(call.url.path(), CHAT_PATH);
    assert_eq!(
        call.headers.get("authorization").unwrap().to_str().unwrap(),
        format!("Bearer {UPSTREAM_KEY}")
    );
    let sent: Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(sent["model"], "gpt-4o-mini");
    assert_eq!(sent["max_completion_tokens"], 64);
    assert!(sent.get("max_tokens").is_none(), "{sent}");
    assert_eq!(
        sent["messages"],
        json!([{"role": "user", "content": "What is the capital of France?"}])
    );

    // A request without an id gets a fresh one.
    let again = server.chat(&chat_body("smart", "again")).await;
    let fresh = again.header("x-request-id");
    assert!(!fresh.is_empty() && fresh != "e2e-plain-1", "{fresh:?}");

    // The key is in no response and no log line.
    eventually("two request-log lines", || lines_of(&log).len() == 2).await;
    for text in [reply.everything(), again.everything(), server.output()] {
        assert!(!text.contains(UPSTREAM_KEY), "the key leaked: {text}");
    }
    for line in lines_of(&log) {
        assert!(!line.contains(UPSTREAM_KEY), "the key leaked: {line}");
    }
}

#[tokio::test]
async fn streamed_completion_is_relayed_as_chunks_ending_in_done() {
    let upstream = wiremock::MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .and(body_partial_json(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(ok_stream(sse(
            &["The capital of France", " is Paris", " (Île-de-France)."],
            true,
        )))
        .expect(1)
        .mount(&upstream)
        .await;
    let config = format!(
        "{}{}",
        openai_provider("gpt", &upstream.uri(), PRICE),
        route("smart", &["gpt"], "")
    );
    let server = Server::start(Scratch::new("e2e", "stream"), &config, &key_env());

    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    assert!(
        reply
            .header("content-type")
            .starts_with("text/event-stream"),
        "{:?}",
        reply.headers
    );
    assert_eq!(reply.header("x-switchyard-provider"), "gpt");
    assert_eq!(reply.header("x-switchyard-failed-over"), "false");
    assert!(!reply.header("x-request-id").is_empty());

    let events = sse_data(&reply.text);
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{}",
        reply.text
    );
    assert_eq!(events.iter().filter(|e| *e == "[DONE]").count(), 1);
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}")))
        .collect();
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk", "{c}");
        assert!(c.get("error").is_none(), "{c}");
        assert_eq!(c["model"], UPSTREAM_MODEL, "{c}");
    }
    let id = chunks[0]["id"].as_str().unwrap();
    assert!(chunks.iter().all(|c| c["id"] == id), "one id per stream");
    assert_eq!(streamed_text(&events), ANSWER);
    let finishes: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["finish_reason"].as_str().map(|_| c))
        .collect();
    assert_eq!(finishes.len(), 1, "{}", reply.text);
    assert_eq!(finishes[0]["choices"][0]["finish_reason"], "stop");
    let usage = chunks
        .iter()
        .find(|c| c["usage"].is_object())
        .unwrap_or_else(|| panic!("no usage chunk: {}", reply.text));
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 25);
    assert_eq!(usage["usage"]["completion_tokens"], 12);
    assert_eq!(usage["usage"]["total_tokens"], 37);
    assert_eq!(usage["switchyard"]["provider"], "gpt");

    let seen = calls(&upstream).await;
    let sent: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(
        seen[0].headers.get("accept").unwrap().to_str().unwrap(),
        "text/event-stream"
    );
    assert!(!reply.everything().contains(UPSTREAM_KEY));
    assert_eq!(
        reply.header("x-switchyard-attempts"),
        "1",
        "the upstream was tried once (the committing try counts, as it does for plain calls)"
    );
}

#[tokio::test]
async fn a_stream_that_finishes_without_done_is_ended_at_the_finish_signal() {
    // The upstream sends its finish chunk and usage, then neither `[DONE]` nor a close.
    let upstream = RawUpstream::start(RawUpstream::sse_head(
        sse(
            &["The capital of France", " is Paris", " (Île-de-France)."],
            true,
        )
        .trim_end_matches("data: [DONE]\n\n"),
    ))
    .await;
    // Generous timeouts: only the finish signal can end this stream before the client's
    // own 20 s timeout.
    let patience = "timeout = \"60s\"\nfirst_token_timeout = \"60s\"\nstall_timeout = \"60s\"";
    let config = format!(
        "{}{}",
        openai_provider("gpt", &upstream.uri, patience),
        route("smart", &["gpt"], "deadline = \"60s\"")
    );
    let server = Server::start(Scratch::new("e2e", "no-done"), &config, &key_env());
    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), ANSWER);
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{}",
        reply.text
    );
    assert!(
        events.iter().any(|e| e.contains("\"usage\"")),
        "the usage chunk is relayed: {}",
        reply.text
    );
    assert_eq!(upstream.hits(), 1);
}

/// An OpenAI stream's content chunks are read by the pass-through scan
/// (`openai/stream/scan.rs`): what the client gets is, byte for byte, what the gateway
/// wrote for them before — its own id, creation time and model, the upstream's
/// fingerprint, the content with its escapes, `finish_reason` and `logprobs` as null —
/// whatever the upstream added that the gateway does not model (`obfuscation`,
/// `service_tier`, a field in the choice, keys in any order, whitespace), and a chunk the
/// scan leaves to serde (a `\u` escape) is written the same way. The usage chunk still
/// bills the request: the request log has its tokens and cost.
#[tokio::test]
async fn streamed_content_chunks_reach_the_client_as_the_gateway_writes_them() {
    let pieces = [
        "The capital",
        " \"of\" France\\",
        " is\n\tParis/",
        " (Île-de-France) ✓.",
        "é",
    ];
    let mut body = String::new();
    let head = r#""id":"chatcmpl-up1","object":"chat.completion.chunk","created":1764410400"#;
    body.push_str(&format!(
        "data: {{{head},\"model\":\"{UPSTREAM_MODEL}\",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_e2e\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null,\"obfuscation\":\"Zx1\"}}\n\n"
    ));
    for (i, p) in pieces.iter().enumerate() {
        let content = if *p == "é" {
            "\"\\u00e9\"".to_owned() // an escape the scan leaves to serde
        } else {
            serde_json::to_string(p).unwrap().replace('/', "\\/")
        };
        body.push_str(&format!(
            "data: {{ \"choices\" : [ {{\"logprobs\":null,\"delta\":{{\"content\":{content}}},\"index\":0,\"finish_reason\":null,\"x\":{{\"n\":[{i},-1.5e2,true]}}}} ],{head},\"model\":\"{UPSTREAM_MODEL}\",\"system_fingerprint\":\"fp_e2e\",\"usage\":null,\"obfuscation\":\"a{i}\"}}\n\n"
        ));
    }
    body.push_str(&format!(
        "data: {{{head},\"model\":\"{UPSTREAM_MODEL}\",\"system_fingerprint\":\"fp_e2e\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"stop\"}}],\"usage\":null}}\n\n"
    ));
    body.push_str(&format!(
        "data: {{{head},\"model\":\"{UPSTREAM_MODEL}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":25,\"completion_tokens\":12,\"total_tokens\":37}}}}\n\ndata: [DONE]\n\n"
    ));
    let upstream = wiremock::MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(ok_stream(body))
        .expect(1)
        .mount(&upstream)
        .await;
    let scratch = Scratch::new("e2e", "stream-pass");
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nrequest_log = {:?}\n\n{}{}",
        log.to_str().unwrap(),
        openai_provider("gpt", &upstream.uri(), PRICE),
        route("smart", &["gpt"], "")
    );
    let server = Server::start(scratch, &config, &key_env());
    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    let events = sse_data(&reply.text);
    let first: Value = serde_json::from_str(&events[0]).unwrap();
    let (id, created) = (first["id"].as_str().unwrap(), &first["created"]);
    assert_ne!(id, "chatcmpl-up1", "the gateway's own id");
    let content: Vec<&String> = events
        .iter()
        .filter(|e| e.contains("\"content\"") && !e.contains("\"role\""))
        .collect();
    assert_eq!(content.len(), pieces.len(), "{}", reply.text);
    for (sent, p) in content.iter().zip(pieces) {
        let expected = format!(
            "{{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":\"{UPSTREAM_MODEL}\",\"system_fingerprint\":\"fp_e2e\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null,\"logprobs\":null}}]}}",
            serde_json::to_string(p).unwrap()
        );
        assert_eq!(**sent, expected);
    }
    assert_eq!(streamed_text(&events), pieces.concat());
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 12, "{usage}");
    assert!(!reply.text.contains("obfuscation") && !reply.text.contains("service_tier"));

    eventually("the request-log line", || lines_of(&log).len() == 1).await;
    let entry: Value = serde_json::from_str(&lines_of(&log)[0]).unwrap();
    assert_eq!(entry["usage"]["input_tokens"], 25, "{entry}");
    assert_eq!(entry["usage"]["output_tokens"], 12, "{entry}");
    assert!(
        entry["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{entry}"
    );
}
