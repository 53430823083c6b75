//! Two worked breaker timelines (docs/design.md, "Circuit breaker"), on the real gateway
//! and an injected clock.

use std::sync::Arc;
use std::time::Duration;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::ErrorKind;

use super::{breaker, route, two};

/// Threshold 2, cooldown 60 s, calls at 0, 1, 2, 61, 62 s → backup,
/// backup, backup without calling the primary, primary (the one probe), primary; failure
/// counts 1, 2, 2, 0, 0.
#[tokio::test(start_paused = true)]
async fn interview_timeline() {
    let timeout = Step::fail(ErrorKind::Timeout);
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then_n(2, &timeout)
            .otherwise(Step::text("primary answer")),
    );
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::text("backup answer")));
    let gw = two(
        &primary,
        &backup,
        route(&["primary", "backup"]).breaker(breaker(2, 60)),
    );

    let mut served = Vec::new();
    let mut failures = Vec::new();
    let mut primary_calls = Vec::new();
    let mut t = 0;
    for at in [0u64, 1, 2, 61, 62] {
        tokio::time::advance(Duration::from_secs(at - t)).await;
        t = at;
        let reply = gw.complete("hi").await.unwrap();
        served.push(reply.provider.clone());
        let h = gw.health().await;
        failures.push(
            h.iter()
                .find(|p| p.name == "primary")
                .unwrap()
                .consecutive_failures,
        );
        primary_calls.push(primary.calls());
    }
    assert_eq!(served, ["backup", "backup", "backup", "primary", "primary"]);
    assert_eq!(failures, [1, 2, 2, 0, 0]);
    // at 2 s the primary was skipped instantly: no call
    assert_eq!(primary_calls, [1, 2, 2, 3, 4]);
}

/// A provider that always times out opens after three failures and is then
/// skipped, while every request is still answered.
#[tokio::test(start_paused = true)]
async fn simulated_outage() {
    let broken =
        Arc::new(ScriptedProvider::new("broken").otherwise(Step::fail(ErrorKind::Timeout)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::text("Hi! How can I help")));
    let gw = two(
        &broken,
        &backup,
        route(&["primary", "backup"]).breaker(breaker(3, 30)),
    );
    let mut skipped = Vec::new();
    for _ in 0..5 {
        let reply = gw.complete("ping").await.unwrap();
        assert_eq!(reply.text, "Hi! How can I help");
        skipped.push(reply.attempts[0].outcome.label());
    }
    assert_eq!(broken.calls(), 3);
    assert_eq!(
        skipped,
        [
            "failed:timeout",
            "failed:timeout",
            "failed:timeout",
            "skipped:circuit_open",
            "skipped:circuit_open"
        ]
    );
    assert_eq!(super::state_of(&gw, "primary").await, "open");
}
