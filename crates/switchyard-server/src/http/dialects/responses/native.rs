//! The Responses request as its native body, for OpenAI providers with `api = "responses"`
//! (`switchyard::provider::openai::responses`): whether the route has one, the body with a
//! `previous_response_id` replaced by the conversation it names, and the output items such
//! a provider returned.

use std::sync::Arc;

use serde_json::{json, Value};
use switchyard::chat::{Message, Native};
use switchyard::provider::openai::responses::{input_items, NATIVE_KIND};
use switchyard::ChatResponse;

use super::wire::bad;
use crate::http::error::ApiError;
use crate::http::state::AppState;

/// Whether `route` has a provider that takes Responses bodies natively.
pub(super) fn route_takes_it(state: &AppState, route: &str) -> bool {
    crate::http::dialects::passthrough::route_takes_native(state, route, NATIVE_KIND)
}

/// The type of a tool choice only a native provider can honour (a built-in tool's, or
/// `allowed_tools`): any object whose type is not `function`.
pub(super) fn built_in_choice(choice: &Value) -> Option<&str> {
    let kind = choice.as_object()?.get("type")?.as_str()?;
    (kind != "function").then_some(kind)
}

/// Replace the body's `previous_response_id` (an id of ours, which the vendor never saw)
/// by the conversation it names: `prior_items` when a native provider answered it, else the
/// stored messages as Responses items, then the request's own input. Returns the input
/// items the body now carries when `keep` (the answer is to be stored), else none.
///
/// # Errors
/// 400 naming `previous_response_id` when the stored conversation cannot be written as
/// Responses items.
pub(super) fn expand(
    native: &mut Native,
    prior: &[Message],
    prior_items: Option<Vec<Value>>,
    keep: bool,
) -> Result<Vec<Value>, ApiError> {
    let continues = native.body.get("previous_response_id").is_some();
    if !continues && !keep {
        return Ok(Vec::new());
    }
    let own = match native.body.get("input") {
        Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    if !continues {
        return Ok(own);
    }
    let mut body = native.body.as_ref().clone();
    let Some(fields) = body.as_object_mut() else {
        return Ok(own);
    };
    fields.remove("previous_response_id");
    let mut items = match prior_items {
        Some(items) => items,
        None => input_items(prior).map_err(|e| bad("previous_response_id", e.message))?,
    };
    items.extend(own);
    fields.insert("input".to_owned(), Value::Array(items.clone()));
    native.body = Arc::new(body);
    Ok(if keep { items } else { Vec::new() })
}

/// The output items of a natively answered response, as the vendor returned them.
pub(super) fn output(resp: &ChatResponse) -> Option<Vec<Value>> {
    resp.native.as_ref()?.get("output")?.as_array().cloned()
}
