//! Every error status the proxy itself returns, as OpenAI error JSON with honest statuses:
//! 400 (field named), 401, 403, 404 (the key's routes listed), 413, 402, 502 (per-attempt
//! summary, no secrets), 504.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::MockServer;

use crate::support::{
    chat_body, key_env, openai_provider, route, Reply, Scratch, Server, ANSWER, FAST_RETRY,
    UPSTREAM_KEY,
};
use crate::upstream::{calls, error_response, ok_completion, upstream};

/// The client token of the gatekeeper's one key.
const TOKEN: &str = "sy-e2e-team-token-0123456789abcdef";

/// A server with a client key (allowed on `smart` only), a 2 KiB body limit, and an
/// upstream that answers.
async fn gatekeeper(tag: &str) -> (Server, MockServer) {
    let up = upstream(ok_completion(ANSWER)).await;
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let config = format!(
        "[server]\nmax_body_bytes = 2048\n\n{}{}{}[[keys]]\nname = \"team\"\nsha256 = \"{hash}\"\nroutes = [\"smart\"]\n",
        openai_provider("gpt", &up.uri(), ""),
        route("smart", &["gpt"], ""),
        route("private", &["gpt"], ""),
    );
    (
        Server::start(Scratch::new("e2e", tag), &config, &key_env()),
        up,
    )
}

fn bearer() -> (&'static str, String) {
    ("authorization", format!("Bearer {TOKEN}"))
}

/// Assert an OpenAI-shaped error with this status, `type` and `code`; return the error.
#[track_caller]
fn openai_error(reply: &Reply, status: u16, kind: &str, code: Option<&str>) -> Value {
    reply.expect_status(status);
    assert!(
        reply.header("content-type").starts_with("application/json"),
        "{:?}",
        reply.headers
    );
    let e = reply.error();
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{e}");
    assert_eq!(e["type"], kind, "{e}");
    assert_eq!(e["code"], code.map_or(Value::Null, Value::from), "{e}");
    e
}

#[tokio::test]
async fn malformed_json_and_bad_fields_are_400_naming_the_field() {
    let (server, up) = gatekeeper("400").await;
    let (k, v) = bearer();
    let auth = [(k, v.as_str())];

    let r = server
        .post_raw(
            "/v1/chat/completions",
            b"{\"model\": \"smart\", ".to_vec(),
            &auth,
        )
        .await;
    let e = openai_error(&r, 400, "invalid_request_error", None);
    assert!(e["message"].as_str().unwrap().contains("JSON"), "{e}");

    let cases = [
        (
            json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}),
            "temperature",
        ),
        (
            json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}], "temperature": 3.5}),
            "temperature",
        ),
        (json!({"model": "smart", "messages": []}), "messages"),
        (json!({"model": "smart", "messages": "hi"}), "messages"),
        (
            json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}], "n": 0}),
            "n",
        ),
        (
            json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}], "frobnicate": 1}),
            "frobnicate",
        ),
    ];
    for (body, field) in cases {
        let r = server.chat_with(&body, &auth).await;
        let e = openai_error(&r, 400, "invalid_request_error", None);
        assert_eq!(e["param"], field, "{body} -> {e}");
        assert!(
            e["message"].as_str().unwrap().contains(field),
            "the message names `{field}`: {e}"
        );
    }
    let r = server
        .chat_with(
            &json!({"messages": [{"role": "user", "content": "hi"}]}),
            &auth,
        )
        .await;
    let e = openai_error(&r, 400, "invalid_request_error", None);
    assert!(e["message"].as_str().unwrap().contains("model"), "{e}");
    assert!(
        calls(&up).await.is_empty(),
        "bad requests never reach upstream"
    );
}

#[tokio::test]
async fn missing_or_wrong_client_keys_are_401_and_other_routes_403() {
    let (server, up) = gatekeeper("401").await;
    let body = chat_body("smart", "hi");

    let none = server.chat(&body).await;
    openai_error(&none, 401, "authentication_error", Some("invalid_api_key"));
    assert!(
        !none.header("x-request-id").is_empty(),
        "errors carry an id too"
    );
    let wrong = server
        .chat_with(&body, &[("authorization", "Bearer sy-e2e-not-the-token")])
        .await;
    let e = openai_error(&wrong, 401, "authentication_error", Some("invalid_api_key"));
    assert!(
        !e.to_string().contains("sy-e2e-not-the-token"),
        "never echoed"
    );
    let models = server.get("/v1/models", &[]).await;
    openai_error(
        &models,
        401,
        "authentication_error",
        Some("invalid_api_key"),
    );
    assert!(
        models.header("x-request-id").starts_with("req_"),
        "every response carries an id"
    );
    let traced = server
        .get("/v1/models", &[("x-request-id", "trace-e2e-401")])
        .await;
    assert_eq!(traced.status, 401);
    assert_eq!(
        traced.header("x-request-id"),
        "trace-e2e-401",
        "the client's id comes back"
    );
    let lost = server.get("/no/such/path", &[]).await;
    assert_eq!(lost.status, 404);
    assert!(!lost.header("x-request-id").is_empty());

    let (k, v) = bearer();
    let forbidden = server
        .chat_with(&chat_body("private", "hi"), &[(k, v.as_str())])
        .await;
    let e = openai_error(
        &forbidden,
        403,
        "permission_error",
        Some("route_not_allowed"),
    );
    assert!(e["message"].as_str().unwrap().contains("private"), "{e}");
    assert!(
        calls(&up).await.is_empty(),
        "refused requests never reach upstream"
    );

    let ok = server.chat_with(&body, &[(k, v.as_str())]).await;
    ok.expect_status(200);
    assert_eq!(calls(&up).await.len(), 1);
}

#[tokio::test]
async fn unknown_model_is_404_listing_the_routes() {
    let (server, up) = gatekeeper("404").await;
    let (k, v) = bearer();
    let r = server
        .chat_with(&chat_body("gpt-5-ultra", "hi"), &[(k, v.as_str())])
        .await;
    let e = openai_error(&r, 404, "invalid_request_error", Some("model_not_found"));
    assert_eq!(e["param"], "model");
    let message = e["message"].as_str().unwrap();
    for name in ["gpt-5-ultra", "smart"] {
        assert!(message.contains(name), "404 names {name}: {message}");
    }
    assert!(
        !message.contains("private"),
        "only the routes the key may use are listed: {message}"
    );
    assert!(calls(&up).await.is_empty());
}

#[tokio::test]
async fn body_over_the_limit_is_413() {
    let (server, up) = gatekeeper("413").await;
    let (k, v) = bearer();
    let r = server
        .chat_with(&chat_body("smart", &"x".repeat(4096)), &[(k, v.as_str())])
        .await;
    let e = openai_error(&r, 413, "invalid_request_error", Some("request_too_large"));
    assert!(e["message"].as_str().unwrap().contains("2048"), "{e}");
    assert!(calls(&up).await.is_empty());
}

#[tokio::test]
async fn spending_past_the_budget_is_402_before_any_dispatch() {
    let up = upstream(ok_completion(ANSWER)).await;
    let config = format!(
        "{}{}",
        openai_provider(
            "gpt",
            &up.uri(),
            "price = { input_per_mtok = 1000.0, output_per_mtok = 1000.0 }"
        ),
        route("smart", &["gpt"], "budget_usd = 0.000001")
    );
    let server = Server::start(Scratch::new("e2e", "402"), &config, &key_env());
    let r = server
        .chat(&chat_body("smart", "an expensive question"))
        .await;
    openai_error(&r, 402, "insufficient_quota", Some("budget_exceeded"));
    assert!(calls(&up).await.is_empty(), "refused before dispatch");
}

#[tokio::test]
async fn all_upstreams_failing_is_502_with_a_trail_and_no_secrets() {
    // Upstreams that (wrongly) echo the key back: the proxy must scrub it everywhere.
    let leak = format!("upstream exploded while holding {UPSTREAM_KEY}");
    let first = upstream(error_response(500, &leak, "server_error", None)).await;
    let second = upstream(error_response(503, &leak, "server_error", None)).await;
    let config = format!(
        "{}{}{}",
        openai_provider("first", &first.uri(), ""),
        openai_provider("second", &second.uri(), ""),
        route("smart", &["first", "second"], FAST_RETRY)
    );
    let server = Server::start(Scratch::new("e2e", "502"), &config, &key_env());
    let r = server.chat(&chat_body("smart", "hi")).await;
    let e = openai_error(&r, 502, "upstream_error", Some("all_providers_failed"));
    let attempts = e["attempts"]
        .as_array()
        .unwrap_or_else(|| panic!("a per-attempt summary: {e}"));
    assert_eq!(attempts.len(), 4, "two tries on each: {e}");
    for (a, (provider, status)) in attempts.iter().zip([
        ("first", 500),
        ("first", 500),
        ("second", 503),
        ("second", 503),
    ]) {
        assert_eq!(a["provider"], provider, "{a}");
        assert_eq!(a["status"], status, "{a}");
        assert!(a["outcome"].as_str().unwrap().starts_with("failed"), "{a}");
    }
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("upstream exploded while holding"),
        "the summary quotes the upstream errors (so the check below means something): {message}"
    );
    assert!(
        !r.everything().contains(UPSTREAM_KEY),
        "the key leaked: {}",
        r.text
    );
    assert!(
        !server.output().contains(UPSTREAM_KEY),
        "the key leaked into the server's output"
    );
}

#[tokio::test]
async fn route_deadline_shorter_than_the_upstream_is_504() {
    let slow = upstream(ok_completion(ANSWER).set_delay(Duration::from_secs(5))).await;
    let config = format!(
        "{}{}",
        openai_provider("slow", &slow.uri(), ""),
        route("smart", &["slow"], "deadline = \"300ms\"")
    );
    let server = Server::start(Scratch::new("e2e", "504"), &config, &key_env());
    let r = server.chat(&chat_body("smart", "hi")).await;
    r.expect_status(504);
    let e = r.error();
    assert_eq!(e["type"], "timeout_error", "{e}");
}
