//! Mid-conversation tool changes (SDK 2.15: `tool_addition` and `tool_removal` blocks) in
//! the shared shape, which has one tool list per request.
//!
//! They are contract, not hints: a client that withdrew a tool cannot run a call to it,
//! and one that offered a tool expects the model may call it. They are translated, so that
//! every vendor can answer: the request's `tools` is the tool set at the start, and each
//! change, in conversation order, adds a tool (a `tool_reference` to one declared in
//! `tools` or defined earlier, or a `tool_definition` carrying a custom tool) or removes one
//! by name; the set in force at the end is the `tools` another vendor gets, which is exactly
//! what the model may call in its answer. An Anthropic provider gets the blocks as written.
//! MCP references are refused like `mcp_servers`; a reference of a type a later beta adds
//! is served by Anthropic alone.

use serde_json::Value;
use switchyard::chat::Tool;

use super::{bad, Ignored, WireTool};
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;

/// One change to the tool set.
#[derive(Debug)]
pub(super) enum ToolChange {
    /// A tool defined by value, offered from here on.
    Define(Tool),
    /// A tool known by name (from `tools` or an earlier definition), offered again.
    Add(String),
    /// A tool withdrawn from here on.
    Remove(String),
}

/// The change a `tool_addition` (`add`) or `tool_removal` block at `at` makes, from its
/// `tool`; none when only Anthropic can apply it (noted in `ignored`).
///
/// # Errors
/// 400 naming the field: a malformed reference, an MCP one, a server tool's definition.
pub(super) fn change(
    tool: Value,
    add: bool,
    at: &str,
    ignored: &mut Ignored,
) -> Result<Option<ToolChange>, ApiError> {
    let at = format!("{at}.tool");
    let Value::Object(mut tool) = tool else {
        return Err(bad(&at, "must be an object"));
    };
    let kind = match tool.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(_) => return Err(bad(&format!("{at}.type"), "must be a string")),
        None => return Err(bad(&format!("{at}.type"), "Field required")),
    };
    match kind.as_str() {
        "tool_reference" => {
            let name = match tool.remove("name") {
                Some(Value::String(name)) => name,
                _ => return Err(bad(&format!("{at}.name"), "Field required (a string)")),
            };
            Ok(Some(if add {
                ToolChange::Add(name)
            } else {
                ToolChange::Remove(name)
            }))
        }
        "tool_definition" if add => {
            let at = format!("{at}.definition");
            let definition = tool.remove("definition").unwrap_or(Value::Null);
            let definition: WireTool = serde_json::from_value(definition)
                .map_err(|e| bad(&at, clip(&e.to_string(), 4 * ECHO_BYTES)))?;
            Ok(Some(ToolChange::Define(super::tool(
                definition, &at, ignored,
            )?)))
        }
        "mcp_tool_reference" | "mcp_toolset_reference" => Err(bad(
            &format!("{at}.type"),
            "MCP tools are not supported by this gateway",
        )),
        _ if ignored.beta() => {
            ignored.anthropic_only(format!("{at}.type"));
            Ok(None)
        }
        other => Err(bad(
            &format!("{at}.type"),
            format!(
                "{:?} is not one of tool_reference, tool_definition",
                clip(other, ECHO_BYTES)
            ),
        )),
    }
}

/// The tool set in force after `changes`, starting from the request's `tools`.
pub(super) fn apply(mut tools: Vec<Tool>, changes: Vec<ToolChange>) -> Vec<Tool> {
    if changes.is_empty() {
        return tools;
    }
    // every definition seen, for a reference that brings a removed tool back
    let mut known = tools.clone();
    for change in changes {
        match change {
            ToolChange::Define(t) => {
                known.retain(|k| k.name != t.name);
                tools.retain(|k| k.name != t.name);
                known.push(t.clone());
                tools.push(t);
            }
            ToolChange::Add(name) => {
                let offered = tools.iter().any(|t| t.name == name);
                if let Some(t) = known.iter().find(|t| t.name == name).filter(|_| !offered) {
                    tools.push(t.clone());
                }
            }
            ToolChange::Remove(name) => tools.retain(|t| t.name != name),
        }
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn named(name: &str) -> Tool {
        Tool {
            name: name.to_owned(),
            description: None,
            parameters: json!({"type": "object"}),
            cache_control: None,
        }
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn the_set_in_force_at_the_end_is_what_the_model_may_call() {
        let changes = vec![
            ToolChange::Remove("read".into()),
            ToolChange::Define(named("grep")),
            ToolChange::Add("nowhere".into()),
            ToolChange::Add("read".into()),
            ToolChange::Remove("write".into()),
        ];
        let tools = apply(vec![named("read"), named("write")], changes);
        assert_eq!(names(&tools), ["grep", "read"]);
        let again = apply(
            vec![named("read")],
            vec![
                ToolChange::Add("read".into()),
                ToolChange::Define(named("read")),
            ],
        );
        assert_eq!(names(&again), ["read"], "no tool twice");
    }

    #[test]
    fn references_are_read_and_foreign_ones_refused_or_kept_for_anthropic() {
        let mut ignored = Ignored::new(false);
        let add = change(
            json!({"type": "tool_reference", "name": "read"}),
            true,
            "messages.1.content.0",
            &mut ignored,
        )
        .unwrap();
        assert!(matches!(add, Some(ToolChange::Add(n)) if n == "read"));
        let defined = change(
            json!({"type": "tool_definition", "definition":
                {"name": "grep", "input_schema": {"type": "object"}, "strict": true}}),
            true,
            "messages.1.content.0",
            &mut ignored,
        )
        .unwrap();
        assert!(matches!(defined, Some(ToolChange::Define(t)) if t.name == "grep"));
        let refused = |tool: Value, ignored: &mut Ignored| {
            change(tool, true, "messages.1.content.0", ignored)
                .unwrap_err()
                .message
        };
        let mcp = json!({"type": "mcp_toolset_reference", "server_name": "s"});
        assert_eq!(
            refused(mcp, &mut ignored),
            "messages.1.content.0.tool.type: MCP tools are not supported by this gateway"
        );
        let server = json!({"type": "tool_definition", "definition":
            {"type": "web_search_20250305", "name": "web_search"}});
        assert!(refused(server, &mut ignored)
            .starts_with("messages.1.content.0.tool.definition.type: server tool"));
        let later = json!({"type": "tool_pattern", "glob": "mcp__*"});
        assert!(refused(later.clone(), &mut ignored).starts_with("messages.1.content.0.tool.type:"));
        let mut beta = Ignored::new(true);
        assert!(change(later, true, "messages.1.content.0", &mut beta)
            .unwrap()
            .is_none());
        assert_eq!(
            beta.into_parts().1,
            ["messages.1.content.0.tool.type".to_owned()]
        );
        let mut many = Ignored::new(true);
        for i in 0..1000 {
            let at = format!("messages.{i}.content.0");
            change(json!({"type": "tool_pattern"}), true, &at, &mut many).unwrap();
        }
        assert_eq!(many.into_parts().1.len(), 8, "bounded");
    }
}
