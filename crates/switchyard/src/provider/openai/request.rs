//! Chat Completions request bodies: the shared shape's messages, tools, tool choice and
//! response format as OpenAI's wire types. Does not send anything.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::{wire, Quirks, ToolCallIds};
use crate::chat::{
    ChatRequest, ContentPart, Field, ImageSource, Message, ReasoningEffort, ResponseFormat, Role,
    Support, ToolChoice, Verbosity,
};
use crate::error::{ErrorKind, ProviderError};

/// The JSON body of a Chat Completions call for `req`.
///
/// # Errors
/// `BadRequest` when the request cannot be expressed (a tool result without a call id).
pub(super) fn body(
    req: &ChatRequest,
    model: &str,
    quirks: Quirks,
    stream: bool,
) -> Result<Vec<u8>, ProviderError> {
    let use_max_tokens = quirks.use_max_tokens;
    let messages = req
        .messages
        .iter()
        .map(|m| wire_message(m, quirks.tool_call_ids))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = req
        .tools
        .iter()
        .map(|t| wire::ToolDef {
            kind: "function",
            function: wire::FunctionDef {
                name: &t.name,
                description: t.description.as_deref(),
                parameters: &t.parameters,
            },
        })
        .collect();
    let body = wire::Request {
        model,
        messages,
        max_completion_tokens: req.max_tokens.filter(|_| !use_max_tokens),
        max_tokens: req.max_tokens.filter(|_| use_max_tokens),
        temperature: req.temperature,
        top_p: req.top_p,
        stop: &req.stop,
        tools,
        tool_choice: req.tool_choice.as_ref().map(wire_tool_choice),
        response_format: req.response_format.as_ref().map(wire_response_format),
        user: req.user.as_deref(),
        seed: req.seed,
        presence_penalty: req.presence_penalty,
        frequency_penalty: req.frequency_penalty,
        logprobs: req.logprobs,
        top_logprobs: req.top_logprobs,
        n: req.n.filter(|&n| n > 1),
        parallel_tool_calls: req.parallel_tool_calls,
        service_tier: req.service_tier.as_deref(),
        reasoning_effort: req.reasoning_effort.map(ReasoningEffort::as_str),
        metadata: req.metadata.as_ref(),
        logit_bias: req.logit_bias.as_ref(),
        verbosity: req.verbosity.map(Verbosity::as_str),
        prediction: req.prediction.as_ref(),
        store: req.store,
        prompt_cache_key: req.prompt_cache_key.as_deref(),
        prompt_cache_retention: req.prompt_cache_retention.as_deref(),
        safety_identifier: req.safety_identifier.as_deref(),
        audio: req.audio.as_ref(),
        modalities: &req.modalities,
        web_search_options: req.web_search_options.as_ref(),
        functions: req.functions.as_ref(),
        function_call: req.function_call.as_ref(),
        passthrough: req.passthrough.as_deref(),
        stream,
        stream_options: (stream && quirks.stream_usage).then_some(wire::StreamOptions {
            include_usage: true,
        }),
    };
    crate::provider::encode_body(&body)
}

/// One shared-shape message as a Chat Completions message.
fn wire_message(m: &Message, ids: ToolCallIds) -> Result<wire::Message<'_>, ProviderError> {
    let role = match m.role {
        Role::System => "system",
        Role::Developer => "developer",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let tool_call_id = match m.role {
        Role::Tool => Some(call_id(
            m.tool_call_id.as_deref().ok_or_else(|| {
                ProviderError::new(ErrorKind::BadRequest, "tool message without tool_call_id")
            })?,
            ids,
        )),
        _ => None,
    };
    let tool_calls: Vec<_> = m
        .tool_calls
        .iter()
        .map(|c| wire::ToolCallOut {
            id: call_id(&c.id, ids),
            kind: "function",
            function: wire::FunctionCallOut {
                name: &c.name,
                arguments: &c.arguments,
            },
        })
        .collect();
    let content = if m.role == Role::Assistant && m.content.is_empty() && !tool_calls.is_empty() {
        None
    } else {
        Some(wire_content(m))
    };
    Ok(wire::Message {
        role,
        content,
        tool_calls,
        tool_call_id,
    })
}

/// A tool-call id as `ids` wants it written.
fn call_id(id: &str, ids: ToolCallIds) -> Cow<'_, str> {
    match ids {
        ToolCallIds::AsIs => Cow::Borrowed(id),
        ToolCallIds::Alnum9 if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Cow::Borrowed(id)
        }
        ToolCallIds::Alnum9 => Cow::Owned(alnum9(id)),
    }
}

/// Nine base-62 digits of a 64-bit FNV-1a hash of `id`: stable across calls and
/// processes (the call and its result must map to the same id), 62^9 ≈ 1.3e16 values.
fn alnum9(id: &str) -> String {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (0..9)
        .map(|_| {
            let digit = DIGITS[(hash % 62) as usize];
            hash /= 62;
            char::from(digit)
        })
        .collect()
}

/// Plain text as a string (every compatible server takes it); parts when there are images
/// or several text parts. Only user messages carry images.
fn wire_content(m: &Message) -> wire::Content<'_> {
    let has_image = m
        .content
        .iter()
        .any(|p| matches!(p, ContentPart::Image { .. }));
    if !has_image || m.role != Role::User {
        return match m.content.as_slice() {
            [ContentPart::Text { text }] => wire::Content::Text(Cow::Borrowed(text)),
            _ => wire::Content::Text(Cow::Owned(m.joined_text())),
        };
    }
    let parts = m
        .content
        .iter()
        .map(|p| match p {
            ContentPart::Text { text } => wire::Part::Text { text },
            ContentPart::Image { source, detail } => wire::Part::ImageUrl {
                image_url: wire::ImageUrl {
                    url: match source {
                        ImageSource::Url { url } => Cow::Borrowed(url),
                        ImageSource::Base64 { media_type, data } => {
                            Cow::Owned(format!("data:{media_type};base64,{data}"))
                        }
                    },
                    detail: detail.as_deref(),
                },
            },
        })
        .collect();
    wire::Content::Parts(parts)
}

fn wire_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn wire_response_format(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => {
            let mut spec = json!({"name": name, "schema": schema});
            if let Some(strict) = strict {
                spec["strict"] = json!(strict);
            }
            json!({"type": "json_schema", "json_schema": spec})
        }
    }
}

/// How Chat Completions carries each field: every one natively (OpenAI's own fields —
/// `logit_bias`, `verbosity`, `prediction`, `store`, audio, web search, `functions` — as
/// the client wrote them) but `top_k`, which OpenAI's API does not define
/// (OpenAI-compatible servers that take it are reached with a route's
/// `passthrough_unknown`).
pub(super) fn support(field: Field) -> Support {
    match field {
        Field::TopK => Support::Unsupported,
        // OpenAI caches prompts by itself: a breakpoint has no place there
        Field::CacheControl => Support::Ignored,
        _ => Support::Native,
    }
}
