//! Google service-account auth: a signed JWT exchanged for an OAuth2 access token
//! (RFC 7523's `jwt-bearer` grant, as Google's client libraries do it), cached and
//! refreshed before it expires.
//!
//! Owns [`ServiceAccount`] (the key file: `client_email`, `private_key`, `private_key_id`,
//! `token_uri`) and [`ServiceAccountTokens`], the [`TokenSource`] a Vertex provider sends.
//!
//! The exchange: an RS256 JWT (`jsonwebtoken`, signing with ring) whose claims are `iss` =
//! the account's email, `scope` = [`CLOUD_PLATFORM_SCOPE`], `aud` = the `token_uri`, `iat`
//! = now and `exp` = now + 1 hour, posted as a form (`grant_type=
//! urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<jwt>`) to the `token_uri`; the
//! answer's `access_token` is used until [`REFRESH_MARGIN`] before its `expires_in` runs
//! out.
//!
//! Single flight: calls that find the token stale wait on one lock; the first does the
//! exchange and the rest take its token. The exchange runs inside the call that needed it,
//! so that call's deadline bounds it: a call dropped mid-exchange abandons it and the next
//! waiter starts its own. Errors: an answer refusing the assertion (4xx) is `Auth`; a 5xx is
//! `Server`, a 429 `RateLimited`, an unreachable issuer `Connection` / `Timeout`. No error
//! carries the private key (it is never formatted), the assertion (scrubbed) or a token the
//! endpoint issued in an answer that could not be used (the answer is quoted
//! [`credential_free`](crate::provider::http::credential_free): a string `expires_in`
//! beside a good `access_token` must not put that token in a 502 or a log line).

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use http::HeaderMap;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::{self as transport, auth_snippet, ConfigError, Endpoint, HttpClient};
use crate::provider::secret::Secret;
use crate::provider::token::TokenSource;

/// The OAuth2 scope Vertex AI calls need.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// How long before its expiry a token is replaced.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// How long the signed assertion is valid (Google's maximum).
const ASSERTION_LIFETIME_SECS: u64 = 3600;

/// The largest service-account file read.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// A service account's key file, parsed.
pub struct ServiceAccount {
    client_email: String,
    private_key_id: Option<String>,
    key: EncodingKey,
    token_uri: Endpoint,
    /// `token_uri` as the file gives it: the JWT's `aud`.
    audience: String,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("token_uri", &self.token_uri.as_str())
            .finish_non_exhaustive()
    }
}

/// The fields read from the key file (the rest is ignored).
#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: Option<String>,
    private_key: Option<String>,
    private_key_id: Option<String>,
    token_uri: Option<String>,
}

impl ServiceAccount {
    /// A service account from its JSON key file's text.
    ///
    /// # Errors
    /// Not JSON, not a `service_account` file, a missing field, a private key that is not
    /// an RSA PEM key, or a `token_uri` that is not an http(s) URL. The messages name the
    /// field, never its value.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let file: KeyFile = serde_json::from_str(text).map_err(|e| {
            ConfigError(format!(
                "not a service-account JSON key file (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if let Some(kind) = file.kind.as_deref().filter(|k| *k != "service_account") {
            return Err(ConfigError(format!(
                "\"type\" is {kind:?}; a service-account key file (\"service_account\") is needed"
            )));
        }
        let missing = |field: &str| ConfigError(format!("the key file has no \"{field}\""));
        let client_email = file
            .client_email
            .filter(|e| !e.trim().is_empty())
            .ok_or_else(|| missing("client_email"))?;
        let private_key = file
            .private_key
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| missing("private_key"))?;
        let token_uri = file
            .token_uri
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| missing("token_uri"))?;
        let key = EncodingKey::from_rsa_pem(private_key.as_bytes()).map_err(|_| {
            ConfigError("\"private_key\" is not an RSA private key in PEM form".to_owned())
        })?;
        let audience = token_uri.trim().to_owned();
        let token_uri =
            Endpoint::at(&audience, "").map_err(|e| ConfigError(format!("\"token_uri\": {e}")))?;
        Ok(Self {
            client_email,
            private_key_id: file.private_key_id.filter(|k| !k.is_empty()),
            key,
            token_uri,
            audience,
        })
    }

    /// A service account from the key file at `path`.
    ///
    /// # Errors
    /// The file cannot be read (or is over 64 KiB), or as [`from_json`](Self::from_json).
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let at = |e: &dyn std::fmt::Display| ConfigError(format!("{}: {e}", path.display()));
        let len = std::fs::metadata(path).map_err(|e| at(&e))?.len();
        if len > MAX_FILE_BYTES {
            return Err(at(&format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        Self::from_json(&text).map_err(|e| at(&e))
    }

    /// The account's email (the JWT's `iss`).
    #[must_use]
    pub fn client_email(&self) -> &str {
        &self.client_email
    }

    /// The signed assertion for `scope`, issued at `now` (Unix seconds).
    fn assertion(&self, scope: &str, now: u64) -> Result<Secret, ProviderError> {
        #[derive(Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            scope: &'a str,
            aud: &'a str,
            iat: u64,
            exp: u64,
        }
        let mut header = Header::new(Algorithm::RS256);
        header.kid.clone_from(&self.private_key_id);
        let claims = Claims {
            iss: &self.client_email,
            scope,
            aud: &self.audience,
            iat: now,
            exp: now + ASSERTION_LIFETIME_SECS,
        };
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map(Secret::new)
            .map_err(|e| {
                ProviderError::new(
                    ErrorKind::Auth,
                    format!("signing the service-account assertion: {e}"),
                )
            })
    }
}

/// Access tokens for a service account: cached, refreshed before expiry, one exchange at a
/// time.
#[derive(Debug)]
pub struct ServiceAccountTokens {
    account: ServiceAccount,
    scope: String,
    http: HttpClient,
    clock: Clock,
    cached: Mutex<Option<Cached>>,
    /// Held by the one call exchanging.
    refresh: tokio::sync::Mutex<()>,
}

#[derive(Debug, Clone)]
struct Cached {
    token: Secret,
    /// Unix milliseconds.
    expires_at: u64,
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct Granted {
    access_token: Option<String>,
    expires_in: Option<u64>,
}

impl ServiceAccountTokens {
    /// Tokens for `account` with `scope`, exchanged through `http`, timed by `clock`.
    #[must_use]
    pub fn new(
        account: ServiceAccount,
        scope: impl Into<String>,
        http: HttpClient,
        clock: Clock,
    ) -> Self {
        Self {
            account,
            scope: scope.into(),
            http,
            clock,
            cached: Mutex::new(None),
            refresh: tokio::sync::Mutex::new(()),
        }
    }

    /// The cached token, when it has more than [`REFRESH_MARGIN`] left.
    fn fresh(&self) -> Option<Secret> {
        let now = self.clock.unix_ms();
        let margin = u64::try_from(REFRESH_MARGIN.as_millis()).unwrap_or(u64::MAX);
        self.cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|c| c.expires_at.saturating_sub(margin) > now)
            .map(|c| c.token.clone())
    }

    /// One exchange: a new token, cached.
    async fn exchange(&self) -> Result<Secret, ProviderError> {
        let now_ms = self.clock.unix_ms();
        let assertion = self.account.assertion(&self.scope, now_ms / 1000)?;
        let scrub = |e: ProviderError| transport::redact(Some(&assertion), e);
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
            .append_pair("assertion", assertion.expose())
            .finish();
        let mut headers = HeaderMap::new();
        transport::insert_header(&mut headers, "accept", "application/json")
            .map_err(|e| ProviderError::new(ErrorKind::Auth, e.0))?;
        let uri = self.account.token_uri.as_str();
        let response = self
            .http
            .post_form(&self.account.token_uri, &headers, body.into_bytes())
            .await
            .map_err(|mut e| {
                e.message = format!("token exchange at {uri}: {}", e.message);
                scrub(e)
            })?;
        if !response.is_success() {
            let failure = response.into_failure().await;
            let kind = match failure.status {
                429 => ErrorKind::RateLimited,
                408 => ErrorKind::Timeout,
                500..=599 => ErrorKind::Server,
                _ => ErrorKind::Auth,
            };
            let mut error = ProviderError::new(
                kind,
                format!(
                    "token exchange at {uri} refused (HTTP {}): {}",
                    failure.status,
                    auth_snippet(&failure.body)
                ),
            )
            .with_retry_after(failure.retry_after(self.clock.system_time()));
            error.status = Some(failure.status);
            return Err(scrub(error));
        }
        let bytes = response.body().await.map_err(scrub)?;
        let granted: Granted = serde_json::from_slice(&bytes).map_err(|_| {
            scrub(ProviderError::new(
                ErrorKind::Auth,
                format!(
                    "token exchange at {uri}: not a token answer: {}",
                    auth_snippet(&bytes)
                ),
            ))
        })?;
        let (Some(token), Some(expires_in)) = (granted.access_token, granted.expires_in) else {
            return Err(ProviderError::new(
                ErrorKind::Auth,
                format!("token exchange at {uri}: the answer has no access_token or expires_in"),
            ));
        };
        let token = Secret::new(token);
        *self.cached.lock().unwrap_or_else(PoisonError::into_inner) = Some(Cached {
            token: token.clone(),
            expires_at: now_ms.saturating_add(expires_in.saturating_mul(1000)),
        });
        Ok(token)
    }
}

#[async_trait]
impl TokenSource for ServiceAccountTokens {
    async fn token(&self) -> Result<Secret, ProviderError> {
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        let _turn = self.refresh.lock().await;
        // another call may have refreshed while this one waited
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        self.exchange().await
    }

    fn current(&self) -> Option<Secret> {
        self.cached
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|c| c.token.clone())
    }
}
