//! A model that does not reason (`"reasoning": false` in the shipped price table, or
//! `ProviderSpec::reasoning(false)`) cannot honour `reasoning_effort` though its vendor's
//! API takes the field: it answers without it (the field is degradable, named as dropped),
//! or is skipped for a request setting it on a strict route (`docs/fields.md`).

use std::sync::Arc;

use switchyard::chat::{Field, ReasoningEffort};
use switchyard::provider::codec::Codec;
use switchyard::provider::openai::OpenAiCodec;
use switchyard::provider::scripted::ScriptedProvider;
use switchyard::route::UnsupportedFields;
use switchyard::{ChatRequest, Gateway, GatewayError, ProviderSpec};

use super::{priced, route, two};

fn openai(model: &str) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(model).declaring(<OpenAiCodec as Codec>::support))
}

fn thinking() -> ChatRequest {
    ChatRequest {
        reasoning_effort: Some(ReasoningEffort::High),
        ..ChatRequest::from_prompt("why?")
    }
}

fn labels(resp: &switchyard::ChatResponse) -> Vec<String> {
    resp.attempts.iter().map(|a| a.outcome.label()).collect()
}

fn strict(providers: &[&str]) -> switchyard::Route {
    route(providers).unsupported_fields(UnsupportedFields::Strict)
}

#[tokio::test(start_paused = true)]
async fn by_default_the_non_reasoning_model_answers_in_its_turn_without_the_field() {
    let gpt4o = openai("gpt-4o");
    let gpt5 = openai("gpt-5");
    let gw = two(&gpt4o, &gpt5, route(&["primary", "backup"]));
    let resp = gw.chat("main", &thinking()).await.unwrap();
    assert_eq!(resp.provider, "primary", "route order is kept");
    assert_eq!(resp.dropped.names(), ["reasoning_effort"]);
    assert_eq!(labels(&resp), ["success"]);
    assert_eq!(gpt4o.requests()[0].reasoning_effort, None);
    assert_eq!(gpt5.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_table_listed_non_reasoning_model_is_skipped_for_reasoning_effort_when_strict() {
    let gpt4o = openai("gpt-4o");
    let gpt5 = openai("gpt-5");
    let gw = two(&gpt4o, &gpt5, strict(&["primary", "backup"]));
    let resp = gw.chat("main", &thinking()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert_eq!(
        labels(&resp),
        ["skipped:cannot_honour(reasoning_effort)", "success"]
    );
    assert_eq!(gpt4o.calls(), 0, "a skipped provider is never called");
    assert_eq!(
        gpt5.requests()[0].reasoning_effort,
        Some(ReasoningEffort::High)
    );

    // without the field the non-reasoning model answers as before
    let resp = gw
        .chat("main", &ChatRequest::from_prompt("hi"))
        .await
        .unwrap();
    assert_eq!(resp.provider, "primary");
}

#[tokio::test(start_paused = true)]
async fn a_dropping_route_lets_the_non_reasoning_model_answer_without_the_field() {
    let gpt4o = openai("gpt-4o-mini");
    let gpt5 = openai("gpt-5");
    let r = route(&["primary", "backup"]).unsupported_fields(UnsupportedFields::Drop);
    let gw = two(&gpt4o, &gpt5, r);
    let resp = gw.chat("main", &thinking()).await.unwrap();
    assert_eq!(resp.provider, "primary");
    assert_eq!(resp.dropped.names(), ["reasoning_effort"]);
    assert_eq!(gpt4o.requests()[0].reasoning_effort, None);
    assert_eq!(gpt5.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_spec_overrides_the_table_either_way() {
    // an unlisted model takes the field unless told otherwise; a listed one can be told
    // it does reason (a compatible server reusing the name, say)
    let local = openai("llama-3.3-70b");
    let gpt4o = openai("gpt-4o");
    let gw = Gateway::builder()
        .provider(priced("local", &local).reasoning(false))
        .provider(priced("gpt4o", &gpt4o).reasoning(true))
        .route(strict(&["local", "gpt4o"]))
        .build()
        .unwrap();
    let resp = gw.chat("main", &thinking()).await.unwrap();
    assert_eq!(resp.provider, "gpt4o");
    assert_eq!(labels(&resp)[0], "skipped:cannot_honour(reasoning_effort)");
    assert_eq!(
        gpt4o.requests()[0].reasoning_effort,
        Some(ReasoningEffort::High)
    );

    // an unlisted model without the override is sent the field
    let plain = openai("llama-3.3-70b");
    let gw = Gateway::builder()
        .provider(ProviderSpec::new("plain", plain.clone()))
        .route(route(&["plain"]).allow_unpriced(true))
        .build()
        .unwrap();
    gw.chat("main", &thinking()).await.unwrap();
    assert_eq!(
        plain.requests()[0].reasoning_effort,
        Some(ReasoningEffort::High)
    );
}

#[tokio::test(start_paused = true)]
async fn on_a_strict_route_with_only_non_reasoning_models_the_error_names_the_field() {
    let a = openai("gpt-4.1");
    let b = openai("gpt-4o");
    let gw = two(&a, &b, strict(&["primary", "backup"]));
    let err = gw.chat("main", &thinking()).await.unwrap_err();
    let GatewayError::CannotHonour {
        fields, providers, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(fields, &[Field::ReasoningEffort.name()]);
    assert_eq!(providers, &["primary", "backup"]);
    assert_eq!(a.calls() + b.calls(), 0);
}
