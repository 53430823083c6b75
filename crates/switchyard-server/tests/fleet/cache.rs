//! A route's response cache kept in the fleet's Redis (`[cache] backend = "redis"`): an
//! answer stored by one replica is a hit on the other, plain or streamed, and the upstream
//! is called once for the fleet.

use crate::redis::SharedRedis;
use crate::support::{pair, upstream, Conf};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cached_on_one_replica_is_a_hit_on_the_other() {
    let up = upstream().await;
    let redis = SharedRedis::new("cache");
    let conf = Conf::fleet(&up, redis.backend("2s"))
        .route("cache = { ttl = \"10m\", scope = \"route\", any_temperature = true }")
        .section("[cache]\nbackend = \"redis\"\n");
    let (a, b, _dirs) = pair("cache", &conf).await;

    let first = a.chat("cache-a-1").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.header("x-switchyard-cache"), "miss");
    first.assert_canonical();

    let hit = b.chat("cache-b-1").await;
    assert_eq!(hit.status, 200, "{}", hit.text);
    assert_eq!(hit.header("x-switchyard-cache"), "hit", "{}", hit.text);
    assert_eq!(
        hit.json()["choices"][0]["message"]["content"],
        first.json()["choices"][0]["message"]["content"]
    );
    assert_eq!(hit.json()["switchyard"]["cache"]["status"], "hit");

    // streaming is not in the key: B replays the stored answer as a stream
    let streamed = b.stream("cache-b-2").await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert_eq!(streamed.header("x-switchyard-cache"), "hit");
    assert!(
        streamed.text.trim_end().ends_with("data: [DONE]"),
        "{}",
        streamed.text
    );
    assert_eq!(
        up.attempts("primary").len(),
        1,
        "one upstream call for the fleet"
    );
}
