//! `/v1/responses` with built-in tools through an OpenAI provider with `api = "responses"`:
//! the client's body reaches the vendor as written (its `web_search` tool included), the
//! vendor's `web_search_call` item reaches the client, plain and streamed, after a
//! Chat Completions provider was skipped (`needs_native`) and a broken Responses provider
//! failed over; `previous_response_id` becomes the stored items; a route with no such
//! provider refuses the tool by name; a Chat Completions client is served by a
//! Responses-only provider.

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{key_env, openai_provider, route, Scratch, Server};
use crate::upstream::{error_response, ok_completion, ok_stream};

const RESPONSES_PATH: &str = "/v1/responses";

fn searched(text: &str) -> Value {
    json!([
        {"type": "web_search_call", "id": "ws_up1", "status": "completed",
            "action": {"type": "search", "query": "switchyard news"}},
        {"type": "message", "id": "msg_up1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]},
    ])
}

fn upstream_response(text: &str) -> Value {
    json!({"id": "resp_upstream", "object": "response", "created_at": 1_764_410_400,
        "status": "completed", "model": "gpt-4o-mini", "output": searched(text),
        "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 25}})
}

/// The vendor's event stream: the search item, then the text, then the completion.
fn upstream_events(text: &str) -> String {
    let items = searched(text);
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_upstream", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "web_search_call", "id": "ws_up1", "status": "in_progress"}}),
        json!({"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_up1"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": items[0]}),
        json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"type": "message", "id": "msg_up1", "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_up1",
            "content_index": 0, "delta": text}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": items[1]}),
        json!({"type": "response.completed", "response": upstream_response(text)}),
    ];
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut e = e.clone();
            e["sequence_number"] = json!(i);
            format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())
        })
        .collect()
}

async fn mock(at: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// A chat-completions provider, a broken Responses one, a working Responses one.
struct Setup {
    server: Server,
    chat: MockServer,
    broken: MockServer,
    codex: MockServer,
}

async fn setup(codex: ResponseTemplate) -> Setup {
    let chat = mock("/v1/chat/completions", ok_completion("hello")).await;
    let broken = mock(
        RESPONSES_PATH,
        error_response(503, "overloaded", "server_error", None),
    )
    .await;
    let codex = mock(RESPONSES_PATH, codex).await;
    let config = format!(
        "{}{}{}{}{}",
        openai_provider("gpt", &chat.uri(), ""),
        openai_provider("codex-down", &broken.uri(), "api = \"responses\""),
        openai_provider("codex", &codex.uri(), "api = \"responses\""),
        route(
            "search",
            &["gpt", "codex-down", "codex"],
            "retry = { max_attempts = 1 }"
        ),
        route("plain", &["gpt"], ""),
    );
    let server = Server::start(Scratch::new("e2e", "responses-native"), &config, &key_env());
    Setup {
        server,
        chat,
        broken,
        codex,
    }
}

fn outcomes(trail: &Value) -> Vec<String> {
    trail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let why = a["reason"].as_str().or(a["kind"].as_str()).unwrap_or("");
            format!(
                "{}:{}:{why}",
                a["provider"].as_str().unwrap(),
                a["outcome"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn a_built_in_tool_passes_through_and_its_item_comes_back() {
    let s = setup(ResponseTemplate::new(200).set_body_json(upstream_response("All quiet."))).await;
    let request = json!({"model": "search", "input": "Any switchyard news?",
        "tools": [{"type": "web_search"}, {"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "include": ["web_search_call.action.sources"]});
    let reply = s
        .server
        .post_raw(RESPONSES_PATH, serde_json::to_vec(&request).unwrap(), &[])
        .await;
    reply.expect_status(200);
    let body = reply.json();
    assert_eq!(body["output"], searched("All quiet."), "{body}");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    assert_ne!(body["id"], "resp_upstream", "the response is ours");
    assert_eq!(body["tools"][0], json!({"type": "web_search"}));
    assert_eq!(body["usage"]["output_tokens"], 5);
    assert_eq!(
        outcomes(&body["switchyard"]),
        [
            "gpt:skipped:needs_native",
            "codex-down:failed:overloaded",
            "codex:success:"
        ]
    );
    assert_eq!(
        reply.header("x-switchyard-ignored"),
        "",
        "answered natively"
    );
    assert!(
        bodies(&s.chat).await.is_empty(),
        "a skipped provider is not called"
    );
    assert_eq!(bodies(&s.broken).await.len(), 1);
    let sent = bodies(&s.codex).await;
    let mut want = request.clone();
    want["model"] = json!("gpt-4o-mini");
    want["stream"] = json!(false);
    assert_eq!(sent, [want], "the client's body as written");

    // the next turn continues from our stored response: the vendor gets the items
    let next = json!({"model": "search", "input": "And tomorrow?", "tools": [{"type": "web_search"}],
        "previous_response_id": body["id"]});
    let reply = s
        .server
        .post_raw(RESPONSES_PATH, serde_json::to_vec(&next).unwrap(), &[])
        .await;
    reply.expect_status(200);
    let sent = bodies(&s.codex).await;
    let second = &sent[1];
    assert!(second.get("previous_response_id").is_none(), "{second}");
    let input = second["input"].as_array().unwrap();
    assert_eq!(
        input[0],
        json!({"role": "user", "content": "Any switchyard news?"})
    );
    assert_eq!(
        &input[1..3],
        searched("All quiet.").as_array().unwrap().as_slice()
    );
    assert_eq!(
        input[3],
        json!({"role": "user", "content": "And tomorrow?"})
    );
}

#[tokio::test]
async fn a_streamed_built_in_item_is_passed_on() {
    let s = setup(ok_stream(upstream_events("All quiet."))).await;
    let request = json!({"model": "search", "input": "Any news?", "stream": true,
        "tools": [{"type": "web_search"}]});
    let reply = s
        .server
        .post_raw(RESPONSES_PATH, serde_json::to_vec(&request).unwrap(), &[])
        .await;
    reply.expect_status(200);
    let events: Vec<Value> = reply
        .text
        .split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"], i, "{e}");
    }
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.web_search_call.searching",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ],
        "{}",
        reply.text
    );
    assert_eq!(events[2]["item"]["type"], "web_search_call");
    assert_eq!(events[4]["item"], searched("All quiet.")[0]);
    assert_eq!(events[5]["output_index"], 1);
    let done = &events[11]["response"];
    assert_eq!(done["output"][0], searched("All quiet.")[0]);
    assert_eq!(done["output"][1]["content"][0]["text"], "All quiet.");
    assert_eq!(done["switchyard"]["provider"], "codex");
    let sent = bodies(&s.codex).await;
    assert_eq!(sent[0]["tools"], json!([{"type": "web_search"}]));
    assert_eq!(sent[0]["stream"], true);
}

#[tokio::test]
async fn a_route_without_a_responses_provider_refuses_the_tool_by_name() {
    let s = setup(ResponseTemplate::new(500)).await;
    let request = json!({"model": "plain", "input": "Any news?",
        "tools": [{"type": "function", "name": "f"}, {"type": "web_search"}]});
    let reply = s
        .server
        .post_raw(RESPONSES_PATH, serde_json::to_vec(&request).unwrap(), &[])
        .await;
    reply.expect_status(400);
    let error = reply.error();
    assert_eq!(error["param"], "tools[1].type");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("\"web_search\""), "{message}");
    assert!(message.contains("api = \"responses\""), "{message}");
    assert!(bodies(&s.chat).await.is_empty());
    // without built-in tools the same route serves the request
    let chat_only =
        json!({"model": "search", "input": "hi", "tools": [{"type": "function", "name": "f"}]});
    let reply = s
        .server
        .post_raw(RESPONSES_PATH, serde_json::to_vec(&chat_only).unwrap(), &[])
        .await;
    assert_eq!(
        reply.header("x-switchyard-provider"),
        "gpt",
        "{}",
        reply.text
    );
}

/// A Chat Completions client served by a Responses-only model: the shared shape goes
/// upstream as a Responses body (`store: false`), and the answer comes back as a chat
/// completion, its usage counted.
#[tokio::test]
async fn a_chat_client_is_served_by_a_responses_provider() {
    let codex = mock(
        RESPONSES_PATH,
        ResponseTemplate::new(200).set_body_json(upstream_response("Hello there.")),
    )
    .await;
    let config = format!(
        "{}{}",
        openai_provider("codex", &codex.uri(), "api = \"responses\""),
        route("codex", &["codex"], ""),
    );
    let server = Server::start(
        Scratch::new("e2e", "responses-upstream"),
        &config,
        &key_env(),
    );
    let reply = server
        .chat(&json!({"model": "codex", "max_tokens": 50,
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}))
        .await;
    reply.expect_status(200);
    let body = reply.json();
    assert_eq!(body["choices"][0]["message"]["content"], "Hello there.");
    assert_eq!(body["usage"]["prompt_tokens"], 20);
    let sent = bodies(&codex).await;
    assert_eq!(
        sent,
        [json!({"model": "gpt-4o-mini", "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": "hi"}],
            "max_output_tokens": 50, "store": false, "stream": false})]
    );
}
