//! Bedrock through the proxy: a Chat Completions client, a `kind = "bedrock"` provider whose
//! credentials come from the environment (keys, or issued by a mock STS, container
//! credentials endpoint or IMDSv2, each checking what the real one checks), and a mock
//! Bedrock that recomputes every request's SigV4 signature with the test's credentials
//! (refusing a wrong one with 403 `InvalidSignatureException`) and streams real
//! event-stream frames.

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;
use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{
    chat_body, route, sse_data, stream_body, streamed_text, switchyard, Scratch, Server, ANSWER,
};

const REGION: &str = "eu-west-1";
const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
const ACCESS_KEY_ID: &str = "AKIDE2EEXAMPLE000001";
const SECRET: &str = "e2e/Secret+Access+Key-0123456789abcdefXYZ";
const TOKEN: &str = "e2e-session-token-IQoJb3JpZ2luX2VjEHoaCXVz";

/// Whether `request` carries the signature the test's credentials make.
fn signed_right(request: &Request) -> bool {
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (Some(auth), Some(date)) = (header("authorization"), header("x-amz-date")) else {
        return false;
    };
    let field = |name: &str| {
        auth.split([' ', ','])
            .find_map(|p| p.strip_prefix(name))
            .map(str::to_owned)
    };
    let (Some(credential), Some(signed), Some(signature)) = (
        field("Credential="),
        field("SignedHeaders="),
        field("Signature="),
    ) else {
        return false;
    };
    if credential
        != format!(
            "{ACCESS_KEY_ID}/{}/{REGION}/bedrock/aws4_request",
            &date[..8]
        )
    {
        return false;
    }
    let Some(time) = amz_date(&date) else {
        return false;
    };
    let values: Vec<(String, String)> = signed
        .split(';')
        .filter_map(|name| Some((name.to_owned(), header(name)?)))
        .collect();
    let identity: Identity =
        Credentials::new(ACCESS_KEY_ID, SECRET, Some(TOKEN.to_owned()), None, "e2e").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("bedrock")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let signable = SignableRequest::new(
        request.method.as_str(),
        request.url.as_str(),
        values.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Bytes(&request.body),
    )
    .unwrap();
    let (_, computed) = sign(signable, &params).unwrap().into_parts();
    computed == signature
}

/// `20261129T100000Z` as a time (the weekday httpdate wants is found by trying each).
fn amz_date(date: &str) -> Option<std::time::SystemTime> {
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.get(date.get(4..6)?.parse::<usize>().ok()?.checked_sub(1)?)?;
    let text = |day: &str| {
        format!(
            "{day}, {} {month} {} {}:{}:{} GMT",
            date.get(6..8)?,
            date.get(0..4)?,
            date.get(9..11)?,
            date.get(11..13)?,
            date.get(13..15)?
        )
        .into()
    };
    ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        .iter()
        .filter_map(|day| text(day))
        .find_map(|t: String| httpdate::parse_http_date(&t).ok())
}

/// A Bedrock model endpoint: `answer` for a rightly signed request, else 403.
struct Bedrock {
    answer: ResponseTemplate,
}

impl Respond for Bedrock {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if signed_right(request) {
            return self.answer.clone();
        }
        ResponseTemplate::new(403)
            .insert_header(
                "x-amzn-ErrorType",
                "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/",
            )
            .set_body_json(json!({"message": "The request signature we calculated does not match the signature you provided."}))
    }
}

fn frame(event: &str, payload: &Value) -> Vec<u8> {
    let message = Message::new(Bytes::from(payload.to_string()))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(event.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ));
    let mut out = Vec::new();
    write_message_to(&message, &mut out).unwrap();
    out
}

fn usage() -> Value {
    json!({"inputTokens": 20, "outputTokens": 12, "totalTokens": 37, "cacheReadInputTokens": 5})
}

async fn bedrock_upstream() -> MockServer {
    let upstream = MockServer::start().await;
    let segment = MODEL.replace(':', "%3A");
    let reply = json!({
        "output": {"message": {"role": "assistant", "content": [{"text": ANSWER}]}},
        "stopReason": "end_turn",
        "usage": usage(),
        "metrics": {"latencyMs": 120},
    });
    Mock::given(method("POST"))
        .and(path(format!("/model/{segment}/converse")))
        .respond_with(Bedrock {
            answer: ResponseTemplate::new(200).set_body_json(reply),
        })
        .mount(&upstream)
        .await;
    let (head, tail) = ANSWER.split_at(10);
    let mut stream = frame("messageStart", &json!({"role": "assistant"}));
    for piece in [head, tail] {
        stream.extend(frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": piece}}),
        ));
    }
    stream.extend(frame("contentBlockStop", &json!({"contentBlockIndex": 0})));
    stream.extend(frame("messageStop", &json!({"stopReason": "end_turn"})));
    stream.extend(frame(
        "metadata",
        &json!({"usage": usage(), "metrics": {"latencyMs": 99}}),
    ));
    Mock::given(method("POST"))
        .and(path(format!("/model/{segment}/converse-stream")))
        .respond_with(Bedrock {
            answer: ResponseTemplate::new(200)
                .set_body_raw(stream, "application/vnd.amazon.eventstream"),
        })
        .mount(&upstream)
        .await;
    upstream
}

fn config(uri: &str) -> String {
    format!(
        "[[providers]]\nname = \"bedrock\"\nkind = \"bedrock\"\nregion = \"{REGION}\"\nmodel = \"{MODEL}\"\nbase_url = \"{uri}\"\n\n{}",
        route("smart", &["bedrock"], "")
    )
}

#[tokio::test]
async fn a_signed_plain_and_streamed_completion_through_the_proxy_is_priced() {
    let upstream = bedrock_upstream().await;
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", TOKEN),
    ];
    let server = Server::start(
        Scratch::new("e2e", "bedrock"),
        &config(&upstream.uri()),
        &env,
    );
    let reply = server.chat(&chat_body("smart", "Capital of France?")).await;
    reply.expect_status(200);
    let body = reply.json();
    assert_eq!(body["choices"][0]["message"]["content"], ANSWER, "{body}");
    assert_eq!(body["usage"]["prompt_tokens"], 25, "{body}");
    assert_eq!(body["usage"]["completion_tokens"], 12, "{body}");
    // the shipped Bedrock price of Claude 3.5 Haiku: $0.80 in, $0.08 cached, $4 out per
    // MTok: 20 × 0.8 + 5 × 0.08 + 12 × 4 = 64.4 µ$
    assert_eq!(reply.header("x-switchyard-cost-usd"), "0.0000644");
    assert_eq!(reply.header("x-switchyard-provider"), "bedrock");

    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    let events = sse_data(&reply.text);
    assert_eq!(streamed_text(&events), ANSWER, "{}", reply.text);
    let usage = events
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .find_map(|v| v["usage"]["prompt_tokens"].as_u64());
    assert_eq!(usage, Some(25), "{}", reply.text);
}

#[tokio::test]
async fn a_wrong_secret_fails_as_auth_and_the_secret_is_never_shown() {
    let upstream = bedrock_upstream().await;
    let wrong = "e2e/WRONG+secret-key-0000000000000000000";
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", wrong),
        ("AWS_SESSION_TOKEN", TOKEN),
    ];
    let server = Server::start(
        Scratch::new("e2e", "bedrock-wrong"),
        &config(&upstream.uri()),
        &env,
    );
    let reply = server.chat(&chat_body("smart", "Capital of France?")).await;
    assert!(reply.status >= 400, "{}", reply.everything());
    let text = reply.everything();
    assert!(text.contains("auth"), "{text}");
    assert!(!text.contains(wrong) && !text.contains(TOKEN), "{text}");
}

const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/e2e-bedrock";
const WEB_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.e2e-web-identity.sig";

/// The ISO 8601 time an hour from now.
fn in_an_hour() -> String {
    #[allow(clippy::disallowed_methods)] // a test's wall clock: the server's own reads it too
    let now = std::time::SystemTime::now();
    humantime::format_rfc3339_seconds(now + std::time::Duration::from_secs(3600)).to_string()
}

/// STS: the test's credentials for the documented form with the token, else
/// `InvalidIdentityToken`.
struct Sts;

impl Respond for Sts {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(&request.body)
                .into_owned()
                .collect();
        let is = |k: &str, v: &str| form.get(k).map(String::as_str) == Some(v);
        let named = form
            .get("RoleSessionName")
            .is_some_and(|n| n.len() >= 2 && n.len() <= 64);
        if !(is("Action", "AssumeRoleWithWebIdentity")
            && is("Version", "2011-06-15")
            && is("RoleArn", ROLE_ARN)
            && is("WebIdentityToken", WEB_TOKEN)
            && named)
        {
            return ResponseTemplate::new(400).set_body_raw(
                "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Incorrect token audience</Message></Error><RequestId>e2e</RequestId></ErrorResponse>",
                "text/xml",
            );
        }
        ResponseTemplate::new(200).set_body_raw(
            format!(
                "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleWithWebIdentityResult><Credentials><SessionToken>{TOKEN}</SessionToken><SecretAccessKey>{SECRET}</SecretAccessKey><Expiration>{}</Expiration><AccessKeyId>{ACCESS_KEY_ID}</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>e2e</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>",
                in_an_hour()
            ),
            "text/xml",
        )
    }
}

fn config_with(uri: &str, credentials: &str) -> String {
    config(uri).replace(
        "base_url =",
        &format!("credentials = \"{credentials}\"\nbase_url ="),
    )
}

#[tokio::test]
async fn a_web_identity_is_exchanged_at_sts_and_signs_through_the_proxy() {
    let upstream = bedrock_upstream().await;
    let sts = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Sts)
        .expect(1)
        .mount(&sts)
        .await;
    let scratch = Scratch::new("e2e", "bedrock-irsa");
    let token_file = scratch.write("token", WEB_TOKEN);
    let config = config_with(&upstream.uri(), "web_identity");
    let token_path = token_file.to_str().unwrap().to_owned();
    let sts_uri = sts.uri();
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token_path.as_str()),
        ("AWS_ROLE_ARN", ROLE_ARN),
        ("AWS_ENDPOINT_URL_STS", sts_uri.as_str()),
    ];
    // check names the source, offline, without the token
    let path = scratch.write("switchyard.toml", &config);
    let check = switchyard(
        &["check", "--config", path.to_str().unwrap()],
        &env,
        &scratch.path,
    );
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{out}");
    assert!(
        out.contains(&format!(
            "credentials: web identity: role {ROLE_ARN} with the token in {token_path}"
        )),
        "{out}"
    );
    assert!(!out.contains("e2e-web-identity"), "{out}");

    let server = Server::start(scratch, &config, &env);
    for _ in 0..2 {
        let reply = server.chat(&chat_body("smart", "Capital of France?")).await;
        reply.expect_status(200);
        assert_eq!(reply.json()["choices"][0]["message"]["content"], ANSWER);
    }
    // one exchange for both calls (`expect(1)`), checked when the mock drops
}

#[tokio::test]
async fn container_and_instance_metadata_credentials_sign_through_the_proxy() {
    let upstream = bedrock_upstream().await;
    let issued = json!({
        "Code": "Success",
        "AccessKeyId": ACCESS_KEY_ID,
        "SecretAccessKey": SECRET,
        "Token": TOKEN,
        "Expiration": in_an_hour(),
    });
    // EKS Pod Identity: the agent wants the token file's content as Authorization
    let agent = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/credentials"))
        .and(wiremock::matchers::header(
            "authorization",
            "e2e-pod-identity-token",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(&issued))
        .expect(1)
        .mount(&agent)
        .await;
    // IMDSv2: the token PUT wants its TTL header; the GETs the token
    let imds = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path("/latest/api/token"))
        .and(wiremock::matchers::header_exists(
            "x-aws-ec2-metadata-token-ttl-seconds",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_string("e2e-imds-session"))
        .mount(&imds)
        .await;
    let with_token = || wiremock::matchers::header("x-aws-ec2-metadata-token", "e2e-imds-session");
    Mock::given(method("GET"))
        .and(path("/latest/meta-data/iam/security-credentials/"))
        .and(with_token())
        .respond_with(ResponseTemplate::new(200).set_body_string("e2e-role"))
        .mount(&imds)
        .await;
    Mock::given(method("GET"))
        .and(path("/latest/meta-data/iam/security-credentials/e2e-role"))
        .and(with_token())
        .respond_with(ResponseTemplate::new(200).set_body_json(&issued))
        .mount(&imds)
        .await;

    let scratch = Scratch::new("e2e", "bedrock-pod-identity");
    let token_file = scratch.write("pod-token", "e2e-pod-identity-token\n");
    let full_uri = format!("{}/v1/credentials", agent.uri());
    let token_path = token_file.to_str().unwrap().to_owned();
    let env = [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            token_path.as_str(),
        ),
    ];
    let server = Server::start(scratch, &config_with(&upstream.uri(), "container"), &env);
    let reply = server.chat(&chat_body("smart", "Capital of France?")).await;
    reply.expect_status(200);

    let imds_uri = imds.uri();
    let env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds_uri.as_str())];
    let server = Server::start(
        Scratch::new("e2e", "bedrock-imds"),
        &config_with(&upstream.uri(), "imds"),
        &env,
    );
    let reply = server.chat(&chat_body("smart", "Capital of France?")).await;
    reply.expect_status(200);
}

const TITAN: &str = "amazon.titan-embed-text-v2:0";
const COHERE: &str = "cohere.embed-v4:0";

/// Bedrock's InvokeModel for Titan and Cohere embeddings: a call not signed with the test's
/// credentials is refused (403); Titan answers `[len(text), dimensions]` with
/// `inputTextTokenCount`, Cohere one `[len(text)]` per text with the count in the header.
struct Embeddings;

impl Respond for Embeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if !signed_right(request) {
            return Bedrock {
                answer: ResponseTemplate::new(500),
            }
            .respond(request);
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let invalid = |what: &str| {
            ResponseTemplate::new(400)
                .insert_header("x-amzn-ErrorType", "ValidationException")
                .set_body_json(json!({"message": format!("Malformed input request: {what}")}))
        };
        if let Some(text) = body["inputText"].as_str() {
            let n = text.chars().count();
            return ResponseTemplate::new(200).set_body_json(json!({
                "embedding": [n, body["dimensions"].as_u64().unwrap_or(1024)],
                "inputTextTokenCount": n,
            }));
        }
        let texts: Vec<&str> = (body["texts"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        if body["input_type"] != "search_document" || texts.is_empty() || texts.len() > 96 {
            return invalid("texts, input_type");
        }
        let tokens: usize = texts.iter().map(|t| t.chars().count()).sum();
        let floats: Vec<Value> = texts.iter().map(|t| json!([t.chars().count()])).collect();
        ResponseTemplate::new(200)
            .insert_header(
                "x-amzn-bedrock-input-token-count",
                tokens.to_string().as_str(),
            )
            .set_body_json(
                json!({"response_type": "embeddings_by_type", "embeddings": {"float": floats}}),
            )
    }
}

#[tokio::test]
async fn the_openai_sdk_embeds_through_signed_titan_and_cohere_invoke_calls() {
    crate::support::require_python("openai");
    let upstream = MockServer::start().await;
    for model in [TITAN, COHERE] {
        Mock::given(method("POST"))
            .and(path(format!("/model/{}/invoke", model.replace(':', "%3A"))))
            .respond_with(Embeddings)
            .mount(&upstream)
            .await;
    }
    let uri = upstream.uri();
    // Titan V2 has no shipped price (none published could be read): it says what it serves
    // and its price; Cohere Embed v4's shipped entry makes it an embeddings model
    let config = format!(
        "[[providers]]\nname = \"titan\"\nkind = \"bedrock\"\nregion = \"{REGION}\"\nmodel = \"{TITAN}\"\n\
         base_url = \"{uri}\"\nserves = [\"embeddings\"]\nprice = {{ input_per_mtok = 0.02, output_per_mtok = 0.0 }}\n\n\
         [[providers]]\nname = \"cohere\"\nkind = \"bedrock\"\nregion = \"{REGION}\"\nmodel = \"{COHERE}\"\nbase_url = \"{uri}\"\n\n{}{}",
        route("titan", &["titan"], ""),
        route("cohere", &["cohere"], "")
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", TOKEN),
    ];
    let server = Server::start(Scratch::new("e2e", "bedrock-embeddings"), &config, &env);
    let base = format!("{}/v1", server.base);
    crate::support::run_python(
        "test_bedrock_embeddings.py",
        &[&base],
        "all bedrock embeddings checks passed",
        &[&server],
    );
    let received = upstream.received_requests().await.unwrap_or_default();
    let titan_calls = received
        .iter()
        .filter(|r| r.url.path().contains("titan"))
        .count();
    assert_eq!(titan_calls, 10, "one call per input, two requests of five");
    let mut cohere_sizes: Vec<usize> = (received.iter())
        .filter(|r| r.url.path().contains("cohere"))
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["texts"].as_array().map_or(0, Vec::len)
        })
        .collect();
    cohere_sizes.sort_unstable();
    assert_eq!(cohere_sizes, [4, 96], "100 inputs as calls of at most 96");
    assert!(received.iter().all(signed_right), "every call signed");
}
