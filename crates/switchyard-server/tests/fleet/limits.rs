//! A client key's rate limit is the fleet's, not each replica's.

use futures_util::future::join_all;
use sha2::{Digest as _, Sha256};

use crate::redis::SharedRedis;
use crate::support::{pair, upstream, Conf, Replica, Reply};

/// The client's bearer token (only its SHA-256 goes into the config).
const TOKEN: &str = "sy-fleet-test-rate-limited-client";

/// Request `i` to `replica` with the client key.
async fn keyed(replica: &Replica, i: usize) -> Reply {
    let auth = format!("Bearer {TOKEN}");
    let id = format!("{}-{i}", replica.name);
    replica.chat_with(&id, &[("authorization", &auth)]).await
}

/// A key with `rpm = 4` sends 3 requests to each replica at once: exactly 4 are
/// answered, and the other 2 get 429 `rate_limit_exceeded` with a `Retry-After` (GCRA at
/// 4 a minute: the next unit fits 15 s later) and never reach the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keys_rate_limit_holds_across_the_fleet() {
    let up = upstream().await;
    let redis = SharedRedis::new("rpm");
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let conf = Conf::fleet(&up, redis.backend("2s")).section(&format!(
        "[[keys]]\nname = \"fleet-client\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\nrpm = 4\n"
    ));
    let (a, b, _dirs) = pair("rpm", &conf).await;

    // each replica alone sees 3 requests, under its 4: only the fleet's count refuses
    let replies: Vec<Reply> = join_all((0..3).flat_map(|i| [keyed(&a, i), keyed(&b, i)])).await;

    let ok = replies.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert_eq!(
        (ok, limited.len()),
        (4, 2),
        "statuses: {:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    for r in replies.iter().filter(|r| r.status == 200) {
        r.assert_canonical();
    }
    for r in &limited {
        assert_eq!(
            r.json()["error"]["code"],
            "rate_limit_exceeded",
            "{}",
            r.text
        );
        let wait: u64 = r
            .header("retry-after")
            .parse()
            .unwrap_or_else(|_| panic!("no Retry-After in a 429: {:?}", r.headers));
        assert!((1..=60).contains(&wait), "Retry-After: {wait}");
    }
    assert_eq!(
        up.attempts("primary").len(),
        4,
        "a limited request never reaches the upstream"
    );
}
