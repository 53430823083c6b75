//! Telemetry: what the server tells its operators about the traffic it carried.
//!
//! Owns the Prometheus metrics (the health checks' among them), the request log (one JSON
//! line per request), the lines that say what happened to traffic (circuit transitions,
//! health verdicts, exhausted budgets, the failover summary), the dashboard's short memory
//! of recent requests and transitions, the
//! dashboard's static files, the subscriber that shows `tracing` diagnostics on stderr
//! (text or JSON), the stdout access log, and trace export over OTLP (with prompt and
//! completion content only when asked for).
//! Each is a side output: it observes requests, never steers them. The routes that serve
//! these live in `crate::http`.

pub mod access;
pub mod content;
pub mod dashboard;
pub mod events;
pub mod failovers;
pub mod insight;
pub mod log;
pub mod metrics;
pub mod otlp;
pub mod refusals;
pub mod trace;
