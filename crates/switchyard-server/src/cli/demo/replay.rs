//! Runs a scenario through the library's real [`Gateway`] and breaker.
//!
//! Owns the translation from the tutorial's policy to a switchyard gateway (one ordered
//! route, `retries_per_provider` attempts, no backoff, full-turn probes, and timeouts made
//! retryable as the tutorial retries its "timed out" errors), the sequential drive of the
//! requests, and the mapping of each request's attempt trail to the tutorial's log rows. It
//! implements no gateway logic of its own: every decision is the library's.
//!
//! The tutorial counts its cooldown in requests; the library's breaker counts time. The
//! gateway runs on a manual clock whose wall time reads 0 ms at the first request and moves
//! `REQUEST_GAP` (1 ms) after each, so request `i` happens at `i` ms: "skipped for the
//! `n` requests after the one that opened it" is a cooldown of `n + 1` ms that never grows,
//! and the end of a breaker's last opening is the tutorial's `opened_until_request`.
//! Nothing else in a demo run depends on time (no backoff, no sleeping providers, no
//! Retry-After, a deadline no run reaches).

use std::sync::Arc;
use std::time::Duration;

use crate::simulated::SimulatedProvider;
use switchyard::breaker::{BreakerConfig, Cooldown, SkipReason};
use switchyard::clock::Clock;
use switchyard::observe::{Attempt, Outcome};
use switchyard::retry::RetryPolicy;
use switchyard::route::Probe;
use switchyard::{
    ChatRequest, ChatResponse, ErrorKind, Gateway, ProviderReply, ProviderSpec, Route,
};

use super::scenario::{ProviderScenario, Scenario};
use super::DemoError;

/// The one route of a demo gateway.
const ROUTE: &str = "demo";

/// How far the demo's paused clock moves between two requests: request `i` happens at `i` ms.
const REQUEST_GAP: Duration = Duration::from_millis(1);

/// Far beyond any simulated run: the tutorial has no deadline.
const DEADLINE: Duration = Duration::from_secs(24 * 60 * 60);

/// One successful response, as the tutorial's `LLMResponse`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Response {
    /// `[<provider>] <first 30 chars of the prompt>...`
    pub text: String,
    /// Who answered.
    pub provider: String,
    /// The provider's reported latency, in ms.
    pub latency_ms: f64,
    /// What the answer cost, in dollars.
    pub cost_usd: f64,
}

/// One row of the tutorial's `gateway.log`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogRow {
    /// The gateway's request index, from 0.
    pub request: u64,
    /// The provider tried or skipped.
    pub provider: String,
    /// `success`, `failed_attempt_<n>` or `skipped_open_circuit`.
    pub outcome: String,
}

/// Everything a demo run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Successful responses, in request order.
    pub responses: Vec<Response>,
    /// Requests on which every provider failed or was skipped.
    pub errors: u64,
    /// Every try and skip, in order.
    pub log: Vec<LogRow>,
    /// Each provider's `opened_until_request`, in configured order (0: never opened): the
    /// end of its last opening on the demo's clock, where request `i` is `i` ms.
    pub breakers: Vec<(String, u64)>,
}

/// The tutorial's three-call preview: a fresh aurora (seed 42) answering one prompt three
/// times, each line as the tutorial prints it (`LLMResponse(...)` or `error: ...`).
///
/// # Errors
/// A reply without the latency or cost a simulated provider always reports.
pub async fn preview() -> Result<Vec<Result<Response, String>>, DemoError> {
    let provider = super::scenario::tutorial_aurora().provider();
    let req = ChatRequest::from_prompt("Summarize the Q3 shipping report in two sentences.")
        .with_max_tokens(200);
    let mut out = Vec::with_capacity(3);
    for _ in 0..3 {
        out.push(match switchyard::Provider::send(&provider, &req).await {
            Ok(reply) => Ok(response_of_reply(reply, "aurora")?),
            Err(e) => Err(e.message),
        });
    }
    Ok(out)
}

/// Build the scenario's gateway and send its requests one after another, `REQUEST_GAP`
/// apart on its clock.
///
/// # Errors
/// The gateway cannot be built from the scenario, or an answer lacks its latency or cost.
pub async fn replay(scenario: &Scenario) -> Result<Replay, DemoError> {
    let clock = Clock::manual(0);
    let gateway = gateway(scenario, clock)?;
    let mut out = Replay {
        responses: Vec::new(),
        errors: 0,
        log: Vec::new(),
        breakers: Vec::new(),
    };
    for index in 0..scenario.requests {
        let req = ChatRequest::from_prompt(scenario.prompt_for(index))
            .with_max_tokens(scenario.max_tokens);
        match gateway.chat(ROUTE, &req).await {
            Ok(resp) => {
                out.log.extend(log_rows(index, &resp.attempts));
                out.responses.push(response_of(&resp)?);
            }
            Err(err) => {
                out.log.extend(log_rows(index, err.attempts()));
                out.errors += 1;
            }
        }
        clock.advance(REQUEST_GAP);
    }
    out.breakers = gateway
        .health()
        .await
        .into_iter()
        .map(|h| (h.name, h.last_open_until))
        .collect();
    Ok(out)
}

/// The tutorial's policy on the library's gateway, reading time from `clock`.
///
/// # Errors
/// A provider's price cannot be represented, or the gateway rejects the configuration.
pub fn gateway(scenario: &Scenario, clock: Clock) -> Result<Gateway, DemoError> {
    let mut builder = Gateway::builder().clock(clock);
    for p in &scenario.providers {
        builder = builder.provider(spec(p)?);
    }
    let names: Vec<&str> = scenario.providers.iter().map(|p| p.name.as_str()).collect();
    builder
        .route(route(scenario, &names))
        .build()
        .map_err(|e| DemoError::Invalid(e.problems))
}

fn spec(p: &ProviderScenario) -> Result<ProviderSpec, DemoError> {
    let provider = SimulatedProvider::new(p.simulated_config());
    let price = provider.price().map_err(|e| {
        DemoError::Invalid(vec![format!(
            "provider {:?}: cost_per_1k_tokens: {e}",
            p.name
        )])
    })?;
    Ok(ProviderSpec::new(&p.name, Arc::new(provider)).price(price))
}

fn route(scenario: &Scenario, providers: &[&str]) -> Route {
    let mut timeout = ErrorKind::Timeout.default_policy();
    timeout.retry = true; // the tutorial retries its "timed out" errors
    Route::new(ROUTE, providers)
        .deadline(DEADLINE)
        .retry(RetryPolicy {
            max_attempts: scenario.retries_per_provider,
            base_delay: Duration::ZERO,
            max_delay: Duration::ZERO,
            ..RetryPolicy::default()
        })
        .breaker(BreakerConfig {
            failure_threshold: scenario.breaker_threshold,
            cooldown: cooldown(scenario.breaker_cooldown_requests),
        })
        .probe(Probe::FullTurn)
        .policy(ErrorKind::Timeout, timeout)
}

/// The tutorial's "skipped for the `n` requests after the one that opened it", on the
/// demo's clock: open until the request `n + 1` after it, and never longer.
fn cooldown(n: u64) -> Cooldown {
    let wait = REQUEST_GAP.saturating_mul(u32::try_from(n.saturating_add(1)).unwrap_or(u32::MAX));
    Cooldown {
        base: wait,
        max: wait,
    }
}

/// A request's trail as the tutorial's log rows.
fn log_rows(request: u64, attempts: &[Attempt]) -> impl Iterator<Item = LogRow> + '_ {
    attempts.iter().map(move |a| LogRow {
        request,
        provider: a.provider.clone(),
        outcome: outcome_label(a),
    })
}

/// The tutorial's outcome words; anything the tutorial cannot produce keeps a telling label.
fn outcome_label(a: &Attempt) -> String {
    match &a.outcome {
        Outcome::Success => "success".to_owned(),
        Outcome::Failed { .. } => format!("failed_attempt_{}", a.attempt),
        Outcome::Skipped {
            reason: SkipReason::CircuitOpen,
            ..
        } => "skipped_open_circuit".to_owned(),
        Outcome::Skipped { reason, .. } => format!("skipped_{}", reason.label()),
        Outcome::Rescue { method } => format!("rescue_{method}"),
        Outcome::Diverged { .. } => "rescue_diverged".to_owned(),
        Outcome::Declined { .. } => "rescue_declined".to_owned(),
    }
}

fn response_of(resp: &ChatResponse) -> Result<Response, DemoError> {
    Ok(Response {
        text: resp.text.clone(),
        provider: resp.provider.clone(),
        latency_ms: latency_ms(resp.provider_latency, &resp.provider)?,
        cost_usd: resp
            .cost
            .ok_or_else(|| missing(&resp.provider, "cost"))?
            .to_usd(),
    })
}

fn response_of_reply(reply: ProviderReply, provider: &str) -> Result<Response, DemoError> {
    Ok(Response {
        latency_ms: latency_ms(reply.reported_latency, provider)?,
        cost_usd: reply
            .reported_cost
            .ok_or_else(|| missing(provider, "cost"))?
            .to_usd(),
        text: reply.text,
        provider: provider.to_owned(),
    })
}

/// A reported latency in ms, exactly as the tutorial's rounded float (nanos / 1e6).
#[allow(clippy::cast_precision_loss)] // nanos of any simulated latency fit in 53 bits
fn latency_ms(latency: Option<Duration>, provider: &str) -> Result<f64, DemoError> {
    let latency = latency.ok_or_else(|| missing(provider, "latency"))?;
    Ok(latency.as_nanos() as f64 / 1e6)
}

fn missing(provider: &str, what: &str) -> DemoError {
    DemoError::Unreported {
        provider: provider.to_owned(),
        what: what.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::breaker::{Admission, Breaker};
    use switchyard::error::BreakerEffect;

    /// The tutorial's breaker (threshold 3, cooldown 5 requests) on the demo's clock, where
    /// request `i` is `i` ms: opened by request 21, it skips requests 22 to 26 and request 27
    /// probes; its opening ends at 27 (the tutorial's `opened_until_request`).
    #[test]
    fn the_cooldown_in_requests_is_a_cooldown_in_request_gaps() {
        let c = BreakerConfig {
            failure_threshold: 3,
            cooldown: cooldown(5),
        };
        let lease = Duration::from_secs(60);
        let mut b = Breaker::default();
        for request in 19..=21 {
            let kind = ErrorKind::Timeout;
            b.on_attempt_failure(&c, request, kind, BreakerEffect::CountFailure, None, None);
            b.on_turn_failure(&c, request, kind, BreakerEffect::CountFailure, None);
        }
        assert_eq!(b.snapshot(21).open_until, Some(27));
        for request in 22..27 {
            assert_eq!(
                b.admit(request, lease),
                Admission::Reject(SkipReason::CircuitOpen)
            );
        }
        assert!(matches!(b.admit(27, lease), Admission::Probe { .. }));
    }
}
