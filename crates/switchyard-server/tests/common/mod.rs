//! What the suites that drive the built `switchyard` binary share (`e2e`, `conformance`,
//! `fleet`; each includes this directory with `#[path = "../common/mod.rs"]`):
//!
//! - `serve.rs`: the binary as a child process — scrubbed environment, output captured,
//!   the listening line awaited, SIGTERM with a bounded wait, kill on drop — and scratch
//!   directories;
//! - `conf.rs`: the primary + fallback config of the faultline suites;
//! - `http.rs`: the HTTP client, a whole response, SSE and trail parsing, request bodies,
//!   bounded polling.

// Each suite uses part of this; what one leaves unused is not dead in another.
#![allow(dead_code)]

pub mod conf;
pub mod http;
pub mod serve;
