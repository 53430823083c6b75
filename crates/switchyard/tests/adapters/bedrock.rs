//! Bedrock in the shared suite, behind a mock that verifies what AWS verifies: every
//! request's SigV4 signature is recomputed from what arrived (method, path, the signed
//! headers, the body's hash) with the test's credentials, and a wrong one is refused with
//! 403 `InvalidSignatureException`; streams are served as real AWS event-stream frames
//! (encoded by `aws-smithy-eventstream`, valid prelude and message CRCs). Plus what only
//! Bedrock does: the signature refusal as an `auth` error without the secret, the session
//! token scrubbed, a Bedrock API key sent as a bearer token.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use switchyard::chat::{ImageSource, Role, ToolCall, ToolChoice};
use switchyard::clock::Clock;
use switchyard::provider::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use switchyard::provider::http::Transport;
use switchyard::provider::secret::Secret;
use switchyard::provider::sse::SseParser;
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::suite::{fixture, RequestView, Turn, VendorHarness, KEY, PROMPT, SUITE_NOW_MS};

pub const ACCESS_KEY_ID: &str = "AKIDSUITEEXAMPLE0001";
pub const SESSION_TOKEN: &str = "suite-session-token-FwoGZXIvYXdzEJr-SECRET";
pub const REGION: &str = "us-west-2";
pub const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
const MODEL_SEGMENT: &str = "anthropic.claude-3-5-haiku-20241022-v1%3A0";

/// The provider the suite runs: `secret` signs (with [`ACCESS_KEY_ID`] and
/// [`SESSION_TOKEN`]).
fn bedrock(uri: &str, secret: Option<Secret>, clock: Clock) -> Bedrock {
    let mut config = BedrockConfig::new(REGION, MODEL);
    config.base_url = Some(uri.to_owned());
    config.control_url = Some(uri.to_owned());
    config.credentials = secret.map(|secret| AwsCredentials {
        access_key_id: ACCESS_KEY_ID.to_owned(),
        secret_access_key: secret,
        session_token: Some(Secret::new(SESSION_TOKEN)),
    });
    config.clock = clock;
    Bedrock::new(config, &Transport::default()).unwrap()
}

/// Why a request's signature is not the one `secret` and `token` make, or `None` when it is.
pub fn signature_problem(request: &Request, secret: &str, token: &str) -> Option<String> {
    verify(request, secret, token).err()
}

/// [`signature_problem`] as a `Result`: every missing or malformed piece is a problem, as
/// it is to AWS (an unsigned request, a bearer token, a header without its `Signature=`).
fn verify(request: &Request, secret: &str, token: &str) -> Result<(), String> {
    let header = |name: &str| {
        request
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let auth = header("authorization").ok_or("no Authorization header")?;
    let rest = (auth.strip_prefix("AWS4-HMAC-SHA256 ")).ok_or("not a SigV4 Authorization")?;
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for part in rest.split(", ") {
        if let Some(v) = part.strip_prefix("Credential=") {
            credential = Some(v.to_owned());
        } else if let Some(v) = part.strip_prefix("SignedHeaders=") {
            signed_headers = Some(v.to_owned());
        } else if let Some(v) = part.strip_prefix("Signature=") {
            signature = Some(v.to_owned());
        }
    }
    let (Some(credential), Some(signed_headers), Some(signature)) =
        (credential, signed_headers, signature)
    else {
        return Err("Authorization lacks Credential, SignedHeaders or Signature".to_owned());
    };
    let date = header("x-amz-date").ok_or("no x-amz-date")?;
    let expected_scope = format!(
        "{ACCESS_KEY_ID}/{}/{REGION}/bedrock/aws4_request",
        &date[..8]
    );
    if credential != expected_scope {
        return Err(format!("credential scope {credential}"));
    }
    for required in ["host", "x-amz-date", "x-amz-security-token"] {
        if !signed_headers.split(';').any(|h| h == required) {
            return Err(format!("{required} is not signed"));
        }
    }
    if header("x-amz-security-token").as_deref() != Some(token) {
        return Err("wrong session token".to_owned());
    }
    let time = httpdate_from_amz(&date).ok_or("x-amz-date is not a date")?;
    let values: Vec<(String, String)> = signed_headers
        .split(';')
        .filter_map(|name| Some((name.to_owned(), header(name)?)))
        .collect();
    let identity: Identity =
        Credentials::new(ACCESS_KEY_ID, secret, Some(token.to_owned()), None, "test").into();
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
    if computed == signature {
        Ok(())
    } else {
        Err("signature mismatch".to_owned())
    }
}

/// `20261129T100000Z` as a time.
fn httpdate_from_amz(date: &str) -> Option<SystemTime> {
    let (y, mo, d) = (&date[0..4], &date[4..6], &date[6..8]);
    let (h, mi, s) = (&date[9..11], &date[11..13], &date[13..15]);
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months[mo.parse::<usize>().ok()? - 1];
    // the weekday is not checked by the parser's users here; httpdate needs one
    for day in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] {
        if let Ok(t) =
            httpdate::parse_http_date(&format!("{day}, {d} {month} {y} {h}:{mi}:{s} GMT"))
        {
            return Some(t);
        }
    }
    None
}

/// One event-stream frame.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut message = Message::new(Bytes::copy_from_slice(payload));
    for (name, value) in headers {
        message = message.add_header(Header::new(
            (*name).to_owned(),
            HeaderValue::String((*value).to_owned().into()),
        ));
    }
    let mut out = Vec::new();
    write_message_to(&message, &mut out).unwrap();
    out
}

/// A stream fixture's events as event-stream frames: `exception:<name>` (and the suite's
/// `error`, as `internalServerException`) become exception frames, the rest events.
pub fn frames(sse: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for event in SseParser::new().push(sse.as_bytes()) {
        let exception = match &*event.event {
            "error" => Some("internalServerException"),
            name => name.strip_prefix("exception:"),
        };
        let bytes = match exception {
            Some(name) => frame(
                &[
                    (":message-type", "exception"),
                    (":exception-type", name),
                    (":content-type", "application/json"),
                ],
                event.data.as_bytes(),
            ),
            None => frame(
                &[
                    (":message-type", "event"),
                    (":event-type", &event.event),
                    (":content-type", "application/json"),
                ],
                event.data.as_bytes(),
            ),
        };
        out.extend(bytes);
    }
    out
}

pub struct Harness;

impl VendorHarness for Harness {
    fn vendor(&self) -> &'static str {
        "bedrock"
    }

    fn provider(
        &self,
        server_uri: &str,
        key: Option<Secret>,
        clock: Clock,
    ) -> std::sync::Arc<dyn Provider> {
        std::sync::Arc::new(bedrock(server_uri, key, clock))
    }

    fn completion_path(&self, stream: bool) -> String {
        let op = if stream {
            "converse-stream"
        } else {
            "converse"
        };
        format!("/model/{MODEL_SEGMENT}/{op}")
    }

    fn health_path(&self) -> Option<String> {
        Some(format!("/foundation-models/{MODEL_SEGMENT}"))
    }

    fn view(&self, request: &Request) -> RequestView {
        // the credential the request proves: the suite's secret, when its signature is
        // the one that secret makes
        let credential = match signature_problem(request, KEY, SESSION_TOKEN) {
            None if request.headers.contains_key("authorization") => Some(KEY.to_owned()),
            None => None,
            Some(problem) => Some(format!("<{problem}>")),
        };
        let path = request.url.path();
        let model = path.split('/').nth(2).map(|m| m.replace("%3A", ":"));
        let mut view = RequestView {
            model,
            stream: path.ends_with("/converse-stream"),
            credential,
            ..RequestView::default()
        };
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return view;
        };
        view.system = body["system"].as_array().map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        });
        view.max_tokens = body["inferenceConfig"]["maxTokens"]
            .as_u64()
            .map(|n| u32::try_from(n).unwrap());
        view.tools = body["toolConfig"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["toolSpec"]["name"].as_str().map(str::to_owned))
            .collect();
        let choice = &body["toolConfig"]["toolChoice"];
        view.tool_choice = if choice.get("auto").is_some() {
            Some(ToolChoice::Auto)
        } else if choice.get("any").is_some() {
            Some(ToolChoice::Required)
        } else {
            choice["tool"]["name"]
                .as_str()
                .map(|n| ToolChoice::Tool(n.to_owned()))
        };
        for message in body["messages"].as_array().into_iter().flatten() {
            let assistant = message["role"] == "assistant";
            let mut turn = Turn::text(
                if assistant {
                    Role::Assistant
                } else {
                    Role::User
                },
                "",
            );
            for block in message["content"].as_array().into_iter().flatten() {
                if let Some(text) = block["text"].as_str() {
                    turn.text.push_str(text);
                } else if let Some(image) = block.get("image") {
                    turn.images.push(ImageSource::Base64 {
                        media_type: format!("image/{}", image["format"].as_str().unwrap()),
                        data: image["source"]["bytes"].as_str().unwrap().to_owned(),
                    });
                } else if let Some(call) = block.get("toolUse") {
                    turn.tool_calls.push(ToolCall {
                        id: call["toolUseId"].as_str().unwrap().to_owned(),
                        name: call["name"].as_str().unwrap().to_owned(),
                        arguments: call["input"].to_string(),
                    });
                } else if let Some(result) = block.get("toolResult") {
                    turn.role = Role::Tool;
                    turn.tool_result_for = result["toolUseId"].as_str().map(str::to_owned);
                    for part in result["content"].as_array().into_iter().flatten() {
                        match (part.get("text"), part.get("json")) {
                            (Some(Value::String(t)), _) => turn.text.push_str(t),
                            (_, Some(json)) => turn.text.push_str(&json.to_string()),
                            _ => {}
                        }
                    }
                }
            }
            view.turns.push(turn);
        }
        view
    }

    fn error_body(&self, _status: u16, message: &str) -> Value {
        json!({ "message": message })
    }

    fn stream_body(&self, sse: &str) -> (Vec<u8>, &'static str) {
        (frames(sse), "application/vnd.amazon.eventstream")
    }

    fn takes_image_urls(&self) -> bool {
        false
    }
}

/// A Bedrock endpoint that checks the signature with the test's credentials first:
/// `InvalidSignatureException` (403) when it is wrong, else `answer`.
struct Verifying {
    answer: ResponseTemplate,
}

impl Respond for Verifying {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match signature_problem(request, KEY, SESSION_TOKEN) {
            None if request.headers.contains_key("authorization") => self.answer.clone(),
            _ => ResponseTemplate::new(403)
                .insert_header(
                    "x-amzn-ErrorType",
                    "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/",
                )
                .set_body_json(json!({"message": "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."})),
        }
    }
}

fn suite_clock() -> Clock {
    Clock::anchored_at(SUITE_NOW_MS)
}

async fn verifying_server(stream: bool, answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(stream)))
        .respond_with(Verifying { answer })
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn a_wrong_secret_is_refused_as_auth_without_the_secret_in_the_error() {
    let answer = ResponseTemplate::new(200).set_body_raw(
        fixture("bedrock", "completion_text.json"),
        "application/json",
    );
    let server = verifying_server(false, answer).await;
    let good = bedrock(&server.uri(), Some(Secret::new(KEY)), suite_clock());
    let reply = good.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.text, crate::suite::ANSWER);

    let wrong = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYWRONGKEY";
    let bad = bedrock(&server.uri(), Some(Secret::new(wrong)), suite_clock());
    let err = bad
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert_eq!(err.status, Some(403));
    assert_eq!(
        err.vendor_code.as_deref(),
        Some("InvalidSignatureException")
    );
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(
            !text.contains(wrong) && !text.contains(SESSION_TOKEN),
            "{text}"
        );
    }
    // unsigned: refused the same way
    let unsigned = bedrock(&server.uri(), None, suite_clock());
    let err = unsigned
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
}

#[tokio::test]
async fn a_signed_stream_of_real_frames_carries_text_and_usage() {
    let (body, media) = Harness.stream_body(&fixture("bedrock", "stream_text.sse"));
    let server = verifying_server(true, ResponseTemplate::new(200).set_body_raw(body, media)).await;
    let p = bedrock(&server.uri(), Some(Secret::new(KEY)), suite_clock());
    let items =
        crate::suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let (text, _, _, usage) = crate::suite::assemble(&items);
    assert_eq!(text, crate::suite::ANSWER);
    assert_eq!(usage, Some(crate::suite::answer_usage()));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests[0].headers["accept"],
        "application/vnd.amazon.eventstream"
    );

    // the same stream signed with a wrong secret never starts
    let bad = bedrock(
        &server.uri(),
        Some(Secret::new("not-the-secret")),
        suite_clock(),
    );
    let Err(err) = bad.stream(&ChatRequest::from_prompt(PROMPT)).await else {
        panic!("a bad signature must fail the stream call")
    };
    assert_eq!(err.kind, ErrorKind::Auth);
}

#[tokio::test]
async fn a_corrupted_frame_mid_stream_is_malformed() {
    let mut body = frames(&fixture("bedrock", "stream_text.sse"));
    let first = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
    body[first + 20] ^= 0x55; // inside the second frame
    let server = verifying_server(
        true,
        ResponseTemplate::new(200).set_body_raw(body, "application/vnd.amazon.eventstream"),
    )
    .await;
    let p = bedrock(&server.uri(), Some(Secret::new(KEY)), suite_clock());
    let items =
        crate::suite::collect(p.stream(&ChatRequest::from_prompt(PROMPT)).await.unwrap()).await;
    let last = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(last.kind, ErrorKind::Malformed, "{last}");
}

#[tokio::test]
async fn the_session_token_is_scrubbed_from_errors_and_stream_exceptions() {
    let echo = format!("token {SESSION_TOKEN} and secret {KEY} are wrong");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(false)))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"message": echo})))
        .mount(&server)
        .await;
    let stream = frames(&format!(
        "event: exception:validationException\ndata: {}\n\n",
        json!({"message": echo})
    ));
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(true)))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(stream, "application/vnd.amazon.eventstream"),
        )
        .mount(&server)
        .await;
    let p = bedrock(&server.uri(), Some(Secret::new(KEY)), suite_clock());
    let sent = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    let streamed = p
        .stream(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap()
        .next()
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(streamed.kind, ErrorKind::BadRequest);
    for err in [sent, streamed] {
        let text = format!("{err} {err:?}");
        assert!(
            !text.contains(SESSION_TOKEN) && !text.contains(KEY),
            "{text}"
        );
        assert!(text.contains("[redacted]"), "{text}");
    }
}

#[tokio::test]
async fn a_bedrock_api_key_goes_as_a_bearer_token_unsigned() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(false)))
        .and(wiremock::matchers::header(
            "authorization",
            format!("Bearer {KEY}").as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("bedrock", "completion_text.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = BedrockConfig::new(REGION, MODEL);
    config.base_url = Some(server.uri());
    config.api_key = Some(Secret::new(KEY));
    let p = Bedrock::new(config, &Transport::default()).unwrap();
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    let request = &server.received_requests().await.unwrap()[0];
    assert!(!request.headers.contains_key("x-amz-date"));
}

#[tokio::test]
async fn a_profile_file_signs_and_a_wrong_one_is_refused() {
    use switchyard::provider::bedrock::profile::{ProfileFile, DEFAULT_RECHECK};
    let answer = ResponseTemplate::new(200).set_body_raw(
        fixture("bedrock", "completion_text.json"),
        "application/json",
    );
    let server = verifying_server(false, answer).await;
    let dir = std::env::temp_dir().join(format!("sy-bedrock-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (profile, secret, ok) in [("good", KEY, true), ("bad", "not-the-secret", false)] {
        let path = dir.join(format!("credentials-{profile}"));
        std::fs::write(
            &path,
            format!(
                "[{profile}]\naws_access_key_id = {ACCESS_KEY_ID}\naws_secret_access_key = {secret}\naws_session_token = {SESSION_TOKEN}\n"
            ),
        )
        .unwrap();
        let mut config = BedrockConfig::new(REGION, MODEL);
        config.base_url = Some(server.uri());
        config.profile_file = Some(std::sync::Arc::new(ProfileFile::new(
            &path,
            profile,
            DEFAULT_RECHECK,
        )));
        let p = Bedrock::new(config, &Transport::default()).unwrap();
        let sent = p.send(&ChatRequest::from_prompt(PROMPT)).await;
        match sent {
            Ok(reply) => {
                assert!(ok);
                assert_eq!(reply.text, crate::suite::ANSWER);
            }
            Err(err) => {
                assert!(!ok, "{err}");
                assert_eq!(err.kind, ErrorKind::Auth);
                assert!(!format!("{err:?}").contains(SESSION_TOKEN));
            }
        }
    }
}
