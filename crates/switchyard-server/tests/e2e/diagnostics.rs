//! The library's `tracing` events reach the binary's stderr, filtered by `RUST_LOG`
//! (default `info`): here the shared state's warning when Redis does not answer.

use crate::common::http::eventually;
use crate::common::serve::Scratch;
use crate::support::{route, simulated_provider, Server};

/// What the library's Redis link logs (at `warn`) when Redis does not answer.
const REDIS_LOST: &str = "shared state: Redis unavailable, serving from local state";
/// The server's own line about the same (printed directly, whatever `RUST_LOG` says),
/// after the library's.
const NOT_ANSWERING: &str = "Redis is not answering";

/// A config whose `[state]` points at a 127.0.0.1 port nothing listens on.
fn config_with_unreachable_redis() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!(
        "{}{}[state]\nbackend = \"redis\"\nurl = \"redis://127.0.0.1:{port}\"\nprefix = \"diag\"\ntimeout = \"200ms\"\n",
        simulated_provider("sim", 0.0),
        route("main", &["sim"], ""),
    )
}

#[tokio::test]
async fn the_librarys_warnings_are_shown_by_default() {
    let config = config_with_unreachable_redis();
    // empty RUST_LOG: the default filter, whatever the test runner's environment says
    let server = Server::start(Scratch::new("e2e", "diag"), &config, &[("RUST_LOG", "")]);
    eventually("the library's Redis warning on stderr", || {
        server.output().contains(REDIS_LOST)
    })
    .await;
}

#[tokio::test]
async fn rust_log_hides_what_it_filters_out() {
    let config = config_with_unreachable_redis();
    let server = Server::start(
        Scratch::new("e2e", "diag-quiet"),
        &config,
        &[("RUST_LOG", "error")],
    );
    eventually("the server's own Redis warning on stderr", || {
        server.output().contains(NOT_ANSWERING)
    })
    .await;
    assert!(!server.output().contains(REDIS_LOST), "{}", server.output());
}
