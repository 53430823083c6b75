//! Coming back after an outage: a probe is one attempt, the default cooldowns bring a
//! recovered provider back within 30 s whatever the outage's length, and every circuit
//! transition is reported once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use switchyard::breaker::{CircuitState, Transition, DEFAULT_COOLDOWN, DEFAULT_MAX_COOLDOWN};
use switchyard::chat::{ChatRequest, ProviderReply};
use switchyard::observe::Observer;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::provider::Provider;
use switchyard::{ErrorKind, Gateway, ProviderError, ProviderSpec, Route};
use tokio::time::Instant;

use super::{breaker, route, state_of, two};

/// A provider that answers 503 until `recovers`, then answers.
struct Outage {
    recovers: Instant,
    calls: Mutex<Vec<Instant>>,
}

impl Outage {
    fn new(recovers: Instant) -> Self {
        Self {
            recovers,
            calls: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> Vec<Instant> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for Outage {
    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        "outage"
    }

    async fn send(&self, _req: &ChatRequest) -> Result<ProviderReply, ProviderError> {
        let now = Instant::now();
        self.calls.lock().unwrap().push(now);
        if now < self.recovers {
            return Err(ProviderError::new(ErrorKind::Server, "down").with_status(503));
        }
        Ok(ProviderReply {
            text: "back".into(),
            ..ProviderReply::default()
        })
    }
}

/// Collects transitions.
#[derive(Default)]
struct Transitions(Mutex<Vec<Transition>>);

impl Observer for Transitions {
    fn on_transition(&self, _provider: &str, t: &Transition) {
        self.0.lock().unwrap().push(*t);
    }
}

/// A half-open probe makes one attempt, although the provider gets three per turn, and
/// the same request fails over at once.
#[tokio::test(start_paused = true)]
async fn a_probe_is_one_attempt_and_fails_over_at_once() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).max_attempts(3))
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(route(&["primary", "backup"]).breaker(breaker(1, 30)))
        .seed(1)
        .build()
        .unwrap();
    gw.complete("trip").await.unwrap();
    assert_eq!(primary.calls(), 3, "closed: a full turn of retries");
    tokio::time::advance(Duration::from_secs(30)).await;
    let started = Instant::now();
    let reply = gw.complete("probe").await.unwrap();
    assert_eq!(primary.calls(), 4, "the probe made exactly one attempt");
    assert_eq!(reply.provider, "backup");
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no backoff before failing over"
    );
    let trail: Vec<String> = reply.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(trail, ["failed:server", "success"]);
    assert_eq!(state_of(&gw, "primary").await, "open");
}

/// A probe that hangs is cut at `probe_timeout` (not the provider's 30 s timeout), and
/// the request is still answered by the fallback, not failed as a missed deadline.
#[tokio::test(start_paused = true)]
async fn a_hanging_probe_is_cut_at_the_probe_timeout() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .otherwise(Step::Hang),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(
            ProviderSpec::new("primary", primary.clone()).probe_timeout(Duration::from_secs(2)),
        )
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(route(&["primary", "backup"]).breaker(breaker(1, 30)))
        .seed(1)
        .build()
        .unwrap();
    gw.complete("trip").await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    let started = Instant::now();
    let reply = gw.complete("probe").await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert_eq!(reply.provider, "backup");
    assert_eq!(reply.attempts[0].outcome.label(), "failed:timeout");
    assert_eq!(state_of(&gw, "primary").await, "open");
}

/// The probe's timeout is clamped to the request's deadline.
#[tokio::test(start_paused = true)]
async fn a_probe_never_outlives_the_deadline() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .otherwise(Step::Hang),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let mut r = route(&["primary", "backup"])
        .breaker(breaker(1, 30))
        .deadline(Duration::from_secs(5));
    r.retry.max_attempts = 1;
    let gw = two(&primary, &backup, r);
    gw.complete("trip").await.unwrap();
    tokio::time::advance(Duration::from_secs(30)).await;
    let started = Instant::now();
    let err = gw.complete("probe").await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(err.label(), "deadline_exceeded");
}

/// Open → half-open is reported once (stamped when the cooldown ran out), then the probe's
/// verdict: every step once, in order.
#[tokio::test(start_paused = true)]
async fn every_transition_is_reported_once() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then_n(2, &Step::fail(ErrorKind::Server))
            .otherwise(Step::text("back")),
    );
    let backup = Arc::new(ScriptedProvider::new("b"));
    let seen = Arc::new(Transitions::default());
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).max_attempts(1))
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(route(&["primary", "backup"]).breaker(breaker(1, 10)))
        .observer(seen.clone())
        .build()
        .unwrap();
    let t0 = gw.clock().unix_ms();
    gw.complete("trip").await.unwrap(); // opens until t0 + 10 s
    tokio::time::advance(Duration::from_secs(14)).await;
    gw.complete("probe fails").await.unwrap(); // at 14 s: reopens for 20 s
    tokio::time::advance(Duration::from_secs(25)).await;
    gw.complete("probe passes").await.unwrap(); // at 39 s
    gw.complete("closed").await.unwrap();
    use CircuitState::{Closed, HalfOpen, Open};
    let got: Vec<_> = seen
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|t| (t.from, t.to, t.at_ms - t0))
        .collect();
    assert_eq!(
        got,
        [
            (Closed, Open, 0),
            (Open, HalfOpen, 10_000),
            (HalfOpen, Open, 14_000),
            (Open, HalfOpen, 34_000),
            (HalfOpen, Closed, 39_000),
        ]
    );
}

/// Steady traffic through an outage of `outage`, one request every `gap`, on the default
/// settings; returns (recovery delay, probes while down, primary calls while down).
async fn ride_out(outage: Duration, gap: Duration) -> (Duration, usize, Vec<Instant>) {
    let t0 = Instant::now();
    let recovers = t0 + outage;
    let primary = Arc::new(Outage::new(recovers));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()))
        .provider(ProviderSpec::new("backup", backup))
        .route(Route::new("main", &["primary", "backup"]))
        .seed(3)
        .build()
        .unwrap();
    let mut back_at = None;
    let mut i = 0u32;
    while back_at.is_none() {
        tokio::time::sleep_until(t0 + gap * i).await;
        let reply = gw
            .complete(&format!("r{i}"))
            .await
            .expect("every request answered");
        if reply.provider == "primary" {
            back_at = Some(Instant::now());
        }
        i += 1;
        assert!(
            gap * i < outage + Duration::from_secs(120),
            "never came back"
        );
    }
    let down: Vec<Instant> = primary
        .calls()
        .into_iter()
        .filter(|c| *c < recovers)
        .collect();
    let route = Route::new("main", &[]);
    let closed_calls = (route.breaker.failure_threshold * route.retry.max_attempts) as usize;
    let probes = down.len().saturating_sub(closed_calls);
    (back_at.unwrap() - recovers, probes, down)
}

/// Outages of 10 s, 60 s, 3 min and 10 min under steady traffic (a request every 4 s,
/// and every second): the recovered primary carries traffic within 30 s of recovering,
/// and while it is down it sees one single-attempt probe per cooldown at most.
#[tokio::test(start_paused = true)]
async fn default_cooldowns_bring_a_provider_back_within_30s_after_outages_up_to_10_minutes() {
    assert!(DEFAULT_MAX_COOLDOWN + Duration::from_secs(4) <= Duration::from_secs(30));
    for secs in [10, 60, 180, 600] {
        for gap in [Duration::from_secs(4), Duration::from_secs(1)] {
            let outage = Duration::from_secs(secs);
            let (late, probes, down) = ride_out(outage, gap).await;
            let case = format!("{secs} s outage, a request every {gap:?}");
            assert!(
                late <= Duration::from_secs(30),
                "{case}: back {late:?} after recovering"
            );
            let bound = (outage.as_secs() / DEFAULT_COOLDOWN.as_secs()) as usize + 1;
            assert!(probes <= bound, "{case}: {probes} probes, bound {bound}");
            // once open, calls while down are probes: single attempts a cooldown apart
            let closed_turns = down.len() - probes;
            for w in down[closed_turns..].windows(2) {
                assert!(
                    w[1] - w[0] >= DEFAULT_COOLDOWN,
                    "{case}: calls {:?} apart",
                    w[1] - w[0]
                );
            }
        }
    }
}
