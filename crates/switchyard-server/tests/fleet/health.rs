//! One health checker per provider for the whole fleet: of two replicas on one Redis,
//! only the holder of the provider's lease checks it; when the holder dies, its lease
//! lapses and the other replica takes over.

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::redis::SharedRedis;
use crate::support::{pair, poll, upstream, Conf, Replica};

/// How many health checks `replica` ran on the primary (its own ledger).
async fn checks_by(replica: &Replica) -> u64 {
    let h = replica.health().await;
    h["ledger"]["primary"]["health_checks"]
        .as_u64()
        .unwrap_or(0)
}

/// The primary's last check as `replica` saw it (null: it has not checked).
async fn last_check(replica: &Replica) -> Value {
    replica.provider("primary").await["last_check"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_share_one_checker_and_the_survivor_takes_over() {
    let up = upstream().await;
    let primary = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": []})),
        )
        .mount(&primary)
        .await;
    let redis = SharedRedis::new("health");
    let conf = Conf::fleet(&up, redis.backend("2s"))
        .primary_at(&format!("{}/v1", primary.uri()))
        .primary("health_check = { every = \"1s\", timeout = \"500ms\" }");
    let (a, b, _dirs) = pair("health", &conf).await;

    // Several periods pass: every check came from one replica.
    let a_holds = poll("three health checks", || async {
        let (on_a, on_b) = (checks_by(&a).await, checks_by(&b).await);
        match (on_a, on_b) {
            (n, 0) if n >= 3 => Ok(true),
            (0, n) if n >= 3 => Ok(false),
            _ => Err(format!("A checked {on_a} times, B {on_b} times")),
        }
    })
    .await;
    let (holder, other) = if a_holds { (a, b) } else { (b, a) };
    assert!(
        last_check(&other).await.is_null(),
        "{} never checked",
        other.name
    );
    assert_eq!(last_check(&holder).await["result"], "ok");
    let holder_ran = checks_by(&holder).await;
    let upstream_saw = primary.received_requests().await.unwrap().len() as u64;
    assert!(
        upstream_saw <= holder_ran + 1,
        "the upstream saw {upstream_saw} checks; {} ran {holder_ran}",
        holder.name
    );

    // The holder dies: the other replica takes the lapsed lease and checks.
    drop(holder);
    poll("the survivor to take over the checks", || async {
        match checks_by(&other).await {
            0 => Err(format!("{} has not checked yet", other.name)),
            n => Ok(n),
        }
    })
    .await;
    assert_eq!(last_check(&other).await["result"], "ok");
}
