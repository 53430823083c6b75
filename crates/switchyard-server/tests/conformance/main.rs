//! The failure conformance suite: the built `switchyard serve` against faultline upstreams
//! (`crates/faultline`), one test per scenario of issue 5, primary + fallback routes.
//!
//! Each scenario passes only with the complete canonical answer where a rescue is
//! possible, and with a clean error (an HTTP error, or an in-band error event and no
//! `[DONE]`) where it is not — and asserts the gateway's *conduct* from faultline's
//! records: how many attempts each model got, how far apart, with or without a prefill,
//! and whether the gateway hung up.
//!
//! - `retries.rs`: 1 Retry-After honoured (and 1b: too long → fail over at once), 2 429
//!   forever with jittered backoff, 3 a 500 retried, 5 a TCP reset;
//! - `failover.rs`: 4 a dead primary's circuit opens, 6 a silent provider, 12 context
//!   length, 13 content filter;
//! - `streams.rs`: 7 first-token timeout, 8 cut → continuation, 9 stall, 10 malformed
//!   chunk, 11 no `[DONE]`, 14 prefill rejected → restart and splice;
//! - `outage.rs`: 15 an outage ridden out, one probe per cooldown;
//! - `accounting.rs`: 16 failover accounting across response, request log and ledger;
//! - `also.rs`: bad requests keep circuits closed, exactly one half-open probe, budgets
//!   under concurrency, a client disconnect cancels the upstream call (mid-stream, and
//!   before the answer);
//! - `health.rs`: a listing health check finds a 401 and the first user request goes
//!   straight to the fallback;
//! - `design.rs`: more of the promises in docs/design.md — error events before and after the commit
//!   point, a cancelled probe does not wedge the circuit, a committed stream still ends
//!   at the deadline.
//!
//! Every test has its own faultline and its own server on port 0, so they run
//! concurrently. Run with `cargo test -p switchyard-server --test conformance`.

// A test crate: failing loudly is the point; the harness reads child pipes on threads.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss,
    missing_docs
)]

#[path = "../common/mod.rs"]
mod common;
mod support;

mod accounting;
mod also;
mod design;
mod failover;
mod health;
mod outage;
mod recovery;
mod retries;
mod streams;
