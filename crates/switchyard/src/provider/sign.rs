//! Credentials that sign each request: a signature computed over the method, the URL, some
//! headers and the body (AWS Signature Version 4), so it cannot be a header built once.
//!
//! Owns [`RequestSigner`], what [`super::codec::HttpProvider::with_signer`] asks to sign a
//! request just before it is sent (after every other header is in place), and what the
//! provider scrubs from every error. The AWS signer is `bedrock/sigv4.rs`.

use async_trait::async_trait;
use http::HeaderMap;

use super::http::Endpoint;
use super::secret::Secret;
use crate::error::ProviderError;

/// What a signature covers.
#[derive(Debug, Clone, Copy)]
pub struct Signable<'a> {
    /// `GET` or `POST`.
    pub method: &'a str,
    /// Where the request goes.
    pub url: &'a Endpoint,
    /// The exact bytes of the body (empty for a `GET`).
    pub body: &'a [u8],
}

/// Signs requests for a provider.
#[async_trait]
pub trait RequestSigner: Send + Sync + std::fmt::Debug {
    /// Add the headers that authenticate `request` to `headers` (which hold every header
    /// the request will carry, except `content-type`, `content-length` and `user-agent`,
    /// which a signature need not cover). Credential values are marked sensitive.
    ///
    /// # Errors
    /// `Auth` when no signature can be made (no usable credentials). Errors never carry a
    /// credential.
    async fn sign(
        &self,
        request: Signable<'_>,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError>;

    /// The secrets a signature is made from (a secret key, a session token): scrubbed
    /// from every error of the provider, like a key.
    fn secrets(&self) -> Vec<Secret>;
}
