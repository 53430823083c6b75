//! The switchyard server: the HTTP surface, client access, telemetry and the CLI commands
//! around the `switchyard` gateway library. The `switchyard` binary (`src/main.rs`) only
//! parses the command line, installs the diagnostics subscriber and calls [`cli::run`].
//!
//! Crate map:
//! - [`http`]: the HTTP surface — the route table, [`http::AppState`], the error shape
//!   ([`http::ApiError`]), the request guard, bounds on client text, the connection edge,
//!   the admin / models / dashboard handlers and the inbound dialects (Chat Completions);
//! - [`access`]: client keys, per-key budgets and rate limits;
//! - [`telemetry`]: metrics, the request log, the dashboard's memory and files, the
//!   `tracing` subscriber and the lines that say what happened to traffic;
//! - [`database`]: PostgreSQL (`[database]`) for virtual keys, teams and spend — the pool,
//!   the embedded schema, all SQL, the key sync (LISTEN/NOTIFY) and the spend writer; never
//!   on the request path;
//! - [`config`]: the TOML schema, loading and validation, and building the gateway from it;
//! - [`cli`]: the command line and its subcommands (`serve`, `check`, `report`, `keys`,
//!   `demo`);
//! - [`simulated`]: the tutorial's simulated providers (CPython's generator, replayed bit
//!   for bit), behind `kind = "simulated"` and `switchyard demo`;
//! - [`reload`]: hot reload of the config file (SIGHUP, `POST /admin/reload`, the file
//!   watch);
//! - [`shutdown`]: the task tracker (the one place that spawns) and the stop signal.

// `ApiError` is large (it carries the attempt trail for 502/504 bodies); it lives only on the
// cold error path of the HTTP edge, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub mod access;
pub mod cache;
pub mod cli;
pub mod config;
pub mod database;
pub mod http;
pub(crate) mod json_out;
pub mod reload;
pub mod shutdown;
pub mod simulated;
pub mod telemetry;
