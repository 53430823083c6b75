//! Redis going away is not an outage of the gateway: both replicas keep answering on
//! local state, say so, and rejoin the fleet when Redis returns.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures_util::future::join_all;

use crate::redis::{RedisServer, ReplyGate, SharedRedis};
use crate::support::{
    answer_cost, config_dir, estimate, pair, poll, state_connected, upstream, usd, Backend, Conf,
    Replica, Reply, PRICE, ROUTE,
};

/// Requests each replica must answer in each phase (before, during, after the outage).
const PER_PHASE: usize = 5;

/// Send requests to `replica` one after another until `stop`, counting answers in `done`.
async fn traffic(
    replica: &Replica,
    lane: usize,
    stop: &AtomicBool,
    done: &AtomicUsize,
) -> Vec<Reply> {
    let mut replies = Vec::new();
    while !stop.load(Ordering::Acquire) {
        let id = format!("{}{lane}-{}", replica.name, replies.len());
        replies.push(replica.chat(&id).await);
        done.fetch_add(1, Ordering::AcqRel);
    }
    replies
}

/// Wait until each replica has answered `PER_PHASE` more requests than `since`.
async fn more_answers(done: &[AtomicUsize; 2], what: &str) {
    let since = [0, 1].map(|i| done[i].load(Ordering::Acquire));
    poll(
        &format!("{PER_PHASE} answers per replica {what}"),
        || async {
            let now = [0, 1].map(|i| done[i].load(Ordering::Acquire));
            if (0..2).all(|i| now[i] >= since[i] + PER_PHASE) {
                Ok(())
            } else {
                Err(format!(
                    "answered since: A {}, B {}",
                    now[0] - since[0],
                    now[1] - since[1]
                ))
            }
        },
    )
    .await;
}

/// How Redis goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    /// SIGKILL, then a fresh (empty) `redis-server` on the same port.
    Killed,
    /// SIGSTOP (every call hangs until the store's timeout), then SIGCONT.
    Frozen,
}

/// Both replicas serve a steady stream of requests (each reserving and settling against
/// a route budget, so every request talks to Redis) while a dedicated `redis-server` is
/// killed and, later, started again on the same port. Every request is answered 200 by
/// the (healthy) primary, with no retry or failover; both replicas report
/// `state.connected == false` (and `switchyard_state_connected 0`) during the outage and
/// `true` (1) after it; and once traffic stops their budget books agree again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_redis_mid_run_leaves_both_replicas_serving() {
    ride_out(Outage::Killed).await;
}

/// The same with Redis frozen instead of dead (connections open, nothing answered): no
/// request waits on it for ever, both replicas degrade and say so, and rejoin once it
/// runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_redis_leaves_both_replicas_serving() {
    ride_out(Outage::Frozen).await;
}

async fn ride_out(outage: Outage) {
    let up = upstream().await;
    let mut redis = RedisServer::start(&format!("{outage:?}")).await;
    let conf = Conf::fleet(
        &up,
        Backend::Redis {
            url: redis.url(),
            prefix: "switchyard-fleet-outage".to_owned(),
            timeout: "250ms",
        },
    )
    .both(PRICE)
    .route("budget_usd = 100.0");
    let (a, b, _dirs) = pair(&format!("{outage:?}"), &conf).await;
    for r in [&a, &b] {
        state_connected(r, true).await;
    }

    let stop = AtomicBool::new(false);
    let done = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let load = join_all([
        traffic(&a, 0, &stop, &done[0]),
        traffic(&a, 1, &stop, &done[0]),
        traffic(&b, 0, &stop, &done[1]),
        traffic(&b, 1, &stop, &done[1]),
    ]);
    let scenario = async {
        more_answers(&done, "before the outage").await;
        match outage {
            Outage::Killed => redis.kill(),
            Outage::Frozen => redis.freeze(),
        }
        for r in [&a, &b] {
            let s = state_connected(r, false).await;
            assert!(s["degraded_since_ms"].as_u64().is_some(), "{s}");
            assert!(
                s["last_error"].as_str().is_some_and(|e| !e.is_empty()),
                "{s}"
            );
            assert_eq!(
                r.state_connected_metric().await,
                Some(0.0),
                "replica {}",
                r.name
            );
        }
        more_answers(&done, "while Redis is down").await;
        match outage {
            Outage::Killed => redis.restart().await,
            Outage::Frozen => redis.thaw(),
        }
        for r in [&a, &b] {
            let s = state_connected(r, true).await;
            assert_eq!(s["degraded_since_ms"], serde_json::Value::Null, "{s}");
            assert_eq!(
                r.state_connected_metric().await,
                Some(1.0),
                "replica {}",
                r.name
            );
        }
        more_answers(&done, "after Redis returned").await;
        stop.store(true, Ordering::Release);
    };
    let (replies, ()) = tokio::join!(load, scenario);

    let replies: Vec<Reply> = replies.into_iter().flatten().collect();
    for r in &replies {
        r.assert_canonical();
        assert_eq!(r.labels(), ["primary:success"], "{}", r.text);
    }
    assert_eq!(
        up.attempts("primary").len(),
        replies.len(),
        "one upstream call per request"
    );

    // Each replica pushes what it spent during the outage on resync (into an empty Redis
    // after a kill), and from then on both read the same books. After a freeze Redis
    // kept everything, so the books hold every answer (a settle whose reply was lost in
    // the freeze may be counted twice — at least once, by design — never not at all).
    // (Reservations still held after a freeze: see
    // `a_reservation_whose_reply_was_lost_is_released`.)
    poll(
        "both replicas to report the same, complete books",
        || async {
            let ba = a.health().await["budgets"][ROUTE].clone();
            let bb = b.health().await["budgets"][ROUTE].clone();
            let spent = usd(&ba["spent_usd"]);
            let agreed = spent == usd(&bb["spent_usd"]) && ba["reserved_usd"] == bb["reserved_usd"];
            let ledgers = a.ledger().await + b.ledger().await;
            let complete = match outage {
                Outage::Killed => ba["reserved_usd"] == 0.0,
                Outage::Frozen => spent >= ledgers,
            };
            if agreed && complete {
                Ok(())
            } else {
                Err(format!("A {ba}, B {bb}, ledgers {:?}", ledgers.to_usd()))
            }
        },
    )
    .await;
}

/// A request whose budget reservation ran in Redis but whose reply was lost (Redis
/// stalled past `[state] timeout` after running the script, or the network dropped the
/// answer) is served on a local reservation, degrading the replica, and its spend reaches
/// Redis on resync. Once Redis answers again and the request is long done, nothing may
/// stay reserved — but the reservation Redis made holds its amount until its lease
/// lapses (the deadline + 60 s), shrinking the fleet's headroom by it meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_whose_reply_was_lost_is_released() {
    let up = upstream().await;
    let redis = SharedRedis::new("lost-reply");
    let gate = ReplyGate::start(redis.addr()).await;
    let conf = Conf::fleet(
        &up,
        Backend::Redis {
            url: gate.url(),
            prefix: redis.prefix.clone(),
            timeout: "250ms",
        },
    )
    .both(PRICE)
    .route("budget_usd = 1.0");
    let dir = config_dir("lost-reply", &conf);
    let a = Replica::start("A", &dir).await;
    state_connected(&a, true).await;

    gate.lose_replies();
    a.chat("reply-lost").await.assert_canonical();
    let s = state_connected(&a, false).await;
    assert!(
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("budget reserve")),
        "the reserve is what timed out: {s}"
    );
    gate.deliver_replies();
    state_connected(&a, true).await;

    poll("the finished request's reservation to be gone", || async {
        let books = a.health().await["budgets"][ROUTE].clone();
        let spent = usd(&books["spent_usd"]);
        if books["reserved_usd"] == 0.0 && spent == answer_cost() {
            Ok(())
        } else {
            Err(format!(
                "{books} (the answer cost {:?}; its reservation was {:?})",
                answer_cost().to_usd(),
                estimate().to_usd()
            ))
        }
    })
    .await;
}
