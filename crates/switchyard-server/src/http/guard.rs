//! The request guard: which requests are answered at all, before any handler reads them.
//!
//! Owns three checks, made in this order on every request, each refusal in OpenAI's error
//! JSON:
//! 1. **`Host`, without `[[keys]]`.** Keyless mode is safe only while nothing but this
//!    machine can call it. A web page that rebinds its own DNS name to 127.0.0.1 reaches
//!    the socket, but its requests still carry its own name as `Host`; so without keys only
//!    loopback names are answered (`localhost`, `127.x.x.x`, `[::1]`, with any port or none:
//!    the name is what defeats rebinding; the port would only break SSH tunnels and
//!    proxies) — anything else is 421. With keys, any `Host` is answered (a key is needed).
//! 2. **`Origin`.** Browsers send it on cross-origin requests and on every POST. It must be
//!    the request's own origin (its host and port are the `Host` the request was sent to;
//!    the dashboard's own fetches) or one `[server] allowed_origins` lists — else 403.
//!    Listed origins get CORS answers (preflights, and `access-control-*` headers on
//!    responses) so a browser app there can call the API; nothing else does.
//! 3. **`Content-Type` on POST, PUT and PATCH** must be `application/json` (parameters such
//!    as `charset` allowed) — else 415. A cross-site form or `fetch` may send `text/plain`
//!    (or no type) without a CORS preflight; it cannot send `application/json` without one,
//!    and preflights are answered only for listed origins. Checked with keys too: the API
//!    takes nothing but JSON bodies.
//!
//! Does not own authentication (`crate::access::keys`), body size or body parsing (`crate::http::dialects`).

use std::net::{Ipv4Addr, Ipv6Addr};

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::origins::AllowedOrigins;
use crate::http::state::AppState;

/// Response headers a listed origin's scripts may read.
const EXPOSED: &str = "x-request-id, x-switchyard-provider, x-switchyard-attempts, \
                       x-switchyard-failed-over, x-switchyard-cost-usd, retry-after";
/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// The middleware: refuse what the checks refuse, answer listed origins' preflights, and
/// mark listed origins' responses readable.
pub async fn check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let listed = match admit(&state, &request) {
        Ok(listed) => listed,
        Err(e) => return refused(e, request.headers()),
    };
    let Some(origin) = listed else {
        return next.run(request).await;
    };
    if request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        return preflight(origin, request.headers());
    }
    let mut response = next.run(request).await;
    allow_origin(response.headers_mut(), origin);
    response
}

/// A refusal, with an `x-request-id` like every other answer.
fn refused(e: ApiError, headers: &HeaderMap) -> Response {
    let mut response = e.into_response();
    if let Ok(id) = HeaderValue::from_str(&crate::http::request_id::request_id(headers)) {
        response.headers_mut().insert("x-request-id", id);
    }
    response
}

/// Run the checks; `Some(origin)` when the request comes from a listed origin. Also
/// `crate::http::app::FastPath`'s test of whether the guard has anything to do.
pub(crate) fn admit(state: &AppState, request: &Request) -> Result<Option<HeaderValue>, ApiError> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .map(|v| v.to_str().unwrap_or_default())
        .or_else(|| request.uri().authority().map(Authority::as_str));
    if state.keys.is_empty() {
        check_host(host)?;
        if let Some(authority) = request.uri().authority() {
            check_host(Some(authority.as_str()))?;
        }
    }
    let listed = check_origin(headers, host, &state.allowed_origins)?;
    check_content_type(request.method(), headers)?;
    Ok(listed)
}

/// Keyless mode: the request must be addressed to this machine by a loopback name.
fn check_host(host: Option<&str>) -> Result<(), ApiError> {
    match host {
        Some(h) if loopback_name(h) => Ok(()),
        Some(h) => Err(misdirected(&format!(
            "Host {:?} is not a loopback name",
            clip(h, ECHO_BYTES)
        ))),
        None => Err(misdirected("the request has no Host")),
    }
}

fn misdirected(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "invalid_request_error",
        format!(
            "{what}: without [[keys]] switchyard answers only requests addressed to localhost, \
             127.0.0.1 or [::1] (a defence against DNS rebinding); configure client keys to \
             serve other names"
        ),
    )
    .code("host_not_allowed")
}

/// `localhost`, an IPv4 loopback address or `[::1]`, each with an optional port.
fn loopback_name(authority: &str) -> bool {
    if let Some(rest) = authority.strip_prefix('[') {
        let Some((ip, port)) = rest.split_once(']') else {
            return false;
        };
        let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(is_port);
        return port_ok && ip.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    let host = match authority.split_once(':') {
        Some((host, port)) if is_port(port) => host,
        Some(_) => return false,
        None => authority,
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_port(text: &str) -> bool {
    (1..=5).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

/// No `Origin`, the request's own origin, or a listed one (returned: it gets CORS headers).
fn check_origin(
    headers: &HeaderMap,
    host: Option<&str>,
    allowed: &AllowedOrigins,
) -> Result<Option<HeaderValue>, ApiError> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(None);
    };
    let origin = value.to_str().unwrap_or("?");
    if host.is_some_and(|h| same_origin(origin, h)) {
        return Ok(None);
    }
    if allowed.allows(origin) {
        return Ok(Some(value.clone()));
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "permission_error",
        format!(
            "cross-origin request from {:?} refused: list the origin in [server] allowed_origins to allow it",
            clip(origin, ECHO_BYTES)
        ),
    )
    .code("origin_not_allowed"))
}

/// Is `origin` (`scheme://host[:port]`) the origin of a request sent to `host`?
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|authority| !authority.is_empty() && authority.eq_ignore_ascii_case(host))
}

/// A POST, PUT or PATCH must say its body is JSON.
fn check_content_type(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if !matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        return Ok(());
    }
    let declared = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("?"));
    let media_type = declared.map(|ct| ct.split(';').next().unwrap_or("").trim());
    if media_type.is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
        return Ok(());
    }
    let got = match declared {
        Some(ct) => format!("got {:?}", clip(ct, ECHO_BYTES)),
        None => "got none".to_owned(),
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_request_error",
        format!("the request body must be JSON: send `Content-Type: application/json` ({got})"),
    )
    .code("unsupported_media_type"))
}

/// The CORS headers on a listed origin's response.
fn allow_origin(headers: &mut HeaderMap, origin: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED),
    );
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

/// A listed origin's preflight: the methods the API has, and the headers it asked for.
fn preflight(origin: HeaderValue, request: &HeaderMap) -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    allow_origin(headers, origin);
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST"),
    );
    let asked = request
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("authorization, content-type"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked);
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static(PREFLIGHT_MAX_AGE),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::origin_problem;

    #[test]
    fn loopback_names_with_or_without_a_port() {
        for ok in [
            "127.0.0.1:4000",
            "localhost:4000",
            "LOCALHOST",
            "[::1]:4000",
            "[::1]",
            "127.0.0.1",
            "127.8.9.10:80",
        ] {
            assert!(loopback_name(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:4000",
            "localhost.evil.example:4000",
            "127.0.0.1.nip.io:4000",
            "10.0.0.1:4000",
            "[::2]:4000",
            "[::1]x",
            "localhost:4000:5",
            "localhost:http",
            "",
            "[::ffff:127.0.0.1]:4000",
        ] {
            assert!(!loopback_name(bad), "{bad}");
        }
    }

    #[test]
    fn origins_are_compared_to_the_host_they_were_sent_to() {
        assert!(same_origin("http://127.0.0.1:4000", "127.0.0.1:4000"));
        assert!(same_origin("http://LocalHost:4000", "localhost:4000"));
        assert!(!same_origin("http://127.0.0.1:4001", "127.0.0.1:4000"));
        assert!(!same_origin("null", "127.0.0.1:4000"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:4000"));
        assert!(
            !same_origin("http://", ""),
            "an unreadable Host matches nothing"
        );
    }

    #[test]
    fn allowed_origins_must_be_origins() {
        assert_eq!(origin_problem("http://localhost:3000"), None);
        assert_eq!(origin_problem("https://app.example.com/"), None);
        for bad in [
            "*",
            "null",
            "localhost:3000",
            "https://app.example.com/x",
            "http://*.example.com",
            "ftp://x",
            "http://",
        ] {
            assert!(origin_problem(bad).is_some(), "{bad}");
        }
        let mut config = crate::config::Config::default();
        config.server.allowed_origins = vec!["http://localhost:3000".into(), "*".into()];
        let problems = crate::config::validate(&config);
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("server.allowed_origins[1]: \"*\" is not an origin")),
            "{problems:?}"
        );
        assert!(!problems.iter().any(|p| p.contains("allowed_origins[0]")));
        let listed = AllowedOrigins::new(&["https://App.Example.com/".to_owned()]);
        assert!(listed.allows("https://app.example.com"));
        assert!(!listed.allows("http://app.example.com"));
    }
}
