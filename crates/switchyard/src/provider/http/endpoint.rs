//! Where a call goes and what it carries: endpoint URLs joined like the SDKs join them,
//! parsed once, and request headers (a key's marked sensitive).

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Uri;
use url::Url;

use super::ConfigError;
use crate::provider::secret::Secret;

/// `base_url` joined with `path` (`https://api.openai.com/v1` + `/chat/completions`). A
/// trailing slash on the base and a missing leading slash on the path are tolerated. A
/// query on the base (Azure's `?api-version=…`) is kept: the path goes before it
/// (`…/v1/chat/completions?api-version=…`). A fragment is refused (it would never be sent).
///
/// # Errors
/// When the result is not an absolute `http`/`https` URL, or the base carries credentials
/// or a fragment.
pub fn endpoint(base_url: &str, path: &str) -> Result<Url, ConfigError> {
    let base = base_url.trim();
    if base.contains('#') {
        return Err(ConfigError(format!(
            "base_url {base:?}: a fragment (#...) is never sent; remove it"
        )));
    }
    let (base, query) = match base.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (base, None),
    };
    let base = base.trim_end_matches('/');
    let path = path.trim_start_matches('/');
    let mut joined = if path.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{path}")
    };
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        joined.push(if joined.contains('?') { '&' } else { '?' });
        joined.push_str(query);
    }
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
    pub(super) url: Url,
    pub(super) uri: Uri,
    pub(super) host: HeaderValue,
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

    /// The `Host` header every request to this endpoint carries.
    #[must_use]
    pub fn host(&self) -> &HeaderValue {
        &self.host
    }

    /// The URL as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The host and port calls go to (the scheme's port when the URL names none).
    #[must_use]
    pub fn host_port(&self) -> Option<(&str, u16)> {
        Some((self.url.host_str()?, self.url.port_or_known_default()?))
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
