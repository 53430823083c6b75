//! One breaker per provider for the whole fleet: a circuit opened on one replica is open
//! on the other, and one half-open probe tests the provider for both.

use std::time::Duration;

use faultline::Fault;
use futures_util::future::join_all;

use crate::redis::SharedRedis;
use crate::support::{breaker_state, pair, upstream, Conf, Reply};

/// A fleet config on the shared Redis under `redis`'s prefix.
fn fleet(up: &faultline::Handle, redis: &SharedRedis) -> Conf {
    Conf::fleet(
        up,
        // generous: this test is about sharing, not about Redis being slow
        redis.backend("2s"),
    )
}

/// The primary fails (503) on replica A until its circuit opens; replica B then skips it
/// (`skipped:circuit_open`, straight to the fallback) without calling it, and both
/// replicas' `/admin/health` show the same open circuit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_failing_on_replica_a_is_skipped_by_replica_b() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let redis = SharedRedis::new("skip");
    let conf = fleet(&up, &redis).route("breaker = { failure_threshold = 2, cooldown = \"30s\" }");
    let (a, b, _dirs) = pair("skip", &conf).await;

    for i in 0..2 {
        let r = a.chat(&format!("a-{i}")).await;
        r.assert_canonical();
        assert_eq!(
            r.labels(),
            ["primary:failed", "fallback:success"],
            "{}",
            r.text
        );
    }
    assert_eq!(up.attempts("primary").len(), 2);
    let on_a = breaker_state(&a, "primary", "open").await;
    // the fleet's state reaches B over pub/sub (backed up by a 1 s poll)
    let on_b = breaker_state(&b, "primary", "open").await;
    assert_eq!(
        on_a["open_until_ms"], on_b["open_until_ms"],
        "one circuit, not two: A {on_a}, B {on_b}"
    );
    assert!(on_b["open_until_ms"].as_u64().is_some(), "{on_b}");

    let r = b.chat("b-next").await;
    r.assert_canonical();
    assert_eq!(
        r.labels(),
        ["primary:skipped:circuit_open", "fallback:success"],
        "{}",
        r.text
    );
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    assert_eq!(
        up.attempts("primary").len(),
        2,
        "B never called the primary A found down"
    );
    assert_eq!(up.attempts("fallback").len(), 3);
    assert_eq!(b.provider("primary").await["state"], "open");
}

/// The primary's circuit (opened through A) cools down while the primary is healthy but
/// slow; 20 concurrent requests at each replica then give it exactly one probe for the
/// whole fleet: faultline sees one primary call while the probe is in flight, and each
/// replica sends its other requests to the fallback as `skipped:probe_in_flight`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_across_both_replicas() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let redis = SharedRedis::new("probe");
    let conf = fleet(&up, &redis)
        .primary("timeout = \"10s\"")
        .route("breaker = { failure_threshold = 1, cooldown = \"1s\", max_cooldown = \"1s\" }");
    let (a, b, _dirs) = pair("probe", &conf).await;

    a.chat("open-it").await.assert_canonical();
    breaker_state(&a, "primary", "open").await;
    breaker_state(&b, "primary", "open").await;
    let probe_time = Duration::from_secs(3);
    up.script("primary", Fault::slow_first_token(probe_time));
    breaker_state(&a, "primary", "half_open").await;
    breaker_state(&b, "primary", "half_open").await;

    let ids = |r: &str| {
        (0..20)
            .map(|i| format!("{r}-probe-{i}"))
            .collect::<Vec<_>>()
    };
    let (ids_a, ids_b) = (ids("a"), ids("b"));
    let (on_a, on_b) = tokio::join!(
        join_all(ids_a.iter().map(|id| a.chat(id))),
        join_all(ids_b.iter().map(|id| b.chat(id))),
    );
    for r in on_a.iter().chain(&on_b) {
        r.assert_canonical();
    }

    let p = up.attempts("primary");
    let probe = &p[1];
    let during: Vec<_> = p[1..]
        .iter()
        .filter(|x| x.at < probe.at + probe_time)
        .collect();
    assert_eq!(
        during.len(),
        1,
        "primary calls while the fleet's probe was out: {during:#?}"
    );
    let served = |replies: &[Reply]| {
        replies
            .iter()
            .filter(|r| r.header("x-switchyard-provider") == "primary")
            .count()
    };
    assert_eq!(
        served(&on_a) + served(&on_b),
        p.len() - 1,
        "each primary answer is one primary call"
    );
    for (name, replies) in [("A", &on_a), ("B", &on_b)] {
        let deferred = replies
            .iter()
            .filter(|r| r.labels() == ["primary:skipped:probe_in_flight", "fallback:success"])
            .count();
        assert!(
            deferred >= 1,
            "replica {name} never deferred to the fleet's probe: {:#?}",
            replies.iter().map(Reply::labels).collect::<Vec<_>>()
        );
    }
    breaker_state(&a, "primary", "closed").await;
    breaker_state(&b, "primary", "closed").await;
}
