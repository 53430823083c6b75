//! The state contract: one set of behaviour tests, written against `Arc<dyn SharedState>`
//! and run against both stores (`memory::*` and `redis::*`), then what only a fleet store
//! can show (`fleet::*`): two replicas on one Redis, the fleet-wide probe, lapsed
//! reservations, degradation and the resync after an outage.
//!
//! Needs Redis at 127.0.0.1:6379 (`scripts/test` starts one): the Redis tests fail with
//! a message saying so, never skip. Each test uses its own key prefix and deletes its
//! keys. Nothing sleeps to wait for background work: bounded polls only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

#[path = "state_contract/harness.rs"]
mod harness;

use std::sync::Arc;
use std::time::Duration;

use harness::*;
use switchyard::breaker::{Admission, CircuitState, Op, SkipReason};
use switchyard::clock::Clock;
use switchyard::cost::Money;
use switchyard::error::{BreakerEffect, ErrorKind};
use switchyard::state::{Cleanup, MemoryState, RedisConfig, RedisState, SharedState};
use tokio_util::sync::CancellationToken;

/// Each contract test, once per store.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(std::sync::Arc::new(switchyard::state::MemoryState::new())).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let fleet = super::Fleet::start(stringify!($name), 1).await;
                    super::$name(fleet.store(0)).await;
                    fleet.stop().await;
                }
            )*
        }
    };
}

contract!(
    breaker_opens_after_threshold_failed_turns,
    success_resets_the_failure_count,
    auth_opens_at_once_with_the_longest_cooldown,
    half_open_admits_a_single_probe_and_its_release_frees_it,
    failed_probes_double_the_cooldown_and_success_resets_it,
    retry_after_cools_without_counting,
    reserve_settle_release_keep_the_books,
    concurrent_reservations_never_overspend,
    gcra_allows_a_burst_then_the_exact_wait,
    gcra_counts_usage_added_after_the_call,
    health_checks_open_and_half_open_the_circuit,
    a_lease_has_one_holder_until_it_lapses,
    a_lease_given_back_is_free_at_once_and_only_its_holder_gives_it_back,
    stored_values_are_read_back_replaced_and_deleted,
);

// ---------------------------------------------------------------------------------
// The contract, for every store

async fn stored_values_are_read_back_replaced_and_deleted(s: Store) {
    let now = Clock::system().unix_ms();
    let ttl = Duration::from_secs(60);
    assert_eq!(s.kv_get("conv", now).await, None);
    assert!(s.kv_put("conv", b"first".to_vec(), ttl, now).await);
    assert_eq!(s.kv_get("conv", now).await.as_deref(), Some(&b"first"[..]));
    assert!(s.kv_put("conv", b"second".to_vec(), ttl, now).await);
    assert_eq!(s.kv_get("conv", now).await.as_deref(), Some(&b"second"[..]));
    assert!(s.kv_delete("conv", now).await);
    assert!(!s.kv_delete("conv", now).await, "already gone");
    assert_eq!(s.kv_get("conv", now).await, None);
}

async fn health_checks_open_and_half_open_the_circuit(s: Store) {
    let c = cfg(2);
    let failed = Op::CheckFailed {
        kind: ErrorKind::Connection,
        effect: BreakerEffect::CountFailure,
    };
    assert_eq!(s.breaker_op("p", &c, at(0), failed).await.transition, None);
    let t = s.breaker_op("p", &c, at(1), failed).await.transition;
    assert_eq!(t.map(|t| t.to), Some(CircuitState::Open));
    let listing = Op::CheckPassed {
        proves_traffic: false,
    };
    let t = s.breaker_op("p", &c, at(2), listing).await.transition;
    assert_eq!(t.map(|t| t.to), Some(CircuitState::HalfOpen));
    assert_eq!(state_of(&s, "p", at(2)).await, CircuitState::HalfOpen);
    let completion = Op::CheckPassed {
        proves_traffic: true,
    };
    let t = s.breaker_op("p", &c, at(3), completion).await.transition;
    assert_eq!(t.map(|t| t.to), Some(CircuitState::Closed));
    assert_eq!(admit(&s, "p", &c, at(3)).await, Admission::Admit);
}

async fn a_lease_has_one_holder_until_it_lapses(s: Store) {
    let clock = Clock::system();
    let ttl = Duration::from_millis(200);
    assert!(s.try_lease("job", "a", ttl, clock.unix_ms()).await);
    assert!(!s.try_lease("job", "b", ttl, clock.unix_ms()).await);
    assert!(
        s.try_lease("job", "a", ttl, clock.unix_ms()).await,
        "renewed"
    );
    assert!(s.try_lease("other", "b", ttl, clock.unix_ms()).await);
    // "a" stops renewing: "b" gets the lease once it lapses.
    eventually(Duration::from_secs(3), "the lease lapses", || {
        let s = s.clone();
        async move { s.try_lease("job", "b", ttl, clock.unix_ms()).await }
    })
    .await;
    assert!(!s.try_lease("job", "a", ttl, clock.unix_ms()).await);
}

async fn a_lease_given_back_is_free_at_once_and_only_its_holder_gives_it_back(s: Store) {
    let clock = Clock::system();
    // far longer than the test: only a release frees it
    let ttl = Duration::from_secs(600);
    assert!(!s.release_lease("turn", "a").await, "nobody holds it");
    assert!(s.try_lease("turn", "a", ttl, clock.unix_ms()).await);
    assert!(!s.release_lease("turn", "b").await, "not b's to give back");
    assert!(
        !s.try_lease("turn", "b", ttl, clock.unix_ms()).await,
        "still a's"
    );
    assert!(s.release_lease("turn", "a").await);
    assert!(!s.release_lease("turn", "a").await, "already given back");
    assert!(s.try_lease("turn", "b", ttl, clock.unix_ms()).await);
    // a dropped holder gives it back through `cleanup` (queued for a fleet store); a
    // cleanup for a holder that no longer holds it changes nothing
    s.cleanup(Cleanup::ReleaseLease {
        name: "turn".into(),
        holder: "a".into(),
    });
    s.cleanup(Cleanup::ReleaseLease {
        name: "turn".into(),
        holder: "b".into(),
    });
    eventually(Duration::from_secs(5), "b's lease is given back", || {
        let s = s.clone();
        async move { s.try_lease("turn", "c", ttl, clock.unix_ms()).await }
    })
    .await;
    assert!(
        !s.try_lease("turn", "b", ttl, clock.unix_ms()).await,
        "c's now"
    );
}

async fn breaker_opens_after_threshold_failed_turns(s: Store) {
    let c = cfg(3);
    assert_eq!(fail_turn(&s, "p", &c, at(0), None).await, None);
    assert_eq!(fail_turn(&s, "p", &c, at(1), None).await, None);
    assert_eq!(admit(&s, "p", &c, at(1)).await, Admission::Admit);
    let t = fail_turn(&s, "p", &c, at(2), None).await.expect("opens");
    assert_eq!((t.from, t.to), (CircuitState::Closed, CircuitState::Open));
    assert_eq!(t.cause, Some(ErrorKind::Server));
    let rejected = Admission::Reject(SkipReason::CircuitOpen);
    assert_eq!(admit(&s, "p", &c, at(3)).await, rejected);
    assert_eq!(state_of(&s, "p", at(3)).await, CircuitState::Open);
    // stragglers while open change nothing
    assert_eq!(fail_turn(&s, "p", &c, at(4), None).await, None);
    let ok = Op::Succeeded { lease: None };
    assert_eq!(s.breaker_op("p", &c, at(5), ok).await.transition, None);
    assert_eq!(state_of(&s, "p", at(12)).await, CircuitState::HalfOpen);
    assert!(matches!(
        admit(&s, "p", &c, at(12)).await,
        Admission::Probe { .. }
    ));
    assert_eq!(admit(&s, "other", &c, at(3)).await, Admission::Admit);
}

async fn success_resets_the_failure_count(s: Store) {
    let c = cfg(2);
    fail_turn(&s, "p", &c, at(0), None).await;
    let ok = Op::Succeeded { lease: None };
    assert_eq!(s.breaker_op("p", &c, at(1), ok).await.transition, None);
    assert_eq!(fail_turn(&s, "p", &c, at(2), None).await, None);
    assert_eq!(state_of(&s, "p", at(2)).await, CircuitState::Closed);
    assert!(fail_turn(&s, "p", &c, at(3), None).await.is_some());
}

async fn auth_opens_at_once_with_the_longest_cooldown(s: Store) {
    let c = cfg(3);
    let (kind, effect) = (ErrorKind::Auth, BreakerEffect::OpenNow);
    let attempt = Op::AttemptFailed {
        kind,
        effect,
        retry_after: None,
        lease: None,
    };
    let t = s.breaker_op("p", &c, at(0), attempt).await.transition;
    let t = t.expect("auth opens at once");
    assert_eq!((t.to, t.cause), (CircuitState::Open, Some(ErrorKind::Auth)));
    let turn = Op::TurnFailed {
        kind,
        effect,
        lease: None,
    };
    assert_eq!(s.breaker_op("p", &c, at(0), turn).await.transition, None);
    let snap = s.breaker("p").await.snapshot(at(1));
    assert_eq!(snap.opened_by, Some(ErrorKind::Auth));
    assert_eq!(snap.open_until, Some(T0 + 40_000));
    assert_eq!(state_of(&s, "p", at(39)).await, CircuitState::Open);
}

async fn half_open_admits_a_single_probe_and_its_release_frees_it(s: Store) {
    let c = cfg(1);
    fail_turn(&s, "p", &c, at(0), None).await;
    let lease = admit(&s, "p", &c, at(10)).await.lease().expect("probe");
    let in_flight = Admission::Reject(SkipReason::ProbeInFlight);
    for _ in 0..5 {
        assert_eq!(admit(&s, "p", &c, at(11)).await, in_flight);
    }
    // a probe given back without a verdict lets the next request probe at once
    s.breaker_op("p", &c, at(11), Op::Release { lease }).await;
    let lease = admit(&s, "p", &c, at(11)).await.lease().expect("probe");
    assert_eq!(admit(&s, "p", &c, at(11)).await, in_flight);
    // a cancelled probe's guard releases through `cleanup` (queued for a fleet store)
    s.cleanup(Cleanup::ReleaseProbe {
        provider: "p".into(),
        lease,
    });
    let end = tokio::time::Instant::now() + Duration::from_secs(5);
    let lease = loop {
        if let Some(lease) = admit(&s, "p", &c, at(12)).await.lease() {
            break Some(lease);
        }
        assert!(
            tokio::time::Instant::now() < end,
            "probe still held after cleanup"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let ok = Op::Succeeded { lease };
    let t = s.breaker_op("p", &c, at(12), ok).await.transition.unwrap();
    assert_eq!(
        (t.from, t.to),
        (CircuitState::HalfOpen, CircuitState::Closed)
    );
    assert_eq!(admit(&s, "p", &c, at(12)).await, Admission::Admit);
}

async fn failed_probes_double_the_cooldown_and_success_resets_it(s: Store) {
    let c = cfg(1);
    fail_turn(&s, "p", &c, at(0), None).await; // open until 10
    let mut t = 10;
    for cooldown in [20, 40, 40] {
        let lease = admit(&s, "p", &c, at(t)).await.lease();
        assert!(lease.is_some(), "probe at {t}");
        let tr = fail_turn(&s, "p", &c, at(t), lease).await.unwrap();
        assert_eq!(
            (tr.from, tr.to),
            (CircuitState::HalfOpen, CircuitState::Open)
        );
        let snap = s.breaker("p").await.snapshot(at(t));
        assert_eq!(snap.open_until, Some(T0 + (t + cooldown) * 1000));
        t += cooldown;
    }
    let lease = admit(&s, "p", &c, at(t)).await.lease();
    let ok = Op::Succeeded { lease };
    assert!(s.breaker_op("p", &c, at(t), ok).await.transition.is_some());
    fail_turn(&s, "p", &c, at(t), None).await;
    let snap = s.breaker("p").await.snapshot(at(t));
    assert_eq!(
        snap.open_until,
        Some(T0 + (t + 10) * 1000),
        "cooldown reset"
    );
}

async fn retry_after_cools_without_counting(s: Store) {
    let c = cfg(1);
    let (kind, effect) = (ErrorKind::RateLimited, BreakerEffect::CoolForRetryAfter);
    let attempt = Op::AttemptFailed {
        kind,
        effect,
        retry_after: Some(Duration::from_secs(5)),
        lease: None,
    };
    s.breaker_op("p", &c, at(0), attempt).await;
    let turn = Op::TurnFailed {
        kind,
        effect,
        lease: None,
    };
    assert_eq!(s.breaker_op("p", &c, at(0), turn).await.transition, None);
    let cooling = Admission::Reject(SkipReason::Cooling);
    assert_eq!(admit(&s, "p", &c, at(4)).await, cooling);
    assert_eq!(admit(&s, "p", &c, at(5)).await, Admission::Admit);
    let snap = s.breaker("p").await.snapshot(at(5));
    assert_eq!(snap.consecutive_failures, 0);
}

async fn reserve_settle_release_keep_the_books(s: Store) {
    let (limit, lease) = (usd(1), Duration::from_secs(60));
    let cents = |n: i64| Money::from_picos(n * USD / 100);
    let a = s.reserve("b", limit, cents(30), lease).await.unwrap();
    let b = s.reserve("b", limit, cents(30), lease).await.unwrap();
    assert_ne!(a, b);
    let books = s.budget("b", limit).await;
    assert_eq!((books.spent, books.reserved), (Money::ZERO, cents(60)));
    let refused = s.reserve("b", limit, cents(50), lease).await.unwrap_err();
    assert_eq!((refused.limit, refused.reserved), (limit, cents(60)));
    s.settle("b", a, cents(30), cents(10)).await;
    let books = s.budget("b", limit).await;
    assert_eq!((books.spent, books.reserved), (cents(10), cents(30)));
    s.cleanup(Cleanup::ReleaseBudget {
        scope: "b".into(),
        id: b,
        amount: cents(30),
    });
    let c = s.reserve("b", limit, cents(20), lease).await.unwrap();
    s.cleanup(Cleanup::SettleBudget {
        scope: "b".into(),
        id: c,
        reserved: cents(20),
        actual: cents(15),
    });
    eventually(Duration::from_secs(5), "cleanups applied", || async {
        let books = s.budget("b", limit).await;
        (books.spent, books.reserved) == (cents(25), Money::ZERO)
    })
    .await;
    // exactly the rest fits; one pico more does not
    let rest = cents(75);
    let over = rest + Money::from_picos(1);
    assert!(s.reserve("b", limit, over, lease).await.is_err());
    assert!(s.reserve("b", limit, rest, lease).await.is_ok());
    assert_eq!(s.budget("other", limit).await.spent, Money::ZERO);
}

async fn concurrent_reservations_never_overspend(s: Store) {
    // $10,000 in picos is past 2^53: the books must be exact integers, not doubles
    let (amount, limit) = (usd(1000), usd(10_000));
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move {
                s.reserve("b", limit, amount, Duration::from_secs(60))
                    .await
                    .is_ok()
            })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        won += usize::from(t.await.unwrap());
    }
    assert_eq!(won, 10);
    let books = s.budget("b", limit).await;
    assert_eq!(books.reserved, limit);
    assert!(s
        .reserve("b", limit, Money::from_picos(1), Duration::from_secs(60))
        .await
        .is_err());
}

async fn gcra_allows_a_burst_then_the_exact_wait(s: Store) {
    for _ in 0..3 {
        assert_eq!(s.rate("k", 3, 1, T0).await, Ok(()));
    }
    assert_eq!(s.rate("k", 3, 1, T0).await, Err(Duration::from_secs(20)));
    assert_eq!(
        s.rate("k", 3, 1, T0 + 5_000).await,
        Err(Duration::from_secs(15))
    );
    assert_eq!(s.rate("k", 3, 1, T0 + 20_000).await, Ok(()));
    assert_eq!(s.rate("k", 3, 1, T0 + 120_000).await, Ok(()));
    assert_eq!(s.rate("big", 10, 11, T0).await, Err(Duration::from_secs(6)));
}

async fn gcra_counts_usage_added_after_the_call(s: Store) {
    assert_eq!(s.rate("t", 1000, 0, T0).await, Ok(()));
    s.rate_add("t", 1000, 1500, T0).await;
    let wait = Duration::from_micros(30_060_000);
    assert_eq!(s.rate("t", 1000, 0, T0).await, Err(wait));
    assert_eq!(s.rate("t", 1000, 0, T0 + 30_060).await, Ok(()));
}

// ---------------------------------------------------------------------------------
// Fleet: what only a shared store can show

mod fleet {
    use super::*;

    /// A lease taken on one replica holds the whole fleet off until it is given back,
    /// then another replica takes it at once (what a Messages thread's `continue` relies
    /// on: one request at a time continues from a reply, across replicas).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_is_fleet_wide_and_given_back_across_replicas() {
        let fleet = Fleet::start("lease_release", 2).await;
        let (a, b) = (fleet.store(0), fleet.store(1));
        let clock = Clock::system();
        let ttl = Duration::from_secs(600);
        assert!(a.try_lease("turn", "ra", ttl, clock.unix_ms()).await);
        assert!(!b.try_lease("turn", "rb", ttl, clock.unix_ms()).await);
        assert!(!b.release_lease("turn", "rb").await);
        a.cleanup(Cleanup::ReleaseLease {
            name: "turn".into(),
            holder: "ra".into(),
        });
        eventually(
            Duration::from_secs(5),
            "B takes it once A gave it back",
            || {
                let b = b.clone();
                async move { b.try_lease("turn", "rb", ttl, clock.unix_ms()).await }
            },
        )
        .await;
        assert!(!a.try_lease("turn", "ra", ttl, clock.unix_ms()).await);
        assert!(b.release_lease("turn", "rb").await);
        fleet.stop().await;
    }

    type Told = Arc<std::sync::Mutex<Vec<(String, switchyard::breaker::Transition)>>>;

    /// What `store`'s fleet sink is told, from now on.
    fn watch(store: &Store) -> Told {
        let told = Told::default();
        let sink = Arc::clone(&told);
        store.watch_fleet(Arc::new(
            move |p: &str, t: &switchyard::breaker::Transition| {
                sink.lock().unwrap().push((p.to_owned(), *t));
            },
        ));
        told
    }

    /// A circuit change made on one replica reaches the other replica's fleet sink once,
    /// marked as the fleet's, with its cause and cooldown; the replica that made it is not
    /// told of its own change (nor of its echo on the channel).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_replicas_circuit_changes_reach_the_fleet_sink_once() {
        use switchyard::breaker::Trigger;
        let fleet = Fleet::start("fleet_sink", 2).await;
        fleet.listening().await;
        let (a, b, c) = (fleet.store(0), fleet.store(1), cfg(1));
        let (on_a, on_b) = (watch(&a), watch(&b));
        let now = Clock::system().unix_ms();
        assert!(fail_turn(&a, "p", &c, now, None).await.is_some());
        eventually(
            Duration::from_secs(5),
            "B is told of A's opening",
            || async { !on_b.lock().unwrap().is_empty() },
        )
        .await;
        // B's probe, after the cooldown, closes it; A is told of that (after its own echo)
        let later = now + 10_001;
        let lease = admit(&b, "p", &c, later).await.lease();
        assert!(lease.is_some(), "B probes");
        let closed = b.breaker_op("p", &c, later, Op::Succeeded { lease }).await;
        assert!(closed.transition.is_some());
        eventually(
            Duration::from_secs(5),
            "A is told of B's closing",
            || async { !on_a.lock().unwrap().is_empty() },
        )
        .await;
        let on_a = on_a.lock().unwrap().clone();
        assert_eq!(on_a.len(), 1, "{on_a:?}");
        let (p, t) = &on_a[0];
        assert_eq!(
            (p.as_str(), t.to, t.trigger),
            ("p", CircuitState::Closed, Trigger::Fleet)
        );
        let on_b = on_b.lock().unwrap().clone();
        assert_eq!(
            on_b.len(),
            1,
            "B's own closing is not the fleet's: {on_b:?}"
        );
        let t = on_b[0].1;
        assert_eq!((t.from, t.to), (CircuitState::Closed, CircuitState::Open));
        assert_eq!(
            (t.trigger, t.cause),
            (Trigger::Fleet, Some(ErrorKind::Server))
        );
        assert!(
            t.cooldown_ms.is_some_and(|ms| ms > 0 && ms <= 10_000),
            "{t:?}"
        );
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_circuit_opened_on_one_replica_is_seen_by_another_within_100ms() {
        let mut fleet = Fleet::start("propagation", 0).await;
        // polls far apart: only pub/sub can carry the opening in time
        for _ in 0..2 {
            let cfg = RedisConfig {
                sync_interval: Duration::from_secs(60),
                ..test_config(REDIS_URL, &fleet.prefix)
            };
            fleet.add(cfg).await;
        }
        fleet.listening().await;
        let (a, b, c) = (fleet.store(0), fleet.store(1), cfg(1));
        assert_eq!(admit(&b, "p", &c, at(0)).await, Admission::Admit);
        assert!(fail_turn(&a, "p", &c, at(0), None).await.is_some());
        let rejected = Admission::Reject(SkipReason::CircuitOpen);
        eventually(Duration::from_millis(100), "B sees A's opening", || async {
            admit(&b, "p", &c, at(1)).await == rejected
        })
        .await;
        fleet.stop().await;
    }

    /// A wildcard route's models are breakers of their own in the shared store, under
    /// `{template}/{model}`: a replica that never served model A sees A's circuit open,
    /// and B's (same template) and the template's own stay closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wildcard_models_circuit_is_keyed_by_provider_and_model() {
        use switchyard::provider::scripted::{ScriptedProvider, Step};
        use switchyard::provider::Provider;
        use switchyard::{ChatRequest, Gateway, ProviderSpec, Route};

        let fleet = Fleet::start("wildcard_keys", 2).await;
        fleet.listening().await;
        let (a, b) = (fleet.store(0), fleet.store(1));
        let factory = |model: &str| -> Result<Arc<dyn Provider>, String> {
            let p = ScriptedProvider::new(model);
            Ok(Arc::new(match model {
                // answers once (so it is kept: a model on trial has no circuit), then fails
                "bad" => p
                    .then(Step::text("once"))
                    .otherwise(Step::fail(ErrorKind::Server)),
                "never" => p.otherwise(Step::fail(ErrorKind::Server)),
                _ => p,
            }))
        };
        let template = ScriptedProvider::new("own");
        let gw = Gateway::builder()
            .provider(
                ProviderSpec::new("tmpl", Arc::new(template))
                    .max_attempts(1)
                    .models(Arc::new(factory)),
            )
            .route(
                Route::wildcard("w/*", &["tmpl"], &["*"])
                    .unwrap()
                    .breaker(cfg(1)),
            )
            .state(a)
            .build()
            .unwrap();
        let hi = ChatRequest::from_prompt("hi");
        assert!(gw.chat("w/bad", &hi).await.is_ok());
        assert!(gw.chat("w/bad", &hi).await.is_err());
        assert!(gw.chat("w/good", &hi).await.is_ok());
        assert!(gw.chat("w/never", &hi).await.is_err());
        let now = Clock::system().unix_ms();
        eventually(Duration::from_secs(2), "B sees tmpl/bad open", || async {
            state_of(&b, "tmpl/bad", now).await == CircuitState::Open
        })
        .await;
        assert_eq!(state_of(&b, "tmpl/good", now).await, CircuitState::Closed);
        assert_eq!(state_of(&b, "tmpl", now).await, CircuitState::Closed);
        assert_eq!(
            b.breaker("tmpl").await.snapshot(now).consecutive_failures,
            0
        );
        // a model that never answered left no circuit under any name
        for name in ["tmpl/never", "tmpl/*"] {
            assert_eq!(b.breaker(name).await.snapshot(now).consecutive_failures, 0);
        }
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn exactly_one_probe_across_the_fleet() {
        let fleet = Fleet::start("one_probe", 2).await;
        fleet.listening().await;
        let (a, b, c) = (fleet.store(0), fleet.store(1), cfg(1));
        fail_turn(&a, "p", &c, at(0), None).await;
        eventually(Duration::from_secs(5), "B sees the opening", || async {
            state_of(&b, "p", at(1)).await == CircuitState::Open
        })
        .await;
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let s = if i % 2 == 0 { a.clone() } else { b.clone() };
                tokio::spawn(async move { (i % 2, admit(&s, "p", &c, at(10)).await) })
            })
            .collect();
        let mut probes = Vec::new();
        for t in tasks {
            let (replica, admission) = t.await.unwrap();
            match admission {
                Admission::Probe { lease } => probes.push((replica, lease)),
                other => assert_eq!(other, Admission::Reject(SkipReason::ProbeInFlight)),
            }
        }
        assert_eq!(probes.len(), 1, "one probe for the whole fleet: {probes:?}");
        let (holder, lease) = probes[0];
        let (winner, other) = if holder == 0 { (&a, &b) } else { (&b, &a) };
        let ok = Op::Succeeded { lease: Some(lease) };
        let t = winner.breaker_op("p", &c, at(11), ok).await.transition;
        assert_eq!(t.map(|t| t.to), Some(CircuitState::Closed));
        eventually(
            Duration::from_secs(5),
            "the other replica sees it closed",
            || async { admit(other, "p", &c, at(12)).await == Admission::Admit },
        )
        .await;
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_replicas_probe_lease_expires() {
        let mut fleet = Fleet::start("probe_expiry", 2).await;
        fleet.listening().await;
        let (a, b, c) = (fleet.store(0), fleet.store(1), cfg(1));
        fail_turn(&a, "p", &c, at(0), None).await;
        let short = Op::Admit {
            lease_for: Duration::from_millis(200),
        };
        let probe = a.breaker_op("p", &c, at(10), short).await.admission;
        assert!(matches!(probe, Admission::Probe { .. }));
        fleet.kill(0).await; // A dies holding the lease
        drop(a);
        let in_flight = Admission::Reject(SkipReason::ProbeInFlight);
        assert_eq!(admit(&b, "p", &c, at(10)).await, in_flight);
        eventually(
            Duration::from_secs(5),
            "B probes once A's lease expired",
            || async { matches!(admit(&b, "p", &c, at(11)).await, Admission::Probe { .. }) },
        )
        .await;
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dead_replicas_reservation_lapses() {
        let mut fleet = Fleet::start("lapse", 2).await;
        let (a, b, limit) = (fleet.store(0), fleet.store(1), usd(5));
        let short = Duration::from_millis(200);
        a.reserve("b", limit, limit, short).await.unwrap();
        fleet.kill(0).await; // A dies without settling or releasing
        drop(a);
        let long = Duration::from_secs(60);
        let refused = b.reserve("b", limit, usd(1), long).await.unwrap_err();
        assert_eq!(refused.reserved, limit);
        eventually(
            Duration::from_secs(5),
            "the lapsed reservation is purged",
            || async { b.budget("b", limit).await.reserved == Money::ZERO },
        )
        .await;
        assert!(b.reserve("b", limit, limit, long).await.is_ok());
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_replicas_under_load_never_overspend() {
        let fleet = Fleet::start("fleet_budget", 2).await;
        let (amount, limit) = (usd(1), usd(10));
        let tasks: Vec<_> = (0..100)
            .map(|i| {
                let s = fleet.store(i % 2);
                tokio::spawn(async move {
                    let id = s.reserve("b", limit, amount, Duration::from_secs(60)).await;
                    if let Ok(id) = id {
                        s.settle("b", id, amount, amount).await;
                    }
                    id.is_ok()
                })
            })
            .collect();
        let mut won = 0;
        for t in tasks {
            won += usize::from(t.await.unwrap());
        }
        assert_eq!(won, 10);
        let books = fleet.store(1).budget("b", limit).await;
        assert_eq!((books.spent, books.reserved), (limit, Money::ZERO));
        fleet.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_redis_degrades_to_local_state() {
        let url = "redis://:hunter2@127.0.0.1:1";
        let cfg_ = test_config(url, &unique_prefix("degraded"));
        assert!(!format!("{cfg_:?}").contains("hunter2"));
        let state = RedisState::connect(cfg_, Clock::system()).await;
        let stop = CancellationToken::new();
        let task = tokio::spawn(state.background(stop.clone()));
        let status = state.status();
        assert_eq!(status.backend, "redis");
        assert!(!status.connected);
        assert!(status.degraded_since_ms.is_some());
        let error = status.last_error.expect("the error is reported");
        assert!(!error.contains("hunter2"), "{error}");
        assert!(!format!("{state:?}").contains("hunter2"));
        let s: Store = Arc::new(state.clone());
        // every op answers from local state
        let c = cfg(2);
        fail_turn(&s, "p", &c, at(0), None).await;
        assert!(fail_turn(&s, "p", &c, at(1), None).await.is_some());
        assert!(matches!(
            admit(&s, "p", &c, at(20)).await,
            Admission::Probe { .. }
        ));
        let id = s.reserve("b", usd(1), usd(1), LEASE).await.unwrap();
        assert!(s.reserve("b", usd(1), usd(1), LEASE).await.is_err());
        s.settle("b", id, usd(1), usd(1)).await;
        assert_eq!(s.budget("b", usd(2)).await.spent, usd(1));
        assert_eq!(state.pending_spend().get("b"), Some(&usd(1)));
        assert_eq!(s.rate("k", 1, 1, T0).await, Ok(()));
        assert!(s.rate("k", 1, 1, T0).await.is_err());
        s.cleanup(Cleanup::ReleaseProbe {
            provider: "p".into(),
            lease: 1,
        });
        assert!(!s.status().connected);
        stop.cancel();
        task.await.unwrap(); // the background ends on the stop signal
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hung_redis_costs_one_op_timeout_then_everything_is_local() {
        let proxy = Proxy::start().await;
        let mut fleet = Fleet::start("hung", 0).await;
        let cfg_ = RedisConfig {
            op_timeout: Duration::from_millis(100),
            ..test_config(&format!("redis://{}", proxy.addr), &fleet.prefix)
        };
        let state = fleet.add(cfg_).await;
        fleet.listening().await;
        let s = fleet.store(0);
        proxy.freeze();
        // a call that meets the hang waits out the op timeout, then answers locally (one
        // sent before the proxy noticed the freeze may still get through)
        eventually(Duration::from_secs(5), "a call times out", || async {
            let reserved = s.reserve("b", usd(100), usd(1), LEASE).await;
            assert!(reserved.is_ok());
            !s.status().connected
        })
        .await;
        let error = state.status().last_error.unwrap();
        assert!(error.contains("no answer within 100 ms"), "{error}");
        // the rest never touch Redis
        let c = cfg(1);
        assert!(fail_turn(&s, "p", &c, at(0), None).await.is_some());
        assert_eq!(s.rate("k", 60, 1, T0).await, Ok(()));
        assert!(s.reserve("b", usd(100), usd(100), LEASE).await.is_err());
        drop(proxy);
        fleet.stop_after_outage().await;
    }

    /// A settle that ran in Redis but whose reply was lost (the store times out, degrades,
    /// and keeps the settle for the resync) is counted once, not again when it is sent
    /// again; so is spend settled on a local reservation whose push's reply was lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_settle_whose_reply_was_lost_is_counted_once() {
        let proxy = Proxy::start().await;
        let mut fleet = Fleet::start("lost-settle", 0).await;
        let cfg_ = RedisConfig {
            op_timeout: Duration::from_millis(200),
            ..test_config(&format!("redis://{}", proxy.addr), &fleet.prefix)
        };
        let state = fleet.add(cfg_).await;
        fleet.add(test_config(REDIS_URL, &fleet.prefix)).await;
        let (s, direct) = (fleet.store(0), fleet.store(1));
        let id = s.reserve("b", usd(100), usd(2), LEASE).await.unwrap();
        proxy.mute();
        s.settle("b", id, usd(2), usd(1)).await; // runs in Redis; its reply is lost
        assert!(!s.status().connected);
        assert_eq!(
            state.pending_spend()["b"],
            usd(1),
            "owed until Redis answers"
        );
        // a request on a local reservation, settled while degraded, then pushed
        let local = s.reserve("b", usd(100), usd(5), LEASE).await.unwrap();
        s.settle("b", local, usd(5), usd(3)).await;
        proxy.unmute();
        proxy.down(); // the muted connection goes; the store reconnects through the proxy
        proxy.up();
        eventually(Duration::from_secs(10), "resynced", || async {
            s.status().connected && state.pending_spend().is_empty()
        })
        .await;
        let books = direct.budget("b", usd(100)).await;
        assert_eq!(books.spent, usd(4), "each settle counted once: {books:?}");
        assert_eq!(books.reserved, Money::ZERO);
        drop(proxy);
        fleet.stop_after_outage().await;
    }

    /// With `store_url`, stored values go to their own Redis (never the budget one), and
    /// when that Redis is full (`noeviction`, `OOM` on every write) a value is kept on this
    /// replica instead, while budget state stays shared: nothing degrades.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stored_values_keep_to_their_own_redis_and_a_full_one_fails_only_them() {
        let store =
            PrivateRedis::start(&["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"]).await;
        let mut fleet = Fleet::start("store-url", 0).await;
        let cfg_ = RedisConfig {
            store_url: Some(store.url()),
            ..test_config(REDIS_URL, &fleet.prefix)
        };
        let state = fleet.add(cfg_).await;
        let s = fleet.store(0);
        let (ttl, now) = (Duration::from_secs(600), Clock::system().unix_ms());
        assert!(s.kv_put("first", b"kept apart".to_vec(), ttl, now).await);
        let mut own = store.conn().await;
        let key = format!("{}:kv:first", fleet.prefix);
        let there: Option<Vec<u8>> = ::redis::cmd("GET")
            .arg(&key)
            .query_async(&mut own)
            .await
            .unwrap();
        assert_eq!(
            there.as_deref(),
            Some(&b"kept apart"[..]),
            "in the store's Redis"
        );
        let mut shared = ::redis::Client::open(REDIS_URL)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let exists: i64 = ::redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut shared)
            .await
            .unwrap();
        assert_eq!(exists, 0, "not in the budget Redis");

        // 24 values of 512 KiB: the store's Redis (4 MiB, noeviction) refuses most of them
        for i in 0..24 {
            assert!(
                s.kv_put(&format!("big{i}"), vec![b'x'; 512 * 1024], ttl, now)
                    .await
            );
        }
        let refused: Option<Vec<u8>> = ::redis::cmd("GET")
            .arg(format!("{}:kv:big23", fleet.prefix))
            .query_async(&mut own)
            .await
            .unwrap();
        assert!(refused.is_none(), "a full noeviction Redis refused it");
        assert_eq!(
            s.kv_get("big23", now).await.map(|v| v.len()),
            Some(512 * 1024),
            "kept on this replica instead"
        );
        // budgets never noticed
        let id = s.reserve("b", usd(10), usd(2), LEASE).await.unwrap();
        s.settle("b", id, usd(2), usd(1)).await;
        assert!(state.status().connected, "{:?}", state.status());
        assert!(state.pending_spend().is_empty());
        assert_eq!(s.budget("b", usd(10)).await.spent, usd(1));
        fleet.stop().await;
    }

    /// The eviction policy `serve` and `check` read: `CONFIG GET`, else `INFO memory`,
    /// else it cannot be checked (and says why, never a password).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_eviction_policy_is_read_with_config_or_info() {
        use switchyard::state::{eviction_policy, Eviction};
        let wait = Duration::from_secs(5);
        let lru = PrivateRedis::start(&["--maxmemory-policy", "allkeys-lru"]).await;
        assert_eq!(
            eviction_policy(&lru.url(), wait).await,
            Eviction::AllKeys("allkeys-lru".into())
        );
        let plain = PrivateRedis::start(&[]).await;
        assert_eq!(eviction_policy(&plain.url(), wait).await, Eviction::Never);
        let no_config = PrivateRedis::start(&[
            "--maxmemory-policy",
            "volatile-lru",
            "--rename-command",
            "CONFIG",
            "",
        ])
        .await;
        assert_eq!(
            eviction_policy(&no_config.url(), wait).await,
            Eviction::Volatile("volatile-lru".into()),
            "read from INFO"
        );
        let neither = PrivateRedis::start(&[
            "--maxmemory-policy",
            "allkeys-lru",
            "--rename-command",
            "CONFIG",
            "",
            "--rename-command",
            "INFO",
            "",
        ])
        .await;
        let Eviction::Unknown(why) = eviction_policy(&neither.url(), wait).await else {
            panic!("neither CONFIG nor INFO answers")
        };
        assert!(
            why.contains("CONFIG GET refused") && why.contains("INFO refused"),
            "{why}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stored_values_are_fleet_wide_and_kept_locally_in_an_outage() {
        let proxy = Proxy::start().await;
        let mut fleet = Fleet::start("kv", 0).await;
        fleet
            .add(test_config(
                &format!("redis://{}", proxy.addr),
                &fleet.prefix,
            ))
            .await;
        fleet.add(test_config(REDIS_URL, &fleet.prefix)).await;
        let (s, o) = (fleet.store(0), fleet.store(1));
        let ttl = Duration::from_secs(60);
        let now = Clock::system().unix_ms();
        assert!(o.kv_put("shared", b"from o".to_vec(), ttl, now).await);
        assert_eq!(
            s.kv_get("shared", now).await.as_deref(),
            Some(&b"from o"[..])
        );

        proxy.down();
        eventually(Duration::from_secs(5), "S notices the outage", || async {
            s.kv_get("shared", now).await;
            !s.status().connected
        })
        .await;
        assert!(s.kv_put("local", b"from s".to_vec(), ttl, now).await);
        assert_eq!(
            s.kv_get("local", now).await.as_deref(),
            Some(&b"from s"[..])
        );
        assert_eq!(o.kv_get("local", now).await, None, "Redis never saw it");

        proxy.up();
        eventually(Duration::from_secs(10), "S reconnects", || async {
            s.status().connected
        })
        .await;
        // not pushed on resync, but still served where it was written
        assert_eq!(
            s.kv_get("local", now).await.as_deref(),
            Some(&b"from s"[..])
        );
        assert!(s.kv_delete("local", now).await);
        assert_eq!(s.kv_get("local", now).await, None);
        assert!(s.kv_delete("shared", now).await, "deleted fleet-wide");
        assert_eq!(o.kv_get("shared", now).await, None);
        fleet.stop_after_outage().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spend_and_openings_from_an_outage_are_pushed_when_redis_returns() {
        let proxy = Proxy::start().await;
        let mut fleet = Fleet::start("resync", 0).await;
        let via_proxy = test_config(&format!("redis://{}", proxy.addr), &fleet.prefix);
        let replica = fleet.add(via_proxy).await;
        fleet.add(test_config(REDIS_URL, &fleet.prefix)).await;
        fleet.listening().await;
        let (s, o, c, limit) = (fleet.store(0), fleet.store(1), cfg(2), usd(1));
        let cents = |n: i64| Money::from_picos(n * USD / 100);
        // before the outage: the other replica spends 70¢, and S reads the books
        let id = o.reserve("b", limit, cents(70), LEASE).await.unwrap();
        o.settle("b", id, cents(70), cents(70)).await;
        assert_eq!(s.budget("b", limit).await.spent, cents(70));

        proxy.down();
        eventually(Duration::from_secs(5), "S notices the outage", || async {
            !s.status().connected
        })
        .await;
        // degraded: enforced on the last known spend plus S's own
        let id = s.reserve("b", limit, cents(25), LEASE).await.unwrap();
        s.settle("b", id, cents(25), cents(20)).await;
        assert!(s.reserve("b", limit, cents(11), LEASE).await.is_err());
        assert_eq!(replica.pending_spend().get("b"), Some(&cents(20)));
        fail_turn(&s, "p", &c, at(0), None).await;
        assert!(fail_turn(&s, "p", &c, at(1), None).await.is_some());
        assert_eq!(
            o.budget("b", limit).await.spent,
            cents(70),
            "Redis missed it"
        );
        assert_eq!(state_of(&o, "p", at(2)).await, CircuitState::Closed);

        proxy.up();
        eventually(Duration::from_secs(10), "S reconnects", || async {
            s.status().connected
        })
        .await;
        assert!(s.status().degraded_since_ms.is_none());
        assert!(replica.pending_spend().is_empty());
        assert_eq!(o.budget("b", limit).await.spent, cents(90));
        eventually(
            Duration::from_secs(5),
            "the local opening reaches the fleet",
            || async {
                admit(&o, "p", &c, at(3)).await == Admission::Reject(SkipReason::CircuitOpen)
            },
        )
        .await;
        fleet.stop_after_outage().await;
    }
}

#[test]
fn memory_store_reports_itself_connected() {
    let status = MemoryState::new().status();
    assert_eq!((status.backend, status.connected), ("memory", true));
}
