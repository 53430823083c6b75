//! OpenAI's own Chat Completions fields that the shared shape carries as the client wrote
//! them (`logit_bias`, `prediction`, `modalities`, `audio`, `web_search_options`, the
//! deprecated `functions` / `function_call`, `prompt_cache_retention`): each checked
//! against OpenAI's reference and bounded here, so what goes on to an OpenAI provider is
//! small and well formed, and a bad one is a 400 naming it. Which vendors take them, and
//! what happens on the others, is `docs/fields.md`.

use serde_json::{Map, Value};

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::dialects::json;
use crate::http::error::ApiError;

/// The most entries a `logit_bias` map may hold (the gateway's bound; far more than a
/// client biases in practice).
pub(super) const MAX_LOGIT_BIAS: usize = 1024;

/// The most text a `prediction` may hold, in bytes (a predicted file; the body limit
/// bounds the request as a whole).
pub(super) const MAX_PREDICTION_BYTES: usize = 1 << 20;

/// The most parts a `prediction`'s content may have.
pub(super) const MAX_PREDICTION_PARTS: usize = 256;

/// The most bytes a settings object (`audio`, `web_search_options`) may take as JSON.
pub(super) const SETTINGS_BYTES: usize = 4096;

/// The most functions a `functions` list may declare (OpenAI's bound on `tools`).
pub(super) const MAX_FUNCTIONS: usize = 128;

fn bad(param: &str, msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), msg)
}

/// `logit_bias`: at most [`MAX_LOGIT_BIAS`] entries, each a token id (decimal digits) to
/// a number from -100 to 100.
///
/// # Errors
/// 400 naming `logit_bias`.
pub(super) fn logit_bias(map: &Map<String, Value>) -> Result<(), ApiError> {
    if map.len() > MAX_LOGIT_BIAS {
        return Err(bad(
            "logit_bias",
            format!("`logit_bias` takes at most {MAX_LOGIT_BIAS} tokens"),
        ));
    }
    for (token, bias) in map {
        let id =
            !token.is_empty() && token.len() <= 10 && token.bytes().all(|b| b.is_ascii_digit());
        if !id {
            return Err(bad(
                "logit_bias",
                format!(
                    "`logit_bias` keys are token ids, not {:?}",
                    clip(token, ECHO_BYTES)
                ),
            ));
        }
        if !bias.as_f64().is_some_and(|b| (-100.0..=100.0).contains(&b)) {
            return Err(bad(
                "logit_bias",
                "`logit_bias` values must be numbers between -100 and 100",
            ));
        }
    }
    Ok(())
}

/// `prediction`: `{"type": "content", "content": <text or text parts>}`, at most
/// [`MAX_PREDICTION_BYTES`] of text in at most [`MAX_PREDICTION_PARTS`] parts.
///
/// # Errors
/// 400 naming the part of `prediction` at fault.
pub(super) fn prediction(p: &Value) -> Result<(), ApiError> {
    let Some(obj) = p.as_object() else {
        return Err(bad("prediction", "`prediction` must be an object"));
    };
    if let Some(key) = obj.keys().find(|k| *k != "type" && *k != "content") {
        return Err(bad(
            &format!("prediction.{}", clip(key, ECHO_BYTES)),
            "`prediction` takes only `type` and `content`",
        ));
    }
    if obj.get("type").and_then(Value::as_str) != Some("content") {
        return Err(bad(
            "prediction.type",
            "`prediction.type` must be \"content\"",
        ));
    }
    let bytes = match obj.get("content") {
        Some(Value::String(text)) => text.len(),
        Some(Value::Array(parts)) => prediction_parts(parts)?,
        _ => {
            return Err(bad(
                "prediction.content",
                "`prediction.content` must be a string or an array of text parts",
            ))
        }
    };
    if bytes > MAX_PREDICTION_BYTES {
        return Err(bad(
            "prediction.content",
            format!("`prediction.content` takes at most {MAX_PREDICTION_BYTES} bytes of text"),
        ));
    }
    Ok(())
}

/// The text bytes of a prediction's parts, each `{"type": "text", "text"}`.
fn prediction_parts(parts: &[Value]) -> Result<usize, ApiError> {
    if parts.len() > MAX_PREDICTION_PARTS {
        return Err(bad(
            "prediction.content",
            format!("`prediction.content` takes at most {MAX_PREDICTION_PARTS} parts"),
        ));
    }
    let mut bytes = 0usize;
    for (i, part) in parts.iter().enumerate() {
        let text = part
            .as_object()
            .filter(|o| o.len() == 2 && o.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|o| o.get("text"))
            .and_then(Value::as_str);
        let Some(text) = text else {
            return Err(bad(
                &format!("prediction.content[{i}]"),
                "a prediction part must be {\"type\": \"text\", \"text\": ...}",
            ));
        };
        bytes = bytes.saturating_add(text.len());
    }
    Ok(bytes)
}

/// `modalities`: `text` and `audio`, each at most once; `["text"]` (what every vendor
/// gives) is no field at all, so it comes back empty.
///
/// # Errors
/// 400 naming `modalities`.
pub(super) fn modalities(m: Option<Vec<String>>) -> Result<Vec<String>, ApiError> {
    let Some(m) = m else {
        return Ok(Vec::new());
    };
    for (i, word) in m.iter().enumerate() {
        json::one_of(&format!("modalities[{i}]"), word, &["text", "audio"], |w| w)?;
        if m[..i].contains(word) {
            return Err(bad(
                &format!("modalities[{i}]"),
                "a modality is named twice",
            ));
        }
    }
    Ok(if m == ["text"] { Vec::new() } else { m })
}

/// A settings object (`audio`, `web_search_options`) of at most `max` bytes as JSON.
///
/// # Errors
/// 400 naming `param`.
pub(super) fn object(param: &str, v: &Value, max: usize) -> Result<(), ApiError> {
    if !v.is_object() {
        return Err(bad(param, format!("`{param}` must be an object")));
    }
    let size = serde_json::to_vec(v).map_or(usize::MAX, |b| b.len());
    if size > max {
        return Err(bad(
            param,
            format!("`{param}` takes at most {max} bytes of JSON"),
        ));
    }
    Ok(())
}

/// The deprecated `functions`: at most [`MAX_FUNCTIONS`] objects, each with a `name`.
///
/// # Errors
/// 400 naming the function at fault.
pub(super) fn functions(list: Vec<Value>) -> Result<Value, ApiError> {
    if list.len() > MAX_FUNCTIONS {
        return Err(bad(
            "functions",
            format!("`functions` takes at most {MAX_FUNCTIONS} functions"),
        ));
    }
    for (i, f) in list.iter().enumerate() {
        if !f.get("name").is_some_and(Value::is_string) {
            return Err(bad(
                &format!("functions[{i}].name"),
                "a function needs a `name`",
            ));
        }
    }
    Ok(Value::Array(list))
}

/// The deprecated `function_call`: `none`, `auto` or `{"name": ...}`.
///
/// # Errors
/// 400 naming `function_call`.
pub(super) fn function_call(c: &Value) -> Result<(), ApiError> {
    let ok = match c {
        Value::String(mode) => mode == "none" || mode == "auto",
        Value::Object(o) => o.len() == 1 && o.get("name").is_some_and(Value::is_string),
        _ => false,
    };
    if ok {
        return Ok(());
    }
    Err(bad(
        "function_call",
        "`function_call` must be \"none\", \"auto\" or {\"name\": ...}",
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn param(e: ApiError) -> String {
        e.param.unwrap_or_default()
    }

    #[test]
    fn a_hostile_logit_bias_is_refused_by_size_key_and_value() {
        let huge: Map<String, Value> = (0..=MAX_LOGIT_BIAS)
            .map(|i| (i.to_string(), json!(1)))
            .collect();
        assert!(logit_bias(&huge)
            .unwrap_err()
            .message
            .contains("at most 1024"));
        for bad in [json!({"hello": 1}), json!({"12": 101}), json!({"12": "x"})] {
            let map = bad.as_object().unwrap();
            assert_eq!(param(logit_bias(map).unwrap_err()), "logit_bias", "{bad}");
        }
        assert!(logit_bias(json!({"50256": -100, "1": 2.5}).as_object().unwrap()).is_ok());
    }

    #[test]
    fn a_prediction_is_bounded_and_shaped() {
        assert!(prediction(&json!({"type": "content", "content": "draft"})).is_ok());
        let parts = json!({"type": "content", "content": [{"type": "text", "text": "a"}]});
        assert!(prediction(&parts).is_ok());
        let big = "x".repeat(MAX_PREDICTION_BYTES + 1);
        let e = prediction(&json!({"type": "content", "content": big})).unwrap_err();
        assert_eq!(param(e), "prediction.content");
        let many: Vec<Value> = (0..=MAX_PREDICTION_PARTS)
            .map(|_| json!({"type": "text", "text": "a"}))
            .collect();
        let e = prediction(&json!({"type": "content", "content": many})).unwrap_err();
        assert!(e.message.contains("parts"), "{}", e.message);
        let e = prediction(&json!({"type": "diff", "content": "x"})).unwrap_err();
        assert_eq!(param(e), "prediction.type");
        let e =
            prediction(&json!({"type": "content", "content": [{"type": "image"}]})).unwrap_err();
        assert_eq!(param(e), "prediction.content[0]");
    }

    #[test]
    fn modalities_audio_settings_and_functions_are_checked() {
        assert!(modalities(Some(vec!["text".into()])).unwrap().is_empty());
        assert_eq!(
            modalities(Some(vec!["text".into(), "audio".into()])).unwrap(),
            ["text", "audio"]
        );
        assert!(modalities(Some(vec!["video".into()])).is_err());
        assert!(modalities(Some(vec!["text".into(), "text".into()])).is_err());
        assert!(object("audio", &json!({"voice": "alloy", "format": "wav"}), 4096).is_ok());
        assert!(object("audio", &json!("alloy"), 4096).is_err());
        let big = json!({"voice": "x".repeat(SETTINGS_BYTES)});
        assert!(object("audio", &big, SETTINGS_BYTES).is_err());
        assert!(functions(vec![json!({"name": "f"})]).is_ok());
        assert_eq!(
            param(functions(vec![json!({"description": "no name"})]).unwrap_err()),
            "functions[0].name"
        );
        let many = vec![json!({"name": "f"}); MAX_FUNCTIONS + 1];
        assert!(functions(many).is_err());
        assert!(function_call(&json!("auto")).is_ok());
        assert!(function_call(&json!({"name": "f"})).is_ok());
        assert!(function_call(&json!("required")).is_err());
    }
}
