//! Blame where it belongs: a rescue that comes to nothing (a restart that diverged, a
//! continuation whose prefill was refused) is the rescue's failure, never the healthy
//! rescuer's — its breaker, its failures in the ledger and the request's error stay clean,
//! and the error names the provider that was cut.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchyard::error::{BreakerEffect, KindPolicy};
use switchyard::gateway::{ProviderHealth, StreamEvent};
use switchyard::observe::Outcome;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::{ErrorKind, Gateway, GatewayError, ProviderError, Route};

use super::sentence::{cut_after, drain, req, WORDS};
use super::{breaker, priced, route, stream_timeouts};

/// A gateway over primary then backup (taking a prefill when `prefill`) on `r`, stream
/// timeouts 10 s / 5 s.
fn gateway(
    primary: &Arc<ScriptedProvider>,
    backup: &Arc<ScriptedProvider>,
    prefill: bool,
    r: Route,
) -> Gateway {
    Gateway::builder()
        .provider(stream_timeouts(priced("primary", primary)))
        .provider(stream_timeouts(priced("backup", backup)).supports_prefill(prefill))
        .route(r)
        .build()
        .unwrap()
}

/// A route whose breakers open at the first failure counted: any blame shows at once.
fn touchy() -> Route {
    route(&["primary", "backup"]).breaker(breaker(1, 30))
}

async fn health(gw: &Gateway, name: &str) -> ProviderHealth {
    (gw.health().await.into_iter())
        .find(|h| h.name == name)
        .unwrap()
}

fn failures(gw: &Gateway, name: &str) -> BTreeMap<ErrorKind, u64> {
    gw.ledger()
        .summary()
        .get(name)
        .map(|r| r.failures.clone())
        .unwrap_or_default()
}

/// A stream cut on the primary and restarted on the backup, whose text parts from what
/// was sent at character 10 ("The quick " then "red" for "brown"): the divergence is the
/// rescue's. The backup's breaker stays closed with no failure, the ledger counts nothing
/// against it, and the client's error is the primary's cut, saying what the rescue came to.
#[tokio::test(start_paused = true)]
async fn a_diverging_restart_is_the_rescues_failure_not_the_rescuers() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let other = Step::stream_words(&["The ", "quick ", "red ", "fox."]);
    let backup = Arc::new(ScriptedProvider::new("b").then(other));
    let gw = gateway(&primary, &backup, false, touchy());
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, "The quick brown ", "nothing of the restart leaked");

    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    let GatewayError::Provider {
        provider,
        error,
        attempts,
    } = *err
    else {
        panic!("{err:?}")
    };
    assert_eq!(provider, "primary", "the provider that was cut");
    assert_eq!(
        error.kind,
        ErrorKind::Malformed,
        "the cut, not the divergence"
    );
    assert_eq!(
        error.message,
        "stream closed before the finish signal; no honest rescue: \
         backup's restart diverged at character 10 of the 16 already sent"
    );
    let trail: Vec<_> = attempts
        .iter()
        .map(|a| format!("{} {}", a.provider, a.outcome.label()))
        .collect();
    assert_eq!(
        trail,
        [
            "primary failed:malformed",
            "backup rescue:restart",
            "backup diverged"
        ]
    );
    assert_eq!(attempts[2].outcome, Outcome::Diverged { at: 10, sent: 16 });

    let b = health(&gw, "backup").await;
    assert_eq!(
        (b.state.as_str(), b.consecutive_failures, b.last_error),
        ("closed", 0, None),
        "no failure recorded against the backup"
    );
    let p = health(&gw, "primary").await;
    assert_eq!(
        (p.state.as_str(), p.last_error),
        ("open", Some(ErrorKind::Malformed)),
        "the primary was cut: its failure"
    );
    assert_eq!(failures(&gw, "backup"), BTreeMap::new());
    assert_eq!(failures(&gw, "primary"), [(ErrorKind::Malformed, 1)].into());
}

/// A divergence in the restart's first chunk (the head read at its commit point) is the
/// same: recorded as the rescue's, the error is the primary's.
#[tokio::test(start_paused = true)]
async fn a_restart_diverging_at_its_first_chunk_is_not_the_rescuers_failure() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let backup = Arc::new(ScriptedProvider::new("b").then(Step::stream_words(&["Lyon."])));
    let gw = gateway(&primary, &backup, false, touchy());
    let (_, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    assert!(
        err.to_string().starts_with(
            "primary: malformed: stream closed before the finish signal; no honest rescue: \
             backup's restart diverged at character 0 of the 16 already sent"
        ),
        "{err}"
    );
    assert_eq!(err.attempts().last().unwrap().outcome.label(), "diverged");
    assert_eq!(health(&gw, "backup").await.state, "closed");
    assert_eq!(failures(&gw, "backup"), BTreeMap::new());
}

/// A continuation whose prefill the rescuer refuses (a 400) is declined: the rescue's
/// failure. Even on a route that counts bad requests against a breaker, the rescuer's
/// stays closed and its ledger clean; the restart on it then finishes the stream.
#[tokio::test(start_paused = true)]
async fn a_refused_prefill_is_declined_not_the_providers_failure() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let refusal =
        ProviderError::new(ErrorKind::BadRequest, "prefill not supported").with_status(400);
    let backup = Arc::new(
        ScriptedProvider::new("b")
            .then(Step::Fail(refusal))
            .otherwise(Step::stream_words(&WORDS)),
    );
    let counting = KindPolicy {
        retry: false,
        breaker: BreakerEffect::CountFailure,
        fail_over: true,
    };
    let r = touchy().policy(ErrorKind::BadRequest, counting);
    let gw = gateway(&primary, &backup, true, r);
    let (text, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    assert_eq!(text, WORDS.concat());
    let StreamEvent::Done(resp) = end else {
        panic!("{end:?}")
    };
    let labels: Vec<_> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(
        labels,
        [
            "failed:malformed",
            "declined:bad_request",
            "rescue:restart",
            "success"
        ]
    );
    assert_eq!(resp.attempts[1].status, Some(400));
    assert_eq!(backup.requests().len(), 2, "a continuation, then a restart");
    let b = health(&gw, "backup").await;
    assert_eq!((b.state.as_str(), b.last_error), ("closed", None));
    assert_eq!(failures(&gw, "backup"), BTreeMap::new());
}

/// A continuation that fails for the provider's own reasons (a 5xx, as any call could)
/// is the provider's failure, counted as on any call; the error of a stream nothing
/// rescued still names the provider that was cut, and says what each rescue came to.
#[tokio::test(start_paused = true)]
async fn a_continuation_failing_on_its_own_counts_against_its_provider() {
    let primary = Arc::new(ScriptedProvider::new("p").then(cut_after(3)));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)));
    let gw = gateway(&primary, &backup, true, route(&["primary", "backup"]));
    let (_, end) = drain(gw.stream("main", req()).await.unwrap()).await;
    let StreamEvent::Failed(err) = end else {
        panic!("{end:?}")
    };
    let labels: Vec<_> = err.attempts().iter().map(|a| a.outcome.label()).collect();
    assert_eq!(
        labels,
        [
            "failed:malformed",
            "failed:server",
            "failed:server",
            "failed:server",
            "failed:server"
        ],
        "two tries of the continuation, two of the restart"
    );
    assert_eq!(failures(&gw, "backup"), [(ErrorKind::Server, 4)].into());
    assert_eq!(health(&gw, "backup").await.consecutive_failures, 2);
    let GatewayError::Provider {
        provider, error, ..
    } = *err
    else {
        panic!()
    };
    assert_eq!(provider, "primary");
    assert_eq!(
        error.message,
        "stream closed before the finish signal; no honest rescue: \
         backup's continuation failed (server); backup's restart failed (server)"
    );
}
