//! A timeout caused by the request's own size is not the provider's failure: a plain call
//! that asks for more output (`max_tokens`) than a healthy provider writes within the
//! attempt's timeout (at `HEALTHY_PACE` tokens a second, docs/design.md "Circuit breaker")
//! fails over without counting against the provider's breaker, and as the half-open probe
//! gives the probe back. Short requests that time out, and a dead provider, still count.

use std::sync::Arc;
use std::time::Duration;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ChatRequest, ErrorKind, Gateway};

use super::{breaker, priced, route, state_of};

/// A primary with a 3 s attempt timeout, then a backup that answers at once; the primary's
/// circuit opens after 3 failed turns and stays open 30 s.
fn gateway(primary: &Arc<ScriptedProvider>) -> Gateway {
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::text("backup")));
    Gateway::builder()
        .provider(priced("primary", primary).timeout(Duration::from_secs(3)))
        .provider(priced("backup", &backup))
        .route(route(&["primary", "backup"]).breaker(breaker(3, 30)))
        .seed(1)
        .build()
        .unwrap()
}

/// A healthy provider writing a long answer: it takes a minute.
fn writing_a_long_answer() -> Arc<ScriptedProvider> {
    Arc::new(
        ScriptedProvider::new("p")
            .otherwise(Step::text("a long answer").after(Duration::from_secs(60))),
    )
}

fn asking(max_tokens: Option<u32>) -> ChatRequest {
    let req = ChatRequest::from_prompt("write it all");
    match max_tokens {
        Some(n) => req.with_max_tokens(n),
        None => req,
    }
}

#[tokio::test(start_paused = true)]
async fn long_requests_that_time_out_do_not_open_the_circuit() {
    let primary = writing_a_long_answer();
    let gw = gateway(&primary);
    for _ in 0..5 {
        let reply = gw.chat("main", &asking(Some(30_000))).await.unwrap();
        assert_eq!(reply.provider, "backup");
        assert_eq!(reply.attempts[0].outcome.label(), "failed:timeout");
    }
    assert_eq!(primary.calls(), 5, "never skipped");
    assert_eq!(state_of(&gw, "primary").await, "closed");
}

#[tokio::test(start_paused = true)]
async fn short_requests_that_time_out_still_open_it() {
    // 50 tokens fit in 3 s at a healthy pace; a request without max_tokens names no size
    for max_tokens in [Some(50), None] {
        let primary = writing_a_long_answer();
        let gw = gateway(&primary);
        for _ in 0..3 {
            let reply = gw.chat("main", &asking(max_tokens)).await.unwrap();
            assert_eq!(reply.provider, "backup");
        }
        assert_eq!(state_of(&gw, "primary").await, "open", "{max_tokens:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_dead_provider_still_opens_for_long_requests() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::fail(ErrorKind::Connection)));
    let gw = gateway(&primary);
    for _ in 0..3 {
        gw.chat("main", &asking(Some(30_000))).await.unwrap();
    }
    assert_eq!(state_of(&gw, "primary").await, "open");
}

#[tokio::test(start_paused = true)]
async fn a_hanging_provider_still_opens_for_short_requests_among_long_ones() {
    let primary = Arc::new(ScriptedProvider::new("p").otherwise(Step::Hang));
    let gw = gateway(&primary);
    for max_tokens in [
        Some(30_000),
        Some(50),
        Some(30_000),
        None,
        Some(30_000),
        Some(10),
    ] {
        gw.chat("main", &asking(max_tokens)).await.unwrap();
    }
    // the long requests' timeouts neither counted nor reset the count
    assert_eq!(state_of(&gw, "primary").await, "open");
}

#[tokio::test(start_paused = true)]
async fn a_long_request_as_the_probe_gives_the_probe_back() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then_n(3, &Step::fail(ErrorKind::Timeout))
            .then(Step::text("a long answer").after(Duration::from_secs(60)))
            .otherwise(Step::text("short")),
    );
    let gw = gateway(&primary);
    for _ in 0..3 {
        gw.chat("main", &asking(None)).await.unwrap();
    }
    assert_eq!(state_of(&gw, "primary").await, "open");
    tokio::time::advance(Duration::from_secs(30)).await;
    let long = gw.chat("main", &asking(Some(30_000))).await.unwrap();
    assert!(long.attempts[0].probe, "{:?}", long.attempts);
    assert_eq!(long.provider, "backup");
    assert_eq!(
        state_of(&gw, "primary").await,
        "half_open",
        "not reopened by the request's own size"
    );
    let next = gw.chat("main", &asking(Some(50))).await.unwrap();
    assert_eq!(next.provider, "primary", "the next request probes at once");
    assert_eq!(state_of(&gw, "primary").await, "closed");
}
