//! Scenarios 7–11 and 14: streams — the first-token timeout before the commit point, and
//! after it, rescue to the complete answer or an honest error event.

use std::time::Duration;

use faultline::{Fault, Script, CANONICAL_ANSWER};
use serde_json::Value;

use crate::support::{attempts_when, trail_labels, upstream, Conf, Gateway};

/// 7. First token after 20 s → first-token timeout, and the fallback answers within 15 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s07_a_late_first_token_fails_over_before_commit() {
    let up = upstream().await;
    up.script("primary", Fault::slow_first_token(Duration::from_secs(20)));
    let conf = Conf::new(&up)
        .primary("first_token_timeout = \"2s\"")
        .primary("timeout = \"30s\"");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s07").await;
    s.assert_canonical();
    assert_eq!(s.header("x-switchyard-provider"), "fallback");
    assert!(
        s.ended < Duration::from_secs(15),
        "answered after {:?}",
        s.ended
    );
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!(
        (p.len(), f.len()),
        (1, 1),
        "a timeout is not retried: {p:#?}"
    );
    // The gateway's clock starts when it sends the attempt, the upstream's when the request
    // arrives (a connect later), so the gap seen here may fall short of 2 s by that much.
    let waited = f[0].at - p[0].at;
    assert!(
        waited >= Duration::from_millis(1900),
        "gave up after {waited:?}, before the 2 s timeout"
    );
    attempts_when(&up, "primary", |a| a[0].client_gone()).await;
}

/// 8. Stream cut after 40 of 60 tokens → rescued by continuation: the client receives
/// exactly the canonical answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s08_a_cut_stream_is_continued_to_the_whole_answer() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::cut(40)));
    let conf = Conf::new(&up)
        .primary("price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }")
        .fallback("price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }")
        .fallback("supports_prefill = true");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s08").await;
    s.assert_canonical();
    // the books agree with what the client was told
    let usage = s.usage_event().expect("a usage chunk");
    let line = gw.log_line("s08").await;
    assert_eq!(
        line["usage"]["output_tokens"], usage["usage"]["completion_tokens"],
        "{line}"
    );
    assert_eq!(
        line["usage"]["input_tokens"], usage["usage"]["prompt_tokens"],
        "{line}"
    );
    assert_eq!(line["cost_usd"], usage["switchyard"]["cost_usd"], "{line}");
    let ledger = gw.health().await["ledger"].clone();
    let billed: f64 = ledger
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["cost"].as_f64().unwrap())
        .sum();
    let cost = line["cost_usd"].as_f64().expect("a known cost");
    assert!((billed - cost).abs() < 1e-12, "{ledger} vs {line}");
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!(p.len(), 1, "{p:#?}");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(
        f[0].prefill.as_deref(),
        Some(faultline::prefix(40)),
        "continued from what was sent"
    );
    assert!(f[0].stream);
    let labels = trail_labels(&s.trail().unwrap());
    assert!(
        labels.contains(&"fallback:rescue:continuation".to_owned()),
        "{labels:?}"
    );
}

/// 8b. The same cut with a fallback that takes no prefill → restarted from scratch and
/// spliced: the client still receives exactly the canonical answer, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s08b_a_cut_stream_is_restarted_and_spliced() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::cut(40)));
    let gw = Gateway::start(&Conf::new(&up)).await;
    let s = gw.stream("s08b").await;
    s.assert_canonical();
    let f = up.attempts("fallback");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert_eq!(f[0].prefill, None, "a restart sends the original request");
    let labels = trail_labels(&s.trail().unwrap());
    assert!(
        labels.contains(&"fallback:rescue:restart".to_owned()),
        "{labels:?}"
    );
}

/// 9. Stream stalls after 20 tokens → stall timeout, rescued, and the gateway still
/// serves afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s09_a_stalled_stream_is_rescued_and_the_gateway_serves_on() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::Stall { after: 20 }));
    let conf = Conf::new(&up)
        .primary("stall_timeout = \"1s\"")
        .fallback("supports_prefill = true");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s09").await;
    s.assert_canonical();
    let p = up.attempts("primary");
    let f = up.attempts("fallback");
    assert_eq!((p.len(), f.len()), (1, 1));
    assert_eq!(f[0].prefill.as_deref(), Some(faultline::prefix(20)));
    let stalled = f[0].at - p[0].at;
    assert!(
        stalled >= Duration::from_secs(1),
        "rescued after {stalled:?}, before the stall timeout"
    );
    attempts_when(&up, "primary", |a| a[0].client_gone()).await;
    // and then it serves: from the (now healthy) primary, plain and streamed
    let s = gw.stream("s09-after").await;
    s.assert_canonical();
    assert_eq!(s.header("x-switchyard-provider"), "primary");
    gw.chat("s09-plain").await.assert_canonical();
    assert_eq!(up.attempts("primary").len(), 3);
}

/// 10. Malformed chunk mid-stream → nothing malformed leaks; rescued to the complete
/// answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s10_a_malformed_chunk_never_reaches_the_client() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::Malformed { after: 30 }));
    let conf = Conf::new(&up).fallback("supports_prefill = true");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s10").await;
    s.assert_canonical();
    for e in &s.events {
        assert!(
            e.data == "[DONE]" || serde_json::from_str::<Value>(&e.data).is_ok(),
            "not JSON: {:?}",
            e.data
        );
    }
    // the broken payload may be quoted in the audit trail's failure message, but never
    // anywhere a client reads content from
    for mut v in s.json_events() {
        if let Some(o) = v.as_object_mut() {
            o.remove("switchyard");
        }
        assert!(!v.to_string().contains("not json"), "leaked: {v}");
    }
    let f = up.attempts("fallback");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].prefill.as_deref(), Some(faultline::prefix(30)));
}

/// 11. Finish signal but no `[DONE]` → finished promptly (well under a second after the
/// last chunk), usage reported, and the gateway hangs up on the upstream rather than
/// waiting for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_stream_without_done_ends_at_its_finish_signal() {
    let up = upstream().await;
    up.script("primary", Fault::NoDone);
    let gw = Gateway::start(&Conf::new(&up)).await;
    let s = gw.stream("s11").await;
    s.assert_canonical();
    assert_eq!(s.header("x-switchyard-provider"), "primary");
    let last = s.last_content_at().unwrap();
    let tail = s.ended - last;
    assert!(
        tail < Duration::from_millis(1000),
        "ended {tail:?} after the last chunk"
    );
    let usage = s.usage_event().expect("a usage chunk");
    assert_eq!(usage["usage"]["prompt_tokens"], faultline::PROMPT_TOKENS);
    assert_eq!(usage["usage"]["completion_tokens"], 60);
    let p = attempts_when(&up, "primary", |a| a[0].client_gone()).await;
    let held = p[0].ended.unwrap() - p[0].at;
    assert!(
        held < Duration::from_millis(1000),
        "held the upstream for {held:?}"
    );
    assert_eq!(p.len(), 1);
    assert!(up.attempts("fallback").is_empty());
}

/// 11b. The same with a server that sends no usage either (finish chunk, then silence):
/// the gateway stops waiting after its short usage grace, and does not claim the
/// unknown usage cost $0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11b_a_finish_without_usage_or_done_still_ends_promptly() {
    let up = upstream().await;
    up.script("primary", Fault::FinishOnly);
    let conf = Conf::new(&up).primary("price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s11b").await;
    s.assert_canonical();
    let tail = s.ended - s.last_content_at().unwrap();
    assert!(
        tail < Duration::from_millis(1000),
        "ended {tail:?} after the last chunk"
    );
    let trail = s.trail().expect("a trail");
    assert_ne!(
        trail["cost_usd"],
        serde_json::json!(0.0),
        "unknown usage billed as $0: {trail}"
    );
    attempts_when(&up, "primary", |a| a[0].client_gone()).await;
}

/// 14. Stream cut, and the fallback (which claims prefill support) rejects the prefill →
/// restarted cleanly and spliced; the prefill rejection never becomes the final error,
/// even when the restart fails too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s14_a_rejected_prefill_falls_back_to_restart_and_splice() {
    let up = upstream().await;
    up.script("primary", Script::once(Fault::cut(40)));
    up.script("fallback", Fault::RejectPrefill);
    let conf = Conf::new(&up)
        .fallback("supports_prefill = true")
        .route("retry = { max_attempts = 2, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 10, cooldown = \"60s\" }");
    let gw = Gateway::start(&conf).await;
    let s = gw.stream("s14").await;
    s.assert_canonical();
    let f = up.attempts("fallback");
    assert_eq!(f.len(), 2, "{f:#?}");
    assert_eq!(f[0].prefill.as_deref(), Some(faultline::prefix(40)));
    assert_eq!(f[0].fault, Fault::RejectPrefill);
    assert_eq!(
        (f[1].prefill.clone(), f[1].fault.clone()),
        (None, Fault::Ok),
        "a clean restart"
    );
    let labels = trail_labels(&s.trail().unwrap());
    assert!(
        labels.contains(&"fallback:rescue:restart".to_owned()),
        "{labels:?}"
    );

    // the restart fails as well: the client hears the primary's real failure, not the
    // prefill rejection, and gets no [DONE]
    up.script("primary", Script::once(Fault::cut(40)));
    up.script(
        "fallback",
        Script::queue(
            [Fault::RejectPrefill, Fault::status(500), Fault::status(500)],
            Fault::Ok,
        ),
    );
    let s = gw.stream("s14-unrescued").await;
    assert_eq!(s.status, 200, "committed before it broke");
    assert_eq!(
        s.text(),
        faultline::prefix(40),
        "what was sent, and no more"
    );
    assert_ne!(s.text(), CANONICAL_ANSWER);
    assert!(
        !s.done(),
        "a broken stream must not end like a finished one: {}",
        s.raw
    );
    let e = s.error().expect("an error event");
    let message = e["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(
        !message.contains("prefill"),
        "the rescue's error masks the cause: {e}"
    );
    assert!(
        message.contains("finish"),
        "not the original failure (cut before the finish signal): {e}"
    );
    let f = up.attempts("fallback");
    assert_eq!(f.len(), 5, "prefill, then two restarts: {f:#?}");
    let line = gw.log_line("s14-unrescued").await;
    let logged = line["error"].as_str().unwrap_or_default();
    assert!(logged.starts_with("stream_failed"), "{line}");
}
