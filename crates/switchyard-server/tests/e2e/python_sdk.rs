//! The official `openai` Python SDK, unchanged, against the proxy: a plain call, a streamed
//! call, a failover visible in the headers, and the SDK's typed exceptions for our 401,
//! 404 and 400. The checks live in `tests/python/test_openai_sdk.py`; this test starts the
//! proxy (simulated providers, one client key) and runs it with `$SWITCHYARD_PYTHON`
//! (default `python3`). Without the SDK it fails with the install command — never skips.

use std::time::Duration;

use sha2::{Digest as _, Sha256};

use crate::support::{
    describe, python, route, run_bounded, simulated_provider, try_run_bounded, Scratch, Server,
};

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

    let hash = hex::encode(Sha256::digest(TOKEN.as_bytes()));
    let config = format!(
        "{}{}{}{}[[keys]]\nname = \"python\"\nsha256 = \"{hash}\"\nroutes = [\"*\"]\n",
        simulated_provider("steady", 0.0),
        simulated_provider("always-down", 1.0),
        route("default", &["steady"], ""),
        route(
            "failover",
            &["always-down", "steady"],
            "retry = { max_attempts = 1 }"
        ),
    );
    let server = Server::start(Scratch::new("e2e", "python"), &config, &[]);
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
}
