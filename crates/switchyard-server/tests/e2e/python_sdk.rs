//! The official `openai` Python SDK, unchanged, against the proxy: a plain call, a streamed
//! call, a failover visible in the headers, and the SDK's typed exceptions for our 401,
//! 404 and 400, and the sampling and output fields (`seed`, `logprobs`, penalties,
//! `parallel_tool_calls`, `reasoning_effort`, the developer role) reaching an OpenAI
//! upstream, with its log probabilities coming back. The checks live in
//! `tests/python/test_openai_sdk.py`; this test starts the proxy (simulated providers, an
//! OpenAI mock, one client key) and runs it with `$SWITCHYARD_PYTHON`
//! (default `python3`). Without the SDK it fails with the install command — never skips.

use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    client_key, key_env, openai_provider, require_python, route, run_python, simulated_provider,
    Scratch, Server,
};
use crate::upstream::{bodies, completion};

/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-python-sdk-token-5b8d0c2e";

#[tokio::test]
async fn openai_python_sdk_works_against_the_proxy() {
    require_python("openai");

    let upstream = MockServer::start().await;
    let mut answer = completion("Paris");
    answer["choices"][0]["logprobs"] = json!({"content": [{"token": "Paris", "logprob": -0.01,
        "bytes": [80, 97, 114, 105, 115], "top_logprobs": [
            {"token": "Paris", "logprob": -0.01, "bytes": null},
            {"token": "Lyon", "logprob": -5.2, "bytes": null}]}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&upstream)
        .await;
    let config = format!(
        "{}{}{}{}{}{}{}",
        simulated_provider("steady", 0.0),
        simulated_provider("always-down", 1.0),
        // the mock stands in for a reasoning model: gpt-4o-mini, which the price table
        // marks as not reasoning, would be skipped for reasoning_effort
        openai_provider("gpt", &upstream.uri(), "reasoning = true"),
        route("default", &["steady"], ""),
        route(
            "failover",
            &["always-down", "steady"],
            "retry = { max_attempts = 1 }"
        ),
        route("fields", &["gpt"], ""),
        client_key("python", TOKEN),
    );
    let server = Server::start(Scratch::new("e2e", "python"), &config, &key_env());
    let base = format!("{}/v1", server.base);
    run_python(
        "test_openai_sdk.py",
        &[&base, TOKEN],
        "all openai SDK checks passed",
        &[&server],
    );

    let asked = bodies(&upstream).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    let body = &asked[0];
    assert_eq!(body["seed"], 7, "{body}");
    assert_eq!(body["logprobs"], true);
    assert_eq!(body["top_logprobs"], 2);
    assert_eq!(body["presence_penalty"], 0.5);
    assert_eq!(body["frequency_penalty"], 0.25);
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["messages"][0]["role"], "developer");
}
