//! HTTP handlers: extract → canonical → gateway → back. One file per surface.

pub mod admin;
pub mod chat;
pub mod dashboard;
pub mod models;

#[cfg(test)]
mod tests;

use axum::http::Uri;

use crate::error::ApiError;

/// Any path we do not serve: OpenAI-shaped 404.
pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::no_such_path(uri.path())
}
