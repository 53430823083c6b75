//! `kill -9` mid-load, then a restart: spend rows equal the request log, none twice.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use crate::support::{within, Dir, TestDb, ADMIN, SETTLE, STATIC};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn spawn(config: &std::path::Path, port: u16, url: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["serve", "--config"])
        .arg(config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("SWITCHYARD_CRASH_DATABASE_URL", url)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn up(base: &str) -> bool {
    within(SETTLE, || async {
        client().get(format!("{base}/healthz")).send().await.is_ok()
    })
    .await
}

async fn chat(base: &str, token: &str) -> Option<u16> {
    let body = json!({"model": "default", "messages": [{"role": "user", "content": "hi"}]});
    let resp = client()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    Some(resp.status().as_u16())
}

/// The request ids of the log's complete lines that were answered by a provider.
fn answered(log: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["provider"].is_string())
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_9_mid_load_and_a_restart_spend_rows_equal_the_log() {
    let Some(db) = TestDb::create("crash").await else {
        return;
    };
    let dir = Dir::new("crash");
    let log = dir.0.join("requests.jsonl");
    let hash = |t: &str| hex::encode(Sha256::digest(t.as_bytes()));
    let config = dir.0.join("switchyard.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nrequest_log = \"{}\"\n\n[[providers]]\nname = \"aurora\"\nkind = \"simulated\"\nfailure_rate = 0.0\nlatency_range_ms = [1, 3]\ncost_per_1k_tokens = 0.002\nseed = 3\n\n[[routes]]\nname = \"default\"\nproviders = [\"aurora\"]\n\n[[keys]]\nname = \"root\"\nsha256 = \"{}\"\nroutes = []\nadmin = true\n\n[[keys]]\nname = \"static\"\nsha256 = \"{}\"\nroutes = [\"*\"]\n\n[database]\nurl_env = \"SWITCHYARD_CRASH_DATABASE_URL\"\n",
            log.display(),
            hash(ADMIN),
            hash(STATIC)
        ),
    )
    .unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut first = spawn(&config, port, &db.url);
    assert!(up(&base).await, "the first process did not listen");

    // load from two clients; the process is killed while they send
    let answered_before = Arc::new(AtomicUsize::new(0));
    let load = (0..4).map(|_| {
        let base = base.clone();
        let count = Arc::clone(&answered_before);
        tokio::spawn(async move {
            while let Some(status) = chat(&base, STATIC).await {
                if status == 200 {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    });
    let load: Vec<_> = load.collect();
    assert!(
        within(SETTLE, || async {
            answered_before.load(Ordering::SeqCst) >= 60
        })
        .await
    );
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    for l in load {
        l.await.unwrap();
    }

    // restart on the same log and database; more traffic after it
    let mut second = spawn(&config, port, &db.url);
    assert!(up(&base).await, "the restarted process did not listen");
    for _ in 0..5 {
        assert_eq!(chat(&base, STATIC).await, Some(200));
    }
    let c = db.client().await;
    let caught_up = || async {
        let want = answered(&log).len() as i64;
        let row = c
            .query_one(
                "SELECT count(*), count(DISTINCT (request_id, at)), \
                 (SELECT coalesce(sum(requests), 0)::int8 FROM spend_daily) FROM spend",
                &[],
            )
            .await
            .unwrap();
        let (rows, distinct, daily): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        rows == want && distinct == rows && daily == rows
    };
    assert!(
        within(SETTLE, caught_up).await,
        "spend rows never matched the log"
    );
    let ids = answered(&log);
    let stored: Vec<String> = c
        .query("SELECT request_id FROM spend ORDER BY request_id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(stored, want, "the same requests, each once");
    assert!(ids.len() >= 65);
    second.kill().unwrap();
    second.wait().unwrap();
}
