//! The request log is the spend record: a request's line is in the file before its answer
//! is complete, so `kill -9` right after an answer loses nothing, a restart restores every
//! dollar, and `report` reads the log a crash left behind.

use std::path::Path;

use serde_json::Value;

use crate::support::{
    chat_body, describe, key_env, lines_of, openai_provider, route, sse_data, stream_body,
    switchyard, Reply, Scratch, Server, ANSWER,
};
use crate::upstream::{ok_completion, ok_stream, sse, upstream};

const PRICE: &str = "price = { input_per_mtok = 0.15, output_per_mtok = 0.6 }";

/// An upstream answering plain requests with `ANSWER` and streamed ones in two chunks.
async fn answering_upstream() -> wiremock::MockServer {
    let gpt = upstream(ok_completion(ANSWER)).await;
    wiremock::Mock::given(wiremock::matchers::body_partial_json(
        serde_json::json!({"stream": true}),
    ))
    .respond_with(ok_stream(sse(&["The capital", " is Paris."], true)))
    .with_priority(1)
    .mount(&gpt)
    .await;
    gpt
}

/// A priced route `smart` with a budget, logging to `log`.
fn config(upstream: &str, log: &Path) -> String {
    format!(
        "[server]\nrequest_log = {:?}\n\n{}{}",
        log.to_str().unwrap(),
        openai_provider("gpt", upstream, PRICE),
        route("smart", &["gpt"], "budget_usd = 100.0"),
    )
}

/// The last log line's id and the count, read the moment a response is complete.
fn last_logged(log: &Path) -> (usize, String) {
    let lines = lines_of(log);
    let last: Value = serde_json::from_str(lines.last().expect("a line")).unwrap();
    (lines.len(), last["id"].as_str().unwrap().to_owned())
}

/// The cost the client was shown: the body's (or the stream's last chunk's) trail.
fn shown_cost(reply: &Reply, stream: bool) -> f64 {
    let trail = if stream {
        sse_data(&reply.text)
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .find_map(|v| v.get("switchyard").cloned())
            .unwrap_or_else(|| panic!("a trail in {}", reply.text))
    } else {
        reply.json()["switchyard"].clone()
    };
    trail["cost_usd"].as_f64().unwrap()
}

/// No sleeping, no polling: the file is read as soon as each response has been read to
/// its end — plain answers, streams (after `[DONE]`), and errors alike.
#[tokio::test]
async fn every_answer_is_complete_only_once_its_line_is_in_the_log() {
    let gpt = answering_upstream().await;
    let logs = Scratch::new("e2e", "commit-log");
    let log = logs.file("requests.jsonl");
    let server = Server::start(
        Scratch::new("e2e", "commit"),
        &config(&gpt.uri(), &log),
        &key_env(),
    );
    for i in 0..12 {
        let reply = match i % 4 {
            0 => server.chat(&chat_body("smart", "plain")).await,
            1 => server.chat(&stream_body("smart", "streamed")).await,
            2 => server.chat(&chat_body("nope", "an unknown route")).await,
            _ => {
                let bad = b"{\"model\": \"smart\", \"messages\": ".to_vec();
                server.post_raw("/v1/chat/completions", bad, &[]).await
            }
        };
        let expected = [200, 200, 404, 400][i % 4];
        reply.expect_status(expected);
        if i % 4 == 1 {
            assert!(reply.text.ends_with("data: [DONE]\n\n"), "{}", reply.text);
        }
        let (count, id) = last_logged(&log);
        assert_eq!(count, i + 1, "request {i}'s line is in the file");
        assert_eq!(id, reply.header("x-request-id"), "request {i}");
    }
    let health = server.get("/admin/health", &[]).await.json();
    assert_eq!(health["request_log_dropped"], 0, "{health}");
    assert_eq!(health["request_log_late"], 0, "{health}");
}

/// `kill -9` right after the last answer: every answered request is in the log, a
/// restart puts all of their spend back into the budget, and `report` reads the log even
/// with a line cut short by the crash.
#[tokio::test]
async fn kill_9_after_the_last_answer_keeps_every_line_and_all_the_spend() {
    let gpt = answering_upstream().await;
    let logs = Scratch::new("e2e", "kill-log");
    let log = logs.file("requests.jsonl");
    let config = config(&gpt.uri(), &log);
    let server = Server::start(Scratch::new("e2e", "kill"), &config, &key_env());
    let n = 30;
    let mut ids = Vec::new();
    let mut spent = 0.0;
    for i in 0..n {
        let stream = i % 3 == 2;
        let body = if stream {
            stream_body("smart", "streamed")
        } else {
            chat_body("smart", "plain")
        };
        let reply = server.chat(&body).await;
        reply.expect_status(200);
        spent += shown_cost(&reply, stream);
        ids.push(reply.header("x-request-id").to_owned());
    }
    drop(server); // SIGKILL (std's `Child::kill`), right after the last answer

    let logged: Vec<String> = lines_of(&log)
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(logged, ids, "every answered request, in order");
    assert!(spent > 0.0);

    // what a crash in the middle of a write would leave: half a line at the end
    let whole = std::fs::read_to_string(&log).unwrap();
    let first = whole.lines().next().unwrap();
    std::fs::write(&log, format!("{whole}{}", &first[..first.len() / 2])).unwrap();
    let out = switchyard(&["report", log.to_str().unwrap()], &[], &logs.path);
    assert!(out.status.success(), "{}", describe(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains(&format!("total: {n} requests")), "{table}");
    assert!(
        table.contains(&format!(
            "1 unreadable line(s) skipped (first at line {})",
            n + 1
        )),
        "{table}"
    );

    let restarted = Server::start(Scratch::new("e2e", "kill-again"), &config, &key_env());
    let health = restarted.get("/admin/health", &[]).await.json();
    let restored = health["budgets"]["smart"]["spent_usd"].as_f64().unwrap();
    assert!(
        (restored - spent).abs() < 1e-9,
        "restored {restored}, spent {spent}: {health}"
    );
}
