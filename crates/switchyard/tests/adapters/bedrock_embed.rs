//! Bedrock embeddings over HTTP, behind the same SigV4-verifying mock as the suite
//! (`bedrock.rs`: a call whose signature is not the one the test's secret makes is refused
//! with 403 `InvalidSignatureException`): Titan's one text per InvokeModel call (a request
//! of several inputs as that many signed calls, vectors in input order, token counts
//! summed), Cohere's 96 texts per call with usage from `X-Amzn-Bedrock-Input-Token-Count`,
//! a failed call failing the whole request, every row of Bedrock's error table classified on
//! the invoke path without the secret, and a Bedrock API key sent as a bearer token.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::embedding::EmbeddingRequest;
use switchyard::provider::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::{ErrorKind, Provider};
use wiremock::matchers::{header, method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::bedrock::{signature_problem, ACCESS_KEY_ID, REGION, SESSION_TOKEN};
use crate::suite::KEY;

const TITAN: &str = "amazon.titan-embed-text-v2:0";
const TITAN_PATH: &str = "/model/amazon.titan-embed-text-v2%3A0/invoke";
const COHERE: &str = "cohere.embed-english-v3";
const COHERE_PATH: &str = "/model/cohere.embed-english-v3/invoke";

/// A provider for `model` signing with the suite's secret.
fn bedrock(server: &MockServer, model: &str) -> Arc<dyn Provider> {
    let mut config = BedrockConfig::new(REGION, model);
    config.base_url = Some(server.uri());
    config.control_url = Some(server.uri());
    config.credentials = Some(AwsCredentials {
        access_key_id: ACCESS_KEY_ID.to_owned(),
        secret_access_key: Secret::new(KEY),
        session_token: Some(Secret::new(SESSION_TOKEN)),
    });
    config.clock = Clock::system();
    Arc::new(Bedrock::new(config, &Transport::default()).unwrap())
}

/// A refusal of a call whose signature is wrong, as AWS answers it.
fn refused(problem: &str) -> ResponseTemplate {
    ResponseTemplate::new(403)
        .insert_header("x-amzn-ErrorType", "InvalidSignatureException")
        .set_body_json(json!({"message": format!("The request signature we calculated does not match ({problem})")}))
}

/// Why `request` is not signed with the suite's secret, or `None` when it is.
fn unsigned_or_wrong(request: &Request) -> Option<String> {
    let signed = (request.headers.get("authorization"))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256 "));
    if !signed {
        return Some("not signed".to_owned());
    }
    signature_problem(request, KEY, SESSION_TOKEN)
}

/// Titan's InvokeModel: checks the signature and the body's shape, answers
/// `[len(text), dimensions]` with `inputTextTokenCount` = the text's length.
struct Titan;

impl Respond for Titan {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if let Some(problem) = unsigned_or_wrong(request) {
            return refused(&problem);
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let keys: Vec<&String> = body
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        let Some(text) = body["inputText"].as_str() else {
            return ResponseTemplate::new(400)
                .insert_header("x-amzn-ErrorType", "ValidationException")
                .set_body_json(json!({"message": "Malformed input request: inputText"}));
        };
        if keys
            .iter()
            .any(|k| !["inputText", "dimensions"].contains(&k.as_str()))
        {
            return ResponseTemplate::new(400)
                .insert_header("x-amzn-ErrorType", "ValidationException")
                .set_body_json(json!({"message": format!("extraneous key in {body}")}));
        }
        let n = text.chars().count();
        ResponseTemplate::new(200)
            .insert_header("x-amzn-bedrock-input-token-count", n.to_string().as_str())
            .set_body_json(json!({
                "embedding": [n, body["dimensions"].as_u64().unwrap_or(1024)],
                "inputTextTokenCount": n,
                "embeddingsByType": {"float": [n, 0]},
            }))
    }
}

/// Cohere's InvokeModel: checks the signature, `input_type` and at most 96 texts; answers
/// one `[len(text)]` per text and the token count (the texts' lengths) in the header only.
struct Cohere;

impl Respond for Cohere {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if let Some(problem) = unsigned_or_wrong(request) {
            return refused(&problem);
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let texts: Vec<&str> = (body["texts"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if body["input_type"] != "search_document" || texts.is_empty() || texts.len() > 96 {
            return ResponseTemplate::new(400)
                .insert_header("x-amzn-ErrorType", "ValidationException")
                .set_body_json(json!({"message": format!("invalid request {body}")}));
        }
        let tokens: usize = texts.iter().map(|t| t.chars().count()).sum();
        let embeddings: Vec<Value> = texts.iter().map(|t| json!([t.chars().count()])).collect();
        ResponseTemplate::new(200)
            .insert_header(
                "x-amzn-bedrock-input-token-count",
                tokens.to_string().as_str(),
            )
            .set_body_json(json!({
                "id": "e-1", "response_type": "embeddings_floats",
                "texts": texts, "embeddings": embeddings,
            }))
    }
}

#[tokio::test]
async fn titan_embeds_each_input_in_its_own_signed_call_in_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .and(header("content-type", "application/json"))
        .and(header("accept", "application/json"))
        .respond_with(Titan)
        .expect(6)
        .mount(&server)
        .await;
    let texts = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff"];
    let req = EmbeddingRequest::texts(&texts).dimensions(256);
    let reply = bedrock(&server, TITAN).embed(&req).await.unwrap();
    let firsts: Vec<f32> = reply.vectors.iter().map(|v| v[0]).collect();
    assert_eq!(firsts, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "input order");
    assert!(reply.vectors.iter().all(|v| v[1] == 256.0));
    assert_eq!(reply.usage.unwrap().input_tokens, 21, "1 + 2 + … + 6");
    for request in server.received_requests().await.unwrap() {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["dimensions"], 256);
    }
}

#[tokio::test]
async fn cohere_sends_96_texts_a_call_and_takes_usage_from_the_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COHERE_PATH))
        .respond_with(Cohere)
        .expect(3)
        .mount(&server)
        .await;
    let texts: Vec<String> = (0..200).map(|i| "x".repeat(i % 7 + 1)).collect();
    let reply = bedrock(&server, COHERE)
        .embed(&EmbeddingRequest::texts(&texts))
        .await
        .unwrap();
    let lengths: Vec<f32> = texts.iter().map(|t| t.len() as f32).collect();
    let got: Vec<f32> = reply.vectors.iter().map(|v| v[0]).collect();
    assert_eq!(got, lengths, "one vector per input, in input order");
    let total: usize = texts.iter().map(String::len).sum();
    assert_eq!(reply.usage.unwrap().input_tokens, total as u64);
    let mut sizes: Vec<usize> = (server.received_requests().await.unwrap().iter())
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["texts"]
                .as_array()
                .unwrap()
                .len()
        })
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [8, 96, 96]);
}

#[tokio::test]
async fn one_failed_call_fails_the_whole_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .respond_with(Titan)
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("x-amzn-ErrorType", "ThrottlingException")
                .set_body_json(
                    json!({"message": "Too many requests, please wait before trying again."}),
                ),
        )
        .mount(&server)
        .await;
    let err = bedrock(&server, TITAN)
        .embed(&EmbeddingRequest::texts(&["a", "b", "c", "d", "e"]))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimited, "{err}");
}

#[tokio::test]
async fn a_wrong_signature_is_an_auth_error_without_the_secret() {
    let server = MockServer::start().await;
    Mock::given(path_regex("/invoke$"))
        .respond_with(Titan)
        .mount(&server)
        .await;
    let mut config = BedrockConfig::new(REGION, TITAN);
    config.base_url = Some(server.uri());
    config.credentials = Some(AwsCredentials {
        access_key_id: ACCESS_KEY_ID.to_owned(),
        secret_access_key: Secret::new("not-the-suite-secret-key-0000"),
        session_token: Some(Secret::new(SESSION_TOKEN)),
    });
    let provider = Bedrock::new(config, &Transport::default()).unwrap();
    let err = provider
        .embed(&EmbeddingRequest::texts(&["a"]))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("not-the-suite-secret-key-0000"));
    assert!(!shown.contains(SESSION_TOKEN));
}

#[tokio::test]
async fn a_bedrock_api_key_goes_as_a_bearer_token_unsigned() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COHERE_PATH))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "embeddings": [[0.5]], "response_type": "embeddings_floats"})))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = BedrockConfig::new(REGION, COHERE);
    config.base_url = Some(server.uri());
    config.api_key = Some(Secret::new(KEY));
    let provider = Bedrock::new(config, &Transport::default()).unwrap();
    let reply = provider
        .embed(&EmbeddingRequest::texts(&["a"]))
        .await
        .unwrap();
    assert_eq!(reply.vectors, [vec![0.5]]);
    assert_eq!(reply.usage, None, "no header, no count");
}

/// Every row of Bedrock's error table answered on the invoke path, the secret echoed into
/// the message: classified as the table says, the secret never in the error.
#[tokio::test]
async fn invoke_errors_classify_as_the_table_says() {
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/bedrock/errors.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert!(rows.len() > 10);
    let server = MockServer::start().await;
    let provider = bedrock(&server, COHERE);
    for row in rows {
        let mut body = row["body"].clone();
        if let Some(m) = body.get_mut("message") {
            *m = json!(format!("{} (key {KEY})", m.as_str().unwrap_or_default()));
        }
        let mut response =
            ResponseTemplate::new(u16::try_from(row["status"].as_u64().unwrap()).unwrap())
                .set_body_json(&body);
        for (name, value) in row["headers"].as_object().into_iter().flatten() {
            response = response.insert_header(name.as_str(), value.as_str().unwrap());
        }
        server.reset().await;
        Mock::given(path(COHERE_PATH))
            .respond_with(response)
            .mount(&server)
            .await;
        let err = provider
            .embed(&EmbeddingRequest::texts(&["a", "b"]))
            .await
            .unwrap_err();
        let want: ErrorKind = serde_json::from_value(row["kind"].clone()).unwrap();
        assert_eq!(err.kind, want, "{}: {err}", row["name"]);
        assert!(!format!("{err} {err:?}").contains(KEY), "{}", row["name"]);
    }
}

/// Titan, except that a call for `text` fails (503, ServiceUnavailableException) its first
/// `failures` times.
struct FailingOn {
    text: &'static str,
    failures: std::sync::atomic::AtomicUsize,
}

impl FailingOn {
    fn new(text: &'static str, failures: usize) -> Self {
        Self {
            text,
            failures: std::sync::atomic::AtomicUsize::new(failures),
        }
    }
}

impl Respond for FailingOn {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let ours = body["inputText"] == self.text;
        let fail = ours
            && self
                .failures
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
        if fail {
            return ResponseTemplate::new(503)
                .insert_header("x-amzn-ErrorType", "ServiceUnavailableException")
                .set_body_json(json!({"message": "Service unavailable"}));
        }
        Titan.respond(request)
    }
}

/// 64 inputs (`t0`, `t1`, … `t62`, then `last`): 63 answered calls before the last fails.
fn sixty_four() -> (Vec<String>, u64) {
    let mut texts: Vec<String> = (0..63).map(|i| format!("t{i}")).collect();
    let answered: usize = texts.iter().map(String::len).sum();
    texts.push("last".to_owned());
    (texts, answered as u64)
}

/// Issue 24 item 7: a fan-out whose last call fails keeps the 63 answered (and billed)
/// calls, and its retry sends only the one that failed.
#[tokio::test]
async fn a_failed_call_keeps_what_was_answered_and_a_retry_sends_only_the_rest() {
    use switchyard::embedding::EmbeddingProgress;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .respond_with(FailingOn::new("last", 1))
        .mount(&server)
        .await;
    let (texts, answered) = sixty_four();
    let req = EmbeddingRequest::texts(&texts);
    let titan = bedrock(&server, TITAN);
    let mut progress = EmbeddingProgress::default();
    let err = titan.embed_resuming(&req, &mut progress).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Overloaded, "{err}");
    assert_eq!(
        progress.calls(),
        63,
        "every other call answered, and was kept"
    );
    assert_eq!(progress.usage().unwrap().input_tokens, answered);

    let reply = titan.embed_resuming(&req, &mut progress).await.unwrap();
    let firsts: Vec<f32> = reply.vectors.iter().map(|v| v[0]).collect();
    let lengths: Vec<f32> = texts.iter().map(|t| t.len() as f32).collect();
    assert_eq!(firsts, lengths, "one vector per input, in input order");
    assert_eq!(reply.usage.unwrap().input_tokens, answered + 4);
    let sent = server.received_requests().await.unwrap().len();
    assert_eq!(sent, 65, "64 calls and the one retried, not 128");
}

/// The gateway records what a failed fan-out spent — in the ledger, the budget (key and
/// route alike: one reservation) and the failed attempt the request log reads — and a
/// retry on the same provider sends only what failed.
#[tokio::test]
async fn the_gateway_records_a_failed_fan_outs_spend_and_retries_only_what_failed() {
    use switchyard::cost::Price;
    use switchyard::{Api, Gateway, Money, ProviderSpec, Route};
    let price = Price::from_usd_per_mtok(0.02, 0.0, None, None).unwrap();
    let (texts, answered) = sixty_four();
    let req = EmbeddingRequest::texts(&texts);
    let gateway = |server: &MockServer, attempts: u32| {
        Gateway::builder()
            .provider(
                ProviderSpec::new("titan", bedrock(server, TITAN))
                    .price(price)
                    .max_attempts(attempts),
            )
            .route(
                Route::new("embed", &["titan"])
                    .api(Api::Embeddings)
                    .budget(Money::from_usd(1.0)),
            )
            .build()
            .unwrap()
    };
    let spent = price.cost_of_calls(
        &switchyard::Usage {
            input_tokens: answered,
            ..switchyard::Usage::default()
        },
        63,
    );
    assert!(spent > Money::ZERO);

    // the last call always fails: the request fails, and what the 63 cost is recorded
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .respond_with(FailingOn::new("last", usize::MAX))
        .mount(&server)
        .await;
    let gw = gateway(&server, 1);
    let err = gw.embed("embed", &req).await.unwrap_err();
    let last = err.attempts().last().unwrap();
    assert_eq!(
        last.reported.as_ref().and_then(|r| r.spent),
        Some(spent),
        "{last:?}"
    );
    assert_eq!(switchyard::observe::spent(err.attempts()), Some(spent));
    let row = &gw.ledger().summary()["titan"];
    assert_eq!((row.cost, row.input_tokens), (spent, answered));
    let books = gw.budget("embed").await.unwrap();
    assert_eq!((books.spent, books.reserved), (spent, Money::ZERO));

    // failing once: the retry sends the one call that failed, and the answer costs all 64
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(TITAN_PATH))
        .respond_with(FailingOn::new("last", 1))
        .mount(&server)
        .await;
    let gw = gateway(&server, 2);
    let resp = gw.embed("embed", &req).await.unwrap();
    assert_eq!(resp.vectors.len(), 64);
    assert_eq!(server.received_requests().await.unwrap().len(), 65);
    assert_eq!(resp.usage.unwrap().input_tokens, answered + 4);
    let books = gw.budget("embed").await.unwrap();
    assert_eq!(books.spent, resp.cost.unwrap());
    assert_eq!(
        switchyard::observe::spent(&resp.attempts),
        None,
        "nothing billed twice"
    );
}
