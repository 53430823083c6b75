//! The error table of docs/design.md, row by row, through the gateway; failover and the error trail.

use std::sync::Arc;
use std::time::Duration;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ErrorKind, GatewayError, ProviderError};

use super::{breaker, route, state_of, two};

/// For each kind: does the gateway retry it on the same provider, does one failed turn
/// (threshold 1) open the circuit, and does it fail over — exactly as the table says.
#[tokio::test(start_paused = true)]
async fn every_row_of_the_error_table() {
    for kind in ErrorKind::ALL {
        let primary = Arc::new(ScriptedProvider::new("p").then(Step::fail(kind)));
        let backup = Arc::new(ScriptedProvider::new("b"));
        let gw = two(
            &primary,
            &backup,
            route(&["primary", "backup"]).breaker(breaker(1, 30)),
        );
        let result = gw.complete("hi").await;
        let p = kind.default_policy();

        let expected_primary_calls = if p.retry { 2 } else { 1 };
        assert_eq!(primary.calls(), expected_primary_calls, "{kind}: retries");

        let state = state_of(&gw, "primary").await;
        let opens = !matches!(
            kind,
            ErrorKind::RateLimited
                | ErrorKind::ContextLength
                | ErrorKind::ContentFiltered
                | ErrorKind::BadRequest
                | ErrorKind::Cancelled
        );
        // retryable kinds succeed on the retry (scripted "ok"), so only non-retried
        // breaker-tripping kinds leave the circuit open after one turn.
        let open_now = opens && !p.retry;
        assert_eq!(state != "closed", open_now, "{kind}: breaker state {state}");

        if p.retry {
            assert_eq!(result.unwrap().provider, "primary", "{kind}");
        } else if p.fail_over {
            let reply = result.unwrap();
            assert_eq!(reply.provider, "backup", "{kind}");
            assert!(reply.failed_over);
        } else {
            match result {
                Err(GatewayError::Provider {
                    provider, error, ..
                }) => {
                    assert_eq!(provider, "primary");
                    assert_eq!(error.kind, kind);
                }
                other => panic!("{kind}: expected the error as itself, got {other:?}"),
            }
            assert_eq!(backup.calls(), 0, "{kind}: must not fail over");
        }
    }
}

/// Failures that count open the circuit only after the threshold of failed *turns*.
#[tokio::test(start_paused = true)]
async fn counting_kinds_open_after_threshold_turns() {
    for kind in [
        ErrorKind::Timeout,
        ErrorKind::Connection,
        ErrorKind::Server,
        ErrorKind::Overloaded,
        ErrorKind::Malformed,
    ] {
        let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(kind)));
        let backup = Arc::new(ScriptedProvider::new("b"));
        let gw = two(
            &primary,
            &backup,
            route(&["primary", "backup"]).breaker(breaker(2, 30)),
        );
        gw.complete("1").await.unwrap();
        assert_eq!(state_of(&gw, "primary").await, "closed", "{kind}");
        gw.complete("2").await.unwrap();
        assert_eq!(state_of(&gw, "primary").await, "open", "{kind}");
        let calls = primary.calls();
        gw.complete("3").await.unwrap();
        assert_eq!(primary.calls(), calls, "{kind}: skipped while open");
    }
}

/// Auth opens at once and health says `auth_failed`; the next request skips it.
#[tokio::test(start_paused = true)]
async fn auth_failure_opens_at_once() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Auth)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    assert_eq!(gw.complete("1").await.unwrap().provider, "backup");
    assert_eq!(state_of(&gw, "primary").await, "auth_failed");
    let reply = gw.complete("2").await.unwrap();
    assert_eq!(reply.attempts[0].outcome.label(), "skipped:circuit_open");
    assert_eq!(primary.calls(), 1);
}

/// A burst of bad requests never opens a healthy provider's circuit.
#[tokio::test(start_paused = true)]
async fn burst_of_bad_requests_leaves_the_circuit_closed() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then_n(100, &Step::fail(ErrorKind::BadRequest))
            .otherwise(Step::text("fine")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(
        &primary,
        &backup,
        route(&["primary", "backup"]).breaker(breaker(1, 30)),
    );
    for _ in 0..100 {
        assert!(matches!(
            gw.complete("bad").await,
            Err(GatewayError::Provider { .. })
        ));
    }
    assert_eq!(state_of(&gw, "primary").await, "closed");
    assert_eq!(gw.complete("good").await.unwrap().provider, "primary");
    assert_eq!(backup.calls(), 0);
}

/// When every candidate fails, the error keeps each attempt's error in order.
#[tokio::test(start_paused = true)]
async fn all_failed_keeps_every_error_in_order() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .then(Step::fail(ErrorKind::Overloaded)),
    );
    let backup = Arc::new(ScriptedProvider::new("b").then(Step::fail(ErrorKind::Timeout)));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let Err(GatewayError::AllFailed { errors, attempts }) = gw.complete("x").await else {
        panic!("expected AllFailed");
    };
    let seen: Vec<_> = errors
        .iter()
        .map(|e| (e.provider.as_str(), e.error.kind))
        .collect();
    assert_eq!(
        seen,
        [
            ("primary", ErrorKind::Server),
            ("primary", ErrorKind::Overloaded),
            ("backup", ErrorKind::Timeout)
        ]
    );
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts[1].attempt, 2);
}

/// A 429 with Retry-After is retried no sooner than told.
#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let primary =
        Arc::new(ScriptedProvider::new("p").then(Step::rate_limited(Duration::from_secs(2))));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let reply = gw.complete("x").await.unwrap();
    assert_eq!(reply.provider, "primary");
    let times = primary.call_times();
    assert_eq!(times.len(), 2);
    assert!(times[1] - times[0] >= Duration::from_secs(2));
    assert_eq!(backup.calls(), 0);
}

/// A Retry-After that does not fit the time left fails over at once, and the provider
/// stays cool (skipped) until it passes.
#[tokio::test(start_paused = true)]
async fn retry_after_beyond_the_deadline_fails_over_now() {
    let primary =
        Arc::new(ScriptedProvider::new("p").then(Step::rate_limited(Duration::from_secs(4))));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(
        &primary,
        &backup,
        route(&["primary", "backup"]).deadline(Duration::from_secs(3)),
    );
    let start = tokio::time::Instant::now();
    let reply = gw.complete("x").await.unwrap();
    assert_eq!(reply.provider, "backup");
    assert_eq!(backup.call_times()[0], start, "failed over without waiting");
    assert_eq!(primary.calls(), 1);
    let reply = gw.complete("y").await.unwrap();
    assert_eq!(reply.attempts[0].outcome.label(), "skipped:cooling");
    tokio::time::advance(Duration::from_secs(4)).await;
    assert_eq!(gw.complete("z").await.unwrap().provider, "primary");
}

/// Backoff waits are drawn with jitter and bounded by the cap.
#[tokio::test(start_paused = true)]
async fn backoff_waits_between_retries() {
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    gw.complete("x").await.unwrap();
    let t = primary.call_times();
    let gap = t[1] - t[0];
    assert!(
        gap <= Duration::from_millis(100),
        "first retry waits at most base: {gap:?}"
    );
}

/// The vendor's message survives to the caller for a returned error.
#[tokio::test(start_paused = true)]
async fn content_filter_returns_the_providers_reason() {
    let err = ProviderError::new(ErrorKind::ContentFiltered, "flagged: violence").with_status(400);
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::Fail(err)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let e = gw.complete("x").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "primary: content_filtered: flagged: violence"
    );
    assert_eq!(primary.calls(), 1);
}
