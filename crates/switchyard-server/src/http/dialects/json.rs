//! Reading a dialect's JSON body: the fast parse, and on failure a second, tracked parse that
//! finds the field at fault, so the 400 can name it. Each dialect phrases the refusal in its
//! own terms (a JSON path like `messages[1].role`, or Anthropic's `messages.1.role`) through
//! the closure it passes; a body that is not JSON at all is refused the same way everywhere.

use serde::de::DeserializeOwned;
use switchyard::json_text::from_bytes;

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
    from_bytes(body).or_else(|_| parse_tracked(body, refuse))
}

#[cold]
fn parse_tracked<T: DeserializeOwned>(
    body: &[u8],
    refuse: impl FnOnce(String, String) -> ApiError,
) -> Result<T, ApiError> {
    match tracked(body)? {
        Ok(req) => Ok(req),
        Err((path, message)) => Err(refuse(path, message)),
    }
}

/// A tracked parse: the value, or serde's path to the bad field and its message; a body
/// that is not JSON is the 400 at once.
fn tracked<T: DeserializeOwned>(body: &[u8]) -> Result<Result<T, (String, String)>, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(body);
    let req = match serde_path_to_error::deserialize(&mut *de) {
        Ok(req) => req,
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(not_json(&inner));
            }
            return Ok(Err((path, inner.to_string())));
        }
    };
    de.end().map_err(|e| not_json(&e))?;
    Ok(Ok(req))
}

/// The most unknown top-level fields one body may pass through (each costs a parse).
pub(crate) const MAX_UNKNOWN_FIELDS: usize = 32;

/// Parse `body` into a type that refuses unknown fields, setting aside the top-level
/// fields it does not know instead of failing on them: the value and their names, in the
/// order found. For a route that passes unknown fields through (`passthrough_unknown`);
/// whether they may pass is the caller's to decide. Any other fault (and more than
/// [`MAX_UNKNOWN_FIELDS`] unknown fields) is what `refuse(path, message)` says.
///
/// # Errors
/// 400: not JSON, or what `refuse` says.
pub(crate) fn parse_setting_aside<T: DeserializeOwned>(
    body: &[u8],
    refuse: impl FnOnce(String, String) -> ApiError,
) -> Result<(T, Vec<String>), ApiError> {
    if let Ok(req) = from_bytes(body) {
        return Ok((req, Vec::new()));
    }
    let mut unknown = Vec::new();
    let mut rest: Option<serde_json::Map<String, serde_json::Value>> = None;
    loop {
        let bytes = match &rest {
            None => std::borrow::Cow::Borrowed(body),
            Some(m) => std::borrow::Cow::Owned(serde_json::to_vec(m).unwrap_or_default()),
        };
        let (path, message) = match tracked(&bytes)? {
            Ok(req) => return Ok((req, unknown)),
            Err(fault) => fault,
        };
        let field = unknown_top_level(&path, &message).map(str::to_owned);
        let Some(field) = field.filter(|_| unknown.len() < MAX_UNKNOWN_FIELDS) else {
            return Err(refuse(path, message));
        };
        let map = match &mut rest {
            Some(m) => m,
            None => rest.insert(serde_json::from_slice(body).map_err(|e| not_json(&e))?),
        };
        if map.remove(&field).is_none() {
            return Err(refuse(path, message));
        }
        unknown.push(field);
    }
}

/// The name in serde's "unknown field `x`, expected ..." message, when the field is a
/// top-level one (serde's path is the root or the field itself).
pub(crate) fn unknown_top_level<'m>(path: &str, message: &'m str) -> Option<&'m str> {
    let rest = message.strip_prefix("unknown field `")?;
    let (name, _) = rest.split_once('`')?;
    (path == "." || path == name).then_some(name)
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

/// `value` as one of a closed set of words (`all`, each spelled by `spell`: OpenAI's
/// `reasoning_effort`, `verbosity`, ...), or a 400 naming `param` that quotes the value
/// (cut to [`ECHO_BYTES`]) and lists every word.
///
/// # Errors
/// 400 naming `param`.
pub(crate) fn one_of<'a, T: Copy>(
    param: &str,
    value: &str,
    all: &[T],
    spell: impl Fn(T) -> &'a str,
) -> Result<T, ApiError> {
    if let Some(found) = all.iter().copied().find(|w| spell(*w) == value) {
        return Ok(found);
    }
    let words: Vec<&str> = all.iter().map(|w| spell(*w)).collect();
    Err(ApiError::bad_request(
        Some(param.to_owned()),
        format!(
            "{:?} is not one of {}",
            clip(value, ECHO_BYTES),
            words.join(", ")
        ),
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_not_in_the_set_is_a_400_listing_every_word() {
        use switchyard::chat::ReasoningEffort;
        let all = &ReasoningEffort::ALL;
        let found = one_of("reasoning_effort", "low", all, ReasoningEffort::as_str);
        assert_eq!(found.unwrap(), ReasoningEffort::Low);
        let e = one_of("reasoning_effort", "max", all, ReasoningEffort::as_str).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("reasoning_effort"));
        assert_eq!(
            e.message,
            "\"max\" is not one of none, minimal, low, medium, high"
        );
        let huge = "x".repeat(10_000);
        let e = one_of("modalities[0]", &huge, &["text", "audio"], |w| w).unwrap_err();
        assert!(e.message.len() < 200, "the value is cut: {}", e.message);
        assert!(
            e.message.ends_with("is not one of text, audio"),
            "{}",
            e.message
        );
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        a: u32,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        inner: Inner,
    }

    fn refuse(path: String, message: String) -> ApiError {
        ApiError::bad_request(Some(path), message)
    }

    #[test]
    fn unknown_top_level_fields_are_set_aside_in_order_and_nested_ones_refused() {
        let body = br#"{"zed": 1, "inner": {"a": 1}, "alpha": [2]}"#;
        let (outer, unknown) = parse_setting_aside::<Outer>(body, refuse).unwrap();
        assert_eq!(unknown, ["zed", "alpha"]);
        assert_eq!(outer.inner.a, 1);
        let (_, none) = parse_setting_aside::<Outer>(br#"{"inner": {"a": 1}}"#, refuse).unwrap();
        assert!(none.is_empty());
        let nested = br#"{"inner": {"a": 1, "b": 2}, "zed": 1}"#;
        let err = parse_setting_aside::<Outer>(nested, refuse).unwrap_err();
        assert!(
            err.body().to_string().contains("unknown field `b`"),
            "{:?}",
            err.body()
        );
        let wrong = br#"{"inner": {"a": "x"}, "zed": 1}"#;
        assert!(parse_setting_aside::<Outer>(wrong, refuse).is_err());
        let many: serde_json::Map<String, serde_json::Value> = (0..=MAX_UNKNOWN_FIELDS)
            .map(|i| (format!("f{i}"), serde_json::Value::Null))
            .chain([("inner".to_owned(), serde_json::json!({"a": 1}))])
            .collect();
        let many = serde_json::to_vec(&many).unwrap();
        assert!(
            parse_setting_aside::<Outer>(&many, refuse).is_err(),
            "bounded"
        );
    }
}
