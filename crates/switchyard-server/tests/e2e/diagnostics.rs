//! What the binary says on stderr. The library's `tracing` events, filtered by `RUST_LOG`
//! (default `info`): the shared state's warning when Redis does not answer. What happened
//! to traffic, at the default level: a provider going down and coming back is its circuit's
//! transitions and the failover, with the start-up line and the config's warnings — every
//! line JSON with `--log-format json`, and stdout the access log's alone.

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::common::http::eventually;
use crate::common::serve::{Scratch, WAIT};
use crate::support::{
    chat_body, openai_provider, route, simulated_provider, Server, ANSWER, CHAT_PATH, FAST_RETRY,
    KEY_ENV, UPSTREAM_KEY,
};
use crate::upstream::{error_response, ok_completion, upstream};

/// What the library's Redis link logs (at `warn`) when Redis does not answer.
const REDIS_LOST: &str = "shared state: Redis unavailable, serving from local state";
/// The server's own line about the same (target `switchyard::serve`, shown whatever
/// `RUST_LOG` says), after the library's.
const NOT_ANSWERING: &str = "Redis is not answering";

/// A config whose `[state]` points at a 127.0.0.1 port nothing listens on.
fn config_with_unreachable_redis() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!(
        "{}{}[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:{port}\"\nprefix = \"diag\"\ntimeout = \"200ms\"\n",
        simulated_provider("sim", 0.0),
        route("main", &["sim"], ""),
    )
}

#[tokio::test]
async fn the_librarys_warnings_are_shown_by_default() {
    let config = config_with_unreachable_redis();
    // empty RUST_LOG: the default filter, whatever the test runner's environment says
    let server = Server::start(Scratch::new("e2e", "diag"), &config, &[("RUST_LOG", "")]);
    eventually("the library's Redis warning on stderr", || {
        server.output().contains(REDIS_LOST)
    })
    .await;
}

#[tokio::test]
async fn rust_log_hides_what_it_filters_out() {
    let config = config_with_unreachable_redis();
    let server = Server::start(
        Scratch::new("e2e", "diag-quiet"),
        &config,
        &[("RUST_LOG", "error")],
    );
    eventually("the server's own Redis warning on stderr", || {
        server.output().contains(NOT_ANSWERING)
    })
    .await;
    assert!(!server.output().contains(REDIS_LOST), "{}", server.output());
}

// ---------------------------------------------------------------- an outage, said

/// A route whose primary fails at once and whose circuit cools down quickly; a third,
/// unpriced provider that `check` would warn of.
fn outage_config(primary: &str, backup: &str, house: &str) -> String {
    let breaker =
        "breaker = { failure_threshold = 1, cooldown = \"100ms\", max_cooldown = \"100ms\" }";
    format!(
        "{}{}[[providers]]\nname = \"house\"\nkind = \"openai\"\nmodel = \"in-house-7b\"\napi_key_env = \"{KEY_ENV}\"\nbase_url = \"{house}/v1\"\n\n{}[telemetry]\naccess_log = true\n",
        openai_provider("primary", primary, ""),
        openai_provider("backup", backup, ""),
        route(
            "smart",
            &["primary", "backup", "house"],
            &format!("{FAST_RETRY}\n{breaker}")
        ),
    )
}

/// Start `serve` on `config` with `args` after it, at the default level.
fn start(tag: &str, config: &str, args: &[&str]) -> Server {
    let scratch = Scratch::new("e2e", tag);
    let path = scratch.write("switchyard.toml", config);
    let path = path.to_str().unwrap().to_owned();
    let mut all = vec!["serve", "--config", path.as_str()];
    all.extend(args);
    let envs = [("RUST_LOG", ""), (KEY_ENV, UPSTREAM_KEY)];
    Server::try_start(scratch, &all, "127.0.0.1:0", &envs)
        .unwrap_or_else(|e| panic!("did not start: {}\n{}", e.status, e.stderr))
}

/// The primary fails until it is mended, then answers: requests until its circuit has
/// opened (said on stderr as `opened`), then, mended, until it has closed again (`closed`).
async fn outage_and_recovery(
    server: &mut Server,
    primary: &MockServer,
    opened: &str,
    closed: &str,
) {
    server
        .chat(&chat_body("smart", "hello"))
        .await
        .expect_status(200);
    eventually("the circuit's opening", || server.stderr().contains(opened)).await;
    primary.reset().await;
    Mock::given(method("POST"))
        .and(path(CHAT_PATH))
        .respond_with(ok_completion(ANSWER))
        .mount(primary)
        .await;
    // each look sends a request: once the cooldown is over, one of them is the probe
    let deadline = tokio::time::Instant::now() + WAIT;
    while !server.stderr().contains(closed) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no recovery:\n{}",
            server.stderr()
        );
        server
            .chat(&chat_body("smart", "hello"))
            .await
            .expect_status(200);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.terminate().await;
}

/// The fields of the JSON line whose fields match every `(key, value)`.
fn line_with<'a>(lines: &'a [Value], want: &[(&str, &str)]) -> &'a Value {
    lines
        .iter()
        .find(|l| want.iter().all(|(k, v)| l["fields"][*k] == *v))
        .unwrap_or_else(|| panic!("no line with {want:?} in {lines:#?}"))
}

/// With `--log-format json` at the default level every stderr line is a JSON object: the
/// start-up line, the config's warning, the circuit opening (who, why, for how long) and
/// closing again, the failover; no empty `trace_id`. stdout holds the access log only,
/// JSON lines too.
#[tokio::test]
async fn an_outage_and_its_recovery_are_json_lines_at_the_default_level() {
    let primary = upstream(error_response(503, "overloaded", "server_error", None)).await;
    let (backup, house) = (
        upstream(ok_completion(ANSWER)).await,
        upstream(ok_completion(ANSWER)).await,
    );
    let config = outage_config(&primary.uri(), &backup.uri(), &house.uri());
    let mut server = start("diag-json", &config, &["--log-format", "json"]);
    let (opened, closed) = (r#""to":"open""#, r#""to":"closed""#);
    outage_and_recovery(&mut server, &primary, opened, closed).await;

    let stderr = server.stderr();
    assert!(!stderr.contains(r#""trace_id":"""#), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let listening = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("switchyard listening on http://127.0.0.1:"))
        })
        .unwrap_or_else(|| panic!("no start-up line: {stderr}"));
    assert_eq!(
        (&listening["level"], &listening["target"]),
        (&"INFO".into(), &"switchyard::serve".into())
    );
    let warning = lines
        .iter()
        .find(|l| {
            l["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("\"house\": model \"in-house-7b\" has no known price"))
        })
        .unwrap_or_else(|| panic!("no config warning: {stderr}"));
    assert_eq!(warning["level"], "WARN");
    let open = line_with(
        &lines,
        &[("provider", "primary"), ("from", "closed"), ("to", "open")],
    );
    assert_eq!(
        (&open["level"], &open["target"]),
        (&"WARN".into(), &"switchyard::events".into())
    );
    assert_eq!(open["fields"]["why"], "failures");
    assert_eq!(open["fields"]["cooldown_ms"], 100);
    assert_eq!(open["fields"]["seen"], "local");
    assert!(open["fields"]["cause"].is_string(), "{open}");
    line_with(
        &lines,
        &[
            ("provider", "primary"),
            ("from", "open"),
            ("to", "half_open"),
        ],
    );
    let back = line_with(
        &lines,
        &[
            ("provider", "primary"),
            ("from", "half_open"),
            ("to", "closed"),
        ],
    );
    assert_eq!(back["fields"]["why"], "probe_succeeded");
    let failover = line_with(
        &lines,
        &[("route", "smart"), ("from", "primary"), ("to", "backup")],
    );
    assert_eq!(failover["fields"]["message"], "failover primary → backup");
    assert!(
        failover["fields"]["count"].as_u64().unwrap() >= 1,
        "{failover}"
    );
    // one line per transition: the opening was said once
    let openings = lines.iter().filter(|l| l["fields"]["to"] == "open").count();
    assert_eq!(openings, 1, "{stderr}");

    let stdout = server.stdout();
    assert!(!stdout.trim().is_empty(), "the access log");
    for line in stdout.lines() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["id"].is_string(), "an access-log line: {line}");
    }
}

/// Text lines say the same events (and stdout is still the access log's alone).
#[tokio::test]
async fn an_outage_and_its_recovery_are_text_lines_by_default() {
    let primary = upstream(error_response(503, "overloaded", "server_error", None)).await;
    let (backup, house) = (
        upstream(ok_completion(ANSWER)).await,
        upstream(ok_completion(ANSWER)).await,
    );
    let config = outage_config(&primary.uri(), &backup.uri(), &house.uri());
    let mut server = start("diag-text", &config, &[]);
    // a line in a request's span names it between the level and the target
    let opened = "switchyard::events: circuit closed → open provider=\"primary\"";
    let closed = "switchyard::events: circuit half_open → closed provider=\"primary\"";
    outage_and_recovery(&mut server, &primary, opened, closed).await;
    let stderr = server.stderr();
    for said in [
        "INFO switchyard::serve: switchyard listening on http://127.0.0.1:",
        "WARN switchyard::serve: config: provider \"house\": model \"in-house-7b\" has no known price",
        "why=\"failures\"",
        "cooldown_ms=100 seen=\"local\"",
        "circuit open → half_open provider=\"primary\"",
        " INFO switchyard::events: failover primary → backup route=\"smart\" from=\"primary\" to=\"backup\" count=1",
    ] {
        assert!(stderr.contains(said), "{said:?} not in\n{stderr}");
    }
    assert!(
        stderr.lines().all(|l| !l.starts_with('{')),
        "text, not JSON: {stderr}"
    );
    for line in server.stdout().lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
}
