//! The HTTP transport every vendor adapter shares.
//!
//! Owns the connection pool ([`Transport`]), a provider's handle on it ([`HttpClient`]), the
//! response on its way in ([`UpstreamResponse`]: bounded body, streamed body, or the pieces a
//! `classify` needs as an [`HttpFailure`]), the mapping of transport failures to
//! [`ErrorKind::Connection`] / [`ErrorKind::Timeout`], and small helpers to build endpoint
//! URLs and request headers ([`endpoint`], [`insert_header`], [`insert_secret_header`]).
//!
//! Does not read status codes or vendor error bodies (each adapter's `classify` does), does
//! not retry, and sets no overall request timeout: the gateway owns deadlines and cancels a
//! call by dropping its future, which closes the connection.
//!
//! Choices worth knowing:
//! - One `reqwest` client (rustls, HTTP/1.1, `TCP_NODELAY`) per distinct connect timeout,
//!   shared by every provider built from the same [`Transport`]; with the default connect
//!   timeout that is one pool for the whole process.
//! - A connect timeout is [`ErrorKind::Timeout`] (the host is silent: retrying costs a full
//!   timeout again); a refused or reset connection, a DNS failure or a reset before the
//!   response headers is [`ErrorKind::Connection`]. Losing the connection while reading a
//!   body is `Connection` too.
//! - Redirects are not followed: an API endpoint that redirects is misconfigured, and a
//!   followed redirect could carry a vendor's key header to another host.
//! - Proxies from the environment (`HTTPS_PROXY`, ...) are ignored unless
//!   [`TransportConfig::proxy_from_env`] says otherwise: the library reads no environment.

use std::error::Error as StdError;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt as _};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::Url;

use super::secret::Secret;
use crate::error::{ErrorKind, ProviderError};

/// Default time allowed to open a connection (TCP and TLS).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Default cap on a response body (and on one server-sent event): 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// How much of an error response's body is kept for classification.
pub const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A body of upstream bytes as they arrive; transport failures are already classified.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

/// A provider's configuration could not be turned into requests (bad URL, bad header).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Settings of the shared pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportConfig {
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
    /// Idle connections kept per host.
    pub pool_max_idle_per_host: usize,
    /// Honour `HTTP_PROXY` / `HTTPS_PROXY` / `NO_PROXY` from the environment.
    pub proxy_from_env: bool,
    /// The `User-Agent` sent upstream.
    pub user_agent: String,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            pool_idle_timeout: Duration::from_secs(90),
            // as many idle connections as requests in flight: a smaller cap closes and
            // reopens connections under load (measured: ~1 new connection per 10 requests
            // at 256 concurrent with a cap of 64)
            pool_max_idle_per_host: 4096,
            proxy_from_env: false,
            user_agent: concat!("switchyard/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The shared connection pool. Cheap to clone; build one per process (the server does)
/// and hand it to every provider.
#[derive(Clone, Default)]
pub struct Transport {
    inner: Arc<Pools>,
}

#[derive(Default)]
struct Pools {
    config: TransportConfig,
    /// One client per distinct connect timeout. reqwest sets connect timeouts per client,
    /// so providers that agree on it share a pool; the list is as long as the number of
    /// distinct timeouts in the config (usually one). Locked only while building providers.
    clients: Mutex<Vec<(Duration, reqwest::Client)>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// What one provider asks of the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Cap on a response body, and on one server-sent event of a stream.
    pub max_body_bytes: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

impl Transport {
    /// A transport with these pool settings.
    #[must_use]
    pub fn new(config: TransportConfig) -> Self {
        Self {
            inner: Arc::new(Pools {
                config,
                clients: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A provider's handle on the pool. Call once when the provider is built.
    ///
    /// # Errors
    /// When the TLS backend cannot be initialised.
    pub fn client(&self, settings: HttpSettings) -> Result<HttpClient, ConfigError> {
        let mut clients = self
            .inner
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let existing = clients
            .iter()
            .find(|(timeout, _)| *timeout == settings.connect_timeout);
        let client = if let Some((_, client)) = existing {
            client.clone()
        } else {
            let client = self.build(settings.connect_timeout)?;
            clients.push((settings.connect_timeout, client.clone()));
            client
        };
        Ok(HttpClient {
            client,
            max_body_bytes: settings.max_body_bytes,
        })
    }

    fn build(&self, connect_timeout: Duration) -> Result<reqwest::Client, ConfigError> {
        let config = &self.inner.config;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .pool_idle_timeout(config.pool_idle_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(config.user_agent.clone());
        if !config.proxy_from_env {
            builder = builder.no_proxy();
        }
        builder
            .build()
            .map_err(|e| ConfigError(format!("building the HTTP client: {}", chain(&e))))
    }
}

/// One provider's handle on the shared pool, with its body limit.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    max_body_bytes: usize,
}

impl HttpClient {
    /// POST a JSON body (sent in one write with `content-length`). `Ok` once the response
    /// headers are in, whatever the status.
    ///
    /// # Errors
    /// `Timeout` for a connect timeout, `Connection` for anything else that fails before
    /// the response headers.
    pub async fn post_json(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let request = self
            .client
            .post(url.clone())
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body);
        self.execute(request).await
    }

    /// GET `url` (health checks, model listings). `Ok` once the headers are in.
    ///
    /// # Errors
    /// As [`post_json`](Self::post_json).
    pub async fn get(
        &self,
        url: &Url,
        headers: &HeaderMap,
    ) -> Result<UpstreamResponse, ProviderError> {
        let request = self.client.get(url.clone()).headers(headers.clone());
        self.execute(request).await
    }

    /// The body cap this provider was configured with.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    async fn execute(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<UpstreamResponse, ProviderError> {
        let response = request.send().await.map_err(request_error)?;
        Ok(UpstreamResponse {
            inner: response,
            max_body_bytes: self.max_body_bytes,
        })
    }
}

/// A response whose headers are in and whose body is not read yet.
#[derive(Debug)]
pub struct UpstreamResponse {
    inner: reqwest::Response,
    max_body_bytes: usize,
}

impl UpstreamResponse {
    /// The HTTP status code.
    #[must_use]
    pub fn status(&self) -> u16 {
        self.inner.status().as_u16()
    }

    /// True for 2xx.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.inner.status().is_success()
    }

    /// The response headers.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// A header's value by (case-insensitive) name, when it is visible ASCII.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        header(self.inner.headers(), name)
    }

    /// The media type without parameters, lower-cased (`text/event-stream`).
    #[must_use]
    pub fn media_type(&self) -> Option<String> {
        let value = self.header("content-type")?;
        let essence = value.split(';').next().unwrap_or(value);
        Some(essence.trim().to_ascii_lowercase())
    }

    /// The whole body, refusing more than the configured cap.
    ///
    /// # Errors
    /// `Malformed` past the cap (announced by `content-length` or counted while reading);
    /// `Connection` / `Timeout` if the connection fails mid-body.
    pub async fn body(mut self) -> Result<Bytes, ProviderError> {
        let limit = self.max_body_bytes;
        if self
            .inner
            .content_length()
            .is_some_and(|n| n > limit as u64)
        {
            return Err(too_large(limit));
        }
        // One chunk (the common case) is returned as is; more are joined.
        let mut single: Option<Bytes> = None;
        let mut joined = BytesMut::new();
        while let Some(chunk) = self.inner.chunk().await.map_err(body_error)? {
            let so_far = single.as_ref().map_or(joined.len(), Bytes::len);
            if so_far + chunk.len() > limit {
                return Err(too_large(limit));
            }
            if let Some(head) = single.take() {
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&chunk);
            } else if joined.is_empty() {
                single = Some(chunk);
            } else {
                joined.extend_from_slice(&chunk);
            }
        }
        Ok(single.unwrap_or_else(|| joined.freeze()))
    }

    /// The pieces a `classify` reads: status, headers and up to [`ERROR_BODY_LIMIT`] bytes
    /// of body. Never fails: a body that cannot be read is kept as far as it got.
    pub async fn into_failure(mut self) -> HttpFailure {
        let status = self.status();
        let headers = std::mem::take(self.inner.headers_mut());
        let mut body = BytesMut::new();
        while body.len() < ERROR_BODY_LIMIT {
            match self.inner.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(ERROR_BODY_LIMIT);
        HttpFailure {
            status,
            headers,
            body: body.freeze(),
        }
    }

    /// The body as it arrives (for server-sent events). Pair it with
    /// [`SseStream::new`](super::sse::SseStream::new) and
    /// [`max_body_bytes`](Self::max_body_bytes) as the per-event cap.
    #[must_use]
    pub fn into_byte_stream(self) -> ByteStream {
        Box::pin(self.inner.bytes_stream().map(|r| r.map_err(body_error)))
    }

    /// The body cap this response is read under.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}

/// A vendor's classifier of a non-2xx response (`classify` in each adapter).
pub type Classify = fn(&HttpFailure, SystemTime) -> ProviderError;

/// How an adapter turns transport outcomes into its errors: its own classifier for
/// non-2xx answers, and its key, scrubbed from every message. One per adapter instance.
#[derive(Clone)]
pub struct ErrorPolicy {
    /// The vendor's classifier.
    pub classify: Classify,
    /// The adapter's key, if any.
    pub key: Option<Secret>,
    /// Time for relative Retry-After dates.
    pub clock: crate::clock::Clock,
}

impl std::fmt::Debug for ErrorPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorPolicy").finish_non_exhaustive()
    }
}

impl ErrorPolicy {
    /// `error` with the key scrubbed out.
    #[must_use]
    pub fn redact(&self, error: ProviderError) -> ProviderError {
        redact(self.key.as_ref(), error)
    }

    /// A request's result, checked: transport errors scrubbed; a non-2xx answer read,
    /// classified by the vendor's rules and scrubbed; a 2xx answer passed on.
    ///
    /// # Errors
    /// The classified, scrubbed error.
    pub async fn checked(
        &self,
        sent: Result<UpstreamResponse, ProviderError>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let response = sent.map_err(|e| self.redact(e))?;
        if response.is_success() {
            return Ok(response);
        }
        let failure = response.into_failure().await;
        Err(self.redact((self.classify)(&failure, self.clock.system_time())))
    }
}

/// `error` with every occurrence of `key` scrubbed from its message and vendor code.
#[must_use]
pub fn redact(key: Option<&Secret>, mut error: ProviderError) -> ProviderError {
    if let Some(key) = key {
        error.message = key.scrub(&error.message);
        error.vendor_code = error.vendor_code.map(|c| key.scrub(&c));
    }
    error
}

/// The start of a body for an error message: whitespace collapsed, at most 120 chars.
#[must_use]
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    truncate(&collapsed, 120)
}

/// `text` cut to at most `max` characters, with `…` when cut.
#[must_use]
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A non-2xx response, read for classification.
#[derive(Debug, Clone)]
pub struct HttpFailure {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The start of the body (at most [`ERROR_BODY_LIMIT`] bytes).
    pub body: Bytes,
}

impl HttpFailure {
    /// A header's value by (case-insensitive) name.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The wait the response asks for (`retry-after-ms`, else `retry-after` in seconds or
    /// as an HTTP-date relative to `now`, which callers read from their `Clock`).
    #[must_use]
    pub fn retry_after(&self, now: SystemTime) -> Option<Duration> {
        crate::retry::retry_after_from_headers(|name| header(&self.headers, name), now)
    }
}

/// A header's value by (case-insensitive) name, when it is visible ASCII. Shaped for
/// [`retry_after_from_headers`](crate::retry::retry_after_from_headers):
/// `retry_after_from_headers(|n| header(&headers, n), now)`.
#[must_use]
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `base_url` joined with `path` (`https://api.openai.com/v1` + `/chat/completions`). A
/// trailing slash on the base and a missing leading slash on the path are tolerated.
///
/// # Errors
/// When the result is not an absolute `http`/`https` URL.
pub fn endpoint(base_url: &str, path: &str) -> Result<Url, ConfigError> {
    let base = base_url.trim().trim_end_matches('/');
    let path = path.trim_start_matches('/');
    let joined = if path.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{path}")
    };
    let url = Url::parse(&joined).map_err(|e| ConfigError(format!("base_url {base:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError(format!(
            "base_url {base:?}: scheme must be http or https"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError(
            "base_url must not carry credentials; use api_key or headers".to_owned(),
        ));
    }
    Ok(url)
}

/// Add a plain header (`name: value`) from config.
///
/// # Errors
/// When the name or value is not valid in HTTP.
pub fn insert_header(map: &mut HeaderMap, name: &str, value: &str) -> Result<(), ConfigError> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ConfigError(format!("invalid header name {name:?}")))?;
    let value = HeaderValue::from_str(value)
        .map_err(|_| ConfigError(format!("invalid value for header {name}")))?;
    map.insert(name, value);
    Ok(())
}

/// Add a credential header: `name: {prefix}{secret}` (`Authorization: Bearer sk-…`,
/// `x-api-key: sk-…`). The value is marked sensitive so it is never printed by the HTTP
/// stack, and the error never shows it.
///
/// # Errors
/// When the name or the value is not valid in HTTP.
pub fn insert_secret_header(
    map: &mut HeaderMap,
    name: &str,
    prefix: &str,
    secret: &Secret,
) -> Result<(), ConfigError> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ConfigError(format!("invalid header name {name:?}")))?;
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", secret.expose()))
        .map_err(|_| ConfigError(format!("the credential for header {name} is not valid in HTTP (control characters or non-ASCII)")))?;
    value.set_sensitive(true);
    map.insert(name, value);
    Ok(())
}

/// Classify a failure before the response headers arrived.
fn request_error(err: reqwest::Error) -> ProviderError {
    let err = err.without_url();
    let detail = chain(&err);
    if err.is_timeout() {
        ProviderError::new(ErrorKind::Timeout, format!("connect timed out: {detail}"))
    } else if err.is_connect() {
        ProviderError::new(ErrorKind::Connection, format!("connect failed: {detail}"))
    } else {
        ProviderError::new(
            ErrorKind::Connection,
            format!("request failed before the response headers: {detail}"),
        )
    }
}

/// Classify a failure while reading a body.
fn body_error(err: reqwest::Error) -> ProviderError {
    let err = err.without_url();
    let kind = if err.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Connection
    };
    ProviderError::new(
        kind,
        format!(
            "connection lost while reading the response body: {}",
            chain(&err)
        ),
    )
}

fn too_large(limit: usize) -> ProviderError {
    ProviderError::new(
        ErrorKind::Malformed,
        format!("response body larger than {limit} bytes"),
    )
}

/// An error and its sources, `outer: inner: innermost`, without repeats.
fn chain(err: &dyn StdError) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(e) = source {
        let text = e.to_string();
        if parts.last().is_none_or(|last| !last.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_joins_like_the_sdks() {
        let cases = [
            ("https://api.openai.com/v1", "/chat/completions"),
            ("https://api.openai.com/v1/", "chat/completions"),
            ("https://api.openai.com/v1//", "/chat/completions"),
        ];
        for (base, path) in cases {
            assert_eq!(
                endpoint(base, path).unwrap().as_str(),
                "https://api.openai.com/v1/chat/completions"
            );
        }
        assert!(endpoint("api.openai.com/v1", "/x").is_err());
        assert!(endpoint("ftp://host/v1", "/x").is_err());
        assert!(endpoint("https://user:pw@host/v1", "/x").is_err());
    }

    #[test]
    fn secret_headers_are_sensitive_and_errors_hide_them() {
        let mut map = HeaderMap::new();
        insert_secret_header(&mut map, "authorization", "Bearer ", &Secret::new("sk-1")).unwrap();
        let value = map.get("authorization").unwrap();
        assert!(value.is_sensitive());
        assert_eq!(value.to_str().unwrap(), "Bearer sk-1");
        let err =
            insert_secret_header(&mut map, "x-api-key", "", &Secret::new("sk-\n2")).unwrap_err();
        assert!(!err.0.contains("sk-"), "{err}");
        assert!(insert_header(&mut map, "bad name", "v").is_err());
        insert_header(&mut map, "HTTP-Referer", "https://example.com").unwrap();
        assert_eq!(header(&map, "http-referer"), Some("https://example.com"));
    }

    #[test]
    fn retry_after_reads_both_headers() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 10:00:00 GMT").unwrap();
        let mut headers = HeaderMap::new();
        insert_header(&mut headers, "Retry-After", "Sun, 29 Nov 2026 10:00:07 GMT").unwrap();
        let failure = HttpFailure {
            status: 429,
            headers,
            body: Bytes::new(),
        };
        assert_eq!(failure.retry_after(now), Some(Duration::from_secs(7)));
    }

    #[test]
    fn providers_with_the_same_connect_timeout_share_a_pool() {
        let transport = Transport::default();
        let _a = transport.client(HttpSettings::default()).unwrap();
        let _b = transport.client(HttpSettings::default()).unwrap();
        let _c = transport
            .client(HttpSettings {
                connect_timeout: Duration::from_secs(1),
                ..HttpSettings::default()
            })
            .unwrap();
        assert_eq!(transport.inner.clients.lock().unwrap().len(), 2);
    }
}
