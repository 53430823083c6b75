//! The database tests: keys, teams and spend in the real PostgreSQL on 127.0.0.1:5432.
//!
//! - `api.rs`: the admin API end to end over HTTP (keys: create, list, get, patch, revoke,
//!   rotate; teams; the spend report; bad input, unknown ids, the audit trail);
//! - `replicas.rs`: a key made through replica A's API authenticates on replica B within a
//!   second, and stops within a second of its revocation;
//! - `crash.rs`: `kill -9` of a `switchyard serve` under load, then a restart on the same log
//!   and database: the spend rows are exactly the log's answered requests, each once;
//! - `limits.rs`: raising or lowering a database key's or its team's budget through the
//!   API keeps what was spent; only the limit changes;
//! - `outage.rs`: a PostgreSQL cluster of the test's own (`cluster.rs`) stopped and started
//!   again under traffic: no request fails, `/readyz` and `switchyard_database_up` say so,
//!   and afterwards the spend rows are exactly the log's answered requests;
//! - `spend.rs`: spend rows equal the request log's answered lines after re-reading the same
//!   log, after a checkpoint lost between write and checkpoint, and after a database outage;
//!   a replica whose database is down serves traffic and says so;
//! - `tls.rs`: each `sslmode` (with `sslrootcert`) against clusters of the test's own, one
//!   taking TLS connections only, one without TLS; a password login (SCRAM) over TLS.
//!
//! Each test makes its own database (a random name, dropped afterwards). Without a
//! PostgreSQL answering, the tests say so and pass, unless `SWITCHYARD_REQUIRE_POSTGRES` is
//! set (`.ci/run` sets it and starts PostgreSQL). Every wait is a bounded poll.
//! Run with `cargo test -p switchyard-server --test database`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::disallowed_types,
    missing_docs
)]

mod cluster;
mod support;

mod api;
mod crash;
mod limits;
mod outage;
mod replicas;
mod scale;
mod spend;
mod tls;
