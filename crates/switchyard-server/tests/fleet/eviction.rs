//! A Redis that may evict budget books is refused before anything is served: `serve` and
//! `check` read its `maxmemory-policy` and refuse `allkeys-*` in the same words; one whose
//! policy cannot be read (CONFIG and INFO renamed away) is a warning, and serving goes on.

use crate::common::serve::{command, Launch};
use crate::redis::RedisServer;
use crate::support::{config_dir, upstream, Backend, Conf, Replica};

/// `switchyard check` on `dir`'s config: (succeeded, stdout, stderr).
fn check(dir: &crate::common::serve::Scratch) -> (bool, String, String) {
    let config = dir.file("switchyard.toml");
    let out = command(
        &["check", "--config", config.to_str().unwrap()],
        &[],
        &dir.path,
    )
    .output()
    .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn backend(redis: &RedisServer, tag: &str) -> Backend {
    Backend::Redis {
        url: redis.url(),
        prefix: format!("switchyard-fleet-test:{}:{tag}", std::process::id()),
        timeout: "250ms",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_check_refuse_a_budget_redis_that_evicts_any_key() {
    let up = upstream().await;
    let redis = RedisServer::start_with("allkeys", &["--maxmemory-policy", "allkeys-lru"]).await;
    let conf = Conf::fleet(&up, backend(&redis, "allkeys")).route("budget_usd = 1.0");
    let dir = config_dir("evicting-redis", &conf);

    let (ok, _, said) = check(&dir);
    assert!(!ok, "check must fail: {said}");
    let words = said
        .strip_prefix("switchyard: error: ")
        .unwrap_or(&said)
        .trim()
        .to_owned();
    assert!(words.contains("maxmemory-policy is allkeys-lru"), "{said}");
    assert!(
        words.contains("noeviction") && words.contains("store_url"),
        "{said}"
    );

    let config = dir.file("switchyard.toml");
    let mut cmd = command(
        &["serve", "--config", config.to_str().unwrap()],
        &[],
        &dir.path,
    );
    cmd.args(["--listen", "127.0.0.1:0"]);
    let exited = match Launch::spawn("switchyard", cmd).wait().await {
        Ok(_) => panic!("serve started on an allkeys-lru Redis"),
        Err(e) => e,
    };
    assert!(!exited.status.success());
    assert!(
        exited.stderr.contains(&words),
        "the same words as check:\n{}\ncheck said: {words}",
        exited.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_cannot_be_read_is_said_and_serving_goes_on() {
    let up = upstream().await;
    let renamed = [
        "--maxmemory-policy",
        "allkeys-lru",
        "--rename-command",
        "CONFIG",
        "",
        "--rename-command",
        "INFO",
        "",
    ];
    let redis = RedisServer::start_with("unreadable", &renamed).await;
    let conf = Conf::fleet(&up, backend(&redis, "unreadable"));
    let dir = config_dir("unreadable-policy", &conf);

    let (ok, out, err) = check(&dir);
    assert!(ok, "a warning, not a refusal: {out}{err}");
    assert!(
        out.contains("could not check the maxmemory-policy of the Redis at redis://127.0.0.1:"),
        "{out}"
    );
    assert!(out.contains("CONFIG GET refused"), "{out}");

    let replica = Replica::start("A", &dir).await;
    assert!(
        replica
            .stderr()
            .contains("could not check the maxmemory-policy"),
        "{}",
        replica.stderr()
    );
    replica.chat("served").await.assert_canonical();
}
