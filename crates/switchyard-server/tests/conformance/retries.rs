//! Scenarios 1, 2, 3 and 5: what the gateway does on the same provider before it moves on.

use std::time::Duration;

use faultline::{Fault, Script};

use crate::support::{upstream, Conf, Gateway};

/// 1. 429 with `Retry-After: 2` once → the retry comes no sooner than told; no more than
/// 2 attempts in the first 1.5 s. (The wait fits `max_retry_after` and the deadline, so
/// docs/design.md says: retry, not fail over.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s01_retry_after_is_waited_for_exactly() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::rate_limited(2)));
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 2, base_delay = \"50ms\", max_delay = \"200ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s01").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "primary");
    let p = up.attempts("primary");
    assert_eq!(p.len(), 2, "one 429, one retry: {p:#?}");
    assert_eq!(p[0].fault, Fault::rate_limited(2));
    let gap = p[1].at - p[0].at;
    assert!(
        gap >= Duration::from_secs(2),
        "retried {gap:?} after a Retry-After of 2 s"
    );
    assert!(
        gap < Duration::from_secs(5),
        "waited {gap:?}, far past the 2 s asked"
    );
    assert!(up.attempts("fallback").is_empty(), "no failover needed");
    let early = up
        .all_attempts()
        .iter()
        .filter(|a| a.at - p[0].at < Duration::from_millis(1500))
        .count();
    assert!(early <= 2, "{early} attempts in the first 1.5 s");

    // the same in milliseconds (`retry-after-ms`, OpenAI's and Azure's precise form)
    up.script(
        "primary",
        Script::once(Fault::Status {
            status: 429,
            retry_after: None,
            retry_after_ms: Some(1500),
            code: None,
            message: None,
        }),
    );
    gw.chat("s01-ms").await.assert_canonical();
    let p = up.attempts("primary");
    assert_eq!(p.len(), 4, "{p:#?}");
    let gap = p[3].at - p[2].at;
    assert!(
        gap >= Duration::from_millis(1500),
        "retried {gap:?} after retry-after-ms 1500"
    );
    assert!(gap < Duration::from_millis(4500), "waited {gap:?}");
}

/// 1b. The same 429 when its wait does not fit `max_retry_after` → fail over at once
/// (the other allowed conduct), never retry early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s01b_a_retry_after_too_long_fails_over_at_once() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::rate_limited(2)));
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 2, base_delay = \"50ms\", max_delay = \"200ms\", max_retry_after = \"1s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s01b").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!(
        (p.len(), f.len()),
        (1, 1),
        "primary {p:#?}\nfallback {f:#?}"
    );
    let gap = f[0].at - p[0].at;
    assert!(
        gap < Duration::from_millis(1500),
        "failed over only after {gap:?}"
    );
    // the provider asked for 2 s: it is cooling, not retried early by the next request
    let r = gw.chat("s01b-2").await;
    r.assert_canonical();
    let p = up.attempts("primary");
    assert!(
        p.len() == 1 || p[1].at - p[0].at >= Duration::from_secs(2),
        "primary called again {:?} after asking for 2 s",
        p[1].at - p[0].at
    );
}

/// 1c. A Retry-After that fits `max_retry_after` but not the deadline → fail over at
/// once, and the answer still comes within the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s01c_a_retry_after_past_the_deadline_fails_over_at_once() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::rate_limited(2)));
    let conf = Conf::new(&up)
        .route("deadline = \"1500ms\"")
        .route("retry = { max_attempts = 2, base_delay = \"50ms\", max_delay = \"200ms\", max_retry_after = \"5s\" }");
    let gw = Gateway::start(&conf).await;
    let started = tokio::time::Instant::now();
    let r = gw.chat("s01c").await;
    let took = started.elapsed();
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "fallback");
    assert!(
        took < Duration::from_millis(1500),
        "answered after {took:?}"
    );
    let (p, f) = (up.attempts("primary"), up.attempts("fallback"));
    assert_eq!(
        (p.len(), f.len()),
        (1, 1),
        "primary {p:#?}\nfallback {f:#?}"
    );
    assert!(
        f[0].at - p[0].at < Duration::from_millis(1000),
        "waited before failing over"
    );
}

/// 2. 429 forever, no header → backoff with full jitter, bounded attempts, then the
/// fallback answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s02_rate_limited_forever_backs_off_with_jitter_then_fails_over() {
    let up = upstream().await;
    up.script("primary", Fault::status(429));
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 3, base_delay = \"200ms\", max_delay = \"800ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let requests = 4;
    for i in 0..requests {
        let r = gw.chat(&format!("s02-{i}")).await;
        r.assert_canonical();
        assert_eq!(r.header("x-switchyard-provider"), "fallback");
        assert_eq!(r.header("x-switchyard-failed-over"), "true");
        assert_eq!(r.header("x-switchyard-attempts"), "4");
    }
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!(p.len(), 3 * requests, "max_attempts per request: {p:#?}");
    assert_eq!(f.len(), requests);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for (i, turn) in p.chunks(3).enumerate() {
        let (g1, g2) = (turn[1].at - turn[0].at, turn[2].at - turn[1].at);
        // full jitter: U[0, base·2^n]; generous slack for a loaded machine
        assert!(
            g1 <= Duration::from_millis(200 + 500),
            "retry 1 after {g1:?}"
        );
        assert!(
            g2 <= Duration::from_millis(400 + 500),
            "retry 2 after {g2:?}"
        );
        assert!(
            f[i].at >= turn[2].at,
            "the fallback comes after the last try"
        );
        first.push(g1);
        second.push(g2);
    }
    let spread = |v: &[Duration]| {
        v.iter()
            .max()
            .unwrap()
            .saturating_sub(*v.iter().min().unwrap())
    };
    assert!(
        spread(&first) > Duration::from_millis(20) || spread(&second) > Duration::from_millis(20),
        "no jitter: first retries {first:?}, second retries {second:?}"
    );
    // a 429 never trips the breaker
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}

/// 3. 500 once → retried on the same provider, answered by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s03_a_500_is_retried_on_the_same_provider() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::status(500)));
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 2, base_delay = \"20ms\", max_delay = \"100ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s03").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "primary");
    assert_eq!(r.header("x-switchyard-failed-over"), "false");
    assert_eq!(r.header("x-switchyard-attempts"), "2");
    let p = up.attempts("primary");
    assert_eq!(p.len(), 2);
    assert_eq!(
        (p[0].fault.clone(), p[1].fault.clone()),
        (Fault::status(500), Fault::Ok)
    );
    assert!(up.attempts("fallback").is_empty());
}

/// 5. TCP reset before headers → retried (a connection error is retryable) and
/// answered; a provider that always resets is failed over, for a stream too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s05_a_reset_before_headers_is_retried_or_failed_over() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::Reset));
    let conf = Conf::new(&up).route(
        "retry = { max_attempts = 2, base_delay = \"20ms\", max_delay = \"100ms\", max_retry_after = \"5s\" }",
    );
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("s05").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "primary");
    let p = up.attempts("primary");
    assert_eq!(p.len(), 2, "{p:#?}");
    assert_eq!(
        (p[0].fault.clone(), p[1].fault.clone()),
        (Fault::Reset, Fault::Ok)
    );

    up.script("primary", Fault::Reset);
    let s = gw.stream("s05-stream").await;
    s.assert_canonical();
    assert_eq!(s.header("x-switchyard-provider"), "fallback");
    let p = up.attempts("primary");
    assert_eq!(
        p.len(),
        4,
        "two more tries on the resetting primary: {p:#?}"
    );
    assert!(p[2..].iter().all(|a| a.fault == Fault::Reset && a.stream));
    assert_eq!(up.attempts("fallback").len(), 1);
}
