//! Bedrock's text embeddings models through InvokeModel
//! (`POST /model/{modelId}/invoke`, JSON in and out): the model family a model id names
//! ([`Family::of`]), the body of one call ([`body`]) and its answer ([`parse`]).
//!
//! Each family has its own body, as AWS documents it for InvokeModel:
//! - Amazon Titan Text Embeddings V2 (`amazon.titan-embed-text-v2:0`): one text per call,
//!   `{"inputText", "dimensions"}` with `dimensions` 256, 512 or 1024; `normalize` is left
//!   at its default (`true`: unit vectors, as OpenAI's are). Answer: `embedding` and
//!   `inputTextTokenCount`.
//! - Amazon Titan Embeddings G1 - Text (`amazon.titan-embed-text-v1`): `{"inputText"}`
//!   only (1,536 dimensions); the same answer.
//! - Cohere Embed v3 (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`): up to 96
//!   `texts` per call and the required `input_type`, sent as `search_document` (OpenAI's
//!   request has no such field; documents are what an embeddings API mostly embeds);
//!   1,024 dimensions. Answer: `embeddings`, one float vector per text, and no token count
//!   in the body (Bedrock's `X-Amzn-Bedrock-Input-Token-Count` header carries it, read in
//!   `mod.rs`).
//! - Cohere Embed v4 (`cohere.embed-v4:0`): as v3, with `embedding_types: ["float"]` and
//!   `output_dimension` (256, 512, 1024 or 1536); answered `embeddings.float`.
//!
//! A request's `dimensions` that the model cannot give, and token-id inputs (no Bedrock
//! model takes them), are refused before anything is sent (`BadRequest`). `user` has no
//! Bedrock form and is not sent. Splitting a request into calls of at most
//! [`Family::per_call`] inputs is the shared provider's (`Codec::embeddings_batches`, from [`batches`]).

use serde::{Deserialize, Serialize};
use std::ops::Range;

use crate::chat::Usage;
use crate::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::http::snippet;

/// The Cohere `input_type` sent with every text (see the module doc).
const COHERE_INPUT_TYPE: &str = "search_document";

/// The most texts one Cohere Embed call takes (AWS's limit for v3 and v4).
const COHERE_TEXTS_PER_CALL: usize = 96;

/// A Bedrock embeddings model family: which body its InvokeModel call takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Amazon Titan Text Embeddings V2.
    TitanV2,
    /// Amazon Titan Embeddings G1 - Text.
    TitanV1,
    /// Cohere Embed English v3 or Multilingual v3.
    CohereV3,
    /// Cohere Embed v4.
    CohereV4,
}

impl Family {
    /// The family `model` (a model id or an inference profile id such as
    /// `us.cohere.embed-v4:0`) names; `None` for a model that is none of them (a chat model,
    /// or an ARN, which does not say what it points at).
    #[must_use]
    pub fn of(model: &str) -> Option<Self> {
        let has = |id: &str| model.contains(id);
        if has("amazon.titan-embed-text-v2") {
            Some(Self::TitanV2)
        } else if has("amazon.titan-embed-text-v1") || has("amazon.titan-embed-g1-text") {
            Some(Self::TitanV1)
        } else if has("cohere.embed-english-v3") || has("cohere.embed-multilingual-v3") {
            Some(Self::CohereV3)
        } else if has("cohere.embed-v4") {
            Some(Self::CohereV4)
        } else {
            None
        }
    }

    /// The most inputs one call takes: Titan embeds one text per call, Cohere 96.
    #[must_use]
    pub fn per_call(self) -> usize {
        match self {
            Self::TitanV2 | Self::TitanV1 => 1,
            Self::CohereV3 | Self::CohereV4 => COHERE_TEXTS_PER_CALL,
        }
    }

    /// The model's name in errors.
    fn name(self) -> &'static str {
        match self {
            Self::TitanV2 => "Titan Text Embeddings V2",
            Self::TitanV1 => "Titan Embeddings G1 - Text",
            Self::CohereV3 => "Cohere Embed v3",
            Self::CohereV4 => "Cohere Embed v4",
        }
    }

    /// The output sizes the model offers; the first is its default.
    fn dimensions(self) -> &'static [u32] {
        match self {
            Self::TitanV2 => &[1024, 512, 256],
            Self::TitanV1 => &[1536],
            Self::CohereV3 => &[1024],
            Self::CohereV4 => &[1536, 1024, 512, 256],
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TitanBody<'a> {
    input_text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
}

#[derive(Serialize)]
struct CohereBody<'a> {
    texts: Vec<&'a str>,
    input_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    embedding_types: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimension: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TitanReply {
    embedding: Option<Vec<f32>>,
    input_text_token_count: Option<u64>,
}

#[derive(Deserialize)]
struct CohereReply {
    embeddings: Option<CohereEmbeddings>,
}

/// `embeddings_floats` (v3 without `embedding_types`) or `embeddings_by_type`.
#[derive(Deserialize)]
#[serde(untagged)]
enum CohereEmbeddings {
    Floats(Vec<Vec<f32>>),
    ByType { float: Vec<Vec<f32>> },
}

/// `req`'s inputs in calls of at most `family`'s [`Family::per_call`], once the request is
/// one InvokeModel can carry (text inputs, `dimensions` the model offers).
///
/// # Errors
/// `BadRequest` as [`body`]'s, before any call.
pub fn batches(req: &EmbeddingRequest, family: Family) -> Result<Vec<Range<usize>>, ProviderError> {
    texts(req)?;
    dimensions(req.dimensions, family)?;
    let (n, per) = (req.inputs.len(), family.per_call().max(1));
    Ok((0..n)
        .step_by(per)
        .map(|start| start..n.min(start + per))
        .collect())
}

/// `req`'s inputs as texts.
fn texts(req: &EmbeddingRequest) -> Result<Vec<&str>, ProviderError> {
    (req.inputs.iter())
        .map(|input| match input {
            EmbeddingInput::Text(text) => Ok(text.as_str()),
            EmbeddingInput::Tokens(_) => Err(bad_request(
                "input: bedrock embeds text only; token-id inputs cannot be sent to it",
            )),
        })
        .collect()
}

/// The JSON body of one InvokeModel call embedding `req`'s inputs with a `family` model.
///
/// # Errors
/// `BadRequest` for token-id inputs, `dimensions` the model does not offer, or more inputs
/// than one call takes (the shared provider splits a request before this).
pub fn body(req: &EmbeddingRequest, family: Family) -> Result<Vec<u8>, ProviderError> {
    let texts = texts(req)?;
    if texts.len() > family.per_call() {
        return Err(bad_request(format!(
            "input: {} takes at most {} per call, got {}",
            family.name(),
            family.per_call(),
            texts.len()
        )));
    }
    let dimensions = dimensions(req.dimensions, family)?;
    match family {
        Family::TitanV2 | Family::TitanV1 => crate::provider::encode_body(&TitanBody {
            input_text: texts.first().copied().unwrap_or_default(),
            dimensions: dimensions.filter(|_| family == Family::TitanV2),
        }),
        Family::CohereV3 => crate::provider::encode_body(&CohereBody {
            texts,
            input_type: COHERE_INPUT_TYPE,
            embedding_types: None,
            output_dimension: None,
        }),
        Family::CohereV4 => crate::provider::encode_body(&CohereBody {
            texts,
            input_type: COHERE_INPUT_TYPE,
            embedding_types: Some(["float"]),
            output_dimension: dimensions,
        }),
    }
}

/// `asked` checked against what `family` offers: `None` when not asked; a fixed-size
/// model's own size is accepted (and not sent).
fn dimensions(asked: Option<u32>, family: Family) -> Result<Option<u32>, ProviderError> {
    let Some(n) = asked else { return Ok(None) };
    let offered = family.dimensions();
    if !offered.contains(&n) {
        let list: Vec<String> = offered.iter().map(u32::to_string).collect();
        return Err(bad_request(format!(
            "dimensions: {} gives {} dimensions, not {n}",
            family.name(),
            list.join(", ")
        )));
    }
    Ok(Some(n))
}

/// Parse a 200 body of a `family` model: Titan's one `embedding` with its
/// `inputTextTokenCount`, or Cohere's `embeddings` (usage `None`: Cohere's body has no
/// count). A body without them is `Malformed`.
///
/// # Errors
/// As above.
pub fn parse(body: &[u8], family: Family) -> Result<EmbeddingReply, ProviderError> {
    let unexpected = |e: &dyn std::fmt::Display| {
        malformed(format!(
            "expected a {} answer, got {e}: {}",
            family.name(),
            snippet(body)
        ))
    };
    match family {
        Family::TitanV2 | Family::TitanV1 => {
            let reply: TitanReply = serde_json::from_slice(body).map_err(|e| unexpected(&e))?;
            let vector = reply
                .embedding
                .ok_or_else(|| unexpected(&"no `embedding`"))?;
            Ok(EmbeddingReply {
                vectors: vec![vector],
                model: None,
                usage: reply.input_text_token_count.map(input_usage),
            })
        }
        Family::CohereV3 | Family::CohereV4 => {
            let reply: CohereReply = serde_json::from_slice(body).map_err(|e| unexpected(&e))?;
            let vectors = match reply.embeddings {
                Some(CohereEmbeddings::Floats(v) | CohereEmbeddings::ByType { float: v }) => v,
                None => return Err(unexpected(&"no `embeddings`")),
            };
            Ok(EmbeddingReply {
                vectors,
                model: None,
                usage: None,
            })
        }
    }
}

/// Bedrock's `X-Amzn-Bedrock-Input-Token-Count` header value as usage.
#[must_use]
pub fn header_usage(value: Option<&str>) -> Option<Usage> {
    value?.trim().parse().ok().map(input_usage)
}

fn input_usage(tokens: u64) -> Usage {
    Usage {
        input_tokens: tokens,
        ..Usage::default()
    }
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}

fn malformed(message: String) -> ProviderError {
    ProviderError::new(ErrorKind::Malformed, message).with_status(200)
}

/// The model's error when it is no embeddings family this codec knows.
pub(super) fn not_an_embeddings_model(model: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::ModelNotFound,
        format!(
            "bedrock model {model:?} is not an embeddings model served here (Titan Text \
             Embeddings V2, Titan Embeddings G1 - Text, Cohere Embed v3 and v4, named by \
             model id or inference profile id)"
        ),
    )
}
