//! Client access: who may call the gateway and how much.
//!
//! Owns client keys (tokens stored as hashes, the routes each key may use), the per-key
//! budgets and rate limits checked before a request reaches the gateway, and each key's
//! requests in flight (`in_flight`). It does not own
//! the request guard (Host, Origin, content type: `crate::http::guard`), nor how a refusal
//! is written on the wire (`crate::http::error` turns an [`error::AccessError`] into its
//! `ApiError`).

pub mod caller;
pub mod dynamic;
pub mod error;
pub mod in_flight;
pub mod keys;
pub mod limits;
