//! The HTTP transport every vendor adapter shares.
//!
//! Owns the connection pool ([`Transport`]), a provider's handle on it ([`HttpClient`]), the
//! response on its way in ([`UpstreamResponse`]: bounded body, streamed body, or the pieces a
//! `classify` needs as an [`HttpFailure`]), the mapping of transport failures to
//! [`ErrorKind::Connection`] / [`ErrorKind::Timeout`], and small helpers to build endpoint
//! URLs and request headers ([`endpoint`], [`insert_header`], [`insert_secret_header`]).
//! Here: the pool, the client and transport errors; `response.rs`: the response;
//! `scrub.rs`: the classifier hook and scrubbing keys out of errors; `endpoint.rs`: URLs and
//! headers.
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

mod endpoint;
mod response;
mod scrub;
#[cfg(test)]
mod tests;

pub use endpoint::{endpoint, insert_header, insert_secret_header, Endpoint};
pub use response::{header, HttpFailure, UpstreamResponse};
pub use scrub::{
    auth_snippet, credential_free, redact, redact_all, snippet, truncate, Classify, ErrorPolicy,
    CODE_LIMIT, MASK, MESSAGE_LIMIT,
};

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST, USER_AGENT};
use http::{Request, Uri};
use http_body_util::Full;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::TcpStream;

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
        let map = request.headers_mut();
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // the request id and trace context of the attempt in flight (`crate::propagate`)
        crate::propagate::with_outbound(|name, value| {
            if let Ok(value) = HeaderValue::from_str(value) {
                map.insert(name.clone(), value);
            }
        });
        self.execute(request).await
    }

    /// POST an HTML form body (`application/x-www-form-urlencoded`: an OAuth2 token
    /// request). `Ok` once the response headers are in, whatever the status.
    ///
    /// # Errors
    /// As [`post_json`](Self::post_json).
    pub async fn post_form(
        &self,
        url: &Endpoint,
        headers: &HeaderMap,
        body: Vec<u8>,
    ) -> Result<UpstreamResponse, ProviderError> {
        let mut request = self.request(http::Method::POST, url, headers, Bytes::from(body));
        request.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
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

    /// PUT to `url` with an empty body (the EC2 instance-metadata session token:
    /// `bedrock/platform/imds.rs`). `Ok` once the headers are in.
    ///
    /// # Errors
    /// As [`post_json`](Self::post_json).
    pub async fn put_empty(
        &self,
        url: &Endpoint,
        headers: &HeaderMap,
    ) -> Result<UpstreamResponse, ProviderError> {
        let request = self.request(http::Method::PUT, url, headers, Bytes::new());
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
        crate::propagate::note_response(response.status().as_u16(), response.headers());
        Ok(UpstreamResponse {
            inner: response,
            max_body_bytes: self.max_body_bytes,
        })
    }
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
