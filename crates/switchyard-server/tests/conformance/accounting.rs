//! Scenario 16: who answered, what it used and what it cost — in the response, the
//! request log and the ledger, all agreeing, with failed attempts unbilled.

use faultline::{Fault, PROMPT_TOKENS};
use serde_json::Value;

use crate::support::{trail_labels, upstream, Conf, Gateway};

/// The fallback's price: $2.50 in and $10 out per million tokens.
const FALLBACK_PRICE: &str = "price = { input_per_mtok = 2.5, output_per_mtok = 10.0 }";

/// What one canonical answer from the fallback costs, in dollars: 24 × 2.5 + 60 × 10
/// micro-dollars.
fn fallback_cost() -> f64 {
    (PROMPT_TOKENS as f64 * 2.5 + 60.0 * 10.0) / 1e6
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// 16. Failover accounting → the response `model` is the fallback's, usage is present,
/// the failed attempts are not billed, and the request log and the ledger agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s16_a_failed_over_answer_is_billed_once_to_the_fallback() {
    let up = upstream().await;
    up.script("primary", Fault::status(503));
    let conf = Conf::new(&up)
        .primary("price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }")
        .fallback(FALLBACK_PRICE)
        .route("retry = { max_attempts = 2, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 10, cooldown = \"60s\" }");
    let gw = Gateway::start(&conf).await;

    let r = gw.chat("s16-plain").await;
    r.assert_canonical();
    let body = r.json();
    assert_eq!(body["model"], "fallback", "the model that answered");
    assert_eq!(body["usage"]["prompt_tokens"], PROMPT_TOKENS);
    assert_eq!(body["usage"]["completion_tokens"], 60);
    assert_eq!(body["usage"]["total_tokens"], PROMPT_TOKENS + 60);
    let cost = body["switchyard"]["cost_usd"].as_f64().unwrap();
    assert!(
        close(cost, fallback_cost()),
        "cost {cost}, expected {}",
        fallback_cost()
    );
    let header: f64 = r.header("x-switchyard-cost-usd").parse().unwrap();
    assert!(close(header, fallback_cost()), "header {header}");
    assert_eq!(body["switchyard"]["failed_over"], true);
    assert_eq!(
        trail_labels(&body["switchyard"]),
        ["primary:failed", "primary:failed", "fallback:success"]
    );

    let s = gw.stream("s16-stream").await;
    s.assert_canonical();
    assert!(
        s.json_events().iter().all(|e| e["model"] == "fallback"),
        "{}",
        s.raw
    );
    let usage = s.usage_event().expect("a usage chunk");
    assert_eq!(usage["usage"]["completion_tokens"], 60);
    let cost = usage["switchyard"]["cost_usd"].as_f64().unwrap();
    assert!(close(cost, fallback_cost()), "streamed cost {cost}");

    let mut logged = 0.0;
    for id in ["s16-plain", "s16-stream"] {
        let line = gw.log_line(id).await;
        assert_eq!(line["status"], 200, "{line}");
        assert_eq!(line["provider"], "fallback", "{line}");
        assert_eq!(line["model"], "fallback", "{line}");
        assert_eq!(line["failed_over"], true);
        assert_eq!(line["usage"]["input_tokens"], PROMPT_TOKENS, "{line}");
        assert_eq!(line["usage"]["output_tokens"], 60, "{line}");
        let c = line["cost_usd"].as_f64().unwrap();
        assert!(close(c, fallback_cost()), "{line}");
        assert_eq!(line["attempts"].as_array().unwrap().len(), 3, "{line}");
        logged += c;
    }
    assert_eq!(up.attempts("primary").len(), 4);
    assert_eq!(up.attempts("fallback").len(), 2);

    let ledger: Value = gw.health().await["ledger"].clone();
    let fb = &ledger["fallback"];
    assert_eq!(fb["calls"], 2, "{ledger}");
    assert_eq!(fb["input_tokens"], 2 * PROMPT_TOKENS);
    assert_eq!(fb["output_tokens"], 120);
    assert!(
        close(fb["cost"].as_f64().unwrap(), logged),
        "ledger {fb} vs log {logged}"
    );
    let pr = &ledger["primary"];
    assert_eq!(pr["calls"], 0, "failed attempts are not calls: {ledger}");
    assert_eq!(pr["cost"], 0.0, "failed attempts are not billed: {ledger}");
    let failures: u64 = pr["failures"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(failures, 4, "{ledger}");
}
