//! Transport tests: endpoints and hosts, headers, bodies under the cap, connect failures
//! and timeouts, scrubbing.

use super::*;
use crate::provider::secret::Secret;

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

/// A query on the base (Azure's `api-version`) stays a query: the path goes before it.
#[test]
fn endpoint_keeps_the_base_query_after_the_path() {
    let cases = [
        (
            "https://r.openai.azure.com/openai/v1?api-version=preview",
            "/chat/completions",
            "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview",
        ),
        (
            "https://r.openai.azure.com/openai/v1/?api-version=preview&x=1",
            "chat/completions",
            "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview&x=1",
        ),
        (
            "http://127.0.0.1:9/v1?",
            "/embeddings",
            "http://127.0.0.1:9/v1/embeddings",
        ),
        (
            "http://127.0.0.1:9/v1?a=b",
            "/m:stream?alt=sse",
            "http://127.0.0.1:9/v1/m:stream?alt=sse&a=b",
        ),
    ];
    for (base, path, want) in cases {
        assert_eq!(
            endpoint(base, path).unwrap().as_str(),
            want,
            "{base} + {path}"
        );
    }
    let err = endpoint("https://host/v1#frag", "/x").unwrap_err();
    assert!(err.0.contains("fragment"), "{err}");
}

#[test]
fn secret_headers_are_sensitive_and_errors_hide_them() {
    let mut map = HeaderMap::new();
    insert_secret_header(&mut map, "authorization", "Bearer ", &Secret::new("sk-1")).unwrap();
    let value = map.get("authorization").unwrap();
    assert!(value.is_sensitive());
    assert_eq!(value.to_str().unwrap(), "Bearer sk-1");
    let err = insert_secret_header(&mut map, "x-api-key", "", &Secret::new("sk-\n2")).unwrap_err();
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
