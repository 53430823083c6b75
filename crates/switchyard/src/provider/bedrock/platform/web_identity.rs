//! A web identity exchanged for role credentials at AWS STS (`AssumeRoleWithWebIdentity`):
//! what EKS IAM roles for service accounts (IRSA) set up with `AWS_WEB_IDENTITY_TOKEN_FILE`
//! and `AWS_ROLE_ARN`, and what GitHub Actions' OIDC token and other identity providers use.
//!
//! Owns [`WebIdentity`], an [`Issuer`]. Each fetch reads the token file afresh (Kubernetes
//! rotates the projected token) and POSTs the query API's form, unsigned (the token is the
//! proof), to the regional endpoint `https://sts.{region}.amazonaws.com` (or the one given):
//! `Action=AssumeRoleWithWebIdentity`, `Version=2011-06-15`, `RoleArn`, `RoleSessionName`,
//! `WebIdentityToken`. The answer is XML: `AssumeRoleWithWebIdentityResult/Credentials`
//! holds `AccessKeyId`, `SecretAccessKey`, `SessionToken` and `Expiration` (ISO 8601); an
//! error is `ErrorResponse/Error` with `Code` and `Message` (`InvalidIdentityToken`,
//! `ExpiredTokenException`, `AccessDenied`, `IDPRejectedClaim`, …). Every failure is `Auth`,
//! with STS's code as the vendor code; the token never appears in an error.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use http::HeaderMap;
use serde::Deserialize;

use super::{bounded, failed, parse_expiration, read_token_file, refused, Issued, Issuer};
use crate::clock::Clock;
use crate::error::ProviderError;
use crate::provider::bedrock::credentials::AwsCredentials;
use crate::provider::http::{self as transport, ConfigError, Endpoint, HttpClient};
use crate::provider::secret::Secret;

/// The STS API version the request names.
pub const STS_VERSION: &str = "2011-06-15";

/// The most one exchange may take, connect to last byte.
pub const STS_TIMEOUT: Duration = Duration::from_secs(10);

/// The regional STS endpoint of `region`.
#[must_use]
pub fn regional_endpoint(region: &str) -> String {
    format!("https://sts.{region}.amazonaws.com")
}

/// Whether `arn` has the shape of an IAM role ARN: `arn:{partition}:iam::{account}:role/{name}`.
#[must_use]
pub fn is_role_arn(arn: &str) -> bool {
    let mut parts = arn.splitn(6, ':');
    let (Some("arn"), Some(partition), Some("iam"), Some(""), Some(account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    partition.starts_with("aws")
        && account.len() == 12
        && account.bytes().all(|b| b.is_ascii_digit())
        && resource
            .strip_prefix("role/")
            .is_some_and(|r| !r.is_empty())
}

/// Whether `name` is a valid `RoleSessionName`: 2 to 64 of `[A-Za-z0-9_+=,.@-]`.
#[must_use]
pub fn is_session_name(name: &str) -> bool {
    (2..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b))
}

/// Role credentials for a web identity token file.
#[derive(Debug)]
pub struct WebIdentity {
    token_file: PathBuf,
    role_arn: String,
    /// `None`: `switchyard-{unix seconds}` at each exchange.
    session_name: Option<String>,
    endpoint: Endpoint,
    http: HttpClient,
    clock: Clock,
    /// The token last sent, scrubbed from errors.
    token: Mutex<Option<Secret>>,
}

impl WebIdentity {
    /// Exchanges of the token in `token_file` for `role_arn`'s credentials at `endpoint`
    /// (see [`regional_endpoint`]), through `http`.
    ///
    /// # Errors
    /// A role ARN, session name or endpoint that is not one.
    pub fn new(
        token_file: impl Into<PathBuf>,
        role_arn: &str,
        session_name: Option<String>,
        endpoint: &str,
        http: HttpClient,
        clock: Clock,
    ) -> Result<Self, ConfigError> {
        if !is_role_arn(role_arn) {
            return Err(ConfigError(format!(
                "role ARN {role_arn:?} is not an IAM role ARN (arn:aws:iam::123456789012:role/name)"
            )));
        }
        if let Some(name) = session_name.as_deref().filter(|n| !is_session_name(n)) {
            return Err(ConfigError(format!(
                "role session name {name:?} must be 2 to 64 letters, digits or _+=,.@-"
            )));
        }
        Ok(Self {
            token_file: token_file.into(),
            role_arn: role_arn.to_owned(),
            session_name,
            endpoint: Endpoint::at(endpoint, "")?,
            http,
            clock,
            token: Mutex::new(None),
        })
    }

    /// The form posted: the token is the one secret in it.
    fn form(&self, token: &Secret) -> Vec<u8> {
        let session = self
            .session_name
            .clone()
            .unwrap_or_else(|| format!("switchyard-{}", self.clock.unix_ms() / 1000));
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("Action", "AssumeRoleWithWebIdentity")
            .append_pair("Version", STS_VERSION)
            .append_pair("RoleArn", &self.role_arn)
            .append_pair("RoleSessionName", &session)
            .append_pair("WebIdentityToken", token.expose())
            .finish()
            .into_bytes()
    }

    async fn exchange(&self, token: &Secret) -> Result<Issued, ProviderError> {
        let response = self
            .http
            .post_form(&self.endpoint, &HeaderMap::new(), self.form(token))
            .await?;
        if !response.is_success() {
            let failure = response.into_failure().await;
            return Err(refusal(failure.status, &failure.body));
        }
        let body = response.body().await?;
        parse_credentials(&body)
    }
}

#[async_trait]
impl Issuer for WebIdentity {
    fn describe(&self) -> String {
        format!(
            "web identity: role {} with the token in {}, at {}",
            self.role_arn,
            self.token_file.display(),
            self.endpoint
        )
    }

    async fn issue(&self) -> Result<Issued, ProviderError> {
        let token = read_token_file(&self.token_file, "web identity token file")?;
        *self.token.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        let what = format!("STS AssumeRoleWithWebIdentity at {}", self.endpoint);
        let result = bounded(STS_TIMEOUT, &what, self.exchange(&token)).await;
        result.map_err(|e| transport::redact(Some(&token), e))
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

/// STS's success answer (the fields read; the rest is ignored).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    assume_role_with_web_identity_result: AnswerResult,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AnswerResult {
    credentials: XmlCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct XmlCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}

/// STS's error answer.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorAnswer {
    error: XmlError,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct XmlError {
    code: Option<String>,
    message: Option<String>,
}

/// The credentials of an `AssumeRoleWithWebIdentityResponse`.
///
/// # Errors
/// Not that document, or one without a credential field or with an unreadable
/// `Expiration` (`Auth`, naming the field, never a value).
pub fn parse_credentials(body: &[u8]) -> Result<Issued, ProviderError> {
    let text = std::str::from_utf8(body).map_err(|_| failed("the answer is not UTF-8 XML"))?;
    let answer: Answer = quick_xml::de::from_str(text).map_err(|_| {
        failed("the answer is not an AssumeRoleWithWebIdentityResponse with Credentials (AccessKeyId, SecretAccessKey, SessionToken, Expiration)")
    })?;
    let c = answer.assume_role_with_web_identity_result.credentials;
    let expires_at = parse_expiration(&c.expiration).ok_or_else(|| {
        failed(format!(
            "Expiration {:?} is not an ISO 8601 time",
            transport::credential_free(&c.expiration)
        ))
    })?;
    if c.access_key_id.trim().is_empty() || c.secret_access_key.trim().is_empty() {
        return Err(failed(
            "the answer's AccessKeyId or SecretAccessKey is empty",
        ));
    }
    Ok(Issued {
        credentials: AwsCredentials {
            access_key_id: c.access_key_id.trim().to_owned(),
            secret_access_key: Secret::new(c.secret_access_key.trim()),
            session_token: Some(c.session_token.trim())
                .filter(|t| !t.is_empty())
                .map(Secret::new),
        },
        expires_at: Some(expires_at),
    })
}

/// A non-2xx answer as an `Auth` error: STS's `Code` and `Message` when the body is its
/// `ErrorResponse`, else the status and the start of the body.
#[must_use]
pub fn refusal(status: u16, body: &[u8]) -> ProviderError {
    let parsed = std::str::from_utf8(body)
        .ok()
        .and_then(|text| quick_xml::de::from_str::<ErrorAnswer>(text).ok());
    match parsed {
        Some(ErrorAnswer {
            error:
                XmlError {
                    code: Some(code),
                    message,
                },
        }) => {
            // quoted from STS's answer: masked of anything shaped like a credential
            let code = transport::credential_free(&code);
            let message = transport::credential_free(&message.unwrap_or_default());
            failed(format!("refused (HTTP {status}) {code}: {message}"))
                .with_vendor_code(code)
                .with_status(status)
        }
        _ => refused(status, "", body),
    }
}
