//! Fields that make a vendor bill a request above its model's list price, refused on
//! budgeted requests by name.
//!
//! A budget reserves a request's worst case from the price table (`prices.json`: each
//! model's per-token rates) and settles its cost from the tokens the vendor reports. Some
//! request fields change what the vendor charges in ways neither sees: OpenAI's priority
//! processing (`service_tier: "priority"`, also called `"fast"`) bills each model at its
//! own premium rates; Anthropic's fast mode (`speed: "fast"`) bills a per-model multiple
//! of the standard rates and `inference_geo` other than `"global"` 1.1x on recent models;
//! OpenAI's built-in tools (`web_search`, `file_search`, `code_interpreter`,
//! `image_generation`) and Chat Completions' `web_search_options` bill a fee per call or
//! container on top of the tokens (as Anthropic's server tools do, which the Messages
//! dialect refuses anyway). The multipliers and fees differ per model and change with each
//! model generation, so rather than cost such a request at list price (spending past the
//! budget unseen) a request that spends against any budget — its route's or its key's — and
//! uses one is refused with a 400 naming the field and why (`docs/design.md`, "Cost and
//! budgets"). Without a budget they pass as before. Tiers billed at or below list price
//! (`flex`, `default`, `auto`, `scale`) pass everywhere.

use serde_json::Value;
use switchyard::chat::RawBody;
use switchyard::ChatRequest;

use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;

/// `service_tier` values billed above standard rates.
const PREMIUM_TIERS: [&str; 2] = ["priority", "fast"];

/// Tool types (by prefix: dated variants included) that bill a fee per call or container.
const FEE_TOOLS: [&str; 7] = [
    "web_search",
    "file_search",
    "code_interpreter",
    "image_generation",
    // Anthropic's server tools, should a native body carry one
    "code_execution",
    "web_fetch",
    "tool_search",
];

/// Refuse `req` when it uses a field billed above list price; call only when the request
/// spends against a budget.
///
/// # Errors
/// 400 naming the field, its value and why.
pub(crate) fn refuse_on_budget(req: &ChatRequest) -> Result<(), ApiError> {
    match found(req) {
        None => Ok(()),
        Some((field, value, why)) => Err(ApiError::bad_request(
            Some(field.clone()),
            format!(
                "{field}: {} is billed above the model's list price ({why}), which a budget cannot \
                 reserve for; this request spends against a budget (its route's or its key's): send \
                 it without {field}, or use a route without a budget",
                clip(&value, ECHO_BYTES)
            ),
        )),
    }
}

/// The first surcharged field of `req`: its name, value and why.
fn found(req: &ChatRequest) -> Option<(String, String, &'static str)> {
    let premium = |tier: &str| PREMIUM_TIERS.iter().any(|t| tier.eq_ignore_ascii_case(t));
    let tier_why = "priority processing bills each model at its own premium rates";
    if let Some(tier) = req.service_tier.as_deref().filter(|t| premium(t)) {
        return Some(("service_tier".into(), format!("{tier:?}"), tier_why));
    }
    if req
        .passthrough
        .as_ref()
        .is_some_and(|p| p.contains_key("web_search_options"))
    {
        let why = "search bills a fee per call on top of the tokens";
        return Some(("web_search_options".into(), "set".into(), why));
    }
    let body = req.native.as_ref().map(|n| n.body.as_ref())?;
    let text = |key: &str| body.str(key);
    if let Some(tier) = text("service_tier").filter(|t| premium(t)) {
        return Some(("service_tier".into(), format!("{tier:?}"), tier_why));
    }
    if let Some(speed) = text("speed").filter(|s| s.eq_ignore_ascii_case("fast")) {
        let why = "fast mode bills a per-model multiple of the standard rates";
        return Some(("speed".into(), format!("{speed:?}"), why));
    }
    if let Some(geo) = text("inference_geo").filter(|g| !g.eq_ignore_ascii_case("global")) {
        let why = "inference pinned to a geography is billed above standard rates on recent models";
        return Some(("inference_geo".into(), format!("{geo:?}"), why));
    }
    fee_tool(body)
}

/// A tool's type alone (the rest of it is not read).
#[derive(serde::Deserialize)]
struct ToolType {
    #[serde(rename = "type")]
    kind: Option<Value>,
}

/// The first tool of a native body whose type bills a fee per call.
fn fee_tool(body: &RawBody) -> Option<(String, String, &'static str)> {
    let tools: Vec<&serde_json::value::RawValue> = body.get_as("tools")?;
    tools.iter().enumerate().find_map(|(i, tool)| {
        let tool: ToolType = serde_json::from_str(tool.get()).ok()?;
        let kind = tool.kind.as_ref().and_then(Value::as_str)?;
        FEE_TOOLS.iter().any(|f| kind.starts_with(f)).then(|| {
            let why = "a built-in tool bills a fee per call or container on top of the tokens";
            (format!("tools[{i}].type"), format!("{kind:?}"), why)
        })
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use switchyard::chat::Native;

    use super::*;

    fn native(kind: &'static str, body: Value) -> ChatRequest {
        let mut req = ChatRequest::from_prompt("hi");
        req.native = Some(Native::new(kind, body));
        req
    }

    fn field(req: &ChatRequest) -> Option<String> {
        found(req).map(|(f, _, _)| f)
    }

    #[test]
    fn premium_fields_are_found_by_name() {
        let mut req = ChatRequest::from_prompt("hi");
        req.service_tier = Some("priority".into());
        assert_eq!(field(&req).as_deref(), Some("service_tier"));
        req.service_tier = Some("flex".into());
        assert_eq!(
            field(&req),
            None,
            "cheaper than list: costed conservatively"
        );
        let req = native("anthropic", json!({"speed": "fast"}));
        assert_eq!(field(&req).as_deref(), Some("speed"));
        let req = native(
            "anthropic",
            json!({"speed": "standard", "inference_geo": "us"}),
        );
        assert_eq!(field(&req).as_deref(), Some("inference_geo"));
        let req = native("anthropic", json!({"inference_geo": "global"}));
        assert_eq!(field(&req), None);
        let req = native(
            "openai-responses",
            json!({"tools": [{"type": "function", "name": "f"}, {"type": "web_search_preview_2025_03_11"}]}),
        );
        assert_eq!(field(&req).as_deref(), Some("tools[1].type"));
        let req = native(
            "openai-responses",
            json!({"tools": [{"type": "mcp"}, {"type": "local_shell"}]}),
        );
        assert_eq!(field(&req), None, "billed as tokens");
        let mut req = ChatRequest::from_prompt("hi");
        let mut extra = serde_json::Map::new();
        extra.insert("web_search_options".into(), json!({}));
        req.passthrough = Some(Arc::new(extra));
        assert_eq!(field(&req).as_deref(), Some("web_search_options"));
    }

    #[test]
    fn the_refusal_names_the_field_and_why() {
        let req = native("anthropic", json!({"speed": "fast"}));
        let e = refuse_on_budget(&req).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("speed"));
        assert!(
            e.message.starts_with("speed: \"fast\" is billed above"),
            "{}",
            e.message
        );
        assert!(e.message.contains("budget"), "{}", e.message);
    }
}
