//! Reading a dialect's JSON body: the fast parse, and on failure a second, tracked parse that
//! finds the field at fault, so the 400 can name it. Each dialect phrases the refusal in its
//! own terms (a JSON path like `messages[1].role`, or Anthropic's `messages.1.role`) through
//! the closure it passes; a body that is not JSON at all is refused the same way everywhere.

use serde::de::DeserializeOwned;

use crate::http::bounds::{clip, elide, longer_than, ECHO_BYTES, MAX_NAME_CHARS};
use crate::http::error::ApiError;

/// How much of a parser's message (which may quote the client's value) a 400 carries.
pub(crate) const PARSER_MESSAGE_BYTES: usize = 256;

/// Parse `body`; on failure, `refuse(path, message)` phrases the 400 from serde's path to the
/// bad field (`.` for the root) and its message (not yet cut: see [`PARSER_MESSAGE_BYTES`]).
///
/// # Errors
/// 400: not JSON, or what `refuse` says.
pub(crate) fn parse<T: DeserializeOwned>(
    body: &[u8],
    refuse: impl FnOnce(String, String) -> ApiError,
) -> Result<T, ApiError> {
    serde_json::from_slice(body).or_else(|_| parse_tracked(body, refuse))
}

#[cold]
fn parse_tracked<T: DeserializeOwned>(
    body: &[u8],
    refuse: impl FnOnce(String, String) -> ApiError,
) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let req = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return not_json(&inner);
        }
        refuse(path, inner.to_string())
    })?;
    de.end().map_err(|e| not_json(&e))?;
    Ok(req)
}

/// OpenAI's phrasing: `param` is the JSON path (absent for the root), the message quotes it
/// and serde's reason, both cut.
pub(crate) fn invalid_field(path: String, message: &str) -> ApiError {
    let param = (path != ".").then_some(path);
    // serde quotes a wrong-typed string or an unknown variant in full: keep its ends
    let inner = elide(message, PARSER_MESSAGE_BYTES);
    let msg = match &param {
        Some(p) => format!("invalid field `{}`: {inner}", clip(p, ECHO_BYTES)),
        None => format!("invalid request body: {inner}"),
    };
    ApiError::bad_request(param, msg)
}

/// 400 for a body that is not JSON.
pub(crate) fn not_json(e: &serde_json::Error) -> ApiError {
    let e = e.to_string();
    ApiError::bad_request(
        None,
        format!(
            "request body is not valid JSON: {}",
            elide(&e, PARSER_MESSAGE_BYTES)
        ),
    )
}

/// Refuse a name longer than [`MAX_NAME_CHARS`] (the route in `model`, `user`, ids): names,
/// not content, logged and quoted in errors. The first too long is named in the 400.
///
/// # Errors
/// 400 naming the field.
pub(crate) fn check_names(fields: &[(&str, Option<&str>)]) -> Result<(), ApiError> {
    for (field, value) in fields {
        if value.is_some_and(|v| longer_than(v, MAX_NAME_CHARS)) {
            return Err(ApiError::bad_request(
                Some((*field).to_owned()),
                format!("{field}: longer than {MAX_NAME_CHARS} characters"),
            ));
        }
    }
    Ok(())
}
