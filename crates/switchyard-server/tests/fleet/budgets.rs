//! Budgets are the fleet's: concurrent load on two replicas never overspends a route's
//! budget and both replicas keep the same books; a spent budget stays spent across a
//! restart, with either backend.

use std::time::Duration;

use faultline::Fault;
use futures_util::future::join_all;
use switchyard::Money;

use crate::redis::SharedRedis;
use crate::support::{
    answer_cost, config_dir, estimate, pair, poll, times, upstream, usd, Backend, Conf, Replica,
    Reply, PRICE, ROUTE,
};

/// The route's books on `replica`, once nothing is reserved any more.
async fn settled_books(replica: &Replica) -> serde_json::Value {
    poll(
        &format!("replica {}'s reservations to be settled", replica.name),
        || async {
            let books = replica.health().await["budgets"][ROUTE].clone();
            if books["reserved_usd"] == 0.0 {
                Ok(books)
            } else {
                Err(books.to_string())
            }
        },
    )
    .await
}

/// `n` concurrent requests at `replica`, half plain, half streamed.
async fn load(tag: &str, replica: &Replica, n: usize) -> Vec<Reply> {
    join_all((0..n).map(|i| async move {
        let id = format!("{tag}-{i}");
        if i % 2 == 0 {
            replica.chat(&id).await
        } else {
            replica.stream(&id).await
        }
    }))
    .await
}

/// A budget of 10 reservations ($0.00686 at $0.000686 each) under 50 concurrent
/// requests at each replica (half plain, half streamed; the primary is slow so they
/// overlap): exactly 10 are answered — the first ten reservations fit and, at $0.000624
/// an answer, the spend never leaves room for an eleventh — the other 90 get 402 before
/// any dispatch, and both replicas report the same spend, within the limit, equal to
/// what their two ledgers add up to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_load_on_both_replicas_never_exceeds_a_budget() {
    let up = upstream().await;
    up.script(
        "primary",
        Fault::slow_first_token(Duration::from_millis(300)),
    );
    let redis = SharedRedis::new("budget");
    let limit = times(estimate(), 10);
    assert_eq!(limit, Money::from_usd(0.00686));
    assert!(limit < times(answer_cost(), 11), "no room for an 11th");
    let conf = Conf::fleet(
        &up,
        // generous: a degraded replica may overspend by design; this test is about the
        // shared books
        redis.backend("2s"),
    )
    .both(PRICE)
    .route(&format!("budget_usd = {}", limit.to_usd()));
    let (a, b, _dirs) = pair("budget", &conf).await;

    let (on_a, on_b) = tokio::join!(load("a", &a, 50), load("b", &b, 50));
    let all: Vec<&Reply> = on_a.iter().chain(&on_b).collect();
    let ok: Vec<&&Reply> = all.iter().filter(|r| r.status == 200).collect();
    for r in &all {
        if r.status == 200 {
            r.assert_canonical();
        } else {
            r.assert_budget_exceeded();
        }
    }
    assert_eq!(
        ok.len(),
        10,
        "answered under a budget of 10 reservations (A: {}, B: {})",
        on_a.iter().filter(|r| r.status == 200).count(),
        on_b.iter().filter(|r| r.status == 200).count()
    );
    let dispatched = up.attempts("primary").len() + up.attempts("fallback").len();
    assert_eq!(
        dispatched,
        ok.len(),
        "a refused request is refused before dispatch"
    );

    let books_a = settled_books(&a).await;
    let books_b = settled_books(&b).await;
    let spent = usd(&books_a["spent_usd"]);
    assert_eq!(
        spent,
        usd(&books_b["spent_usd"]),
        "shared books: A {books_a}, B {books_b}"
    );
    assert!(spent <= limit, "spent {spent:?} of {limit:?}");
    assert_eq!(spent, times(answer_cost(), ok.len()), "{books_a}");
    assert_eq!(
        a.ledger().await + b.ledger().await,
        spent,
        "the shared books are the sum of both replicas' calls"
    );
    for r in [&a, &b] {
        let state = r.health().await["state"].clone();
        assert_eq!(state["connected"], true, "replica {}: {state}", r.name);
    }
}

/// A budget for two answers: two reservations fit ($0.001372), and after two answers
/// ($0.001248 spent) a third does not.
fn two_answers() -> Money {
    let limit = times(estimate(), 2);
    assert!(times(answer_cost(), 2) + estimate() > limit);
    limit
}

/// Spend the budget (2 answers; the third request is refused), SIGTERM, start again with
/// the same config in the same directory: the first request is refused with 402 before
/// any upstream call, and the restarted process reports the spend.
async fn restarted_process_refuses_a_spent_budget(up: &faultline::Handle, conf: &Conf, tag: &str) {
    let calls = || up.attempts("primary").len() + up.attempts("fallback").len();
    let dir = config_dir(tag, conf);
    let mut first = Replica::start("first", &dir).await;
    for i in 0..2 {
        first.chat(&format!("spend-{i}")).await.assert_canonical();
    }
    first.chat("spend-2").await.assert_budget_exceeded();
    assert_eq!(calls(), 2);
    let status = first.terminate().await;
    assert!(
        status.success(),
        "exit after SIGTERM: {status}\n{}",
        first.output()
    );
    drop(first);

    let again = Replica::start("restarted", &dir).await;
    again.chat("after-restart").await.assert_budget_exceeded();
    assert_eq!(calls(), 2, "refused before any upstream call");
    let books = again.health().await["budgets"][ROUTE].clone();
    assert_eq!(usd(&books["spent_usd"]), times(answer_cost(), 2), "{books}");
    assert_eq!(books["reserved_usd"], 0.0, "{books}");
}

/// The memory backend: the spend comes back from `[server] request_log`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_process_still_refuses_a_spent_budget_memory() {
    let up = upstream().await;
    let conf = Conf::fleet(&up, Backend::Memory)
        .both(PRICE)
        .route(&format!("budget_usd = {}", two_answers().to_usd()))
        .request_log();
    restarted_process_refuses_a_spent_budget(&up, &conf, "restart-memory").await;
}

/// The Redis backend: the spend lives in Redis (no request log to replay).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_process_still_refuses_a_spent_budget_redis() {
    let up = upstream().await;
    let redis = SharedRedis::new("restart");
    let conf = Conf::fleet(&up, redis.backend("2s"))
        .both(PRICE)
        .route(&format!("budget_usd = {}", two_answers().to_usd()));
    restarted_process_refuses_a_spent_budget(&up, &conf, "restart-redis").await;
}
