//! The "Also": bad requests never open a circuit, exactly one half-open probe,
//! budgets never overspent under concurrency, and a client that leaves cancels the
//! upstream call.

use std::time::Duration;

use faultline::Fault;
use futures_util::future::join_all;
use futures_util::StreamExt as _;

use crate::support::{attempts_when, body, upstream, Conf, Gateway, ROUTE, WAIT};

/// A burst of 100 bad requests (upstream 400s; half plain, half streamed, all at once)
/// leaves every circuit closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn also_a_burst_of_bad_requests_leaves_every_circuit_closed() {
    let up = upstream().await;
    up.script("primary", Fault::status(400));
    let conf = Conf::new(&up)
        .route("retry = { max_attempts = 3, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 3, cooldown = \"60s\" }");
    let gw = Gateway::start(&conf).await;
    let ids: Vec<String> = (0..50).map(|i| format!("bad-{i}")).collect();
    let plain = join_all(ids.iter().map(|id| gw.chat(id)));
    let streams = join_all(ids.iter().map(|id| gw.stream(id)));
    let (plain, streams) = tokio::join!(plain, streams);
    for r in &plain {
        assert_eq!(r.status, 400, "{}", r.text);
        assert_eq!(
            r.json()["error"]["code"],
            "upstream_rejected_request",
            "{}",
            r.text
        );
    }
    for s in &streams {
        assert_eq!(
            s.status, 400,
            "rejected before the stream committed: {}",
            s.raw
        );
        assert!(s.raw.contains("upstream_rejected_request"), "{}", s.raw);
    }
    assert_eq!(
        up.attempts("primary").len(),
        100,
        "each bad request tried once"
    );
    assert!(
        up.attempts("fallback").is_empty(),
        "a bad request is not failed over"
    );
    let h = gw.health().await;
    for p in h["providers"].as_array().unwrap() {
        assert_eq!(p["state"], "closed", "{p}");
        assert_eq!(p["consecutive_failures"], 0, "{p}");
    }
    up.script("primary", Fault::Ok);
    let r = gw.chat("bad-then-good").await;
    r.assert_canonical();
    assert_eq!(r.header("x-switchyard-provider"), "primary");
}

/// Exactly one half-open probe among 50 concurrent requests: the primary's circuit is
/// open, its cooldown passes while it is slow but healthy, and 50 requests arrive at
/// once — faultline sees one primary call while that probe is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn also_exactly_one_half_open_probe_among_fifty() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let conf = Conf::new(&up)
        .primary("max_attempts = 1")
        .primary("timeout = \"10s\"")
        .route("breaker = { failure_threshold = 1, cooldown = \"1s\", max_cooldown = \"1s\" }");
    let gw = Gateway::start(&conf).await;
    gw.chat("open-it").await.assert_canonical();
    assert_eq!(gw.provider_health("primary").await["state"], "open");
    let probe_time = Duration::from_secs(3);
    up.script("primary", Fault::slow_first_token(probe_time));
    let deadline = tokio::time::Instant::now() + WAIT;
    while gw.provider_health("primary").await["state"] != "half_open" {
        assert!(tokio::time::Instant::now() < deadline, "never half-open");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ids: Vec<String> = (0..50).map(|i| format!("probe-{i}")).collect();
    let replies = join_all(ids.iter().map(|id| gw.chat(id))).await;
    for r in &replies {
        r.assert_canonical();
    }
    let p = up.attempts("primary");
    let probe = &p[1];
    let during: Vec<_> = p[1..]
        .iter()
        .filter(|a| a.at < probe.at + probe_time)
        .collect();
    assert_eq!(
        during.len(),
        1,
        "calls while the probe was out: {during:#?}"
    );
    let by_primary = replies
        .iter()
        .filter(|r| r.header("x-switchyard-provider") == "primary")
        .count();
    assert_eq!(
        by_primary,
        p.len() - 1,
        "each primary answer is one primary call"
    );
    assert!(by_primary >= 1);
    assert_eq!(
        replies.len() - by_primary,
        up.attempts("fallback").len() - 1,
        "the rest went to the fallback"
    );
    assert_eq!(
        gw.provider_health("primary").await["state"],
        "closed",
        "the probe closed it"
    );
}

/// 100 concurrent requests (half plain, half streamed) against a budget that fits 10
/// answers never overspend: at most 10 are answered, the rest get 402 before any
/// dispatch, and the books stay within the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn also_a_budget_is_never_overspent_under_concurrency() {
    let up = upstream().await;
    up.script(
        "primary",
        Fault::slow_first_token(Duration::from_millis(300)),
    );
    // $10 per million output tokens, input free: an answer (60 tokens) costs $0.0006
    let price = "price = { input_per_mtok = 0.0, output_per_mtok = 10.0 }";
    let budget = 0.006;
    let conf = Conf::new(&up)
        .primary(price)
        .fallback(price)
        .route(&format!("budget_usd = {budget}"));
    let gw = Gateway::start(&conf).await;
    let ids: Vec<String> = (0..50).map(|i| format!("budget-{i}")).collect();
    let plain = join_all(ids.iter().map(|id| gw.chat(id)));
    let streams = join_all(ids.iter().map(|id| gw.stream(id)));
    let (plain, streams) = tokio::join!(plain, streams);
    let ok = plain.iter().filter(|r| r.status == 200).count()
        + streams.iter().filter(|s| s.status == 200).count();
    let refused = plain.iter().filter(|r| r.status == 402).count()
        + streams.iter().filter(|s| s.status == 402).count();
    assert_eq!(ok + refused, 100, "only answers and refusals");
    assert!(
        (1..=10).contains(&ok),
        "{ok} answered under a budget for 10"
    );
    for r in &plain {
        if r.status == 200 {
            r.assert_canonical();
        } else {
            assert_eq!(r.json()["error"]["code"], "budget_exceeded", "{}", r.text);
        }
    }
    for s in &streams {
        if s.status == 200 {
            s.assert_canonical();
        } else {
            assert!(s.raw.contains("budget_exceeded"), "{}", s.raw);
        }
    }
    let dispatched = up.attempts("primary").len() + up.attempts("fallback").len();
    assert_eq!(
        dispatched, ok,
        "a refused request is refused before dispatch"
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    let (gw_health, books) = loop {
        let health = gw.health().await;
        let books = health["budgets"]["chat"].clone();
        if books["reserved_usd"] == 0.0 {
            break (health, books);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reservations never released: {books}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let spent = books["spent_usd"].as_f64().unwrap();
    assert!(spent <= budget + 1e-12, "spent {spent} of {budget}");
    assert!(
        (spent - ok as f64 * 0.0006).abs() < 1e-12,
        "spent {spent} for {ok} answers"
    );
    let ledger: f64 = gw_health["ledger"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["cost"].as_f64().unwrap())
        .sum();
    assert!(ledger <= budget + 1e-12, "ledger {ledger}");
}

/// A client that disconnects mid-stream cancels the upstream call: faultline sees the
/// gateway hang up long before the stream would have ended, and the request log records
/// the request as 499 with its usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn also_a_client_that_leaves_cancels_the_upstream_call() {
    let up = upstream().await;
    let gap = Duration::from_millis(100); // 60 tokens: a 6 s stream
    up.script("primary", Fault::paced(gap));
    let conf = Conf::new(&up).primary("price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }");
    let gw = Gateway::start(&conf).await;
    let resp = gw.open_stream("leaver").await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while seen.matches("\"content\":\"").count() < 6 {
        let chunk = body.next().await.expect("stream ended early").unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(body); // the client goes away mid-answer
    let p = attempts_when(&up, "primary", |a| a.len() == 1 && a[0].client_gone()).await;
    let lasted = p[0].ended.unwrap() - p[0].at;
    assert!(
        lasted < gap * 40,
        "the upstream call ran {lasted:?} of a {:?} stream",
        gap * 60
    );
    let line = gw.log_line("leaver").await;
    assert_eq!(line["status"], 499, "{line}");
    let used = line["usage"]["output_tokens"]
        .as_u64()
        .expect("usage logged");
    assert!((5..60).contains(&used), "{line}");
    assert_eq!(line["provider"], "primary");
    assert!(
        up.attempts("fallback").is_empty(),
        "a cancelled request is not failed over"
    );
}

/// The same for a request the client abandons before its answer (a plain request, and a
/// stream before its first token): the upstream call is cancelled, and the request still
/// gets its line in the request log, as 499.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn also_a_client_that_leaves_before_the_answer_cancels_and_is_logged() {
    let up = upstream().await;
    up.script("primary", Fault::slow_first_token(Duration::from_secs(5)));
    let gw = Gateway::start(&Conf::new(&up)).await;
    let impatient = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    for (id, stream) in [("impatient-plain", false), ("impatient-stream", true)] {
        let sent = impatient
            .post(gw.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body(ROUTE, stream).to_string())
            .send()
            .await;
        assert!(sent.is_err(), "{id}: the client gave up first");
        let n = if stream { 2 } else { 1 };
        let p = attempts_when(&up, "primary", |a| a.len() == n && a[n - 1].client_gone()).await;
        let lasted = p[n - 1].ended.unwrap() - p[n - 1].at;
        assert!(
            lasted < Duration::from_secs(4),
            "{id}: the upstream call ran {lasted:?}"
        );
    }
    assert!(up.attempts("fallback").is_empty());
    // one writer, in order: once a later request's line is in, earlier ones would be too
    up.script("primary", Fault::Ok);
    gw.chat("sentinel").await.assert_canonical();
    gw.log_line("sentinel").await;
    let lines = gw.log_lines();
    for id in ["impatient-plain", "impatient-stream"] {
        let line = lines.iter().find(|l| l["id"] == id);
        let line = line.unwrap_or_else(|| panic!("no request-log line for {id}: {lines:#?}"));
        assert_eq!(line["status"], 499, "{line}");
    }
}
