//! What a route does with a field a provider cannot honour (`docs/fields.md`): by default a
//! degradable field is dropped for that provider (route order kept, the answer names it)
//! and a contract field skips it; `strict` skips for any field; `drop` drops contract
//! fields too. A field the provider cannot honour together with the rest of the request
//! (`Provider::cannot_honour`) goes when it is degradable, else skips it. Every error that
//! follows a skip names the skipped provider and why.

use std::sync::Arc;

use futures_util::StreamExt as _;
use switchyard::chat::{Field, FieldSet, ReasoningEffort, ResponseFormat};
use switchyard::gateway::StreamEvent;
use switchyard::provider::anthropic::AnthropicCodec;
use switchyard::provider::codec::Codec;
use switchyard::provider::openai::OpenAiCodec;
use switchyard::provider::scripted::{ScriptedProvider, Step};
use switchyard::route::UnsupportedFields;
use switchyard::{ChatRequest, ErrorKind, GatewayError};

use super::{route, two};

/// A provider declaring Anthropic's support table (no seed, penalties, log probabilities).
fn claude() -> ScriptedProvider {
    ScriptedProvider::new("claude").declaring(<AnthropicCodec as Codec>::support)
}

fn anthropic() -> Arc<ScriptedProvider> {
    Arc::new(claude())
}

fn gpt() -> ScriptedProvider {
    ScriptedProvider::new("gpt").declaring(<OpenAiCodec as Codec>::support)
}

fn openai() -> Arc<ScriptedProvider> {
    Arc::new(gpt())
}

/// A request with a seed and both penalties.
fn sampled() -> ChatRequest {
    ChatRequest {
        seed: Some(7),
        presence_penalty: Some(0.5),
        frequency_penalty: Some(-0.5),
        ..ChatRequest::from_prompt("hi")
    }
}

fn labels(attempts: &[switchyard::observe::Attempt]) -> Vec<String> {
    attempts.iter().map(|a| a.outcome.label()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_degradable_field_never_stops_a_failover() {
    let down = Arc::new(gpt().otherwise(Step::fail(ErrorKind::Server)));
    let claude = anthropic();
    let gw = two(&down, &claude, route(&["primary", "backup"]));
    let resp = gw.chat("main", &sampled()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert_eq!(
        resp.dropped.names(),
        ["seed", "presence_penalty", "frequency_penalty"]
    );
    let sent = &claude.requests()[0];
    assert_eq!(
        (sent.seed, sent.presence_penalty, sent.frequency_penalty),
        (None, None, None),
        "the provider gets the request without them"
    );
}

#[tokio::test(start_paused = true)]
async fn route_order_is_kept_and_only_the_provider_that_cannot_honour_drops() {
    let claude = anthropic();
    let gpt = openai();
    let gw = two(&claude, &gpt, route(&["primary", "backup"]));
    let resp = gw.chat("main", &sampled()).await.unwrap();
    assert_eq!(
        resp.provider, "primary",
        "not skipped for a degradable field"
    );
    assert_eq!(labels(&resp.attempts), ["success"]);
    assert!(!resp.dropped.is_empty());

    let gw = two(&gpt, &claude, route(&["primary", "backup"]));
    let resp = gw.chat("main", &sampled()).await.unwrap();
    assert_eq!(resp.provider, "primary");
    assert!(resp.dropped.is_empty(), "OpenAI takes them all");
    assert_eq!(gpt.requests()[0].seed, Some(7));
}

#[tokio::test(start_paused = true)]
async fn a_contract_field_skips_and_the_error_names_the_skip_and_the_failure() {
    let down = Arc::new(gpt().otherwise(Step::fail(ErrorKind::Server)));
    let claude = anthropic();
    let gw = two(&down, &claude, route(&["primary", "backup"]));
    let req = ChatRequest {
        logprobs: true,
        ..ChatRequest::from_prompt("hi")
    };
    let err = gw.chat("main", &req).await.unwrap_err();
    let GatewayError::AllFailed { attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        labels(attempts).last().map(String::as_str),
        Some("skipped:cannot_honour(logprobs)")
    );
    let msg = err.to_string();
    assert!(msg.contains("primary: server"), "{msg}");
    assert!(
        msg.contains("backup skipped: cannot honour logprobs"),
        "{msg}"
    );
    assert_eq!(claude.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_strict_route_skips_for_any_field_and_refuses_when_every_provider_is_skipped() {
    let claude = anthropic();
    let gpt = openai();
    let r = route(&["primary", "backup"]).unsupported_fields(UnsupportedFields::Strict);
    let gw = two(&claude, &gpt, r);
    let resp = gw.chat("main", &sampled()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert_eq!(
        labels(&resp.attempts)[0],
        "skipped:cannot_honour(seed,presence_penalty,frequency_penalty)"
    );
    assert!(resp.dropped.is_empty());

    let other = anthropic();
    let r = route(&["primary", "backup"]).unsupported_fields(UnsupportedFields::Strict);
    let gw = two(&claude, &other, r);
    let err = gw.chat("main", &sampled()).await.unwrap_err();
    let GatewayError::CannotHonour { fields, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(fields, &["seed", "presence_penalty", "frequency_penalty"]);
    assert!(err
        .to_string()
        .contains("primary skipped: cannot honour seed"));
}

#[tokio::test(start_paused = true)]
async fn a_dropping_route_drops_contract_fields_too() {
    let claude = anthropic();
    let gpt = openai();
    let r = route(&["primary", "backup"]).unsupported_fields(UnsupportedFields::Drop);
    let gw = two(&claude, &gpt, r);
    let req = ChatRequest {
        logprobs: true,
        seed: Some(1),
        ..ChatRequest::from_prompt("hi")
    };
    let resp = gw.chat("main", &req).await.unwrap();
    assert_eq!(resp.provider, "primary");
    assert_eq!(resp.dropped.names(), ["seed", "logprobs"]);
    assert!(!claude.requests()[0].logprobs);
}

/// Stands in for Anthropic's forced-tool JSON: a JSON format cannot go with thinking.
fn json_with_thinking(req: &ChatRequest) -> FieldSet {
    let mut set = FieldSet::EMPTY;
    if req.response_format.is_some() && req.reasoning_effort.is_some() {
        set.insert(Field::ResponseFormat);
        set.insert(Field::ReasoningEffort);
    }
    if req.response_format.is_some() && !req.tools.is_empty() {
        set.insert(Field::ResponseFormat);
        set.insert(Field::Tools);
    }
    set
}

fn json_and_thinking() -> ChatRequest {
    ChatRequest {
        response_format: Some(ResponseFormat::JsonObject),
        reasoning_effort: Some(ReasoningEffort::Low),
        ..ChatRequest::from_prompt("hi")
    }
}

#[tokio::test(start_paused = true)]
async fn a_clash_with_a_degradable_field_drops_that_field_and_keeps_the_provider() {
    let clashing = Arc::new(ScriptedProvider::new("claude").clashing(json_with_thinking));
    let gpt = openai();
    let gw = two(&clashing, &gpt, route(&["primary", "backup"]));
    let resp = gw.chat("main", &json_and_thinking()).await.unwrap();
    assert_eq!(resp.provider, "primary");
    assert_eq!(resp.dropped.names(), ["reasoning_effort"]);
    let sent = &clashing.requests()[0];
    assert_eq!(sent.reasoning_effort, None);
    assert_eq!(sent.response_format, Some(ResponseFormat::JsonObject));

    // strict: skipped, naming the whole clash
    let r = route(&["primary", "backup"]).unsupported_fields(UnsupportedFields::Strict);
    let gw = two(&clashing, &gpt, r);
    let resp = gw.chat("main", &json_and_thinking()).await.unwrap();
    assert_eq!(resp.provider, "backup");
    assert_eq!(
        labels(&resp.attempts)[0],
        "skipped:cannot_honour(response_format,reasoning_effort)"
    );
}

#[tokio::test(start_paused = true)]
async fn a_clash_of_contract_fields_skips_on_any_route() {
    let clashing = Arc::new(ScriptedProvider::new("claude").clashing(json_with_thinking));
    let gpt = openai();
    let mut req = json_and_thinking();
    req.tools = vec![switchyard::chat::Tool {
        name: "f".into(),
        description: None,
        parameters: serde_json::json!({"type": "object"}),
        cache_control: None,
    }];
    for mode in [UnsupportedFields::Degrade, UnsupportedFields::Drop] {
        let r = route(&["primary", "backup"]).unsupported_fields(mode);
        let gw = two(&clashing, &gpt, r);
        let resp = gw.chat("main", &req).await.unwrap();
        assert_eq!(resp.provider, "backup", "{mode:?}");
        assert_eq!(
            labels(&resp.attempts)[0],
            "skipped:cannot_honour(tools,response_format)",
            "thinking went, the rest still clashes"
        );
    }
    assert_eq!(clashing.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stream_names_what_its_provider_was_sent_without() {
    let claude = Arc::new(claude().otherwise(Step::stream_words(&["a ", "b"])));
    let gpt = openai();
    let gw = two(&claude, &gpt, route(&["primary", "backup"]));
    let mut stream = gw.stream("main", sampled()).await.unwrap();
    assert_eq!(stream.provider, "primary");
    assert_eq!(
        stream.dropped.names(),
        ["seed", "presence_penalty", "frequency_penalty"]
    );
    let mut done = None;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Done(resp) = event {
            done = Some(resp);
        }
    }
    let done = done.expect("the stream finished");
    assert_eq!(done.dropped, stream.dropped);
    assert_eq!(claude.requests()[0].seed, None);
}
