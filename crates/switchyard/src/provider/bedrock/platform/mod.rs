//! AWS credentials the platform issues, that expire: a web identity exchanged at STS
//! ([`web_identity`]: EKS IAM roles for service accounts, GitHub Actions OIDC …), the
//! container credentials endpoint ([`container`]: ECS task roles, EKS Pod Identity) and the
//! EC2 instance metadata service ([`imds`], IMDSv2 only).
//!
//! Owns [`Issuer`], what each of those implements (one fetch, classified and scrubbed), and
//! [`PlatformCredentials`], the cache a signer asks before each signature:
//! - credentials are used until [`REFRESH_MARGIN`] before their `Expiration` (as the AWS
//!   SDKs do), then refreshed; credentials issued with less time than that left are used
//!   for at least [`MIN_REFRESH_INTERVAL`] (never past their expiry), so a source that
//!   always answers with short-lived credentials is not asked on every call;
//! - single flight: one refresh at a time. While it runs, other calls sign with the
//!   credentials in hand if they have not expired yet, else wait for it. The refresh runs
//!   inside the call that started it, so that call's deadline bounds it (each issuer also
//!   bounds its own requests);
//! - a failed refresh is answered from memory for [`FAILURE_HOLD`] (no request to the
//!   source), and until the credentials in hand expire, calls keep signing with them;
//! - every failure is `Auth` (the gateway fails over instead of retrying the provider),
//!   its message naming the source and never a credential: each issuer scrubs the tokens it
//!   holds, the provider scrubs [`PlatformCredentials::secrets`] from every error, and what
//!   is quoted from a source's answer (a refusal's body, a code and message, an
//!   `Expiration`) has every credential-shaped value masked first
//!   ([`transport::credential_free`]): an answer that could not be used may still hold
//!   credentials nobody knows to scrub yet.
//!
//! Expiry is read on the provider's [`Clock`] (wall time, so a manual clock moves it in
//! tests); the failure hold on its monotonic time. Does not read the environment: the
//! server picks a source and passes what it needs (`switchyard-server`'s
//! `config/bedrock/`).

pub mod container;
pub mod imds;
pub mod web_identity;

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use tokio::time::Instant;

use super::credentials::AwsCredentials;
use crate::clock::{duration_ms, Clock, UnixMillis};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::{self as transport, HttpClient, HttpSettings, Transport};
use crate::provider::secret::Secret;

/// How long before their expiry credentials are replaced (the AWS SDKs' margin).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// The shortest time credentials are used before the next refresh (still never past their
/// expiry).
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// How long a failed refresh is answered from memory before the source is asked again.
pub const FAILURE_HOLD: Duration = Duration::from_secs(5);

/// Connect timeout to a link-local source (instance metadata, container endpoint).
pub const LOCAL_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The most one request to a link-local source may take, headers and body.
pub const LOCAL_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The largest answer read from a source (credentials are a few kilobytes).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The largest token file read (a web identity or an authorization token).
pub const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// Credentials as a source issued them.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The credentials.
    pub credentials: AwsCredentials,
    /// When they expire (Unix milliseconds); `None`: they do not.
    pub expires_at: Option<UnixMillis>,
}

/// A source of expiring credentials: one fetch.
#[async_trait]
pub trait Issuer: Send + Sync + std::fmt::Debug {
    /// The source in words, for `switchyard check` and error messages (no secret).
    fn describe(&self) -> String;

    /// Fresh credentials from the source.
    ///
    /// # Errors
    /// `Auth`, with a message naming the source and never a credential or token.
    async fn issue(&self) -> Result<Issued, ProviderError>;

    /// The tokens the source sends (a web identity token, an authorization token), to
    /// scrub from errors.
    fn secrets(&self) -> Vec<Secret>;
}

/// Expiring credentials from an [`Issuer`], cached and refreshed before they expire.
#[derive(Debug)]
pub struct PlatformCredentials {
    issuer: Box<dyn Issuer>,
    clock: Clock,
    state: Mutex<State>,
    /// Held by the one call refreshing.
    turn: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    current: Option<AwsCredentials>,
    /// When `current` is due for a refresh, and when it expires (Unix ms; `None`: never).
    refresh_at: Option<UnixMillis>,
    expires_at: Option<UnixMillis>,
    /// The credentials before `current` (an error of a call signed with them may echo them).
    previous: Option<AwsCredentials>,
    /// The last failed refresh, answered again until [`FAILURE_HOLD`] has passed.
    failed: Option<(Instant, ProviderError)>,
}

/// What the cache holds now.
enum Look {
    Fresh(AwsCredentials),
    /// Due for a refresh, not expired yet.
    Expiring(AwsCredentials),
    Missing,
}

impl PlatformCredentials {
    /// Credentials from `issuer`, expiring by `clock`.
    #[must_use]
    pub fn new(issuer: impl Issuer + 'static, clock: Clock) -> Self {
        Self {
            issuer: Box::new(issuer),
            clock,
            state: Mutex::new(State::default()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// The source in words.
    #[must_use]
    pub fn describe(&self) -> String {
        self.issuer.describe()
    }

    fn look(&self) -> Look {
        let now = self.clock.unix_ms();
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(current) = &state.current else {
            return Look::Missing;
        };
        match (state.refresh_at, state.expires_at) {
            (Some(refresh_at), _) if now < refresh_at => Look::Fresh(current.clone()),
            (_, Some(expires_at)) if now < expires_at => Look::Expiring(current.clone()),
            (None, None) => Look::Fresh(current.clone()),
            _ => Look::Missing,
        }
    }

    /// The credentials to sign with now, refreshed first when they are due.
    ///
    /// # Errors
    /// `Auth` when there are no unexpired credentials and the source gives none.
    pub async fn get(&self) -> Result<AwsCredentials, ProviderError> {
        let in_hand = match self.look() {
            Look::Fresh(c) => return Ok(c),
            Look::Expiring(c) => Some(c),
            Look::Missing => None,
        };
        let _turn = match (self.turn.try_lock(), in_hand) {
            (Ok(turn), _) => turn,
            // another call is refreshing: sign with what is still valid
            (Err(_), Some(c)) => return Ok(c),
            (Err(_), None) => self.turn.lock().await,
        };
        // another call may have refreshed while this one waited
        let in_hand = match self.look() {
            Look::Fresh(c) => return Ok(c),
            Look::Expiring(c) => Some(c),
            Look::Missing => None,
        };
        if let Some(error) = self.recent_failure() {
            return in_hand.ok_or(error);
        }
        match self.issuer.issue().await {
            Ok(issued) => Ok(self.keep(issued)),
            Err(error) => {
                let error = transport::redact_all(&self.secrets(), error);
                self.state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .failed = Some((self.clock.now(), error.clone()));
                in_hand.ok_or(error)
            }
        }
    }

    fn recent_failure(&self) -> Option<ProviderError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, error) = state.failed.as_ref()?;
        (self.clock.now().duration_since(*at) < FAILURE_HOLD).then(|| error.clone())
    }

    /// Keep `issued` as the credentials in use, due for a refresh [`REFRESH_MARGIN`] before
    /// they expire (at least [`MIN_REFRESH_INTERVAL`] from now, never past the expiry).
    fn keep(&self, issued: Issued) -> AwsCredentials {
        let now = self.clock.unix_ms();
        let refresh_at = issued.expires_at.map(|expires| {
            expires
                .saturating_sub(duration_ms(REFRESH_MARGIN))
                .max(now.saturating_add(duration_ms(MIN_REFRESH_INTERVAL)))
                .min(expires)
        });
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.previous = state.current.replace(issued.credentials.clone());
        state.refresh_at = refresh_at;
        state.expires_at = issued.expires_at;
        state.failed = None;
        issued.credentials
    }

    /// The secrets of the credentials in use and of those before them, and the source's
    /// tokens.
    #[must_use]
    pub fn secrets(&self) -> Vec<Secret> {
        let mut out = self.issuer.secrets();
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        for c in state.current.iter().chain(&state.previous) {
            out.push(c.secret_access_key.clone());
            out.extend(c.session_token.clone());
        }
        out
    }
}

/// An `Auth` error about a source.
pub(crate) fn failed(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::Auth, message)
}

/// A source's non-2xx answer as an `Auth` error with its status: `refused (HTTP 403)`, then
/// `hint` (what the status means at this source, or nothing) and the start of the body.
/// The body is quoted [`transport::credential_free`]: an answer this source could not use
/// may still carry credentials.
pub(crate) fn refused(status: u16, hint: &str, body: &[u8]) -> ProviderError {
    failed(format!(
        "refused (HTTP {status}){hint}: {}",
        transport::auth_snippet(body)
    ))
    .with_status(status)
}

/// An HTTP client for a source: `connect_timeout`, answers capped at [`MAX_ANSWER_BYTES`].
///
/// # Errors
/// When the transport cannot make one.
pub fn source_client(
    transport: &Transport,
    connect_timeout: Duration,
) -> Result<HttpClient, transport::ConfigError> {
    transport.client(HttpSettings {
        connect_timeout,
        max_body_bytes: MAX_ANSWER_BYTES,
    })
}

/// `work` within `limit`, else an `Auth` error saying `what` timed out. Any error of `work`
/// becomes `Auth` too, its message after `what`.
pub(crate) async fn bounded<T>(
    limit: Duration,
    what: &str,
    work: impl std::future::Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ProviderError {
            kind: ErrorKind::Auth,
            message: format!("{what}: {}", e.message),
            ..e
        }),
        Err(_) => Err(failed(format!("{what}: no answer within {limit:?}"))),
    }
}

/// A token file's content, trimmed: read whole (up to [`MAX_TOKEN_FILE_BYTES`]) on every
/// call, since the platform rotates it.
///
/// # Errors
/// The file cannot be read, is larger than the cap, or is empty; the message names the
/// file (`what` says which), never its content.
pub fn read_token_file(path: &Path, what: &str) -> Result<Secret, ProviderError> {
    let at =
        |reason: &dyn std::fmt::Display| failed(format!("{what} {}: {reason}", path.display()));
    let (text, _) =
        crate::provider::watched::read_capped(path, MAX_TOKEN_FILE_BYTES).map_err(|e| at(&e))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(at(&"empty"));
    }
    Ok(Secret::new(token))
}

/// An ISO 8601 UTC time (`2026-12-01T22:00:00Z`, fractions allowed) as Unix milliseconds.
#[must_use]
pub fn parse_expiration(text: &str) -> Option<UnixMillis> {
    let text = text.trim();
    let time = humantime::parse_rfc3339(text)
        .or_else(|_| humantime::parse_rfc3339_weak(text))
        .ok()?;
    let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(duration_ms(since))
}

/// The JSON the container endpoint and instance metadata answer with (IMDS adds `Code`,
/// `Type`, `LastUpdated`; an ECS error is `{"code": …, "message": …}`).
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct JsonCredentials {
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    token: Option<String>,
    expiration: Option<String>,
    #[serde(alias = "code")]
    code: Option<String>,
    #[serde(alias = "message")]
    message: Option<String>,
}

/// Credentials from a JSON answer of `source`.
///
/// # Errors
/// Not JSON, a `Code` other than `Success`, a missing key or an unreadable `Expiration`:
/// `Auth`, naming the field, never a value but the code and message the source gave (and
/// those with every credential-shaped value masked).
fn from_json(body: &[u8], source: &str) -> Result<Issued, ProviderError> {
    let answer: JsonCredentials = serde_json::from_slice(body)
        .map_err(|_| failed(format!("{source}: the answer is not credentials JSON")))?;
    if let Some(code) = answer.code.as_deref().filter(|c| *c != "Success") {
        // both are the source's text, quoted from an answer that may hold credentials
        let code = transport::credential_free(code);
        let message = transport::credential_free(answer.message.as_deref().unwrap_or(""));
        return Err(failed(format!("{source}: {code}: {message}")).with_vendor_code(code));
    }
    let missing = |field: &str| failed(format!("{source}: the answer has no {field}"));
    let access_key_id = answer
        .access_key_id
        .filter(|v| !v.is_empty())
        .ok_or_else(|| missing("AccessKeyId"))?;
    let secret = answer
        .secret_access_key
        .filter(|v| !v.is_empty())
        .ok_or_else(|| missing("SecretAccessKey"))?;
    let expires_at = match answer.expiration {
        Some(text) => Some(parse_expiration(&text).ok_or_else(|| {
            failed(format!(
                "{source}: Expiration {:?} is not an ISO 8601 time",
                transport::credential_free(&text)
            ))
        })?),
        None => None,
    };
    Ok(Issued {
        credentials: AwsCredentials {
            access_key_id,
            secret_access_key: Secret::new(secret),
            session_token: answer.token.filter(|t| !t.is_empty()).map(Secret::new),
        },
        expires_at,
    })
}

#[cfg(test)]
mod tests;
