//! The HTTP surface: everything between a client's socket and the gateway.
//!
//! The route table ([`app()`]) sits on top; below it the handlers (the inbound dialects,
//! admin, models, dashboard), and below those what they share: [`AppState`], the error
//! shape every failure is answered with ([`ApiError`]), the request guard and the bounds on
//! client text. The connection edge (accept loop, timeouts, caps) wraps the router.

pub mod admin;
pub mod app;
pub mod bounds;
pub mod dashboard;
pub mod dialects;
pub mod edge;
pub mod error;
pub mod guard;
pub mod manage;
pub mod models;
pub mod origins;
pub(crate) mod paging;
pub mod request_id;
pub mod state;

#[cfg(test)]
mod tests;

pub use app::{app, app_live};
pub use error::ApiError;
pub use state::{
    AppState, Live, Reload, ReloadRefused, Reloadable, Shared, DEFAULT_MAX_BODY_BYTES,
};
