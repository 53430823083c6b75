//! `n` > 1 on the vendors whose API has no `n` (Anthropic, Claude on Vertex AI, Bedrock's
//! Converse, OpenAI's Responses API and Azure's), over real HTTP: the provider makes one
//! call per answer, none carrying `n` — each mock refuses `n` as its vendor does (a 400
//! naming it), so a leaked field fails the test — and merges them into one answer of `n`
//! choices, or one stream of each choice's index, with the usage summed.

use futures_util::StreamExt as _;
use serde_json::Value;
use switchyard::chat::{ChatChunk, FinishReason, Message};
use switchyard::clock::Clock;
use switchyard::ChatRequest;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::suite::{answer_usage, fixture, VendorHarness, ANSWER, PATIENCE, PROMPT};

/// The vendors without `n`, and how each refuses a field it does not define.
fn vendors() -> Vec<(&'static dyn VendorHarness, &'static str)> {
    let anthropic = "n: Extra inputs are not permitted";
    let openai = "Unknown parameter: 'n'.";
    let bedrock = "Malformed input request: extraneous key [n] is not permitted";
    vec![
        (&crate::anthropic::Harness, anthropic),
        (&crate::vertex::ClaudeHarness, anthropic),
        (&crate::bedrock::Harness, bedrock),
        (&crate::openai_responses::Harness, openai),
        (&crate::azure::ResponsesV1Harness, openai),
    ]
}

/// Answers every call with `body`, unless the request carries `n` (top level): then the
/// vendor's 400.
struct RefusingN {
    body: (Vec<u8>, &'static str),
    refusal: Value,
}

impl Respond for RefusingN {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let sent: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if sent.get("n").is_some() {
            return ResponseTemplate::new(400).set_body_json(&self.refusal);
        }
        ResponseTemplate::new(200).set_body_raw(self.body.0.clone(), self.body.1)
    }
}

async fn mock(harness: &dyn VendorHarness, refusal: &str, stream: bool) -> MockServer {
    let server = MockServer::start().await;
    let body = if stream {
        harness.stream_body(&fixture(harness.vendor(), "stream_text.sse"))
    } else {
        let json = fixture(harness.vendor(), "completion_text.json");
        (json.into_bytes(), "application/json")
    };
    Mock::given(method("POST"))
        .and(path(harness.completion_path(stream)))
        .respond_with(RefusingN {
            body,
            refusal: harness.error_body(400, refusal),
        })
        .mount(&server)
        .await;
    server
}

fn asking(n: u32) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(PROMPT)],
        max_tokens: Some(100),
        n: Some(n),
        ..ChatRequest::default()
    }
}

/// The top-level fields of every request `server` received.
async fn bodies(server: &MockServer) -> Vec<Value> {
    (server.received_requests().await.unwrap().iter())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn each_answer_is_a_call_without_n_and_the_answers_are_choices() {
    for (harness, refusal) in vendors() {
        let vendor = harness.vendor();
        let server = mock(harness, refusal, false).await;
        let provider = harness.provider(&server.uri(), None, Clock::system());
        assert_eq!(provider.calls_for(&asking(3)), 3, "{vendor}");
        let reply = provider.send(&asking(3)).await.unwrap();
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 3, "{vendor}");
        assert!(sent.iter().all(|b| b.get("n").is_none()), "{vendor}");
        assert_eq!(reply.text, ANSWER, "{vendor}");
        assert_eq!(reply.alternatives.len(), 2, "{vendor}");
        for choice in &reply.alternatives {
            assert_eq!(choice.text, ANSWER, "{vendor}");
            assert_eq!(choice.finish_reason, Some(FinishReason::Stop), "{vendor}");
        }
        let one = answer_usage();
        assert_eq!(reply.usage, Some(one.plus(one).plus(one)), "{vendor}");
        // the mock refuses `n` as the vendor does: one answer sends none and is one call
        assert_eq!(provider.calls_for(&asking(1)), 1, "{vendor}");
    }
}

#[tokio::test]
async fn each_answer_streams_at_its_index_and_the_stream_finishes_once() {
    for (harness, refusal) in vendors() {
        let vendor = harness.vendor();
        let server = mock(harness, refusal, true).await;
        let provider = harness.provider(&server.uri(), None, Clock::system());
        let stream = provider.stream(&asking(2)).await.unwrap();
        let chunks: Vec<ChatChunk> = tokio::time::timeout(PATIENCE, stream.collect::<Vec<_>>())
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.unwrap_or_else(|e| panic!("{vendor}: {e}")))
            .collect();
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2, "{vendor}");
        assert!(sent.iter().all(|b| b.get("n").is_none()), "{vendor}");
        let zero: String = chunks.iter().map(|c| c.text.as_str()).collect();
        let one: String = (chunks.iter())
            .flat_map(|c| &c.choices)
            .inspect(|d| assert_eq!(d.index, 1, "{vendor}"))
            .map(|d| d.text.as_str())
            .collect();
        assert_eq!((zero.as_str(), one.as_str()), (ANSWER, ANSWER), "{vendor}");
        let finishes: Vec<_> = chunks
            .iter()
            .filter(|c| c.finish_reason.is_some())
            .collect();
        assert_eq!(finishes.len(), 1, "{vendor}");
        let last = chunks.last().unwrap();
        assert_eq!(last.finish_reason, Some(FinishReason::Stop), "{vendor}");
        let u = answer_usage();
        assert_eq!(last.usage, Some(u.plus(u)), "{vendor}");
    }
}

/// A vendor that takes `n` gets it, in one call.
#[tokio::test]
async fn a_vendor_with_n_gets_one_call_carrying_it() {
    let harness = crate::openai::Harness;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("openai", "completion_text.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    let provider = harness.provider(&server.uri(), None, Clock::system());
    assert_eq!(provider.calls_for(&asking(3)), 1);
    provider.send(&asking(3)).await.unwrap();
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["n"], 3);
}

/// A codec that answers once per call declares `n` translated (the provider's calls), and
/// one that takes `n` does not say so.
#[test]
fn the_declarations_follow_who_answers_once_per_call() {
    use switchyard::chat::{Field, Support};
    use switchyard::provider::codec::Codec;
    fn declares<C: Codec>() -> (bool, Support) {
        (C::ONE_ANSWER_PER_CALL, C::support(Field::N))
    }
    use switchyard::provider::{anthropic, bedrock, gemini, openai};
    let once = (true, Support::Translated);
    assert_eq!(declares::<anthropic::AnthropicCodec>(), once);
    assert_eq!(declares::<bedrock::BedrockCodec>(), once);
    assert_eq!(declares::<openai::responses::ResponsesCodec>(), once);
    assert_eq!(declares::<openai::OpenAiCodec>(), (false, Support::Native));
    assert_eq!(
        declares::<gemini::GeminiCodec>(),
        (false, Support::Translated)
    );
}
