//! Health checks and shutdown: a check in flight never holds the process past SIGTERM.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::serve::{Scratch, WAIT};
use crate::support::{key_env, openai_provider, route, Server};

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
        !output.contains("background tasks did not finish"),
        "the check held shutdown:\n{output}"
    );
    assert!(
        output.contains("health check of \"gpt\": listing"),
        "{output}"
    );
}
