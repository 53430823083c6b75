//! Outages and rate limits as a client and an operator see them: upstream rate limits
//! answered as 429 with the earliest Retry-After (mixed failures stay 502), and every
//! circuit transition counted once in the metrics and `/admin/transitions`.

use switchyard::breaker::{BreakerConfig, Cooldown};
use switchyard::clock::Clock;
use switchyard::ProviderError;

use super::*;
use crate::telemetry::insight::Insight;

/// A 429 with a fractional Retry-After (rounded up on the way out).
fn limited(ms: u64) -> Step {
    Step::Fail(
        ProviderError::new(ErrorKind::RateLimited, "slow down")
            .with_status(429)
            .with_retry_after(Some(Duration::from_millis(ms))),
    )
}

#[tokio::test(start_paused = true)]
async fn upstream_rate_limits_are_429_with_the_earliest_retry_after() {
    let f = fixture(
        ScriptedProvider::new("p").otherwise(limited(11_200)),
        ScriptedProvider::new("b").otherwise(limited(40_000)),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&resp, "retry-after"), "12");
    let body = json_body(resp).await;
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    let outcomes: Vec<_> = body["error"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["outcome"].clone())
        .collect();
    assert_eq!(
        outcomes,
        [json!("failed:rate_limited"), json!("failed:rate_limited")]
    );

    // a stream, before its commit point: both providers cool down, so both are skipped
    tokio::time::advance(Duration::from_secs(5)).await;
    let mut streamed = chat("smart");
    streamed["stream"] = json!(true);
    let resp = call(&f.state, post(&streamed)).await;
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        header(&resp, "retry-after"),
        "7",
        "11.2 s - 5 s, rounded up"
    );
    assert_eq!((f.primary.calls(), f.backup.calls()), (1, 1));
}

#[tokio::test]
async fn a_rate_limit_and_an_outage_stay_502() {
    let f = fixture(
        ScriptedProvider::new("p").otherwise(limited(30_000)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Route::new("smart", &["primary", "backup"]).retry(switchyard::retry::RetryPolicy {
            max_attempts: 1,
            ..Default::default()
        }),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(header(&resp, "retry-after"), "");
    assert_eq!(
        json_body(resp).await["error"]["code"],
        "all_providers_failed"
    );
}

/// Open, half-open, closed: each step once in the metrics and in `/admin/transitions`,
/// the half-open one stamped when the cooldown ran out (not when the probe came).
#[tokio::test(start_paused = true)]
async fn each_transition_is_counted_once_in_metrics_and_the_timeline() {
    let primary = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .otherwise(Step::text("back")),
    );
    let metrics = Arc::new(Metrics::new());
    let clock = Clock::system();
    let insight = Arc::new(Insight::new(clock));
    let breaker = BreakerConfig {
        failure_threshold: 1,
        cooldown: Cooldown {
            base: Duration::from_secs(10),
            max: Duration::from_secs(15),
        },
    };
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).max_attempts(1))
        .provider(ProviderSpec::new(
            "backup",
            Arc::new(ScriptedProvider::new("b")),
        ))
        .route(Route::new("smart", &["primary", "backup"]).breaker(breaker))
        .clock(clock)
        .observer(metrics.clone())
        .observer(insight.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.insight = insight;
    shared.max_body_bytes = 2048;
    let state = AppState(Arc::new(shared));
    let t0 = clock.unix_ms();
    assert_eq!(
        call(&state, post(&chat("smart"))).await.status(),
        StatusCode::OK
    );
    tokio::time::advance(Duration::from_secs(25)).await;
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    let before = json_body(call(&state, get("/admin/transitions")).await).await;
    assert_eq!(before["providers"][0]["state"], "half_open");
    assert_eq!(before["providers"][0]["open_until_ms"], json!(t0 + 10_000));
    let resp = call(&state, post(&chat("smart"))).await;
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");

    let after = json_body(call(&state, get("/admin/transitions")).await).await;
    let steps: Vec<(String, String, u64)> = after["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap().to_owned();
            (s("from"), s("to"), t["at_ms"].as_u64().unwrap() - t0)
        })
        .collect();
    let step = |a: &str, b: &str, at: u64| (a.to_owned(), b.to_owned(), at);
    assert_eq!(
        steps,
        [
            step("closed", "open", 0),
            step("open", "half_open", 10_000),
            step("half_open", "closed", 25_000),
        ]
    );
    let text = text_body(call(&state, get("/metrics")).await).await;
    for to in ["open", "half_open", "closed"] {
        let line =
            format!("switchyard_breaker_transitions_total{{provider=\"primary\",to=\"{to}\"}} 1");
        assert!(text.contains(&line), "{line} missing from:\n{text}");
    }
}
