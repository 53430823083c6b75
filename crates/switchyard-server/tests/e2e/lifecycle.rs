//! The process around the proxy: the request log and `report`, graceful shutdown on
//! SIGTERM, `check`, `keys new`, and the refusal to listen publicly without keys.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::support::{
    chat_body, describe, key_env, lines_of, metric, openai_provider, route, simulated_provider,
    sse_data, stream_body, streamed_text, switchyard, Scratch, Server, ANSWER, FAST_RETRY,
    UPSTREAM_KEY,
};
use crate::upstream::{calls, error_response, ok_completion, ok_stream, sse, upstream};

// ---------------------------------------------------------------- request log + report

/// An upstream that answers plain requests with `ANSWER` and streamed ones with "The capital
/// of France is Paris." in two chunks.
async fn answering_upstream() -> wiremock::MockServer {
    let gpt = upstream(ok_completion(ANSWER)).await;
    wiremock::Mock::given(wiremock::matchers::body_partial_json(
        serde_json::json!({"stream": true}),
    ))
    .respond_with(ok_stream(sse(
        &["The capital of France", " is Paris."],
        true,
    )))
    .with_priority(1)
    .mount(&gpt)
    .await;
    gpt
}

/// `[server] workers = 1` runs on tokio's single-threaded scheduler: everything the server
/// does (plain and streamed proxying, the request log's writer, graceful shutdown) must work
/// on it as on the default multi-threaded one.
#[tokio::test]
async fn one_worker_thread_serves_plain_and_streamed_requests_and_drains_on_sigterm() {
    let gpt = answering_upstream().await;
    let scratch = Scratch::new("e2e", "one-worker");
    let log = scratch.file("requests.jsonl");
    let config = format!(
        "[server]\nworkers = 1\nrequest_log = {:?}\n\n{}{}",
        log.to_str().unwrap(),
        openai_provider("gpt", &gpt.uri(), ""),
        route("smart", &["gpt"], ""),
    );
    let mut server = Server::start(scratch, &config, &key_env());
    assert!(
        server.output().contains("; 1 worker thread)"),
        "{}",
        server.output()
    );
    let plain = server.chat(&chat_body("smart", "plain")).await;
    plain.expect_status(200);
    assert_eq!(plain.json()["choices"][0]["message"]["content"], ANSWER);
    let streamed = server.chat(&stream_body("smart", "streamed")).await;
    streamed.expect_status(200);
    assert_eq!(
        streamed_text(&sse_data(&streamed.text)),
        "The capital of France is Paris."
    );
    let status = server.terminate().await;
    assert!(status.success(), "{}", server.output());
    assert_eq!(lines_of(&log).len(), 2, "both requests logged before exit");
}

#[tokio::test]
async fn request_log_has_one_line_per_request_after_sigterm_and_report_reads_it() {
    let gpt = answering_upstream().await;
    let leak = format!("boom with {UPSTREAM_KEY}");
    let broken = upstream(error_response(500, &leak, "server_error", None)).await;
    let scratch = Scratch::new("e2e", "log");
    let log = scratch.file("requests.jsonl");
    let price = "price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }";
    let config = format!(
        "[server]\nrequest_log = {:?}\n\n{}{}{}{}",
        log.to_str().unwrap(),
        openai_provider("gpt", &gpt.uri(), price),
        openai_provider("broken", &broken.uri(), price),
        route("smart", &["gpt"], ""),
        route("backup", &["broken", "gpt"], FAST_RETRY),
    );
    let mut server = Server::start(scratch, &config, &key_env());

    let mut ids = Vec::new();
    for i in 0..3 {
        let r = server
            .chat(&chat_body("smart", &format!("plain {i}")))
            .await;
        r.expect_status(200);
        ids.push(r.header("x-request-id").to_owned());
    }
    let streamed = server.chat(&stream_body("smart", "streamed")).await;
    streamed.expect_status(200);
    assert!(
        streamed.text.ends_with("data: [DONE]\n\n"),
        "{}",
        streamed.text
    );
    ids.push(streamed.header("x-request-id").to_owned());
    let failed_over = server.chat(&chat_body("backup", "failover")).await;
    failed_over.expect_status(200);
    assert_eq!(failed_over.header("x-switchyard-failed-over"), "true");
    ids.push(failed_over.header("x-request-id").to_owned());
    let unknown = server.chat(&chat_body("nope", "404")).await;
    unknown.expect_status(404);
    ids.push(unknown.header("x-request-id").to_owned());
    let n = ids.len();

    // The same requests, counted in /metrics.
    let metrics = server.get("/metrics", &[]).await;
    metrics.expect_status(200);
    let count = |labels: &[(&str, &str)]| {
        metric(&metrics.text, "switchyard_requests_total", labels)
            .unwrap_or_else(|| panic!("a requests sample for {labels:?}:\n{}", metrics.text))
    };
    let plain = [("route", "smart"), ("status", "200"), ("stream", "false")];
    assert_eq!(count(&plain), 3.0);
    let streamed = [("route", "smart"), ("status", "200"), ("stream", "true")];
    assert_eq!(count(&streamed), 1.0);
    let failovers = metric(
        &metrics.text,
        "switchyard_failovers_total",
        &[("route", "backup")],
    );
    assert_eq!(failovers, Some(1.0), "{}", metrics.text);
    assert!(!metrics.text.contains(UPSTREAM_KEY));

    let status = server.terminate().await;
    assert!(
        status.success(),
        "SIGTERM is a clean exit: {status}\n{}",
        server.output()
    );
    let lines = lines_of(&log);
    assert_eq!(
        lines.len(),
        n,
        "exactly one line per request:\n{}",
        lines.join("\n")
    );
    let entries: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let by_id: BTreeMap<&str, &Value> = entries
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e))
        .collect();
    assert_eq!(by_id.len(), n, "ids are unique");
    for (i, id) in ids.iter().enumerate() {
        let e = by_id
            .get(id.as_str())
            .unwrap_or_else(|| panic!("request {i} ({id}) is logged"));
        for field in [
            "route", "provider", "attempts", "usage", "cost_usd", "status",
        ] {
            assert!(e.get(field).is_some(), "{field} in {e}");
        }
        if i < 5 {
            assert_eq!(e["status"], 200, "{e}");
            assert_eq!(e["provider"], "gpt", "{e}");
            assert!(e["usage"]["output_tokens"].as_u64().unwrap() > 0, "{e}");
            assert!(e["cost_usd"].as_f64().unwrap() > 0.0, "{e}");
            assert!(!e["attempts"].as_array().unwrap().is_empty(), "{e}");
        }
    }
    let e = |i: usize| by_id[ids[i].as_str()];
    assert_eq!(e(0)["route"], "smart");
    assert_eq!(e(3)["stream"], true);
    assert_eq!(e(4)["route"], "backup");
    assert_eq!(e(4)["failed_over"], true);
    assert_eq!(e(5)["status"], 404);
    assert_eq!(e(5)["route"], "nope");
    assert!(e(5)["provider"].is_null());
    assert!(!lines.join("\n").contains(UPSTREAM_KEY));

    // `report` reads it back.
    let dir = std::env::temp_dir();
    let out = switchyard(&["report", log.to_str().unwrap()], &[], &dir);
    assert!(out.status.success(), "{}", describe(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("requests_served"), "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("a row for {name}:\n{table}"))
            .to_owned()
    };
    assert_eq!(row("gpt").split_whitespace().nth(1), Some("5"), "{table}");
    assert_eq!(
        row("broken").split_whitespace().nth(1),
        Some("0"),
        "{table}"
    );
    assert!(table.contains(&format!("{n} requests")), "{table}");

    let out = switchyard(&["report", "--json", log.to_str().unwrap()], &[], &dir);
    assert!(out.status.success(), "{}", describe(&out));
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("report --json is JSON ({e}): {}", describe(&out)));
    let totals = &report["totals"];
    assert_eq!(totals["requests"], n, "{report}");
    assert_eq!(totals["served"], 5, "{report}");
    assert_eq!(totals["failed_over"], 1, "{report}");
    assert_eq!(totals["errors"]["404"], 1, "{report}");
    let providers = report["providers"].as_array().unwrap();
    let gpt_row = providers.iter().find(|p| p["provider"] == "gpt").unwrap();
    assert_eq!(gpt_row["requests_served"], 5, "{report}");
    assert_eq!(gpt_row["failovers"], 1, "{report}");
    let broken_row = providers
        .iter()
        .find(|p| p["provider"] == "broken")
        .unwrap();
    assert_eq!(broken_row["requests_served"], 0, "{report}");
    let failures: u64 = broken_row["failures"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(failures, 2, "two tries on the broken provider: {report}");
}

// ---------------------------------------------------------------- graceful shutdown

#[tokio::test]
async fn sigterm_lets_an_in_flight_request_finish() {
    let slow = upstream(ok_completion(ANSWER).set_delay(Duration::from_millis(1500))).await;
    let config = format!(
        "[server]\nshutdown_grace = \"20s\"\n\n{}{}",
        openai_provider("slow", &slow.uri(), ""),
        route("smart", &["slow"], "")
    );
    let mut server = Server::start(Scratch::new("e2e", "grace"), &config, &key_env());
    let base = server.base.clone();
    let request = async {
        let resp = crate::support::client()
            .post(format!("{base}/v1/chat/completions"))
            .json_body(&chat_body("smart", "take your time"))
            .send()
            .await
            .expect("the in-flight request gets an answer");
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    };
    let stop = async {
        // SIGTERM only once the upstream holds the request.
        let deadline = tokio::time::Instant::now() + crate::support::WAIT;
        while calls(&slow).await.is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "request never reached upstream"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        server.terminate().await
    };
    let ((status, body), exit) = tokio::join!(request, stop);
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], ANSWER);
    assert!(
        exit.success(),
        "exit after draining: {exit}\n{}",
        server.output()
    );
    assert!(
        server.output().contains("shutting down"),
        "{}",
        server.output()
    );
}

/// reqwest without its `json` feature: a JSON body by hand.
trait JsonBody {
    fn json_body(self, body: &Value) -> Self;
}

impl JsonBody for reqwest::RequestBuilder {
    fn json_body(self, body: &Value) -> Self {
        self.header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
    }
}

// ---------------------------------------------------------------- check

#[test]
fn check_accepts_the_example_config_and_warns_about_missing_keys() {
    let scratch = Scratch::new("e2e", "check-example");
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../switchyard.example.toml"
    ))
    .unwrap();
    let copy = scratch.write("example.toml", &example);
    // The environment lacks every key (the harness scrubs OPENAI_API_KEY & co.).
    let out = switchyard(
        &["check", "--config", copy.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for expected in [
        "routes:",
        "smart",
        "cheap",
        "providers:",
        "claude",
        "gpt",
        "gemini",
        "local-llama",
        "aurora",
        "warnings:",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
    ] {
        assert!(
            text.contains(expected),
            "check prints {expected:?}:\n{text}"
        );
    }
    let warnings = text.split("warnings:").nth(1).unwrap();
    for var in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"] {
        assert!(warnings.contains(var), "a warning for {var}:\n{text}");
    }
}

#[test]
fn check_lists_every_problem_of_a_broken_config_with_its_path() {
    let scratch = Scratch::new("e2e", "check-broken");
    let config = r#"
[server]
listen = "localhost"
shutdown_grace = "soon"

[[providers]]
name = "gpt"
kind = "openai"
model = "gpt-4o-mini"
timeout = "fast"

[[providers]]
name = "mystery"
kind = "bogus"

[[providers]]
name = "gpt"
kind = "simulated"
failure_rate = 1.5

[[routes]]
name = "smart"
providers = ["gpt", "gtp"]
retry = { max_attempts = 0 }

[[keys]]
name = "team"
sha256 = "abc"
routes = ["smart", "dumb"]
"#;
    let path = scratch.write("broken.toml", config);
    let out = switchyard(
        &["check", "--config", path.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(!out.status.success(), "{}", describe(&out));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for path in [
        "server.listen",
        "server.shutdown_grace",
        "providers[0].timeout",
        "providers[1].kind",
        "providers[2].name",
        "providers[2].failure_rate",
        "routes[0].providers[1]: no provider named \"gtp\"",
        "routes[0].retry.max_attempts",
        "keys[0].sha256",
        "keys[0].routes[1]",
    ] {
        assert!(
            text.contains(path),
            "the problem at {path} is listed:\n{text}"
        );
    }

    // An unknown field is named too.
    let typo = scratch.write(
        "typo.toml",
        &format!(
            "{}{}",
            simulated_provider("sim", 0.0).replace("seed = 1", "seed = 1\ntimout = \"1s\""),
            route("smart", &["sim"], "")
        ),
    );
    let out = switchyard(
        &["check", "--config", typo.to_str().unwrap()],
        &[],
        &scratch.path,
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("timout"),
        "{}",
        describe(&out)
    );
}

// ---------------------------------------------------------------- keys

#[tokio::test]
async fn keys_new_prints_a_token_that_a_server_configured_with_its_hash_accepts() {
    let scratch = Scratch::new("e2e", "keys");
    let out = switchyard(&["keys", "new", "ci-bot"], &[], &scratch.path);
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let token = text
        .split_whitespace()
        .find(|w| w.starts_with("sy-"))
        .unwrap_or_else(|| panic!("a token in:\n{text}"))
        .to_owned();
    let lines = &text[text
        .find("[[keys]]")
        .unwrap_or_else(|| panic!("config lines:\n{text}"))..];
    assert!(lines.contains("name = \"ci-bot\""), "{text}");
    let hash = hex::encode(Sha256::digest(token.as_bytes()));
    assert!(
        lines.contains(&hash),
        "the printed hash is the token's:\n{text}"
    );
    assert!(
        !lines.contains(&token),
        "the config lines never hold the token"
    );

    let config = format!(
        "{}{}{lines}",
        simulated_provider("sim", 0.0),
        route("smart", &["sim"], "")
    );
    let server = Server::start(scratch, &config, &[]);
    let body = chat_body("smart", "hello");
    let bearer = format!("Bearer {token}");
    let ok = server.chat_with(&body, &[("authorization", &bearer)]).await;
    ok.expect_status(200);
    assert_eq!(ok.header("x-switchyard-provider"), "sim");
    server
        .chat_with(&body, &[("x-api-key", &token)])
        .await
        .expect_status(200);
    server
        .get("/v1/models", &[("authorization", &bearer)])
        .await
        .expect_status(200);

    let mut wrong = token.clone();
    let last = if wrong.ends_with('0') { "1" } else { "0" };
    wrong.replace_range(wrong.len() - 1.., last);
    for headers in [
        vec![],
        vec![("authorization", format!("Bearer {wrong}"))],
        vec![("x-api-key", wrong.clone())],
        vec![("authorization", format!("Bearer {hash}"))],
        vec![("authorization", token.clone())],
    ] {
        let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = server.chat_with(&body, &h).await;
        assert_eq!(r.status, 401, "{headers:?} -> {}", r.text);
    }
}

#[test]
fn public_listen_without_keys_is_refused() {
    let refused = Server::try_start(Scratch::new("e2e", "public"), &["serve"], "0.0.0.0:0", &[])
        .err()
        .expect("serve --listen 0.0.0.0:0 with no keys must not start");
    assert!(!refused.status.success());
    assert!(
        refused.stderr.contains("keys"),
        "the refusal mentions keys: {}",
        refused.stderr
    );
}

#[tokio::test]
async fn embedded_default_serves_without_a_config() {
    let server = Server::try_start(
        Scratch::new("e2e", "default"),
        &["serve"],
        "127.0.0.1:0",
        &[],
    )
    .unwrap_or_else(|r| panic!("{}: {}", r.status, r.stderr));
    let models = server.get("/v1/models", &[]).await;
    models.expect_status(200);
    let ids: Vec<String> = models.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.contains(&"default".to_owned()), "{ids:?}");
    server.get("/healthz", &[]).await.expect_status(200);
    server.get("/readyz", &[]).await.expect_status(200);
    let metrics = server.get("/metrics", &[]).await;
    metrics.expect_status(200);
    assert!(!metrics.text.is_empty());
}
