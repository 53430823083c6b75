//! The end-to-end deadline is hard; `fastest` learns from observed latency.

use std::sync::Arc;
use std::time::Duration;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::route::Order;
use switchyard::{ErrorKind, Gateway, GatewayError, ProviderSpec, Route};

use super::{route, two};

/// Two silent providers and a 5 s deadline: the caller gets `DeadlineExceeded` at 5 s,
/// not at 2 × the 30 s provider timeout.
#[tokio::test(start_paused = true)]
async fn no_request_outlives_its_deadline() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::Hang));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::Hang));
    let gw = two(
        &primary,
        &backup,
        route(&["primary", "backup"]).deadline(Duration::from_secs(5)),
    );
    let start = tokio::time::Instant::now();
    let e = gw.complete("x").await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert!(matches!(e, GatewayError::DeadlineExceeded { .. }), "{e}");
    assert_eq!(backup.calls(), 0, "no time was left for the backup");
    assert_eq!(primary.in_flight(), 0);
}

/// A slow provider's attempt timeout is clamped to what is left of the deadline, and the
/// attempt after a timeout goes to the next provider (timeouts are not retried).
#[tokio::test(start_paused = true)]
async fn attempt_timeout_then_fallback_within_the_deadline() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::Hang));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).timeout(Duration::from_secs(2)))
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(route(&["primary", "backup"]).deadline(Duration::from_secs(10)))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let reply = gw.complete("x").await.unwrap();
    assert_eq!(reply.provider, "backup");
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(primary.calls(), 1);
    assert_eq!(reply.attempts[0].outcome.label(), "failed:timeout");
}

/// A backoff that would not fit in the time left is skipped: fail over instead.
#[tokio::test(start_paused = true)]
async fn backoff_that_does_not_fit_is_skipped() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .otherwise(Step::fail(ErrorKind::Server).after(Duration::from_millis(950))),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let r = route(&["primary", "backup"])
        .deadline(Duration::from_secs(1))
        .retry(switchyard::retry::RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(1),
        });
    let gw = two(&primary, &backup, r);
    let start = tokio::time::Instant::now();
    let result = gw.complete("x").await;
    assert!(start.elapsed() <= Duration::from_secs(1));
    assert_eq!(primary.calls(), 1);
    match result {
        Ok(reply) => assert_eq!(reply.provider, "backup"),
        Err(e) => assert!(matches!(e, GatewayError::DeadlineExceeded { .. }), "{e}"),
    }
}

/// `fastest` prefers the provider with the lower moving-average latency once observed.
#[tokio::test(start_paused = true)]
async fn fastest_prefers_observed_low_latency() {
    let slow = Arc::new(
        ScriptedProvider::new("slow").otherwise(Step::text("s").after(Duration::from_millis(800))),
    );
    let quick = Arc::new(
        ScriptedProvider::new("quick").otherwise(Step::text("q").after(Duration::from_millis(100))),
    );
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("slow", slow.clone()))
        .provider(ProviderSpec::new("quick", quick.clone()))
        .route(Route::new("main", &["slow", "quick"]).order(Order::Fastest))
        .build()
        .unwrap();
    // both unobserved: configured order, so "slow" is measured first
    assert_eq!(gw.complete("1").await.unwrap().provider, "slow");
    // "quick" is still unobserved, so it is tried next and measured
    assert_eq!(gw.complete("2").await.unwrap().provider, "quick");
    for _ in 0..3 {
        assert_eq!(gw.complete("n").await.unwrap().provider, "quick");
    }
    let h = gw.health().await;
    assert_eq!(
        h.iter().find(|p| p.name == "quick").unwrap().latency_ms,
        Some(100.0)
    );
}

/// The blocking wrapper drives the same gateway without a runtime.
#[test]
fn blocking_wrapper_answers() {
    let p = Arc::new(ScriptedProvider::new("p"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p))
        .route(Route::new("main", &["p"]))
        .build()
        .unwrap();
    let blocking = switchyard::blocking::BlockingGateway::new(gw).unwrap();
    assert_eq!(blocking.complete("hi").unwrap().text, "ok from p");
    assert_eq!(blocking.health()[0].state, "closed");
}
