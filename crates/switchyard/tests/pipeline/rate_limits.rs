//! Rate limits reach the caller as rate limits: when every provider of a route was rate
//! limited (a 429 from each, or cooling down until a Retry-After), the request fails with
//! [`GatewayError::RateLimited`] carrying the earliest moment one of them accepts again.
//! Mixed failures stay `AllFailed`.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ChatRequest, ErrorKind, GatewayError};

use super::{breaker, route, two};

fn rate_limited_for(err: &GatewayError) -> Duration {
    match err {
        GatewayError::RateLimited { retry_after, .. } => *retry_after,
        other => panic!("expected a rate limit, got {other:?}"),
    }
}

fn limited(secs: u64) -> Step {
    Step::rate_limited(Duration::from_secs(secs))
}

/// A 429 from each provider: the earliest Retry-After; then, while both cool down, the
/// skips alone still make a rate limit, counting down to the same moment.
#[tokio::test(start_paused = true)]
async fn every_provider_rate_limited_is_a_rate_limit_until_the_earliest_retry() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(limited(30)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(limited(12)));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let err = gw.complete("x").await.unwrap_err();
    assert_eq!(rate_limited_for(&err), Duration::from_secs(12));
    assert_eq!(err.label(), "rate_limited");
    assert_eq!(
        (primary.calls(), backup.calls()),
        (1, 1),
        "too long to wait for"
    );

    tokio::time::advance(Duration::from_secs(2)).await;
    let err = gw.complete("y").await.unwrap_err();
    assert_eq!(rate_limited_for(&err), Duration::from_secs(10));
    let trail: Vec<String> = err.attempts().iter().map(|a| a.outcome.label()).collect();
    assert_eq!(trail, ["skipped:cooling", "skipped:cooling"]);
    assert_eq!((primary.calls(), backup.calls()), (1, 1));
}

/// One provider cooling, the other answering 429 now: the earlier of the two moments.
#[tokio::test(start_paused = true)]
async fn a_cooling_skip_and_a_fresh_429_make_a_rate_limit() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(limited(8)));
    let backup = Arc::new(
        ScriptedProvider::new("b")
            .then(Step::text("served"))
            .otherwise(limited(20)),
    );
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    assert_eq!(gw.complete("x").await.unwrap().provider, "backup");
    tokio::time::advance(Duration::from_secs(3)).await;
    let err = gw.complete("y").await.unwrap_err();
    assert_eq!(
        rate_limited_for(&err),
        Duration::from_secs(5),
        "primary's, 8 s after its 429"
    );
}

/// A 429 without a Retry-After: a rate limit with no wait to tell (the server says 1 s).
#[tokio::test(start_paused = true)]
async fn a_429_without_a_hint_is_a_rate_limit_with_no_wait() {
    let no_hint = Step::Fail(
        switchyard::ProviderError::new(ErrorKind::RateLimited, "slow down").with_status(429),
    );
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(no_hint.clone()));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(no_hint));
    let mut r = route(&["primary", "backup"]);
    r.retry.max_attempts = 1;
    let gw = two(&primary, &backup, r);
    let err = gw.complete("x").await.unwrap_err();
    assert_eq!(rate_limited_for(&err), Duration::ZERO);
}

/// A 429 and a 500: an outage somewhere, not a rate limit.
#[tokio::test(start_paused = true)]
async fn mixed_failures_stay_all_failed() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(limited(30)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let err = gw.complete("x").await.unwrap_err();
    assert!(matches!(err, GatewayError::AllFailed { .. }), "{err:?}");
}

/// A provider skipped because its circuit is open is not rate limited.
#[tokio::test(start_paused = true)]
async fn an_open_circuit_skip_is_not_a_rate_limit() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .otherwise(Step::text("unused")),
    );
    let backup = Arc::new(
        ScriptedProvider::new("b")
            .then(Step::text("served"))
            .otherwise(limited(30)),
    );
    let r = route(&["primary", "backup"]).breaker(breaker(1, 60));
    let gw = two(&primary, &backup, {
        let mut r = r;
        r.retry.max_attempts = 1;
        r
    });
    gw.complete("trip").await.unwrap();
    let err = gw.complete("x").await.unwrap_err();
    let trail: Vec<String> = err.attempts().iter().map(|a| a.outcome.label()).collect();
    assert_eq!(trail, ["skipped:circuit_open", "failed:rate_limited"]);
    assert!(matches!(err, GatewayError::AllFailed { .. }), "{err:?}");
}

/// A stream that meets only rate limits before its commit point fails the same way.
#[tokio::test(start_paused = true)]
async fn a_stream_before_commit_fails_as_a_rate_limit() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(limited(9)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(limited(40)));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let err = gw
        .stream("main", ChatRequest::from_prompt("x"))
        .await
        .map(|s| s.count())
        .unwrap_err();
    assert_eq!(rate_limited_for(&err), Duration::from_secs(9));
}
