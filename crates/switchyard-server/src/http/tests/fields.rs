//! Field fidelity through the router (`docs/fields.md`): by default a degradable field a
//! provider cannot honour is dropped for it and named (`x-switchyard-dropped`,
//! `switchyard.dropped`, the log line), a contract field skips it (trail
//! `skipped:cannot_honour(...)`), a route none of whose providers can is a 400 naming the
//! fields and providers, every error after a skip names it, `strict` skips for any field,
//! `drop` clears contract fields too, advisory fields are named as ignored, OpenAI's own
//! fields go to OpenAI providers as written, and unknown fields are refused unless the
//! route passes them through.

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

fn strict(providers: &[&str]) -> Route {
    Route::new("smart", providers).unsupported_fields(UnsupportedFields::Strict)
}

/// [`fixture`] whose request log feeds the dashboard's ring, to read the lines back.
fn logged(primary: ScriptedProvider, backup: ScriptedProvider, route: Route) -> Fixture {
    use crate::telemetry::insight::Insight;
    let (primary, backup) = (Arc::new(primary), Arc::new(backup));
    let metrics = Arc::new(Metrics::new());
    let insight = Arc::new(Insight::new(switchyard::clock::Clock::system()));
    let gateway = Gateway::builder()
        .provider(ProviderSpec::new("primary", primary.clone()).max_attempts(1))
        .provider(ProviderSpec::new("backup", backup.clone()))
        .route(route.allow_unpriced(true))
        .build()
        .unwrap();
    let mut shared = Shared::for_tests(gateway, KeyStore::new(&[]), metrics);
    shared.log = RequestLog::disabled().with_tap(insight.clone());
    shared.insight = insight;
    Fixture {
        state: AppState(Arc::new(shared)),
        primary,
        backup,
    }
}

#[tokio::test]
async fn a_degradable_field_is_dropped_in_route_order_and_named_everywhere() {
    let f = logged(
        anthropic("claude"),
        openai("gpt"),
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(json!({"seed": 7, "presence_penalty": 0.5, "frequency_penalty": 0.5}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(
        header(&resp, "x-switchyard-dropped"),
        "seed, presence_penalty, frequency_penalty"
    );
    let v = json_body(resp).await;
    assert_eq!(
        v["switchyard"]["dropped"],
        json!(["seed", "presence_penalty", "frequency_penalty"])
    );
    assert_eq!(
        last_logged(&f.state).dropped,
        ["seed", "presence_penalty", "frequency_penalty"]
    );
    let sent = &f.primary.requests()[0];
    assert_eq!(
        (sent.seed, sent.presence_penalty, sent.frequency_penalty),
        (None, None, None)
    );
    assert_eq!(f.backup.calls(), 0);
}

#[tokio::test]
async fn a_streamed_answer_names_what_was_dropped_in_its_header() {
    let f = logged(
        anthropic("claude").otherwise(Step::stream_words(&["a", "b"])),
        openai("gpt"),
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(json!({"seed": 7, "stream": true}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-dropped"), "seed");
    let text = text_body(resp).await;
    assert!(text.contains(r#""dropped":["seed"]"#), "{text}");
    assert_eq!(last_logged(&f.state).dropped, ["seed"]);
}

#[tokio::test]
async fn a_contract_field_skips_the_provider_and_the_trail_says_which() {
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
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
    let v = json_body(resp).await;
    let first = &v["switchyard"]["attempts"][0];
    assert_eq!(first["outcome"], "skipped", "{v}");
    assert_eq!(first["reason"], "cannot_honour");
    assert_eq!(first["fields"], json!(["logprobs", "top_logprobs"]));
    assert_eq!(f.primary.calls(), 0);
    let sent = &f.backup.requests()[0];
    assert_eq!(
        (sent.seed, sent.logprobs, sent.top_logprobs),
        (Some(7), true, Some(2))
    );
}

#[tokio::test]
async fn a_strict_route_skips_for_any_field_it_cannot_honour() {
    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        strict(&["primary", "backup"]),
    );
    let resp = call(&f.state, post(&with(json!({"seed": 7})))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    let v = json_body(resp).await;
    assert_eq!(v["switchyard"]["attempts"][0]["fields"], json!(["seed"]));
    assert_eq!(f.primary.calls(), 0);
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
            && message.contains("primary skipped: cannot honour logprobs")
            && message.contains("backup skipped: cannot honour logprobs"),
        "{message}"
    );
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

/// `[openai (down), anthropic]` with `logprobs`: a 502 whose message names OpenAI's
/// failure and the skipped Anthropic with the field, in every dialect's error shape.
#[tokio::test]
async fn an_error_after_a_skip_names_the_failure_and_the_skip_in_every_dialect() {
    let down = || openai("gpt").otherwise(Step::fail(ErrorKind::Server));
    let f = fixture(
        down(),
        anthropic("claude"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let (status, err) =
        error_of(call(&f.state, post(&with(json!({"logprobs": true})))).await).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("primary: server"), "{message}");
    assert!(
        message.contains("backup skipped: cannot honour logprobs"),
        "{message}"
    );

    let responses = Request::post("/v1/responses")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"model": "smart", "input": "hi", "top_logprobs": 2}).to_string(),
        ))
        .unwrap();
    let (status, err) = error_of(call(&f.state, responses).await).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("backup skipped: cannot honour logprobs, top_logprobs"),
        "{message}"
    );

    // Messages: a strict route skips OpenAI for top_k; Anthropic's error shape says so
    let f = fixture(
        anthropic("claude").otherwise(Step::fail(ErrorKind::Server)),
        openai("gpt"),
        &[],
        strict(&["primary", "backup"]),
    );
    let messages = Request::post("/v1/messages")
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"model": "smart", "max_tokens": 10, "top_k": 5,
                   "messages": [{"role": "user", "content": "hi"}]})
            .to_string(),
        ))
        .unwrap();
    let (status, err) = error_of(call(&f.state, messages).await).await;
    assert_eq!(status.as_u16(), 529);
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("backup skipped: cannot honour top_k"),
        "{message}"
    );
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
        strict(&["primary", "backup"]),
    );
    let body = with(json!({"user": "u1", "service_tier": "flex", "store": true,
        "prompt_cache_key": "k", "safety_identifier": "s"}));
    let resp = call(&f.state, post(&body)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "service_tier, user, store, prompt_cache_key, safety_identifier"
    );
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
}

/// OpenAI's own fields go to an OpenAI provider as the client wrote them; a vendor that
/// cannot take them gets the request without the degradable ones, and is skipped for the
/// contract ones (a 400 naming the field only when no provider of the route takes it).
#[tokio::test]
async fn openai_fields_go_to_openai_as_written_and_degrade_or_skip_elsewhere() {
    let f = fixture(
        openai("gpt"),
        anthropic("claude"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let own = json!({"logit_bias": {"50256": -100}, "verbosity": "low",
        "prediction": {"type": "content", "content": "fn main() {}"},
        "store": true, "prompt_cache_retention": "24h"});
    let resp = call(&f.state, post(&with(own.clone()))).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("x-switchyard-dropped").is_none());
    assert!(resp.headers().get("x-switchyard-ignored").is_none());
    let sent = &f.primary.requests()[0];
    assert_eq!(sent.logit_bias.as_ref().unwrap()["50256"], -100);
    assert_eq!(sent.prediction.as_ref().unwrap()["content"], "fn main() {}");
    assert_eq!(sent.prompt_cache_retention.as_deref(), Some("24h"));

    let f = fixture(
        anthropic("claude"),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let resp = call(&f.state, post(&with(own))).await;
    assert_eq!(header(&resp, "x-switchyard-provider"), "primary");
    assert_eq!(
        header(&resp, "x-switchyard-dropped"),
        "logit_bias, verbosity, prediction"
    );
    assert_eq!(
        header(&resp, "x-switchyard-ignored"),
        "store, prompt_cache_retention"
    );
    let sent = &f.primary.requests()[0];
    assert!(sent.logit_bias.is_none() && sent.prediction.is_none());

    // contract: audio output only OpenAI gives
    let audio = with(json!({"modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "wav"}}));
    let resp = call(&f.state, post(&audio)).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, "x-switchyard-provider"), "backup");
    let v = json_body(resp).await;
    assert_eq!(
        v["switchyard"]["attempts"][0]["fields"],
        json!(["audio", "modalities"])
    );
    assert_eq!(
        f.backup.requests()[0].audio.as_ref().unwrap()["voice"],
        "alloy"
    );

    let f = fixture(
        anthropic("claude"),
        gemini("gemini"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let search = with(json!({"web_search_options": {"search_context_size": "low"}}));
    let (status, err) = error_of(call(&f.state, post(&search)).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(err["error"]["param"], "web_search_options", "{err}");
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
}

/// What OpenAI answers to its own contract fields (spoken output, citations, a
/// deprecated function call) reaches the client in OpenAI's shape, plain and streamed.
#[tokio::test]
async fn openai_audio_answers_come_back_in_the_message_and_the_deltas() {
    let audio = json!({"id": "audio_1", "data": "UklGRg==", "expires_at": 1, "transcript": "Hi"});
    let reply = switchyard::ProviderReply {
        finish_reason: Some(switchyard::chat::FinishReason::Stop),
        native: Some(Arc::new(
            json!({"choices": [{"index": 0, "message": {"audio": audio}}]}),
        )),
        ..switchyard::ProviderReply::default()
    };
    let piece = switchyard::ChatChunk {
        native: Some(Arc::new(
            json!({"choices": [{"index": 0, "delta": {"audio": {"transcript": "Hi"}}}]}),
        )),
        ..switchyard::ChatChunk::default()
    };
    let end = switchyard::ChatChunk {
        finish_reason: Some(switchyard::chat::FinishReason::Stop),
        ..switchyard::ChatChunk::default()
    };
    let f = fixture(
        openai("gpt-4o-audio-preview")
            .then(Step::Reply(reply))
            .then(Step::Stream(vec![
                StreamStep::Chunk(piece),
                StreamStep::Chunk(end),
            ])),
        openai("gpt"),
        &[],
        Route::new("smart", &["primary", "backup"]),
    );
    let body = with(
        json!({"modalities": ["text", "audio"], "audio": {"voice": "alloy",
        "format": "wav"}}),
    );
    let v = json_body(call(&f.state, post(&body)).await).await;
    let message = &v["choices"][0]["message"];
    assert_eq!(message["audio"]["transcript"], "Hi", "{v}");
    assert_eq!(message["content"], Value::Null, "no text: null, as OpenAI");

    let mut streamed = body;
    streamed["stream"] = json!(true);
    let text = text_body(call(&f.state, post(&streamed)).await).await;
    assert!(
        text.contains(r#""delta":{"audio":{"transcript":"Hi"}}"#),
        "{text}"
    );
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}

#[tokio::test]
async fn hostile_openai_fields_are_refused_by_name() {
    let f = basic();
    let many: serde_json::Map<String, Value> =
        (0..1100).map(|i| (i.to_string(), json!(1))).collect();
    let cases = [
        (json!({"verbosity": "extreme"}), "verbosity"),
        (json!({"logit_bias": {"not-a-token": 1}}), "logit_bias"),
        (
            json!({"prediction": {"type": "file", "content": "x"}}),
            "prediction.type",
        ),
        (json!({"modalities": ["video"]}), "modalities[0]"),
        (json!({"audio": "alloy"}), "audio"),
        (
            json!({"prompt_cache_retention": "forever"}),
            "prompt_cache_retention",
        ),
        (json!({"function_call": "required"}), "function_call"),
        (
            json!({"prompt_cache_key": "k".repeat(300)}),
            "prompt_cache_key",
        ),
    ];
    for (extra, param) in cases {
        let (status, err) = error_of(call(&f.state, post(&with(extra.clone()))).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra}");
        assert_eq!(err["error"]["param"], param, "{err}");
    }
    // a map too big for the body limit is a 413 here; the bound itself is unit-tested
    let resp = call(&f.state, post(&with(json!({"logit_bias": many})))).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(f.primary.calls() + f.backup.calls(), 0);
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
