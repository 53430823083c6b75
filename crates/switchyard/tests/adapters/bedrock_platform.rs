//! Bedrock signing with credentials the platform issues, each source behind a mock that
//! verifies what the real service verifies:
//! - STS: a form POST with `Action=AssumeRoleWithWebIdentity`, `Version=2011-06-15`, the
//!   role ARN, a session name and `WebIdentityToken` equal to the token file's content,
//!   answered with the documented XML (or its `ErrorResponse`);
//! - the container credentials endpoint: `Authorization` must be the token file's content;
//! - instance metadata (IMDSv2): `PUT /latest/api/token` needs the TTL header, and every
//!   `GET` the session token it gave, else 401.
//!
//! Each issues numbered session credentials; the Bedrock mock recomputes the SigV4
//! signature (`bedrock::signature_problem`) with the newest ones only, so a signed call
//! proves the issued credentials were used. Time is a manual clock: refreshing before the
//! expiry is shown by moving it.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::bedrock::{signature_problem, Harness, ACCESS_KEY_ID, MODEL, REGION};
use crate::suite::{fixture, VendorHarness, ANSWER, PROMPT, SUITE_NOW_MS};

const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/bedrock-gateway";
const SESSION_NAME: &str = "switchyard-test";
const ONE_HOUR: Duration = Duration::from_secs(3600);

/// The credentials a mock issued last (generation `n`: `platform-secret-n`, `…-token-n`).
#[derive(Clone, Default)]
struct Issuance(Arc<Mutex<u32>>);

impl Issuance {
    fn next(&self) -> (String, String, u32) {
        let mut n = self.0.lock().unwrap();
        *n += 1;
        (
            format!("platform/secret+{n}-wJalrXUtnFEMI"),
            format!("platform-session-token-{n}-IQoJb3JpZ2luX2Vj"),
            *n,
        )
    }

    fn current(&self) -> (String, String) {
        let n = *self.0.lock().unwrap();
        (
            format!("platform/secret+{n}-wJalrXUtnFEMI"),
            format!("platform-session-token-{n}-IQoJb3JpZ2luX2Vj"),
        )
    }

    fn count(&self) -> u32 {
        *self.0.lock().unwrap()
    }
}

/// The ISO 8601 time `after` past the manual clock's reading.
fn expiration(clock: &Clock, after: Duration) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(clock.unix_ms()) + after;
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Bedrock: the answer for a request signed with the newest issued credentials, else 403.
struct SignedWithIssued(Issuance);

impl Respond for SignedWithIssued {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let (secret, token) = self.0.current();
        match signature_problem(request, &secret, &token) {
            None if request.headers.contains_key("authorization") => ResponseTemplate::new(200)
                .set_body_raw(
                    fixture("bedrock", "completion_text.json"),
                    "application/json",
                ),
            problem => ResponseTemplate::new(403)
                .insert_header("x-amzn-ErrorType", "InvalidSignatureException")
                .set_body_json(json!({"message": format!("signature: {problem:?}")})),
        }
    }
}

async fn bedrock_mock(issued: &Issuance) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Harness.completion_path(false)))
        .respond_with(SignedWithIssued(issued.clone()))
        .mount(&server)
        .await;
    server
}

fn provider(bedrock: &MockServer, issuer: impl Issuer + 'static, clock: Clock) -> Bedrock {
    let mut config = BedrockConfig::new(REGION, MODEL);
    config.base_url = Some(bedrock.uri());
    config.clock = clock;
    config.platform = Some(Arc::new(PlatformCredentials::new(issuer, clock)));
    Bedrock::new(config, &Transport::default()).unwrap()
}

fn scratch(name: &str, content: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sy-platform-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// STS: checks the form as AWS does, the token against the file's content now.
struct Sts {
    token_file: PathBuf,
    issued: Issuance,
    clock: Clock,
}

impl Respond for Sts {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(&request.body)
                .into_owned()
                .collect();
        let field = |name: &str| form.get(name).map(String::as_str);
        let content_type = request
            .headers
            .get("content-type")
            .unwrap()
            .to_str()
            .unwrap();
        let token = std::fs::read_to_string(&self.token_file).unwrap();
        let error = |status: u16, code: &str, message: &str| {
            ResponseTemplate::new(status).set_body_raw(
                format!("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>4fd6-test</RequestId></ErrorResponse>"),
                "text/xml",
            )
        };
        if content_type != "application/x-www-form-urlencoded"
            || field("Action") != Some("AssumeRoleWithWebIdentity")
            || field("Version") != Some("2011-06-15")
        {
            return error(400, "InvalidAction", "Could not find operation");
        }
        if field("RoleArn") != Some(ROLE_ARN) || field("RoleSessionName") != Some(SESSION_NAME) {
            return error(400, "ValidationError", "RoleArn or RoleSessionName");
        }
        if request.headers.contains_key("authorization") {
            return error(
                400,
                "InvalidRequest",
                "AssumeRoleWithWebIdentity is unsigned",
            );
        }
        if field("WebIdentityToken") != Some(token.trim()) {
            return error(
                400,
                "InvalidIdentityToken",
                "Couldn't retrieve verification key from your identity provider",
            );
        }
        let (secret, session, _) = self.issued.next();
        let expires = expiration(&self.clock, ONE_HOUR);
        ResponseTemplate::new(200).set_body_raw(
            format!(
                "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\
<AssumeRoleWithWebIdentityResult>\
<SubjectFromWebIdentityToken>system:serviceaccount:ai:gateway</SubjectFromWebIdentityToken>\
<Audience>sts.amazonaws.com</Audience>\
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/bedrock-gateway/{SESSION_NAME}</Arn><AssumedRoleId>AROAEXAMPLE:{SESSION_NAME}</AssumedRoleId></AssumedRoleUser>\
<Credentials><SessionToken>{session}</SessionToken><SecretAccessKey>{secret}</SecretAccessKey><Expiration>{expires}</Expiration><AccessKeyId>{ACCESS_KEY_ID}</AccessKeyId></Credentials>\
<Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE</Provider>\
</AssumeRoleWithWebIdentityResult>\
<ResponseMetadata><RequestId>ad4156e9-test</RequestId></ResponseMetadata>\
</AssumeRoleWithWebIdentityResponse>"
            ),
            "text/xml",
        )
    }
}

#[tokio::test]
async fn a_web_identity_is_exchanged_at_sts_and_its_credentials_sign_and_refresh() {
    let clock = Clock::manual(SUITE_NOW_MS);
    let issued = Issuance::default();
    let token_file = scratch(
        "web-identity-token",
        "eyJhbGciOiJSUzI1NiJ9.first-token.sig\n",
    );
    let sts = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/"))
        .respond_with(Sts {
            token_file: token_file.clone(),
            issued: issued.clone(),
            clock,
        })
        .mount(&sts)
        .await;
    let bedrock = bedrock_mock(&issued).await;
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = WebIdentity::new(
        &token_file,
        ROLE_ARN,
        Some(SESSION_NAME.to_owned()),
        &sts.uri(),
        http,
        clock,
    )
    .unwrap();
    let p = provider(&bedrock, issuer, clock);
    for _ in 0..3 {
        let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
        assert_eq!(reply.text, ANSWER);
    }
    assert_eq!(issued.count(), 1, "cached until due");

    // the platform rotates the token; 56 minutes on, the credentials are due (5 minutes
    // before their expiry): a new exchange with the new token, and the new credentials sign
    std::fs::write(&token_file, "eyJhbGciOiJSUzI1NiJ9.second-token.sig").unwrap();
    clock.advance(Duration::from_secs(54 * 60));
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(issued.count(), 1);
    clock.advance(Duration::from_secs(2 * 60));
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert_eq!(issued.count(), 2, "refreshed before the expiry");
    let signed = bedrock.received_requests().await.unwrap();
    let last = signed.last().unwrap();
    assert_eq!(
        last.headers["x-amz-security-token"],
        issued.current().1.as_str()
    );
}

#[tokio::test]
async fn a_refused_web_identity_is_auth_without_the_token() {
    let clock = Clock::manual(SUITE_NOW_MS);
    let issued = Issuance::default();
    let sent_token = "eyJhbGciOiJSUzI1NiJ9.stale-token-4f1c2b9a.sig";
    let token_file = scratch("web-identity-stale", sent_token);
    let accepted = scratch("web-identity-accepted", "another-token");
    let sts = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Sts {
            token_file: accepted,
            issued: issued.clone(),
            clock,
        })
        .expect(1)
        .mount(&sts)
        .await;
    let bedrock = bedrock_mock(&issued).await;
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = WebIdentity::new(
        &token_file,
        ROLE_ARN,
        Some(SESSION_NAME.to_owned()),
        &sts.uri(),
        http,
        clock,
    )
    .unwrap();
    let p = provider(&bedrock, issuer, clock);
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert_eq!(err.vendor_code.as_deref(), Some("InvalidIdentityToken"));
    assert!(err.message.contains("AssumeRoleWithWebIdentity"), "{err}");
    // a second call within the hold does not ask STS again (`expect(1)`)
    let again = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(again.kind, ErrorKind::Auth);
    for text in [format!("{err} {err:?}"), format!("{again:?}")] {
        assert!(!text.contains("stale-token"), "{text}");
    }
    assert!(bedrock.received_requests().await.unwrap().is_empty());
}

/// The container endpoint: credentials for the right `Authorization`, else 401 with
/// ECS's JSON error.
struct ContainerCreds {
    token_file: PathBuf,
    issued: Issuance,
    clock: Clock,
}

impl Respond for ContainerCreds {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let want = std::fs::read_to_string(&self.token_file).unwrap();
        let got = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if got != Some(want.trim()) {
            return ResponseTemplate::new(401).set_body_json(
                json!({"code": "AccessDeniedException", "message": "invalid authorization token"}),
            );
        }
        let (secret, token, _) = self.issued.next();
        ResponseTemplate::new(200).set_body_json(json!({
            "AccessKeyId": ACCESS_KEY_ID,
            "SecretAccessKey": secret,
            "Token": token,
            "AccountId": "123456789012",
            "Expiration": expiration(&self.clock, Duration::from_secs(6 * 3600)),
        }))
    }
}

#[tokio::test]
async fn container_credentials_need_the_authorization_token_and_sign() {
    let clock = Clock::manual(SUITE_NOW_MS);
    let issued = Issuance::default();
    let token_file = scratch("eks-pod-identity-token", "eks-pod-identity-token-7c1d\n");
    let agent = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/credentials"))
        .respond_with(ContainerCreds {
            token_file: token_file.clone(),
            issued: issued.clone(),
            clock,
        })
        .mount(&agent)
        .await;
    let bedrock = bedrock_mock(&issued).await;
    let url = format!("{}/v1/credentials", agent.uri());
    let http = || source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer =
        ContainerEndpoint::full(&url, ContainerAuth::File(token_file.clone()), http()).unwrap();
    let p = provider(&bedrock, issuer, clock);
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.text, ANSWER);
    assert_eq!(issued.count(), 1);
    // refreshed 5 minutes before the 6-hour expiry, reading the rotated token file
    std::fs::write(&token_file, "eks-pod-identity-token-rotated").unwrap();
    clock.advance(Duration::from_secs(6 * 3600 - 299));
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(issued.count(), 2);

    // the wrong token: Auth, the token not shown
    let wrong = "container-token-WRONG-91b2";
    let issuer = ContainerEndpoint::full(&url, ContainerAuth::Token(wrong.into()), http()).unwrap();
    let err = provider(&bedrock, issuer, clock)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(err.message.contains("HTTP 401"), "{err}");
    assert!(!format!("{err:?}").contains(wrong), "{err:?}");
    // a plain-http full URI to another host is refused when built
    let refused = ContainerEndpoint::full("http://10.1.2.3/creds", ContainerAuth::None, http());
    assert!(refused.is_err());
}

/// IMDSv2: the token PUT needs its TTL header; the GETs need the token.
struct Imds {
    issued: Issuance,
    clock: Clock,
}

const IMDS_TOKEN: &str = "AQAEAImdsSessionToken-5c0ffee==";

impl Respond for Imds {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
        let url = request.url.path();
        if request.method.as_str() == "PUT" && url == "/latest/api/token" {
            return match header("x-aws-ec2-metadata-token-ttl-seconds") {
                Some(ttl) if ttl.parse::<u32>().is_ok_and(|t| (1..=21_600).contains(&t)) => {
                    ResponseTemplate::new(200).set_body_string(IMDS_TOKEN)
                }
                _ => ResponseTemplate::new(400),
            };
        }
        if request.method.as_str() != "GET"
            || header("x-aws-ec2-metadata-token") != Some(IMDS_TOKEN)
        {
            return ResponseTemplate::new(401);
        }
        match url {
            "/latest/meta-data/iam/security-credentials/" => {
                ResponseTemplate::new(200).set_body_string("bedrock-instance-role")
            }
            "/latest/meta-data/iam/security-credentials/bedrock-instance-role" => {
                let (secret, token, _) = self.issued.next();
                ResponseTemplate::new(200).set_body_json(json!({
                    "Code": "Success",
                    "LastUpdated": "2026-11-29T09:00:00Z",
                    "Type": "AWS-HMAC",
                    "AccessKeyId": ACCESS_KEY_ID,
                    "SecretAccessKey": secret,
                    "Token": token,
                    "Expiration": expiration(&self.clock, ONE_HOUR),
                }))
            }
            _ => ResponseTemplate::new(404),
        }
    }
}

#[tokio::test]
async fn instance_metadata_v2_credentials_sign_and_refresh() {
    let clock = Clock::manual(SUITE_NOW_MS);
    let issued = Issuance::default();
    let imds = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Imds {
            issued: issued.clone(),
            clock,
        })
        .mount(&imds)
        .await;
    let bedrock = bedrock_mock(&issued).await;
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = InstanceMetadata::new(&imds.uri(), http).unwrap();
    let p = provider(&bedrock, issuer, clock);
    let reply = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(reply.text, ANSWER);
    clock.advance(Duration::from_secs(3600 - 300));
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(issued.count(), 2);
    let seen = imds.received_requests().await.unwrap();
    let methods: Vec<_> = seen
        .iter()
        .map(|r| format!("{} {}", r.method, r.url.path()))
        .collect();
    assert_eq!(
        methods[..3],
        [
            "PUT /latest/api/token",
            "GET /latest/meta-data/iam/security-credentials/",
            "GET /latest/meta-data/iam/security-credentials/bedrock-instance-role",
        ]
    );
    // the mock refuses a GET without the session token: IMDSv1 is never relied on
    let unauthenticated = seen.iter().filter(|r| {
        r.method.as_str() == "GET" && !r.headers.contains_key("x-aws-ec2-metadata-token")
    });
    assert_eq!(unauthenticated.count(), 0);
}

#[tokio::test]
async fn an_unreachable_instance_metadata_service_is_auth() {
    let clock = Clock::manual(SUITE_NOW_MS);
    let issued = Issuance::default();
    let bedrock = bedrock_mock(&issued).await;
    // a port nothing listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let http = source_client(&Transport::default(), LOCAL_CONNECT_TIMEOUT).unwrap();
    let issuer = InstanceMetadata::new(&format!("http://{addr}"), http).unwrap();
    let err = provider(&bedrock, issuer, clock)
        .send(&ChatRequest::from_prompt(PROMPT))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(err.message.contains("IMDSv2 session token"), "{err}");
}
