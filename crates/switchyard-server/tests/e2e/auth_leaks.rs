//! A hostile token endpoint against the real binary: Vertex AI's OAuth endpoint answers a
//! good access token beside an off-spec `expires_in` (a string). The call fails (502), and
//! the token appears nowhere the failure is shown: the 502 body, the request log, stderr,
//! `/admin/requests` (list and entry), `/admin/health`, `/admin/overview` and `/metrics`.

use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{chat_body, lines_of, route, Scratch, Server};

const TEST_KEY: &str =
    include_str!("../../../switchyard/tests/fixtures/vertex/TEST-ONLY-private-key.pem");
/// What the hostile endpoint issues: shaped like a Google access token.
const LEAKED: &str = "ya29.a0AfB_byE2eHostileVertexAccessToken7731";
/// An `id_token` beside it, shaped like a JWT.
const ID_TOKEN: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJlMmUtaG9zdGlsZSJ9.c2lnLWJ5dGVz";

#[tokio::test]
async fn an_off_spec_vertex_token_answer_leaks_the_token_nowhere() {
    let google = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "access_token": LEAKED, "expires_in": "3599", "token_type": "Bearer",
            "id_token": ID_TOKEN})))
        .mount(&google)
        .await;
    let scratch = Scratch::new("e2e", "auth-leaks-vertex");
    let key_file = scratch.write(
        "sa.json",
        &json!({"type": "service_account", "project_id": "acme-e2e", "private_key_id": "k1",
            "private_key": TEST_KEY, "client_email": "gw@acme-e2e.iam.gserviceaccount.com",
            "client_id": "1", "token_uri": format!("{}/token", google.uri())})
        .to_string(),
    );
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nrequest_log = {:?}\n\n\
         [[providers]]\nname = \"vertex\"\nkind = \"vertex\"\nproject = \"acme-e2e\"\n\
         location = \"us-central1\"\nmodel = \"gemini-2.5-flash\"\nbase_url = \"{}/v1\"\n\
         credentials_env = \"SWITCHYARD_E2E_VERTEX_KEY_FILE\"\n\n{}",
        log.display().to_string(),
        google.uri(),
        route("gem", &["vertex"], "retry = { max_attempts = 1 }"),
    );
    let key_path = key_file.to_str().unwrap().to_owned();
    let server = Server::start(
        scratch,
        &config,
        &[("SWITCHYARD_E2E_VERTEX_KEY_FILE", key_path.as_str())],
    );
    let reply = server.chat(&chat_body("gem", "hi")).await;
    reply.expect_status(502);
    assert!(
        reply.text.contains("not a token answer"),
        "the failure is still explained: {}",
        reply.text
    );
    let id = reply.header("x-request-id").to_owned();
    let mut seen = vec![("502 body", reply.everything())];
    crate::support::eventually("the log line", || !lines_of(&log).is_empty()).await;
    seen.push(("request log", lines_of(&log).join("\n")));
    for view in [
        "/admin/requests".to_owned(),
        format!("/admin/requests/{id}"),
        "/admin/health".to_owned(),
        "/admin/overview".to_owned(),
        "/metrics".to_owned(),
    ] {
        let got = server.get(&view, &[]).await;
        got.expect_status(200);
        seen.push(("admin view", format!("{view}: {}", got.text)));
    }
    assert!(
        seen[2].1.contains("not a token answer"),
        "the admin view shows the failure: {}",
        seen[2].1
    );
    seen.push(("stderr", server.output()));
    for (place, text) in &seen {
        for secret in [LEAKED, ID_TOKEN] {
            for piece in secret.as_bytes().windows(8) {
                let piece = std::str::from_utf8(piece).unwrap();
                assert!(!text.contains(piece), "{place} shows {piece:?}: {text}");
            }
        }
    }
}
