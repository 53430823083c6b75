//! Failover through the proxy: an overloaded primary hands over to the fallback; a primary
//! that rejects the key opens its circuit at once and is skipped from then on; a stream
//! fails over invisibly before its first chunk, and one that never commits gets a status.

use serde_json::Value;

use crate::support::{
    chat_body, key_env, openai_provider, route, sse_data, stream_body, streamed_text, Scratch,
    Server, ANSWER, FAST_RETRY, UPSTREAM_KEY,
};
use crate::upstream::{
    calls, error_response, ok_completion, ok_stream, sse, upstream, RawUpstream,
};

#[tokio::test]
async fn overloaded_primary_fails_over_to_the_fallback() {
    let primary = upstream(error_response(
        503,
        "The engine is currently overloaded, please try again later",
        "server_error",
        None,
    ))
    .await;
    let fallback = upstream(ok_completion(ANSWER)).await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["primary", "fallback"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "failover"), &config, &key_env());

    let reply = server.chat(&chat_body("smart", "hello")).await;
    reply.expect_status(200);
    assert_eq!(reply.header("x-switchyard-provider"), "fallback");
    assert_eq!(reply.header("x-switchyard-failed-over"), "true");
    let attempts: usize = reply.header("x-switchyard-attempts").parse().unwrap();
    assert!(attempts >= 2, "attempts header: {attempts}");

    let body = reply.json();
    assert_eq!(body["choices"][0]["message"]["content"], ANSWER);
    let trail = &body["switchyard"];
    assert_eq!(trail["provider"], "fallback");
    assert_eq!(trail["failed_over"], true);
    let tries = trail["attempts"].as_array().unwrap();
    assert_eq!(tries.len(), attempts, "{trail}");
    let primary_tries: Vec<&Value> = tries
        .iter()
        .filter(|a| a["provider"] == "primary")
        .collect();
    assert_eq!(
        primary_tries.len(),
        2,
        "retried once per max_attempts = 2: {trail}"
    );
    for a in &primary_tries {
        assert_eq!(a["outcome"], "failed", "{a}");
        assert_eq!(a["status"], 503, "{a}");
    }
    assert_eq!(tries.last().unwrap()["provider"], "fallback");
    assert_eq!(tries.last().unwrap()["outcome"], "success");
    assert_eq!(calls(&primary).await.len(), 2);
    assert_eq!(calls(&fallback).await.len(), 1);
}

#[tokio::test]
async fn rejected_key_opens_the_circuit_at_once_and_the_next_request_skips_it() {
    let primary = upstream(error_response(
        401,
        "Incorrect API key provided: sk-e2e-****a5.",
        "invalid_request_error",
        Some("invalid_api_key"),
    ))
    .await;
    let fallback = upstream(ok_completion(ANSWER)).await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route(
            "smart",
            &["primary", "fallback"],
            &format!("{FAST_RETRY}\nbreaker = {{ failure_threshold = 5, cooldown = \"5m\" }}")
        )
    );
    let server = Server::start(Scratch::new("e2e", "auth"), &config, &key_env());

    let first = server.chat(&chat_body("smart", "one")).await;
    first.expect_status(200);
    assert_eq!(first.header("x-switchyard-provider"), "fallback");
    assert_eq!(first.header("x-switchyard-failed-over"), "true");
    assert_eq!(
        calls(&primary).await.len(),
        1,
        "an auth failure is not retried on the same provider"
    );

    let second = server.chat(&chat_body("smart", "two")).await;
    second.expect_status(200);
    assert_eq!(second.header("x-switchyard-provider"), "fallback");
    assert_eq!(
        calls(&primary).await.len(),
        1,
        "the open circuit must keep the next request away from the primary"
    );
    let trail = &second.json()["switchyard"];
    let skipped = trail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["provider"] == "primary")
        .unwrap_or_else(|| panic!("the skip is recorded in the trail: {trail}"));
    assert_eq!(skipped["outcome"], "skipped", "{skipped}");
    assert_eq!(calls(&fallback).await.len(), 2);

    let health = server.get("/admin/health", &[]).await;
    health.expect_status(200);
    let health = health.json();
    let providers: Vec<Value> = match &health["providers"] {
        Value::Array(list) => list.clone(),
        Value::Object(map) => map.values().cloned().collect(),
        other => panic!("providers is neither a list nor a map: {other}"),
    };
    let p = providers
        .iter()
        .find(|p| p["name"] == "primary")
        .unwrap_or_else(|| panic!("primary in /admin/health: {health}"));
    assert_eq!(p["state"], "auth_failed", "{p}");
    let f = providers.iter().find(|p| p["name"] == "fallback").unwrap();
    assert_eq!(f["state"], "closed", "{f}");
    assert!(!health.to_string().contains(UPSTREAM_KEY));
}

#[tokio::test]
async fn streams_fail_over_invisibly_before_the_first_chunk() {
    let primary = upstream(error_response(500, "boom", "server_error", None)).await;
    let fallback = upstream(ok_stream(sse(
        &["The capital of France", " is Paris."],
        true,
    )))
    .await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["primary", "fallback"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "stream-failover"), &config, &key_env());

    let reply = server.chat(&stream_body("smart", "hello")).await;
    reply.expect_status(200);
    assert_eq!(reply.header("x-switchyard-provider"), "fallback");
    assert_eq!(reply.header("x-switchyard-failed-over"), "true");
    let tries = calls(&primary).await.len() + calls(&fallback).await.len();
    assert_eq!(tries, 3, "two tries on the primary, one on the fallback");
    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), "The capital of France is Paris.");
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(
        reply.header("x-switchyard-attempts"),
        tries.to_string(),
        "the attempts header counts every try, the committing one included"
    );
}

#[tokio::test]
async fn a_stream_that_never_commits_gets_an_honest_status() {
    let primary = upstream(error_response(500, "boom", "server_error", None)).await;
    let fallback = upstream(error_response(503, "down", "server_error", None)).await;
    let config = format!(
        "{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["primary", "fallback"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "stream-502"), &config, &key_env());
    let reply = server.chat(&stream_body("smart", "hello")).await;
    reply.expect_status(502);
    assert!(
        reply.header("content-type").starts_with("application/json"),
        "an error before the commit point is plain JSON, not SSE: {:?}",
        reply.headers
    );
    assert_eq!(reply.error()["code"], "all_providers_failed");
}

#[tokio::test]
async fn a_silent_stream_fails_over_invisibly_at_the_first_token_timeout() {
    // 200 and SSE headers, then nothing at all.
    let silent = RawUpstream::start(RawUpstream::sse_head("")).await;
    let fallback = upstream(ok_stream(sse(
        &["The capital of France", " is Paris."],
        true,
    )))
    .await;
    let config = format!(
        "{}{}{}",
        openai_provider("silent", &silent.uri, "first_token_timeout = \"300ms\""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["silent", "fallback"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "first-token"), &config, &key_env());
    let reply = server.chat(&stream_body("smart", "hello")).await;
    reply.expect_status(200);
    assert_eq!(reply.header("x-switchyard-provider"), "fallback");
    assert_eq!(reply.header("x-switchyard-failed-over"), "true");
    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), "The capital of France is Paris.");
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    assert_eq!(
        silent.hits(),
        1,
        "a timeout is not retried on the same provider"
    );
    assert_eq!(calls(&fallback).await.len(), 1);
}
