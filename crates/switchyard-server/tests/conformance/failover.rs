//! Scenarios 4, 6, 12 and 13: when the gateway moves on to the fallback, and when it must
//! not.

use std::time::Duration;

use faultline::Fault;
use tokio::time::Instant;

use crate::support::{attempts_when, trail_labels, upstream, Conf, Gateway};

/// 4. 503 forever → the fallback answers; once the circuit opens the primary is no longer
/// called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s04_a_dead_primary_opens_its_circuit_and_is_left_alone() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let conf = Conf::new(&up)
        .route("retry = { max_attempts = 2, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 2, cooldown = \"60s\" }");
    let gw = Gateway::start(&conf).await;
    for i in 0..5 {
        let r = gw.chat(&format!("s04-{i}")).await;
        r.assert_canonical();
        assert_eq!(r.header("x-switchyard-provider"), "fallback");
        let labels = trail_labels(&r.json()["switchyard"]);
        if i >= 2 {
            assert_eq!(
                labels,
                ["primary:skipped:circuit_open", "fallback:success"],
                "request {i}"
            );
        }
    }
    let p = up.attempts("primary");
    assert_eq!(p.len(), 4, "two turns of two tries, then nothing: {p:#?}");
    assert_eq!(up.attempts("fallback").len(), 5);
    let h = gw.provider_health("primary").await;
    assert_eq!(h["state"], "open", "{h}");
    assert_eq!(gw.provider_health("fallback").await["state"], "closed");
}

/// 6. No response → the attempt times out, the silent provider is not retried, and the
/// fallback answers within the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s06_a_silent_provider_costs_one_timeout_then_fails_over() {
    let up = upstream().await;
    up.script("primary", Fault::Hang);
    let conf = Conf::new(&up)
        .primary("timeout = \"1s\"")
        .route("deadline = \"5s\"")
        .route("retry = { max_attempts = 3, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }");
    let gw = Gateway::start(&conf).await;
    let started = Instant::now();
    let r = gw.chat("s06").await;
    let took = started.elapsed();
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    assert!(
        took < Duration::from_secs(5),
        "answered after {took:?}, past the 5 s deadline"
    );
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!(p.len(), 1, "a timeout is not retried: {p:#?}");
    assert_eq!(f.len(), 1);
    // The gateway's clock starts when it sends the attempt, the upstream's when the request
    // arrives (a connect later), so the gap seen here may fall short of 1 s by that much.
    let waited = f[0].at - p[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "gave up on the primary after {waited:?}, before its 1 s timeout"
    );
    // the gateway hung up on the silent primary
    attempts_when(&up, "primary", |a| a[0].client_gone()).await;
}

/// 12. Context-length 400 → not resent unchanged to the same model; the fallback
/// answers; at most 2 attempts. Plain and streamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s12_context_length_goes_to_the_next_model_once() {
    let up = upstream().await;
    up.script("primary", Fault::ContextLength);
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 3, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s12").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    assert_eq!(
        (up.attempts("primary").len(), up.attempts("fallback").len()),
        (1, 1)
    );
    let s = gw.stream("s12-stream").await;
    s.assert_canonical();
    assert_eq!(
        (up.attempts("primary").len(), up.attempts("fallback").len()),
        (2, 2)
    );
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}

/// 13. Content-filter 400 → exactly one attempt, and the provider's reason comes back as
/// a clean error (an HTTP error for a stream too: it failed before committing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s13_a_content_filter_is_returned_with_its_reason() {
    let up = upstream().await;
    up.script("primary", Fault::ContentFilter);
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 3, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s13").await;
    assert_eq!(r.status, 400, "{}", r.text);
    let e = &r.json()["error"];
    assert_eq!(e["code"], "content_filter", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("content management policy"),
        "the provider's reason: {message}"
    );
    assert_eq!(up.attempts("primary").len(), 1);
    assert!(
        up.attempts("fallback").is_empty(),
        "not failed over by default"
    );

    let s = gw.stream("s13-stream").await;
    assert_eq!(s.status, 400, "{}", s.raw);
    let e: serde_json::Value = serde_json::from_str(&s.raw).unwrap();
    assert_eq!(e["error"]["code"], "content_filter");
    assert!(!s.done());
    assert_eq!(up.attempts("primary").len(), 2);
    assert!(up.attempts("fallback").is_empty());
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}
