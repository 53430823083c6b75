//! SIGTERM while streams are still open: at the end of the grace period each stream ends
//! with an explicit `error` event (never `[DONE]`), each gets its request-log line (status
//! 503, the usage billed so far), idle connections are closed, and the process exits.

use futures_util::StreamExt as _;
use serde_json::Value;

use crate::common::conf::{self, Conf};
use crate::support::{client, lines_of, sse_data, stream_body, Scratch, Server};

/// Streams held open across the shutdown.
const STREAMS: usize = 5;

#[tokio::test]
async fn sigterm_ends_streams_open_at_the_grace_deadline_with_an_error_event_and_a_log_line() {
    let upstream = conf::upstream().await;
    // one token every 200 ms: 60 tokens take 12 s, far past the 2 s grace period
    upstream.script(
        "primary",
        faultline::Fault::paced(std::time::Duration::from_millis(200)),
    );
    let scratch = Scratch::new("e2e", "sigterm-streams");
    let log = scratch.file("requests.jsonl");
    let toml = Conf::new(&upstream)
        .request_log()
        .server("shutdown_grace = \"2s\"")
        .toml();
    let mut server = Server::start(scratch, &toml, &[]);
    let body = serde_json::to_vec(&stream_body(conf::ROUTE, "take your time")).unwrap();
    let mut streams = Vec::new();
    for _ in 0..STREAMS {
        let resp = client()
            .post(server.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let mut bytes = resp.bytes_stream();
        // committed: the first content chunk is here
        let mut text = String::new();
        while !text.contains("\"content\":\"") || sse_data(&text).len() < 2 {
            let chunk = bytes.next().await.expect("stream open").unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        streams.push(tokio::spawn(async move {
            while let Some(Ok(chunk)) = bytes.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk));
            }
            text
        }));
    }
    // and connections that never sent a byte
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let mut silent = Vec::new();
    for _ in 0..3 {
        silent.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let status = server.terminate().await;
    assert!(
        status.success(),
        "exit status {status}\n{}",
        server.output()
    );
    for stream in streams {
        let text = stream.await.unwrap();
        let events = sse_data(&text);
        assert!(!events.iter().any(|e| e == "[DONE]"), "{text}");
        let last: Value = serde_json::from_str(events.last().unwrap()).unwrap();
        assert_eq!(last["error"]["code"], "server_shutting_down", "{text}");
        assert_eq!(last["error"]["type"], "server_error");
    }
    let lines = lines_of(&log);
    assert_eq!(
        lines.len(),
        STREAMS,
        "one line per stream:\n{}",
        lines.join("\n")
    );
    for line in &lines {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["status"], 503, "{line}");
        assert_eq!(entry["stream"], true, "{line}");
        assert_eq!(entry["error"], "server_shutting_down", "{line}");
        assert!(
            entry["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
            "the tokens streamed so far are billed: {line}"
        );
    }
    for tcp in silent {
        assert!(crate::edge::closed_by_server(tcp).await);
    }
    assert!(
        server.output().contains("grace period over"),
        "{}",
        server.output()
    );
}
