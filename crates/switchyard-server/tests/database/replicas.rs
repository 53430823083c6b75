//! Two replicas on one database: a key change on one reaches the other within a second.

use std::time::Duration;

use serde_json::json;

use crate::support::{replica, within, TestDb, SETTLE};

/// The bound the design promises: LISTEN/NOTIFY carries a change to every replica.
const PROPAGATION: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_made_on_replica_a_works_on_b_within_a_second_and_stops_within_a_second() {
    let Some(db) = TestDb::create("replicas").await else {
        return;
    };
    let a = replica(&db.url, "a").await;
    let b = replica(&db.url, "b").await;
    // both have loaded the (empty) table and are listening
    let listening = || async {
        let ready = |r: &crate::support::Replica| r.state.database.as_ref().unwrap().is_up();
        ready(&a) && ready(&b)
    };
    assert!(within(SETTLE, listening).await);
    // a change made now is seen by B's listener (it LISTENs before it first loads)
    let warm = a
        .admin("POST", "/admin/keys", Some(json!({"name": "warm"})))
        .await;
    let warm_token = warm.json["key"].as_str().unwrap().to_owned();
    assert!(within(SETTLE, || async { b.chat(&warm_token).await == 200 }).await);

    let made = a
        .admin("POST", "/admin/keys", Some(json!({"name": "roaming"})))
        .await;
    assert_eq!(made.status, 201, "{}", made.json);
    let token = made.json["key"].as_str().unwrap().to_owned();
    let id = made.json["id"].as_i64().unwrap();
    assert!(
        within(PROPAGATION, || async { b.chat(&token).await == 200 }).await,
        "the key made on A did not work on B within {PROPAGATION:?}"
    );

    let revoked = a.admin("DELETE", &format!("/admin/keys/{id}"), None).await;
    assert_eq!(revoked.status, 200);
    assert!(
        within(PROPAGATION, || async { b.chat(&token).await == 401 }).await,
        "the key revoked on A still worked on B after {PROPAGATION:?}"
    );
    assert!(
        within(PROPAGATION, || async { a.chat(&token).await == 401 }).await,
        "the key revoked on A still worked on A after {PROPAGATION:?}"
    );
}
