//! Active health checks: the checker loop over scripted providers, on paused time.

use std::sync::Arc;
use std::time::Duration;

use switchyard::health::{self, HealthCheck, Probe};
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ErrorKind, Gateway, Money};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{breaker, route, state_of, two};

const EVERY: Duration = Duration::from_secs(15);

fn check(probe: Probe) -> HealthCheck {
    HealthCheck {
        every: EVERY,
        timeout: Duration::from_secs(5),
        probe,
    }
}

/// Run a checker of `provider` as `holder`; dropping or firing the sender stops it.
fn checker(
    gw: &Gateway,
    provider: &str,
    c: HealthCheck,
    holder: &str,
) -> (oneshot::Sender<()>, JoinHandle<()>) {
    let (tx, rx) = oneshot::channel::<()>();
    let stop = async move {
        let _ = rx.await;
    };
    let task = tokio::spawn(health::run(
        gw.clone(),
        provider.to_owned(),
        c,
        holder.to_owned(),
        stop,
    ));
    (tx, task)
}

/// Let spawned tasks run at the current instant, then advance.
async fn advance(d: Duration) {
    tokio::task::yield_now().await;
    tokio::time::advance(d).await;
    tokio::task::yield_now().await;
}

/// One failed attempt opens the primary's circuit for 5 minutes.
fn one_failure_opens() -> switchyard::Route {
    route(&["primary", "backup"])
        .breaker(breaker(1, 300))
        .retry(switchyard::retry::RetryPolicy {
            max_attempts: 1,
            ..switchyard::retry::RetryPolicy::default()
        })
}

fn pair() -> (Arc<ScriptedProvider>, Arc<ScriptedProvider>) {
    (
        Arc::new(ScriptedProvider::new("p")),
        Arc::new(ScriptedProvider::new("b")),
    )
}

/// `failure_threshold` consecutive failed listings open the circuit; the first user
/// request after that goes straight to the backup, and no user request was spent.
#[tokio::test(start_paused = true)]
async fn failed_checks_open_the_circuit_before_any_user_request() {
    let (primary, backup) = pair();
    let primary = Arc::new(
        Arc::into_inner(primary)
            .unwrap()
            .health_otherwise(Step::fail(ErrorKind::Server)),
    );
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let (_stop, _task) = checker(&gw, "primary", check(Probe::Listing), "a");
    advance(Duration::from_millis(1)).await;
    advance(EVERY).await;
    assert_eq!(state_of(&gw, "primary").await, "closed", "two of three");
    advance(EVERY).await;
    assert_eq!(state_of(&gw, "primary").await, "open");
    assert_eq!(primary.health_check_times().len(), 3);

    let reply = gw.complete("hello").await.unwrap();
    assert_eq!(reply.provider, "backup");
    assert_eq!(reply.attempts[0].outcome.label(), "skipped:circuit_open");
    assert_eq!(
        primary.calls(),
        0,
        "no user request was spent on the primary"
    );
}

/// A 401 on the first listing opens the circuit at once (threshold or not).
#[tokio::test(start_paused = true)]
async fn an_auth_failure_opens_at_the_first_check() {
    let primary = Arc::new(ScriptedProvider::new("p").then_health(Step::Fail(
        switchyard::ProviderError::new(ErrorKind::Auth, "bad key").with_status(401),
    )));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let report = gw
        .check_provider("primary", &check(Probe::Listing))
        .await
        .unwrap();
    assert_eq!((report.result_label(), report.status), ("auth", Some(401)));
    assert_eq!(state_of(&gw, "primary").await, "auth_failed");
    let reply = gw.complete("hello").await.unwrap();
    assert_eq!(reply.provider, "backup");
    assert_eq!(primary.calls(), 0);
}

/// While open, a passing listing makes the circuit half-open at once (long before the
/// cooldown ends); the next user request is the probe that closes it.
#[tokio::test(start_paused = true)]
async fn a_passing_listing_turns_open_into_half_open_and_a_user_request_confirms() {
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, one_failure_opens());
    assert_eq!(gw.complete("trip").await.unwrap().provider, "backup");
    assert_eq!(state_of(&gw, "primary").await, "open");

    let report = gw
        .check_provider("primary", &check(Probe::Listing))
        .await
        .unwrap();
    assert!(report.ok());
    assert_eq!(state_of(&gw, "primary").await, "half_open");
    assert_eq!(primary.calls(), 1, "a listing is not a completion");
    let reply = gw.complete("back?").await.unwrap();
    assert_eq!(reply.provider, "primary");
    assert_eq!(state_of(&gw, "primary").await, "closed");
}

/// While open, a passing completion check closes the circuit without a user probe; its
/// cost is health-check spend, never the route's budget.
#[tokio::test(start_paused = true)]
async fn a_passing_completion_closes_and_its_cost_is_health_spend() {
    let primary = Arc::new(ScriptedProvider::new("p").then(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let r = one_failure_opens().budget(Money::from_usd(10.0));
    let gw = two(&primary, &backup, r);
    gw.complete("trip").await.unwrap();
    let spent_before = gw.budget("main").await.unwrap().spent;
    assert_eq!(state_of(&gw, "primary").await, "open");

    let report = gw
        .check_provider("primary", &check(Probe::Completion))
        .await
        .unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(state_of(&gw, "primary").await, "closed");
    let sent = primary.requests().pop().unwrap();
    assert_eq!(sent.max_tokens, Some(1), "one output token");
    let cost = report.cost.unwrap();
    assert!(cost > Money::ZERO);
    let row = &gw.ledger().summary()["primary"];
    assert_eq!((row.health_checks, row.health_spend), (1, cost));
    assert_eq!(row.cost, Money::ZERO, "not a user call's cost");
    assert_eq!(gw.budget("main").await.unwrap().spent, spent_before);
}

/// A check that does not answer within its timeout is a `timeout` failure.
#[tokio::test(start_paused = true)]
async fn a_silent_check_times_out() {
    let primary = Arc::new(ScriptedProvider::new("p").then_health(Step::Hang));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let report = gw
        .check_provider("primary", &check(Probe::Listing))
        .await
        .unwrap();
    assert_eq!(report.kind, Some(ErrorKind::Timeout));
    assert_eq!(report.latency, Duration::from_secs(5));
}

/// Two checkers of one provider sharing a store: only the lease holder checks; when it
/// stops, the other takes over once the lease lapses.
#[tokio::test(start_paused = true)]
async fn two_checkers_share_one_lease_and_the_survivor_takes_over() {
    let (primary, backup) = pair();
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let (stop_a, task_a) = checker(&gw, "primary", check(Probe::Listing), "a");
    advance(Duration::from_millis(1)).await;
    let (_stop_b, _task_b) = checker(&gw, "primary", check(Probe::Listing), "b");
    for _ in 0..4 {
        advance(EVERY).await;
    }
    assert_eq!(
        primary.health_check_times().len(),
        5,
        "one check per period, not two"
    );
    stop_a.send(()).unwrap();
    task_a.await.unwrap();
    let ttl = health::lease_ttl(&check(Probe::Listing));
    let mut waited = Duration::ZERO;
    while waited <= ttl + EVERY {
        advance(EVERY).await;
        waited += EVERY;
    }
    let times = primary.health_check_times();
    assert!(times.len() > 5, "b took over");
    let gaps: Vec<_> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|g| *g >= EVERY),
        "never two checkers at once: {gaps:?}"
    );
}

/// Stopping a checker abandons a check in flight at once.
#[tokio::test(start_paused = true)]
async fn stopping_abandons_a_check_in_flight() {
    let primary = Arc::new(ScriptedProvider::new("p").health_otherwise(Step::Hang));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, route(&["primary", "backup"]));
    let long = HealthCheck {
        timeout: Duration::from_secs(3600),
        ..check(Probe::Listing)
    };
    let (stop, task) = checker(&gw, "primary", long, "a");
    advance(Duration::from_millis(1)).await;
    assert_eq!(
        primary.health_check_times().len(),
        1,
        "a check is in flight"
    );
    let before = tokio::time::Instant::now();
    stop.send(()).unwrap();
    task.await.unwrap();
    assert_eq!(tokio::time::Instant::now(), before, "no wait for the check");
}

/// Each report says what this process's previous check of the provider found, so a
/// verdict change (not every check) can be told: the first, then pass → fail, then not
/// again until it passes.
#[tokio::test(start_paused = true)]
async fn a_report_says_whether_the_verdict_changed() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then_health(Step::text("ok"))
            .then_health(Step::fail(ErrorKind::Server))
            .then_health(Step::fail(ErrorKind::Timeout))
            .then_health(Step::text("ok")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = two(&primary, &backup, one_failure_opens());
    let mut seen = Vec::new();
    for _ in 0..4 {
        let report = gw
            .check_provider("primary", &check(Probe::Listing))
            .await
            .unwrap();
        seen.push((report.ok(), report.previous, report.verdict_changed()));
    }
    assert_eq!(
        seen,
        [
            (true, None, true),
            (false, Some(true), true),
            (false, Some(false), false),
            (true, Some(false), true),
        ]
    );
}
