//! Azure OpenAI's Responses API: the OpenAI Responses codec
//! ([`crate::provider::openai::responses`]) with Azure's URLs, auth, retry header and
//! content-filter rule, for an Azure provider configured with `api = "responses"`.
//!
//! Bodies, replies, stream events and native passthrough are the Responses codec's: a
//! `/v1/responses` request goes to this provider as the client wrote it (built-in tools
//! included), with the deployment as its `model`. Paths (see the module above): v1
//! `{endpoint}/openai/v1/responses`, classic `{endpoint}/openai/responses?api-version=…`.

use super::{build, AzureConfig, OnAzure, Upstream};
use crate::provider::codec::HttpProvider;
use crate::provider::http::{ConfigError, Transport};
use crate::provider::openai::responses::ResponsesCodec;

/// An Azure OpenAI deployment spoken to through the Responses API.
pub type AzureResponses = HttpProvider<AzureResponsesCodec>;

impl AzureResponses {
    /// A provider from `config` (its `use_max_tokens` does not apply: the Responses API
    /// has one name, `max_output_tokens`), pooled on `transport`.
    ///
    /// # Errors
    /// An unusable endpoint, deployment name, api version, header or credential.
    pub fn new(config: AzureConfig, transport: &Transport) -> Result<Self, ConfigError> {
        build(
            config,
            Upstream::Responses,
            transport,
            |deployment, _, header| OnAzure {
                inner: ResponsesCodec::new(deployment, header),
            },
        )
    }
}

/// The Responses API the Azure way.
pub type AzureResponsesCodec = OnAzure<ResponsesCodec>;
