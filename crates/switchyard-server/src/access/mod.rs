//! Client access: who may call the gateway and how much.
//!
//! Owns client keys (tokens stored as hashes, the routes each key may use) and the per-key
//! budgets and rate limits checked before a request reaches the gateway. It does not own
//! the request guard (Host, Origin, content type: `crate::http::guard`).

pub mod keys;
pub mod limits;
