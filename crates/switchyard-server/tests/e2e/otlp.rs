//! Traces, logs and propagation through the real binary: a request that fails over and a
//! rescued stream exported over OTLP/HTTP to a collector (a wiremock server whose bodies
//! are decoded with `opentelemetry-proto`, as a collector decodes them), checked for the
//! span tree, its attributes and parent ids; the upstreams checked for the `traceparent`
//! and `x-request-id` they were sent; the stdout access log read back as JSON.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    chat_body, eventually, key_env, metric, openai_provider, route, stream_body, Scratch, Server,
    ANSWER, FAST_RETRY,
};
use crate::upstream::{calls, error_response, ok_completion, ok_stream, sse, upstream};

/// The client's trace: W3C's example `traceparent`, sampled.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const REQUEST_ID: &str = "req-e2e-otlp-1";

/// An OTLP/HTTP collector that accepts every export.
async fn collector() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/traces"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    server
}

/// Every span the collector received, with its resource's `service.name`.
async fn exported(collector: &MockServer) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    for req in collector.received_requests().await.unwrap_or_default() {
        assert_eq!(
            req.headers.get("content-type").unwrap(),
            "application/x-protobuf"
        );
        assert_eq!(req.headers.get("x-collector-token").unwrap(), "tok-e2e");
        let export = ExportTraceServiceRequest::decode(req.body.as_slice()).unwrap();
        for rs in export.resource_spans {
            let service = rs
                .resource
                .as_ref()
                .and_then(|r| attr(&r.attributes, "service.name"))
                .unwrap_or_default();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    out.push((service.clone(), span));
                }
            }
        }
    }
    out
}

/// An attribute's value as text (strings as they are, others printed).
fn attr(attrs: &[opentelemetry_proto::tonic::common::v1::KeyValue], key: &str) -> Option<String> {
    let v = attrs
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match v {
        Any::StringValue(s) => s.clone(),
        Any::BoolValue(b) => b.to_string(),
        Any::IntValue(i) => i.to_string(),
        Any::DoubleValue(d) => d.to_string(),
        // a string array as `[a,b]`
        Any::ArrayValue(a) => {
            let items: Vec<String> = (a.values.iter())
                .filter_map(|v| match v.value.as_ref()? {
                    Any::StringValue(s) => Some(s.clone()),
                    other => Some(format!("{other:?}")),
                })
                .collect();
            format!("[{}]", items.join(","))
        }
        other => format!("{other:?}"),
    })
}

fn span_attr(span: &Span, key: &str) -> String {
    attr(&span.attributes, key).unwrap_or_else(|| panic!("{key} missing on {}", span.name))
}

/// The `traceparent` parts an upstream call carried: (trace id, parent span id, flags).
fn traceparent(req: &wiremock::Request) -> (String, String, String) {
    let v = req
        .headers
        .get("traceparent")
        .expect("traceparent sent upstream");
    let parts: Vec<&str> = v.to_str().unwrap().split('-').collect();
    assert_eq!(parts.len(), 4, "{v:?}");
    assert_eq!(parts[0], "00");
    (
        parts[1].to_owned(),
        parts[2].to_owned(),
        parts[3].to_owned(),
    )
}

fn telemetry(collector: &MockServer) -> String {
    format!(
        "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"switchyard-e2e\"\naccess_log = true\n\
         otlp_headers = {{ \"x-collector-token\" = \"E2E_COLLECTOR_TOKEN\" }}\n",
        collector.uri()
    )
}

fn envs() -> Vec<(&'static str, &'static str)> {
    let mut envs = key_env().to_vec();
    envs.push(("E2E_COLLECTOR_TOKEN", "tok-e2e"));
    envs
}

/// The request's own span and its children, after checking the tree's shape.
fn tree(spans: &[(String, Span)]) -> (&Span, Vec<&Span>) {
    let roots: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == SpanKind::Server as i32)
        .collect();
    assert_eq!(roots.len(), 1, "one request span: {spans:?}");
    let root = roots[0];
    let children: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.parent_span_id == root.span_id)
        .collect();
    for (service, s) in spans {
        assert_eq!(service, "switchyard-e2e");
        assert_eq!(s.trace_id, root.trace_id, "one trace");
        assert!(s.end_time_unix_nano >= s.start_time_unix_nano, "{}", s.name);
    }
    assert_eq!(
        children.len() + 1,
        spans.len(),
        "every other span is the request's child"
    );
    (root, children)
}

#[tokio::test]
async fn a_failed_over_request_is_one_trace_continuing_the_clients() {
    let collector = collector().await;
    let primary = upstream(error_response(503, "overloaded", "server_error", None)).await;
    let fallback = upstream(ok_completion(ANSWER)).await;
    let config = format!(
        "{}{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route("smart", &["primary", "fallback"], FAST_RETRY),
        telemetry(&collector),
    );
    let mut server = Server::start(Scratch::new("e2e", "otlp-failover"), &config, &envs());
    let parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let reply = server
        .chat_with(
            &chat_body("smart", "hello"),
            &[
                ("traceparent", parent.as_str()),
                ("x-request-id", REQUEST_ID),
            ],
        )
        .await;
    reply.expect_status(200);
    assert_eq!(reply.header("x-switchyard-failed-over"), "true");
    // shutdown sends what is queued
    server.terminate().await;

    let spans = exported(&collector).await;
    let (root, children) = tree(&spans);
    assert_eq!(
        hex(&root.trace_id),
        CLIENT_TRACE,
        "the client's trace continues"
    );
    assert_eq!(hex(&root.parent_span_id), CLIENT_SPAN);
    assert_eq!(root.name, "chat smart");
    assert_eq!(span_attr(root, "gen_ai.operation.name"), "chat");
    assert_eq!(span_attr(root, "gen_ai.request.model"), "smart");
    assert_eq!(span_attr(root, "gen_ai.provider.name"), "openai");
    assert_eq!(span_attr(root, "switchyard.route"), "smart");
    assert_eq!(span_attr(root, "switchyard.provider"), "fallback");
    assert_eq!(span_attr(root, "switchyard.failed_over"), "true");
    assert_eq!(span_attr(root, "switchyard.request_id"), REQUEST_ID);
    assert_eq!(span_attr(root, "http.response.status_code"), "200");
    assert!(span_attr(root, "gen_ai.usage.input_tokens")
        .parse::<u64>()
        .is_ok());
    // content is exported only with capture_content
    for (_, s) in &spans {
        for key in ["gen_ai.input.messages", "gen_ai.output.messages"] {
            assert!(attr(&s.attributes, key).is_none(), "{key} on {}", s.name);
        }
    }

    // primary twice (max_attempts = 2), then the fallback, in time order
    let mut children = children;
    children.sort_by_key(|s| s.start_time_unix_nano);
    let providers: Vec<String> = children
        .iter()
        .map(|s| span_attr(s, "switchyard.provider"))
        .collect();
    assert_eq!(providers, ["primary", "primary", "fallback"]);
    for s in &children {
        assert_eq!(s.kind, SpanKind::Client as i32);
        assert_eq!(span_attr(s, "gen_ai.provider.name"), "openai");
        assert_eq!(span_attr(s, "switchyard.breaker.state"), "closed");
        assert!(s.start_time_unix_nano >= root.start_time_unix_nano);
        assert!(s.end_time_unix_nano <= root.end_time_unix_nano + 1_000_000);
    }
    for s in &children[..2] {
        assert_eq!(span_attr(s, "http.response.status_code"), "503");
        assert!(!span_attr(s, "error.type").is_empty());
        assert_eq!(s.status.as_ref().unwrap().code, 2, "error status");
    }
    assert_eq!(span_attr(children[2], "switchyard.outcome"), "success");
    assert!(attr(&children[2].attributes, "error.type").is_none());
    // each call names its upstream; the answer, its status, id, finish and own usage
    for (s, mock) in children.iter().zip([&primary, &primary, &fallback]) {
        let address = mock.address();
        assert_eq!(span_attr(s, "server.address"), address.ip().to_string());
        assert_eq!(span_attr(s, "server.port"), address.port().to_string());
    }
    let answer = children[2];
    assert_eq!(span_attr(answer, "http.response.status_code"), "200");
    assert_eq!(span_attr(answer, "gen_ai.response.id"), "chatcmpl-e2e0001");
    assert_eq!(
        span_attr(answer, "gen_ai.response.finish_reasons"),
        "[stop]"
    );
    assert_eq!(span_attr(answer, "gen_ai.usage.input_tokens"), "25");
    assert_eq!(span_attr(answer, "gen_ai.usage.output_tokens"), "12");
    assert_eq!(span_attr(root, "gen_ai.response.finish_reasons"), "[stop]");
    for s in &children[..2] {
        assert!(attr(&s.attributes, "gen_ai.response.id").is_none());
        assert!(attr(&s.attributes, "gen_ai.usage.input_tokens").is_none());
    }
    assert_eq!(
        root.status.as_ref().map_or(0, |s| s.code),
        0,
        "answered: unset"
    );

    // each upstream call carried its own span as parent, and the client's request id
    let mut sent = calls(&primary).await;
    sent.extend(calls(&fallback).await);
    assert_eq!(sent.len(), 3);
    let child_ids: Vec<String> = children.iter().map(|s| hex(&s.span_id)).collect();
    let mut parents = Vec::new();
    for req in &sent {
        assert_eq!(req.headers.get("x-request-id").unwrap(), REQUEST_ID);
        let (trace, span, flags) = traceparent(req);
        assert_eq!((trace.as_str(), flags.as_str()), (CLIENT_TRACE, "01"));
        parents.push(span);
    }
    parents.sort();
    let mut expected = child_ids.clone();
    expected.sort();
    assert_eq!(parents, expected, "upstreams were told the attempt spans");

    // the access log: one JSON line on stdout, naming the trace
    let output = server.output();
    let line: Value = output
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == REQUEST_ID)
        .unwrap_or_else(|| panic!("no access line in\n{output}"));
    assert_eq!(line["trace_id"], CLIENT_TRACE);
    assert_eq!(line["span_id"], hex(&root.span_id));
    assert_eq!(line["failed_over"], true);
    assert!(line["attempts"][0].get("message").is_none(), "{line}");
}

/// The HTTP conventions: a server span answering 4xx is not an error (its status is left
/// unset, `error.type` still says what went wrong); one answering 5xx is.
#[tokio::test]
async fn a_4xx_answer_is_not_an_error_span_and_a_5xx_one_is() {
    let collector = collector().await;
    let down = upstream(error_response(503, "overloaded", "server_error", None)).await;
    let config = format!(
        "{}{}{}",
        openai_provider("only", &down.uri(), ""),
        route("smart", &["only"], "retry = { max_attempts = 1 }"),
        telemetry(&collector),
    );
    let mut server = Server::start(Scratch::new("e2e", "otlp-4xx"), &config, &envs());
    let missing = server.chat(&chat_body("no-such-route", "hello")).await;
    missing.expect_status(404);
    let failed = server.chat(&chat_body("smart", "hello")).await;
    assert!(failed.status >= 500, "{}", failed.status);
    server.terminate().await;

    let spans = exported(&collector).await;
    let roots: Vec<&Span> = (spans.iter().map(|(_, s)| s))
        .filter(|s| s.kind == SpanKind::Server as i32)
        .collect();
    let by_status = |status: &str| {
        *roots
            .iter()
            .find(|s| span_attr(s, "http.response.status_code") == status)
            .unwrap_or_else(|| panic!("no {status} span in {roots:?}"))
    };
    let not_found = by_status("404");
    assert_eq!(not_found.status.as_ref().map_or(0, |s| s.code), 0, "unset");
    assert!(!span_attr(not_found, "error.type").is_empty());
    let bad_gateway = by_status(&failed.status.to_string());
    assert_eq!(bad_gateway.status.as_ref().unwrap().code, 2, "error");
}

#[tokio::test]
async fn a_rescued_stream_is_its_broken_call_and_its_rescue() {
    let collector = collector().await;
    let primary = upstream(ok_stream(sse(
        &["The capital of France", " is Paris"],
        false,
    )))
    .await;
    let fallback = upstream(ok_stream(sse(
        &["The capital", " of France is", " Paris (Île-de-France)."],
        true,
    )))
    .await;
    let config = format!(
        "{}{}{}{}",
        openai_provider("primary", &primary.uri(), ""),
        openai_provider("fallback", &fallback.uri(), ""),
        route(
            "smart",
            &["primary", "fallback"],
            "retry = { max_attempts = 1 }"
        ),
        telemetry(&collector),
    );
    let mut server = Server::start(Scratch::new("e2e", "otlp-rescue"), &config, &envs());
    let reply = server
        .chat(&stream_body("smart", "Capital of France?"))
        .await;
    reply.expect_status(200);
    let request_id = reply.header("x-request-id").to_owned();
    server.terminate().await;

    let spans = exported(&collector).await;
    let (root, mut children) = tree(&spans);
    assert_eq!(
        root.parent_span_id,
        Vec::<u8>::new(),
        "a new trace: no parent"
    );
    assert_eq!(span_attr(root, "gen_ai.request.stream"), "true");
    assert_eq!(span_attr(root, "switchyard.rescue.rung"), "restart");
    assert!(
        span_attr(root, "gen_ai.response.time_to_first_chunk")
            .parse::<f64>()
            .unwrap()
            >= 0.0
    );
    let events: Vec<&str> = root.events.iter().map(|e| e.name.as_str()).collect();
    assert!(events.contains(&"switchyard.stream.commit"), "{events:?}");

    children.sort_by_key(|s| s.start_time_unix_nano);
    assert_eq!(
        children.len(),
        2,
        "the broken call and its rescue: {children:?}"
    );
    assert_eq!(span_attr(children[0], "switchyard.provider"), "primary");
    assert!(span_attr(children[0], "switchyard.outcome").starts_with("failed:"));
    assert_eq!(span_attr(children[1], "switchyard.provider"), "fallback");
    assert_eq!(span_attr(children[1], "switchyard.rescue.rung"), "restart");
    assert!(attr(&children[0].attributes, "switchyard.rescue.rung").is_none());
    // the rescue call's own answer: its id, finish and usage (the broken call has none)
    assert_eq!(
        span_attr(children[1], "gen_ai.response.id"),
        "chatcmpl-e2e0101"
    );
    assert_eq!(
        span_attr(children[1], "gen_ai.response.finish_reasons"),
        "[stop]"
    );
    assert_eq!(span_attr(children[1], "gen_ai.usage.output_tokens"), "12");
    assert_eq!(span_attr(children[1], "http.response.status_code"), "200");
    assert!(attr(&children[0].attributes, "gen_ai.response.id").is_none());
    for child in &children {
        assert_eq!(span_attr(child, "switchyard.breaker.state"), "closed");
    }

    for (mock, child) in [(&primary, children[0]), (&fallback, children[1])] {
        let sent = calls(mock).await;
        assert_eq!(sent.len(), 1);
        assert_eq!(
            sent[0].headers.get("x-request-id").unwrap(),
            request_id.as_str()
        );
        let (trace, span, _) = traceparent(&sent[0]);
        assert_eq!(trace, hex(&root.trace_id));
        assert_eq!(span, hex(&child.span_id));
    }
}

#[tokio::test]
async fn without_export_the_clients_traceparent_is_forwarded_unchanged() {
    let up = upstream(
        ok_completion(ANSWER)
            .insert_header("x-ratelimit-remaining-requests", "59")
            .insert_header("x-ratelimit-remaining-tokens", "149984"),
    )
    .await;
    let config = format!(
        "{}{}",
        openai_provider("only", &up.uri(), ""),
        route("smart", &["only"], ""),
    );
    let server = Server::start(Scratch::new("e2e", "otlp-off"), &config, &key_env());
    let parent = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-00");
    server
        .chat_with(
            &chat_body("smart", "hello"),
            &[("traceparent", parent.as_str()), ("tracestate", "vendor=1")],
        )
        .await
        .expect_status(200);
    let sent = calls(&up).await;
    assert_eq!(sent[0].headers.get("traceparent").unwrap(), parent.as_str());
    assert_eq!(sent[0].headers.get("tracestate").unwrap(), "vendor=1");
    // a generated request id goes upstream too
    assert!(sent[0]
        .headers
        .get("x-request-id")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("req_"));

    // the upstream's rate-limit headroom, and the request by route and model
    let text = server.get("/metrics", &[]).await.everything();
    let expected: [Expected; 4] = [
        (
            "switchyard_upstream_ratelimit_remaining",
            &[("provider", "only"), ("limit", "requests")],
            59.0,
        ),
        (
            "switchyard_upstream_ratelimit_remaining",
            &[("provider", "only"), ("limit", "tokens")],
            149_984.0,
        ),
        (
            "switchyard_key_requests_total",
            &[
                ("route", "smart"),
                ("key", "none"),
                ("model", "gpt-4o-mini"),
                ("outcome", "answered"),
            ],
            1.0,
        ),
        ("switchyard_in_flight_requests", &[], 0.0),
    ];
    for (name, labels, value) in expected {
        assert_eq!(
            metric(&text, name, labels),
            Some(value),
            "{name} {labels:?} in\n{text}"
        );
    }
}

#[tokio::test]
async fn a_collector_that_is_down_costs_dropped_spans_and_a_json_warning_not_requests() {
    let up = upstream(ok_completion(ANSWER)).await;
    // a port nothing listens on
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = format!(
        "{}{}[telemetry]\nlog_format = \"json\"\notlp_endpoint = \"http://{closed}\"\n",
        openai_provider("only", &up.uri(), ""),
        route("smart", &["only"], ""),
    );
    let server = Server::start(Scratch::new("e2e", "otlp-down"), &config, &key_env());
    for _ in 0..3 {
        server
            .chat(&chat_body("smart", "hello"))
            .await
            .expect_status(200);
    }
    eventually("the export's warning", || {
        server.output().contains("OTLP export failed")
    })
    .await;
    let output = server.output();
    let warning: Value = output
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| {
            v["fields"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("OTLP export failed"))
        })
        .unwrap_or_else(|| panic!("no JSON warning in\n{output}"));
    assert_eq!(warning["level"], "WARN");
    assert!(warning["timestamp"].is_string());
    let text = server.get("/metrics", &[]).await.everything();
    let dropped = metric(&text, "switchyard_otlp_spans_dropped_total", &[]).unwrap();
    assert!(
        dropped >= 2.0,
        "a request span and its call, at least: {dropped}"
    );
    assert_eq!(
        metric(&text, "switchyard_otlp_spans_exported_total", &[]),
        Some(0.0)
    );
}

/// With `capture_content = true` the request span carries the prompt and the completion
/// (the GenAI conventions' message JSON), each cut to 64 KiB; neither reaches the access log.
#[tokio::test]
async fn captured_content_is_on_the_request_span_cut_to_its_cap() {
    const CAP: usize = 64 * 1024;
    let collector = collector().await;
    let up = upstream(ok_completion(ANSWER)).await;
    let streamer = upstream(ok_stream(sse(&["Paris", " (streamed)."], true))).await;
    let config = format!(
        "{}{}{}{}{}capture_content = true\n",
        openai_provider("only", &up.uri(), ""),
        openai_provider("streamer", &streamer.uri(), ""),
        route("smart", &["only"], ""),
        route("streamed", &["streamer"], ""),
        telemetry(&collector),
    );
    let mut server = Server::start(Scratch::new("e2e", "otlp-content"), &config, &envs());
    let short = "Capital of France? (marker-7f3a)";
    server
        .chat(&chat_body("smart", short))
        .await
        .expect_status(200);
    let long = format!("marker-9c1e {}", "x".repeat(CAP + 4096));
    server
        .chat(&chat_body("smart", &long))
        .await
        .expect_status(200);
    server
        .chat(&stream_body("streamed", "Capital? (marker-51b0)"))
        .await
        .expect_status(200);
    server.terminate().await;

    let spans = exported(&collector).await;
    let roots: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.kind == SpanKind::Server as i32)
        .collect();
    assert_eq!(roots.len(), 3, "{spans:?}");
    let input_of = |root: &Span| -> (String, Value) {
        let text = span_attr(root, "gen_ai.input.messages");
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        (text, v)
    };
    let by_marker = |marker: &str| {
        *roots
            .iter()
            .find(|r| span_attr(r, "gen_ai.input.messages").contains(marker))
            .unwrap_or_else(|| panic!("no span for {marker}"))
    };
    let (small, big, streamed) = (
        by_marker("marker-7f3a"),
        by_marker("marker-9c1e"),
        by_marker("marker-51b0"),
    );
    // a stream's completion: the text the gateway assembled
    let output: Value =
        serde_json::from_str(&span_attr(streamed, "gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["parts"][0]["content"], "Paris (streamed).");

    let (_, input) = input_of(small);
    let user = input
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["parts"][0],
        serde_json::json!({"type": "text", "content": short})
    );
    let output: Value = serde_json::from_str(&span_attr(small, "gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["parts"][0]["content"], ANSWER);
    assert_eq!(output[0]["finish_reason"], "stop");
    assert!(attr(&small.attributes, "switchyard.content.truncated").is_none());

    let (text, input) = input_of(big);
    assert!(text.len() <= CAP, "{} bytes", text.len());
    let cut = input.to_string();
    assert!(
        cut.contains("marker-9c1e") && cut.contains('…'),
        "the prompt, cut"
    );
    assert_eq!(span_attr(big, "switchyard.content.truncated"), "true");
    // the upstream got it whole
    assert!(calls(&up).await.iter().any(|r| r.body.len() > CAP + 4096));

    // content goes to the collector only: not to the access log on stdout
    let output = server.output();
    assert!(output.contains("\"trace_id\""), "access lines were written");
    for marker in ["marker-7f3a", "marker-9c1e", "marker-51b0", "(streamed)"] {
        assert!(!output.contains(marker), "{marker} on stdout");
    }
    assert!(!output.contains(ANSWER));
}

/// A metric's name, labels and value.
type Expected = (&'static str, &'static [(&'static str, &'static str)], f64);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
