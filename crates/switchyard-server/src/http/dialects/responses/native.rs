//! The Responses request as its native body, for OpenAI providers with `api = "responses"`
//! (`switchyard::provider::openai::responses`): whether the route has one, the body with a
//! `previous_response_id` replaced by the conversation it names, and the output items such
//! a provider returned.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Value};
use switchyard::chat::raw::{array_append, array_items, array_of, array_prepend};
use switchyard::chat::{Message, Native, RawBody};
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
/// stored messages as Responses items, spliced by text before the request's own input
/// (nothing of either is parsed). Returns the body when `keep` (the answer is to be
/// stored: its `input` is what the next turn starts with), shared, not copied.
///
/// # Errors
/// 400 naming `previous_response_id` when the stored conversation cannot be written as
/// Responses items.
pub(super) fn expand(
    native: &mut Native,
    prior: &[Message],
    prior_items: Option<Box<RawValue>>,
    keep: bool,
) -> Result<Option<Arc<RawBody>>, ApiError> {
    let continues = native.body.contains("previous_response_id");
    if !continues {
        return Ok(keep.then(|| Arc::clone(&native.body)));
    }
    let items = match prior_items {
        Some(items) => items,
        None => {
            let items = input_items(prior).map_err(|e| bad("previous_response_id", e.message))?;
            to_raw_value(&items).map_err(|e| bad("previous_response_id", e.to_string()))?
        }
    };
    let stored = array_items(&items).map_err(|e| bad("previous_response_id", e.to_string()))?;
    let own = input_array(&native.body);
    let own = own.as_deref().or_else(|| native.body.get("input"));
    let input = (own.map(|own| array_prepend(own, &stored)).transpose())
        .map_err(|e| bad("input", e))?
        .unwrap_or_else(|| array_of(stored.iter().copied()));
    drop(items);
    let body = Arc::make_mut(&mut native.body);
    body.remove("previous_response_id");
    body.set("input", input);
    Ok(keep.then(|| Arc::clone(&native.body)))
}

/// The request's `input` written as an array of items when it is not one (a string is one
/// user message; none, or anything else, no item); `None` when it is an array already.
fn input_array(body: &RawBody) -> Option<Box<RawValue>> {
    let input = body.get("input");
    if input.is_some_and(|i| i.get().trim_start().starts_with('[')) {
        return None;
    }
    let text = input.and_then(|i| serde_json::from_str::<Cow<'_, str>>(i.get()).ok());
    let items = match text {
        Some(text) => json!([{"role": "user", "content": text}]),
        None => json!([]),
    };
    to_raw_value(&items).ok()
}

/// The input items a stored answer keeps: `body`'s `input` (as items) then the vendor's
/// `output`, spliced by text.
pub(super) fn stored_items(body: &RawBody, output: &[Value]) -> Option<Box<RawValue>> {
    let own = input_array(body);
    let input = own.as_deref().or_else(|| body.get("input"))?;
    let output: Vec<Box<RawValue>> = output.iter().filter_map(|v| to_raw_value(v).ok()).collect();
    let output: Vec<&RawValue> = output.iter().map(AsRef::as_ref).collect();
    array_append(input, &output).ok()
}

/// The output items of a natively answered response, as the vendor returned them.
pub(super) fn output(resp: &ChatResponse) -> Option<&[Value]> {
    resp.native
        .as_ref()?
        .get("output")?
        .as_array()
        .map(Vec::as_slice)
}
