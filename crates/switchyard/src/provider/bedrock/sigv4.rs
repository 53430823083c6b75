//! AWS Signature Version 4 for Bedrock calls, by `aws-sigv4`: every request is signed over
//! its method, URL, headers and body hash, with the service name `bedrock` and the
//! provider's region, at the provider's clock's time.
//!
//! Owns [`SigV4`], the [`RequestSigner`] given to the HTTP provider: with fixed credentials, a
//! profile file's as they are at each signature ([`ProfileFile`]), or expiring ones the
//! platform issues, refreshed before they expire ([`PlatformCredentials`]). Signed: `host` (set here to
//! exactly what the transport sends), `x-amz-date`, `x-amz-security-token` when there is a
//! session token, and every header the request already carries (`accept`, configured
//! headers). The secret key and the session token are the secrets the provider scrubs from
//! every error; the `authorization` and token headers are marked sensitive.

use std::sync::Arc;

use async_trait::async_trait;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use http::header::{HeaderName, HeaderValue, HOST};
use http::HeaderMap;

use super::credentials::AwsCredentials;
use super::platform::PlatformCredentials;
use super::profile::ProfileFile;
use crate::clock::Clock;
use crate::error::{ErrorKind, ProviderError};
use crate::provider::secret::Secret;
use crate::provider::sign::{RequestSigner, Signable};

/// The SigV4 service name of Bedrock (runtime and control plane alike).
pub const SERVICE: &str = "bedrock";

/// Signs requests in one region, with fixed credentials, a profile file's or the platform's.
#[derive(Debug)]
pub struct SigV4 {
    source: Source,
    region: String,
    clock: Clock,
}

/// Where a signer's credentials come from.
#[derive(Debug)]
enum Source {
    /// Read once (the environment, a profile read at start).
    Fixed {
        credentials: AwsCredentials,
        identity: Identity,
    },
    /// A profile of a credentials file, re-read when the file changes.
    File(Arc<ProfileFile>),
    /// Issued by the platform (web identity, container, instance metadata), refreshed
    /// before they expire.
    Platform(Arc<PlatformCredentials>),
}

/// `credentials` as what `aws-sigv4` signs with.
fn identity_of(credentials: &AwsCredentials) -> Identity {
    Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.expose().to_owned(),
        credentials
            .session_token
            .as_ref()
            .map(|t| t.expose().to_owned()),
        None,
        "switchyard",
    )
    .into()
}

impl SigV4 {
    /// A signer for `region` with `credentials`, dating signatures by `clock`.
    #[must_use]
    pub fn new(credentials: AwsCredentials, region: impl Into<String>, clock: Clock) -> Self {
        let identity = identity_of(&credentials);
        Self {
            source: Source::Fixed {
                credentials,
                identity,
            },
            region: region.into(),
            clock,
        }
    }

    /// A signer for `region` with the credentials of a profile file, as they are when each
    /// request is signed (see [`ProfileFile`]).
    #[must_use]
    pub fn from_file(file: Arc<ProfileFile>, region: impl Into<String>, clock: Clock) -> Self {
        Self {
            source: Source::File(file),
            region: region.into(),
            clock,
        }
    }

    /// A signer for `region` with credentials the platform issues, refreshed before they
    /// expire (see [`PlatformCredentials`]).
    #[must_use]
    pub fn from_platform(
        credentials: Arc<PlatformCredentials>,
        region: impl Into<String>,
        clock: Clock,
    ) -> Self {
        Self {
            source: Source::Platform(credentials),
            region: region.into(),
            clock,
        }
    }
}

fn auth_error(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Auth, message)
}

#[async_trait]
impl RequestSigner for SigV4 {
    async fn sign(
        &self,
        request: Signable<'_>,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError> {
        headers.insert(HOST, request.url.host().clone());
        let from_file;
        let identity = match &self.source {
            Source::Fixed { identity, .. } => identity,
            Source::File(file) => {
                let credentials = file.get().map_err(|e| auth_error(e.to_string()))?;
                from_file = identity_of(&credentials);
                &from_file
            }
            Source::Platform(platform) => {
                let credentials = platform.get().await?;
                from_file = identity_of(&credentials);
                &from_file
            }
        };
        let settings = SigningSettings::default();
        let params = v4::SigningParams::builder()
            .identity(identity)
            .region(&self.region)
            .name(SERVICE)
            .time(self.clock.system_time())
            .settings(settings)
            .build()
            .map_err(|e| auth_error(format!("SigV4 parameters: {e}")))?
            .into();
        let signed: Vec<(&str, &str)> = headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let signable = SignableRequest::new(
            request.method,
            request.url.as_str(),
            signed.into_iter(),
            SignableBody::Bytes(request.body),
        )
        .map_err(|e| auth_error(format!("SigV4 cannot sign this request: {e}")))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| auth_error(format!("SigV4 signing failed: {e}")))?
            .into_parts();
        let (added, _params) = instructions.into_parts();
        for header in added {
            let name = HeaderName::from_static(header.name());
            let mut value = HeaderValue::from_str(header.value()).map_err(|_| {
                auth_error(format!(
                    "SigV4 header {} is not valid in HTTP (the credential holds control characters or non-ASCII)",
                    header.name()
                ))
            })?;
            value.set_sensitive(header.sensitive() || name == http::header::AUTHORIZATION);
            headers.insert(name, value);
        }
        Ok(())
    }

    fn secrets(&self) -> Vec<Secret> {
        match &self.source {
            Source::Fixed { credentials, .. } => {
                let mut secrets = vec![credentials.secret_access_key.clone()];
                secrets.extend(credentials.session_token.clone());
                secrets
            }
            Source::File(file) => file.secrets(),
            Source::Platform(platform) => platform.secrets(),
        }
    }
}
