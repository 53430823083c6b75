//! The query string of a paged list (`GET /v1/responses/{id}/input_items`, Anthropic's
//! `GET /v1/models`): its parameters, of which at most [`MAX_PARAMS`] are read, and the page
//! size `limit`. What the other parameters mean, and how a page is cut, are the endpoint's.

use std::borrow::Cow;

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;

/// Query parameters read at most (the rest are refused).
pub const MAX_PARAMS: usize = 16;

/// The query's parameters, decoded, in order; the one past [`MAX_PARAMS`] is a 400 naming
/// `query`.
pub(crate) fn params(
    query: &str,
) -> impl Iterator<Item = Result<(Cow<'_, str>, Cow<'_, str>), ApiError>> {
    form_urlencoded::parse(query.as_bytes())
        .enumerate()
        .map(|(i, pair)| {
            if i < MAX_PARAMS {
                return Ok(pair);
            }
            Err(ApiError::bad_request(
                Some("query".to_owned()),
                format!("more than {MAX_PARAMS} query parameters"),
            ))
        })
}

/// `limit`: an integer from 1 to `max`, or a 400 naming `limit`.
pub(crate) fn limit(value: &str, max: usize) -> Result<usize, ApiError> {
    (value.parse::<usize>().ok())
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(
                Some("limit".to_owned()),
                format!(
                    "must be an integer from 1 to {max}, got `{}`",
                    clip(value, ECHO_BYTES)
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_parameters_are_read_and_the_seventeenth_is_refused() {
        let sixteen = "a=1&".repeat(MAX_PARAMS);
        assert!(params(&sixteen).all(|p| p.is_ok()));
        let more = format!("{sixteen}b=2");
        let last = params(&more).last().unwrap().unwrap_err();
        assert_eq!(last.param.as_deref(), Some("query"));
        let decoded: Vec<_> = params("after=a%20b&limit=3").map(Result::unwrap).collect();
        assert_eq!(decoded[0], ("after".into(), "a b".into()));
    }

    #[test]
    fn a_limit_is_from_one_to_the_endpoints_largest_page() {
        assert_eq!(limit("1", 100).unwrap(), 1);
        assert_eq!(limit("1000", 1000).unwrap(), 1000);
        for bad in ["0", "101", "-1", "ten", ""] {
            let e = limit(bad, 100).unwrap_err();
            assert_eq!(e.param.as_deref(), Some("limit"), "{bad}");
        }
        let huge = "9".repeat(5000);
        let e = limit(&huge, 100).unwrap_err();
        assert!(e.message.len() < 200, "the value is cut: {}", e.message);
    }
}
