//! AWS Bedrock: any Converse-capable model (Anthropic's Claude, Meta's Llama, Mistral,
//! Amazon Nova, …) through the Converse and ConverseStream APIs, and the Titan and Cohere
//! text embeddings models through InvokeModel, signed with AWS Signature Version 4.
//!
//! Owns [`BedrockConfig`], [`Bedrock::new`] and [`BedrockCodec`]; the body is `request.rs`,
//! answers `reply.rs`, stream events `stream.rs` (read from AWS's binary event stream by
//! [`super::eventstream`]), embeddings `embed.rs`, errors `classify.rs`, credentials
//! `credentials.rs`, signing `sigv4.rs`, the shared credentials file `profile.rs`,
//! credentials the platform issues (web identity, container endpoint, instance metadata)
//! `platform/`.
//!
//! URLs, from the region (`base_url` / `control_url` replace the roots, for a VPC endpoint
//! or a test's mock):
//! - `POST https://bedrock-runtime.{region}.amazonaws.com/model/{modelId}/converse`, and
//!   `…/converse-stream` (answered as `application/vnd.amazon.eventstream`). The model id
//!   (`anthropic.claude-3-5-haiku-20241022-v1:0`, an inference profile
//!   `us.anthropic.claude-sonnet-4-5-20250929-v1:0`, or an ARN) is percent-encoded into
//!   one path segment, as the AWS SDKs send it.
//! - Embeddings: `POST …/model/{modelId}/invoke` (InvokeModel; JSON in and out), one call
//!   per Titan text and per 96 Cohere texts (`embed.rs`).
//! - The health check (`probe = "listing"`) GETs the model on the control plane:
//!   `https://bedrock.{region}.amazonaws.com/foundation-models/{modelId}` (GetFoundationModel)
//!   or, for an inference profile (`us.`/`eu.`/`apac.`/`global.`… prefixed ids, or an
//!   inference-profile ARN), `/inference-profiles/{id}` (GetInferenceProfile); for a
//!   provisioned-throughput, imported-model or custom-model ARN,
//!   `/provisioned-model-throughput/{arn}`, `/imported-models/{arn}`, `/custom-models/{arn}`.
//!   All are free and prove the credentials; they need the matching `bedrock:Get…`
//!   permission in the caller's IAM policy.
//!
//! Auth: SigV4 ([`sigv4::SigV4`], service `bedrock`) with the credentials the server
//! resolved (environment, a shared-credentials profile re-read when its file changes:
//! [`profile::ProfileFile`], or expiring credentials the platform issues, refreshed before
//! they expire: [`platform::PlatformCredentials`]), or a Bedrock API key sent as
//! `Authorization: Bearer` (the provider's key). Neither: nothing is sent (a proxy in front
//! signs).

pub mod classify;
pub mod credentials;
pub mod embed;
pub mod platform;
pub mod profile;
mod reply;
mod request;
pub mod sigv4;
mod stream;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ::http::HeaderMap;

pub use classify::classify;
pub use credentials::AwsCredentials;
pub use embed::Family;
pub use stream::Events;

use super::codec::{Codec, Connection, Endpoints, Framing, HttpProvider};
use super::http::{
    self, ConfigError, Endpoint, HttpFailure, HttpSettings, Transport, UpstreamResponse,
};
use super::secret::Secret;
use super::sse;
use crate::chat::{ChatRequest, Field, FieldSet, ProviderReply, Support, Usage};
use crate::clock::Clock;
use crate::embedding::{EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;

/// The prefixes of cross-region inference profile ids (`us.anthropic.…`).
const PROFILE_PREFIXES: &[&str] = &[
    "us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca.", "global.",
];

/// How to reach one model on Bedrock.
#[derive(Debug, Clone)]
pub struct BedrockConfig {
    /// The AWS region (`us-east-1`).
    pub region: String,
    /// The model id, inference profile id or ARN.
    pub model: String,
    /// The SigV4 credentials; `None` signs with `profile_file`'s, or nothing.
    pub credentials: Option<AwsCredentials>,
    /// A credentials file's profile to sign with (re-read when the file changes), when
    /// `credentials` is `None`.
    pub profile_file: Option<Arc<profile::ProfileFile>>,
    /// Expiring credentials the platform issues (web identity, container endpoint,
    /// instance metadata), when neither `credentials` nor `profile_file` is set.
    pub platform: Option<Arc<platform::PlatformCredentials>>,
    /// A Bedrock API key, sent as `Authorization: Bearer` instead of a signature.
    pub api_key: Option<Secret>,
    /// The runtime root replacing `https://bedrock-runtime.{region}.amazonaws.com`.
    pub base_url: Option<String>,
    /// The control-plane root (health check) replacing `https://bedrock.{region}.amazonaws.com`.
    pub control_url: Option<String>,
    /// Extra headers sent on every call (signed with it). Applied last.
    pub headers: Vec<(String, String)>,
    /// Connect timeout and body cap (also the cap on one event-stream frame).
    pub http: HttpSettings,
    /// After the finish signal, how long a stream waits for its usage.
    pub usage_grace: Duration,
    /// Wall time for signatures and HTTP-date `Retry-After` values.
    pub clock: Clock,
}

impl BedrockConfig {
    /// Defaults for `model` in `region`, with no credentials yet.
    #[must_use]
    pub fn new(region: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            region: region.into(),
            model: model.into(),
            credentials: None,
            profile_file: None,
            platform: None,
            api_key: None,
            base_url: None,
            control_url: None,
            headers: Vec::new(),
            http: HttpSettings::default(),
            usage_grace: sse::DEFAULT_USAGE_GRACE,
            clock: Clock::system(),
        }
    }

    /// The runtime root.
    #[must_use]
    pub fn runtime_root(&self) -> String {
        match &self.base_url {
            Some(url) => url.clone(),
            None => format!("https://bedrock-runtime.{}.amazonaws.com", self.region),
        }
    }

    /// The control-plane root.
    #[must_use]
    pub fn control_root(&self) -> String {
        match &self.control_url {
            Some(url) => url.clone(),
            None => format!("https://bedrock.{}.amazonaws.com", self.region),
        }
    }

    /// The health check's path: the control plane's description of what `model` names —
    /// an inference profile, a provisioned throughput, an imported or custom model, or
    /// (the rest) a foundation model.
    #[must_use]
    pub fn health_path(&self) -> String {
        let model = &self.model;
        let profile = PROFILE_PREFIXES.iter().any(|p| model.starts_with(p))
            || model.contains(":inference-profile/")
            || model.contains(":application-inference-profile/");
        let what = if profile {
            "inference-profiles"
        } else if model.contains(":provisioned-model/") {
            "provisioned-model-throughput"
        } else if model.contains(":imported-model/") {
            "imported-models"
        } else if model.contains(":custom-model/") {
            "custom-models"
        } else {
            "foundation-models"
        };
        format!("/{what}/{}", segment(model))
    }
}

/// `text` percent-encoded as one URL path segment (everything but RFC 3986's unreserved
/// characters), as the AWS SDKs encode a model id.
fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A model on Bedrock: the shared HTTP provider running [`BedrockCodec`].
pub type Bedrock = HttpProvider<BedrockCodec>;

impl Bedrock {
    /// A provider from `config`, pooled on `transport`.
    ///
    /// # Errors
    /// A missing or malformed region or model id, an unusable URL or header, an empty API
    /// key.
    pub fn new(config: BedrockConfig, transport: &Transport) -> Result<Self, ConfigError> {
        let region = config.region.trim();
        let valid_region = !region.is_empty()
            && region
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_region {
            return Err(ConfigError(format!(
                "region {region:?} is not an AWS region (like \"us-east-1\")"
            )));
        }
        let model = config.model.trim();
        if model.is_empty() || model.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError(format!(
                "model {model:?} is not a Bedrock model id, inference profile or ARN"
            )));
        }
        let root = config.runtime_root();
        let root = root.trim_end_matches('/');
        let model_path = format!("/model/{}", segment(model));
        let endpoints = Endpoints {
            call: Endpoint::at(root, &format!("{model_path}/converse"))?,
            stream: Endpoint::at(root, &format!("{model_path}/converse-stream"))?,
            health: Endpoint::at(
                config.control_root().trim_end_matches('/'),
                &config.health_path(),
            )?,
        };
        let codec = BedrockCodec {
            model: model.to_owned(),
        };
        let region = region.to_owned();
        let signer = match (config.credentials, config.profile_file, config.platform) {
            (Some(credentials), _, _) => Some(sigv4::SigV4::new(credentials, region, config.clock)),
            (None, Some(file), _) => Some(sigv4::SigV4::from_file(file, region, config.clock)),
            (None, None, Some(platform)) => {
                Some(sigv4::SigV4::from_platform(platform, region, config.clock))
            }
            (None, None, None) => None,
        };
        let connection = Connection {
            api_key: config.api_key,
            headers: config.headers,
            http: config.http,
            usage_grace: config.usage_grace,
            clock: config.clock,
        };
        let embeddings = Endpoint::at(root, &format!("{model_path}/invoke"))?;
        let provider =
            Self::assemble(codec, endpoints, connection, transport)?.with_embeddings(embeddings);
        Ok(match signer {
            Some(signer) => provider.with_signer(Arc::new(signer)),
            None => provider,
        })
    }
}

/// Bedrock's Converse API: what goes on the wire and how its answers read.
#[derive(Debug)]
pub struct BedrockCodec {
    model: String,
}

impl Codec for BedrockCodec {
    const KIND: &'static str = "bedrock";
    // Converse has no `n`: several answers are several calls (docs/fields.md)
    const ONE_ANSWER_PER_CALL: bool = true;
    const FRAMING: Framing = Framing::AwsEventStream;
    type Call = ();
    type Events = Events;

    fn support(field: Field) -> Support {
        request::support(field)
    }

    /// Cache breakpoints are ignored on a model that does not cache (`request::caching`).
    fn model_support(&self, field: Field) -> Support {
        request::model_support(field, &self.model)
    }

    /// Breakpoints this caching model cannot take: a tool breakpoint on Nova, a `1h` TTL
    /// before Claude 4.5 (refused, never shortened).
    fn cannot_honour(&self, req: &ChatRequest) -> FieldSet {
        request::cannot_honour(req, &self.model)
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn encode(&self, req: &ChatRequest, _stream: bool) -> Result<(Vec<u8>, ()), ProviderError> {
        let body = request::body(req, &self.model)?;
        Ok((crate::provider::encode_body(&body)?, ()))
    }

    fn parse_reply(&self, body: &[u8], (): ()) -> Result<ProviderReply, ProviderError> {
        reply::parse(body, &self.model)
    }

    fn events(&self, (): ()) -> Events {
        Events::default()
    }

    /// An embeddings family's InvokeModel body (`embed.rs`); a model of none is
    /// `ModelNotFound`, so a route fails over past it.
    fn encode_embeddings(&self, req: &EmbeddingRequest) -> Result<Vec<u8>, ProviderError> {
        let family =
            Family::of(&self.model).ok_or_else(|| embed::not_an_embeddings_model(&self.model))?;
        embed::body(req, family)
    }

    fn parse_embeddings(&self, body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
        let family =
            Family::of(&self.model).ok_or_else(|| embed::not_an_embeddings_model(&self.model))?;
        embed::parse(body, family)
    }

    /// Titan takes one text per call, Cohere 96; a request no call could carry is refused
    /// before any is sent.
    fn embeddings_batches(
        &self,
        req: &EmbeddingRequest,
    ) -> Result<Vec<std::ops::Range<usize>>, ProviderError> {
        let family =
            Family::of(&self.model).ok_or_else(|| embed::not_an_embeddings_model(&self.model))?;
        embed::batches(req, family)
    }

    /// InvokeModel's `X-Amzn-Bedrock-Input-Token-Count` (Cohere's body has no count).
    fn embeddings_usage(&self, response: &UpstreamResponse) -> Option<Usage> {
        embed::header_usage(response.header("x-amzn-bedrock-input-token-count"))
    }

    fn classify(failure: &HttpFailure, now: SystemTime) -> ProviderError {
        classify::classify(failure, now)
    }

    /// A Bedrock API key, as `Authorization: Bearer`.
    fn authenticate(&self, key: &Secret, headers: &mut HeaderMap) -> Result<(), ConfigError> {
        http::insert_secret_header(headers, "authorization", "Bearer ", key)
    }
}

#[cfg(test)]
mod tests;
