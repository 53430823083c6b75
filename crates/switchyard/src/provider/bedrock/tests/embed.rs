//! Embeddings through InvokeModel: each family's exact body, its answer, what is refused
//! before sending, and how a model id names its family.

use serde_json::{json, Value};

use super::super::embed::{body, header_usage, parse, Family};
use super::super::BedrockCodec;
use crate::embedding::{EmbeddingInput, EmbeddingRequest};
use crate::error::ErrorKind;
use crate::provider::codec::Codec;

fn sent(req: &EmbeddingRequest, family: Family) -> Value {
    serde_json::from_slice(&body(req, family).unwrap()).unwrap()
}

fn codec(model: &str) -> BedrockCodec {
    BedrockCodec {
        model: model.into(),
    }
}

#[test]
fn model_ids_and_inference_profiles_name_their_family() {
    for (model, family) in [
        ("amazon.titan-embed-text-v2:0", Some(Family::TitanV2)),
        ("amazon.titan-embed-text-v1", Some(Family::TitanV1)),
        ("amazon.titan-embed-g1-text-02", Some(Family::TitanV1)),
        ("cohere.embed-english-v3", Some(Family::CohereV3)),
        ("cohere.embed-multilingual-v3", Some(Family::CohereV3)),
        ("cohere.embed-v4:0", Some(Family::CohereV4)),
        ("us.cohere.embed-v4:0", Some(Family::CohereV4)),
        ("amazon.titan-embed-image-v1", None),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", None),
    ] {
        assert_eq!(Family::of(model), family, "{model}");
    }
    let texts = |n: usize| EmbeddingRequest::texts(&vec!["a"; n]);
    assert_eq!(
        codec("amazon.titan-embed-text-v2:0")
            .embeddings_batches(&texts(3))
            .unwrap(),
        [0..1, 1..2, 2..3]
    );
    assert_eq!(
        codec("cohere.embed-english-v3")
            .embeddings_batches(&texts(200))
            .unwrap(),
        [0..96, 96..192, 192..200]
    );
    // refused whole, before any call: a token-id input among texts, an odd dimension
    let mut mixed = texts(3);
    mixed.inputs.push(EmbeddingInput::Tokens(vec![1]));
    let err = (codec("amazon.titan-embed-text-v2:0").embeddings_batches(&mixed)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    let odd = EmbeddingRequest {
        dimensions: Some(300),
        ..texts(3)
    };
    let err = (codec("amazon.titan-embed-text-v2:0").embeddings_batches(&odd)).unwrap_err();
    assert!(err.message.contains("dimensions"), "{err}");
}

#[test]
fn titan_v2_sends_one_input_text_with_its_dimensions() {
    let req = EmbeddingRequest::texts(&["hello there"]).dimensions(256);
    assert_eq!(
        sent(&req, Family::TitanV2),
        json!({"inputText": "hello there", "dimensions": 256})
    );
    let plain = EmbeddingRequest {
        user: Some("u-1".into()),
        ..EmbeddingRequest::texts(&["hi"])
    };
    assert_eq!(sent(&plain, Family::TitanV2), json!({"inputText": "hi"}));
}

#[test]
fn titan_v1_sends_only_the_input_text() {
    let req = EmbeddingRequest::texts(&["hi"]).dimensions(1536);
    assert_eq!(sent(&req, Family::TitanV1), json!({"inputText": "hi"}));
}

#[test]
fn cohere_sends_texts_as_documents() {
    let req = EmbeddingRequest::texts(&["a", "b"]);
    assert_eq!(
        sent(&req, Family::CohereV3),
        json!({"texts": ["a", "b"], "input_type": "search_document"})
    );
    assert_eq!(
        sent(&req.clone().dimensions(512), Family::CohereV4),
        json!({"texts": ["a", "b"], "input_type": "search_document",
               "embedding_types": ["float"], "output_dimension": 512})
    );
}

#[test]
fn dimensions_a_model_does_not_offer_are_refused_by_name() {
    for (family, n) in [
        (Family::TitanV2, 300),
        (Family::TitanV2, 1536),
        (Family::TitanV1, 1024),
        (Family::CohereV3, 512),
        (Family::CohereV4, 2048),
    ] {
        let err = body(&EmbeddingRequest::texts(&["x"]).dimensions(n), family).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.starts_with("dimensions:"), "{err}");
        assert!(err.message.contains(&n.to_string()), "{err}");
    }
    let err = body(
        &EmbeddingRequest::texts(&["x"]).dimensions(300),
        Family::TitanV2,
    )
    .unwrap_err();
    assert!(err.message.contains("1024, 512, 256"), "{err}");
}

#[test]
fn token_inputs_and_oversized_calls_are_refused() {
    let tokens = EmbeddingRequest {
        inputs: vec![EmbeddingInput::Tokens(vec![1, 2])],
        ..EmbeddingRequest::default()
    };
    for family in [Family::TitanV2, Family::CohereV3] {
        let err = body(&tokens, family).unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(err.message.starts_with("input:"), "{err}");
        assert!(err.message.contains("token-id"), "{err}");
    }
    let err = body(&EmbeddingRequest::texts(&["a", "b"]), Family::TitanV2).unwrap_err();
    assert!(err.message.contains("at most 1 per call"), "{err}");
    let many: Vec<String> = (0..97).map(|i| i.to_string()).collect();
    let err = body(&EmbeddingRequest::texts(&many), Family::CohereV4).unwrap_err();
    assert!(err.message.contains("at most 96 per call"), "{err}");
}

#[test]
fn titan_answers_read_the_vector_and_the_token_count() {
    let reply = parse(
        br#"{"embedding": [0.5, -0.25], "inputTextTokenCount": 7,
             "embeddingsByType": {"float": [0.5, -0.25]}}"#,
        Family::TitanV2,
    )
    .unwrap();
    assert_eq!(reply.vectors, [vec![0.5, -0.25]]);
    assert_eq!(reply.usage.unwrap().input_tokens, 7);
    let v1 = parse(br#"{"embedding": [1.0]}"#, Family::TitanV1).unwrap();
    assert_eq!((v1.vectors, v1.usage), (vec![vec![1.0]], None));
}

#[test]
fn cohere_answers_read_floats_and_floats_by_type() {
    let v3 = parse(
        br#"{"id": "x", "response_type": "embeddings_floats", "texts": ["a", "b"],
             "embeddings": [[1.0, 2.0], [3.0, 4.0]]}"#,
        Family::CohereV3,
    )
    .unwrap();
    assert_eq!(v3.vectors, [vec![1.0, 2.0], vec![3.0, 4.0]]);
    assert_eq!(v3.usage, None, "Cohere's body carries no token count");
    let v4 = parse(
        br#"{"id": "x", "response_type": "embeddings_by_type",
             "embeddings": {"float": [[0.25]]}}"#,
        Family::CohereV4,
    )
    .unwrap();
    assert_eq!(v4.vectors, [vec![0.25]]);
}

#[test]
fn answers_without_vectors_are_malformed() {
    for (body, family) in [
        (&br#"{"inputTextTokenCount": 3}"#[..], Family::TitanV2),
        (br#"{"message": "oops"}"#, Family::CohereV3),
        (br#"{"embeddings": {"int8": [[1]]}}"#, Family::CohereV4),
        (b"not json", Family::TitanV1),
    ] {
        let err = parse(body, family).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
    }
}

#[test]
fn the_token_count_header_is_usage() {
    assert_eq!(header_usage(Some(" 12 ")).unwrap().input_tokens, 12);
    assert_eq!(header_usage(Some("many")), None);
    assert_eq!(header_usage(None), None);
}

#[test]
fn a_chat_model_serves_no_embeddings() {
    let err = codec("anthropic.claude-3-5-haiku-20241022-v1:0")
        .encode_embeddings(&EmbeddingRequest::texts(&["x"]))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ModelNotFound);
    assert!(err.message.contains("not an embeddings model"), "{err}");
}

#[test]
fn the_shipped_prices_know_the_embeddings_models_with_a_published_rate() {
    let table = crate::cost::PriceTable::builtin();
    for (id, input) in [
        ("amazon.titan-embed-text-v1", 100_000),
        ("cohere.embed-v4:0", 120_000),
        ("global.cohere.embed-v4:0", 120_000),
    ] {
        let e = table.lookup(id).unwrap();
        assert_eq!(e.vendor, "bedrock", "{id}");
        assert!(e.embeddings, "{id} serves embeddings by default");
        assert_eq!(e.price.input_micros_per_mtok, input, "{id}");
        assert_eq!(e.price.output_micros_per_mtok, 0, "{id}");
    }
    // no published rate could be read for these: left out, not guessed
    for id in ["amazon.titan-embed-text-v2:0", "cohere.embed-english-v3"] {
        assert!(table.lookup(id).is_none(), "{id}");
    }
}
