//! Gemini's `models/{model}:batchEmbedContents`: the body ([`body`]) and the reply
//! ([`parse`]).
//!
//! Each input is one `EmbedContentRequest` naming the model (Google requires it to match the
//! URL's) with its text as the only part; `dimensions` is each request's
//! `outputDimensionality`. Token-id inputs have no Gemini form (`BadRequest`). The reply's
//! `embeddings[i].values` answer the requests in order. The API reports no token usage
//! for embeddings, so a Gemini answer's cost is unknown (a budget keeps the reservation).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::classify::classify_value;
use super::{bad_request, malformed};
use crate::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;
use crate::provider::http::snippet;

#[derive(Serialize)]
struct Body<'a> {
    requests: Vec<One<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct One<'a> {
    model: &'a str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimensionality: Option<u32>,
}

#[derive(Serialize)]
struct Content<'a> {
    parts: [Part<'a>; 1],
}

#[derive(Serialize)]
struct Part<'a> {
    text: &'a str,
}

#[derive(Deserialize)]
struct Reply {
    embeddings: Option<Vec<Embedding>>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Embedding {
    values: Vec<f32>,
}

/// The JSON body of a `batchEmbedContents` call for `req`; `resource` is the model's
/// resource name (`models/gemini-embedding-001`).
///
/// # Errors
/// `BadRequest` for token-id inputs.
pub fn body(req: &EmbeddingRequest, resource: &str) -> Result<Vec<u8>, ProviderError> {
    let requests = req
        .inputs
        .iter()
        .map(|input| match input {
            EmbeddingInput::Text(text) => Ok(One {
                model: resource,
                content: Content {
                    parts: [Part { text }],
                },
                output_dimensionality: req.dimensions,
            }),
            EmbeddingInput::Tokens(_) => Err(bad_request(
                "gemini embeds text only; token-id inputs cannot be sent to it",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    crate::provider::encode_body(&Body { requests })
}

/// Parse a 200 body: one vector per request, in order. A body without `embeddings` is
/// `Malformed`; an error object is classified.
///
/// # Errors
/// As above.
pub fn parse(body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
    let reply: Reply = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "expected batchEmbedContents embeddings, got {e}: {}",
            snippet(body)
        ))
    })?;
    if reply.error.is_some() {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let embeddings = reply
        .embeddings
        .ok_or_else(|| malformed("batchEmbedContents reply without `embeddings`"))?;
    Ok(EmbeddingReply {
        vectors: embeddings.into_iter().map(|e| e.values).collect(),
        model: None,
        usage: None,
    })
}
