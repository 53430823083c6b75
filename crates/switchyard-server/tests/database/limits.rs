//! A database key's and its team's limits changed through the admin API: what was spent
//! stays spent, only the limits change (their books are the store's, by the key's name and
//! the team's id, and a change re-reads the key, not the books).

use std::time::Duration;

use serde_json::json;
use switchyard::Money;

use crate::support::{replica, within, Replica, TestDb, SETTLE};

/// Spend $1 against `scope` directly in the replica's state store.
async fn spend_a_dollar(r: &Replica, scope: &str) {
    let store = r.state.gateway.state();
    let usd = Money::from_usd;
    let id = store
        .reserve(scope, usd(100.0), usd(1.0), Duration::from_secs(60))
        .await
        .unwrap();
    store.settle(scope, id, usd(1.0), usd(1.0)).await;
}

async fn spent(r: &Replica, scope: &str) -> Money {
    let store = r.state.gateway.state();
    store.budget(scope, Money::from_usd(100.0)).await.spent
}

async fn patch(r: &Replica, path: &str, body: serde_json::Value) {
    let reply = r.admin("PATCH", path, Some(body)).await;
    assert_eq!(reply.status, 200, "{}", reply.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patching_a_keys_or_teams_budget_keeps_what_was_spent() {
    let Some(db) = TestDb::create("limits").await else {
        return;
    };
    let r = replica(&db.url, "limits").await;
    assert!(
        within(SETTLE, || async {
            r.state.database.as_ref().unwrap().is_up()
        })
        .await
    );
    let team = r
        .admin(
            "POST",
            "/admin/teams",
            Some(json!({"name": "blue", "budget_usd": 1.0})),
        )
        .await;
    assert_eq!(team.status, 201, "{}", team.json);
    let team_id = team.json["id"].as_i64().unwrap();
    let key = r
        .admin(
            "POST",
            "/admin/keys",
            Some(json!({"name": "svc", "team": "blue", "budget_usd": 1.0})),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.json);
    let (key_id, token) = (
        key.json["id"].as_i64().unwrap(),
        key.json["key"].as_str().unwrap().to_owned(),
    );
    assert!(within(SETTLE, || async { r.chat(&token).await == 200 }).await);

    // both budgets used up
    let team_scope = format!("team:{team_id}");
    spend_a_dollar(&r, "key:svc").await;
    spend_a_dollar(&r, &team_scope).await;
    assert_eq!(r.chat(&token).await, 402);

    // both raised: answered again, on top of what was spent
    patch(
        &r,
        &format!("/admin/keys/{key_id}"),
        json!({"budget_usd": 20.0}),
    )
    .await;
    patch(
        &r,
        &format!("/admin/teams/{team_id}"),
        json!({"budget_usd": 20.0}),
    )
    .await;
    assert!(
        within(SETTLE, || async { r.chat(&token).await == 200 }).await,
        "the raised budgets never applied"
    );
    assert!(spent(&r, "key:svc").await > Money::from_usd(1.0));
    assert!(spent(&r, &team_scope).await > Money::from_usd(1.0));

    // each lowered back to $1 in turn (the other at $20): refused, by that one's kept spend
    patch(
        &r,
        &format!("/admin/keys/{key_id}"),
        json!({"budget_usd": 1.0}),
    )
    .await;
    assert!(
        within(SETTLE, || async { r.chat(&token).await == 402 }).await,
        "the key's lowered budget never refused"
    );
    patch(
        &r,
        &format!("/admin/keys/{key_id}"),
        json!({"budget_usd": 20.0}),
    )
    .await;
    assert!(within(SETTLE, || async { r.chat(&token).await == 200 }).await);
    patch(
        &r,
        &format!("/admin/teams/{team_id}"),
        json!({"budget_usd": 1.0}),
    )
    .await;
    assert!(
        within(SETTLE, || async { r.chat(&token).await == 402 }).await,
        "the team's lowered budget never refused"
    );
}
