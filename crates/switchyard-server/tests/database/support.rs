//! A throwaway database per test, and in-process replicas serving over HTTP on it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest as _, Sha256};
use switchyard::clock::Clock;
use switchyard_server::cli::serve::build_state;
use switchyard_server::http::AppState;
use switchyard_server::shutdown::Tasks;
use tokio::time::Instant;
use tokio_postgres::NoTls;

/// The server every test's database lives on.
const SERVER: &str = "postgres://postgres@127.0.0.1:5432";
/// The admin key's token (only its hash is configured).
pub const ADMIN: &str = "sy-test-admin-0123456789abcdef0123456789abcdef";
/// A configured (TOML) client key's token.
pub const STATIC: &str = "sy-test-static-0123456789abcdef0123456789abcdef";

/// A database made for one test, dropped when the test ends.
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// A fresh database, or `None` (said on stderr) when PostgreSQL is not answering and
    /// `SWITCHYARD_REQUIRE_POSTGRES` is unset.
    pub async fn create(tag: &str) -> Option<Self> {
        let admin = match tokio_postgres::connect(&format!("{SERVER}/postgres"), NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(conn);
                client
            }
            Err(e) => {
                assert!(
                    std::env::var_os("SWITCHYARD_REQUIRE_POSTGRES").is_none(),
                    "PostgreSQL on 127.0.0.1:5432 is required (SWITCHYARD_REQUIRE_POSTGRES) but does not answer: {e}"
                );
                eprintln!("SKIPPED: PostgreSQL on 127.0.0.1:5432 does not answer ({e}); set SWITCHYARD_REQUIRE_POSTGRES=1 to fail instead");
                return None;
            }
        };
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).unwrap();
        let name = format!("switchyard_test_{tag}_{}", hex::encode(bytes));
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        Some(Self {
            url: format!("{SERVER}/{name}"),
            name,
        })
    }

    /// A connection to it, for the test's own checks.
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls).await.unwrap();
        tokio::spawn(conn);
        client
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok((c, conn)) =
                    tokio_postgres::connect(&format!("{SERVER}/postgres"), NoTls).await
                {
                    tokio::spawn(conn);
                    let _ = c
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// A scratch directory, removed on drop.
pub struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("switchyard-db-{}-{n}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An in-process replica serving over HTTP on 127.0.0.1.
pub struct Replica {
    pub base: String,
    pub state: AppState,
    pub tasks: Tasks,
    pub _dir: Dir,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.tasks.stopping().cancel();
    }
}

fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A replica on the database at `url`: one simulated provider behind route `default`, the
/// admin key [`ADMIN`], a configured client key [`STATIC`], a request log.
pub async fn replica(url: &str, tag: &str) -> Replica {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = Dir::new(tag);
    let log = dir.0.join("requests.jsonl");
    let var = format!(
        "SWITCHYARD_TEST_DATABASE_URL_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    );
    std::env::set_var(&var, url);
    let toml = format!(
        r#"
[server]
request_log = "{}"

[[providers]]
name = "aurora"
kind = "simulated"
failure_rate = 0.0
latency_range_ms = [1, 2]
cost_per_1k_tokens = 0.002
seed = 1

[[routes]]
name = "default"
providers = ["aurora"]

[[keys]]
name = "root"
sha256 = "{}"
routes = []
admin = true

[[keys]]
name = "static"
sha256 = "{}"
routes = ["*"]

[database]
url_env = "{var}"
resync = "30s"
"#,
        log.display(),
        hash(ADMIN),
        hash(STATIC)
    );
    let config = switchyard_server::config::parse(&toml, "test").unwrap();
    let tasks = Tasks::new();
    let (state, _wired) = build_state(&config, Clock::system(), &tasks).await.unwrap();
    state.ready.store(true, Ordering::SeqCst);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = switchyard_server::http::app(state.clone());
    let stop = tasks.stopping();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    Replica {
        base,
        state,
        tasks,
        _dir: dir,
    }
}

/// A reply's status and JSON body.
pub struct Reply {
    pub status: u16,
    pub json: Value,
}

impl Replica {
    /// Its request log.
    pub fn log(&self) -> PathBuf {
        self._dir.0.join("requests.jsonl")
    }

    /// `method path` with `token` and an optional JSON body.
    pub async fn call(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Reply {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut req = client
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply { status, json }
    }

    /// An admin call.
    pub async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.call(method, path, ADMIN, body).await
    }

    /// One chat request on route `default` with `token`: its status.
    pub async fn chat(&self, token: &str) -> u16 {
        let body = serde_json::json!({
            "model": "default",
            "messages": [{"role": "user", "content": "hello"}],
        });
        self.call("POST", "/v1/chat/completions", token, Some(body))
            .await
            .status
    }
}

/// Poll `cond` every 10 ms until it holds or `within` has passed; whether it held.
pub async fn within<F, Fut>(within: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The longest a background step (a first key load, a spend batch) may take in a test.
pub const SETTLE: Duration = Duration::from_secs(15);
