//! Budgets reserve before they spend; unpriced providers under a budget are skipped.

use std::sync::Arc;

use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::route::Order;
use switchyard::{ChatRequest, Gateway, GatewayError, Money, Price, ProviderSpec, Route};

use super::priced;

fn one_dollar_per_mtok() -> Price {
    Price::from_usd_per_mtok(1.0, 1.0, None, None).unwrap()
}

/// 100 concurrent requests against a budget that fits 10 estimates: at most 10 are
/// dispatched, the rest refused before any call, and spend never passes the limit.
#[tokio::test(start_paused = true)]
async fn concurrent_requests_never_overspend() {
    let p = Arc::new(
        ScriptedProvider::new("p")
            .otherwise(Step::text("ok").after(std::time::Duration::from_millis(50))),
    );
    // estimate per request: (len("hi") + 8) input + 990 output = 1000 tokens = $0.001
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p.clone()).price(one_dollar_per_mtok()))
        .route(Route::new("main", &["p"]).budget(Money::from_usd(0.01)))
        .build()
        .unwrap();
    let req = ChatRequest::from_prompt("hi").with_max_tokens(990);
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let (gw, req) = (gw.clone(), req.clone());
            tokio::task::spawn(async move { gw.chat("main", &req).await })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(GatewayError::BudgetExceeded { .. }) => refused += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(ok, 10);
    assert_eq!(refused, 90);
    assert_eq!(p.calls(), 10, "refusals happen before dispatch");
    let books = gw.budget("main").await.unwrap();
    assert!(books.spent <= books.limit);
    assert_eq!(books.reserved, Money::ZERO);
    // settled to the real cost (10 in + 2 out tokens each), not the estimate
    assert_eq!(books.spent, Money::from_picos(10 * 12 * 1_000_000));
}

/// Once spend plus reservations would pass the limit, the request is refused before
/// dispatch; a failed call's reservation is released (failures are not billed).
#[tokio::test(start_paused = true)]
async fn refused_before_dispatch_and_failures_released() {
    let big = switchyard::ProviderReply {
        text: "long answer".into(),
        usage: Some(switchyard::Usage {
            input_tokens: 10,
            output_tokens: 600,
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = Arc::new(
        ScriptedProvider::new("p")
            .then(Step::fail(switchyard::ErrorKind::Timeout))
            .then(Step::Reply(big)),
    );
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p.clone()).price(one_dollar_per_mtok()))
        .route(Route::new("main", &["p"]).budget(Money::from_usd(0.0015)))
        .build()
        .unwrap();
    let req = ChatRequest::from_prompt("hi").with_max_tokens(990);
    assert!(gw.chat("main", &req).await.is_err());
    let books = gw.budget("main").await.unwrap();
    assert_eq!((books.spent, books.reserved), (Money::ZERO, Money::ZERO));
    gw.chat("main", &req).await.unwrap();
    // spent $0.00061; another $0.001 estimate would pass the $0.0015 limit
    assert_eq!(
        gw.budget("main").await.unwrap().spent,
        Money::from_picos(610 * 1_000_000)
    );
    let e = gw.chat("main", &req).await.unwrap_err();
    assert!(matches!(e, GatewayError::BudgetExceeded { .. }), "{e}");
    assert_eq!(p.calls(), 2);
}

/// An unpriced provider under a budget is skipped and recorded as such.
#[tokio::test(start_paused = true)]
async fn unpriced_provider_under_a_budget_is_skipped() {
    let unknown = Arc::new(ScriptedProvider::new("my-private-finetune"));
    let known = Arc::new(ScriptedProvider::new("k"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("unknown", unknown.clone()))
        .provider(priced("known", &known))
        .route(Route::new("main", &["unknown", "known"]).budget(Money::from_usd(1.0)))
        .build()
        .unwrap();
    let reply = gw.complete("x").await.unwrap();
    assert_eq!(reply.provider, "known");
    assert_eq!(reply.attempts[0].outcome.label(), "skipped:unpriced");
    assert_eq!(unknown.calls(), 0);
    assert!(reply.failed_over);
}

/// Unknown prices are `None`, never $0, and counted as unpriced calls.
#[tokio::test(start_paused = true)]
async fn unknown_price_is_none_and_counted() {
    let unknown = Arc::new(ScriptedProvider::new("my-private-finetune"));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("unknown", unknown))
        .route(Route::new("main", &["unknown"]))
        .build()
        .unwrap();
    let reply = gw.complete("x").await.unwrap();
    assert_eq!(reply.cost, None);
    let row = gw.ledger().summary().remove("unknown").unwrap();
    assert_eq!(
        (row.calls, row.unpriced_calls, row.cost),
        (1, 1, Money::ZERO)
    );
}

/// `cheapest` ranks by a nominal 1k/1k call and puts unpriced providers last.
#[tokio::test(start_paused = true)]
async fn cheapest_puts_unpriced_last() {
    let unknown = Arc::new(
        ScriptedProvider::new("my-private-finetune")
            .otherwise(Step::fail(switchyard::ErrorKind::Server)),
    );
    let dear = Arc::new(
        ScriptedProvider::new("dear").otherwise(Step::fail(switchyard::ErrorKind::Server)),
    );
    let cheap = Arc::new(
        ScriptedProvider::new("cheap").otherwise(Step::fail(switchyard::ErrorKind::Server)),
    );
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("unknown", unknown).max_attempts(1))
        .provider(
            ProviderSpec::new("dear", dear)
                .max_attempts(1)
                .price(Price::from_usd_per_mtok(10.0, 30.0, None, None).unwrap()),
        )
        .provider(
            ProviderSpec::new("cheap", cheap)
                .max_attempts(1)
                .price(Price::from_usd_per_mtok(0.1, 0.4, None, None).unwrap()),
        )
        .route(Route::new("main", &["unknown", "dear", "cheap"]).order(Order::Cheapest))
        .build()
        .unwrap();
    let Err(GatewayError::AllFailed { errors, .. }) = gw.complete("x").await else {
        panic!("all fail");
    };
    let order: Vec<_> = errors.iter().map(|e| e.provider.as_str()).collect();
    assert_eq!(order, ["cheap", "dear", "unknown"]);
}

/// Failed attempts are not billed; the ledger counts calls, tokens, cost and failures.
#[tokio::test(start_paused = true)]
async fn ledger_counts_successes_and_failures() {
    let p = Arc::new(ScriptedProvider::new("p").then(Step::fail(switchyard::ErrorKind::Server)));
    let gw = Gateway::builder()
        .provider(priced("p", &p))
        .route(Route::new("main", &["p"]))
        .build()
        .unwrap();
    let reply = gw.complete("x").await.unwrap();
    let row = gw.ledger().summary().remove("p").unwrap();
    assert_eq!(row.calls, 1);
    assert_eq!(row.failures.get(&switchyard::ErrorKind::Server), Some(&1));
    assert_eq!(row.input_tokens, 10);
    assert_eq!(Some(row.cost), reply.cost);
    // 10 in at $1 + len("ok from p") out at $2 per MTok
    assert_eq!(row.cost, Money::from_picos(10 * 1_000_000 + 9 * 2_000_000));
}

fn haiku_5_5() -> Price {
    switchyard::PriceTable::builtin()
        .lookup("claude-haiku-5-5")
        .unwrap()
        .price
}

/// The ledger bills a long prompt at the long-context tier, cache reads and both cache
/// writes at their rates, reasoning as output, and the budget is settled to that sum.
#[tokio::test(start_paused = true)]
async fn the_ledger_settles_tiers_and_cache_writes_exactly() {
    let reply = switchyard::ProviderReply {
        text: "ok".into(),
        usage: Some(switchyard::Usage {
            input_tokens: 150_000,
            output_tokens: 10_000,
            cached_input_tokens: 100_000,
            cache_write_tokens: 20_000,
            cache_write_1h_tokens: 5_000,
            reasoning_tokens: 8_000,
        }),
        ..Default::default()
    };
    let p = Arc::new(ScriptedProvider::new("p").otherwise(Step::Reply(reply)));
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p.clone()).price(haiku_5_5()))
        .route(Route::new("main", &["p"]).budget(Money::from_usd(1.0)))
        .build()
        .unwrap();
    let resp = gw
        .chat(
            "main",
            &ChatRequest::from_prompt("hi").with_max_tokens(10_000),
        )
        .await
        .unwrap();
    // above 100K: 30k × $0.50 + 100k × $0.05 + 15k × $0.625 + 5k × $1 + 10k × $2.50 per MTok
    // = 0.015 + 0.005 + 0.009375 + 0.005 + 0.025
    assert_eq!(resp.cost.unwrap().to_string(), "$0.059375");
    let books = gw.budget("main").await.unwrap();
    assert_eq!(
        (books.spent, books.reserved),
        (resp.cost.unwrap(), Money::ZERO)
    );
}

/// A request whose input bound is above the threshold reserves at the long-context
/// tier's dearest rates: a budget that fits the base tier's worst case refuses it.
#[tokio::test(start_paused = true)]
async fn reservations_above_the_threshold_use_the_long_context_rates() {
    let p = Arc::new(ScriptedProvider::new("p").otherwise(Step::text("ok")));
    // bound: 100,000 bytes + 8 framing = 100,008 tokens, above Haiku 5.5's 100K threshold;
    // worst case 100,008 × $1 (long 1-hour write) + 1,000 × $2.50 = $0.102508, where the
    // base tier's would be 100,008 × $0.20 + 1,000 × $0.50 = $0.0205016
    let req = ChatRequest::from_prompt("a".repeat(100_000)).with_max_tokens(1_000);
    let gw = |limit: f64| {
        Gateway::builder()
            .provider(ProviderSpec::new("p", p.clone()).price(haiku_5_5()))
            .route(Route::new("main", &["p"]).budget(Money::from_usd(limit)))
            .build()
            .unwrap()
    };
    let tight = gw(0.1025);
    assert!(matches!(
        tight.chat("main", &req).await,
        Err(GatewayError::BudgetExceeded { .. })
    ));
    assert_eq!(p.calls(), 0, "refused before dispatch");
    let enough = gw(0.102508);
    assert!(enough.chat("main", &req).await.is_ok());
    assert_eq!(p.calls(), 1);
}

/// Collects the budgets reported exhausted.
#[derive(Default)]
struct Exhausted(std::sync::Mutex<Vec<switchyard::observe::BudgetExhausted>>);

impl switchyard::observe::Observer for Exhausted {
    fn on_budget_exhausted(&self, route: &str, e: &switchyard::observe::BudgetExhausted) {
        assert_eq!(route, "main");
        self.0.lock().unwrap().push(e.clone());
    }
}

/// A budget that refuses is reported once however many requests it refuses, and again
/// only after it has admitted a request in between (room came back, then ran out).
#[tokio::test(start_paused = true)]
async fn an_exhausted_budget_is_reported_once_per_exhaustion() {
    let p = Arc::new(ScriptedProvider::new("p"));
    let seen = Arc::new(Exhausted::default());
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p.clone()).price(one_dollar_per_mtok()))
        .route(Route::new("main", &["p"]).budget(Money::from_usd(0.0015)))
        .observer(seen.clone())
        .build()
        .unwrap();
    // worst cases: $0.00201 (more than the whole budget), $0.001 (fits)
    let (big, small) = (
        ChatRequest::from_prompt("hi").with_max_tokens(2000),
        ChatRequest::from_prompt("hi").with_max_tokens(990),
    );
    let count = || seen.0.lock().unwrap().len();
    for _ in 0..3 {
        let refused = gw.chat("main", &big).await.unwrap_err();
        assert!(matches!(refused, GatewayError::BudgetExceeded { .. }));
    }
    assert_eq!(count(), 1, "three refusals, one report");
    let first = seen.0.lock().unwrap()[0].clone();
    assert_eq!(first.scope, "route:main");
    assert_eq!(first.limit, Money::from_usd(0.0015));
    assert_eq!((first.spent, first.reserved), (Money::ZERO, Money::ZERO));
    gw.chat("main", &small).await.unwrap();
    assert_eq!(count(), 1, "an admitted request is not news");
    assert!(gw.chat("main", &big).await.is_err());
    assert_eq!(count(), 2, "exhausted again after it had room");
    assert_eq!(p.calls(), 1, "refusals happen before dispatch");
}
