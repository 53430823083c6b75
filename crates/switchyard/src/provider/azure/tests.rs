//! Azure's own rules, without HTTP: the content filter both ways, the `x-ms` retry header,
//! the token file's re-read schedule (paused time). The HTTP behaviour is in
//! `tests/adapters/azure.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use ::http::HeaderMap;
use bytes::Bytes;
use serde_json::json;

use super::entra::TokenFile;
use super::*;
use crate::provider::token::TokenSource as _;

fn failure(status: u16, headers: &[(&str, &str)], body: serde_json::Value) -> HttpFailure {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        crate::provider::http::insert_header(&mut map, k, v).unwrap();
    }
    HttpFailure {
        status,
        headers: map,
        body: Bytes::from(body.to_string()),
    }
}

fn codec() -> AzureCodec {
    AzureCodec {
        inner: OpenAiCodec::new("gpt-4o-prod".into(), false, Some("api-key".into())),
    }
}

#[test]
fn a_content_filter_400_is_content_filtered() {
    let body = json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation",
            "content_filter_result": {"hate": {"filtered": true, "severity": "high"}}}}});
    let err = classify(&failure(400, &[], body), SystemTime::UNIX_EPOCH);
    assert_eq!(err.kind, ErrorKind::ContentFiltered, "{err}");
    assert_eq!(err.vendor_code.as_deref(), Some("content_filter"));
}

#[test]
fn x_ms_retry_after_ms_is_the_wait_unless_retry_after_ms_is_given() {
    let body = json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation have exceeded call rate limit."}});
    let now = SystemTime::UNIX_EPOCH;
    let err = classify(
        &failure(
            429,
            &[("retry-after", "2"), ("x-ms-retry-after-ms", "1500")],
            body.clone(),
        ),
        now,
    );
    assert_eq!(err.kind, ErrorKind::RateLimited);
    assert_eq!(err.retry_after, Some(Duration::from_millis(1500)));
    let err = classify(
        &failure(
            429,
            &[("retry-after-ms", "700"), ("x-ms-retry-after-ms", "1500")],
            body.clone(),
        ),
        now,
    );
    assert_eq!(err.retry_after, Some(Duration::from_millis(700)));
    let err = classify(&failure(429, &[("retry-after", "3")], body), now);
    assert_eq!(err.retry_after, Some(Duration::from_secs(3)));
}

#[test]
fn a_200_filtered_before_any_word_is_content_filtered() {
    let body = json!({"id": "x", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": null},
            "content_filter_results": {"violence": {"filtered": true, "severity": "medium"}}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10}});
    let err = codec()
        .parse_reply(body.to_string().as_bytes(), 1)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered);
    assert_eq!(err.status, Some(200));

    let cut = json!({"id": "x", "object": "chat.completion", "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": "Here is"}}]});
    let reply = codec().parse_reply(cut.to_string().as_bytes(), 1).unwrap();
    assert_eq!(reply.text, "Here is");
    assert_eq!(reply.finish_reason, Some(FinishReason::ContentFilter));
}

fn event(data: serde_json::Value) -> SseEvent {
    SseEvent {
        event: "message".into(),
        data: data.to_string(),
        id: None,
        retry: None,
    }
}

#[test]
fn a_stream_filtered_before_any_word_is_content_filtered() {
    let mut events = codec().events(1);
    // Azure's first chunk: the prompt's filter results, no choices
    let first = events
        .parse_event(&event(
            json!({"id": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}),
        ))
        .unwrap();
    assert!(matches!(first, Parsed::Chunk(_)));
    let err = events
        .parse_event(&event(json!({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]})))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::ContentFiltered);

    let mut events = codec().events(1);
    events
        .parse_event(&event(json!({"id": "x", "choices": [{"index": 0, "delta": {"content": "Once"}, "finish_reason": null}]})))
        .unwrap();
    let Parsed::Chunk(last) = events
        .parse_event(&event(json!({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]})))
        .unwrap()
    else {
        panic!("a chunk")
    };
    assert_eq!(last.finish_reason, Some(FinishReason::ContentFilter));
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("switchyard-azure-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("token")
}

/// The file is looked at again only once `recheck` has passed, then re-read because it
/// changed; a file that disappears keeps the last token; one never read fails as `Auth`.
#[tokio::test(start_paused = true)]
async fn the_token_file_is_reread_after_recheck_when_it_changed() {
    let path = temp_file("recheck");
    std::fs::write(&path, "token-one\n").unwrap();
    let file = TokenFile::new(&path, Duration::from_secs(10));
    assert_eq!(file.token().await.unwrap().expose(), "token-one");
    std::fs::write(&path, "token-number-two").unwrap();
    tokio::time::advance(Duration::from_secs(9)).await;
    assert_eq!(
        file.token().await.unwrap().expose(),
        "token-one",
        "not looked at before recheck"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(file.token().await.unwrap().expose(), "token-number-two");
    assert_eq!(file.current().unwrap().expose(), "token-number-two");
    std::fs::remove_file(&path).unwrap();
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        file.token().await.unwrap().expose(),
        "token-number-two",
        "a missing file keeps the last token"
    );

    let never = TokenFile::new(path.with_file_name("absent"), Duration::from_secs(10));
    let err = never.token().await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(err.message.contains("absent"), "{err}");
    std::fs::write(&path, "  \n").unwrap();
    let empty = TokenFile::new(&path, Duration::from_secs(10));
    assert_eq!(empty.token().await.unwrap_err().kind, ErrorKind::Auth);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn v1_or_classic_urls() {
    let transport = Transport::default();
    let v1 = Azure::new(
        AzureConfig::new("https://res.openai.azure.com/", "gpt-4o-prod", "v1"),
        &transport,
    )
    .unwrap();
    assert_eq!(
        v1.endpoints().call.as_str(),
        "https://res.openai.azure.com/openai/v1/chat/completions"
    );
    assert_eq!(v1.codec().model(), "gpt-4o-prod");
    let classic = Azure::new(
        AzureConfig::new("https://res.openai.azure.com", "gpt-4o-prod", "2024-10-21"),
        &transport,
    )
    .unwrap();
    assert_eq!(
        classic.endpoints().call.as_str(),
        "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(
        classic.embeddings_endpoint().unwrap().as_str(),
        "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/embeddings?api-version=2024-10-21"
    );
    for (deployment, version) in [("", "v1"), ("a/b", "v1"), ("d", ""), ("d", "2024 10")] {
        assert!(
            Azure::new(
                AzureConfig::new("https://res.openai.azure.com", deployment, version),
                &transport
            )
            .is_err(),
            "{deployment:?} {version:?}"
        );
    }
}

/// The silent-filter rule both Azure codecs (Chat Completions and Responses) share: a
/// content-filter finish with nothing said is an error; with a refusal, text or a tool call
/// it is the answer; a stream says so from its first chunk that said something.
#[test]
fn a_filter_finish_is_an_error_only_when_nothing_was_said() {
    let filtered = |refusal: &str, text: &str| ProviderReply {
        text: text.to_owned(),
        refusal: refusal.to_owned(),
        finish_reason: Some(FinishReason::ContentFilter),
        ..ProviderReply::default()
    };
    let e = unless_silently_filtered(filtered("", "")).unwrap_err();
    assert_eq!(e.kind, crate::error::ErrorKind::ContentFiltered);
    assert!(unless_silently_filtered(filtered("I can't help with that.", "")).is_ok());
    assert!(unless_silently_filtered(filtered("", "Partial")).is_ok());

    let chunk = |refusal: &str, finish: Option<FinishReason>| crate::chat::ChatChunk {
        refusal: refusal.to_owned(),
        finish_reason: finish,
        ..crate::chat::ChatChunk::default()
    };
    let mut watch = FilterWatch::default();
    assert!(watch.check(&chunk("", None)).is_ok());
    assert!(watch
        .check(&chunk("", Some(FinishReason::ContentFilter)))
        .is_err());
    let mut watch = FilterWatch::default();
    assert!(watch.check(&chunk("No.", None)).is_ok());
    assert!(watch
        .check(&chunk("", Some(FinishReason::ContentFilter)))
        .is_ok());
}
