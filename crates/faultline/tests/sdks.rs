//! The official Python SDKs, unchanged, against faultline: `openai`'s Responses API and
//! `anthropic`'s Messages API parse its bodies, streams and errors. The checks live in
//! `tests/python/faultline_sdks.py`; this test starts faultline with the models the script
//! expects and runs it with `$SWITCHYARD_PYTHON` (default `python3`). Without the SDKs it
//! fails with the install command — never skips.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::Duration;

use faultline::{Fault, Server, CANONICAL_ANSWER};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/python/faultline_sdks.py"
);
const REQUIREMENTS: &str = "tests/python/requirements.txt";
/// The longest the script may take.
const LIMIT: Duration = Duration::from_secs(120);

fn python() -> Command {
    let interpreter = std::env::var("SWITCHYARD_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let mut cmd = Command::new(interpreter);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Run `cmd` to completion within [`LIMIT`]: (success, stdout + stderr). Its output is
/// small: read once it has exited.
async fn run(mut cmd: Command) -> (bool, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the interpreter");
    let deadline = tokio::time::Instant::now() + LIMIT;
    while child.try_wait().unwrap().is_none() {
        if tokio::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_parse_responses_and_messages() {
    let mut probe = python();
    probe.args(["-c", "import openai, anthropic"]);
    let (ok, why) = run(probe).await;
    assert!(
        ok,
        "this test needs the official `openai` and `anthropic` packages in $SWITCHYARD_PYTHON \
         (default python3).\nInstall them: python3 -m venv .venv && .venv/bin/pip install -r \
         {REQUIREMENTS}\nthen run with SWITCHYARD_PYTHON=$PWD/.venv/bin/python\n{why}"
    );

    let server = Server::new()
        .script("limited", Fault::rate_limited(2))
        .script("overloaded", Fault::status(529))
        .script("broken", Fault::ErrorEvent { after: 5 })
        .start()
        .await
        .unwrap();
    let mut script = python();
    script.args([SCRIPT, &server.uri(), CANONICAL_ANSWER]);
    let (ok, out) = run(script).await;
    assert!(ok, "the SDK script failed:\n{out}");
    assert!(out.contains("all faultline SDK checks passed"), "{out}");
    // every request reached faultline in its own API
    let apis: Vec<_> = server.all_attempts().iter().map(|a| a.api).collect();
    assert!(apis.contains(&faultline::Api::Responses) && apis.contains(&faultline::Api::Messages));
}
