use std::collections::HashMap;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use switchyard::chat::Message;
use switchyard::observe::{Attempt, Outcome};
use switchyard::{ChatRequest, ChatResponse};

use super::*;

fn policy() -> Policy {
    Policy {
        ttl: Duration::from_secs(600),
        stale_if_error: Duration::ZERO,
        scope: Scope::Key,
        any_temperature: false,
        tool_calls: false,
    }
}

fn cache(policy: Policy) -> Cache {
    Cache::new(
        HashMap::from([("r".to_owned(), policy)]),
        Backend::Memory,
        DEFAULT_MAX_BYTES,
        DEFAULT_MAX_ENTRY_BYTES,
    )
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(text)],
        temperature: Some(0.0),
        ..ChatRequest::default()
    }
}

fn headers(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("cache-control", HeaderValue::from_str(value).unwrap());
    h
}

fn key_of(c: &Cache, caller: Option<&str>, req: &ChatRequest) -> Arc<str> {
    c.plan(
        "r",
        "r",
        "chat",
        caller,
        &mut req.clone(),
        Directives::default(),
    )
    .unwrap()
    .unwrap()
    .key
}

#[test]
fn cache_control_directives_are_read_case_blind_with_unknown_ones_ignored() {
    assert_eq!(Directives::of(&HeaderMap::new()), Directives::default());
    let d = Directives::of(&headers("No-Cache, max-age=30, private"));
    assert!(d.no_cache && !d.no_store);
    assert_eq!(d.max_age, Some(30));
    assert!(Directives::of(&headers("no-store")).no_store);
    // a max-age that is not a number of seconds asks for a fresh answer
    assert_eq!(Directives::of(&headers("max-age=soon")).max_age, Some(0));
    // two max-ages: the stricter
    assert_eq!(
        Directives::of(&headers("max-age=60, max-age=\"5\"")).max_age,
        Some(5)
    );
}

#[test]
fn keys_differ_by_caller_under_key_scope_and_not_under_route_scope() {
    let c = cache(policy());
    let req = request("hello");
    let (a, b) = (key_of(&c, Some("a"), &req), key_of(&c, Some("b"), &req));
    assert_ne!(a, b, "key A never reads key B's entry");
    assert_eq!(
        a,
        key_of(&c, Some("a"), &req),
        "the same request, the same key"
    );
    let shared = cache(Policy {
        scope: Scope::Route,
        ..policy()
    });
    assert_eq!(
        key_of(&shared, Some("a"), &req),
        key_of(&shared, Some("b"), &req)
    );
}

#[test]
fn keys_ignore_user_metadata_and_streaming_but_not_what_changes_the_answer() {
    let c = cache(policy());
    let base = request("hello");
    let k = key_of(&c, None, &base);
    let mut same = base.clone();
    same.user = Some("end-user-7".into());
    same.metadata = Some(serde_json::Map::from_iter([("t".into(), 1.into())]));
    same.safety_identifier = Some("x".into());
    assert_eq!(key_of(&c, None, &same), k);
    // the fields left out of the key are put back: the request goes upstream as it came
    let mut kept = same.clone();
    c.plan("r", "r", "chat", None, &mut kept, Directives::default());
    assert_eq!(kept, same);
    for changed in [
        request("hello!"),
        ChatRequest {
            max_tokens: Some(5),
            ..base.clone()
        },
        ChatRequest {
            seed: Some(1),
            ..base.clone()
        },
        ChatRequest {
            stop: vec!["x".into()],
            ..base.clone()
        },
    ] {
        assert_ne!(key_of(&c, None, &changed), k, "{changed:?}");
    }
    // the model the client named (a wildcard route's) and the dialect are in the key
    let other_model = c
        .plan(
            "r",
            "r/other",
            "chat",
            None,
            &mut base.clone(),
            Directives::default(),
        )
        .unwrap()
        .unwrap()
        .key;
    assert_ne!(other_model, k);
    let other_api = c
        .plan(
            "r",
            "r",
            "messages",
            None,
            &mut base.clone(),
            Directives::default(),
        )
        .unwrap()
        .unwrap()
        .key;
    assert_ne!(other_api, k);
}

#[test]
fn sampled_requests_bypass_unless_seeded_or_the_route_takes_any_temperature() {
    let c = cache(policy());
    let plan = |req: &ChatRequest| {
        c.plan(
            "r",
            "r",
            "chat",
            None,
            &mut req.clone(),
            Directives::default(),
        )
    };
    let mut req = request("hi");
    req.temperature = None;
    assert_eq!(plan(&req).unwrap().unwrap_err(), "temperature");
    req.temperature = Some(0.7);
    assert_eq!(plan(&req).unwrap().unwrap_err(), "temperature");
    req.seed = Some(42);
    assert!(plan(&req).unwrap().is_ok());
    let any = cache(Policy {
        any_temperature: true,
        ..policy()
    });
    req.seed = None;
    assert!(any
        .plan(
            "r",
            "r",
            "chat",
            None,
            &mut req.clone(),
            Directives::default()
        )
        .unwrap()
        .is_ok());
    assert!(c
        .plan(
            "other",
            "other",
            "chat",
            None,
            &mut req.clone(),
            Directives::default()
        )
        .is_none());
    let no_store = Directives {
        no_store: true,
        ..Directives::default()
    };
    assert_eq!(
        c.plan("r", "r", "chat", None, &mut request("hi"), no_store)
            .unwrap()
            .unwrap_err(),
        "no-store"
    );
}

fn answer(finish: Option<FinishReason>) -> ChatResponse {
    ChatResponse {
        text: "hello".into(),
        finish_reason: finish,
        ..ChatResponse::default()
    }
}

#[test]
fn only_complete_unrescued_answers_are_storable() {
    let p = policy();
    assert!(storable(&answer(Some(FinishReason::Stop)), &p));
    assert!(
        !storable(&answer(Some(FinishReason::Length)), &p),
        "truncated"
    );
    assert!(!storable(&answer(Some(FinishReason::ContentFilter)), &p));
    assert!(!storable(&answer(None), &p), "no finish: cut");
    let mut rescued = answer(Some(FinishReason::Stop));
    rescued.attempts.push(Attempt {
        provider: "b".into(),
        model: "m".into(),
        attempt: 1,
        outcome: Outcome::Rescue {
            method: "continuation".into(),
        },
        status: None,
        latency: Duration::ZERO,
        start: None,
        probe: false,
        reported: None,
    });
    assert!(!storable(&rescued, &p), "a rescued answer is never stored");
    let mut empty = answer(Some(FinishReason::Stop));
    empty.text.clear();
    assert!(!storable(&empty, &p));
    let mut calls = answer(Some(FinishReason::ToolCalls));
    calls.tool_calls.push(switchyard::chat::ToolCall {
        id: "c1".into(),
        name: "f".into(),
        arguments: "{}".into(),
    });
    assert!(
        !storable(&calls, &p),
        "tool-call turns only when the route says"
    );
    assert!(storable(
        &calls,
        &Policy {
            tool_calls: true,
            ..policy()
        }
    ));
}

#[tokio::test]
async fn fresh_honours_ttl_and_max_age_and_stale_reaches_past_ttl_only_when_on() {
    let store = switchyard::state::MemoryState::new();
    let c = cache(Policy {
        ttl: Duration::from_secs(10),
        stale_if_error: Duration::from_secs(100),
        ..policy()
    });
    let req = request("hi");
    let plan = |d| {
        c.plan("r", "r", "chat", None, &mut req.clone(), d)
            .unwrap()
            .unwrap()
    };
    let p = plan(Directives::default());
    assert!(c.fresh(&store, &p, 1_000).await.is_none());
    assert!(
        c.put(&store, &p, &answer(Some(FinishReason::Stop)), 1_000)
            .await
    );
    assert!(
        c.fresh(&store, &p, 11_000).await.is_some(),
        "10 s old: fresh"
    );
    assert!(c.fresh(&store, &p, 11_001).await.is_none(), "past ttl");
    let max_age = plan(Directives {
        max_age: Some(5),
        ..Directives::default()
    });
    assert!(c.fresh(&store, &max_age, 6_000).await.is_some());
    assert!(c.fresh(&store, &max_age, 6_001).await.is_none());
    let no_cache = plan(Directives {
        no_cache: true,
        ..Directives::default()
    });
    assert!(c.fresh(&store, &no_cache, 1_000).await.is_none());
    assert!(c.stale(&store, &p, 100_000).await.is_some());
    assert!(
        c.stale(&store, &p, 111_000).await.is_none(),
        "past ttl + stale_if_error"
    );
    let off = cache(policy());
    let p = off
        .plan(
            "r",
            "r",
            "chat",
            None,
            &mut req.clone(),
            Directives::default(),
        )
        .unwrap()
        .unwrap();
    assert!(
        off.put(&store, &p, &answer(Some(FinishReason::Stop)), 1_000)
            .await
    );
    assert!(
        off.stale(&store, &p, 2_000).await.is_none(),
        "stale_if_error off"
    );
}

#[tokio::test]
async fn an_answer_over_the_entry_bound_is_served_but_not_kept() {
    let store = switchyard::state::MemoryState::new();
    let c = Cache::new(
        HashMap::from([("r".to_owned(), policy())]),
        Backend::Memory,
        DEFAULT_MAX_BYTES,
        1_000,
    );
    let p = c
        .plan(
            "r",
            "r",
            "chat",
            None,
            &mut request("hi"),
            Directives::default(),
        )
        .unwrap()
        .unwrap();
    let mut big = answer(Some(FinishReason::Stop));
    big.text = "x".repeat(2_000);
    assert!(!c.put(&store, &p, &big, 0).await);
    assert!(c.fresh(&store, &p, 0).await.is_none());
}

#[tokio::test]
async fn a_reloaded_cache_keeps_the_entries_of_the_one_it_replaces() {
    let store = switchyard::state::MemoryState::new();
    let old = cache(policy());
    let req = request("hi");
    let p = old
        .plan(
            "r",
            "r",
            "chat",
            None,
            &mut req.clone(),
            Directives::default(),
        )
        .unwrap()
        .unwrap();
    assert!(
        old.put(&store, &p, &answer(Some(FinishReason::Stop)), 0)
            .await
    );
    let new = cache(Policy {
        ttl: Duration::from_secs(60),
        ..policy()
    })
    .carried_from(&old);
    assert!(new.fresh(&store, &p, 1_000).await.is_some(), "entry kept");
    let smaller = Cache::new(
        HashMap::from([("r".to_owned(), policy())]),
        Backend::Memory,
        1 << 20,
        DEFAULT_MAX_ENTRY_BYTES,
    )
    .carried_from(&old);
    assert!(
        smaller.fresh(&store, &p, 1_000).await.is_none(),
        "a new bound starts empty"
    );
}
