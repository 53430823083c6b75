//! The response cache through the router (`crate::cache`, docs/cache.md): hits and misses,
//! each `cache-control` form, key scope, stream replay in each dialect, stale answers
//! through a full outage, nothing stored from a failed or rescued answer, and money (a hit
//! spends nothing and charges no budget).

use std::collections::HashMap;

use switchyard::chat::{ChatChunk, FinishReason, ToolCall};
use switchyard::provider::scripted::StreamStep;
use switchyard::ProviderReply;

use super::*;
use crate::cache::{Backend, Cache, Policy, Scope, DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRY_BYTES};

fn policy() -> Policy {
    Policy {
        ttl: Duration::from_secs(600),
        stale_if_error: Duration::ZERO,
        scope: Scope::Key,
        any_temperature: false,
        tool_calls: false,
    }
}

/// `primary` then `backup` on route `smart`, which caches with `policy`.
fn cached(
    primary: ScriptedProvider,
    backup: ScriptedProvider,
    keys: &[KeyToml],
    policy: Policy,
) -> Fixture {
    let (primary, backup) = (Arc::new(primary), Arc::new(backup));
    let metrics = Arc::new(Metrics::new());
    let gateway = Gateway::builder()
        .provider(
            ProviderSpec::new("primary", primary.clone())
                .price(price())
                .max_attempts(1),
        )
        .provider(
            ProviderSpec::new("backup", backup.clone())
                .price(price())
                .max_attempts(1),
        )
        .route(Route {
            budget: Some(Money::from_usd(1.0)),
            ..Route::new("smart", &["primary", "backup"])
        })
        .observer(metrics.clone())
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(keys), metrics);
    let insight = Arc::new(crate::telemetry::insight::Insight::new(
        switchyard::clock::Clock::system(),
    ));
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    shared.cache = Cache::new(
        HashMap::from([("smart".to_owned(), policy)]),
        Backend::Memory,
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_ENTRY_BYTES,
    );
    Fixture {
        state: AppState(Arc::new(shared)),
        primary,
        backup,
    }
}

fn simple() -> Fixture {
    cached(
        ScriptedProvider::new("p").otherwise(Step::text("the answer")),
        ScriptedProvider::new("b").otherwise(Step::text("backup answer")),
        &[],
        policy(),
    )
}

fn greedy(text: &str) -> Value {
    json!({"model": "smart", "temperature": 0, "messages": [{"role": "user", "content": text}]})
}

fn with_header(mut req: Request<Body>, name: &'static str, value: &'static str) -> Request<Body> {
    req.headers_mut()
        .insert(name, axum::http::HeaderValue::from_static(value));
    req
}

#[tokio::test(start_paused = true)]
async fn a_repeated_request_is_a_hit_that_calls_nobody_and_spends_nothing() {
    let f = simple();
    let first = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(header(&first, "x-switchyard-cache"), "miss");
    let first = json_body(first).await;
    assert_eq!(first["switchyard"]["cache"]["status"], "miss");
    let spent = f.state.gateway.budget("smart").await.unwrap();
    let paid = first["switchyard"]["cost_usd"].as_f64().unwrap();
    assert!(paid > 0.0);

    tokio::time::advance(Duration::from_secs(3)).await;
    let hit = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(hit.status(), StatusCode::OK);
    assert_eq!(header(&hit, "x-switchyard-cache"), "hit");
    assert_eq!(header(&hit, "age"), "3");
    assert_eq!(header(&hit, "x-switchyard-attempts"), "0");
    assert_eq!(header(&hit, "x-switchyard-cost-usd"), "0");
    let hit = json_body(hit).await;
    assert_eq!(f.primary.calls(), 1, "the hit called no provider");
    assert_eq!(hit["choices"][0]["message"]["content"], "the answer");
    assert_eq!(hit["usage"], first["usage"], "the stored answer's usage");
    let trail = &hit["switchyard"];
    assert_eq!(trail["cost_usd"], 0.0);
    assert_eq!(trail["attempts"], json!([]));
    assert_eq!(trail["cache"]["status"], "hit");
    assert_eq!(trail["cache"]["age_s"], 3);
    assert_eq!(trail["cache"]["saved_usd"].as_f64().unwrap(), paid);
    // budgets are not charged for hits; the ledger counts it apart from calls
    assert_eq!(f.state.gateway.budget("smart").await.unwrap(), spent);
    let books = &f.state.gateway.ledger().summary()["primary"];
    assert_eq!((books.calls, books.cache_hits), (1, 1));
    assert_eq!(books.cache_saved.to_usd(), paid);
    let line = last_logged(&f.state);
    let cache = line
        .cache
        .expect("a cached route's line says what the cache did");
    assert_eq!(cache.status, "hit");
    assert_eq!(cache.saved_usd, Some(paid));
    assert_eq!(line.cost_usd, Some(0.0));
    let status = switchyard::state::SharedState::status(f.state.gateway.state().as_ref());
    let metrics = f.state.metrics.render(&[], 0, &status);
    assert!(
        metrics.contains("switchyard_cache_total{route=\"smart\",status=\"hit\"} 1"),
        "{metrics}"
    );
    // another question is a miss
    let other = call(&f.state, post(&greedy("something else"))).await;
    assert_eq!(header(&other, "x-switchyard-cache"), "miss");
    assert_eq!(f.primary.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn each_cache_control_form_is_honoured() {
    let f = simple();
    // no-store: neither read nor written
    let resp = call(
        &f.state,
        with_header(post(&greedy("hi")), "cache-control", "no-store"),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "bypass");
    assert_eq!(
        json_body(resp).await["switchyard"]["cache"]["reason"],
        "no-store"
    );
    let resp = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(
        header(&resp, "x-switchyard-cache"),
        "miss",
        "no-store wrote nothing"
    );
    assert_eq!(f.primary.calls(), 2);
    // no-cache: fetched fresh, and stored
    f.primary.push(Step::text("a newer answer"));
    let resp = call(
        &f.state,
        with_header(post(&greedy("hi")), "cache-control", "no-cache"),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "miss");
    assert_eq!(f.primary.calls(), 3);
    let resp = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "hit");
    assert_eq!(
        json_body(resp).await["choices"][0]["message"]["content"],
        "a newer answer",
        "no-cache stored what it fetched"
    );
    // max-age: an entry older than N seconds is not taken
    tokio::time::advance(Duration::from_secs(30)).await;
    let resp = call(
        &f.state,
        with_header(post(&greedy("hi")), "cache-control", "max-age=60"),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "hit");
    let resp = call(
        &f.state,
        with_header(post(&greedy("hi")), "cache-control", "max-age=10"),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "miss");
    assert_eq!(f.primary.calls(), 4);
    // past the route's ttl: a miss whatever the client accepts
    tokio::time::advance(Duration::from_secs(601)).await;
    let resp = call(
        &f.state,
        with_header(post(&greedy("hi")), "cache-control", "max-age=100000"),
    )
    .await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "miss");
}

#[tokio::test]
async fn sampled_requests_bypass_and_say_why() {
    let f = simple();
    for _ in 0..2 {
        let resp = call(&f.state, post(&chat("smart"))).await;
        assert_eq!(header(&resp, "x-switchyard-cache"), "bypass");
        assert_eq!(
            json_body(resp).await["switchyard"]["cache"]["reason"],
            "temperature"
        );
    }
    assert_eq!(f.primary.calls(), 2);
    // a seed makes it repeatable
    let mut seeded = chat("smart");
    seeded["seed"] = json!(7);
    call(&f.state, post(&seeded)).await;
    let resp = call(&f.state, post(&seeded)).await;
    assert_eq!(header(&resp, "x-switchyard-cache"), "hit");
}

#[tokio::test]
async fn key_a_never_receives_key_b_entry_unless_the_route_shares() {
    for (scope, shared) in [(Scope::Key, false), (Scope::Route, true)] {
        let f = cached(
            ScriptedProvider::new("p").otherwise(Step::text("answer")),
            ScriptedProvider::new("b"),
            &[key("alice", "sk-alice"), key("bob", "sk-bob")],
            Policy { scope, ..policy() },
        );
        let as_key = |token: &'static str| {
            let mut r = post(&greedy("hi"));
            r.headers_mut().insert(
                "authorization",
                axum::http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
            );
            r
        };
        let a = call(&f.state, as_key("sk-alice")).await;
        assert_eq!(header(&a, "x-switchyard-cache"), "miss");
        let b = call(&f.state, as_key("sk-bob")).await;
        let expect = if shared { "hit" } else { "miss" };
        assert_eq!(header(&b, "x-switchyard-cache"), expect, "{scope:?}");
        let a_again = call(&f.state, as_key("sk-alice")).await;
        assert_eq!(header(&a_again, "x-switchyard-cache"), "hit");
        assert_eq!(f.primary.calls(), if shared { 1 } else { 2 });
    }
}

#[tokio::test]
async fn failed_truncated_and_tool_call_answers_are_not_stored() {
    let truncated = ProviderReply {
        text: "cut off".into(),
        finish_reason: Some(FinishReason::Length),
        ..ProviderReply::default()
    };
    let tool_turn = ProviderReply {
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "lookup".into(),
            arguments: "{}".into(),
        }],
        finish_reason: Some(FinishReason::ToolCalls),
        ..ProviderReply::default()
    };
    let f = cached(
        ScriptedProvider::new("p")
            .then(Step::fail(ErrorKind::Server))
            .then(Step::Reply(truncated))
            .then(Step::Reply(tool_turn))
            .otherwise(Step::text("whole")),
        ScriptedProvider::new("b").then(Step::fail(ErrorKind::Server)),
        &[],
        policy(),
    );
    let failed = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(failed.status(), StatusCode::BAD_GATEWAY);
    assert_eq!(
        header(&failed, "x-switchyard-cache"),
        "miss",
        "said on errors too"
    );
    for _ in 0..3 {
        let resp = call(&f.state, post(&greedy("hi"))).await;
        assert_eq!(header(&resp, "x-switchyard-cache"), "miss");
    }
    let resp = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(
        header(&resp, "x-switchyard-cache"),
        "hit",
        "only the whole answer was kept"
    );
    assert_eq!(
        json_body(resp).await["choices"][0]["message"]["content"],
        "whole"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stale_answer_serves_through_a_full_outage_and_the_trail_shows_the_failures() {
    let f = cached(
        ScriptedProvider::new("p")
            .then(Step::text("remembered"))
            .otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Overloaded)),
        &[],
        Policy {
            ttl: Duration::from_secs(60),
            stale_if_error: Duration::from_secs(3600),
            ..policy()
        },
    );
    call(&f.state, post(&greedy("hi"))).await;
    tokio::time::advance(Duration::from_secs(120)).await;
    let resp = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-cache"), "stale");
    assert_eq!(header(&resp, "age"), "120");
    assert_eq!(header(&resp, "x-switchyard-failed-over"), "true");
    let body = json_body(resp).await;
    assert_eq!(body["choices"][0]["message"]["content"], "remembered");
    let attempts = body["switchyard"]["attempts"].as_array().unwrap();
    let failed: Vec<&str> = attempts
        .iter()
        .filter(|a| a["outcome"] == "failed")
        .map(|a| a["provider"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["primary", "backup"], "{attempts:?}");
    assert_eq!(body["switchyard"]["cache"]["status"], "stale");
    // past ttl + stale_if_error: the outage's error
    tokio::time::advance(Duration::from_secs(3600)).await;
    let resp = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
    // and never without stale_if_error
    let off = cached(
        ScriptedProvider::new("p")
            .then(Step::text("remembered"))
            .otherwise(Step::fail(ErrorKind::Server)),
        ScriptedProvider::new("b").otherwise(Step::fail(ErrorKind::Server)),
        &[],
        Policy {
            ttl: Duration::from_secs(60),
            ..policy()
        },
    );
    call(&off.state, post(&greedy("hi"))).await;
    tokio::time::advance(Duration::from_secs(61)).await;
    let resp = call(&off.state, post(&greedy("hi"))).await;
    assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
}

fn streamed(text: &str) -> Value {
    let mut body = greedy(text);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    body
}

#[tokio::test]
async fn a_streamed_hit_replays_the_chat_stream_with_usage() {
    let f = cached(
        ScriptedProvider::new("p").otherwise(Step::stream_words(&["Hel", "lo ", "there."])),
        ScriptedProvider::new("b"),
        &[],
        policy(),
    );
    let live = call(&f.state, post(&streamed("hi"))).await;
    assert_eq!(header(&live, "x-switchyard-cache"), "miss");
    let live = events(&text_body(live).await);
    let hit = call(&f.state, post(&streamed("hi"))).await;
    assert_eq!(header(&hit, "x-switchyard-cache"), "hit");
    assert_eq!(header(&hit, "content-type"), "text/event-stream");
    let replay = events(&text_body(hit).await);
    assert_eq!(f.primary.calls(), 1);
    let text = |ev: &[String]| -> String {
        ev.iter()
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str::<Value>(e).unwrap())
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    };
    assert_eq!(text(&replay), "Hello there.");
    assert_eq!(text(&replay), text(&live));
    let last_json = |ev: &[String]| -> Value { serde_json::from_str(&ev[ev.len() - 2]).unwrap() };
    assert_eq!(
        last_json(&replay)["usage"],
        last_json(&live)["usage"],
        "usage included"
    );
    assert_eq!(last_json(&replay)["switchyard"]["cache"]["status"], "hit");
    assert_eq!(replay.last().unwrap(), "[DONE]");
    // a plain request of the same question is its own entry (the dialect's, streaming aside)
    let plain = call(&f.state, post(&greedy("hi"))).await;
    assert_eq!(
        header(&plain, "x-switchyard-cache"),
        "hit",
        "stream is not in the key"
    );
}

#[tokio::test]
async fn a_rescued_stream_is_never_stored() {
    let cut = Step::Stream(vec![
        StreamStep::Chunk(ChatChunk {
            text: "Hel".into(),
            ..ChatChunk::default()
        }),
        StreamStep::Fail(switchyard::ProviderError::new(ErrorKind::Connection, "cut")),
    ]);
    let f = cached(
        ScriptedProvider::new("p")
            .then(cut)
            .otherwise(Step::stream_words(&["Hello"])),
        ScriptedProvider::new("b").otherwise(Step::stream_words(&["Hel", "lo"])),
        &[],
        policy(),
    );
    let resp = call(&f.state, post(&streamed("hi"))).await;
    let body = text_body(resp).await;
    assert!(body.contains("[DONE]"), "rescued: {body}");
    let line = last_logged(&f.state);
    assert!(
        line.attempts
            .iter()
            .any(|a| matches!(a.outcome, switchyard::observe::Outcome::Rescue { .. })),
        "{:?}",
        line.attempts
    );
    let again = call(&f.state, post(&streamed("hi"))).await;
    assert_eq!(
        header(&again, "x-switchyard-cache"),
        "miss",
        "the rescued answer was not kept"
    );
}

fn named(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for frame in text.split("\n\n") {
        if let Some(name) = frame.lines().find_map(|l| l.strip_prefix("event: ")) {
            // consecutive deltas of one kind count once: a replay sends a block whole
            if out.last().map(String::as_str) != Some(name) {
                out.push(name.to_owned());
            }
        }
    }
    out
}

#[tokio::test]
async fn streamed_hits_replay_messages_and_responses_events() {
    let f = cached(
        ScriptedProvider::new("p").otherwise(Step::stream_words(&["Hel", "lo ", "there."])),
        ScriptedProvider::new("b"),
        &[],
        policy(),
    );
    let messages = || {
        Request::post("/v1/messages")
            .header("content-type", "application/json")
            .header("anthropic-version", "2023-06-01")
            .body(Body::from(
                json!({"model": "smart", "max_tokens": 64, "temperature": 0, "stream": true,
                       "messages": [{"role": "user", "content": "hi"}]})
                .to_string(),
            ))
            .unwrap()
    };
    let live = call(&f.state, messages()).await;
    assert_eq!(header(&live, "x-switchyard-cache"), "miss");
    let live = text_body(live).await;
    let hit = call(&f.state, messages()).await;
    assert_eq!(header(&hit, "x-switchyard-cache"), "hit");
    let hit = text_body(hit).await;
    assert_eq!(named(&hit), named(&live), "{hit}");
    assert!(hit.contains("\"output_tokens\":3"), "usage included: {hit}");

    let responses = || {
        Request::post("/v1/responses")
            .header("content-type", "application/json")
            .body(Body::from(
                json!({"model": "smart", "temperature": 0, "stream": true, "store": false,
                       "input": "hi"})
                .to_string(),
            ))
            .unwrap()
    };
    let live = call(&f.state, responses()).await;
    assert_eq!(header(&live, "x-switchyard-cache"), "miss");
    let live = text_body(live).await;
    let hit = call(&f.state, responses()).await;
    assert_eq!(header(&hit, "x-switchyard-cache"), "hit");
    let hit = text_body(hit).await;
    assert_eq!(named(&hit), named(&live), "{hit}");
    assert!(hit.contains("Hello there."), "{hit}");
    assert_eq!(
        f.primary.calls(),
        2,
        "one live call per dialect, none for hits"
    );
}

/// A Responses request's own fields (what the shared shape does not carry) are in its key
/// on a cached route whose providers speak Chat Completions: the client's body is still
/// read as the native body there, for the key (`responses::reads_native_body`).
#[tokio::test]
async fn a_responses_requests_own_fields_are_in_its_key() {
    let f = simple();
    let responses = |extra: Value| {
        let mut body = json!({"model": "smart", "temperature": 0, "store": false, "input": "hi"});
        let fields = body.as_object_mut().unwrap();
        fields.extend(extra.as_object().unwrap().clone());
        Request::post("/v1/responses")
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let first = call(&f.state, responses(json!({}))).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(header(&first, "x-switchyard-cache"), "miss");
    let again = call(&f.state, responses(json!({}))).await;
    assert_eq!(header(&again, "x-switchyard-cache"), "hit");
    // the same request in the shared shape, but not as the client wrote it
    let own = call(&f.state, responses(json!({"truncation": "disabled"}))).await;
    assert_eq!(own.status(), StatusCode::OK);
    assert_eq!(header(&own, "x-switchyard-cache"), "miss");
    assert_eq!(f.primary.calls(), 2);
}

#[tokio::test]
async fn the_memory_store_evicts_the_least_recently_used_answer_past_its_byte_bound() {
    let f = simple();
    let with_bound = |max_bytes| {
        AppState(Arc::new(Shared {
            cache: Cache::new(
                HashMap::from([("smart".to_owned(), policy())]),
                Backend::Memory,
                max_bytes,
                DEFAULT_MAX_ENTRY_BYTES,
            ),
            ..Shared::for_tests(
                f.state.gateway.clone(),
                KeyStore::new(&[]),
                Arc::new(Metrics::new()),
            )
        }))
    };
    // what one of these answers costs (its key, its encoding, the overhead)
    let probe = with_bound(DEFAULT_MAX_BYTES);
    call(&probe, post(&greedy("one"))).await;
    let (_, one) = probe.cache.memory_usage();
    assert!(one > crate::cache::memory::ENTRY_OVERHEAD);
    // room for two and not three
    let state = with_bound(2 * one + one / 2);
    let ask = |q: &'static str| call(&state, post(&greedy(q)));
    for q in ["one", "two"] {
        assert_eq!(header(&ask(q).await, "x-switchyard-cache"), "miss");
    }
    assert_eq!(header(&ask("one").await, "x-switchyard-cache"), "hit");
    // a third answer pushes out the least recently used: "two"
    assert_eq!(header(&ask("six").await, "x-switchyard-cache"), "miss");
    assert_eq!(state.cache.memory_usage(), (2, 2 * one));
    assert_eq!(header(&ask("one").await, "x-switchyard-cache"), "hit");
    assert_eq!(header(&ask("two").await, "x-switchyard-cache"), "miss");
}
