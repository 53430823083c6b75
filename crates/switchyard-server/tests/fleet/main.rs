//! The fleet tests: two `switchyard serve` replicas sharing one Redis (and one faultline
//! upstream, which therefore counts calls across the whole fleet) act as one gateway.
//!
//! - `breakers.rs`: a circuit opened on replica A is skipped by replica B (B's next
//!   request is `skipped:circuit_open`, and the upstream sees no call from it); exactly
//!   one half-open probe across both replicas;
//! - `budgets.rs`: 100 concurrent requests on two replicas never overspend a route
//!   budget and both report the same books; a restarted single process still refuses a
//!   spent budget, with the memory backend (replayed from the request log) and with Redis;
//! - `outage.rs`: killing Redis mid-run (or freezing it) leaves both replicas serving,
//!   they say so in `/admin/health` and `/metrics`, and reconnect (and agree on the
//!   books) when it returns; a reservation whose Redis reply was lost is released;
//! - `limits.rs`: a client key's `rpm` holds across the fleet;
//! - `health.rs`: one health checker per provider across both replicas (a lease in
//!   Redis), taken over by the survivor when its holder dies.
//! - `threads.rs`: a Messages thread created on one replica continues on the other, one
//!   `continue` at a time across both (its lease in Redis).
//! - `cache.rs`: a route's response cache in Redis: stored by one replica, a hit on the
//!   other.
//! - `eviction.rs`: `serve` and `check` refuse a budget Redis whose eviction policy can
//!   evict budget books, and warn of one they cannot read.
//!
//! Redis: tests that kill or freeze it start their own `redis-server` on a free port
//! (and fail if there is none on PATH); the others share the one at 127.0.0.1:6379 under
//! a unique key prefix, deleted afterwards. Every wait is a bounded poll.
//! Run with `cargo test -p switchyard-server --test fleet`.

// A test crate: failing loudly is the point; the harness reads child pipes on threads and
// talks to Redis with a blocking socket.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::disallowed_types,
    missing_docs
)]

#[path = "../common/mod.rs"]
mod common;
mod redis;
mod support;

mod breakers;
mod budgets;
mod cache;
mod eviction;
mod health;
mod limits;
mod outage;
mod threads;
