//! The admin API end to end, over HTTP, on one replica.

use serde_json::{json, Value};

use crate::support::{replica, within, Replica, TestDb, SETTLE, STATIC};

async fn created(r: &Replica, path: &str, body: Value) -> Value {
    let reply = r.admin("POST", path, Some(body)).await;
    assert_eq!(reply.status, 201, "{}", reply.json);
    reply.json
}

async fn refused(r: &Replica, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let reply = r.admin(method, path, body).await;
    (reply.status, reply.json["error"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_and_teams_are_managed_over_http_and_audited() {
    let Some(db) = TestDb::create("api").await else {
        return;
    };
    let r = replica(&db.url, "api").await;

    // who may call it
    assert_eq!(
        r.call("GET", "/admin/keys", "sy-nobody", None).await.status,
        401
    );
    assert_eq!(r.call("GET", "/admin/keys", STATIC, None).await.status, 403);

    let team = created(
        &r,
        "/admin/teams",
        json!({"name": "blue", "budget_usd": 5, "budget_period": "month", "rpm": 1000}),
    )
    .await;
    assert_eq!(
        (team["name"].as_str(), team["keys"].as_i64()),
        (Some("blue"), Some(0))
    );
    let key = created(&r, "/admin/keys", json!({"name": "svc", "team": "blue", "routes": ["default"], "rpm": 50, "metadata": {"owner": "ops"}})).await;
    let token = key["key"].as_str().unwrap().to_owned();
    let id = key["id"].as_i64().unwrap();
    assert!(token.starts_with("sy-") && token.len() == 67, "{token}");
    assert_eq!(
        (key["team"].as_str(), key["rpm"].as_i64()),
        (Some("blue"), Some(50))
    );

    // bad input names the field; clashes are 409; unknown ids 404
    for (body, field) in [
        (json!({"name": "a b"}), "name"),
        (json!({}), "name"),
        (
            json!({"name": "x", "budget_period": "week"}),
            "budget_period",
        ),
        (json!({"name": "x", "routes": ["nope"]}), "routes"),
        (json!({"name": "x", "bogus": 1}), "bogus"),
        (json!({"name": "x", "rpm": -3}), "rpm"),
        (json!({"name": "x", "budget_usd": "lots"}), "budget_usd"),
        (json!({"name": "x", "expires_at": "tomorrow"}), "expires_at"),
        (
            json!({"name": "x", "expires_at": "2027-02-30T00:00:00Z"}),
            "expires_at",
        ),
        (json!({"name": "x", "team": "nope"}), "team"),
        (json!({"name": "x", "metadata": [1]}), "metadata"),
    ] {
        let (status, e) = refused(&r, "POST", "/admin/keys", Some(body.clone())).await;
        assert_eq!(
            (status, e["param"].as_str()),
            (400, Some(field)),
            "{body}: {e}"
        );
    }
    assert_eq!(
        refused(&r, "POST", "/admin/keys", Some(json!({"name": "svc"})))
            .await
            .0,
        409
    );
    assert_eq!(
        refused(&r, "POST", "/admin/keys", Some(json!({"name": "static"})))
            .await
            .0,
        409
    );
    assert_eq!(
        refused(&r, "POST", "/admin/teams", Some(json!({"name": "blue"})))
            .await
            .0,
        409
    );
    for path in [
        "/admin/keys/999999",
        "/admin/keys/abc",
        "/admin/teams/424242",
    ] {
        assert_eq!(refused(&r, "GET", path, None).await.0, 404, "{path}");
    }
    assert_eq!(
        refused(&r, "PATCH", "/admin/keys/999999", Some(json!({"rpm": 5})))
            .await
            .0,
        404
    );

    // the new key works (once the sync task has it: a NOTIFY away)
    assert!(within(SETTLE, || async { r.chat(&token).await == 200 }).await);

    // read back: never the token or its hash
    let got = r.admin("GET", &format!("/admin/keys/{id}"), None).await;
    assert_eq!(got.status, 200);
    assert!(got.json.get("key").is_none() && !got.json.to_string().contains(&token[3..]));
    assert_eq!(got.json["metadata"]["owner"], "ops");

    // list, filter, paginate
    for n in ["p1", "p2", "p3"] {
        created(&r, "/admin/keys", json!({"name": n})).await;
    }
    let blue = r.admin("GET", "/admin/keys?team=blue", None).await.json;
    assert_eq!(blue["data"].as_array().unwrap().len(), 1, "{blue}");
    let first = r.admin("GET", "/admin/keys?limit=2", None).await.json;
    assert_eq!(
        (
            first["data"].as_array().unwrap().len(),
            first["has_more"].as_bool()
        ),
        (2, Some(true))
    );
    let next = first["next_after"].as_i64().unwrap();
    let rest = r
        .admin("GET", &format!("/admin/keys?limit=2&after={next}"), None)
        .await
        .json;
    assert_eq!(
        (
            rest["data"].as_array().unwrap().len(),
            rest["has_more"].as_bool()
        ),
        (2, Some(false))
    );
    assert_eq!(
        refused(&r, "GET", "/admin/keys?limit=0", None).await.1["param"],
        "limit"
    );
    assert_eq!(
        refused(&r, "GET", "/admin/keys?colour=red", None).await.1["param"],
        "colour"
    );

    // patch: given fields only, null clears
    let patched = r
        .admin(
            "PATCH",
            &format!("/admin/keys/{id}"),
            Some(json!({"rpm": null, "metadata": {"owner": "sre"}})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.json);
    assert_eq!(
        (patched.json["rpm"].clone(), patched.json["routes"].clone()),
        (Value::Null, json!(["default"]))
    );
    assert_eq!(
        refused(
            &r,
            "PATCH",
            &format!("/admin/keys/{id}"),
            Some(json!({"tpm": 0}))
        )
        .await
        .1["param"],
        "tpm"
    );

    // rotate with a grace period: both tokens work; rotate without: the old ones stop
    let rotated = r
        .admin(
            "POST",
            &format!("/admin/keys/{id}/rotate"),
            Some(json!({"grace": "1h"})),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.json);
    let second = rotated.json["key"].as_str().unwrap().to_owned();
    assert!(rotated.json["previous_valid_until"].is_string());
    assert!(within(SETTLE, || async { r.chat(&second).await == 200 }).await);
    assert_eq!(
        r.chat(&token).await,
        200,
        "the old token is in its grace period"
    );
    assert_eq!(
        refused(
            &r,
            "POST",
            &format!("/admin/keys/{id}/rotate"),
            Some(json!({"grace": "90d"}))
        )
        .await
        .1["param"],
        "grace"
    );
    let third = r
        .admin("POST", &format!("/admin/keys/{id}/rotate"), Some(json!({})))
        .await
        .json["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(within(SETTLE, || async { r.chat(&third).await == 200 }).await);
    assert_eq!((r.chat(&token).await, r.chat(&second).await), (401, 401));

    // teams: patch, and no delete while keys are live
    let tid = team["id"].as_i64().unwrap();
    let t = r
        .admin(
            "PATCH",
            &format!("/admin/teams/{tid}"),
            Some(json!({"budget_usd": 9.5})),
        )
        .await;
    assert_eq!((t.status, t.json["budget_usd"].as_f64()), (200, Some(9.5)));
    assert_eq!(
        refused(&r, "DELETE", &format!("/admin/teams/{tid}"), None)
            .await
            .0,
        409
    );

    // revoke: it stops; a revoked key cannot be patched; the team can go
    let revoked = r.admin("DELETE", &format!("/admin/keys/{id}"), None).await;
    assert!(revoked.json["revoked_at"].is_string(), "{}", revoked.json);
    assert!(within(SETTLE, || async { r.chat(&third).await == 401 }).await);
    assert_eq!(
        refused(
            &r,
            "PATCH",
            &format!("/admin/keys/{id}"),
            Some(json!({"rpm": 5}))
        )
        .await
        .0,
        409
    );
    assert_eq!(
        r.admin("DELETE", &format!("/admin/teams/{tid}"), None)
            .await
            .status,
        200
    );
    let listed = r
        .admin("GET", "/admin/keys?revoked=true&name=svc", None)
        .await
        .json;
    assert_eq!(listed["data"][0]["team"], Value::Null, "{listed}");

    // every change is in the audit table, by the admin key's name
    let c = db.client().await;
    let rows = c
        .query("SELECT action, actor FROM audit ORDER BY id", &[])
        .await
        .unwrap();
    let actions: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    for a in [
        "team.create",
        "key.create",
        "key.update",
        "key.rotate",
        "team.update",
        "key.revoke",
        "team.delete",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
    assert!(rows.iter().all(|r| r.get::<_, String>(1) == "root"));
    let hashes: i64 = c
        .query_one(
            "SELECT count(*) FROM audit WHERE after::text LIKE '%' || $1 || '%'",
            &[&&third[3..]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(hashes, 0, "no token in the audit trail");

    // readiness and the metric say the database answers
    let ready = r.call("GET", "/readyz", STATIC, None).await.json;
    assert_eq!(ready, json!({"ready": true, "database": "up"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spend_report_reads_the_aggregates_by_each_grouping() {
    let Some(db) = TestDb::create("report").await else {
        return;
    };
    let r = replica(&db.url, "report").await;
    created(&r, "/admin/teams", json!({"name": "green"})).await;
    let key = created(
        &r,
        "/admin/keys",
        json!({"name": "billed", "team": "green"}),
    )
    .await;
    let token = key["key"].as_str().unwrap().to_owned();
    assert!(within(SETTLE, || async { r.chat(&token).await == 200 }).await);
    for _ in 0..3 {
        assert_eq!(r.chat(&token).await, 200);
    }
    assert_eq!(r.chat(STATIC).await, 200);
    let spend = |q: &'static str| {
        let r = &r;
        async move { r.admin("GET", &format!("/admin/spend?{q}"), None).await }
    };
    let billed = || async {
        let v = spend("group_by=key").await.json;
        v["groups"].as_array().is_some_and(|g| {
            g.iter()
                .any(|x| x["group"] == "billed" && x["requests"] == 4)
                && g.iter()
                    .any(|x| x["group"] == "static" && x["requests"] == 1)
        })
    };
    assert!(
        within(SETTLE, billed).await,
        "{}",
        spend("group_by=key").await.json
    );
    let team = spend("group_by=team").await.json;
    let green = team["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "green")
        .unwrap()
        .clone();
    assert_eq!(green["requests"], 4, "{team}");
    assert!(green["cost_usd"].as_f64().unwrap() > 0.0);
    let models = spend("group_by=model&team=green").await.json;
    assert_eq!(models["groups"].as_array().unwrap().len(), 1, "{models}");
    let days = spend("group_by=day").await.json;
    assert_eq!(days["groups"][0]["requests"], 5, "{days}");
    for (q, field) in [
        ("group_by=colour", "group_by"),
        ("from=2026-13-45", "from"),
        ("to=yesterday", "to"),
    ] {
        let reply = r.admin("GET", &format!("/admin/spend?{q}"), None).await;
        assert_eq!(
            (reply.status, reply.json["error"]["param"].as_str()),
            (400, Some(field)),
            "{q}: {}",
            reply.json
        );
    }
    let none = spend("from=2001-01-01&to=2001-01-31").await.json;
    assert_eq!(none["groups"], json!([]));
}

/// `switchyard keys ... --url` with the admin key in `SWITCHYARD_ADMIN_KEY`.
fn cli(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(args)
        .env("SWITCHYARD_ADMIN_KEY", crate::support::ADMIN)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_keys_command_talks_to_the_admin_api() {
    let Some(db) = TestDb::create("cli").await else {
        return;
    };
    let r = replica(&db.url, "cli").await;
    let url = r.base.clone();
    let run = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
    };
    let (ok, text) = run(vec![
        "keys".into(),
        "new".into(),
        "cli-made".into(),
        "--url".into(),
        url.clone(),
        "--rpm".into(),
        "30".into(),
    ])
    .await
    .unwrap();
    assert!(ok, "{text}");
    let token = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("sy-"))
        .map(|t| format!("sy-{t}"))
        .unwrap();
    assert!(within(SETTLE, || async { r.chat(&token).await == 200 }).await);
    let (ok, listed) = run(vec![
        "keys".into(),
        "list".into(),
        "--url".into(),
        url.clone(),
    ])
    .await
    .unwrap();
    assert!(
        ok && listed.contains("cli-made") && !listed.contains(&token),
        "{listed}"
    );
    let id =
        r.admin("GET", "/admin/keys?name=cli-made", None).await.json["data"][0]["id"].to_string();
    let (ok, text) = run(vec![
        "keys".into(),
        "rotate".into(),
        id.clone(),
        "--url".into(),
        url.clone(),
    ])
    .await
    .unwrap();
    assert!(ok && text.contains("sy-"), "{text}");
    let (ok, text) = run(vec![
        "keys".into(),
        "revoke".into(),
        id.clone(),
        "--url".into(),
        url.clone(),
    ])
    .await
    .unwrap();
    assert!(ok && text.contains("revoked key"), "{text}");
    let (ok, text) = run(vec![
        "keys".into(),
        "revoke".into(),
        "987654".into(),
        "--url".into(),
        url,
    ])
    .await
    .unwrap();
    assert!(!ok && text.contains("404"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teams_rate_limit_holds_across_its_keys() {
    let Some(db) = TestDb::create("team").await else {
        return;
    };
    let r = replica(&db.url, "team").await;
    created(&r, "/admin/teams", json!({"name": "capped", "rpm": 3})).await;
    let one = created(&r, "/admin/keys", json!({"name": "one", "team": "capped"})).await;
    let two = created(&r, "/admin/keys", json!({"name": "two", "team": "capped"})).await;
    let (one, two) = (
        one["key"].as_str().unwrap().to_owned(),
        two["key"].as_str().unwrap().to_owned(),
    );
    // wait until both are loaded without spending the team's minute: a key it does not
    // know is 401 before any limit is counted
    let known = |t: String| {
        let r = &r;
        async move {
            let reply = r.call("GET", "/v1/models", &t, None).await;
            reply.status == 200
        }
    };
    assert!(within(SETTLE, || known(one.clone())).await);
    assert!(within(SETTLE, || known(two.clone())).await);
    let statuses = [
        r.chat(&one).await,
        r.chat(&two).await,
        r.chat(&one).await,
        r.chat(&two).await,
    ];
    assert_eq!(
        statuses,
        [200, 200, 200, 429],
        "three a minute across the team's keys"
    );
}
