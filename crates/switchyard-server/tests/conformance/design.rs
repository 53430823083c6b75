//! Beyond the list: more of the promises in docs/design.md, with the same tools — an error
//! event before the commit point fails over invisibly and after it is rescued, a
//! cancelled half-open probe cannot wedge the circuit, and a committed stream still ends
//! at the deadline, honestly.

use std::time::Duration;

use faultline::{Fault, Script};

use crate::support::{attempts_when, body, trail_labels, upstream, Conf, Gateway, ROUTE, WAIT};

/// An error in the first SSE event fails over invisibly; one after the first chunk is
/// rescued to the whole answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn design_an_error_event_fails_over_before_commit_and_is_rescued_after() {
    let up = upstream().await;
    up.script("primary", Fault::ErrorEvent { after: 0 });
    let conf = Conf::new(&up)
        .fallback("supports_prefill = true")
        .route("retry = { max_attempts = 2, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 10, cooldown = \"60s\" }");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("error-first").await;
    s.assert_canonical();
    assert_eq!(s.header("x-switchyard-provider"), "fallback");
    assert_eq!(
        up.attempts("primary").len(),
        2,
        "a server error is retried, then failed over"
    );

    up.script("primary", Script::once(Fault::ErrorEvent { after: 25 }));
    let s = gw.stream("error-mid").await;
    s.assert_canonical();
    let f = up.attempts("fallback");
    assert_eq!(f.len(), 2);
    assert_eq!(f[1].prefill.as_deref(), Some(faultline::prefix(25)));
    let labels = trail_labels(&s.trail().unwrap());
    assert!(
        labels.contains(&"fallback:rescue:continuation".to_owned()),
        "{labels:?}"
    );
}

/// A half-open probe whose client goes away gives its lease back: the next request
/// probes at once instead of being skipped until the lease (the 10 s attempt timeout)
/// expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn design_a_cancelled_probe_does_not_wedge_the_circuit() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let conf = Conf::new(&up)
        .primary("max_attempts = 1")
        .primary("timeout = \"10s\"")
        .route("breaker = { failure_threshold = 1, cooldown = \"1s\", max_cooldown = \"1s\" }");
    let gw = Gateway::start(&conf).await;
    gw.chat("open-it").await.assert_canonical();
    up.script("primary", Fault::slow_first_token(Duration::from_secs(5)));
    let deadline = tokio::time::Instant::now() + WAIT;
    while gw.provider_health("primary").await["state"] != "half_open" {
        assert!(tokio::time::Instant::now() < deadline, "never half-open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let impatient = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let sent = impatient
        .post(gw.url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body(ROUTE, false).to_string())
        .send()
        .await;
    assert!(sent.is_err(), "the probe's client gave up");
    let p = attempts_when(&up, "primary", |a| a.len() == 2 && a[1].client_gone()).await;
    up.script("primary", Fault::Ok);
    let r = gw.chat("next-probe").await;
    r.assert_canonical();
    assert_eq!(
        r.header("x-switchyard-provider"),
        "primary",
        "skipped while a dead probe held the lease: {}",
        r.text
    );
    let next = &up.attempts("primary")[2];
    assert!(next.at - p[1].ended.unwrap() < Duration::from_secs(3));
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}

/// A committed stream that would run past the route's deadline is ended at the deadline
/// with an error event and no `[DONE]` — the caller never waits past it, and what it got
/// is never dressed as a finished answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn design_a_committed_stream_ends_at_the_deadline_honestly() {
    let up = upstream().await;
    up.script("primary", Fault::paced(Duration::from_millis(100))); // a 6 s stream
    let conf = Conf::new(&up).route("deadline = \"2s\"");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("past-deadline").await;
    assert_eq!(s.status, 200);
    assert!(
        s.ended < Duration::from_secs(3),
        "the stream ran {:?} under a 2 s deadline",
        s.ended
    );
    assert!(
        !s.done(),
        "a cut answer ended like a finished one: {}",
        s.raw
    );
    assert!(s.error().is_some(), "no error event: {}", s.raw);
    let text = s.text();
    assert!(
        faultline::CANONICAL_ANSWER.starts_with(&text)
            && text.len() < faultline::CANONICAL_ANSWER.len(),
        "{text:?}"
    );
    attempts_when(&up, "primary", |a| a.len() == 1 && a[0].client_gone()).await;
    assert!(
        up.attempts("fallback").is_empty(),
        "no time left for a rescue"
    );
}

/// The deadline that ends a committed stream is reported as the deadline — as it is for
/// a plain request (504 `deadline_exceeded`) — not as a stall of a provider that was
/// streaming steadily.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn design_a_deadline_cut_is_reported_as_the_deadline() {
    let up = upstream().await;
    up.script("primary", Fault::slow_first_token(Duration::from_secs(3)));
    let conf = Conf::new(&up).route("deadline = \"1s\"");
    let gw = Gateway::start(&conf).await;
    let r = gw.chat("plain-past-deadline").await;
    assert_eq!(r.status, 504, "{}", r.text);
    assert_eq!(r.json()["error"]["code"], "deadline_exceeded", "{}", r.text);

    up.script("primary", Fault::paced(Duration::from_millis(100)));
    let s = gw.stream("stream-past-deadline").await;
    let e = s.error().expect("an error event");
    assert_eq!(e["error"]["code"], "deadline_exceeded", "{e}");
    let message = e["error"]["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("stalled"),
        "a steady stream reported as stalled: {e}"
    );
}
