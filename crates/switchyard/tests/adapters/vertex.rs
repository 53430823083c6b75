//! Vertex AI in the shared suite (Gemini on the Gemini fixtures, Claude on the Anthropic
//! fixtures), behind a token endpoint that verifies what Google's does: the JWT's RS256
//! signature against the test key's public half (`tests/fixtures/vertex/`, test only), its
//! issuer, audience, scope and expiry. Plus what only Vertex does: the token refreshed
//! before it expires, one exchange for many concurrent calls, the exchange's failures
//! classified without the key, Claude's body (`anthropic_version`, no `model`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{json, Value};
use switchyard::clock::Clock;
use switchyard::provider::http::{HttpSettings, Transport};
use switchyard::provider::secret::Secret;
use switchyard::provider::token::TokenSource;
use switchyard::provider::vertex::auth::{
    ServiceAccount, ServiceAccountTokens, CLOUD_PLATFORM_SCOPE,
};
use switchyard::provider::vertex::{Vertex, VertexConfig};
use switchyard::{ChatRequest, ErrorKind, Provider};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::suite::{fixture, RequestView, VendorHarness, KEY, PROMPT};

pub(crate) const PROJECT: &str = "acme-prod";
pub(crate) const LOCATION: &str = "us-east5";
const EMAIL: &str = "gateway@acme-prod.iam.gserviceaccount.com";

fn key_pem(name: &str) -> String {
    fixture("vertex", name)
}

/// The token endpoint: checks the grant, the signature (the test key's public half) and
/// the claims; answers `tokens` in turn (the last one again when they run out).
struct TokenEndpoint {
    audience: String,
    tokens: Vec<String>,
    expires_in: u64,
    issued: Arc<AtomicUsize>,
}

#[derive(Deserialize)]
struct Claims {
    scope: String,
    iat: u64,
    exp: u64,
}

impl Respond for TokenEndpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let refuse = |why: &str| {
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": "invalid_grant", "error_description": why}))
        };
        let form: HashMap<String, String> = url::form_urlencoded::parse(&request.body)
            .into_owned()
            .collect();
        if form.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
        {
            return refuse("unsupported grant_type");
        }
        let public =
            DecodingKey::from_rsa_pem(key_pem("TEST-ONLY-public-key.pem").as_bytes()).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_audience(&[&self.audience]);
        validation.set_issuer(&[EMAIL]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let assertion = form.get("assertion").map_or("", String::as_str);
        let claims = match jsonwebtoken::decode::<Claims>(assertion, &public, &validation) {
            Ok(data) => data.claims,
            Err(e) => return refuse(&format!("Invalid JWT: {e}")),
        };
        if claims.scope != CLOUD_PLATFORM_SCOPE || claims.exp > claims.iat + 3600 {
            return refuse("bad scope or lifetime");
        }
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let token = &self.tokens[n.min(self.tokens.len() - 1)];
        ResponseTemplate::new(200).set_body_json(
            json!({"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}),
        )
    }
}

/// Mount a token endpoint on `server` at `/token`; the count of tokens issued.
pub(crate) async fn mount_token_endpoint(
    server: &MockServer,
    tokens: &[&str],
    expires_in: u64,
) -> Arc<AtomicUsize> {
    let issued = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("content-type", "application/x-www-form-urlencoded"))
        .respond_with(TokenEndpoint {
            audience: format!("{}/token", server.uri()),
            tokens: tokens.iter().map(|t| (*t).to_owned()).collect(),
            expires_in,
            issued: issued.clone(),
        })
        .mount(server)
        .await;
    issued
}

/// A service-account key file for `token_uri` signed with the key in `pem_fixture`.
pub(crate) fn key_file(token_uri: &str, pem_fixture: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("switchyard-vertex-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sa.json");
    let body = json!({"type": "service_account", "project_id": PROJECT, "private_key_id": "test-key-1",
        "private_key": key_pem(pem_fixture), "client_email": EMAIL, "client_id": "1",
        "token_uri": token_uri});
    std::fs::write(&file, body.to_string()).unwrap();
    file
}

/// The suite's token endpoint, on a runtime of its own (suite tests each have one and a
/// provider is built outside async code): it issues the suite's [`KEY`] as the token.
pub(crate) fn suite_token_uri() -> &'static str {
    static URI: OnceLock<String> = OnceLock::new();
    URI.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let server = MockServer::start().await;
                mount_token_endpoint(&server, &[KEY], 3600).await;
                tx.send(format!("{}/token", server.uri())).unwrap();
                std::future::pending::<()>().await;
            });
        });
        rx.recv().unwrap()
    })
}

pub(crate) fn tokens(key_file: &std::path::Path, clock: Clock) -> Arc<ServiceAccountTokens> {
    let account = ServiceAccount::from_file(key_file).unwrap();
    let http = Transport::default()
        .client(HttpSettings::default())
        .unwrap();
    Arc::new(ServiceAccountTokens::new(
        account,
        CLOUD_PLATFORM_SCOPE,
        http,
        clock,
    ))
}

pub(crate) fn vertex(
    server_uri: &str,
    model: &str,
    credentials: Option<Arc<dyn TokenSource>>,
    clock: Clock,
) -> Arc<dyn Provider> {
    let config = VertexConfig {
        base_url: Some(format!("{server_uri}/v1")),
        credentials,
        clock,
        ..VertexConfig::new(PROJECT, LOCATION, model)
    };
    Vertex::provider(config, &Transport::default()).unwrap()
}

pub(crate) fn model_path(publisher: &str, model: &str) -> String {
    format!("/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/{publisher}/models/{model}")
}

pub(crate) fn bearer(request: &Request) -> Option<String> {
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned)
}

/// Gemini on Vertex.
pub struct GeminiHarness;

/// Claude on Vertex.
pub struct ClaudeHarness;

const GEMINI: &str = "gemini-2.5-flash";
const CLAUDE: &str = "claude-sonnet-4@20250514";

fn suite_provider(
    server_uri: &str,
    model: &str,
    key: Option<Secret>,
    clock: Clock,
) -> Arc<dyn Provider> {
    // the suite's key is what the token endpoint issues; `None` sends no token
    let credentials = key.map(|_| {
        let file = key_file(suite_token_uri(), "TEST-ONLY-private-key.pem");
        // JWT times are checked against the real clock, not the suite's
        tokens(&file, Clock::system()) as Arc<dyn TokenSource>
    });
    vertex(server_uri, model, credentials, clock)
}

impl VendorHarness for GeminiHarness {
    fn vendor(&self) -> &'static str {
        "gemini"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        suite_provider(server_uri, GEMINI, key, clock)
    }

    fn completion_path(&self, stream: bool) -> String {
        let method = if stream {
            "streamGenerateContent"
        } else {
            "generateContent"
        };
        format!("{}:{method}", model_path("google", GEMINI))
    }

    fn health_path(&self) -> Option<String> {
        Some(format!("/v1/publishers/google/models/{GEMINI}"))
    }

    fn view(&self, request: &Request) -> RequestView {
        assert!(request.headers.get("x-goog-api-key").is_none());
        if request.method == wiremock::http::Method::GET {
            return RequestView {
                credential: bearer(request),
                ..RequestView::default()
            };
        }
        let mut moved = request.clone();
        // the Gemini view reads the API key's header and the Gemini API's paths
        let (_, method) = request.url.path().rsplit_once(':').unwrap();
        moved
            .url
            .set_path(&format!("/v1beta/models/{GEMINI}:{method}"));
        let mut view = crate::gemini::Harness.view(&moved);
        view.credential = bearer(request);
        view
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        crate::gemini::Harness.error_body(status, message)
    }
}

impl VendorHarness for ClaudeHarness {
    fn vendor(&self) -> &'static str {
        "anthropic"
    }

    fn provider(&self, server_uri: &str, key: Option<Secret>, clock: Clock) -> Arc<dyn Provider> {
        suite_provider(server_uri, CLAUDE, key, clock)
    }

    fn completion_path(&self, stream: bool) -> String {
        let method = if stream {
            "streamRawPredict"
        } else {
            "rawPredict"
        };
        format!("{}:{method}", model_path("anthropic", CLAUDE))
    }

    fn health_path(&self) -> Option<String> {
        Some(format!("/v1/publishers/anthropic/models/{CLAUDE}"))
    }

    fn view(&self, request: &Request) -> RequestView {
        if request.method == wiremock::http::Method::GET {
            return RequestView {
                credential: bearer(request),
                ..RequestView::default()
            };
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
        assert!(body.get("model").is_none(), "the URL names the model");
        assert!(request.headers.get("anthropic-version").is_none());
        let mut view = crate::anthropic::Harness.view(request);
        view.model = request
            .url
            .path()
            .rsplit_once("/models/")
            .and_then(|(_, m)| m.split_once(':'))
            .map(|(m, _)| m.to_owned());
        view.credential = bearer(request);
        view
    }

    fn error_body(&self, status: u16, message: &str) -> Value {
        crate::anthropic::Harness.error_body(status, message)
    }
}

fn gemini_reply() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(
        fixture("gemini", "completion_text.json"),
        "application/json",
    )
}

/// The Vertex mock answers only the token the endpoint issued; a call with another is
/// refused (401), and the provider reads that as `Auth`.
#[tokio::test]
async fn vertex_accepts_only_the_issued_token() {
    let server = MockServer::start().await;
    let issued = mount_token_endpoint(&server, &["ya29.issued-token"], 3600).await;
    Mock::given(method("POST"))
        .and(path(format!(
            "{}:generateContent",
            model_path("google", GEMINI)
        )))
        .and(header("authorization", "Bearer ya29.issued-token"))
        .respond_with(gemini_reply())
        .expect(2)
        .mount(&server)
        .await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let p = vertex(
        &server.uri(),
        GEMINI,
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(issued.load(Ordering::SeqCst), 1, "the token is cached");
    server.verify().await;
}

/// An assertion signed with another key is refused by the token endpoint: the call fails
/// as `Auth`, and its error shows neither the key nor the assertion.
#[tokio::test]
async fn a_wrong_signature_is_an_auth_error_without_the_key() {
    let server = MockServer::start().await;
    let issued = mount_token_endpoint(&server, &["never"], 3600).await;
    Mock::given(method("POST"))
        .respond_with(gemini_reply())
        .expect(0)
        .mount(&server)
        .await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-other-private-key.pem",
    );
    let p = vertex(
        &server.uri(),
        GEMINI,
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth, "{err}");
    assert!(err.message.contains("invalid_grant"), "{err}");
    assert_eq!(issued.load(Ordering::SeqCst), 0);
    let pem = key_pem("TEST-ONLY-other-private-key.pem");
    let key_line = pem.lines().nth(1).unwrap();
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(!text.contains(key_line) && !text.contains("eyJ"), "{text}");
    }
}

/// The token endpoint failing: 5xx is `Server`, unreachable is `Connection`.
#[tokio::test]
async fn a_failing_exchange_is_classified() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(503).set_body_string("backend unavailable"))
        .mount(&server)
        .await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let p = vertex(
        &server.uri(),
        GEMINI,
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server, "{err}");
    assert_eq!(err.status, Some(503));

    let closed = crate::raw::closed_port_uri().await;
    let file = key_file(&format!("{closed}/token"), "TEST-ONLY-private-key.pem");
    let p = vertex(
        &server.uri(),
        GEMINI,
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    let err = p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Connection, "{err}");
    assert!(err.message.contains("token exchange"), "{err}");
}

/// A token is used until five minutes before it expires, then replaced (a manual clock
/// moves time; nothing sleeps).
#[tokio::test]
async fn the_token_is_refreshed_before_it_expires() {
    let server = MockServer::start().await;
    let issued = mount_token_endpoint(&server, &["ya29.first", "ya29.second"], 600).await;
    Mock::given(method("POST"))
        .and(path(format!(
            "{}:generateContent",
            model_path("google", GEMINI)
        )))
        .respond_with(gemini_reply())
        .mount(&server)
        .await;
    let clock = Clock::manual(Clock::system().unix_ms());
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let p = vertex(&server.uri(), GEMINI, Some(tokens(&file, clock)), clock);
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    clock.advance(Duration::from_secs(4 * 60)); // 6 minutes left
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    clock.advance(Duration::from_secs(2 * 60)); // 4 minutes left: inside the margin
    p.send(&ChatRequest::from_prompt(PROMPT)).await.unwrap();
    assert_eq!(issued.load(Ordering::SeqCst), 2);
    let sent: Vec<Option<String>> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() != "/token")
        .map(bearer)
        .collect();
    assert_eq!(
        sent,
        [
            Some("ya29.first".into()),
            Some("ya29.first".into()),
            Some("ya29.second".into())
        ]
    );
}

/// Concurrent calls with no token share one exchange.
#[tokio::test]
async fn concurrent_calls_share_one_exchange() {
    let server = MockServer::start().await;
    let issued = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(DelayedToken(TokenEndpoint {
            audience: format!("{}/token", server.uri()),
            tokens: vec!["ya29.shared".into()],
            expires_in: 3600,
            issued: issued.clone(),
        }))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(format!(
            "{}:generateContent",
            model_path("google", GEMINI)
        )))
        .and(header("authorization", "Bearer ya29.shared"))
        .respond_with(gemini_reply())
        .expect(12)
        .mount(&server)
        .await;
    let file = key_file(
        &format!("{}/token", server.uri()),
        "TEST-ONLY-private-key.pem",
    );
    let p = vertex(
        &server.uri(),
        GEMINI,
        Some(tokens(&file, Clock::system())),
        Clock::system(),
    );
    let req = ChatRequest::from_prompt(PROMPT);
    let calls = (0..12).map(|_| p.send(&req));
    for reply in futures_util::future::join_all(calls).await {
        reply.unwrap();
    }
    assert_eq!(issued.load(Ordering::SeqCst), 1);
    server.verify().await;
}

/// A token endpoint slow enough that every concurrent call finds the token missing.
struct DelayedToken(TokenEndpoint);

impl Respond for DelayedToken {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0
            .respond(request)
            .set_delay(Duration::from_millis(200))
    }
}

/// Locations: a region has its own host, `global` the bare one; Claude is chosen by name.
#[test]
fn roots_and_publishers() {
    let regional = VertexConfig::new(PROJECT, "europe-west4", GEMINI);
    assert_eq!(
        regional.root(),
        "https://europe-west4-aiplatform.googleapis.com/v1"
    );
    assert_eq!(regional.publisher(), "google");
    let global = VertexConfig::new(PROJECT, "global", CLAUDE);
    assert_eq!(global.root(), "https://aiplatform.googleapis.com/v1");
    assert_eq!(global.publisher(), "anthropic");
    for bad in [
        VertexConfig::new("", LOCATION, GEMINI),
        VertexConfig::new(PROJECT, "", GEMINI),
        VertexConfig::new(PROJECT, "us east", GEMINI),
        VertexConfig {
            publisher: Some("meta".into()),
            ..VertexConfig::new(PROJECT, LOCATION, GEMINI)
        },
    ] {
        assert!(Vertex::provider(bad, &Transport::default()).is_err());
    }
}

/// A key file that is not one says which field is wrong, never what the key holds.
#[test]
fn malformed_key_files_are_named() {
    let pem = key_pem("TEST-ONLY-private-key.pem");
    let cases = [
        ("not json".to_owned(), "not a service-account JSON key file"),
        (json!({"type": "authorized_user"}).to_string(), "\"type\" is \"authorized_user\""),
        (json!({"type": "service_account", "private_key": pem, "token_uri": "https://oauth2.googleapis.com/token"}).to_string(), "no \"client_email\""),
        (json!({"type": "service_account", "client_email": EMAIL, "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "token_uri": "https://oauth2.googleapis.com/token"}).to_string(), "not an RSA private key"),
    ];
    for (text, expected) in cases {
        let err = ServiceAccount::from_json(&text).unwrap_err();
        assert!(err.0.contains(expected), "{err}");
        assert!(!err.0.contains("BEGIN"), "{err}");
    }
}

/// Claude on Vertex answers JSON through the forced tool unless the provider says Vertex
/// has structured outputs on (Google turns them on per organisation policy).
#[tokio::test]
async fn claude_json_is_a_forced_tool_unless_structured_outputs_are_on() {
    let server = MockServer::start().await;
    let reply = json!({"type": "message", "role": "assistant", "model": CLAUDE,
        "stop_reason": "tool_use", "content": [{"type": "tool_use", "id": "toolu_1",
        "name": "place", "input": {"city": "Paris"}}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .mount(&server)
        .await;
    let mut req = ChatRequest::from_prompt("I flew to Paris.");
    req.response_format = Some(switchyard::chat::ResponseFormat::JsonSchema {
        name: "place".into(),
        schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        strict: Some(true),
    });
    for on in [false, true] {
        let config = VertexConfig {
            base_url: Some(format!("{}/v1", server.uri())),
            structured_outputs: on,
            ..VertexConfig::new(PROJECT, LOCATION, CLAUDE)
        };
        let p = Vertex::provider(config, &Transport::default()).unwrap();
        let answer = p.send(&req).await.unwrap();
        let sent = server.received_requests().await.unwrap();
        let body: Value = serde_json::from_slice(&sent.last().unwrap().body).unwrap();
        assert_eq!(body.get("output_config").is_some(), on, "{body}");
        assert_eq!(body.get("tool_choice").is_some(), !on, "{body}");
        if !on {
            assert_eq!(answer.text, r#"{"city":"Paris"}"#);
            assert!(answer.tool_calls.is_empty());
        }
    }
}
