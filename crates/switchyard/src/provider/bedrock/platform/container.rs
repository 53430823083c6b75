//! The container credentials endpoint: ECS task roles (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`,
//! a path on `http://169.254.170.2`) and EKS Pod Identity (`AWS_CONTAINER_CREDENTIALS_FULL_URI`,
//! `http://169.254.170.23/v1/credentials`, with the token in
//! `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`).
//!
//! Owns [`ContainerEndpoint`], an [`Issuer`]: a `GET` of the URL with the `Authorization`
//! header set to the token (the file's content, read afresh each time since the platform
//! rotates it; else the fixed token), answered with JSON `AccessKeyId`, `SecretAccessKey`,
//! `Token`, `Expiration`. Which full URLs are allowed follows the AWS SDKs' rule
//! ([`full_uri_allowed`]): any `https` URL; over `http`, only a loopback host or the ECS and
//! EKS link-local addresses, so credentials are never fetched in the clear from elsewhere.
//! Connect timeout [`super::LOCAL_CONNECT_TIMEOUT`], the whole request
//! [`super::LOCAL_REQUEST_TIMEOUT`], the answer capped at [`super::MAX_ANSWER_BYTES`].

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use http::HeaderMap;

use super::{
    bounded, failed, from_json, read_token_file, refused, Issued, Issuer, LOCAL_REQUEST_TIMEOUT,
};
use crate::error::ProviderError;
use crate::provider::http::{self as transport, ConfigError, Endpoint, HttpClient};
use crate::provider::secret::Secret;

/// The ECS credentials host a relative URI is resolved against.
pub const ECS_ROOT: &str = "http://169.254.170.2";

/// The ECS task metadata address.
const ECS_ADDRESS: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(169, 254, 170, 2));
/// The EKS Pod Identity agent's IPv4 address.
const EKS_ADDRESS: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(169, 254, 170, 23));
/// The EKS Pod Identity agent's IPv6 address, `fd00:ec2::23`.
const EKS_ADDRESS_V6: IpAddr =
    IpAddr::V6(std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23));

/// Where the `Authorization` header's value comes from.
#[derive(Debug, Clone)]
pub enum ContainerAuth {
    /// No header.
    None,
    /// A fixed token (`AWS_CONTAINER_AUTHORIZATION_TOKEN`).
    Token(Secret),
    /// A file read at each fetch (`AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`).
    File(PathBuf),
}

/// Why a full URI may not be used, or `None` when it may: `https` anywhere; `http` to a
/// loopback address (`localhost` included), `169.254.170.2` (ECS) or `169.254.170.23` /
/// `fd00:ec2::23` (EKS Pod Identity). A host name other than `localhost` over `http` is
/// refused (the SDKs resolve it and require every address to be allowed; a name that
/// resolves elsewhere later is not worth the risk here).
#[must_use]
pub fn full_uri_allowed(uri: &str) -> Option<String> {
    let Ok(url) = url::Url::parse(uri.trim()) else {
        return Some(format!("{uri:?} is not a URL"));
    };
    match url.scheme() {
        "https" => return None,
        "http" => {}
        other => {
            return Some(format!(
                "{uri:?}: scheme {other:?} is neither http nor https"
            ))
        }
    }
    let allowed = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => {
            let ip = IpAddr::V4(ip);
            ip.is_loopback() || ip == ECS_ADDRESS || ip == EKS_ADDRESS
        }
        Some(url::Host::Ipv6(ip)) => {
            let ip = IpAddr::V6(ip);
            ip.is_loopback() || ip == EKS_ADDRESS_V6
        }
        None => false,
    };
    (!allowed).then(|| {
        format!(
            "{uri:?}: over http only a loopback host, 169.254.170.2 (ECS) or 169.254.170.23 / [fd00:ec2::23] (EKS Pod Identity) may serve credentials; use https for another host"
        )
    })
}

/// Credentials from the container credentials endpoint.
#[derive(Debug)]
pub struct ContainerEndpoint {
    url: Endpoint,
    auth: ContainerAuth,
    http: HttpClient,
    /// The token last sent, scrubbed from errors.
    sent: Mutex<Option<Secret>>,
}

impl ContainerEndpoint {
    /// The endpoint at `ECS_ROOT` + `relative` (an ECS task role).
    ///
    /// # Errors
    /// A path that does not make a URL.
    pub fn relative(
        relative: &str,
        auth: ContainerAuth,
        http: HttpClient,
    ) -> Result<Self, ConfigError> {
        if !relative.starts_with('/') {
            return Err(ConfigError(format!(
                "relative URI {relative:?} must start with /"
            )));
        }
        Self::at(&format!("{ECS_ROOT}{relative}"), auth, http)
    }

    /// The endpoint at `full` (EKS Pod Identity, or another agent).
    ///
    /// # Errors
    /// A URL [`full_uri_allowed`] refuses, or none.
    pub fn full(full: &str, auth: ContainerAuth, http: HttpClient) -> Result<Self, ConfigError> {
        if let Some(why) = full_uri_allowed(full) {
            return Err(ConfigError(why));
        }
        Self::at(full.trim(), auth, http)
    }

    fn at(url: &str, auth: ContainerAuth, http: HttpClient) -> Result<Self, ConfigError> {
        let url = url::Url::parse(url).map_err(|e| ConfigError(format!("{url:?}: {e}")))?;
        Ok(Self {
            url: Endpoint::new(url)?,
            auth,
            http,
            sent: Mutex::new(None),
        })
    }

    async fn fetch(&self, headers: &HeaderMap) -> Result<Issued, ProviderError> {
        let response = self.http.get(&self.url, headers).await?;
        if !response.is_success() {
            let failure = response.into_failure().await;
            return Err(refused(failure.status, "", &failure.body));
        }
        let body = response.body().await?;
        from_json(&body, "the answer")
    }
}

#[async_trait]
impl Issuer for ContainerEndpoint {
    fn describe(&self) -> String {
        let auth = match &self.auth {
            ContainerAuth::None => String::new(),
            ContainerAuth::Token(_) => ", with the authorization token".to_owned(),
            ContainerAuth::File(path) => {
                format!(", with the authorization token in {}", path.display())
            }
        };
        format!("container credentials endpoint {}{auth}", self.url)
    }

    async fn issue(&self) -> Result<Issued, ProviderError> {
        let token = match &self.auth {
            ContainerAuth::None => None,
            ContainerAuth::Token(token) => Some(token.clone()),
            ContainerAuth::File(path) => {
                Some(read_token_file(path, "container authorization token file")?)
            }
        };
        let mut headers = HeaderMap::new();
        if let Some(token) = &token {
            *self.sent.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
            transport::insert_secret_header(&mut headers, "authorization", "", token)
                .map_err(|e| failed(format!("container authorization token: {e}")))?;
        }
        let what = format!("container credentials endpoint {}", self.url);
        let result = bounded(LOCAL_REQUEST_TIMEOUT, &what, self.fetch(&headers)).await;
        result.map_err(|e| transport::redact(token.as_ref(), e))
    }

    fn secrets(&self) -> Vec<Secret> {
        let sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let fixed = match &self.auth {
            ContainerAuth::Token(token) => Some(token.clone()),
            _ => None,
        };
        sent.iter().cloned().chain(fixed).collect()
    }
}
