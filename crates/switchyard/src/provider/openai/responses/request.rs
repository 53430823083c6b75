//! Responses request bodies from the shared shape: `instructions`, `input` items (messages
//! with text and image parts, `function_call`, `function_call_output`), function tools,
//! the tool choice and `text.format`. Does not send anything.

use serde_json::{json, Map, Value};

use crate::chat::{
    ChatRequest, ContentPart, Field, ImageSource, Message, ResponseFormat, Role, Support, Tool,
    ToolChoice,
};
use crate::error::{ErrorKind, ProviderError};

/// What the Responses API takes of the shared request (`docs/fields.md`): no stop
/// sequences, seed, penalties, `top_k`, `logit_bias`, `prediction`, audio, web search
/// options or `functions` exist there (nor `n`: the provider makes `n` calls); `logprobs`
/// is the `include` entry `message.output_text.logprobs`, read back from the
/// `output_text` parts and the text deltas; `verbosity` is `text.verbosity`. A route's
/// passthrough fields are Chat Completions fields: not for this API.
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::Stop
        | Field::Seed
        | Field::PresencePenalty
        | Field::FrequencyPenalty
        | Field::TopK
        | Field::Passthrough
        | Field::LogitBias
        | Field::Prediction
        | Field::Audio
        | Field::Modalities
        | Field::WebSearchOptions
        | Field::Functions => Support::Unsupported,
        Field::Logprobs | Field::Verbosity => Support::Translated,
        // no `n`: `n` answers are `n` calls (`provider/fanout.rs`)
        Field::N => Support::Translated,
        // OpenAI caches prompts by itself: a breakpoint has no place there; the gateway
        // keeps conversations itself (`store: false`), and Chat Completions' `store` (keep
        // the completion for evals) is no Responses setting
        Field::CacheControl | Field::Store => Support::Ignored,
        _ => Support::Native,
    }
}

/// The `include` entry asking for the output text's log probabilities.
const LOGPROBS_INCLUDE: &str = "message.output_text.logprobs";

/// The JSON body of a Responses call for `req` (`store: false`: the gateway keeps
/// conversations itself).
///
/// # Errors
/// `BadRequest` for stop sequences (the Responses API has none) or a tool result without
/// a call id.
pub(super) fn body(req: &ChatRequest, model: &str, stream: bool) -> Result<Vec<u8>, ProviderError> {
    if !req.stop.is_empty() {
        return Err(bad_request(
            "stop sequences cannot be sent to the Responses API (it has no `stop`)",
        ));
    }
    let lead = req
        .messages
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    if lead > 0 {
        let instructions: Vec<String> = req.messages[..lead]
            .iter()
            .map(Message::joined_text)
            .collect();
        body.insert("instructions".into(), instructions.join("\n\n").into());
    }
    body.insert("input".into(), input_items(&req.messages[lead..])?.into());
    if let Some(n) = req.max_tokens {
        body.insert("max_output_tokens".into(), n.into());
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            req.tools.iter().map(function_tool).collect(),
        );
    }
    if let Some(choice) = &req.tool_choice {
        body.insert("tool_choice".into(), tool_choice(choice));
    }
    let mut text = Map::new();
    if let Some(format) = &req.response_format {
        text.insert("format".into(), text_format(format));
    }
    if let Some(v) = req.verbosity {
        text.insert("verbosity".into(), v.as_str().into());
    }
    if !text.is_empty() {
        body.insert("text".into(), text.into());
    }
    let ids = [
        ("prompt_cache_key", &req.prompt_cache_key),
        ("prompt_cache_retention", &req.prompt_cache_retention),
        ("safety_identifier", &req.safety_identifier),
    ];
    for (name, value) in ids {
        if let Some(v) = value {
            body.insert(name.into(), v.clone().into());
        }
    }
    if let Some(user) = &req.user {
        body.insert("user".into(), user.clone().into());
    }
    if let Some(parallel) = req.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), parallel.into());
    }
    if let Some(tier) = &req.service_tier {
        body.insert("service_tier".into(), tier.clone().into());
    }
    if let Some(effort) = req.reasoning_effort {
        body.insert("reasoning".into(), json!({ "effort": effort.as_str() }));
    }
    if let Some(metadata) = &req.metadata {
        body.insert("metadata".into(), json!(metadata));
    }
    if req.logprobs {
        body.insert("include".into(), json!([LOGPROBS_INCLUDE]));
        if let Some(n) = req.top_logprobs {
            body.insert("top_logprobs".into(), n.into());
        }
    }
    body.insert("store".into(), false.into());
    body.insert("stream".into(), stream.into());
    crate::provider::encode_body(&body)
}

/// Messages as Responses `input` items, in order: text and image messages, an assistant's
/// calls as `function_call` items after its text, tool results as `function_call_output`.
/// System messages stay `system` messages.
///
/// # Errors
/// `BadRequest` for a tool message without a call id.
pub fn input_items(messages: &[Message]) -> Result<Vec<Value>, ProviderError> {
    let mut items = Vec::with_capacity(messages.len());
    for m in messages {
        match m.role {
            Role::System | Role::Developer | Role::User => items.push(json!({
                "type": "message",
                "role": match m.role {
                    Role::System => "system",
                    Role::Developer => "developer",
                    _ => "user",
                },
                "content": content(m),
            })),
            Role::Assistant => {
                let text = m.joined_text();
                if !text.is_empty() || m.tool_calls.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant", "content": text}));
                }
                for c in &m.tool_calls {
                    items.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments,
                    }));
                }
            }
            Role::Tool => {
                let call_id = m
                    .tool_call_id
                    .as_deref()
                    .ok_or_else(|| bad_request("tool message without tool_call_id"))?;
                items.push(json!({
                    "type": "function_call_output",
                    "call_id": call_id,
                    "output": content(m),
                }));
            }
        }
    }
    Ok(items)
}

/// Text alone as a string; text and images as `input_text` / `input_image` parts.
fn content(m: &Message) -> Value {
    let has_image = m
        .content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image {
        return m.joined_text().into();
    }
    m.content
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
            ContentPart::Image { source, detail } => json!({
                "type": "input_image",
                "image_url": match source {
                    ImageSource::Url { url } => url.clone(),
                    ImageSource::Base64 { media_type, data } => {
                        format!("data:{media_type};base64,{data}")
                    }
                },
                "detail": detail.as_deref().unwrap_or("auto"),
            }),
        })
        .collect()
}

fn function_tool(t: &Tool) -> Value {
    let mut tool = json!({
        "type": "function",
        "name": t.name,
        "parameters": t.parameters,
        "strict": false,
    });
    if let Some(d) = &t.description {
        tool["description"] = d.clone().into();
    }
    tool
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

fn text_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut f = json!({"type": "json_schema", "name": name, "schema": schema});
            if let Some(strict) = strict {
                f["strict"] = json!(strict);
            }
            f
        }
    }
}

fn bad_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ErrorKind::BadRequest, message)
}
