//! The database stopped while traffic flows: no request fails, `/readyz` and the metric say
//! the database is unreachable, and once it is back the spend rows are exactly the request
//! log's answered requests, each once, with aggregates that agree.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::cluster::Cluster;
use crate::support::{replica, within, Replica, ADMIN, SETTLE, STATIC};

/// Most chat requests the load sends in all (it is a bounded stream).
const MAX_REQUESTS: usize = 4000;
/// Requests answered in each phase (before, during and after the outage) before the next.
const PER_PHASE: usize = 40;

/// The request log's answered requests (a provider answered): (id, key), in log order.
fn answered(log: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["provider"].is_string())
        .map(|v| {
            let id = v["id"].as_str().unwrap().to_owned();
            (id, v["key"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Two clients sending chat requests, one with a database key and one with a TOML key,
/// until told to stop or [`MAX_REQUESTS`] are sent; every status is kept.
struct Load {
    answered: Arc<AtomicUsize>,
    statuses: Arc<Mutex<Vec<(String, u16)>>>,
    stop: Arc<AtomicBool>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(base: &str, tokens: &[(&str, String)]) -> Self {
        let answered = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicUsize::new(0));
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let workers = tokens
            .iter()
            .map(|(who, token)| {
                let (base, who, token) = (base.to_owned(), (*who).to_owned(), token.clone());
                let (answered, sent) = (Arc::clone(&answered), Arc::clone(&sent));
                let (statuses, stop) = (Arc::clone(&statuses), Arc::clone(&stop));
                tokio::spawn(async move {
                    let client = reqwest::Client::builder().no_proxy().build().unwrap();
                    let body = json!({"model": "default", "messages": [{"role": "user", "content": "hi"}]});
                    while !stop.load(Ordering::SeqCst)
                        && sent.fetch_add(1, Ordering::SeqCst) < MAX_REQUESTS
                    {
                        let status = client
                            .post(format!("{base}/v1/chat/completions"))
                            .bearer_auth(&token)
                            .header("content-type", "application/json")
                            .body(body.to_string())
                            .send()
                            .await
                            .map_or(0, |r| r.status().as_u16());
                        statuses.lock().unwrap().push((who.clone(), status));
                        if status == 200 {
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        Self {
            answered,
            statuses,
            stop,
            workers,
        }
    }

    /// Wait (bounded) until `more` requests have been answered since now.
    async fn answers(&self, more: usize) {
        let want = self.answered.load(Ordering::SeqCst) + more;
        let got = within(SETTLE, || async {
            self.answered.load(Ordering::SeqCst) >= want
        })
        .await;
        assert!(
            got,
            "the load did not get {more} more answers: {}",
            self.failures()
        );
    }

    fn failures(&self) -> String {
        let s = self.statuses.lock().unwrap();
        let bad: Vec<_> = s.iter().filter(|(_, st)| *st != 200).take(10).collect();
        format!("{} sent, not answered: {bad:?}", s.len())
    }

    /// Stop and wait for the workers; every status sent.
    async fn finish(self) -> Vec<(String, u16)> {
        self.stop.store(true, Ordering::SeqCst);
        for w in self.workers {
            w.await.unwrap();
        }
        Arc::try_unwrap(self.statuses)
            .unwrap()
            .into_inner()
            .unwrap()
    }
}

async fn database_state(r: &Replica) -> (String, String) {
    let ready = r.call("GET", "/readyz", STATIC, None).await;
    assert_eq!(ready.status, 200, "{}", ready.json);
    let metrics = r.call("GET", "/metrics", ADMIN, None).await.json;
    let text = metrics.as_str().unwrap_or_default();
    let up = text
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_database_up "))
        .unwrap_or("absent")
        .to_owned();
    (
        ready.json["database"].as_str().unwrap_or("?").to_owned(),
        up,
    )
}

/// Whether the spend tables hold exactly `want` (the log's answered requests), each once,
/// with aggregates that agree; `Err` says what differs (the database may not answer yet).
async fn spend_matches(url: &str, want: &[(String, String)]) -> Result<(), String> {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let row = c
        .query_one(
            "SELECT count(*), count(DISTINCT (request_id, at)), coalesce(sum(cost_picos), 0)::int8, \
             (SELECT coalesce(sum(requests), 0)::int8 FROM spend_daily), \
             (SELECT coalesce(sum(cost_picos), 0)::int8 FROM spend_daily), \
             (SELECT coalesce(sum(requests), 0)::int8 FROM spend_team_daily), \
             (SELECT coalesce(sum(cost_picos), 0)::int8 FROM spend_team_daily) FROM spend",
            &[],
        )
        .await
        .map_err(|e| e.to_string())?;
    let n: Vec<i64> = (0..7).map(|i| row.get(i)).collect();
    let rows = i64::try_from(want.len()).unwrap();
    if n[0] != rows {
        return Err(format!("{} spend rows, {rows} answered requests", n[0]));
    }
    assert_eq!(n[1], n[0], "a request counted twice");
    assert_eq!((n[3], n[5]), (rows, rows), "the aggregates' request counts");
    assert_eq!((n[4], n[6]), (n[2], n[2]), "the aggregates' cost");
    let stored: Vec<(String, String)> = c
        .query("SELECT request_id, key FROM spend ORDER BY request_id", &[])
        .await
        .map_err(|e| e.to_string())?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut want = want.to_vec();
    want.sort();
    assert_eq!(stored, want, "the same requests and keys, each once");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_stopped_under_traffic_fails_no_request_and_loses_no_spend() {
    let Some(cluster) = tokio::task::block_in_place(|| Cluster::start("outage")) else {
        return;
    };
    let r = replica(&cluster.url(), "outage").await;
    let db_up = || async { r.state.database.as_ref().unwrap().is_up() };
    assert!(
        within(SETTLE, db_up).await,
        "the replica never reached its database"
    );
    let made = r
        .admin("POST", "/admin/keys", Some(json!({"name": "virtual"})))
        .await;
    assert_eq!(made.status, 201, "{}", made.json);
    let token = made.json["key"].as_str().unwrap().to_owned();
    assert!(
        within(SETTLE, || async { r.chat(&token).await == 200 }).await,
        "the database key never authenticated"
    );

    let load = Load::start(
        &r.base,
        &[("virtual", token), ("static", STATIC.to_owned())],
    );
    load.answers(PER_PHASE).await;

    // the database goes away mid-traffic
    tokio::task::block_in_place(|| cluster.down());
    let said = within(SETTLE, || async {
        database_state(&r).await == ("unreachable".to_owned(), "0".to_owned())
    })
    .await;
    assert!(
        said,
        "readyz and the metric: {:?}",
        database_state(&r).await
    );
    load.answers(PER_PHASE).await;
    let change = r
        .admin("POST", "/admin/keys", Some(json!({"name": "later"})))
        .await;
    assert_eq!(change.status, 503, "changes wait: {}", change.json);

    // it comes back
    tokio::task::block_in_place(|| cluster.up());
    let back = within(SETTLE, || async {
        database_state(&r).await == ("up".to_owned(), "1".to_owned())
    })
    .await;
    assert!(
        back,
        "readyz and the metric: {:?}",
        database_state(&r).await
    );
    load.answers(PER_PHASE).await;
    let statuses = load.finish().await;
    let failed: Vec<_> = statuses.iter().filter(|(_, s)| *s != 200).collect();
    assert!(
        failed.is_empty(),
        "{} of {} requests failed: {failed:?}",
        failed.len(),
        statuses.len()
    );
    for who in ["virtual", "static"] {
        assert!(
            statuses.iter().any(|(w, _)| w == who),
            "the {who} key sent nothing"
        );
    }

    // every answered request becomes one spend row, with the key that sent it
    let log = r.log();
    let last = std::cell::RefCell::new(String::new());
    let last = &last;
    let caught_up = within(SETTLE, || {
        let (want, url) = (answered(&log), cluster.url());
        async move {
            let r = spend_matches(&url, &want).await;
            r.map_err(|e| *last.borrow_mut() = e).is_ok()
        }
    })
    .await;
    assert!(
        caught_up,
        "spend rows never matched the log: {}",
        last.borrow()
    );
    let want = answered(&log);
    assert!(
        want.len() > 3 * PER_PHASE,
        "{} answered requests",
        want.len()
    );
    assert!(want.iter().any(|(_, k)| k == "virtual") && want.iter().any(|(_, k)| k == "static"));
}
