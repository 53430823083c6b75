#![allow(clippy::unwrap_used, clippy::expect_used)]

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;
use futures_util::StreamExt as _;

use super::*;

fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let mut message = Message::new(Bytes::copy_from_slice(payload.as_bytes()));
    for (name, value) in headers {
        message = message.add_header(Header::new(
            (*name).to_owned(),
            HeaderValue::String((*value).to_owned().into()),
        ));
    }
    let mut out = Vec::new();
    write_message_to(&message, &mut out).unwrap();
    out
}

fn event(name: &str, payload: &str) -> Vec<u8> {
    frame(
        &[
            (":message-type", "event"),
            (":event-type", name),
            (":content-type", "application/json"),
        ],
        payload,
    )
}

async fn read(pieces: Vec<Vec<u8>>, max: usize) -> Vec<Result<SseEvent, ProviderError>> {
    let bytes = futures_util::stream::iter(pieces.into_iter().map(|p| Ok(Bytes::from(p))));
    EventStream::new(bytes, max).collect().await
}

#[tokio::test]
async fn frames_become_named_events_however_the_bytes_are_split() {
    let mut body = event("messageStart", r#"{"role":"assistant"}"#);
    body.extend(event("contentBlockDelta", r#"{"delta":{"text":"Île"}}"#));
    body.extend(frame(
        &[
            (":message-type", "exception"),
            (":exception-type", "throttlingException"),
        ],
        r#"{"message":"slow down"}"#,
    ));
    body.extend(frame(
        &[
            (":message-type", "error"),
            (":error-code", "InternalFailure"),
            (":error-message", "boom"),
        ],
        "",
    ));
    for size in [1, 3, 7, body.len()] {
        let pieces: Vec<Vec<u8>> = body.chunks(size).map(<[u8]>::to_vec).collect();
        let events: Vec<SseEvent> = read(pieces, 1 << 20)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let names: Vec<&str> = events.iter().map(|e| &*e.event).collect();
        assert_eq!(
            names,
            [
                "messageStart",
                "contentBlockDelta",
                "exception:throttlingException",
                "error:InternalFailure"
            ],
            "pieces of {size}"
        );
        assert_eq!(events[1].data, r#"{"delta":{"text":"Île"}}"#);
        assert_eq!(events[2].data, r#"{"message":"slow down"}"#);
        assert_eq!(events[3].data, "boom");
    }
}

#[tokio::test]
async fn a_bad_crc_is_malformed_after_the_good_frames_before_it() {
    let mut body = event("messageStart", "{}");
    let mut bad = event("contentBlockDelta", r#"{"delta":{"text":"x"}}"#);
    let last = bad.len() - 1;
    bad[last] ^= 0xff; // the message CRC
    body.extend(bad);
    body.extend(event("messageStop", "{}"));
    let items = read(vec![body], 1 << 20).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap().event, "messageStart");
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");

    let mut prelude_broken = event("messageStart", "{}");
    prelude_broken[9] ^= 0x01; // the prelude CRC
    let items = read(vec![prelude_broken], 1 << 20).await;
    assert_eq!(items[0].as_ref().unwrap_err().kind, ErrorKind::Malformed);
}

#[tokio::test]
async fn a_frame_over_the_cap_is_refused_from_its_prelude() {
    let big = event("contentBlockDelta", &"x".repeat(4096));
    // only the first 16 bytes arrive: the length alone refuses it
    let items = read(vec![big[..16].to_vec()], 1024).await;
    assert_eq!(items.len(), 1);
    let err = items[0].as_ref().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed);
    assert!(err.message.contains("larger than 1024"), "{err}");
}

#[tokio::test]
async fn a_cut_frame_at_the_end_is_dropped_and_the_stream_ends() {
    let mut body = event("messageStart", "{}");
    let next = event("contentBlockDelta", r#"{"delta":{"text":"x"}}"#);
    body.extend_from_slice(&next[..next.len() / 2]);
    let items = read(vec![body], 1 << 20).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap().event, "messageStart");
}

#[tokio::test]
async fn an_event_without_a_type_or_with_a_binary_payload_is_malformed() {
    let untyped = frame(&[(":message-type", "event")], "{}");
    let items = read(vec![untyped], 1 << 20).await;
    assert_eq!(items[0].as_ref().unwrap_err().kind, ErrorKind::Malformed);

    let mut message = Message::new(Bytes::from_static(&[0xff, 0xfe]));
    message = message
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ))
        .add_header(Header::new(":event-type", HeaderValue::String("x".into())));
    let mut binary = Vec::new();
    write_message_to(&message, &mut binary).unwrap();
    let items = read(vec![binary], 1 << 20).await;
    assert_eq!(items[0].as_ref().unwrap_err().kind, ErrorKind::Malformed);
}
