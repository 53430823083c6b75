//! The half-open probe: exactly one, and never wedged by a cancelled caller.

use std::sync::Arc;
use std::time::Duration;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::ErrorKind;

use super::{breaker, route, state_of, two};

fn opened_gateway(
    primary: &Arc<ScriptedProvider>,
    backup: &Arc<ScriptedProvider>,
) -> switchyard::Gateway {
    two(
        primary,
        backup,
        route(&["primary", "backup"]).breaker(breaker(1, 30)),
    )
}

/// 50 concurrent requests after the cooldown: exactly one reaches the primary.
#[tokio::test(start_paused = true)]
async fn exactly_one_probe_under_fifty_concurrent_requests() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Timeout))
            .otherwise(Step::text("recovered").after(Duration::from_secs(1))),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = opened_gateway(&primary, &backup);
    gw.complete("trip").await.unwrap();
    assert_eq!(state_of(&gw, "primary").await, "open");
    tokio::time::advance(Duration::from_secs(30)).await;

    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let gw = gw.clone();
            tokio::task::spawn(async move { gw.complete(&format!("r{i}")).await })
        })
        .collect();
    let mut by_primary = 0;
    let mut probe_skips = 0;
    for t in tasks {
        let reply = t.await.unwrap().unwrap();
        if reply.provider == "primary" {
            by_primary += 1;
        } else if reply.attempts[0].outcome.label() == "skipped:probe_in_flight" {
            probe_skips += 1;
        }
    }
    assert_eq!(
        primary.calls(),
        2,
        "the tripping call plus exactly one probe"
    );
    assert_eq!(by_primary, 1);
    assert_eq!(probe_skips, 49);
    assert_eq!(state_of(&gw, "primary").await, "closed");
}

/// A probe whose caller goes away gives its lease back: the next request probes at once.
#[tokio::test(start_paused = true)]
async fn cancelled_probe_does_not_wedge_the_circuit() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Timeout))
            .then(Step::Hang)
            .otherwise(Step::text("back")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = opened_gateway(&primary, &backup);
    gw.complete("trip").await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;

    // The probe hangs; its caller gives up after 1 s (drops the future).
    let cancelled = tokio::time::timeout(Duration::from_secs(1), gw.complete("probe")).await;
    assert!(cancelled.is_err());
    assert_eq!(primary.calls(), 2);
    assert_eq!(primary.in_flight(), 0, "the upstream call was cancelled");

    let reply = gw.complete("next").await.unwrap();
    assert_eq!(
        reply.provider, "primary",
        "a new probe went through at once"
    );
    assert_eq!(state_of(&gw, "primary").await, "closed");
}

/// Even if a probe's guard never runs (a fleet replica died), the lease expires with the
/// attempt's timeout.
#[tokio::test(start_paused = true)]
async fn probe_lease_expires_with_the_attempt_timeout() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Timeout))
            .then(Step::Hang)
            .otherwise(Step::text("back")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = opened_gateway(&primary, &backup);
    gw.complete("trip").await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    let hung = {
        let gw = gw.clone();
        tokio::task::spawn(async move { gw.complete("probe").await })
    };
    tokio::task::yield_now().await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let r = gw.complete("while probing").await.unwrap();
    assert_eq!(r.attempts[0].outcome.label(), "skipped:probe_in_flight");
    // the hung probe times out after the provider's 30 s timeout and reopens the circuit
    let probe = hung.await.unwrap().unwrap();
    assert_eq!(probe.provider, "backup");
    assert_eq!(probe.attempts[0].outcome.label(), "failed:timeout");
    assert_eq!(state_of(&gw, "primary").await, "open");
}

/// A failed probe reopens with the cooldown doubled.
#[tokio::test(start_paused = true)]
async fn failed_probe_doubles_the_cooldown() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = opened_gateway(&primary, &backup);
    gw.complete("trip").await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    gw.complete("probe").await.unwrap();
    let h = gw.health().await;
    let p = h.iter().find(|p| p.name == "primary").unwrap();
    let now = gw.clock().unix_ms();
    assert_eq!(p.open_until_ms, Some(now + 60_000));
}

/// Collects how requests ended.
#[derive(Default)]
struct Outcomes(std::sync::Mutex<Vec<String>>);

impl switchyard::observe::Observer for Outcomes {
    fn on_complete(
        &self,
        _route: &str,
        result: Result<&switchyard::ChatResponse, &switchyard::GatewayError>,
    ) {
        let line = match result {
            Ok(r) => format!("ok:{}", r.provider),
            Err(e) => format!("{}:{}", e.label(), e.attempts().len()),
        };
        self.0.lock().unwrap().push(line);
    }
}

/// A request its caller abandons mid-flight is still reported, with its trail so far.
#[tokio::test(start_paused = true)]
async fn an_abandoned_request_is_reported_as_cancelled_with_its_trail() {
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::fail(ErrorKind::Timeout)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::Hang));
    let outcomes = Arc::new(Outcomes::default());
    let gw = switchyard::Gateway::builder()
        .provider(super::priced("primary", &primary))
        .provider(super::priced("backup", &backup))
        .route(route(&["primary", "backup"]))
        .observer(outcomes.clone())
        .build()
        .unwrap();
    let gave_up = tokio::time::timeout(Duration::from_secs(1), gw.complete("x")).await;
    assert!(gave_up.is_err());
    assert_eq!(backup.in_flight(), 0);
    assert_eq!(
        *outcomes.0.lock().unwrap(),
        ["cancelled:1"],
        "one failed try before the caller left"
    );
}

/// The trail marks the try the half-open circuit admitted as its probe, and no other.
#[tokio::test(start_paused = true)]
async fn the_trail_marks_the_probe() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Timeout))
            .otherwise(Step::text("recovered")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = opened_gateway(&primary, &backup);
    let trip = gw.complete("trip").await.unwrap();
    assert!(
        trip.attempts.iter().all(|a| !a.probe),
        "{:?}",
        trip.attempts
    );
    let skipped = gw.complete("while open").await.unwrap();
    assert_eq!(skipped.attempts[0].breaker_state(), Some("open"));
    tokio::time::advance(Duration::from_secs(30)).await;

    let probe = gw.complete("probe").await.unwrap();
    assert_eq!(probe.provider, "primary");
    assert!(probe.attempts[0].probe, "{:?}", probe.attempts);
    assert_eq!(probe.attempts[0].breaker_state(), Some("half_open"));
    let closed = gw.complete("after").await.unwrap();
    assert!(!closed.attempts[0].probe);
    assert_eq!(closed.attempts[0].breaker_state(), Some("closed"));
}
