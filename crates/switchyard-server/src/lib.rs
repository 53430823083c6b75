//! The switchyard server: the HTTP surface, client access, telemetry and the CLI commands
//! around the `switchyard` gateway library. The `switchyard` binary (`src/main.rs`) only
//! parses the command line and calls in here.

// `ApiError` is large (it carries the attempt trail for 502/504 bodies); it lives only on the
// cold error path of the HTTP edge, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub mod access;
pub mod cli;
pub mod config;
pub mod http;
pub mod shutdown;
pub mod telemetry;
