//! OpenAI's Embeddings API (`POST {base}/embeddings`): the body ([`body`]) and the reply
//! ([`parse`]). Vectors are always asked for as floats (`encoding_format: "float"`): a
//! client that wants base64 gets it from the gateway's own encoding, whoever answered.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::classify::classify_value;
use super::reply::malformed;
use crate::chat::Usage;
use crate::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use crate::error::ProviderError;
use crate::provider::http::snippet;

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    input: &'a [EmbeddingInput],
    encoding_format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
}

#[derive(Deserialize)]
struct Reply {
    data: Option<Vec<Item>>,
    model: Option<String>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Item {
    /// Absent from some compatible servers' replies: then the list's order is the index.
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
}

/// The JSON body of an embeddings call for `req` to `model`.
///
/// # Errors
/// `BadRequest` when the body cannot be encoded.
pub fn body(req: &EmbeddingRequest, model: &str) -> Result<Vec<u8>, ProviderError> {
    crate::provider::encode_body(&Body {
        model,
        input: &req.inputs,
        encoding_format: "float",
        dimensions: req.dimensions,
        user: req.user.as_deref(),
    })
}

/// Parse a 200 body: the vectors in `index` order (list order when a server sends no
/// indices). A body that is not an embeddings list, or whose indices are not `0..n` each
/// once, is `Malformed`; an error object is classified.
///
/// # Errors
/// As above.
pub fn parse(body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
    let reply: Reply = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "expected an embeddings list, got {e}: {}",
            snippet(body)
        ))
    })?;
    if reply.error.is_some() {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let mut items = reply
        .data
        .ok_or_else(|| malformed("embeddings list without `data`"))?;
    if items.iter().all(|i| i.index.is_none()) {
        for (k, item) in items.iter_mut().enumerate() {
            item.index = Some(k);
        }
    }
    items.sort_by_key(|i| i.index);
    if items.iter().enumerate().any(|(k, i)| i.index != Some(k)) {
        return Err(malformed(
            "embeddings list whose indices are not 0..n, each once",
        ));
    }
    Ok(EmbeddingReply {
        vectors: items.into_iter().map(|i| i.embedding).collect(),
        model: reply.model,
        usage: reply.usage.map(|u| Usage {
            input_tokens: u.prompt_tokens,
            ..Usage::default()
        }),
    })
}
