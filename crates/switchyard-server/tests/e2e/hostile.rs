//! Hostile clients against the real binary over a socket, in keyless loopback mode: a web
//! page's requests (another Host, a foreign Origin, a `text/plain` body) are refused before
//! they can spend anything, the dashboard still works from its own origin, and a 4 MiB
//! `model` is refused by name and reaches the request log cut; a 4 MiB model an upstream
//! reports is cut in the answer, its trail and the log.

use serde_json::{json, Value};

use crate::support::{
    chat_body, client, eventually, lines_of, route, simulated_provider, Reply, Scratch, Server,
};

/// The origin the config lists.
const LISTED: &str = "http://localhost:3000";

/// Keyless, loopback, one simulated route, a request log, 8 MiB bodies, one listed origin.
fn keyless(scratch: Scratch) -> (Server, std::path::PathBuf) {
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nrequest_log = {:?}\nmax_body_bytes = 8388608\nallowed_origins = [\"{LISTED}\"]\n\n{}{}",
        log.display().to_string(),
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], ""),
    );
    (Server::start(scratch, &config, &[]), log)
}

/// POST `body` to the chat endpoint with exactly these headers (no default content type).
async fn post(server: &Server, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut req = client()
        .post(server.url("/v1/chat/completions"))
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    Reply::read(req.send().await.expect("POST to switchyard")).await
}

const JSON: (&str, &str) = ("content-type", "application/json");

#[tokio::test]
async fn a_web_page_cannot_spend_through_keyless_mode() {
    let (server, log) = keyless(Scratch::new("e2e", "hostile-web"));
    let body = chat_body("smart", "hi");

    let plain = post(&server, &body, &[("content-type", "text/plain")]).await;
    plain.expect_status(415);
    assert_eq!(plain.error()["code"], "unsupported_media_type");
    assert!(plain.header("x-request-id").starts_with("req_"));

    let foreign = post(&server, &body, &[JSON, ("origin", "http://evil.example")]).await;
    foreign.expect_status(403);
    assert_eq!(foreign.error()["code"], "origin_not_allowed");

    let rebound = post(&server, &body, &[JSON, ("host", "evil.example:4000")]).await;
    rebound.expect_status(421);
    assert_eq!(rebound.error()["code"], "host_not_allowed");
    let admin = server
        .get("/admin/requests", &[("host", "evil.example:4000")])
        .await;
    admin.expect_status(421);

    let listed = post(&server, &body, &[JSON, ("origin", LISTED)]).await;
    listed.expect_status(200);
    assert_eq!(listed.header("access-control-allow-origin"), LISTED);
    let own = post(&server, &body, &[JSON, ("origin", &server.base)]).await;
    own.expect_status(200);
    // answered without the router (crate::http::app::FastPath): its length on the wire all
    // the same, as hyper writes it for a body of known size
    assert_eq!(own.header("content-length"), own.text.len().to_string());
    assert!(own.header("x-request-id").starts_with("req_"));
    assert!(listed.header("content-length").parse::<usize>().is_ok());

    // the dashboard, from its own origin, sees only the two requests that were served
    server.get("/", &[]).await.expect_status(200);
    let recent = server
        .get("/admin/requests", &[("origin", &server.base)])
        .await;
    recent.expect_status(200);
    assert_eq!(recent.json()["requests"].as_array().unwrap().len(), 2);
    eventually("two log lines", || lines_of(&log).len() == 2).await;
}

#[tokio::test]
async fn a_huge_model_is_refused_by_name_and_logged_cut() {
    let (server, log) = keyless(Scratch::new("e2e", "hostile-model"));
    let huge = "m".repeat(4 << 20);
    let reply = post(
        &server,
        &json!({"model": huge, "messages": [{"role": "user", "content": "hi"}]}),
        &[JSON],
    )
    .await;
    reply.expect_status(400);
    assert!(reply.text.len() < 1024, "{}", reply.text.len());
    assert_eq!(
        reply.error()["message"],
        "model: longer than 256 characters"
    );
    eventually("the refusal's log line", || !lines_of(&log).is_empty()).await;
    let line = lines_of(&log).remove(0);
    assert!(line.len() < 4096, "a {}-byte log line", line.len());
    let entry: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["status"], 400);
    assert!(
        entry["route"]
            .as_str()
            .unwrap()
            .ends_with("…[+4193280 bytes]"),
        "{}",
        &line[..200]
    );
    let recent = server.get("/admin/requests", &[]).await.json();
    assert_eq!(
        recent["requests"][0]["route"], entry["route"],
        "the dashboard keeps the same cut"
    );
}

/// An upstream that reports a 4 MiB model name: the answer, its trail and the log line
/// carry the first 256 bytes of it, marked cut, not megabytes.
#[tokio::test]
async fn a_huge_model_an_upstream_reports_is_cut_in_the_answer_and_the_log() {
    let huge = "m".repeat(4 << 20);
    let mut answer = crate::upstream::completion("hi");
    answer["model"] = json!(huge);
    let mock =
        crate::upstream::upstream(wiremock::ResponseTemplate::new(200).set_body_json(answer)).await;
    let scratch = Scratch::new("e2e", "hostile-reported-model");
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nrequest_log = {:?}\n\n{}{}",
        log.display().to_string(),
        crate::support::openai_provider("vendor", &mock.uri(), ""),
        route("smart", &["vendor"], ""),
    );
    let server = Server::start(scratch, &config, &crate::support::key_env());
    let reply = server.chat(&chat_body("smart", "hi")).await;
    reply.expect_status(200);
    assert!(
        reply.text.len() < 8192,
        "a {}-byte answer",
        reply.text.len()
    );
    let cut = format!("{}…[+{} bytes]", "m".repeat(256), (4 << 20) - 256);
    assert_eq!(reply.json()["model"], cut);
    assert_eq!(reply.trail()["attempts"][0]["model"], cut);
    eventually("the log line", || !lines_of(&log).is_empty()).await;
    let line = lines_of(&log).remove(0);
    assert!(line.len() < 8192, "a {}-byte log line", line.len());
    let entry: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["attempts"][0]["model"], cut);
}
