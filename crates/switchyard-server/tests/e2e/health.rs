//! Health checks and shutdown: a check in flight never holds the process past SIGTERM.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::serve::{Scratch, WAIT};
use crate::support::{
    chat_body, key_env, lines_of, openai_provider, route, simulated_provider, Server,
};

/// The upstream's model listing never answers (within the test): the startup check is in
/// flight when SIGTERM arrives. The process exits cleanly, with no warning that
/// background work outlived the grace period.
#[tokio::test]
async fn a_check_in_flight_is_abandoned_at_shutdown() {
    let upstream = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"object": "list", "data": []}))
                .set_delay(Duration::from_secs(3600)),
        )
        .mount(&upstream)
        .await;
    let config = format!(
        "[server]\nshutdown_grace = \"30s\"\n\n{}{}",
        openai_provider(
            "gpt",
            &upstream.uri(),
            "health_check = { every = \"10m\", timeout = \"5m\" }"
        ),
        route("smart", &["gpt"], ""),
    );
    let mut server = Server::start(Scratch::new("e2e", "health-shutdown"), &config, &key_env());
    let deadline = Instant::now() + WAIT;
    while upstream
        .received_requests()
        .await
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the check never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let status = server.terminate().await;
    assert!(status.success(), "{}", server.output());
    let output = server.output();
    assert!(
        !output.contains("did not finish in time"),
        "the check held shutdown:\n{output}"
    );
    assert!(
        output.contains("health check of \"gpt\": listing"),
        "{output}"
    );
}

/// With a config file (a reloader) and a request log, SIGTERM ends the process once its
/// requests are done, the log's writer finished: the last request's line is in the file and
/// nothing says that background work outlived the grace period.
#[tokio::test]
async fn shutdown_with_a_request_log_does_not_wait_out_the_grace() {
    let scratch = Scratch::new("e2e", "log-shutdown");
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nshutdown_grace = \"30s\"\nrequest_log = {log:?}\n\n{}{}",
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], ""),
    );
    let mut server = Server::start(scratch, &config, &key_env());
    let reply = server.chat(&chat_body("smart", "hello")).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let status = server.terminate().await;
    assert!(status.success(), "{}", server.output());
    let output = server.output();
    assert!(
        !output.contains("did not finish in time"),
        "the request log's writer held shutdown:\n{output}"
    );
    assert_eq!(lines_of(&log).len(), 1, "{output}");
}
