//! Each fault does what it says, observed with a raw HTTP/1.1 client over a TCP socket
//! (no HTTP library that could retry, buffer or hide a reset), plus the control API and
//! the binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    missing_docs
)]

mod raw;

use std::time::Duration;

use faultline::{Fault, Outcome, Script, CANONICAL_ANSWER};
use raw::{attempts_when, get, parse, post, post_quiet, start, End, QUIET, WAIT};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "Why a gateway?"}]})
}

fn stream(model: &str) -> Value {
    json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "Why a gateway?"}],
    })
}

fn with_prefill(mut body: Value, prefill: &str) -> Value {
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": prefill}));
    body
}

#[tokio::test]
async fn a_healthy_plain_answer_is_one_json_body_with_usage() {
    let s = start().await;
    let r = post(&s, "/v1/chat/completions", &chat("gpt-x")).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(
        r.header("content-length").is_some(),
        "one body with a length"
    );
    let v = r.json();
    assert_eq!(v["model"], "gpt-x", "the request's model");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], CANONICAL_ANSWER);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["prompt_tokens"], faultline::PROMPT_TOKENS);
    assert_eq!(v["usage"]["completion_tokens"], 60);
    let a = attempts_when(&s, "gpt-x", |a| {
        a.len() == 1 && a[0].outcome == Outcome::Finished
    })
    .await;
    assert_eq!(
        (a[0].fault.clone(), a[0].stream, a[0].prefill.clone()),
        (Fault::Ok, false, None)
    );
    assert!(a[0].ended.unwrap() >= a[0].at);
}

#[tokio::test]
async fn a_healthy_stream_is_one_chunk_per_token_then_finish_usage_done() {
    let s = start().await;
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    assert_eq!(
        events.len(),
        1 + 60 + 1 + 1 + 1,
        "role, tokens, finish, usage, [DONE]"
    );
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
    let finish: Value = serde_json::from_str(&events[61]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage: Value = serde_json::from_str(&events[62]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 60);
    assert_eq!(events[63], "[DONE]");
    // without include_usage: no usage chunk
    let mut body = stream("m");
    body["stream_options"] = json!({"include_usage": false});
    let r = post(&s, "/v1/chat/completions", &body).await;
    assert_eq!(r.events().len(), 63);
    let a = attempts_when(&s, "m", |a| {
        a.len() == 2 && a.iter().all(|x| x.outcome == Outcome::Finished)
    })
    .await;
    assert!(a[0].stream);
}

#[tokio::test]
async fn statuses_carry_openai_errors_and_retry_after_headers() {
    let s = start().await;
    s.script(
        "m",
        Script::queue(
            [
                Fault::rate_limited(2),
                Fault::Status {
                    status: 429,
                    retry_after: None,
                    retry_after_ms: Some(1500),
                    code: Some("insufficient_quota".into()),
                    message: Some("You exceeded your current quota.".into()),
                },
                Fault::status(500),
                Fault::status(503),
            ],
            Fault::Ok,
        ),
    );
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(429));
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(r.header("retry-after-ms"), None);
    assert_eq!(r.json()["error"]["code"], "rate_limit_exceeded");
    assert_eq!(r.json()["error"]["type"], "requests");
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.status, Some(429), "streams fail before their headers too");
    assert_eq!(r.header("retry-after-ms"), Some("1500"));
    assert_eq!(r.header("retry-after"), None);
    assert_eq!(r.json()["error"]["code"], "insufficient_quota");
    assert_eq!(
        r.json()["error"]["message"],
        "You exceeded your current quota."
    );
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(500));
    assert_eq!(r.json()["error"]["type"], "server_error");
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(503));
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(200), "the queue is used up");
    let kinds: Vec<_> = s.attempts("m").iter().map(|a| a.fault.clone()).collect();
    assert_eq!(kinds[2], Fault::status(500));
    assert_eq!(kinds[4], Fault::Ok);
}

#[tokio::test]
async fn reset_closes_the_socket_with_an_rst_and_no_bytes() {
    let s = start().await;
    s.script("m", Script::once(Fault::Reset));
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Reset);
    assert_eq!(r.status, None, "not a byte of response");
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(200), "the next request is served");
    let a = s.attempts("m");
    assert_eq!(a[0].fault, Fault::Reset);
    assert_eq!(a[0].outcome, Outcome::Finished);
}

#[tokio::test]
async fn hang_sends_nothing_and_records_the_client_leaving() {
    let s = start().await;
    s.script("m", Fault::Hang);
    let mut r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!((r.end, r.status), (End::Silent, None));
    assert_eq!(s.attempts("m")[0].outcome, Outcome::InFlight);
    drop(r.socket.take());
    let a = attempts_when(&s, "m", |a| a[0].client_gone()).await;
    assert!(a[0].ended.unwrap() >= a[0].at + QUIET);
}

#[tokio::test]
async fn slow_first_token_sends_headers_at_once_and_tokens_late() {
    let s = start().await;
    let delay = Duration::from_millis(400);
    s.script("m", Fault::slow_first_token(delay));
    let r = post_quiet(&s, "/v1/chat/completions", &stream("m"), WAIT).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    assert!(
        r.headers_at.unwrap() < delay,
        "headers and role chunk at once"
    );
    assert!(r.ended_at >= delay);
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
    let r = post_quiet(&s, "/v1/chat/completions", &chat("m"), WAIT).await;
    assert_eq!(r.status, Some(200));
    assert!(r.headers_at.unwrap() >= delay, "a plain answer waits whole");
    // paced: one token every 5 ms
    s.script("p", Fault::paced(Duration::from_millis(5)));
    let r = post(&s, "/v1/chat/completions", &stream("p")).await;
    assert!(r.ended_at >= Duration::from_millis(5 * 59));
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
}

#[tokio::test]
async fn a_cut_stream_ends_after_n_tokens_without_finish_or_done() {
    let s = start().await;
    s.script(
        "m",
        Script::queue(
            [
                Fault::cut(40),
                Fault::Cut {
                    after: 40,
                    abort: true,
                },
            ],
            Fault::Ok,
        ),
    );
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Complete, "the body ends cleanly");
    assert_eq!(r.streamed_text(), faultline::prefix(40));
    assert!(!r.text().contains("finish_reason\":\"stop"));
    assert!(!r.text().contains("[DONE]"));
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Closed, "the connection drops mid-body");
    assert_eq!(r.streamed_text(), faultline::prefix(40));
    // plain: part of the body, then the connection drops
    s.script("m", Fault::cut(30));
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!((r.status, r.end), (Some(200), End::Closed));
    let len: usize = r.header("content-length").unwrap().parse().unwrap();
    assert!(r.body.len() < len);
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
    let a = attempts_when(&s, "m", |a| {
        a.len() == 3 && a.iter().all(|x| x.outcome == Outcome::Finished)
    })
    .await;
    assert_eq!(
        a[1].fault,
        Fault::Cut {
            after: 40,
            abort: true
        }
    );
}

#[tokio::test]
async fn a_stalled_stream_keeps_the_connection_open_and_silent() {
    let s = start().await;
    s.script("m", Fault::Stall { after: 20 });
    let mut r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!((r.status, r.end), (Some(200), End::Silent));
    assert_eq!(r.streamed_text(), faultline::prefix(20));
    drop(r.socket.take());
    attempts_when(&s, "m", |a| a[0].client_gone()).await;
}

#[tokio::test]
async fn a_malformed_event_sits_between_good_ones() {
    let s = start().await;
    s.script("m", Fault::Malformed { after: 30 });
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Complete);
    let events = r.events();
    assert_eq!(
        events[31], "{not json",
        "after the role chunk and 30 tokens"
    );
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER, "the rest follows");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(200));
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
}

#[tokio::test]
async fn an_error_event_ends_the_stream_in_band() {
    let s = start().await;
    s.script(
        "m",
        Script::queue(
            [Fault::ErrorEvent { after: 0 }],
            Fault::ErrorEvent { after: 10 },
        ),
    );
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!((r.status, r.end), (Some(200), End::Complete));
    let events = r.events();
    assert_eq!(events.len(), 2, "role chunk, then the error: {events:?}");
    let e: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(e["error"]["type"], "server_error");
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.streamed_text(), faultline::prefix(10));
    assert!(r.events().last().unwrap().contains("\"error\""));
    assert!(!r.text().contains("[DONE]"));
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(200));
    assert_eq!(r.json()["error"]["type"], "server_error");
}

#[tokio::test]
async fn no_done_finishes_then_holds_the_connection() {
    let s = start().await;
    s.script("m", Fault::NoDone);
    let mut r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Silent);
    let events = r.events();
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
    assert!(events[61].contains("\"finish_reason\":\"stop\""));
    assert!(events[62].contains("\"usage\""));
    assert!(!r.text().contains("[DONE]"));
    drop(r.socket.take());
    attempts_when(&s, "m", |a| a[0].client_gone()).await;
}

#[tokio::test]
async fn a_flood_sends_big_content_chunks_without_end() {
    let s = start().await;
    s.script(
        "m",
        Fault::Flood {
            chunk_bytes: 50_000,
        },
    );
    let body = serde_json::to_vec(&stream("m")).unwrap();
    let mut socket = TcpStream::connect(s.addr()).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: faultline\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&body).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    while got.len() < 1_000_000 {
        let n = tokio::time::timeout(WAIT, socket.read(&mut chunk))
            .await
            .expect("the flood keeps coming")
            .unwrap();
        assert!(n > 0, "the flood never ends by itself");
        got.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    let tokens = text
        .matches(&format!("\"content\":\"{}", "flood ".repeat(5)))
        .count();
    assert!(tokens >= 15, "content chunks of 50 KB: {tokens}");
    assert!(!text.contains("[DONE]") && !text.contains("finish_reason\":\"stop"));
    drop(socket);
    attempts_when(&s, "m", |a| a[0].client_gone()).await;
}

#[tokio::test]
async fn finish_only_sends_no_usage_and_no_done() {
    let s = start().await;
    s.script("m", Fault::FinishOnly);
    let mut r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.end, End::Silent);
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
    assert!(r
        .events()
        .last()
        .unwrap()
        .contains("\"finish_reason\":\"stop\""));
    assert!(!r.text().contains("usage"));
    drop(r.socket.take());
    attempts_when(&s, "m", |a| a[0].client_gone()).await;
}

#[tokio::test]
async fn context_length_and_content_filter_are_openai_400s() {
    let s = start().await;
    s.script(
        "m",
        Script::queue([Fault::ContextLength, Fault::ContentFilter], Fault::Ok),
    );
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["error"]["code"], "context_length_exceeded");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length"));
    let r = post(&s, "/v1/chat/completions", &stream("m")).await;
    assert_eq!(r.status, Some(400));
    assert_eq!(r.json()["error"]["code"], "content_filter");
}

#[tokio::test]
async fn prefill_is_continued_or_rejected() {
    let s = start().await;
    let prefill = faultline::prefix(40);
    let r = post(
        &s,
        "/v1/chat/completions",
        &with_prefill(stream("ok"), prefill),
    )
    .await;
    assert_eq!(format!("{prefill}{}", r.streamed_text()), CANONICAL_ANSWER);
    let usage: Value = serde_json::from_str(&r.events()[r.events().len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 20);
    let r = post(
        &s,
        "/v1/chat/completions",
        &with_prefill(chat("ok"), prefill),
    )
    .await;
    let text = r.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(format!("{prefill}{text}"), CANONICAL_ANSWER);
    assert_eq!(s.attempts("ok")[0].prefill.as_deref(), Some(prefill));

    s.script("picky", Fault::RejectPrefill);
    let r = post(
        &s,
        "/v1/chat/completions",
        &with_prefill(stream("picky"), prefill),
    )
    .await;
    assert_eq!(r.status, Some(400));
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("prefill"));
    let r = post(&s, "/v1/chat/completions", &stream("picky")).await;
    assert_eq!(r.status, Some(200));
    assert_eq!(r.streamed_text(), CANONICAL_ANSWER);
    let a = s.attempts("picky");
    assert_eq!(
        (a[0].fault.clone(), a[1].fault.clone()),
        (Fault::RejectPrefill, Fault::Ok)
    );
}

#[tokio::test]
async fn down_for_a_while_then_healthy() {
    let s = start().await;
    let outage = Duration::from_millis(300);
    s.script("m", Fault::down_for(outage));
    let r = post(&s, "/v1/chat/completions", &chat("m")).await;
    assert_eq!(r.status, Some(503));
    let deadline = Instant::now() + WAIT;
    loop {
        let r = post(&s, "/v1/chat/completions", &chat("m")).await;
        if r.status == Some(200) {
            break;
        }
        assert_eq!(r.status, Some(503));
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let a = s.attempts("m");
    let first_ok = a.iter().position(|x| x.fault == Fault::Ok).unwrap();
    assert!(a[first_ok].at >= outage, "not healthy early");
    assert!(a[..first_ok].iter().all(|x| x.fault == Fault::status(503)));
}

#[tokio::test]
async fn the_control_api_scripts_lists_and_resets() {
    let s = start().await;
    let script = json!({"model": "primary", "faults": [{"kind": "status", "status": 500}], "then": {"kind": "context_length"}});
    let r = post(&s, "/control/script", &script).await;
    assert_eq!(r.status, Some(204));
    let bad = json!({"model": "primary", "faults": [{"kind": "explode"}]});
    assert!(post(&s, "/control/script", &bad).await.status.unwrap() >= 400);
    assert_eq!(
        post(&s, "/v1/chat/completions", &chat("primary"))
            .await
            .status,
        Some(500)
    );
    assert_eq!(
        post(&s, "/v1/chat/completions", &chat("primary"))
            .await
            .status,
        Some(400)
    );
    assert_eq!(
        post(&s, "/chat/completions", &chat("other")).await.status,
        Some(200)
    );
    let all = get(&s, "/control/attempts").await.json();
    assert_eq!(all.as_array().unwrap().len(), 3);
    let mine = get(&s, "/control/attempts?model=primary").await.json();
    assert_eq!(mine.as_array().unwrap().len(), 2);
    assert_eq!(mine[0]["fault"], json!({"kind": "status", "status": 500}));
    assert_eq!(mine[1]["fault"]["kind"], "context_length");
    assert!(mine[1]["at_ms"].as_f64().unwrap() >= mine[0]["at_ms"].as_f64().unwrap());
    assert_eq!(mine[0]["outcome"], "finished");
    let models = get(&s, "/v1/models").await.json();
    assert_eq!(models["data"][0]["id"], "other");
    assert_eq!(models["data"][1]["id"], "primary");
    // a default for every other model
    post(
        &s,
        "/control/script",
        &json!({"model": "*", "then": {"kind": "status", "status": 502}}),
    )
    .await;
    assert_eq!(
        post(&s, "/v1/chat/completions", &chat("new")).await.status,
        Some(502)
    );
    assert_eq!(
        post(&s, "/control/reset", &json!({})).await.status,
        Some(204)
    );
    assert_eq!(get(&s, "/control/attempts").await.json(), json!([]));
    assert_eq!(
        post(&s, "/v1/chat/completions", &chat("primary"))
            .await
            .status,
        Some(200)
    );
}

#[tokio::test]
async fn keep_alive_serves_many_requests_on_one_connection() {
    let s = start().await;
    let mut socket = TcpStream::connect(s.addr()).await.unwrap();
    let body = serde_json::to_vec(&chat("m")).unwrap();
    let mut req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: f\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    for _ in 0..3 {
        socket.write_all(&req).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !parse(&buf).is_some_and(|p| p.complete) {
            let n = tokio::time::timeout(WAIT, socket.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "connection closed");
            buf.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(parse(&buf).unwrap().status, 200);
    }
    assert_eq!(s.attempts("m").len(), 3);
}

#[test]
fn the_binary_serves_its_scripts() {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "--threads",
            "1",
            "--script",
            r#"{"model":"m","faults":[{"kind":"status","status":503}]}"#,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let uri = line
        .trim()
        .strip_prefix("faultline listening on ")
        .unwrap()
        .to_owned();
    let addr: std::net::SocketAddr = uri.strip_prefix("http://").unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let statuses = runtime.block_on(async {
        let mut out = Vec::new();
        for _ in 0..2 {
            let mut socket = TcpStream::connect(addr).await.unwrap();
            let body = serde_json::to_vec(&chat("m")).unwrap();
            let mut req = format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: f\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            req.extend_from_slice(&body);
            socket.write_all(&req).await.unwrap();
            let mut buf = Vec::new();
            tokio::time::timeout(WAIT, socket.read_to_end(&mut buf)).await.unwrap().unwrap();
            out.push(parse(&buf).unwrap().status);
        }
        out
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(statuses, [503, 200]);
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["--script", "{\"model\": 1}"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
