//! Credentials fetched per call: a bearer token that rotates (a Microsoft Entra ID token
//! file, a Google OAuth2 access token from a service account).
//!
//! Owns [`TokenSource`], what [`super::codec::HttpProvider::with_bearer`] asks for a token
//! before each call. A source caches: a call costs a lock and a clone, not I/O, except
//! when the source decides to look again (its own rules: `azure/entra.rs`, `vertex/auth.rs`).

use async_trait::async_trait;

use super::secret::Secret;
use crate::error::ProviderError;

/// Where a provider's bearer token comes from.
#[async_trait]
pub trait TokenSource: Send + Sync + std::fmt::Debug {
    /// The token to send now (fetched, read or refreshed first when the source's copy is
    /// stale). A call's deadline covers this: dropping the future abandons the fetch.
    ///
    /// # Errors
    /// `Auth` when no valid token can be had (the credential is wrong or gone);
    /// `Connection` / `Timeout` / `Server` when the issuer could not be reached. Errors
    /// never carry the credential the token is made from.
    async fn token(&self) -> Result<Secret, ProviderError>;

    /// The token last handed out, if any: scrubbed from every error of the calls it went
    /// out with.
    fn current(&self) -> Option<Secret>;
}
