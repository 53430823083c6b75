//! Spend rows from the request log: exact, idempotent, and patient through an outage.

use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use switchyard::clock::Clock;
use switchyard::Usage;
use switchyard_server::access::dynamic::DynamicKeys;
use switchyard_server::config::database::DatabaseSettings;
use switchyard_server::database::spend::{ingest_once, source_name};
use switchyard_server::database::{Database, StoreError};
use switchyard_server::telemetry::log::LogEntry;

use crate::support::{replica, TestDb, STATIC};

fn database(url: &str) -> Arc<Database> {
    let settings = DatabaseSettings {
        url: url.to_owned(),
        pool_size: 2,
        resync: Duration::from_secs(30),
    };
    let keys = Arc::new(DynamicKeys::new(Clock::system(), 1024));
    Database::new(&settings, keys, Clock::system()).unwrap()
}

/// Log line `i`: answered (with a known cost, or every seventh without), or every fifth
/// refused before any provider (not spend).
fn line(i: u64) -> String {
    let answered = !i.is_multiple_of(5);
    let entry = LogEntry {
        id: format!("req-{i}"),
        time_ms: 1_795_969_375_000 + i * 1000,
        api: "chat".into(),
        route: "default".into(),
        key: Some(if i.is_multiple_of(2) { "even" } else { "odd" }.into()),
        stream: false,
        status: if answered { 200 } else { 429 },
        provider: answered.then(|| "aurora".into()),
        model: answered.then(|| "gpt-4o-mini".into()),
        failed_over: false,
        attempts: Vec::new(),
        usage: answered.then(|| Usage {
            input_tokens: 10,
            output_tokens: i,
            ..Usage::default()
        }),
        cost_usd: (answered && !i.is_multiple_of(7)).then_some(0.001),
        latency_ms: 1.0,
        ttft_ms: None,
        error: None,
        dropped: Vec::new(),
        cache: None,
        trace_id: None,
        span_id: None,
        parent_span_id: None,
        sampled: false,
        content: None,
    };
    serde_json::to_string(&entry).unwrap() + "\n"
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Ingest until a batch finds nothing new.
async fn drain(db: &Database, path: &Path) {
    let source = source_name(path);
    for _ in 0..100 {
        if ingest_once(db, path, &source, 7).await.unwrap().lines == 0 {
            return;
        }
    }
    panic!("ingestion did not catch up");
}

/// (spend rows, their distinct ids, aggregated requests, unpriced, output tokens)
async fn counts(c: &tokio_postgres::Client) -> (i64, i64, i64, i64, i64) {
    let spend = c
        .query_one(
            "SELECT count(*), count(DISTINCT request_id) FROM spend",
            &[],
        )
        .await
        .unwrap();
    let daily = c
        .query_one(
            "SELECT coalesce(sum(requests), 0)::int8, coalesce(sum(unpriced), 0)::int8, \
             coalesce(sum(output_tokens), 0)::int8 FROM spend_daily",
            &[],
        )
        .await
        .unwrap();
    let per_team: i64 = c
        .query_one(
            "SELECT coalesce(sum(requests), 0)::int8 FROM spend_team_daily",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        per_team,
        daily.get::<_, i64>(0),
        "the per-team aggregates agree"
    );
    (
        spend.get(0),
        spend.get(1),
        daily.get(0),
        daily.get(1),
        daily.get(2),
    )
}

fn expected(n: u64) -> (i64, i64, i64, i64, i64) {
    let answered: Vec<u64> = (0..n).filter(|i| i % 5 != 0).collect();
    let rows = i64::try_from(answered.len()).unwrap();
    let unpriced = i64::try_from(answered.iter().filter(|i| *i % 7 == 0).count()).unwrap();
    let output = i64::try_from(answered.iter().sum::<u64>()).unwrap();
    (rows, rows, rows, unpriced, output)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spend_rows_equal_the_log_after_rereading_it_and_after_a_lost_checkpoint() {
    let Some(test_db) = TestDb::create("spend").await else {
        return;
    };
    let dir = crate::support::Dir::new("spend");
    let log = dir.0.join("requests.jsonl");
    let db = database(&test_db.url);
    db.migrate().await.unwrap();
    let c = test_db.client().await;

    let text: String = (0..40).map(line).collect();
    // the last line is still being written: only complete lines are read
    let (head, tail) = text.split_at(text.len() - 25);
    append(&log, head);
    drain(&db, &log).await;
    assert_eq!(counts(&c).await, expected(39));
    append(&log, tail);
    drain(&db, &log).await;
    assert_eq!(counts(&c).await, expected(40));

    // the checkpoint lost (a crash between the rows' commit and the checkpoint's, a
    // restored backup): the log is read again and nothing is counted twice
    c.execute("DELETE FROM spend_checkpoint", &[])
        .await
        .unwrap();
    drain(&db, &log).await;
    assert_eq!(counts(&c).await, expected(40));
    // and from the middle
    c.execute(
        "UPDATE spend_checkpoint SET offset_bytes = offset_bytes / 2",
        &[],
    )
    .await
    .unwrap();
    drain(&db, &log).await;
    assert_eq!(counts(&c).await, expected(40));
    let unpriced_cost: i64 = c
        .query_one("SELECT count(*) FROM spend WHERE cost_picos IS NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        unpriced_cost,
        expected(40).3,
        "an unknown cost is NULL, never 0"
    );

    // new lines after all that are counted once
    append(&log, &(40..60).map(line).collect::<String>());
    drain(&db, &log).await;
    assert_eq!(counts(&c).await, expected(60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_wait_on_disk_while_the_database_is_down_and_flush_when_it_is_back() {
    let Some(test_db) = TestDb::create("outage").await else {
        return;
    };
    let dir = crate::support::Dir::new("outage");
    let log = dir.0.join("requests.jsonl");
    append(&log, &(0..30).map(line).collect::<String>());

    // "down": the same log, a database URL on a closed port
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = database(&format!("postgres://postgres@127.0.0.1:{closed}/nothing"));
    let source = source_name(&log);
    let e = ingest_once(&down, &log, &source, 100).await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    assert!(!down.is_up());

    // back: everything that waited is written, once
    let up = database(&test_db.url);
    up.migrate().await.unwrap();
    drain(&up, &log).await;
    assert!(up.is_up());
    assert_eq!(counts(&test_db.client().await).await, expected(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_database_is_down_serves_and_says_so() {
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = replica(
        &format!("postgres://postgres@127.0.0.1:{closed}/nothing"),
        "down",
    )
    .await;
    assert_eq!(
        r.chat(STATIC).await,
        200,
        "traffic never waits on the database"
    );
    let ready = r.call("GET", "/readyz", STATIC, None).await;
    assert_eq!(ready.status, 200);
    assert_eq!(ready.json["database"], "unreachable");
    let metrics = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{}/metrics", r.base))
        .bearer_auth(crate::support::ADMIN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("switchyard_database_up 0"), "{metrics}");
    let change = r
        .admin(
            "POST",
            "/admin/keys",
            Some(serde_json::json!({"name": "later"})),
        )
        .await;
    assert_eq!(change.status, 503, "{}", change.json);
    assert_eq!(change.json["error"]["code"], "database_unavailable");
}

/// A measurement, not a check: how many log lines a second the spend writer ingests
/// (batches of `MAX_BATCH_LINES`). Run with
/// `cargo test -p switchyard-server --release --test database -- --ignored --nocapture ingestion_rate`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn ingestion_rate() {
    use switchyard_server::database::spend::MAX_BATCH_LINES;
    let Some(test_db) = TestDb::create("rate").await else {
        return;
    };
    let dir = crate::support::Dir::new("rate");
    let log = dir.0.join("requests.jsonl");
    let n = 100_000;
    append(&log, &(0..n).map(line).collect::<String>());
    let db = database(&test_db.url);
    db.migrate().await.unwrap();
    let source = source_name(&log);
    let start = std::time::Instant::now();
    while ingest_once(&db, &log, &source, MAX_BATCH_LINES)
        .await
        .unwrap()
        .lines
        > 0
    {}
    let secs = start.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let rate = n as f64 / secs;
    println!("ingested {n} lines in {secs:.2} s: {rate:.0} lines/s");
    assert_eq!(counts(&test_db.client().await).await, expected(n));
}

/// Log line `i` of a varied day: four keys of two teams, one key without a team, and calls
/// without a key; two routes, providers and models; answered on three UTC days.
fn varied_line(i: u64) -> String {
    let mut entry: LogEntry = serde_json::from_str(line(i).trim_end()).unwrap();
    entry.time_ms = 1_795_969_375_000 + (i % 3) * 86_400_000 + i;
    entry.key = match i % 6 {
        5 => None,
        k => Some(format!("k{k}")),
    };
    entry.route = if i % 4 < 2 { "smart" } else { "cheap" }.into();
    if entry.provider.is_some() {
        entry.provider = Some(
            if i.is_multiple_of(3) {
                "aurora"
            } else {
                "borealis"
            }
            .into(),
        );
        entry.model = Some(
            if i.is_multiple_of(2) {
                "gpt-4o-mini"
            } else {
                "claude-haiku"
            }
            .into(),
        );
    }
    serde_json::to_string(&entry).unwrap() + "\n"
}

/// Every report, for every grouping and with and without a key or team, is what the spend
/// rows themselves add up to, on a database whose spend began before migration 2 (the
/// narrow aggregates' backfill) and went on after it (the trigger).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_adds_up_the_spend_rows_across_the_upgrade_to_narrow_aggregates() {
    use switchyard_server::database::migrations::MIGRATIONS;
    use switchyard_server::database::spend::{report, GroupBy, SpendQuery};
    let Some(test_db) = TestDb::create("rollup").await else {
        return;
    };
    let dir = crate::support::Dir::new("rollup");
    let log = dir.0.join("requests.jsonl");
    let c = test_db.client().await;
    // the database as the first release left it: migration 1 only
    c.batch_execute(
        "CREATE TABLE switchyard_migrations (version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now());
         INSERT INTO switchyard_migrations (version) VALUES (1);",
    )
    .await
    .unwrap();
    c.batch_execute(MIGRATIONS[0].1).await.unwrap();
    c.batch_execute(
        "INSERT INTO teams (id, name) VALUES (1, 'red'), (2, 'blue');
         INSERT INTO keys (name, sha256, team_id)
         SELECT 'k' || g, sha256(('t' || g)::bytea), CASE WHEN g = 4 THEN NULL ELSE 1 + g % 2 END
         FROM generate_series(0, 4) g;",
    )
    .await
    .unwrap();
    let settings = DatabaseSettings {
        url: test_db.url.clone(),
        pool_size: 2,
        resync: Duration::from_secs(30),
    };
    let table = Arc::new(DynamicKeys::new(Clock::system(), 1024));
    table.replace(
        switchyard_server::database::keys::load_live(&c)
            .await
            .unwrap(),
    );
    let db = Database::new(&settings, table, Clock::system()).unwrap();
    append(&log, &(0..120).map(varied_line).collect::<String>());
    drain(&db, &log).await;
    assert_eq!(db.migrate().await.unwrap(), 1, "migration 2 runs, alone");
    assert_eq!(db.migrate().await.unwrap(), 0, "and once");
    append(&log, &(120..300).map(varied_line).collect::<String>());
    drain(&db, &log).await;
    // and re-reading the whole log counts nothing twice in any aggregate
    c.execute("DELETE FROM spend_checkpoint", &[])
        .await
        .unwrap();
    drain(&db, &log).await;

    let groupings = [
        (GroupBy::Key, "coalesce(key, '')"),
        (GroupBy::Team, "coalesce(team, '')"),
        (GroupBy::Route, "route"),
        (GroupBy::Provider, "coalesce(provider, '')"),
        (GroupBy::Model, "coalesce(model, '')"),
        (
            GroupBy::Day,
            "to_char((at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')",
        ),
    ];
    let mut checked = 0;
    for (group_by, column) in groupings {
        for key in [None, Some("k1"), Some("")] {
            for team in [None, Some("red"), Some("blue"), Some("")] {
                let q = SpendQuery {
                    group_by,
                    from: "2026-11-01".into(),
                    to: "2026-12-31".into(),
                    key: key.map(str::to_owned),
                    team: team.map(str::to_owned),
                    limit: 1000,
                };
                let mut got = report(&db, &q).await.unwrap();
                let rows = c
                    .query(
                        &format!(
                            "SELECT {column}, count(*), sum(input_tokens)::int8, \
                             sum(output_tokens)::int8, \
                             (coalesce(sum(cost_picos), 0) / 1e12)::float8, \
                             count(*) FILTER (WHERE cost_picos IS NULL) \
                             FROM spend WHERE ($1::text IS NULL OR coalesce(key, '') = $1) \
                             AND ($2::text IS NULL OR coalesce(team, '') = $2) GROUP BY 1"
                        ),
                        &[&q.key, &q.team],
                    )
                    .await
                    .unwrap();
                let mut want: Vec<_> = rows
                    .iter()
                    .map(|r| switchyard_server::database::spend::SpendGroup {
                        group: r.get(0),
                        requests: r.get(1),
                        input_tokens: r.get(2),
                        output_tokens: r.get(3),
                        cost_usd: r.get(4),
                        unpriced: r.get(5),
                    })
                    .collect();
                got.sort_by(|a, b| a.group.cmp(&b.group));
                want.sort_by(|a, b| a.group.cmp(&b.group));
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{group_by:?} key {key:?} team {team:?}"
                );
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(
                        (
                            &g.group,
                            g.requests,
                            g.input_tokens,
                            g.output_tokens,
                            g.unpriced
                        ),
                        (
                            &w.group,
                            w.requests,
                            w.input_tokens,
                            w.output_tokens,
                            w.unpriced
                        ),
                        "{group_by:?} key {key:?} team {team:?}"
                    );
                    assert!(
                        (g.cost_usd - w.cost_usd).abs() < 1e-9,
                        "{group_by:?} key {key:?} team {team:?}: {} vs {}",
                        g.cost_usd,
                        w.cost_usd
                    );
                }
                checked += usize::from(!want.is_empty());
            }
        }
    }
    let rows: i64 = c
        .query_one("SELECT count(*) FROM spend", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 240, "the answered among 300 lines, once each");
    assert!(
        checked > 40,
        "most questions have spend to add up ({checked})"
    );
}
