//! Embeddings run the chat attempt loop: failover, retries honouring Retry-After, breakers,
//! the deadline, budgets reserved at the input bound and settled at the exact cost, and a
//! route serving one API.

use std::sync::Arc;
use std::time::Duration;

use switchyard::embedding::{EmbeddingRequest, MAX_INPUTS};
use switchyard::provider::scripted::{scripted_vector, ScriptedProvider, Step};
use switchyard::{Api, ChatRequest, ErrorKind, Gateway, GatewayError, Money, Price};

use super::{priced, route, two};

fn embeddings(gw_primary: &Arc<ScriptedProvider>, backup: &Arc<ScriptedProvider>) -> Gateway {
    two(
        gw_primary,
        backup,
        route(&["primary", "backup"]).api(Api::Embeddings),
    )
}

fn two_texts() -> EmbeddingRequest {
    EmbeddingRequest::texts(&["hello", "embeddings!"])
}

#[tokio::test(start_paused = true)]
async fn a_failing_provider_fails_over_and_the_vectors_keep_input_order() {
    let primary = Arc::new(ScriptedProvider::new("a").otherwise(Step::fail(ErrorKind::Server)));
    let backup = Arc::new(ScriptedProvider::new("backup-model"));
    let gw = embeddings(&primary, &backup);
    let resp = gw.embed("main", &two_texts()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert!(resp.failed_over);
    assert_eq!(
        primary.calls(),
        2,
        "server errors are retried once on the same provider"
    );
    let want: Vec<Vec<f32>> = two_texts()
        .inputs
        .iter()
        .map(|i| scripted_vector("backup-model", i, 3))
        .collect();
    assert_eq!(resp.vectors, want);
    let labels: Vec<String> = resp.attempts.iter().map(|a| a.outcome.label()).collect();
    assert_eq!(labels, ["failed:server", "failed:server", "success"]);
    // 5 + 11 input bytes at $1 per MTok, nothing for output
    assert_eq!(resp.usage.unwrap().input_tokens, 16);
    assert_eq!(resp.cost, Some(Money::from_picos(16 * 1_000_000)));
    let ledger = gw.ledger().summary();
    assert_eq!(ledger["backup"].calls, 1);
    assert_eq!(ledger["backup"].input_tokens, 16);
    assert_eq!(ledger["primary"].failures[&ErrorKind::Server], 2);
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_is_waited_for_on_the_same_provider() {
    let primary =
        Arc::new(ScriptedProvider::new("a").then(Step::rate_limited(Duration::from_secs(2))));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = embeddings(&primary, &backup);
    let resp = gw.embed("main", &two_texts()).await.unwrap();
    assert_eq!(resp.provider, "primary");
    let times = primary.call_times();
    assert_eq!(times.len(), 2);
    assert!(
        times[1] - times[0] >= Duration::from_secs(2),
        "Retry-After honoured"
    );
    assert_eq!(backup.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_skips_the_provider() {
    let primary = Arc::new(ScriptedProvider::new("a").otherwise(Step::fail(ErrorKind::Auth)));
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = embeddings(&primary, &backup);
    gw.embed("main", &two_texts()).await.unwrap();
    let resp = gw.embed("main", &two_texts()).await.unwrap();
    assert_eq!(primary.calls(), 1, "auth opens the circuit at once");
    assert_eq!(resp.attempts[0].outcome.label(), "skipped:circuit_open");
    assert!(resp.failed_over);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_a_hanging_provider() {
    let primary = Arc::new(ScriptedProvider::new("a").otherwise(Step::Hang));
    let backup = Arc::new(ScriptedProvider::new("b").otherwise(Step::Hang));
    let gw = two(
        &primary,
        &backup,
        route(&["primary", "backup"])
            .api(Api::Embeddings)
            .deadline(Duration::from_secs(5)),
    );
    let started = tokio::time::Instant::now();
    let err = gw.embed("main", &two_texts()).await.unwrap_err();
    assert!(
        matches!(err, GatewayError::DeadlineExceeded { .. }),
        "{err}"
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_budget_reserves_the_input_bound_and_settles_the_exact_cost() {
    // $1 per MTok input: 16 input bytes bound 16 tokens = 16 micro-dollars reserved
    let p = Arc::new(ScriptedProvider::new("p"));
    let gw = Gateway::builder()
        .provider(priced("p", &p).price(Price::from_usd_per_mtok(1.0, 0.0, None, None).unwrap()))
        .route(
            route(&["p"])
                .api(Api::Embeddings)
                .budget(Money::from_picos(40 * 1_000_000)),
        )
        .build()
        .unwrap();
    for _ in 0..2 {
        gw.embed("main", &two_texts()).await.unwrap();
    }
    let books = gw.budget("main").await.unwrap();
    assert_eq!(books.spent, Money::from_picos(32 * 1_000_000));
    assert_eq!(books.reserved, Money::ZERO);
    let err = gw.embed("main", &two_texts()).await.unwrap_err();
    assert!(matches!(err, GatewayError::BudgetExceeded { .. }), "{err}");
    assert_eq!(p.calls(), 2, "the third is refused before dispatch");
}

#[tokio::test(start_paused = true)]
async fn a_short_answer_is_malformed_and_fails_over() {
    struct Short;
    #[async_trait::async_trait]
    impl switchyard::Provider for Short {
        fn kind(&self) -> &'static str {
            "short"
        }
        fn model(&self) -> &str {
            "short"
        }
        async fn send(
            &self,
            _: &ChatRequest,
        ) -> Result<switchyard::ProviderReply, switchyard::ProviderError> {
            unreachable!()
        }
        async fn embed(
            &self,
            _: &EmbeddingRequest,
        ) -> Result<switchyard::embedding::EmbeddingReply, switchyard::ProviderError> {
            Ok(switchyard::embedding::EmbeddingReply {
                vectors: vec![vec![1.0]],
                ..Default::default()
            })
        }
    }
    let backup = Arc::new(ScriptedProvider::new("b"));
    let gw = Gateway::builder()
        .provider(switchyard::ProviderSpec::new("short", Arc::new(Short)).max_attempts(1))
        .provider(priced("backup", &backup))
        .route(route(&["short", "backup"]).api(Api::Embeddings))
        .build()
        .unwrap();
    let resp = gw.embed("main", &two_texts()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert_eq!(resp.attempts[0].outcome.label(), "failed:malformed");
}

#[tokio::test(start_paused = true)]
async fn a_provider_without_embeddings_is_a_classified_failure() {
    struct ChatOnly;
    #[async_trait::async_trait]
    impl switchyard::Provider for ChatOnly {
        fn kind(&self) -> &'static str {
            "chatonly"
        }
        fn model(&self) -> &str {
            "c"
        }
        async fn send(
            &self,
            _: &ChatRequest,
        ) -> Result<switchyard::ProviderReply, switchyard::ProviderError> {
            unreachable!()
        }
    }
    let gw = Gateway::builder()
        .provider(switchyard::ProviderSpec::new("c", Arc::new(ChatOnly)))
        .route(route(&["c"]).api(Api::Embeddings))
        .build()
        .unwrap();
    let err = gw.embed("main", &two_texts()).await.unwrap_err();
    let GatewayError::AllFailed { errors, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(errors[0].error.kind, ErrorKind::ModelNotFound);
    assert!(errors[0].error.message.contains("do not serve embeddings"));
}

#[tokio::test(start_paused = true)]
async fn a_route_serves_one_api() {
    let a = Arc::new(ScriptedProvider::new("a"));
    let gw = Gateway::builder()
        .provider(priced("a", &a))
        .route(route(&["a"]))
        .route(switchyard::Route::new("vectors", &["a"]).api(Api::Embeddings))
        .build()
        .unwrap();
    let err = gw.embed("main", &two_texts()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: route \"main\" serves chat, not embeddings"
    );
    let err = gw
        .chat("vectors", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid request: route \"vectors\" serves embeddings, not chat"
    );
    let err = gw
        .stream("vectors", ChatRequest::from_prompt("hi"))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, GatewayError::InvalidRequest(_)));
    assert_eq!(a.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn inputs_are_bounded() {
    let a = Arc::new(ScriptedProvider::new("a"));
    let gw = Gateway::builder()
        .provider(priced("a", &a))
        .route(route(&["a"]).api(Api::Embeddings))
        .build()
        .unwrap();
    let many = vec!["x"; MAX_INPUTS + 1];
    for (req, want) in [
        (EmbeddingRequest::default(), "input must not be empty"),
        (EmbeddingRequest::texts(&many), "at most 2048"),
        (EmbeddingRequest::texts(&["x"]).dimensions(0), "dimensions"),
        (
            EmbeddingRequest::texts(&["x"]).dimensions(8193),
            "dimensions",
        ),
    ] {
        let err = gw.embed("main", &req).await.unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }
    assert!(gw
        .embed("main", &EmbeddingRequest::texts(&vec!["x"; MAX_INPUTS]))
        .await
        .is_ok());
    assert_eq!(a.calls(), 1);
}
