//! Vertex AI's text embeddings: `…/publishers/google/models/{model}:predict`, one call's
//! body ([`body`]) and reply ([`parse`]), how many inputs one call may carry ([`Limits`]),
//! and the split of a request into calls within them (`Codec::embeddings_batches`, run by
//! the shared HTTP provider).
//!
//! The body is the Text Embeddings API's: each input is an instance `{"content": text}`;
//! `dimensions` is `parameters.outputDimensionality`. No `task_type` is sent (OpenAI's
//! request has no such field; Google's default applies), nor `autoTruncate` (Google's
//! default, on: an input past the model's 2,048 tokens is cut, not refused). Token-id
//! inputs have no Vertex form (`BadRequest`, before any call).
//!
//! The reply's `predictions[i].embeddings.values` answer the instances in order; each
//! prediction's `embeddings.statistics.token_count` is its input's tokens, summed as the
//! call's input tokens (so a Vertex answer's cost is known, unlike the Gemini API's).
//!
//! Limits, per Google's Text Embeddings API documentation: `gemini-embedding-001` takes one
//! instance per request; the other text embedding models (`text-embedding-005`,
//! `text-multilingual-embedding-002`) up to 250 instances and 20,000 input tokens per
//! request (a 400 past either). A request is split into consecutive calls within both: the
//! token cap is kept by text bytes (a token is never shorter than a byte, the bound
//! budgets use), an input longer than that going alone (Google cuts it to the model's
//! 2,048 tokens). At most `codec::EMBEDDING_CALLS_AT_ONCE` of one request's calls are in
//! flight; the vectors are joined in input order; the first failure fails the request (its
//! other calls are dropped).

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat::Usage;
use crate::embedding::{EmbeddingInput, EmbeddingReply, EmbeddingRequest};
use crate::error::{ErrorKind, ProviderError};
use crate::provider::gemini::classify_value;
use crate::provider::http::snippet;

/// Whether `model` names one of Google's text embedding models on Vertex AI
/// (`gemini-embedding-*`, `text-embedding-*`, `text-multilingual-embedding-*`,
/// `textembedding-gecko*`): what a config that names no API serves by default.
#[must_use]
pub fn is_embeddings_model(model: &str) -> bool {
    [
        "gemini-embedding-",
        "text-embedding-",
        "text-multilingual-embedding-",
        "textembedding-gecko",
    ]
    .iter()
    .any(|prefix| model.starts_with(prefix))
}

/// What one `:predict` call of a model may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Instances (inputs) per call.
    pub instances: usize,
    /// Input tokens per call, kept by text bytes; `usize::MAX`: no cap beyond one input's.
    pub tokens: usize,
}

impl Limits {
    /// The documented limits of `model`: one instance for the Gemini embedding models
    /// (`gemini-embedding-001`), else 250 instances and 20,000 tokens.
    #[must_use]
    pub fn of(model: &str) -> Self {
        if model.starts_with("gemini-") {
            Self {
                instances: 1,
                tokens: usize::MAX,
            }
        } else {
            Self {
                instances: 250,
                tokens: 20_000,
            }
        }
    }

    /// `req`'s inputs as consecutive ranges, each within both limits (an input over the
    /// token cap alone). Empty for no inputs.
    #[must_use]
    pub fn batches(&self, req: &EmbeddingRequest) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let (mut start, mut bytes) = (0, 0usize);
        for (i, input) in req.inputs.iter().enumerate() {
            let len = usize::try_from(input.token_bound()).unwrap_or(usize::MAX);
            let full = i - start == self.instances || bytes.saturating_add(len) > self.tokens;
            if i > start && full {
                out.push(start..i);
                (start, bytes) = (i, 0);
            }
            bytes = bytes.saturating_add(len);
        }
        if start < req.inputs.len() {
            out.push(start..req.inputs.len());
        }
        out
    }
}

#[derive(Serialize)]
struct Body<'a> {
    instances: Vec<Instance<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Parameters>,
}

#[derive(Serialize)]
struct Instance<'a> {
    content: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Parameters {
    output_dimensionality: u32,
}

#[derive(Deserialize)]
struct Reply {
    predictions: Option<Vec<Prediction>>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Prediction {
    embeddings: Embeddings,
}

#[derive(Deserialize)]
struct Embeddings {
    values: Vec<f32>,
    statistics: Option<Statistics>,
}

#[derive(Deserialize)]
struct Statistics {
    /// A JSON number (protobuf's `Value` writes every number as a double).
    token_count: Option<f64>,
}

/// `BadRequest` when `req` has a token-id input (Vertex embeds text only).
///
/// # Errors
/// As above.
pub fn refuse_tokens(req: &EmbeddingRequest) -> Result<(), ProviderError> {
    if req
        .inputs
        .iter()
        .any(|i| matches!(i, EmbeddingInput::Tokens(_)))
    {
        return Err(ProviderError::new(
            ErrorKind::BadRequest,
            "vertex embeds text only; token-id inputs cannot be sent to it",
        ));
    }
    Ok(())
}

/// The JSON body of one `:predict` call for `req`.
///
/// # Errors
/// `BadRequest` for token-id inputs, or more inputs than `limits` lets one call carry
/// (the shared provider splits a request by [`Limits::batches`] first).
pub fn body(req: &EmbeddingRequest, limits: Limits) -> Result<Vec<u8>, ProviderError> {
    refuse_tokens(req)?;
    if req.inputs.len() > limits.instances {
        return Err(ProviderError::new(
            ErrorKind::BadRequest,
            format!(
                "{} inputs in one Vertex AI embeddings call; this model takes at most {}",
                req.inputs.len(),
                limits.instances
            ),
        ));
    }
    let instances = (req.inputs.iter())
        .filter_map(|input| match input {
            EmbeddingInput::Text(content) => Some(Instance { content }),
            EmbeddingInput::Tokens(_) => None,
        })
        .collect();
    let parameters = req.dimensions.map(|n| Parameters {
        output_dimensionality: n,
    });
    crate::provider::encode_body(&Body {
        instances,
        parameters,
    })
}

/// Parse a 200 body: one vector per instance, in order, with the summed `token_count` as
/// input tokens (`None` when a prediction reports none). A body without `predictions` is
/// `Malformed`; an error object is classified by Google's rules.
///
/// # Errors
/// As above.
pub fn parse(body: &[u8]) -> Result<EmbeddingReply, ProviderError> {
    let malformed = |m: String| ProviderError::new(ErrorKind::Malformed, m);
    let reply: Reply = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "expected :predict embeddings, got {e}: {}",
            snippet(body)
        ))
    })?;
    if reply.error.is_some() {
        return Err(classify_value(
            &serde_json::from_slice(body).unwrap_or(Value::Null),
        ));
    }
    let predictions = reply
        .predictions
        .ok_or_else(|| malformed(":predict reply without `predictions`".to_owned()))?;
    let mut tokens = Some(0u64);
    let mut vectors = Vec::with_capacity(predictions.len());
    for p in predictions {
        let count = (p.embeddings.statistics)
            .and_then(|s| s.token_count)
            .filter(|n| n.is_finite() && *n >= 0.0);
        // a count is a whole number well inside u64; `as` saturates
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let count = count.map(|n| n as u64);
        tokens = tokens.zip(count).map(|(a, b)| a.saturating_add(b));
        vectors.push(p.embeddings.values);
    }
    Ok(EmbeddingReply {
        vectors,
        model: None,
        usage: tokens.map(|input_tokens| Usage {
            input_tokens,
            ..Usage::default()
        }),
    })
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    fn texts(lens: &[usize]) -> EmbeddingRequest {
        EmbeddingRequest {
            inputs: lens
                .iter()
                .map(|n| EmbeddingInput::Text("x".repeat(*n)))
                .collect(),
            ..EmbeddingRequest::default()
        }
    }

    fn json_of(body: &[u8]) -> Value {
        serde_json::from_slice(body).unwrap()
    }

    #[test]
    fn the_body_is_instances_of_content_and_the_dimensions_parameter() {
        let req = EmbeddingRequest {
            user: Some("u-1".into()),
            ..EmbeddingRequest::texts(&["first text", "second"]).dimensions(256)
        };
        let body = body(&req, Limits::of("text-embedding-005")).unwrap();
        assert_eq!(
            json_of(&body),
            json!({
                "instances": [{"content": "first text"}, {"content": "second"}],
                "parameters": {"outputDimensionality": 256},
            })
        );
        let plain = body_of(&EmbeddingRequest::texts(&["one"]), "gemini-embedding-001");
        assert_eq!(plain, json!({"instances": [{"content": "one"}]}));
    }

    fn body_of(req: &EmbeddingRequest, model: &str) -> Value {
        json_of(&body(req, Limits::of(model)).unwrap())
    }

    #[test]
    fn token_inputs_and_calls_over_the_limit_are_refused() {
        let tokens = EmbeddingRequest {
            inputs: vec![EmbeddingInput::Tokens(vec![1, 2])],
            ..EmbeddingRequest::default()
        };
        let err = body(&tokens, Limits::of("text-embedding-005")).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.contains("token-id inputs"), "{err}");
        let two = EmbeddingRequest::texts(&["a", "b"]);
        let err = body(&two, Limits::of("gemini-embedding-001")).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.contains("at most 1"), "{err}");
        let many = texts(&[1; 251]);
        let err = body(&many, Limits::of("text-multilingual-embedding-002")).unwrap_err();
        assert!(err.message.contains("251 inputs"), "{err}");
        assert!(body(&texts(&[1; 250]), Limits::of("text-embedding-005")).is_ok());
    }

    #[test]
    fn google_s_embedding_models_are_known_by_name() {
        for m in [
            "gemini-embedding-001",
            "text-embedding-005",
            "text-multilingual-embedding-002",
            "textembedding-gecko@003",
        ] {
            assert!(is_embeddings_model(m), "{m}");
        }
        for m in [
            "gemini-2.5-flash",
            "claude-sonnet-4@20250514",
            "multimodalembedding@001",
        ] {
            assert!(!is_embeddings_model(m), "{m}");
        }
    }

    #[test]
    fn requests_split_by_instances_and_by_the_token_cap() {
        let one = Limits::of("gemini-embedding-001");
        assert_eq!(one.batches(&texts(&[5, 5, 5])), [0..1, 1..2, 2..3]);
        let many = Limits::of("text-embedding-005");
        assert_eq!(
            many,
            Limits {
                instances: 250,
                tokens: 20_000
            }
        );
        assert_eq!(
            many.batches(&texts(&[1; 600])),
            [0..250, 250..500, 500..600]
        );
        // bytes bound tokens: 20,000 fit, one more byte opens a new call
        assert_eq!(many.batches(&texts(&[10_000, 10_000, 1])), [0..2, 2..3]);
        // an input over the cap goes alone (Google cuts it to 2,048 tokens)
        assert_eq!(many.batches(&texts(&[5, 30_000, 5, 5])), [0..1, 1..2, 2..4]);
        assert!(many.batches(&texts(&[])).is_empty());
    }

    #[test]
    fn a_reply_is_its_vectors_in_order_with_the_token_counts_summed() {
        let body = json!({
            "predictions": [
                {"embeddings": {"statistics": {"truncated": false, "token_count": 6}, "values": [0.25, -0.5]}},
                {"embeddings": {"statistics": {"truncated": true, "token_count": 2048.0}, "values": [1.0, 0.0]}},
            ],
            "metadata": {"billableCharacterCount": 40},
        });
        let reply = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(reply.vectors, [vec![0.25, -0.5], vec![1.0, 0.0]]);
        let usage = reply.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (2054, 0));
        let uncounted = json!({"predictions": [{"embeddings": {"values": [1.0]}}]});
        let reply = parse(uncounted.to_string().as_bytes()).unwrap();
        assert_eq!(reply.usage, None, "no statistics: usage unknown");
    }

    #[test]
    fn replies_that_are_not_predictions_are_malformed_or_classified() {
        for (body, kind) in [
            (json!({"deployedModelId": "1"}), ErrorKind::Malformed),
            (
                json!({"predictions": [{"values": [1.0]}]}),
                ErrorKind::Malformed,
            ),
            (json!([1, 2]), ErrorKind::Malformed),
            (
                json!({"error": {"code": 429, "message": "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model", "status": "RESOURCE_EXHAUSTED"}}),
                ErrorKind::RateLimited,
            ),
            (
                json!({"error": {"code": 400, "message": "Unable to submit request because the input token count is 20483 but the model supports up to 20000.", "status": "INVALID_ARGUMENT"}}),
                ErrorKind::ContextLength,
            ),
        ] {
            let err = parse(body.to_string().as_bytes()).unwrap_err();
            assert_eq!(err.kind, kind, "{body}: {err}");
        }
        let err = parse(b"<html>oops</html>").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed);
    }
}
