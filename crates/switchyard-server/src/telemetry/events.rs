//! What happened to traffic, said on stderr at the default level (`info`), so an operator
//! tailing the log sees an outage and a recovery without opening the dashboard.
//!
//! Owns [`Events`], a gateway observer that writes one `tracing` line (target
//! [`EVENTS`]) per circuit transition, per health-check verdict change (not per check),
//! per budget exhausted (once per exhaustion, not per refused request), and the
//! rate-limited failover summary (`failovers.rs`), flushed by [`Events::run`]. Like every
//! observer it never steers or slows a request: the hooks are synchronous and cheap (a
//! request that did not fail over costs one branch), the summary's lock is held for a
//! map lookup. In a fleet a transition is said at `info`/`warn` by the replica that saw
//! it (`seen = "local"`); the others learn of it through the shared state and say it at
//! `debug` (`seen = "fleet"`), so the fleet's log holds each transition once by default.
//! The line formats are in `docs/telemetry.md`.

use std::time::Duration;

use switchyard::breaker::{CircuitState, Transition};
use switchyard::chat::ChatResponse;
use switchyard::clock::Clock;
use switchyard::embedding::EmbeddingResponse;
use switchyard::error::GatewayError;
use switchyard::health::CheckReport;
use switchyard::observe::{Attempt, BudgetExhausted, Observer};
use tokio_util::sync::CancellationToken;

use super::failovers::{self, Failovers, Summary, WINDOW};
use super::trace::EVENTS;

/// How often the failover summary looks for windows that are over.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The observer that says what happened (see the module docs).
#[derive(Debug)]
pub struct Events {
    failovers: Failovers,
    clock: Clock,
}

impl Events {
    /// Events read off `clock` (the gateway's).
    #[must_use]
    pub fn new(clock: Clock) -> Self {
        Self {
            failovers: Failovers::new(),
            clock,
        }
    }

    /// Say the failover counts whose window is over, every second, until `stop`; then
    /// what is left, so a shutdown does not swallow the last window's counts.
    pub async fn run(self: std::sync::Arc<Self>, stop: CancellationToken) {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => self.flush(self.clock.now()),
            }
        }
        self.flush(self.clock.now() + WINDOW);
    }

    fn flush(&self, now: tokio::time::Instant) {
        for line in self.failovers.flush(now) {
            say_failovers(&line);
        }
    }

    /// Count the failovers of a finished request's trail.
    fn count(&self, route: &str, attempts: &[Attempt], answered: bool) {
        let pairs = failovers::pairs(attempts, answered);
        if pairs.is_empty() {
            return;
        }
        let now = self.clock.now();
        for (from, to, why) in pairs {
            if let Some(line) = self.failovers.record(route, from, to, why, now) {
                say_failovers(&line);
            }
        }
    }
}

/// A failover line: the first of its pair in a window at once, then the window's counts.
fn say_failovers(s: &Summary) {
    if s.route.is_empty() {
        tracing::info!(
            target: EVENTS,
            parent: None,
            count = s.count,
            window_s = WINDOW.as_secs(),
            "failovers of further route and provider pairs (past the {} tallied)",
            failovers::MAX_PAIRS
        );
        return;
    }
    tracing::info!(
        target: EVENTS,
        parent: None,
        route = s.route.as_str(),
        from = s.from.as_str(),
        to = s.to.as_str(),
        count = s.count,
        window_s = WINDOW.as_secs(),
        reasons = s.reasons_text().as_str(),
        "failover {} → {}",
        s.from,
        s.to
    );
}

/// A circuit transition: opening at `warn`, the rest at `info`; one seen from the fleet
/// at `debug`.
fn say_transition(provider: &str, t: &Transition, seen: &'static str) {
    let (from, to) = (t.from.label(), t.to.label());
    let why = t.trigger.label();
    let cause = t.cause.map(switchyard::ErrorKind::label);
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                target: EVENTS,
                provider,
                from,
                to,
                why,
                cause,
                cooldown_ms = t.cooldown_ms,
                seen,
                "circuit {from} → {to}"
            )
        };
    }
    match (seen, t.to) {
        ("fleet", _) => line!(debug),
        (_, CircuitState::Open) => line!(warn),
        _ => line!(info),
    }
}

fn verdict(passed: bool) -> &'static str {
    if passed {
        "pass"
    } else {
        "fail"
    }
}

impl Observer for Events {
    fn on_transition(&self, provider: &str, transition: &Transition) {
        say_transition(provider, transition, "local");
    }

    fn on_fleet_transition(&self, provider: &str, transition: &Transition) {
        say_transition(provider, transition, "fleet");
    }

    /// Only when the verdict changed (or is this process's first for the provider).
    fn on_health_check(&self, r: &CheckReport) {
        if !r.verdict_changed() {
            return;
        }
        let (provider, probe) = (r.provider.as_str(), r.probe.label());
        let previous = r.previous.map(verdict);
        if r.ok() {
            tracing::info!(target: EVENTS, provider, probe, verdict = "pass", previous, "health check passes");
            return;
        }
        tracing::warn!(
            target: EVENTS,
            provider,
            probe,
            verdict = "fail",
            previous,
            kind = r.kind.map(switchyard::ErrorKind::label),
            status = r.status,
            error = r.message.as_deref(),
            "health check fails"
        );
    }

    fn on_budget_exhausted(&self, route: &str, e: &BudgetExhausted) {
        tracing::warn!(
            target: EVENTS,
            scope = e.scope.as_str(),
            route,
            limit_usd = e.limit.to_usd(),
            spent_usd = e.spent.to_usd(),
            reserved_usd = e.reserved.to_usd(),
            "budget exhausted: requests it cannot cover are refused (said once, until it has room again)"
        );
    }

    fn on_complete(&self, route: &str, result: Result<&ChatResponse, &GatewayError>) {
        match result {
            Ok(resp) if resp.failed_over => self.count(route, &resp.attempts, true),
            Ok(_) | Err(GatewayError::Cancelled { .. }) => {}
            Err(e) => self.count(route, e.attempts(), false),
        }
    }

    fn on_embedded(&self, route: &str, result: Result<&EmbeddingResponse, &GatewayError>) {
        match result {
            Ok(resp) if resp.failed_over => self.count(route, &resp.attempts, true),
            Ok(_) | Err(GatewayError::Cancelled { .. }) => {}
            Err(e) => self.count(route, e.attempts(), false),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use switchyard::breaker::Trigger;
    use switchyard::health::Probe;
    use switchyard::observe::Outcome;
    use switchyard::{ErrorKind, Money};
    use tracing_subscriber::EnvFilter;

    use super::*;
    use crate::telemetry::testing::Buffer;
    use crate::telemetry::trace::{subscriber, LogFormat};

    /// The JSON lines `f` logs at `filter`, each parsed (every line must parse).
    fn lines(filter: &str, f: impl FnOnce()) -> Vec<Value> {
        let buf = Buffer::default();
        let out = buf.clone();
        let sub = subscriber(LogFormat::Json, EnvFilter::new(filter), move || out.clone());
        tracing::subscriber::with_default(sub, f);
        let text = buf.text();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn opened() -> Transition {
        Transition {
            cause: Some(ErrorKind::Timeout),
            cooldown_ms: Some(10_000),
            ..Transition::new(
                CircuitState::Closed,
                CircuitState::Open,
                1,
                Trigger::Failures,
            )
        }
    }

    #[test]
    fn a_transition_is_one_line_with_who_why_and_how_long() {
        let events = Events::new(Clock::system());
        let closed = Transition::new(
            CircuitState::HalfOpen,
            CircuitState::Closed,
            2,
            Trigger::ProbeSucceeded,
        );
        let out = lines("info", || {
            events.on_transition("openai", &opened());
            events.on_transition("openai", &closed);
        });
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0]["level"], "WARN");
        assert_eq!(out[0]["target"], EVENTS);
        assert_eq!(
            out[0]["fields"],
            serde_json::json!({
                "message": "circuit closed → open",
                "provider": "openai",
                "from": "closed",
                "to": "open",
                "why": "failures",
                "cause": "timeout",
                "cooldown_ms": 10_000,
                "seen": "local",
            })
        );
        assert_eq!(out[1]["level"], "INFO");
        let f = &out[1]["fields"];
        assert_eq!(
            (&f["why"], &f["to"]),
            (&"probe_succeeded".into(), &"closed".into())
        );
        // absent, not empty: no cause, no cooldown
        assert!(
            f.get("cause").is_none() && f.get("cooldown_ms").is_none(),
            "{f}"
        );
    }

    /// Another replica's transition is said at `debug`: the fleet's log at the default
    /// level holds each transition once, from the replica that saw it.
    #[test]
    fn a_transition_learned_from_the_fleet_is_said_at_debug() {
        let events = Events::new(Clock::system());
        let fleet = Transition {
            trigger: Trigger::Fleet,
            ..opened()
        };
        assert!(lines("info", || events.on_fleet_transition("openai", &fleet)).is_empty());
        let out = lines("debug", || events.on_fleet_transition("openai", &fleet));
        assert_eq!(out[0]["fields"]["seen"], "fleet");
        assert_eq!(out[0]["fields"]["why"], "another_replica");
    }

    fn report(kind: Option<ErrorKind>, previous: Option<bool>) -> CheckReport {
        CheckReport {
            provider: "claude".into(),
            probe: Probe::Listing,
            at_ms: 0,
            latency: Duration::ZERO,
            kind,
            status: kind.map(|_| 503),
            message: kind.map(|_| "overloaded".to_owned()),
            cost: None,
            previous,
        }
    }

    #[test]
    fn a_health_line_is_said_when_the_verdict_changes_not_per_check() {
        let events = Events::new(Clock::system());
        let failing = Some(ErrorKind::Server);
        let out = lines("info", || {
            events.on_health_check(&report(None, None)); // first: said
            events.on_health_check(&report(None, Some(true))); // same: quiet
            events.on_health_check(&report(failing, Some(true))); // changed: said
            events.on_health_check(&report(failing, Some(false))); // same: quiet
            events.on_health_check(&report(None, Some(false))); // changed: said
        });
        let said: Vec<(&str, &str)> = out
            .iter()
            .map(|l| {
                (
                    l["level"].as_str().unwrap(),
                    l["fields"]["verdict"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(said, [("INFO", "pass"), ("WARN", "fail"), ("INFO", "pass")]);
        assert!(
            out[0]["fields"].get("previous").is_none(),
            "the first has none"
        );
        let fail = &out[1]["fields"];
        assert_eq!(fail["kind"], "server");
        assert_eq!(fail["status"], 503);
        assert_eq!(fail["previous"], "pass");
    }

    #[test]
    fn an_exhausted_budget_is_one_warning_with_its_books() {
        let events = Events::new(Clock::system());
        let e = BudgetExhausted {
            scope: "key:ci:day:2026-12-01".into(),
            limit: Money::from_usd(5.0),
            spent: Money::from_usd(4.5),
            reserved: Money::from_usd(0.25),
        };
        let out = lines("info", || events.on_budget_exhausted("smart", &e));
        let f = &out[0]["fields"];
        assert_eq!(out[0]["level"], "WARN");
        assert_eq!(f["scope"], "key:ci:day:2026-12-01");
        assert_eq!(f["route"], "smart");
        assert_eq!(
            (&f["limit_usd"], &f["spent_usd"], &f["reserved_usd"]),
            (&5.0.into(), &4.5.into(), &0.25.into())
        );
    }

    fn failed(provider: &str) -> Attempt {
        let mut a = Attempt::skipped(provider, "m", switchyard::breaker::SkipReason::Cooling);
        a.outcome = Outcome::Failed {
            kind: ErrorKind::Timeout,
            message: String::new(),
        };
        a
    }

    /// A failed-over request is a line at once; a storm within the window waits for the
    /// window's end (`Events::run` flushes) and is one line with counts. A request that did
    /// not fail over says nothing.
    #[tokio::test(start_paused = true)]
    async fn failovers_are_said_at_once_then_once_per_window() {
        let events = Events::new(Clock::system());
        let mut answered = ChatResponse {
            provider: "anthropic".into(),
            failed_over: true,
            attempts: vec![
                failed("openai"),
                Attempt::skipped("anthropic", "m", switchyard::breaker::SkipReason::Cooling),
            ],
            ..ChatResponse::default()
        };
        answered.attempts[1].outcome = Outcome::Success;
        let plain = ChatResponse {
            provider: "openai".into(),
            attempts: vec![answered.attempts[1].clone()],
            ..ChatResponse::default()
        };
        let out = lines("info", || {
            for _ in 0..50 {
                events.on_complete("smart", Ok(&answered));
                events.on_complete("smart", Ok(&plain));
            }
        });
        assert_eq!(out.len(), 1, "{out:?}");
        let f = &out[0]["fields"];
        assert_eq!(f["message"], "failover openai → anthropic");
        assert_eq!(
            (&f["route"], &f["count"], &f["reasons"]),
            (&"smart".into(), &1.into(), &"timeout=1".into())
        );
        assert!(
            out[0].get("span").is_none(),
            "a summary is no request's line"
        );
        tokio::time::advance(WINDOW).await;
        let out = lines("info", || events.flush(events.clock.now()));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0]["fields"]["count"], 49);
        assert_eq!(out[0]["fields"]["window_s"], 10);
    }
}
