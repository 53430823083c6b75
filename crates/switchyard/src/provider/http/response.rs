//! A response on its way in: its headers, its body read whole under a cap or streamed, and
//! the pieces of a non-2xx answer a vendor's `classify` reads.

use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;
use http::header::{HeaderMap, CONTENT_LENGTH};
use http::Response;
use http_body_util::{BodyDataStream, BodyExt as _};
use hyper::body::Incoming;

use super::{body_error, too_large, ByteStream, ERROR_BODY_LIMIT};
use crate::error::ProviderError;

/// A response whose headers are in and whose body is not read yet.
#[derive(Debug)]
pub struct UpstreamResponse {
    pub(super) inner: Response<Incoming>,
    pub(super) max_body_bytes: usize,
}

impl UpstreamResponse {
    /// The HTTP status code.
    #[must_use]
    pub fn status(&self) -> u16 {
        self.inner.status().as_u16()
    }

    /// True for 2xx.
    #[must_use]
    pub fn is_success(&self) -> bool {
        self.inner.status().is_success()
    }

    /// The response headers.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// A header's value by (case-insensitive) name, when it is visible ASCII.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        header(self.inner.headers(), name)
    }

    /// The media type without parameters, lower-cased (`text/event-stream`).
    #[must_use]
    pub fn media_type(&self) -> Option<String> {
        let value = self.header("content-type")?;
        let essence = value.split(';').next().unwrap_or(value);
        Some(essence.trim().to_ascii_lowercase())
    }

    /// The next piece of body data (trailers are skipped); `None` at its end.
    async fn chunk(body: &mut Incoming) -> Result<Option<Bytes>, hyper::Error> {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                return Ok(Some(data));
            }
        }
        Ok(None)
    }

    /// The whole body, refusing more than the configured cap.
    ///
    /// # Errors
    /// `Malformed` past the cap (announced by `content-length` or counted while reading);
    /// `Connection` / `Timeout` if the connection fails mid-body.
    pub async fn body(self) -> Result<Bytes, ProviderError> {
        let limit = self.max_body_bytes;
        let announced = self
            .inner
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if announced.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        let mut body = self.inner.into_body();
        // One chunk (the common case) is returned as is; more are joined.
        let mut single: Option<Bytes> = None;
        let mut joined = BytesMut::new();
        while let Some(chunk) = Self::chunk(&mut body).await.map_err(body_error)? {
            let so_far = single.as_ref().map_or(joined.len(), Bytes::len);
            if so_far + chunk.len() > limit {
                return Err(too_large(limit));
            }
            if let Some(head) = single.take() {
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&chunk);
            } else if joined.is_empty() {
                single = Some(chunk);
            } else {
                joined.extend_from_slice(&chunk);
            }
        }
        Ok(single.unwrap_or_else(|| joined.freeze()))
    }

    /// The pieces a `classify` reads: status, headers and up to [`ERROR_BODY_LIMIT`] bytes
    /// of body. Never fails: a body that cannot be read is kept as far as it got.
    pub async fn into_failure(self) -> HttpFailure {
        let status = self.status();
        let (parts, mut incoming) = self.inner.into_parts();
        let mut body = BytesMut::new();
        while body.len() < ERROR_BODY_LIMIT {
            match Self::chunk(&mut incoming).await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(ERROR_BODY_LIMIT);
        HttpFailure {
            status,
            headers: parts.headers,
            body: body.freeze(),
        }
    }

    /// The body as it arrives (for server-sent events). Pair it with
    /// [`SseStream::new`](crate::provider::sse::SseStream::new) and
    /// [`max_body_bytes`](Self::max_body_bytes) as the per-event cap.
    #[must_use]
    pub fn into_byte_stream(self) -> ByteStream {
        Box::pin(BodyDataStream::new(self.inner.into_body()).map(|r| r.map_err(body_error)))
    }

    /// The body cap this response is read under.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }
}

/// A non-2xx response, read for classification.
#[derive(Debug, Clone)]
pub struct HttpFailure {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The start of the body (at most [`ERROR_BODY_LIMIT`] bytes).
    pub body: Bytes,
}

impl HttpFailure {
    /// A header's value by (case-insensitive) name.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The wait the response asks for (`retry-after-ms`, else `retry-after` in seconds or
    /// as an HTTP-date relative to `now`, which callers read from their `Clock`).
    #[must_use]
    pub fn retry_after(&self, now: SystemTime) -> Option<Duration> {
        crate::retry::retry_after_from_headers(|name| header(&self.headers, name), now)
    }
}

/// A header's value by (case-insensitive) name, when it is visible ASCII. Shaped for
/// [`retry_after_from_headers`](crate::retry::retry_after_from_headers):
/// `retry_after_from_headers(|n| header(&headers, n), now)`.
#[must_use]
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
