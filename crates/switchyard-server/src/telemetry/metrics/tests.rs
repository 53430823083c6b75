//! The metrics' exposition: names, labels and values as Prometheus reads them.

use super::*;
use switchyard::breaker::SkipReason;
use switchyard::{ErrorKind, Usage};

fn memory_status() -> StateStatus {
    switchyard::state::SharedState::status(&switchyard::state::MemoryState::new())
}

/// Every line of `expect` appears in `text`, exactly.
fn assert_lines(text: &str, expect: &[&str]) {
    for line in expect {
        assert!(
            text.lines().any(|l| l == *line),
            "missing {line:?} in\n{text}"
        );
    }
}

fn attempt(provider: &str, outcome: Outcome, ms: u64) -> Attempt {
    Attempt {
        provider: provider.to_owned(),
        model: "m".to_owned(),
        attempt: 1,
        outcome,
        status: None,
        latency: Duration::from_millis(ms),
        start: None,
    }
}

fn failed(kind: ErrorKind, message: &str) -> Outcome {
    let message = message.to_owned();
    Outcome::Failed { kind, message }
}

fn response(provider: &str, cost: Option<Money>) -> ChatResponse {
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        cached_input_tokens: 40,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        reasoning_tokens: 5,
    };
    ChatResponse {
        text: "hi".to_owned(),
        tool_calls: Vec::new(),
        thinking: Vec::new(),
        finish_reason: None,
        provider: provider.to_owned(),
        model: "m".to_owned(),
        failed_over: false,
        usage: Some(usage),
        cost,
        attempts: Vec::new(),
        latency: Duration::from_millis(200),
        provider_latency: None,
        max_tokens_applied: None,
        ..ChatResponse::default()
    }
}

#[test]
fn overruns_are_counted_per_provider_and_alerted() {
    let metrics = Metrics::new();
    let overrun = Overrun {
        provider: "aurora".into(),
        model: "m".into(),
        output_allowed: Some(4096),
        output_reported: 16_384,
        input_bound: Some(100),
        input_reported: 90,
    };
    for _ in 0..3 {
        metrics.on_overrun("smart", &overrun);
    }
    let text = metrics.render(&[], 0, &memory_status());
    assert_lines(
        &text,
        &["switchyard_usage_overruns_total{provider=\"aurora\"} 3"],
    );
    let line = overrun_alert("smart", &overrun, 2);
    assert!(
        line.contains("reported 16384 output tokens, 4096 allowed;"),
        "{line}"
    );
    assert!(
        !line.contains("input"),
        "the input stayed within its bound: {line}"
    );
}

fn health(name: &str, state: &str, failures: u32, latency_ms: Option<f64>) -> ProviderHealth {
    ProviderHealth {
        name: name.to_owned(),
        kind: "simulated".to_owned(),
        model: "m".to_owned(),
        state: state.to_owned(),
        consecutive_failures: failures,
        open_until_ms: None,
        last_open_until: 0,
        cooling_until_ms: None,
        opened_by: None,
        last_error: None,
        latency_ms,
        probe_in_flight: false,
        priced: true,
    }
}

#[test]
fn attempts_count_by_provider_outcome_and_kind() {
    let metrics = Metrics::new();
    let timeout = attempt("aurora", failed(ErrorKind::Timeout, "t"), 1000);
    metrics.on_attempt("smart", &timeout);
    metrics.on_attempt("smart", &timeout);
    metrics.on_attempt("smart", &attempt("aurora", Outcome::Success, 250));
    let reason = SkipReason::CircuitOpen;
    metrics.on_attempt(
        "smart",
        &attempt(
            "borealis",
            Outcome::Skipped {
                reason,
                fields: Vec::new(),
            },
            0,
        ),
    );
    let method = "continuation".to_owned();
    metrics.on_attempt(
        "smart",
        &attempt("borealis", Outcome::Rescue { method }, 100),
    );
    let text = metrics.render(&[], 0, &memory_status());
    let expect = [
        r#"switchyard_attempts_total{provider="aurora",outcome="failed",kind="timeout"} 2"#,
        r#"switchyard_attempts_total{provider="aurora",outcome="success",kind=""} 1"#,
        r#"switchyard_attempts_total{provider="borealis",outcome="skipped",kind="circuit_open"} 1"#,
        r#"switchyard_attempts_total{provider="borealis",outcome="rescue",kind="continuation"} 1"#,
        // Durations: tries only, never skips.
        r#"switchyard_attempt_duration_seconds_count{provider="aurora"} 3"#,
        r#"switchyard_attempt_duration_seconds_sum{provider="aurora"} 2.25"#,
        r#"switchyard_attempt_duration_seconds_count{provider="borealis"} 1"#,
    ];
    assert_lines(&text, &expect);
}

#[test]
fn transitions_count_by_new_state() {
    let metrics = Metrics::new();
    let t = |from, to| Transition {
        from,
        to,
        cause: None,
        at_ms: 0,
    };
    metrics.on_transition("aurora", &t(CircuitState::Closed, CircuitState::Open));
    metrics.on_transition("aurora", &t(CircuitState::Open, CircuitState::HalfOpen));
    metrics.on_transition("aurora", &t(CircuitState::HalfOpen, CircuitState::Open));
    let text = metrics.render(&[], 0, &memory_status());
    assert_lines(
        &text,
        &[
            r#"switchyard_breaker_transitions_total{provider="aurora",to="open"} 2"#,
            r#"switchyard_breaker_transitions_total{provider="aurora",to="half_open"} 1"#,
            r#"switchyard_breaker_transitions_total{provider="aurora",to="closed"} 0"#,
        ],
    );
}

#[test]
fn completions_count_tokens_exact_cost_and_unpriced_calls() {
    let metrics = Metrics::new();
    let dime = Money::from_picos(100_000_000_000);
    for _ in 0..3 {
        metrics.on_complete("smart", Ok(&response("aurora", Some(dime))));
    }
    metrics.on_complete("smart", Ok(&response("borealis", None)));
    // A cancelled stream's partial counts; a failure counts nothing.
    let partial = Some(Box::new(response("borealis", None)));
    metrics.on_complete(
        "smart",
        Err(&GatewayError::Cancelled {
            partial,
            attempts: Vec::new(),
        }),
    );
    let failed = GatewayError::AllFailed {
        errors: Vec::new(),
        attempts: Vec::new(),
    };
    metrics.on_complete("smart", Err(&failed));
    let text = metrics.render(&[], 0, &memory_status());
    let expect = [
        // 0.1 + 0.1 + 0.1 is 0.30000000000000004 in f64; the exact sum is 0.3.
        r#"switchyard_cost_usd_total{provider="aurora"} 0.3"#,
        r#"switchyard_unpriced_calls_total{provider="aurora"} 0"#,
        r#"switchyard_unpriced_calls_total{provider="borealis"} 2"#,
        r#"switchyard_tokens_total{provider="aurora",direction="input"} 300"#,
        r#"switchyard_tokens_total{provider="aurora",direction="output"} 60"#,
        r#"switchyard_tokens_total{provider="aurora",direction="cached_input"} 120"#,
        r#"switchyard_tokens_total{provider="aurora",direction="reasoning"} 15"#,
        r#"switchyard_tokens_total{provider="borealis",direction="input"} 200"#,
    ];
    assert_lines(&text, &expect);
}

#[test]
fn requests_failovers_ttft_and_overhead() {
    let metrics = Metrics::new();
    metrics.request("smart", 200, false, Duration::from_millis(300));
    metrics.request("smart", 200, false, Duration::from_millis(100));
    metrics.request("smart", 502, true, Duration::from_secs(2));
    metrics.request("unknown", 404, false, Duration::from_micros(50));
    metrics.failover("smart");
    metrics.ttft("smart", Duration::from_millis(400));
    metrics.overhead(Duration::from_micros(30));
    let text = metrics.render(&[], 0, &memory_status());
    let expect = [
        r#"switchyard_requests_total{route="smart",status="200",stream="false"} 2"#,
        r#"switchyard_requests_total{route="smart",status="502",stream="true"} 1"#,
        r#"switchyard_requests_total{route="unknown",status="404",stream="false"} 1"#,
        r#"switchyard_request_duration_seconds_count{route="smart"} 3"#,
        r#"switchyard_failovers_total{route="smart"} 1"#,
        r#"switchyard_time_to_first_token_seconds_bucket{route="smart",le="0.25"} 0"#,
        r#"switchyard_time_to_first_token_seconds_bucket{route="smart",le="0.5"} 1"#,
        r#"switchyard_gateway_overhead_seconds_bucket{le="2.5e-05"} 0"#,
        r#"switchyard_gateway_overhead_seconds_bucket{le="5e-05"} 1"#,
    ];
    assert_lines(&text, &expect);
    assert!(text.contains("# TYPE switchyard_requests_total counter"));
    assert!(text.contains("# TYPE switchyard_gateway_overhead_seconds histogram"));
}

#[test]
fn health_gauges_are_computed_at_scrape_time() {
    let health = [
        health("aurora", "open", 3, Some(221.5)),
        health("borealis", "closed", 0, None),
        health("claude", "auth_failed", 1, None),
        health("gpt", "half_open", 2, Some(80.0)),
    ];
    let text = Metrics::new().render(&health, 7, &memory_status());
    let expect = [
        r#"switchyard_breaker_state{provider="aurora"} 1"#,
        r#"switchyard_breaker_state{provider="borealis"} 0"#,
        r#"switchyard_breaker_state{provider="claude"} 1"#,
        r#"switchyard_breaker_state{provider="gpt"} 2"#,
        r#"switchyard_breaker_auth_failed{provider="aurora"} 0"#,
        r#"switchyard_breaker_auth_failed{provider="claude"} 1"#,
        r#"switchyard_breaker_consecutive_failures{provider="aurora"} 3"#,
        r#"switchyard_provider_latency_ewma_seconds{provider="aurora"} 0.2215"#,
        r#"switchyard_request_log_dropped_total 7"#,
    ];
    assert_lines(&text, &expect);
    let no_observation = r#"switchyard_provider_latency_ewma_seconds{provider="borealis"}"#;
    assert!(
        !text.contains(no_observation),
        "no latency observed, no sample"
    );
}

#[test]
fn error_messages_never_become_labels() {
    let metrics = Metrics::new();
    let message = "upstream said: invalid key sk-live-abc123 (request req_987)";
    metrics.on_attempt(
        "smart",
        &attempt("aurora", failed(ErrorKind::Auth, message), 5),
    );
    let text = metrics.render(&[], 0, &memory_status());
    for fragment in ["sk-live", "req_987", "upstream said"] {
        assert!(!text.contains(fragment), "{fragment}");
    }
    let series = r#"switchyard_attempts_total{provider="aurora",outcome="failed",kind="auth"} 1"#;
    assert_lines(&text, &[series]);
}

#[test]
fn unknown_rescue_methods_collapse_to_one_label() {
    let metrics = Metrics::new();
    for method in ["x1", "x2", "x3"] {
        let method = method.to_owned();
        metrics.on_attempt("smart", &attempt("aurora", Outcome::Rescue { method }, 1));
    }
    let text = metrics.render(&[], 0, &memory_status());
    let series = r#"switchyard_attempts_total{provider="aurora",outcome="rescue",kind="other"} 3"#;
    assert_lines(&text, &[series]);
}
