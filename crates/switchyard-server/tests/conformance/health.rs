//! Active health checks through `switchyard serve`: a listing check that finds a bad key
//! opens the primary's circuit before any user request is spent on it.

use serde_json::{json, Value};
use tokio::time::Instant;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::http::client;
use crate::support::{trail_labels, upstream, Conf, Gateway, WAIT};

/// Wait (bounded) until the primary's `/admin/health` entry shows a health check.
async fn first_check(gw: &Gateway) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let p = gw.provider_health("primary").await;
        if !p["last_check"].is_null() {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no health check within {WAIT:?}: {p}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The primary's key is rejected: its `GET /v1/models` answers 401. The check at startup
/// finds it, the circuit opens (`auth_failed`), and the first user request goes straight
/// to the fallback: the primary never sees a completion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_check_finds_a_401_and_the_first_request_goes_to_the_fallback() {
    let up = upstream().await;
    let primary = MockServer::start().await;
    let rejected = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(401).set_body_json(rejected))
        .mount(&primary)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&primary)
        .await;
    // one check (at startup) in this test's lifetime
    let conf = Conf::new(&up)
        .primary_at(&format!("{}/v1", primary.uri()))
        .primary("health_check = { every = \"1h\", timeout = \"5s\", probe = \"listing\" }");
    let gw = Gateway::start(&conf).await;

    let p = first_check(&gw).await;
    let check = &p["last_check"];
    assert_eq!(
        (&check["result"], &check["status"], &check["probe"]),
        (&json!("auth"), &json!(401), &json!("listing")),
        "{p}"
    );
    assert_eq!(p["state"], "auth_failed", "{p}");

    let r = gw.chat("first").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    assert_eq!(
        trail_labels(&r.json()["switchyard"]),
        ["primary:skipped:circuit_open", "fallback:success"]
    );
    let seen = primary.received_requests().await.unwrap();
    assert_eq!(seen.len(), 1, "one listing, no completion: {seen:?}");
    assert_eq!(seen[0].method.as_str(), "GET");
    primary.verify().await;

    let metrics = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let line = r#"switchyard_health_checks_total{provider="primary",result="auth"} 1"#;
    assert!(metrics.contains(line), "{line} in:\n{metrics}");
}
