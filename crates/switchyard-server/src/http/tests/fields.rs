//! Field fidelity through the router (`docs/fields.md`): a provider that cannot honour a
//! field the request uses is skipped (trail `skipped:cannot_honour(...)`), a route none of
//! whose providers can is a 400 naming the fields and providers, `unsupported_fields =
//! "drop"` clears the field and says so, advisory fields are named as ignored, and
//! unknown fields are refused unless the route passes them through.

use switchyard::chat::{Field, Support};
use switchyard::provider::anthropic::AnthropicCodec;
use switchyard::provider::codec::Codec;
use switchyard::provider::gemini::GeminiCodec;
use switchyard::provider::openai::OpenAiCodec;
use switchyard::route::UnsupportedFields;

use super::*;

fn anthropic(model: &str) -> ScriptedProvider {
    ScriptedProvider::new(model).declaring(<AnthropicCodec as Codec>::support)
}

fn openai(model: &str) -> ScriptedProvider {
    ScriptedProvider::new(model).declaring(<OpenAiCodec as Codec>::support)
}

fn gemini(model: &str) -> ScriptedProvider {
    ScriptedProvider::new(model).declaring(<GeminiCodec as Codec>::support)
}

fn with(extra: Value) -> Value {
    let mut body = chat("smart");
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

#[tokio::test]
async fn a_provider_that_cannot_honour_a_field_is_skipped_and_the_trail_says_which() {
    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(json!({"seed": 7, "logprobs": true, "top_logprobs": 2}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    let v = json_body(resp).await;
    let first = &v["switchyard"]["attempts"][0];
    assert_eq!(first["outcome"], "skipped", "{v}");
    assert_eq!(first["reason"], "cannot_honour");
    assert_eq!(first["fields"], json!(["seed", "logprobs", "top_logprobs"]));
    assert_eq!(f.primary.calls(), 0);
    let sent = &f.backup.requests()[0];
    assert_eq!(
        (sent.seed, sent.logprobs, sent.top_logprobs),
        (Some(7), true, Some(2))
    );
}

#[tokio::test]
async fn when_no_provider_can_honour_a_field_the_400_names_fields_and_providers() {
    let f = fixture(
        anthropic("claude"),
        anthropic("claude-2"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    // (`n` is served by several calls there; log probabilities Anthropic has none of)
    let body = with(json!({"logprobs": true}));
    let (status, err) = error_of(call(&f.state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "logprobs", "{err}");
    assert_eq!(err["error"]["code"], "unsupported_field");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("honour logprobs")
            && message.contains("primary skipped:cannot_honour(logprobs)")
            && message.contains("backup skipped:cannot_honour(logprobs)"),
        "{message}"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

#[tokio::test]
async fn a_route_that_drops_unsupported_fields_clears_them_and_says_so() {
    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary"]).unsupported_fields(UnsupportedFields::Drop),
    );
    let body = with(json!({"seed": 7, "frequency_penalty": 0.5, "top_k": 5,
        "metadata": {"team": "a"}}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-dropped"),
        "seed, frequency_penalty"
    );
    assert_eq!(header(&resp, "x-switchyard-ignored"), "metadata");
    let v = json_body(resp).await;
    assert_eq!(
        v["switchyard"]["dropped"],
        json!(["seed", "frequency_penalty"])
    );
    assert_eq!(v["switchyard"]["ignored"], json!(["metadata"]));
    let sent = &f.primary.requests()[0];
    assert_eq!((sent.seed, sent.frequency_penalty), (None, None));
    assert_eq!(sent.top_k, Some(5), "a field it honours is kept");
}

#[tokio::test]
async fn advisory_fields_never_skip_a_provider_and_are_named() {
    let f = fixture(
        gemini("gemini-2.5-flash"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(json!({"user": "u1", "service_tier": "flex", "store": true,
        "prompt_cache_key": "k"}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "store, prompt_cache_key, service_tier, user"
    );
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
}

#[tokio::test]
async fn a_request_without_any_of_the_fields_goes_to_the_first_provider_unmarked() {
    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&chat("smart"))).await;
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
}

#[tokio::test]
async fn unknown_fields_are_refused_by_name_unless_the_route_passes_them_through() {
    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(json!({"frobnicate": 1}));
    let (status, err) = error_of(call(&f.state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "frobnicate");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unrecognized request argument supplied: frobnicate"));
    let body = with(json!({"web_search_options": {}}));
    let (status, err) = error_of(call(&f.state, post(&body)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not supported by this gateway"),
        "{err}"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);

    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]).passthrough_unknown(true),
    );
    let resp = call(&f.state, post(&with(json!({"frobnicate": 1})))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        header(&resp, "x-switchyard-provider"),
        "backup",
        "OpenAI only"
    );
    let sent = f.backup.requests()[0].passthrough.clone().unwrap();
    assert_eq!(sent["frobnicate"], 1);
}

#[tokio::test]
async fn a_developer_message_is_carried_as_developer() {
    let f = basic();
    let body = json!({"model": "smart", "messages": [
        {"role": "developer", "content": "be terse"}, {"role": "user", "content": "hi"}]});
    assert_eq!(call(&f.state, post(&body)).await.status(), StatusCode::OK);
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.messages[0].role, switchyard::Role::Developer);
    assert!(sent.fields_used().contains(Field::DeveloperRole));
    assert_eq!(
        <AnthropicCodec as Codec>::support(Field::DeveloperRole),
        Support::Translated
    );
}

#[tokio::test]
async fn logprobs_and_several_choices_come_back_in_the_completion() {
    let entries = json!([{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]);
    let reply = switchyard::ProviderReply {
        text: "Hi".into(),
        logprobs: Some(json!({"content": entries})),
        alternatives: vec![switchyard::chat::Choice {
            text: "Hello".into(),
            finish_reason: Some(switchyard::chat::FinishReason::Stop),
            ..switchyard::chat::Choice::default()
        }],
        finish_reason: Some(switchyard::chat::FinishReason::Stop),
        ..switchyard::ProviderReply::default()
    };
    let f = fixture(
        openai("gpt").otherwise(Step::Reply(reply)),
        openai("gpt-b"),
        &[],
        Route::new("smart", &["primary"]),
    );
    let resp = call(&f.state, post(&with(json!({"n": 2, "logprobs": true})))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2, "{v}");
    assert_eq!(choices[0]["logprobs"]["content"], entries);
    assert_eq!(choices[1]["index"], 1);
    assert_eq!(choices[1]["message"]["content"], "Hello");
    assert_eq!(f.primary.requests()[0].n, Some(2));
}

async fn error_of(resp: Response) -> (StatusCode, Value) {
    let status = resp.status();
    (status, json_body(resp).await)
}
