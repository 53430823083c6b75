//! Hostile auth endpoints: a token endpoint or credential source answering off-spec bodies
//! that carry credentials (a Vertex token answer whose `expires_in` is a string, STS or
//! container XML/JSON with an unreadable `Expiration`, refusals that echo a token). The
//! answer cannot be used, so the gateway fails the call, and the error it makes (what the
//! 502 body, the request log and the admin views show) quotes the answer: every
//! credential in it must be masked first, whether its field is named like one or it only
//! looks like one.

use serde_json::json;
use switchyard::clock::Clock;
use switchyard::provider::bedrock::platform::container::{ContainerAuth, ContainerEndpoint};
use switchyard::provider::bedrock::platform::imds::InstanceMetadata;
use switchyard::provider::bedrock::platform::web_identity::WebIdentity;
use switchyard::provider::bedrock::platform::{
    source_client, Issuer, PlatformCredentials, LOCAL_CONNECT_TIMEOUT,
};
use switchyard::provider::bedrock::{Bedrock, BedrockConfig};
use switchyard::provider::http::Transport;
use switchyard::{ChatRequest, ErrorKind, Provider, ProviderError};
use wiremock::matchers::{any, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::bedrock::{MODEL, REGION};
use crate::suite::{PROMPT, SUITE_NOW_MS};
use crate::vertex::{key_file, tokens, vertex};

/// Shaped like a Google access token.
const ACCESS_TOKEN: &str = "ya29.a0AfB_byDh4kx9QHostileAccessToken0123456789";
/// Short and plain: only its field's name gives it away.
const SHORT_TOKEN: &str = "tok-7731";
/// Shaped like a JWT (an OpenID Connect `id_token`).
const ID_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJlLWJ5dGVz";
/// Shaped like an AWS session token and secret key.
const SESSION_TOKEN: &str = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD4hostile==";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHOSTILEKEY";

/// Not one 8-character piece of any `secrets` appears in `err`, shown or debugged.
fn assert_hidden(err: &ProviderError, secrets: &[&str]) {
    let text = format!("{err} {err:?}");
    for secret in secrets {
        let bytes = secret.as_bytes();
        for piece in bytes.windows(8) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(
                !text.contains(piece),
                "{piece:?} of a credential in: {text}"
            );
        }
    }
}

async fn vertex_error(answer: ResponseTemplate) -> ProviderError {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(answer)
        .mount(&server)
        .await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let p = vertex(
        &server.uri(),
        "gemini-2.5-flash",
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err()
}

#[tokio::test]
async fn a_vertex_token_answer_off_spec_does_not_leak_its_tokens() {
    // the audit's case: a good token beside a string `expires_in`
    let err = vertex_error(ResponseTemplate::new(200).set_body_json(json!({
        "access_token": ACCESS_TOKEN, "expires_in": "3599", "token_type": "Bearer"})))
    .await;
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(err.message.contains("not a token answer"), "{err}");
    assert!(
        err.message.contains("expires_in"),
        "the answer is still quoted: {err}"
    );
    assert_hidden(&err, &[ACCESS_TOKEN]);

    let err = vertex_error(ResponseTemplate::new(200).set_body_json(json!({
        "access_token": SHORT_TOKEN, "expires_in": {"seconds": 3599},
        "id_token": ID_TOKEN, "refresh_token": "1//0gHostileRefresh-Token_value"})))
    .await;
    assert_hidden(
        &err,
        &[SHORT_TOKEN, ID_TOKEN, "1//0gHostileRefresh-Token_value"],
    );

    // a refusal that echoes what it issued
    let err = vertex_error(ResponseTemplate::new(400).set_body_json(json!({
        "error": "invalid_grant", "error_description": format!("token {ACCESS_TOKEN} revoked"),
        "id_token": ID_TOKEN})))
    .await;
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(err.message.contains("invalid_grant"), "{err}");
    assert_hidden(&err, &[ACCESS_TOKEN, ID_TOKEN]);
}

fn bedrock_with(issuer: impl Issuer + 'static, clock: Clock) -> Bedrock {
    let mut config = BedrockConfig::new(REGION, MODEL);
    // never reached: every case fails at the credential source
    config.base_url = Some("http://127.0.0.1:9".to_owned());
    config.clock = clock;
    config.platform = Some(std::sync::Arc::new(PlatformCredentials::new(issuer, clock)));
    Bedrock::new(config, &Transport::default()).unwrap()
}

async fn bedrock_error(issuer: impl Issuer + 'static, clock: Clock) -> ProviderError {
    let p = bedrock_with(issuer, clock);
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    err
}

fn token_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sy-auth-answers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, "web-identity-token-sent").unwrap();
    path
}

async fn sts_error(answer: ResponseTemplate) -> ProviderError {
    let clock = Clock::manual(SUITE_NOW_MS);
    let sts = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(answer)
        .mount(&sts)
        .await;
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = WebIdentity::new(
        token_file("sts"),
        "arn:aws:iam::123456789012:role/bedrock-gateway",
        Some("switchyard-test".to_owned()),
        &sts.uri(),
        http,
        clock,
    )
    .unwrap();
    bedrock_error(issuer, clock).await
}

fn sts_answer(session_token: &str, expiration: &str) -> String {
    format!(
        "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>\
         <SessionToken>{session_token}</SessionToken><SecretAccessKey>{SECRET_KEY}</SecretAccessKey>\
         <Expiration>{expiration}</Expiration><AccessKeyId>ASIAEXAMPLE</AccessKeyId>\
         </Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
    )
}

#[tokio::test]
async fn sts_answers_off_spec_do_not_leak_credentials() {
    // an Expiration that is no time, and one that is the token itself
    let err = sts_error(
        ResponseTemplate::new(200).set_body_string(sts_answer(SESSION_TOKEN, "in an hour")),
    )
    .await;
    assert!(err.message.contains("Expiration"), "{err}");
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
    let err = sts_error(
        ResponseTemplate::new(200).set_body_string(sts_answer(SESSION_TOKEN, SESSION_TOKEN)),
    )
    .await;
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
    // a refusal whose message echoes credentials, and one that is not STS's XML at all
    let refusal = format!(
        "<ErrorResponse><Error><Code>ExpiredTokenException</Code><Message>token {SESSION_TOKEN} \
         expired; SecretAccessKey={SECRET_KEY}</Message></Error></ErrorResponse>"
    );
    let err = sts_error(ResponseTemplate::new(400).set_body_string(refusal)).await;
    assert_eq!(err.vendor_code.as_deref(), Some("ExpiredTokenException"));
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
    let err = sts_error(
        ResponseTemplate::new(500).set_body_string(sts_answer(SHORT_TOKEN, "2026-12-01T22:00:00Z")),
    )
    .await;
    assert!(err.message.contains("HTTP 500"), "{err}");
    assert_hidden(&err, &[SHORT_TOKEN, SECRET_KEY]);
}

async fn container_error(answer: ResponseTemplate) -> ProviderError {
    let agent = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/credentials"))
        .respond_with(answer)
        .mount(&agent)
        .await;
    let url = format!("{}/v1/credentials", agent.uri());
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = ContainerEndpoint::full(&url, ContainerAuth::None, http).unwrap();
    bedrock_error(issuer, Clock::manual(SUITE_NOW_MS)).await
}

#[tokio::test]
async fn container_answers_off_spec_do_not_leak_credentials() {
    let creds = |expiration: &str| {
        json!({"AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": SECRET_KEY,
            "Token": SESSION_TOKEN, "Expiration": expiration})
    };
    let err = container_error(ResponseTemplate::new(200).set_body_json(creds("tomorrow"))).await;
    assert!(err.message.contains("Expiration"), "{err}");
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
    let err = container_error(ResponseTemplate::new(200).set_body_json(creds(SESSION_TOKEN))).await;
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
    // an error code whose message echoes the credentials
    let err = container_error(ResponseTemplate::new(200).set_body_json(json!({
        "code": "Throttled", "message": format!("Token={SHORT_TOKEN} SecretAccessKey: {SECRET_KEY}")})))
    .await;
    assert_eq!(err.vendor_code.as_deref(), Some("Throttled"));
    assert_hidden(&err, &[SHORT_TOKEN, SECRET_KEY]);
    let err = container_error(ResponseTemplate::new(503).set_body_json(creds("soon"))).await;
    assert!(err.message.contains("HTTP 503"), "{err}");
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
}

#[tokio::test]
async fn instance_metadata_answers_off_spec_do_not_leak_credentials() {
    let imds = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path("/latest/api/token"))
        .respond_with(ResponseTemplate::new(200).set_body_string("AQAEAImdsSession-5c0ffee=="))
        .mount(&imds)
        .await;
    Mock::given(method("GET"))
        .and(path("/latest/meta-data/iam/security-credentials/"))
        .respond_with(ResponseTemplate::new(200).set_body_string("bedrock-role"))
        .mount(&imds)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "Code": "Success", "AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": SECRET_KEY,
            "Token": SESSION_TOKEN, "Expiration": format!("{SESSION_TOKEN}Z")})))
        .mount(&imds)
        .await;
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = InstanceMetadata::new(&imds.uri(), http).unwrap();
    let err = bedrock_error(issuer, Clock::manual(SUITE_NOW_MS)).await;
    assert!(err.message.contains("Expiration"), "{err}");
    assert_hidden(&err, &[SESSION_TOKEN, SECRET_KEY]);
}
