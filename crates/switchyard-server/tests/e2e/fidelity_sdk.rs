//! The official `openai` Python SDK reading what the upstream said back through both
//! OpenAI dialects (issue 15): log probabilities, a refusal, the `system_fingerprint` and
//! a streamed `n=2` answer, from an OpenAI Chat Completions mock written from OpenAI's
//! reference (its chunks, its `logprobs.content` entries, its `message.refusal`). The
//! checks live in `tests/python/test_fidelity_sdk.py`; this test asserts what reached the
//! upstream. Needs the SDK in `$SWITCHYARD_PYTHON` (fails with the install command, never
//! skips).

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{
    client_key, key_env, openai_provider, require_python, route, run_python, Scratch, Server,
};
use crate::upstream::bodies;

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-fidelity-sdk-token-4e19b7";

/// OpenAI's `logprobs.content` entries for the token `Hi` (one alternative).
fn entries() -> Value {
    json!([{"token": "Hi", "logprob": -0.25, "bytes": [72, 105],
        "top_logprobs": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105]}]}])
}

/// A Chat Completions upstream: "Hi" (with log probabilities when asked), then a refusal
/// "No."; streamed with `n=2`, a second choice "Yo" finishing first.
struct OpenAiMock;

impl OpenAiMock {
    fn chunk(choices: Value, usage: Option<Value>) -> String {
        let mut c = json!({"id": "chatcmpl-e2e", "object": "chat.completion.chunk",
            "created": 1_764_410_400, "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_e2e", "choices": choices});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        format!("data: {c}\n\n")
    }

    fn stream(body: &Value) -> String {
        let logprobs = if body["logprobs"] == true {
            json!({"content": entries(), "refusal": null})
        } else {
            Value::Null
        };
        let usage = json!({"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12});
        let mut out = String::new();
        if body["n"] == 2 {
            for choices in [
                json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
                json!([{"index": 1, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
                json!([{"index": 1, "delta": {"content": "Yo"}, "finish_reason": null}]),
                json!([{"index": 1, "delta": {}, "finish_reason": "stop"}]),
                json!([{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]),
                json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            ] {
                out.push_str(&Self::chunk(choices, None));
            }
        } else {
            for choices in [
                json!([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": null}, "logprobs": null, "finish_reason": null}]),
                json!([{"index": 0, "delta": {"content": "Hi"}, "logprobs": logprobs, "finish_reason": null}]),
                json!([{"index": 0, "delta": {"refusal": "No."}, "logprobs": null, "finish_reason": null}]),
                json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}]),
            ] {
                out.push_str(&Self::chunk(choices, None));
            }
        }
        if body["stream_options"]["include_usage"] == true {
            out.push_str(&Self::chunk(json!([]), Some(usage)));
        }
        out.push_str("data: [DONE]\n\n");
        out
    }
}

impl Respond for OpenAiMock {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if body["stream"] == true {
            return ResponseTemplate::new(200)
                .set_body_raw(Self::stream(&body), "text/event-stream");
        }
        let logprobs = if body["logprobs"] == true {
            json!({"content": entries(), "refusal": null})
        } else {
            Value::Null
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-e2e", "object": "chat.completion", "created": 1_764_410_400,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_e2e",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi",
                "refusal": "No.", "annotations": []}, "logprobs": logprobs,
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
        }))
    }
}

#[tokio::test]
async fn openai_python_sdk_reads_logprobs_refusals_and_choices_back() {
    require_python("openai");
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(OpenAiMock)
        .mount(&upstream)
        .await;
    let config = format!(
        "{}{}{}",
        openai_provider("gpt", &upstream.uri(), ""),
        route("fidelity", &["gpt"], ""),
        client_key("python", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "fidelity"), &config, &key_env());
    let base = format!("{}/v1", server.base);
    run_python(
        "test_fidelity_sdk.py",
        &[&base, TOKEN],
        "all fidelity SDK checks passed",
        &[&server],
    );

    let asked = bodies(&upstream).await;
    assert_eq!(asked.len(), 4, "{asked:?}");
    // the chat stream, then n=2, then both Responses calls, as Chat Completions upstream
    for at in [0, 2, 3] {
        assert_eq!(asked[at]["logprobs"], true, "{}", asked[at]);
        assert_eq!(asked[at]["top_logprobs"], 1, "{}", asked[at]);
    }
    assert_eq!(asked[1]["n"], 2);
    assert_eq!(asked[1]["stream"], true);
    assert!(asked[1].get("logprobs").is_none());
}
