//! Reservations cover a request's worst case: a request without `max_tokens` reserves the
//! model's output limit (or the adapter's default), a model of unknown limit gets the
//! route's `default_max_tokens` sent upstream, concurrent requests never spend past a
//! budget while upstreams honour `max_tokens`, and an upstream that does not is reported
//! as an overrun and still billed in full.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use switchyard::chat::FinishReason;
use switchyard::gateway::StreamEvent;
use switchyard::observe::{Observer, Overrun};
use switchyard::{
    ChatRequest, Gateway, GatewayError, Money, Price, Provider, ProviderReply, ProviderSpec, Route,
    Usage,
};

/// Input tokens the upstream reports for every call.
const INPUT: u64 = 10;

/// An upstream that writes as much as it is allowed: `max_tokens` when the request sets
/// it, else `unbounded` tokens (the model's own limit). With `ignore` set it writes
/// `unbounded` tokens whatever it was told.
struct Greedy {
    model: &'static str,
    unbounded: u64,
    ignore: bool,
    default_max_tokens: Option<u32>,
    seen: Mutex<Vec<Option<u32>>>,
}

impl Greedy {
    fn new(model: &'static str, unbounded: u64) -> Self {
        Self {
            model,
            unbounded,
            ignore: false,
            default_max_tokens: None,
            seen: Mutex::new(Vec::new()),
        }
    }

    /// The `max_tokens` of every request received, in order.
    fn seen(&self) -> Vec<Option<u32>> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl Provider for Greedy {
    fn kind(&self) -> &'static str {
        "greedy"
    }

    fn model(&self) -> &str {
        self.model
    }

    fn default_max_tokens(&self) -> Option<u32> {
        self.default_max_tokens
    }

    async fn send(&self, req: &ChatRequest) -> Result<ProviderReply, switchyard::ProviderError> {
        self.seen.lock().unwrap().push(req.max_tokens);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let allowed = req.max_tokens.or(self.default_max_tokens).map(u64::from);
        let output = match allowed {
            Some(n) if !self.ignore => n,
            _ => self.unbounded,
        };
        Ok(ProviderReply {
            text: "…".into(),
            finish_reason: Some(FinishReason::Length),
            usage: Some(Usage {
                input_tokens: INPUT,
                output_tokens: output,
                ..Usage::default()
            }),
            ..ProviderReply::default()
        })
    }
}

/// $1,000 per million tokens, in and out: one token costs a tenth of a cent.
fn dear() -> Price {
    Price::from_usd_per_mtok(1000.0, 1000.0, None, None).unwrap()
}

fn gateway(p: &Arc<Greedy>, route: Route) -> (Gateway, Arc<Overruns>) {
    let overruns = Arc::new(Overruns::default());
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("p", p.clone()).price(dear()))
        .route(route)
        .observer(overruns.clone())
        .build()
        .unwrap();
    (gw, overruns)
}

/// Records every overrun reported.
#[derive(Default)]
struct Overruns(Mutex<Vec<Overrun>>);

impl Observer for Overruns {
    fn on_overrun(&self, _route: &str, overrun: &Overrun) {
        self.0.lock().unwrap().push(overrun.clone());
    }
}

impl Overruns {
    fn all(&self) -> Vec<Overrun> {
        self.0.lock().unwrap().clone()
    }
}

/// `n` requests at once; (answered, refused by the budget).
async fn concurrently(gw: &Gateway, req: &ChatRequest, n: usize) -> (usize, usize) {
    let tasks: Vec<_> = (0..n)
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
    (ok, refused)
}

/// The reported bug: 12 requests without `max_tokens` to a model that writes 16,384
/// tokens (gpt-4o's published output limit) spent $196.73 of a $50 budget, because each
/// reserved 4,096 output tokens. Reserving the model's limit keeps spend within it.
#[tokio::test(start_paused = true)]
async fn requests_without_max_tokens_reserve_the_models_output_limit() {
    let p = Arc::new(Greedy::new("gpt-4o", 16_384));
    let (gw, overruns) = gateway(&p, Route::new("main", &["p"]).budget(Money::from_usd(50.0)));
    let req = ChatRequest::from_prompt("hi");
    let (ok, refused) = concurrently(&gw, &req, 12).await;
    let books = gw.budget("main").await.unwrap();
    assert!(
        books.spent <= books.limit,
        "spent {} of {} ({ok} answered)",
        books.spent,
        books.limit
    );
    // each reserves (2 + 8) input + 16,384 output tokens at $0.001: three fit in $50
    assert_eq!((ok, refused), (3, 9));
    assert_eq!(books.spent, Money::from_usd(3.0 * 16.394));
    assert_eq!(books.reserved, Money::ZERO);
    assert_eq!(p.seen(), [None, None, None], "sent as the client asked");
    assert!(overruns.all().is_empty());
}

/// A model whose output limit is unknown gets the route's `default_max_tokens`, sent
/// upstream and shown to the client; concurrent requests then stay within the budget.
#[tokio::test(start_paused = true)]
async fn an_unknown_limit_gets_the_routes_default_sent_upstream() {
    let p = Arc::new(Greedy::new("local-model", 1_000_000));
    let route = Route::new("main", &["p"])
        .budget(Money::from_usd(10.0))
        .default_max_tokens(1_000);
    let (gw, overruns) = gateway(&p, route);
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    assert_eq!(resp.max_tokens_applied, Some(1_000));
    assert_eq!(resp.usage.unwrap().output_tokens, 1_000);
    assert_eq!(p.seen(), [Some(1_000)]);

    // reservation: (10 + 1,000) tokens at $0.001 = $1.01; $1.01 spent, $8.99 left: 8 fit
    let (ok, refused) = concurrently(&gw, &ChatRequest::from_prompt("hi"), 20).await;
    assert_eq!((ok, refused), (8, 12));
    let books = gw.budget("main").await.unwrap();
    assert!(books.spent <= books.limit, "{books:?}");
    assert!(overruns.all().is_empty());

    // a client's own max_tokens is sent as is, and nothing is applied
    let capped = ChatRequest::from_prompt("hi").with_max_tokens(10);
    let resp = gw.chat("main", &capped).await.unwrap();
    assert_eq!(resp.max_tokens_applied, None);
    assert_eq!(p.seen().last(), Some(&Some(10)));
}

/// A request asking for more output than the model can write (Claude Code's 64,000 failing
/// over to gpt-4o's 16,384) is sent with the model's limit, which the vendor accepts, budget
/// or not; one within the limit is sent as it came.
#[tokio::test(start_paused = true)]
async fn a_max_tokens_above_the_models_limit_is_sent_as_the_limit() {
    let p = Arc::new(Greedy::new("gpt-4o", 16_384));
    let (gw, _) = gateway(&p, Route::new("main", &["p"]));
    let big = ChatRequest::from_prompt("hi").with_max_tokens(64_000);
    let resp = gw.chat("main", &big).await.unwrap();
    assert_eq!(resp.usage.unwrap().output_tokens, 16_384);
    let within = ChatRequest::from_prompt("hi").with_max_tokens(16_000);
    gw.chat("main", &within).await.unwrap();
    assert_eq!(p.seen(), [Some(16_384), Some(16_000)]);
}

/// Without a budget nothing needs the worst case: the request goes upstream untouched.
#[tokio::test(start_paused = true)]
async fn without_a_budget_the_request_is_sent_as_it_came() {
    let p = Arc::new(Greedy::new("local-model", 2_000));
    let (gw, _) = gateway(&p, Route::new("main", &["p"]));
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    assert_eq!((resp.max_tokens_applied, p.seen()), (None, vec![None]));
}

/// An adapter that always sends a default `max_tokens` (Anthropic) is sized by it, not by
/// the model's much larger limit.
#[tokio::test(start_paused = true)]
async fn an_adapters_default_max_tokens_sizes_the_reservation() {
    let p = Arc::new(Greedy {
        default_max_tokens: Some(4_096),
        ..Greedy::new("claude-opus-4-6", 128_000)
    });
    // one call reserves (10 + 4,096) × $0.001 = $4.106: fits in $5, 128,000 would not
    let (gw, _) = gateway(&p, Route::new("main", &["p"]).budget(Money::from_usd(5.0)));
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    assert_eq!(resp.usage.unwrap().output_tokens, 4_096);
    assert_eq!(resp.max_tokens_applied, None);
}

/// An upstream that writes past `max_tokens` is an overrun: observers hear of it (the
/// server alerts and counts), and the call is settled at its real cost, never the
/// reservation.
#[tokio::test(start_paused = true)]
async fn an_upstream_that_ignores_max_tokens_is_reported_and_billed_in_full() {
    let p = Arc::new(Greedy {
        ignore: true,
        ..Greedy::new("local-model", 16_384)
    });
    let route = Route::new("main", &["p"])
        .budget(Money::from_usd(50.0))
        .default_max_tokens(1_000);
    let (gw, overruns) = gateway(&p, route);
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let cost = Money::from_usd((10.0 + 16_384.0) / 1000.0);
    assert_eq!(resp.cost, Some(cost));
    let books = gw.budget("main").await.unwrap();
    assert_eq!((books.spent, books.reserved), (cost, Money::ZERO));
    let [overrun] = overruns.all().try_into().unwrap();
    assert_eq!(
        (overrun.output_allowed, overrun.output_reported),
        (Some(1_000), 16_384)
    );
    assert_eq!(
        (overrun.input_bound, overrun.input_reported),
        (Some(10), 10)
    );
    assert!(overrun.output_over() && !overrun.input_over());
    assert_eq!(gw.ledger().summary()["p"].overruns, 1);
}

/// Streams: the applied `max_tokens` is in the completion, and an overrun is reported
/// when the segment closes.
#[tokio::test(start_paused = true)]
async fn streams_apply_the_default_and_report_overruns() {
    let p = Arc::new(Greedy {
        ignore: true,
        ..Greedy::new("local-model", 5_000)
    });
    let route = Route::new("main", &["p"])
        .budget(Money::from_usd(50.0))
        .default_max_tokens(1_000);
    let (gw, overruns) = gateway(&p, route);
    let mut s = gw
        .stream("main", ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    let mut done = None;
    while let Some(e) = s.next().await {
        if let StreamEvent::Done(resp) = e {
            done = Some(resp);
        }
    }
    let resp = done.expect("the stream completes");
    assert_eq!(resp.max_tokens_applied, Some(1_000));
    assert_eq!(p.seen(), [Some(1_000)]);
    let [overrun] = overruns.all().try_into().unwrap();
    assert_eq!(overrun.output_reported, 5_000);
}
