//! The official `openai` Python SDK, unchanged, against the proxy: a plain call, a streamed
//! call, a failover visible in the headers, and the SDK's typed exceptions for our 401,
//! 404 and 400, and the sampling and output fields (`seed`, `logprobs`, penalties,
//! `parallel_tool_calls`, `reasoning_effort`, the developer role) reaching an OpenAI
//! upstream, with its log probabilities coming back. The checks live in
//! `tests/python/test_openai_sdk.py`; this test starts the proxy (simulated providers, an
//! OpenAI mock, one client key) and runs it with `$SWITCHYARD_PYTHON`
//! (default `python3`). Without the SDK it fails with the install command — never skips.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    describe, key_env, openai_provider, python, route, run_bounded, simulated_provider,
    try_run_bounded, Scratch, Server,
};
use crate::upstream::completion;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/test_openai_sdk.py"
);
const REQUIREMENTS: &str = "tests/python/requirements.txt";
/// The client token the script authenticates with.
const TOKEN: &str = "sy-e2e-python-sdk-token-5b8d0c2e";

#[tokio::test]
async fn openai_python_sdk_works_against_the_proxy() {
    let mut probe = python();
    probe.args(["-c", "import openai; print(openai.__version__)"]);
    let found = match try_run_bounded(probe, Duration::from_secs(60)) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(describe(&out)),
        Err(e) => Err(format!("cannot run the interpreter: {e}")),
    };
    if let Err(why) = found {
        panic!(
            "this test needs the official `openai` package in $SWITCHYARD_PYTHON (default python3).\n\
             Install it: python3 -m venv .venv && .venv/bin/pip install -r {REQUIREMENTS}\n\
             then run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{why}"
        );
    }

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
    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let config = format!(
        "{}{}{}{}{}{}[[keys]]\nname = \"python\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
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
    );
    let server = Server::start(Scratch::new("e2e", "python"), &config, &key_env());
    let mut script = python();
    script.args([SCRIPT, &format!("{}/v1", server.base), TOKEN]);
    let out = run_bounded(script, Duration::from_secs(120));
    assert!(
        out.status.success(),
        "the openai SDK script failed\n{}\n--- server\n{}",
        describe(&out),
        server.output()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("all openai SDK checks passed"), "{stdout}");

    let asked: Vec<Value> = upstream
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
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
