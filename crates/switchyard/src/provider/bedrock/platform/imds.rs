//! The EC2 instance metadata service, version 2 only (session tokens): an instance
//! profile's role credentials.
//!
//! Owns [`InstanceMetadata`], an [`Issuer`]. One fetch is three requests to the endpoint
//! (`http://169.254.169.254` unless given, as `AWS_EC2_METADATA_SERVICE_ENDPOINT` does):
//! 1. `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds` ([`TOKEN_TTL_SECS`])
//!    — the session token, the answer's body;
//! 2. `GET /latest/meta-data/iam/security-credentials/` with `X-aws-ec2-metadata-token` — the
//!    role's name (the first line);
//! 3. `GET /latest/meta-data/iam/security-credentials/{role}` with the token — JSON `Code`
//!    (`Success`), `AccessKeyId`, `SecretAccessKey`, `Token`, `Expiration`.
//!
//! IMDSv1 (no token) is never used. Each request: connect timeout
//! [`super::LOCAL_CONNECT_TIMEOUT`], whole request [`super::LOCAL_REQUEST_TIMEOUT`], answer
//! capped at [`super::MAX_ANSWER_BYTES`]. A refused token (`403`: IMDS off, or the hop limit
//! of 1 reached from a container) and no role (`404`) say so.

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderMap;

use super::{bounded, failed, from_json, refused, Issued, Issuer, LOCAL_REQUEST_TIMEOUT};
use crate::error::ProviderError;
use crate::provider::http::{self as transport, ConfigError, Endpoint, HttpClient};
use crate::provider::secret::Secret;

/// The instance metadata endpoint.
pub const DEFAULT_ENDPOINT: &str = "http://169.254.169.254";

/// The session token's lifetime asked for, in seconds (the most IMDS gives: 6 hours).
pub const TOKEN_TTL_SECS: u32 = 21_600;

/// The path listing the instance profile's role.
const ROLE_PATH: &str = "/latest/meta-data/iam/security-credentials/";

/// Role credentials from the EC2 instance metadata service.
#[derive(Debug)]
pub struct InstanceMetadata {
    root: String,
    token_url: Endpoint,
    role_url: Endpoint,
    http: HttpClient,
    /// The session token last used, scrubbed from errors.
    token: Mutex<Option<Secret>>,
}

impl InstanceMetadata {
    /// The service at `endpoint` (see [`DEFAULT_ENDPOINT`]), through `http`.
    ///
    /// # Errors
    /// An endpoint that is not an http(s) URL.
    pub fn new(endpoint: &str, http: HttpClient) -> Result<Self, ConfigError> {
        let root = endpoint.trim().trim_end_matches('/').to_owned();
        Ok(Self {
            token_url: Endpoint::at(&root, "/latest/api/token")?,
            role_url: Endpoint::at(&root, ROLE_PATH)?,
            root,
            http,
            token: Mutex::new(None),
        })
    }

    /// `url`'s body, or an error naming `what`.
    async fn read(
        &self,
        put: bool,
        url: &Endpoint,
        headers: &HeaderMap,
        what: &str,
    ) -> Result<Bytes, ProviderError> {
        let exchange = async {
            let response = if put {
                self.http.put_empty(url, headers).await?
            } else {
                self.http.get(url, headers).await?
            };
            if response.is_success() {
                return response.body().await;
            }
            let failure = response.into_failure().await;
            let hint = match (put, failure.status) {
                (true, 403) => " (instance metadata is off, or the hop limit is reached: from a container, the instance needs a hop limit of 2)",
                (false, 404) => " (no IAM role is attached to the instance)",
                _ => "",
            };
            Err(refused(failure.status, hint, &failure.body))
        };
        bounded(LOCAL_REQUEST_TIMEOUT, what, exchange).await
    }

    async fn fetch(&self) -> Result<Issued, ProviderError> {
        let mut headers = HeaderMap::new();
        transport::insert_header(
            &mut headers,
            "x-aws-ec2-metadata-token-ttl-seconds",
            &TOKEN_TTL_SECS.to_string(),
        )
        .map_err(|e| failed(e.0))?;
        let body = self
            .read(true, &self.token_url, &headers, "the IMDSv2 session token")
            .await?;
        let token = String::from_utf8_lossy(&body).trim().to_owned();
        if token.is_empty() {
            return Err(failed("the IMDSv2 session token is empty"));
        }
        let token = Secret::new(token);
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        let mut headers = HeaderMap::new();
        transport::insert_secret_header(&mut headers, "x-aws-ec2-metadata-token", "", &token)
            .map_err(|e| failed(format!("the IMDSv2 session token: {e}")))?;
        let body = self
            .read(false, &self.role_url, &headers, "the instance's IAM role")
            .await?;
        let listing = String::from_utf8_lossy(&body);
        let role = listing.lines().map(str::trim).find(|l| !l.is_empty());
        let role = role
            .filter(|r| {
                r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b))
            })
            .ok_or_else(|| {
                failed("the instance has no IAM role (an empty or unreadable role listing)")
            })?;
        let url =
            Endpoint::at(&self.root, &format!("{ROLE_PATH}{role}")).map_err(|e| failed(e.0))?;
        let what = format!("role {role}'s credentials");
        let body = self.read(false, &url, &headers, &what).await?;
        from_json(&body, &what)
    }
}

#[async_trait]
impl Issuer for InstanceMetadata {
    fn describe(&self) -> String {
        format!("EC2 instance metadata (IMDSv2) at {}", self.root)
    }

    async fn issue(&self) -> Result<Issued, ProviderError> {
        self.fetch().await.map_err(|e| {
            let token = self
                .token
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let mut e = transport::redact(token.as_ref(), e);
            e.message = format!("EC2 instance metadata at {}: {}", self.root, e.message);
            e
        })
    }

    fn secrets(&self) -> Vec<Secret> {
        self.token
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}
