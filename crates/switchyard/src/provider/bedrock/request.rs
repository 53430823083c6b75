//! The shared shape as a Converse request body: system blocks, alternating turns of content
//! blocks (text, images as base64 bytes or S3 locations, tool uses and results, signed
//! reasoning), `inferenceConfig`, `toolConfig`, `requestMetadata` and
//! `additionalModelRequestFields`. Pure functions; the codec's `encode` calls [`body`].
//!
//! Rules (Bedrock's Converse API reference, `Message`, `ContentBlock`, `ToolConfiguration`):
//! - system and developer messages become `system` text blocks, in order;
//! - a conversation alternates `user` and `assistant`: adjacent turns of one role are
//!   merged; tool results are `toolResult` blocks of a user turn (`toolUseId`, `content`:
//!   the text, or the JSON when the text is a JSON object or array);
//! - images: base64 bytes (`png`, `jpeg`, `gif`, `webp`), a `data:` URL's bytes, or an
//!   `s3://` URL as an `s3Location`; any other URL is refused (Bedrock fetches no URLs);
//! - `tool_choice`: `auto` → `{"auto":{}}`, `required` → `{"any":{}}`, a named tool →
//!   `{"tool":{"name"}}`; `none` sends no `toolConfig`, which Bedrock refuses when the
//!   history holds tool blocks, so that case is refused here with a clear message;
//! - `metadata` and `user` go in `requestMetadata` (string values; others as JSON text);
//! - fields the gateway does not model (a route's `passthrough_unknown`) go in
//!   `additionalModelRequestFields`, the model's own parameters;
//! - `reasoning_effort`, for Claude models only (a model id holding `anthropic.claude`), is
//!   `additionalModelRequestFields.thinking`, as on Anthropic's API: `none` disabled, else a
//!   budget of 1024 / 2048 / 8192 / 24576 tokens (minimal / low / medium / high) cut to one
//!   below `maxTokens`, which is then always sent (4096 when the request sets none). Other
//!   models take no common reasoning field: the request is refused (a provider whose model
//!   does not reason is marked so in the price table, or by `reasoning = false`, and never
//!   gets the field).

use serde_json::{json, Map, Value};

use crate::chat::{
    ChatRequest, ContentPart, Field, ImageSource, Message, ReasoningEffort, Role, Support,
    ToolCall, ToolChoice,
};
use crate::error::{ErrorKind, ProviderError};

/// How Bedrock's Converse carries each field (the Bedrock column of `docs/fields.md`).
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Temperature | Field::TopP => Support::Native,
        // Claude's `thinking` in `additionalModelRequestFields` (see the module docs)
        Field::ReasoningEffort => Support::Translated,
        // `stopSequences`, `toolSpec`, `toolChoice` `any`, `requestMetadata`, `system`,
        // `additionalModelRequestFields`: the same things under Converse's shapes
        Field::Stop
        | Field::Tools
        | Field::ToolChoice
        | Field::Metadata
        | Field::User
        | Field::DeveloperRole
        | Field::Passthrough => Support::Translated,
        // Converse has no service tier field this codec sends
        Field::ServiceTier => Support::Ignored,
        // Converse's `cachePoint` blocks are not sent yet: the answer is the same, the
        // prompt is billed uncached (named in `x-switchyard-ignored`)
        Field::CacheControl => Support::Ignored,
        // model-specific (through `additionalModelRequestFields`, in each model family's
        // own names) or absent from Converse: not honoured for every model, so refused
        Field::ResponseFormat
        | Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::Logprobs
        | Field::TopLogprobs
        | Field::N
        | Field::TopK
        | Field::ParallelToolCalls => Support::Unsupported,
    }
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}

/// Claude's smallest thinking budget.
const MIN_THINKING_BUDGET: u32 = 1024;

/// `maxTokens` sent with thinking when the request sets none (Anthropic's default).
const THINKING_MAX_TOKENS: u32 = crate::provider::anthropic::DEFAULT_MAX_TOKENS;

/// `reasoning_effort` as Claude's `thinking`, and the `maxTokens` it needs sent.
fn thinking(req: &ChatRequest, model: &str) -> Result<Option<(Value, u32)>, ProviderError> {
    let Some(effort) = req.reasoning_effort else {
        return Ok(None);
    };
    if !model.contains("anthropic.claude") {
        return Err(bad_request(format!(
            "reasoning_effort: on Bedrock only Claude models take it (as \
             additionalModelRequestFields.thinking), not {model:?}; set reasoning = false \
             on this provider"
        )));
    }
    let max_tokens = req.max_tokens.unwrap_or(THINKING_MAX_TOKENS);
    let budget = match effort {
        ReasoningEffort::None => return Ok(Some((json!({"type": "disabled"}), max_tokens))),
        ReasoningEffort::Minimal => MIN_THINKING_BUDGET,
        ReasoningEffort::Low => 2048,
        ReasoningEffort::Medium => 8192,
        ReasoningEffort::High => 24576,
    };
    let budget = budget.min(max_tokens.saturating_sub(1));
    if budget < MIN_THINKING_BUDGET {
        return Err(bad_request(format!(
            "reasoning_effort needs max_tokens above {MIN_THINKING_BUDGET} on Claude \
             (thinking counts in max_tokens), got {max_tokens}"
        )));
    }
    Ok(Some((
        json!({"type": "enabled", "budget_tokens": budget}),
        max_tokens,
    )))
}

/// The Converse body for `req` (the same for Converse and ConverseStream) to `model`.
pub(super) fn body(req: &ChatRequest, model: &str) -> Result<Value, ProviderError> {
    let thinking = thinking(req, model)?;
    let mut body = Map::new();
    let system: Vec<Value> = req
        .messages
        .iter()
        .filter(|m| m.is_instructions())
        .map(|m| {
            if m.content
                .iter()
                .any(|p| matches!(p, ContentPart::Image { .. }))
            {
                return Err(bad_request("Bedrock takes no images in a system prompt"));
            }
            Ok(m.joined_text())
        })
        .filter(|t| !matches!(t, Ok(t) if t.is_empty()))
        .map(|t| t.map(|text| json!({ "text": text })))
        .collect::<Result<_, _>>()?;
    let messages = turns(&req.messages)?;
    if messages.is_empty() {
        return Err(bad_request("the request has no user or assistant messages"));
    }
    let has_tool_blocks = messages.iter().any(|m| {
        m["content"].as_array().is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some())
        })
    });
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(max) = thinking.as_ref().map(|(_, max)| *max).or(req.max_tokens) {
        inference.insert("maxTokens".into(), max.into());
    }
    if let Some(t) = req.temperature {
        inference.insert("temperature".into(), f64::from(t).into());
    }
    if let Some(p) = req.top_p {
        inference.insert("topP".into(), f64::from(p).into());
    }
    if !req.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(req.stop));
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    if let Some(config) = tool_config(req, has_tool_blocks)? {
        body.insert("toolConfig".into(), config);
    }
    if let Some(metadata) = request_metadata(req) {
        body.insert("requestMetadata".into(), metadata);
    }
    let mut extra = req.passthrough.as_deref().cloned().unwrap_or_default();
    if let Some((thinking, _)) = thinking {
        extra.insert("thinking".into(), thinking);
    }
    if !extra.is_empty() {
        body.insert("additionalModelRequestFields".into(), Value::Object(extra));
    }
    Ok(Value::Object(body))
}

/// `toolConfig`: the tools and the choice (see the module docs for `none`).
fn tool_config(req: &ChatRequest, has_tool_blocks: bool) -> Result<Option<Value>, ProviderError> {
    if req.tools.is_empty() {
        if has_tool_blocks {
            return Err(bad_request(
                "the conversation holds tool calls or results but the request declares no \
                 tools: Bedrock requires the tools (toolConfig) whenever they are in the history",
            ));
        }
        return Ok(None);
    }
    let choice = match &req.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool(name)) => Some(json!({"tool": {"name": name}})),
        Some(ToolChoice::None) if has_tool_blocks => {
            return Err(bad_request(
                "tool_choice \"none\": Bedrock's Converse has no such choice, and a \
                 conversation holding tool calls cannot be sent without its tools",
            ))
        }
        Some(ToolChoice::None) => return Ok(None),
    };
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| {
            let mut spec = Map::new();
            spec.insert("name".into(), t.name.clone().into());
            if let Some(d) = t.description.as_deref().filter(|d| !d.is_empty()) {
                spec.insert("description".into(), d.into());
            }
            let schema = if t.parameters.is_null() {
                json!({"type": "object", "properties": {}})
            } else {
                t.parameters.clone()
            };
            spec.insert("inputSchema".into(), json!({ "json": schema }));
            json!({ "toolSpec": spec })
        })
        .collect();
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    if let Some(choice) = choice {
        config.insert("toolChoice".into(), choice);
    }
    Ok(Some(Value::Object(config)))
}

/// `requestMetadata`: the request's metadata and its `user`, as strings.
fn request_metadata(req: &ChatRequest) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in req.metadata.iter().flatten() {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.insert(k.clone(), Value::String(text));
    }
    if let Some(user) = &req.user {
        out.entry("user")
            .or_insert_with(|| Value::String(user.clone()));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// The conversation as alternating turns (system messages excluded).
fn turns(messages: &[Message]) -> Result<Vec<Value>, ProviderError> {
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System | Role::Developer => continue,
            Role::User => ("user", user_blocks(m)?),
            Role::Tool => ("user", vec![tool_result(m)?]),
            Role::Assistant => ("assistant", assistant_blocks(m)?),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    Ok(out
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect())
}

fn user_blocks(m: &Message) -> Result<Vec<Value>, ProviderError> {
    m.content
        .iter()
        .filter(|p| !matches!(p, ContentPart::Text { text } if text.is_empty()))
        .map(|p| match p {
            ContentPart::Text { text } => Ok(json!({ "text": text })),
            ContentPart::Image { source, .. } => image(source),
        })
        .collect()
}

fn assistant_blocks(m: &Message) -> Result<Vec<Value>, ProviderError> {
    if m.content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }))
    {
        return Err(bad_request("Bedrock takes no images in assistant messages"));
    }
    let text = m.joined_text();
    let mut blocks = Vec::new();
    if !text.is_empty() || !m.tool_calls.is_empty() {
        // signed reasoning goes back with the answer it came with; unsigned reasoning
        // (another vendor's) would be refused, and is left out
        for t in &m.thinking {
            match (&t.redacted, &t.signature) {
                (Some(data), _) => {
                    blocks.push(json!({"reasoningContent": {"redactedContent": data}}));
                }
                (None, Some(signature)) => blocks.push(json!({"reasoningContent": {
                    "reasoningText": {"text": t.text, "signature": signature}
                }})),
                (None, None) => {}
            }
        }
    }
    if !text.is_empty() {
        blocks.push(json!({ "text": text }));
    }
    for call in &m.tool_calls {
        blocks.push(json!({"toolUse": {
            "toolUseId": call.id,
            "name": call.name,
            "input": tool_input(call)?,
        }}));
    }
    Ok(blocks)
}

/// A tool call's arguments as the `input` object Converse requires.
fn tool_input(call: &ToolCall) -> Result<Value, ProviderError> {
    if call.arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(input @ Value::Object(_)) => Ok(input),
        Ok(_) => Err(bad_request(format!(
            "tool call {:?} ({}): arguments are JSON but not an object",
            call.id, call.name
        ))),
        Err(e) => Err(bad_request(format!(
            "tool call {:?} ({}): arguments are not valid JSON: {e}",
            call.id, call.name
        ))),
    }
}

/// A tool message as a `toolResult` block: its JSON when the text is an object or array
/// (Converse's `json` content), else its text; images travel as image blocks.
fn tool_result(m: &Message) -> Result<Value, ProviderError> {
    let id = m
        .tool_call_id
        .as_deref()
        .ok_or_else(|| bad_request("tool message without tool_call_id"))?;
    let mut content = Vec::new();
    for part in &m.content {
        match part {
            ContentPart::Text { text } if text.is_empty() => {}
            ContentPart::Text { text } => match serde_json::from_str::<Value>(text) {
                Ok(v @ Value::Object(_)) => content.push(json!({ "json": v })),
                _ => content.push(json!({ "text": text })),
            },
            ContentPart::Image { source, .. } => content.push(image(source)?),
        }
    }
    if content.is_empty() {
        content.push(json!({"text": ""}));
    }
    Ok(json!({"toolResult": {"toolUseId": id, "content": content}}))
}

/// An image block: base64 bytes (a `data:` URL's too) or an S3 location.
fn image(source: &ImageSource) -> Result<Value, ProviderError> {
    let (media_type, data) = match source {
        ImageSource::Base64 { media_type, data } => (media_type.as_str(), data.as_str()),
        ImageSource::Url { url } if url.starts_with("s3://") => {
            let format = format_of_path(url)?;
            return Ok(json!({"image": {
                "format": format,
                "source": {"s3Location": {"uri": url}},
            }}));
        }
        ImageSource::Url { url } => match parse_data_url(url) {
            Some(parts) => parts,
            None => {
                return Err(bad_request(
                    "Bedrock takes images as bytes (base64 or a data: URL) or s3:// URLs, \
                     not web URLs",
                ))
            }
        },
    };
    let format = match media_type.to_ascii_lowercase().as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(bad_request(format!(
                "image media type {other:?}: Bedrock takes png, jpeg, gif or webp"
            )))
        }
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

/// `data:image/png;base64,AAAA` as (`image/png`, `AAAA`).
fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// The image format an S3 object's extension names.
fn format_of_path(url: &str) -> Result<&'static str, ProviderError> {
    let ext = url.rsplit('.').next().unwrap_or_default();
    match ext.to_ascii_lowercase().as_str() {
        "png" => Ok("png"),
        "jpg" | "jpeg" => Ok("jpeg"),
        "gif" => Ok("gif"),
        "webp" => Ok("webp"),
        _ => Err(bad_request(format!(
            "image {url:?}: the S3 object's extension must name its format (png, jpeg, gif, webp)"
        ))),
    }
}
