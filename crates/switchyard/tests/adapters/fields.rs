//! Field fidelity, table-driven (`docs/fields.md`): for each (field × vendor), the upstream
//! body of a request using the field differs from the same request without it by exactly
//! the vendor's rendering of the field — or, for a field the vendor declares ignored, not at
//! all. Fields a vendor declares unsupported are checked by the gateway (it never sends
//! them); here, that the declaration table and the encoders agree.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use switchyard::chat::{
    CacheControl, CachePoint, Field, Message, ReasoningEffort, Role, Support, Tool,
};
use switchyard::clock::Clock;
use switchyard::ChatRequest;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::suite::{fixture, VendorHarness};

/// The request every case starts from (a tool, so tool settings have something to bind).
fn base() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("be brief"), Message::user("hi")],
        max_tokens: Some(4000),
        tools: vec![Tool {
            name: "f".into(),
            description: None,
            parameters: json!({"type": "object", "properties": {}}),
            cache_control: None,
        }],
        ..ChatRequest::default()
    }
}

/// `base()` with `field` set to a sample value.
fn using(field: Field) -> ChatRequest {
    let mut r = base();
    match field {
        Field::Seed => r.seed = Some(42),
        Field::PresencePenalty => r.presence_penalty = Some(0.5),
        Field::FrequencyPenalty => r.frequency_penalty = Some(-0.5),
        Field::Logprobs => r.logprobs = true,
        Field::TopLogprobs => {
            r.logprobs = true;
            r.top_logprobs = Some(3);
        }
        Field::N => r.n = Some(2),
        Field::TopK => r.top_k = Some(40),
        Field::ParallelToolCalls => r.parallel_tool_calls = Some(false),
        Field::ServiceTier => r.service_tier = Some("priority".into()),
        Field::ReasoningEffort => r.reasoning_effort = Some(ReasoningEffort::Low),
        Field::Metadata => r.metadata = json!({"team": "a"}).as_object().cloned(),
        Field::User => r.user = Some("u1".into()),
        Field::DeveloperRole => r.messages[0].role = Role::Developer,
        Field::CacheControl => {
            // after the system prompt, the user's text and the tool
            for m in &mut r.messages {
                m.cache.push(CachePoint {
                    part: 0,
                    control: CacheControl::default(),
                });
            }
            r.tools[0].cache_control = Some(CacheControl::default());
        }
        _ => unreachable!("not a case"),
    }
    r
}

/// The JSON leaves of `v`, by pointer.
fn leaves(v: &Value, at: String, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| leaves(v, format!("{at}/{k}"), out)),
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
        _ => {
            out.insert(at, v.clone());
        }
    }
}

/// What `with` has that `without` does not (leaves added or changed), by pointer.
fn diff(without: &Value, with: &Value) -> BTreeMap<String, Value> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    leaves(without, String::new(), &mut a);
    leaves(with, String::new(), &mut b);
    b.into_iter().filter(|(k, v)| a.get(k) != Some(v)).collect()
}

/// The body `harness`'s provider sends upstream for `req`.
async fn sent(harness: &dyn VendorHarness, req: &ChatRequest) -> Value {
    let server = MockServer::start().await;
    let reply = fixture(harness.vendor(), "completion_text.json");
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(reply, "application/json"))
        .mount(&server)
        .await;
    let provider = harness.provider(&server.uri(), None, Clock::system());
    provider.send(req).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    serde_json::from_slice(&requests[0].body).unwrap()
}

type Case = (Field, Vec<(&'static str, Value)>);

/// Runs each case on `harness`: the body's difference from `base()`'s is exactly the
/// expected leaves, and the support table agrees (nothing sent means ignored).
async fn check(harness: &dyn VendorHarness, support: fn(Field) -> Support, cases: &[Case]) {
    let plain = sent(harness, &base()).await;
    for (field, expected) in cases {
        let got = diff(&plain, &sent(harness, &using(*field)).await);
        let want: BTreeMap<String, Value> = expected
            .iter()
            .map(|(p, v)| ((*p).to_owned(), v.clone()))
            .collect();
        assert_eq!(got, want, "{} {field}", harness.vendor());
        let declared = support(*field);
        assert_ne!(declared, Support::Unsupported, "{field} is a case");
        // a developer message translated is the base's system message: no difference
        let translated_to_base = *field == Field::DeveloperRole && declared == Support::Translated;
        assert_eq!(
            want.is_empty(),
            declared == Support::Ignored || translated_to_base,
            "{} {field}: sent iff not ignored",
            harness.vendor()
        );
    }
}

#[tokio::test]
async fn openai_sends_every_field_natively() {
    use switchyard::provider::codec::Codec;
    let cases: Vec<Case> = vec![
        (Field::Seed, vec![("/seed", json!(42))]),
        (
            Field::PresencePenalty,
            vec![("/presence_penalty", json!(0.5))],
        ),
        (
            Field::FrequencyPenalty,
            vec![("/frequency_penalty", json!(-0.5))],
        ),
        (Field::Logprobs, vec![("/logprobs", json!(true))]),
        (
            Field::TopLogprobs,
            vec![("/logprobs", json!(true)), ("/top_logprobs", json!(3))],
        ),
        (Field::N, vec![("/n", json!(2))]),
        (
            Field::ParallelToolCalls,
            vec![("/parallel_tool_calls", json!(false))],
        ),
        (
            Field::ServiceTier,
            vec![("/service_tier", json!("priority"))],
        ),
        (
            Field::ReasoningEffort,
            vec![("/reasoning_effort", json!("low"))],
        ),
        (Field::Metadata, vec![("/metadata/team", json!("a"))]),
        (Field::User, vec![("/user", json!("u1"))]),
        (
            Field::DeveloperRole,
            vec![("/messages/0/role", json!("developer"))],
        ),
    ];
    check(
        &crate::openai::Harness,
        <switchyard::provider::openai::OpenAiCodec as Codec>::support,
        &cases,
    )
    .await;
}

#[tokio::test]
async fn anthropic_translates_what_it_can() {
    use switchyard::provider::codec::Codec;
    let cases: Vec<Case> = vec![
        (Field::TopK, vec![("/top_k", json!(40))]),
        (
            Field::ParallelToolCalls,
            vec![
                ("/tool_choice/type", json!("auto")),
                ("/tool_choice/disable_parallel_tool_use", json!(true)),
            ],
        ),
        (Field::ServiceTier, vec![("/service_tier", json!("auto"))]),
        (
            Field::ReasoningEffort,
            vec![
                ("/thinking/type", json!("enabled")),
                ("/thinking/budget_tokens", json!(2048)),
            ],
        ),
        (Field::Metadata, vec![]),
        (Field::User, vec![("/metadata/user_id", json!("u1"))]),
        (Field::DeveloperRole, vec![]),
    ];
    check(
        &crate::anthropic::Harness,
        <switchyard::provider::anthropic::AnthropicCodec as Codec>::support,
        &cases,
    )
    .await;
}

#[tokio::test]
async fn gemini_maps_sampling_into_generation_config() {
    use switchyard::provider::codec::Codec;
    let cases: Vec<Case> = vec![
        (Field::Seed, vec![("/generationConfig/seed", json!(42))]),
        (
            Field::PresencePenalty,
            vec![("/generationConfig/presencePenalty", json!(0.5))],
        ),
        (
            Field::FrequencyPenalty,
            vec![("/generationConfig/frequencyPenalty", json!(-0.5))],
        ),
        (
            Field::Logprobs,
            vec![("/generationConfig/responseLogprobs", json!(true))],
        ),
        (
            Field::TopLogprobs,
            vec![
                ("/generationConfig/responseLogprobs", json!(true)),
                ("/generationConfig/logprobs", json!(3)),
            ],
        ),
        (
            Field::N,
            vec![("/generationConfig/candidateCount", json!(2))],
        ),
        (Field::TopK, vec![("/generationConfig/topK", json!(40))]),
        (Field::ServiceTier, vec![]),
        (
            Field::ReasoningEffort,
            vec![(
                "/generationConfig/thinkingConfig/thinkingBudget",
                json!(1024),
            )],
        ),
        (Field::Metadata, vec![]),
        (Field::User, vec![]),
        (Field::DeveloperRole, vec![]),
    ];
    check(
        &crate::gemini::Harness,
        <switchyard::provider::gemini::GeminiCodec as Codec>::support,
        &cases,
    )
    .await;
}

/// The Responses API: `logprobs` is the `include` entry for the output text's log
/// probabilities, `top_logprobs` itself; the fields it shares with Chat Completions under
/// its own names.
#[tokio::test]
async fn openai_responses_asks_for_logprobs_with_include() {
    use switchyard::provider::codec::Codec;
    let include = json!("message.output_text.logprobs");
    let cases: Vec<Case> = vec![
        (Field::Logprobs, vec![("/include/0", include.clone())]),
        (
            Field::TopLogprobs,
            vec![("/include/0", include), ("/top_logprobs", json!(3))],
        ),
        (
            Field::ParallelToolCalls,
            vec![("/parallel_tool_calls", json!(false))],
        ),
        (
            Field::ServiceTier,
            vec![("/service_tier", json!("priority"))],
        ),
        (
            Field::ReasoningEffort,
            vec![("/reasoning/effort", json!("low"))],
        ),
        (Field::Metadata, vec![("/metadata/team", json!("a"))]),
        (Field::User, vec![("/user", json!("u1"))]),
    ];
    check(
        &crate::openai_responses::Harness,
        <switchyard::provider::openai::responses::ResponsesCodec as Codec>::support,
        &cases,
    )
    .await;
}

#[tokio::test]
async fn bedrock_sends_what_converse_has_a_place_for() {
    use switchyard::provider::codec::Codec;
    let cases: Vec<Case> = vec![
        (Field::ServiceTier, vec![]),
        (
            Field::ReasoningEffort,
            vec![
                (
                    "/additionalModelRequestFields/thinking/type",
                    json!("enabled"),
                ),
                (
                    "/additionalModelRequestFields/thinking/budget_tokens",
                    json!(2048),
                ),
            ],
        ),
        (Field::Metadata, vec![("/requestMetadata/team", json!("a"))]),
        (Field::User, vec![("/requestMetadata/user", json!("u1"))]),
        (Field::DeveloperRole, vec![]),
        (
            Field::CacheControl,
            vec![
                ("/system/1/cachePoint/type", json!("default")),
                ("/messages/0/content/1/cachePoint/type", json!("default")),
                ("/toolConfig/tools/1/cachePoint/type", json!("default")),
            ],
        ),
    ];
    check(
        &crate::bedrock::Harness,
        <switchyard::provider::bedrock::BedrockCodec as Codec>::support,
        &cases,
    )
    .await;
}
