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
//! - hyper's pooled client (`hyper-util`), HTTP/1.1 over rustls (ring, webpki roots),
//!   `TCP_NODELAY`; one pool per distinct connect timeout, shared by every provider built
//!   from the same [`Transport`]; with the default connect timeout that is one pool for the
//!   whole process. (It replaced `reqwest`, whose layers — URL re-parsing, redirect policy,
//!   boxed futures — cost ~10 µs per request on the benchmark's machine; BENCHMARKS.md.)
//! - A connect timeout covers TCP, a proxy's `CONNECT` and TLS, and is
//!   [`ErrorKind::Timeout`] (the host is silent: retrying costs a full timeout again); a
//!   refused or reset connection, a DNS failure or a reset before the response headers is
//!   [`ErrorKind::Connection`]. Losing the connection while reading a body is `Connection`
//!   too.
//! - Redirects are not followed: an API endpoint that redirects is misconfigured, and a
//!   followed redirect could carry a vendor's key header to another host.
//! - Proxies from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) are
//!   ignored unless [`TransportConfig::proxy_from_env`] says otherwise: the library reads no
//!   environment. Through a proxy every connection is a `CONNECT` tunnel (`http://`
//!   destinations too), with the proxy URL's user and password as basic auth.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt as _};
use http::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, HOST, USER_AGENT,
};
use http::{Request, Response, Uri};
use http_body_util::{BodyDataStream, BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;
use url::Url;

use super::secret::Secret;
use crate::error::{ErrorKind, ProviderError};

type BoxError = Box<dyn StdError + Send + Sync>;
type Connector = Timed<hyper_rustls::HttpsConnector<Dial>>;
type Pool = Client<Connector, Full<Bytes>>;

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
    /// Honour `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` from the environment.
    pub proxy_from_env: bool,
    /// The `User-Agent` sent upstream (unless a provider's headers set one).
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
    /// The proxies from the environment, when the config asks for them.
    proxies: Option<Arc<Matcher>>,
    /// One pool per distinct connect timeout (the timeout lives in the connector), so
    /// providers that agree on it share connections; the list is as long as the number of
    /// distinct timeouts in the config (usually one). Locked only while building providers.
    clients: Mutex<Vec<(Duration, Shared)>>,
}

/// A pool and what every request through it carries.
#[derive(Clone)]
struct Shared {
    pool: Pool,
    user_agent: HeaderValue,
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
        let proxies = config.proxy_from_env.then(Matcher::from_env);
        Self::with_proxies(config, proxies)
    }

    fn with_proxies(config: TransportConfig, proxies: Option<Matcher>) -> Self {
        Self {
            inner: Arc::new(Pools {
                config,
                proxies: proxies.map(Arc::new),
                clients: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A provider's handle on the pool. Call once when the provider is built.
    ///
    /// # Errors
    /// When the TLS backend cannot be initialised or the user agent is not valid in HTTP.
    pub fn client(&self, settings: HttpSettings) -> Result<HttpClient, ConfigError> {
        let mut clients = self
            .inner
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let existing = clients
            .iter()
            .find(|(timeout, _)| *timeout == settings.connect_timeout);
        let shared = if let Some((_, shared)) = existing {
            shared.clone()
        } else {
            let shared = self.build(settings.connect_timeout)?;
            clients.push((settings.connect_timeout, shared.clone()));
            shared
        };
        Ok(HttpClient {
            pool: shared.pool,
            user_agent: shared.user_agent,
            max_body_bytes: settings.max_body_bytes,
        })
    }

    fn build(&self, connect_timeout: Duration) -> Result<Shared, ConfigError> {
        let config = &self.inner.config;
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .map_err(|_| ConfigError("the user agent is not valid in an HTTP header".into()))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect_timeout));
        let dial = Dial {
            http,
            proxies: self.inner.proxies.clone(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError(format!("setting up TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(dial);
        let pool = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(config.pool_idle_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .pool_timer(TokioTimer::new())
            .build(Timed {
                inner: https,
                timeout: connect_timeout,
            });
        Ok(Shared { pool, user_agent })
    }
}

/// Opens TCP connections, directly or through a `CONNECT` tunnel when a proxy from the
/// environment applies to the destination.
#[derive(Clone)]
struct Dial {
    http: HttpConnector,
    proxies: Option<Arc<Matcher>>,
}

impl tower_service::Service<Uri> for Dial {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // HttpConnector is always ready
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut http = self.http.clone();
        let Some(intercept) = self.proxies.as_ref().and_then(|m| m.intercept(&dst)) else {
            return Box::pin(async move { http.call(dst).await.map_err(Into::into) });
        };
        let mut tunnel = Tunnel::new(intercept.uri().clone(), http);
        if let Some(auth) = intercept.basic_auth() {
            tunnel = tunnel.with_auth(auth.clone());
        }
        Box::pin(async move {
            std::future::poll_fn(|cx| tunnel.poll_ready(cx)).await?;
            tunnel
                .call(dst)
                .await
                .map_err(|e| format!("proxy tunnel: {}", chain(&e)).into())
        })
    }
}

/// A connector whose whole connect (TCP, tunnel, TLS) must finish within `timeout`.
#[derive(Clone)]
struct Timed<C> {
    inner: C,
    timeout: Duration,
}

/// The marker a connect timeout leaves in the error chain.
#[derive(Debug, thiserror::Error)]
#[error("no connection within {0:?}")]
struct ConnectTimedOut(Duration);

impl<C> tower_service::Service<Uri> for Timed<C>
where
    C: tower_service::Service<Uri>,
    C::Error: Into<BoxError>,
    C::Future: Send + 'static,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let connecting = self.inner.call(dst);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, connecting).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(Box::new(ConnectTimedOut(timeout)) as BoxError),
            }
        })
    }
}

/// One provider's handle on the shared pool, with its body limit.
#[derive(Clone)]
pub struct HttpClient {
    pool: Pool,
    user_agent: HeaderValue,
    max_body_bytes: usize,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("max_body_bytes", &self.max_body_bytes)
            .finish_non_exhaustive()
    }
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
        url: &Endpoint,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let mut request = self.request(http::Method::POST, url, headers, Bytes::from(body));
        request
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.execute(request).await
    }

    /// GET `url` (health checks, model listings). `Ok` once the headers are in.
    ///
    /// # Errors
    /// As [`post_json`](Self::post_json).
    pub async fn get(
        &self,
        url: &Endpoint,
        headers: &HeaderMap,
    ) -> Result<UpstreamResponse, ProviderError> {
        let request = self.request(http::Method::GET, url, headers, Bytes::new());
        self.execute(request).await
    }

    /// The body cap this provider was configured with.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    fn request(
        &self,
        method: http::Method,
        url: &Endpoint,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = url.uri.clone();
        let map = request.headers_mut();
        map.reserve(headers.len() + 4);
        for (name, value) in headers {
            map.append(name, value.clone());
        }
        if !map.contains_key(USER_AGENT) {
            map.insert(USER_AGENT, self.user_agent.clone());
        }
        if !map.contains_key(HOST) {
            map.insert(HOST, url.host.clone());
        }
        request
    }

    async fn execute(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let response = self.pool.request(request).await.map_err(request_error)?;
        Ok(UpstreamResponse {
            inner: response,
            max_body_bytes: self.max_body_bytes,
        })
    }
}

/// A response whose headers are in and whose body is not read yet.
#[derive(Debug)]
pub struct UpstreamResponse {
    inner: Response<Incoming>,
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

    /// The next piece of body data (trailers are skipped); `None` at its end.
    async fn chunk(body: &mut Incoming) -> Result<Option<Bytes>, hyper::Error> {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                return Ok(Some(data));
            }
        }
        Ok(None)
    }

    /// The whole body, refusing more than the configured cap.
    ///
    /// # Errors
    /// `Malformed` past the cap (announced by `content-length` or counted while reading);
    /// `Connection` / `Timeout` if the connection fails mid-body.
    pub async fn body(self) -> Result<Bytes, ProviderError> {
        let limit = self.max_body_bytes;
        let announced = self
            .inner
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if announced.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        let mut body = self.inner.into_body();
        // One chunk (the common case) is returned as is; more are joined.
        let mut single: Option<Bytes> = None;
        let mut joined = BytesMut::new();
        while let Some(chunk) = Self::chunk(&mut body).await.map_err(body_error)? {
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
    pub async fn into_failure(self) -> HttpFailure {
        let status = self.status();
        let (parts, mut incoming) = self.inner.into_parts();
        let mut body = BytesMut::new();
        while body.len() < ERROR_BODY_LIMIT {
            match Self::chunk(&mut incoming).await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(ERROR_BODY_LIMIT);
        HttpFailure {
            status,
            headers: parts.headers,
            body: body.freeze(),
        }
    }

    /// The body as it arrives (for server-sent events). Pair it with
    /// [`SseStream::new`](super::sse::SseStream::new) and
    /// [`max_body_bytes`](Self::max_body_bytes) as the per-event cap.
    #[must_use]
    pub fn into_byte_stream(self) -> ByteStream {
        Box::pin(BodyDataStream::new(self.inner.into_body()).map(|r| r.map_err(body_error)))
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

/// `error` safe to show: `key` scrubbed from its message and vendor code (in every form
/// [`Secret::scrub`] knows), and only then each cut to length ([`MESSAGE_LIMIT`],
/// [`CODE_LIMIT`] characters), so a cut never leaves the start of a key behind. Every
/// error an adapter returns passes through here, with or without a key.
#[must_use]
pub fn redact(key: Option<&Secret>, mut error: ProviderError) -> ProviderError {
    error.message = scrubbed(key, &error.message, MESSAGE_LIMIT);
    error.vendor_code = error.vendor_code.map(|c| scrubbed(key, &c, CODE_LIMIT));
    error
}

/// The longest error message an adapter returns, in characters (cut after scrubbing).
pub const MESSAGE_LIMIT: usize = 500;

/// The longest vendor error code an adapter returns, in characters.
pub const CODE_LIMIT: usize = 100;

/// `text` scrubbed of `key`, then cut to `max` characters. Only its first
/// [`ERROR_BODY_LIMIT`] bytes are read (a stream's error event may be megabytes): a key
/// that limit cuts through is still removed, as a fragment.
fn scrubbed(key: Option<&Secret>, text: &str, max: usize) -> String {
    let text = head(text, ERROR_BODY_LIMIT);
    match key {
        Some(key) => truncate(&key.scrub(text), max),
        None => truncate(text, max),
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The start of a body for an error message: its first [`ERROR_BODY_LIMIT`] bytes,
/// whitespace collapsed. Not cut shorter: [`redact`] cuts messages after scrubbing them.
#[must_use]
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_LIMIT)]);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` characters, with `…` when cut. Cut only text that was
/// scrubbed already.
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

/// An upstream URL made ready for the HTTP stack once, at configuration time: its request
/// URI and `Host` header are cloned into each request (cheap, shared buffers) instead of
/// being parsed and formatted per request.
#[derive(Debug, Clone)]
pub struct Endpoint {
    url: Url,
    uri: Uri,
    host: HeaderValue,
}

impl Endpoint {
    /// [`endpoint`]`(base_url, path)`, made ready.
    ///
    /// # Errors
    /// As [`endpoint`] and [`Endpoint::new`].
    pub fn at(base_url: &str, path: &str) -> Result<Self, ConfigError> {
        Self::new(endpoint(base_url, path)?)
    }

    /// # Errors
    /// When the URL is not one the HTTP stack can send to.
    pub fn new(url: Url) -> Result<Self, ConfigError> {
        let uri = Uri::try_from(url.as_str())
            .map_err(|e| ConfigError(format!("upstream URL {:?}: {e}", url.as_str())))?;
        let host = uri
            .host()
            .ok_or_else(|| ConfigError(format!("upstream URL {:?} has no host", url.as_str())))?;
        let default_port = match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        };
        let host = match uri.port_u16() {
            Some(port) if port != default_port => format!("{host}:{port}"),
            _ => host.to_owned(),
        };
        let host = HeaderValue::from_str(&host)
            .map_err(|e| ConfigError(format!("upstream URL {:?}: host: {e}", url.as_str())))?;
        Ok(Self { url, uri, host })
    }

    /// The URL as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.url.as_str())
    }
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
fn request_error(err: hyper_util::client::legacy::Error) -> ProviderError {
    let detail = chain(&err);
    if timed_out(&err) {
        let what = if err.is_connect() {
            "connect timed out"
        } else {
            "timed out before the response headers"
        };
        ProviderError::new(ErrorKind::Timeout, format!("{what}: {detail}"))
    } else if err.is_connect() {
        ProviderError::new(ErrorKind::Connection, format!("connect failed: {detail}"))
    } else {
        ProviderError::new(
            ErrorKind::Connection,
            format!("request failed before the response headers: {detail}"),
        )
    }
}

/// Did `err` time out: our whole-connect limit ([`Timed`]), or a socket that gave up
/// (`TimedOut`: the TCP connector's own per-address limit, or the kernel's) — anywhere in
/// its chain.
fn timed_out(err: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        let io_timeout = e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
        if io_timeout || e.is::<ConnectTimedOut>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// Classify a failure while reading a body.
fn body_error(err: hyper::Error) -> ProviderError {
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
    fn endpoints_carry_the_host_header_hyper_would_send() {
        let host = |base: &str| {
            let ep = Endpoint::at(base, "/v1/models").unwrap();
            ep.host.to_str().unwrap().to_owned()
        };
        assert_eq!(host("https://api.openai.com"), "api.openai.com");
        assert_eq!(host("https://api.openai.com:443"), "api.openai.com");
        assert_eq!(host("http://127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(host("http://localhost:80/v1"), "localhost");
        assert_eq!(host("https://gw.internal:80"), "gw.internal:80");
        assert_eq!(host("http://[::1]:9000"), "[::1]:9000");
    }

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

    /// A CONNECT proxy on loopback that tunnels one connection per accept and counts them.
    #[allow(clippy::disallowed_methods)] // the test's own proxy, aborted at its end
    async fn connect_proxy(
        tunnels: Arc<std::sync::atomic::AtomicUsize>,
    ) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::task::spawn(async move {
            loop {
                let (mut client, _) = listener.accept().await.unwrap();
                let tunnels = tunnels.clone();
                tokio::task::spawn(async move {
                    let mut head = Vec::new();
                    while !head.ends_with(b"\r\n\r\n") {
                        let mut byte = [0u8; 1];
                        if client.read(&mut byte).await.unwrap() == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8(head).unwrap();
                    let target = head
                        .strip_prefix("CONNECT ")
                        .and_then(|rest| rest.split(' ').next())
                        .unwrap()
                        .to_owned();
                    assert!(
                        head.to_ascii_lowercase()
                            .contains("proxy-authorization: basic "),
                        "{head}"
                    );
                    let mut upstream = tokio::net::TcpStream::connect(target).await.unwrap();
                    tunnels.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    client
                        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        .await
                        .unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
            }
        });
        (addr, task)
    }

    #[tokio::test]
    async fn a_proxy_from_the_environment_carries_requests_through_a_tunnel() {
        use wiremock::matchers::{header as has_header, method, path};
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(has_header("content-type", "application/json"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("{}"))
            .mount(&server)
            .await;
        let tunnels = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (proxy, task) = connect_proxy(tunnels.clone()).await;
        let matcher = Matcher::builder()
            .all(format!("http://user:pw@{proxy}"))
            .build();
        let transport = Transport::with_proxies(TransportConfig::default(), Some(matcher));
        let client = transport.client(HttpSettings::default()).unwrap();
        let url = Endpoint::at(&server.uri(), "/v1/chat/completions").unwrap();
        for _ in 0..2 {
            let response = client
                .post_json(&url, &HeaderMap::new(), b"{}".to_vec())
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            assert_eq!(response.body().await.unwrap(), Bytes::from_static(b"{}"));
        }
        assert_eq!(
            tunnels.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one tunnel, kept alive in the pool"
        );
        task.abort();
    }

    #[tokio::test]
    async fn requests_carry_the_user_agent_and_bodies_are_capped() {
        use wiremock::matchers::{header as has_header, method};
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(method("GET"))
            .and(has_header(
                "user-agent",
                TransportConfig::default().user_agent.as_str(),
            ))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_string("x".repeat(100)))
            .mount(&server)
            .await;
        let transport = Transport::default();
        let client = transport
            .client(HttpSettings {
                max_body_bytes: 64,
                ..HttpSettings::default()
            })
            .unwrap();
        let url = Endpoint::at(&server.uri(), "/v1/models").unwrap();
        let response = client.get(&url, &HeaderMap::new()).await.unwrap();
        assert_eq!(response.status(), 200, "the user agent was sent");
        let err = response.body().await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed);
        assert!(
            err.message.contains("larger than 64 bytes"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connection_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let client = Transport::default()
            .client(HttpSettings::default())
            .unwrap();
        let url = Endpoint::at(&format!("http://{addr}"), "/v1").unwrap();
        let err = client.get(&url, &HeaderMap::new()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Connection);
        assert!(err.message.starts_with("connect failed"), "{}", err.message);
    }

    #[test]
    fn timeouts_are_found_anywhere_in_the_chain() {
        /// An error wrapping another, as the HTTP stack's layers do.
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] BoxError);
        let io = |kind| Outer(Box::new(std::io::Error::new(kind, "socket")));
        assert!(timed_out(&io(std::io::ErrorKind::TimedOut)));
        assert!(timed_out(&Outer(Box::new(ConnectTimedOut(
            Duration::from_secs(1)
        )))));
        assert!(!timed_out(&io(std::io::ErrorKind::ConnectionRefused)));
        assert!(!timed_out(&Outer("reset".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_tls_handshake_that_never_answers_is_a_connect_timeout() {
        // the kernel accepts the TCP connection into the backlog; nobody ever speaks TLS
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let client = Transport::default()
            .client(HttpSettings {
                connect_timeout: Duration::from_secs(2),
                ..HttpSettings::default()
            })
            .unwrap();
        let url = Endpoint::at(&format!("https://{addr}"), "/v1").unwrap();
        let err = client.get(&url, &HeaderMap::new()).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Timeout, "{}", err.message);
        assert!(
            err.message.starts_with("connect timed out"),
            "{}",
            err.message
        );
        drop(listener);
    }
}
