//! End-to-end tests: the built `switchyard` binary as a child process, driven over real
//! sockets on 127.0.0.1, with wiremock servers standing in for OpenAI upstreams.
//!
//! One file per area:
//! - `proxy.rs`: a plain and a streamed completion relayed through the proxy;
//! - `failover.rs`: 503 → fallback; a 401 opens the circuit at once;
//! - `errors.rs`: every error status the proxy itself returns (400 401 403 404 413 402 502 504);
//! - `rescue.rs`: a stream cut mid-answer, rescued by restart-and-splice or ended with an
//!   error event;
//! - `admission.rs`: slow bodies of keys refused anyway (no route, over rpm) hold no slot;
//!   a key at its `max_in_flight` is refused while others are served;
//! - `auth_leaks.rs`: a Vertex token endpoint answering off-spec: its token in no error,
//!   log line or admin view;
//! - `hostile.rs`: keyless mode refuses a web page's requests (Host, Origin, content type);
//!   a 4 MiB `model` is refused by name and logged cut;
//! - `edge.rs`: slow, silent and too many clients; the connection and in-flight caps; the
//!   HTTP layer's own errors in OpenAI's JSON;
//! - `shutdown.rs`: SIGTERM with streams still open at the end of the grace period;
//! - `slow_readers.rs`: a client that stops reading a stream is let go at the route's
//!   deadline or the write timeout (upstream cancelled, slot back, log line written);
//! - `lifecycle.rs`: request log + `report`, graceful shutdown, `check`, `keys new`, the
//!   non-loopback refusal;
//! - `money.rs`: budgets hold against requests without `max_tokens`, the route's
//!   `default_max_tokens`, usage overruns alerted and counted, absurd usage failed over;
//! - `durability.rs`: a request's log line is in the file before its answer is complete;
//!   `kill -9` loses no answered request's line or spend;
//! - `preflight.rs`: `check` refuses what `serve` refuses before listening, warns of
//!   guessable keys; `keys new` refuses names that would break the TOML;
//! - `bedrock.rs`: a `kind = "bedrock"` provider signed with credentials from the
//!   environment, against a mock that verifies SigV4 and streams event-stream frames;
//! - `health.rs`: a health check in flight is abandoned at shutdown;
//! - `reload.rs`: SIGHUP reloads the config (a new route answers; a bad file is refused,
//!   said and counted, and changes nothing); reloads under load fail no request;
//! - `diagnostics.rs`: the library's `tracing` warnings on stderr, filtered by `RUST_LOG`;
//!   an outage and its recovery said at the default level (circuit transitions, the failover
//!   summary, the start-up line, config warnings), every stderr line JSON with
//!   `--log-format json` and stdout the access log's alone;
//! - `otlp.rs`: traces of a failed-over request and a rescued stream exported to an OTLP
//!   collector (each call's upstream, status, response id, finish reasons and own usage;
//!   a 4xx request span not an error), `traceparent` and `x-request-id` sent upstream, the
//!   stdout access log;
//! - `anthropic_sdk.rs`: the official `anthropic` Python SDK against the Messages dialect,
//!   failing over from Anthropic upstreams to an OpenAI one (`tests/python/test_anthropic_sdk.py`);
//! - `anthropic_threads.rs`: the `anthropic` SDK's default `tool_runner` (a message
//!   thread: `create`, then `continue`) completing a tool loop across a failover to OpenAI
//!   and across two replicas sharing Redis (`tests/python/test_anthropic_threads.py`);
//! - `claude_code.rs`: real Claude Code (`claude -p`, binary from `$SWITCHYARD_CLAUDE`) failing
//!   over from Anthropic to OpenAI;
//! - `fanout_sdk.rs`: the `openai` Python SDK's `n=2` failing over from a down OpenAI to
//!   Anthropic, which answers once per call, plain and streamed
//!   (`tests/python/test_fanout_sdk.py`);
//! - `fidelity_sdk.rs`: the `openai` Python SDK reading logprobs, refusals, the system
//!   fingerprint and `n=2` streams back through both OpenAI dialects
//!   (`tests/python/test_fidelity_sdk.py`);
//! - `embedded_default.rs`: the official SDKs and the Agents SDK using tools and structured
//!   outputs against `serve` with no config (the simulated providers;
//!   `tests/python/test_embedded_default.py`);
//! - `python_sdk.rs`: the official `openai` Python SDK against the proxy
//!   (`tests/python/test_openai_sdk.py`, interpreter from `$SWITCHYARD_PYTHON`).
//! - `sdk_fields.rs`: the official `anthropic` and `openai` SDKs sending every request field
//!   they support, checked at mock Anthropic and OpenAI upstreams
//!   (`tests/python/test_sdk_fields.py`).
//! - `degrade_sdk.rs`: the `openai` SDK's `seed`, penalties, `logprobs` and a thinking
//!   budget that cannot fit, on routes with no field settings, failing over from a down
//!   OpenAI to a mock Anthropic that refuses what Anthropic refuses
//!   (`tests/python/test_degrade_sdk.py`).
//!
//! `support.rs` is the harness (the Python scripts' runner among it), `upstream.rs` the mock
//! upstreams (the strict OpenAI and Anthropic among them). Run with
//! `SWITCHYARD_PYTHON=.venv/bin/python cargo test -p switchyard-server --test e2e`.

// A test crate: failing loudly is the point, and the harness blocks on child processes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    missing_docs
)]

#[path = "../common/mod.rs"]
mod common;
mod support;
mod upstream;

mod admission;
mod anthropic_sdk;
mod anthropic_threads;
mod auth_leaks;
mod bedrock;
mod claude_code;
mod codex;
mod degrade_sdk;
mod diagnostics;
mod durability;
mod edge;
mod embedded_default;
mod embeddings;
mod errors;
mod failover;
mod fanout_sdk;
mod fidelity_sdk;
mod health;
mod hostile;
mod lifecycle;
mod money;
mod otlp;
mod preflight;
mod proxy;
mod python_sdk;
mod reload;
mod rescue;
mod responses_native;
mod responses_sdk;
mod sdk_fields;
mod shutdown;
mod slow_readers;
