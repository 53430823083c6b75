//! The metrics' exposition: names, labels and values as Prometheus reads them.

use super::*;
use crate::telemetry::log::LogEntry;
use switchyard::breaker::{SkipReason, Trigger};
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
        probe: false,
        reported: None,
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
    let t = |from, to| Transition::new(from, to, 0, Trigger::Failures);
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

fn finished(route: &str, key: Option<&str>, provider: Option<&str>, status: u16) -> LogEntry {
    LogEntry {
        id: "req".to_owned(),
        time_ms: 0,
        api: "chat".into(),
        route: route.to_owned(),
        key: key.map(str::to_owned),
        stream: false,
        status,
        provider: provider.map(str::to_owned),
        model: Some("upstream-said-this-model".to_owned()),
        failed_over: false,
        attempts: Vec::new(),
        usage: Some(Usage {
            input_tokens: 10,
            output_tokens: 3,
            ..Usage::default()
        }),
        cost_usd: Some(0.25),
        latency_ms: 1.0,
        ttft_ms: None,
        error: (status >= 400).then(|| "all_failed".to_owned()),
        dropped: Vec::new(),
        cache: None,
        trace_id: None,
        span_id: None,
        parent_span_id: None,
        sampled: false,
        content: None,
    }
}

fn labelled() -> Metrics {
    Metrics::with_usage_labels(UsageLabels {
        routes: ["smart".to_owned()].into(),
        keys: ["team-a".to_owned()].into(),
        models: [("claude".to_owned(), "claude-sonnet-4-5".to_owned())].into(),
    })
}

#[test]
fn requests_tokens_and_cost_are_labelled_by_configured_route_key_and_model_only() {
    use crate::telemetry::log::LogTap as _;
    let metrics = labelled();
    for _ in 0..3 {
        metrics.request_started();
    }
    metrics.record(&Arc::new(finished(
        "smart",
        Some("team-a"),
        Some("claude"),
        200,
    )));
    metrics.record(&Arc::new(finished(
        "smart",
        Some("team-a"),
        Some("claude"),
        200,
    )));
    // a client's made-up route and an unknown key are not labels
    metrics.record(&Arc::new(finished(
        "gpt-made-up",
        Some("mallory"),
        None,
        404,
    )));
    let text = metrics.render(&[], 0, &memory_status());
    let l = r#"route="smart",key="team-a",provider="claude",model="claude-sonnet-4-5""#;
    assert_lines(
        &text,
        &[
            &format!("switchyard_key_requests_total{{{l},outcome=\"answered\"}} 2"),
            &format!("switchyard_key_requests_total{{{l},outcome=\"failed\"}} 0"),
            &format!("switchyard_key_tokens_total{{{l},direction=\"input\"}} 20"),
            &format!("switchyard_key_tokens_total{{{l},direction=\"output\"}} 6"),
            &format!("switchyard_key_cost_usd_total{{{l}}} 0.5"),
            r#"switchyard_key_requests_total{route="other",key="other",provider="none",model="none",outcome="failed"} 1"#,
            "switchyard_in_flight_requests 0",
        ],
    );
    assert!(!text.contains("gpt-made-up") && !text.contains("mallory"));
    assert!(!text.contains("upstream-said-this-model"), "{text}");
}

#[test]
fn past_the_cap_new_combinations_are_other() {
    use crate::telemetry::log::LogTap as _;
    let routes: std::collections::HashSet<String> =
        (0..=MAX_USAGE_SERIES).map(|i| format!("r{i}")).collect();
    let metrics = Metrics::with_usage_labels(UsageLabels {
        routes,
        ..UsageLabels::default()
    });
    for i in 0..=MAX_USAGE_SERIES {
        metrics.record(&Arc::new(finished(&format!("r{i}"), None, None, 200)));
    }
    let text = metrics.render(&[], 0, &memory_status());
    let series = text
        .lines()
        .filter(|l| l.starts_with("switchyard_key_requests_total{") && l.contains("answered"))
        .count();
    assert_eq!(
        series,
        MAX_USAGE_SERIES + 1,
        "the cap's series plus `other`"
    );
    assert_lines(
        &text,
        &[
            r#"switchyard_key_requests_total{route="other",key="other",provider="other",model="other",outcome="answered"} 1"#,
        ],
    );
}

#[test]
fn upstream_headroom_budgets_and_telemetry_drops_are_exposed() {
    let metrics = labelled();
    let mut h = axum::http::HeaderMap::new();
    h.insert(
        "anthropic-ratelimit-requests-remaining",
        "49".parse().unwrap(),
    );
    h.insert(
        "anthropic-ratelimit-output-tokens-remaining",
        "7000".parse().unwrap(),
    );
    let headroom = Headroom::from_headers(&h).unwrap();
    metrics.on_headroom("claude", &headroom);
    let extras = Extras {
        budgets: vec![
            ("route", "smart".to_owned(), 12.5),
            ("key", "team-a".to_owned(), 0.75),
        ],
        spans_dropped: 4,
        spans_exported: 9,
        access_dropped: 1,
        database_up: Some(false),
    };
    let text = metrics.render_with(&[], 0, &memory_status(), &extras);
    assert_lines(
        &text,
        &[
            r#"switchyard_upstream_ratelimit_remaining{provider="claude",limit="requests"} 49"#,
            r#"switchyard_upstream_ratelimit_remaining{provider="claude",limit="output_tokens"} 7000"#,
            r#"switchyard_budget_remaining_usd{scope="route",name="smart"} 12.5"#,
            r#"switchyard_budget_remaining_usd{scope="key",name="team-a"} 0.75"#,
            "switchyard_otlp_spans_dropped_total 4",
            "switchyard_otlp_spans_exported_total 9",
            "switchyard_access_log_dropped_total 1",
            "switchyard_database_up 0",
        ],
    );
}

#[test]
fn the_grafana_dashboard_queries_only_metrics_that_exist() {
    let dashboard: serde_json::Value =
        serde_json::from_str(include_str!("../../../../../docs/grafana-dashboard.json")).unwrap();
    let extras = Extras {
        budgets: vec![("route", "smart".to_owned(), 1.0)],
        ..Extras::default()
    };
    // every family with a series, as a running gateway has them
    let metrics = labelled();
    metrics.request("smart", 200, true, Duration::from_millis(5));
    metrics.failover("smart");
    metrics.ttft("smart", Duration::from_millis(2));
    metrics.overhead(Duration::from_micros(30));
    metrics.on_attempt("smart", &attempt("claude", Outcome::Success, 3));
    metrics.on_complete("smart", Ok(&response("claude", Some(Money::from_usd(0.5)))));
    {
        use crate::telemetry::log::LogTap as _;
        metrics.record(&Arc::new(finished("smart", None, Some("claude"), 200)));
    }
    let mut h = axum::http::HeaderMap::new();
    h.insert("x-ratelimit-remaining-requests", "1".parse().unwrap());
    metrics.on_headroom("claude", &Headroom::from_headers(&h).unwrap());
    let providers = [health("claude", "closed", 0, Some(3.0))];
    let text = metrics.render_with(&providers, 0, &memory_status(), &extras);
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            for (at, _) in expr.match_indices("switchyard_") {
                let name: String = expr[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let base = ["_bucket", "_total", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .unwrap_or(&name);
                assert!(
                    text.contains(&format!("# TYPE {name} "))
                        || text.contains(&format!("# TYPE {base} ")),
                    "the dashboard queries {name}, which /metrics does not have"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "{checked}");
}
