//! `GET /v1/responses/{id}/input_items` (the openai SDK's `responses.input_items.list`):
//! the items a stored response was generated from — with `previous_response_id`, the
//! whole conversation before it (earlier inputs and answers), as OpenAI lists them — in
//! OpenAI's list object (`object: "list"`, `data`, `first_id`, `last_id`, `has_more`).
//!
//! Paged by `limit` (1-100, default 20), `order` (`desc`, OpenAI's default, newest
//! first; or `asc`) and `after` (an item id of the previous page); `include` takes
//! OpenAI's includable values: `message.input_image.image_url` puts image URLs in
//! `input_image` parts (left `null` otherwise), `reasoning.encrypted_content` puts the
//! sealed reasoning in reasoning items; the others name output the gateway does not keep
//! and change nothing. Items are built from the stored conversation (messages, reasoning,
//! function calls and their outputs; a built-in tool's items are not kept there and are
//! not listed), each with an id made of the response's id and its position, so the same
//! item has the same id on every page and every replica.

use serde_json::{json, Value};
use switchyard::chat::{ContentPart, ImageSource, Message, Role};

use super::super::body::{Item, Logprobs, Part};
use super::super::sealed;
use crate::http::bounds::{clip, ECHO_BYTES};
use crate::http::error::ApiError;
use crate::http::paging;

/// OpenAI's default page size.
const DEFAULT_LIMIT: usize = 20;
/// OpenAI's largest page.
const MAX_LIMIT: usize = 100;
/// What `include` may name (OpenAI's `ResponseIncludable`).
const INCLUDABLE: [&str; 8] = [
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
];

/// The page a request asks for.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Page {
    limit: usize,
    ascending: bool,
    after: Option<String>,
    image_urls: bool,
    sealed_reasoning: bool,
}

impl Page {
    /// The query's parameters; a 400 naming a bad or unknown one.
    pub(super) fn parse(query: &str) -> Result<Self, ApiError> {
        let mut page = Self {
            limit: DEFAULT_LIMIT,
            ..Self::default()
        };
        for param in paging::params(query) {
            let (key, value) = param?;
            match &*key {
                "limit" => page.limit = paging::limit(&value, MAX_LIMIT)?,
                "order" => page.ascending = ascending(&value)?,
                "after" => page.after = Some(value.into_owned()),
                "include" | "include[]" => page.include(&value)?,
                other => {
                    return Err(ApiError::bad_request(
                        Some(clip(other, ECHO_BYTES).into_owned()),
                        format!("Unknown parameter: '{}'.", clip(other, ECHO_BYTES)),
                    )
                    .code("unknown_parameter"))
                }
            }
        }
        Ok(page)
    }

    /// One `include` value: OpenAI's, or a 400.
    fn include(&mut self, value: &str) -> Result<(), ApiError> {
        match value {
            "message.input_image.image_url" => self.image_urls = true,
            "reasoning.encrypted_content" => self.sealed_reasoning = true,
            v if INCLUDABLE.contains(&v) => {}
            other => {
                return Err(bad(
                    "include",
                    format!(
                        "`{}` is not one of {}",
                        clip(other, ECHO_BYTES),
                        INCLUDABLE.join(", ")
                    ),
                ))
            }
        }
        Ok(())
    }

    /// The list object of this page of `conversation`'s items (`id` is the response's).
    pub(super) fn list(&self, id: &str, conversation: &[Message]) -> Result<Value, ApiError> {
        let mut all = items(id, conversation, self);
        if !self.ascending {
            all.reverse();
        }
        let start = match &self.after {
            None => 0,
            Some(after) => {
                let at = all.iter().position(|item| item["id"] == after.as_str());
                at.ok_or_else(|| {
                    bad(
                        "after",
                        format!("no input item with id '{}'", clip(after, ECHO_BYTES)),
                    )
                })? + 1
            }
        };
        let end = (start + self.limit).min(all.len());
        let has_more = end < all.len();
        let data: Vec<Value> = all.drain(start..end).collect();
        Ok(json!({
            "object": "list",
            "first_id": data.first().map(|i| i["id"].clone()),
            "last_id": data.last().map(|i| i["id"].clone()),
            "has_more": has_more,
            "data": data,
        }))
    }
}

/// `order`: `asc` (true) or `desc`.
fn ascending(value: &str) -> Result<bool, ApiError> {
    match value {
        "asc" => Ok(true),
        "desc" => Ok(false),
        other => Err(bad(
            "order",
            format!("`{}` is not asc or desc", clip(other, ECHO_BYTES)),
        )),
    }
}

fn bad(param: &str, message: String) -> ApiError {
    ApiError::bad_request(Some(param.to_owned()), message)
}

/// The conversation as Responses items, oldest first, each with its id (`{kind}_{the
/// response id's suffix}_{position}`).
fn items(id: &str, conversation: &[Message], page: &Page) -> Vec<Value> {
    let suffix = id.trim_start_matches("resp_");
    let mut out: Vec<Value> = Vec::new();
    for m in conversation {
        let new = match m.role {
            Role::Tool => vec![json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id,
                "output": m.joined_text(),
                "status": "completed",
            })],
            Role::Assistant => answer_items(m, page),
            Role::User | Role::System | Role::Developer => vec![input_message(m, page)],
        };
        for mut item in new {
            let kind = match item["type"].as_str() {
                Some("function_call_output") => "fco",
                Some("function_call") => "fc",
                Some("reasoning") => "rs",
                _ => "msg",
            };
            item["id"] = json!(format!("{kind}_{suffix}_{}", out.len()));
            out.push(item);
        }
    }
    out
}

/// An assistant turn's items: its reasoning (sealed when included), its text, its
/// function calls (ids filled in by the caller).
fn answer_items(m: &Message, page: &Page) -> Vec<Value> {
    let mut out = Vec::new();
    for block in &m.thinking {
        let mut item = json!({"type": "reasoning", "summary": [], "status": "completed"});
        if page.sealed_reasoning {
            item["encrypted_content"] = json!(sealed::seal(std::slice::from_ref(block)));
        }
        out.push(item);
    }
    let text = m.joined_text();
    if !text.is_empty() || m.tool_calls.is_empty() {
        let parts = vec![Part::text(&text, Logprobs::List(&[]))];
        out.push(json!(Item::message("", parts, "completed")));
    }
    for call in &m.tool_calls {
        let item = Item::call("", &call.id, &call.name, &call.arguments, "completed");
        out.push(json!(item));
    }
    out
}

/// A user, system or developer message item.
fn input_message(m: &Message, page: &Page) -> Value {
    let role = match m.role {
        Role::System => "system",
        Role::Developer => "developer",
        _ => "user",
    };
    let content: Vec<Value> = m.content.iter().map(|p| input_part(p, page)).collect();
    json!({"type": "message", "role": role, "status": "completed", "content": content})
}

/// An input content part: `input_text`, or `input_image` (its URL only when included).
fn input_part(part: &ContentPart, page: &Page) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
        ContentPart::Image { source, detail } => {
            let url = page.image_urls.then(|| match source {
                ImageSource::Url { url } => url.clone(),
                ImageSource::Base64 { media_type, data } => {
                    format!("data:{media_type};base64,{data}")
                }
            });
            json!({"type": "input_image", "image_url": url, "file_id": null,
                "detail": detail.as_deref().unwrap_or("auto")})
        }
    }
}

#[cfg(test)]
mod tests {
    use switchyard::chat::{Thinking, ToolCall};

    use super::*;

    fn conversation() -> Vec<Message> {
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: "{\"city\":\"Paris\"}".into(),
        }];
        call.thinking = vec![Thinking {
            text: "look it up".into(),
            ..Thinking::default()
        }];
        let mut image = Message::user("and this?");
        image.content.push(ContentPart::Image {
            source: ImageSource::Url {
                url: "https://example.com/a.png".into(),
            },
            detail: None,
        });
        vec![
            Message::text(Role::Developer, "be brief"),
            Message::user("weather in Paris?"),
            call,
            Message::tool_result("call_1", "get_weather", "sunny"),
            Message::assistant("It is sunny."),
            image,
        ]
    }

    fn page(query: &str) -> Page {
        Page::parse(query).unwrap()
    }

    #[test]
    fn items_are_listed_newest_first_with_stable_ids() {
        let list = page("").list("resp_abc", &conversation()).unwrap();
        assert_eq!(list["object"], "list");
        assert_eq!(list["has_more"], false);
        let data = list["data"].as_array().unwrap();
        let kinds: Vec<&str> = data.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message",
                "message",
                "function_call_output",
                "function_call",
                "reasoning",
                "message",
                "message"
            ]
        );
        assert_eq!(
            data[0]["content"][0],
            json!({"type": "input_text", "text": "and this?"})
        );
        assert_eq!(
            data[0]["content"][1]["image_url"],
            Value::Null,
            "not included"
        );
        assert_eq!(data[1]["content"][0]["text"], "It is sunny.");
        assert_eq!(data[2]["call_id"], "call_1");
        assert_eq!(data[2]["output"], "sunny");
        assert_eq!(data[3]["name"], "get_weather");
        assert!(data[4].get("encrypted_content").is_none());
        assert_eq!(data[6]["role"], "developer");
        assert_eq!(list["first_id"], data[0]["id"]);
        assert_eq!(list["last_id"], data[6]["id"]);
        assert_eq!(data[6]["id"], "msg_abc_0");
        let again = page("").list("resp_abc", &conversation()).unwrap();
        assert_eq!(list, again);
    }

    #[test]
    fn pages_follow_after_in_either_order() {
        let c = conversation();
        let first = page("limit=3&order=asc").list("resp_x", &c).unwrap();
        assert_eq!(first["data"].as_array().unwrap().len(), 3);
        assert_eq!(first["has_more"], true);
        let after = first["last_id"].as_str().unwrap();
        let second = page(&format!("limit=3&order=asc&after={after}"))
            .list("resp_x", &c)
            .unwrap();
        let third_after = second["last_id"].as_str().unwrap();
        let third = page(&format!("limit=3&order=asc&after={third_after}"))
            .list("resp_x", &c)
            .unwrap();
        assert_eq!(third["data"].as_array().unwrap().len(), 1);
        assert_eq!(third["has_more"], false);
        let mut ids: Vec<Value> = [first, second, third]
            .iter()
            .flat_map(|p| {
                p["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["id"].clone())
            })
            .collect();
        let all = page("limit=100&order=desc").list("resp_x", &c).unwrap();
        ids.reverse();
        let desc: Vec<Value> = all["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].clone())
            .collect();
        assert_eq!(ids, desc);
    }

    #[test]
    fn include_adds_image_urls_and_sealed_reasoning() {
        let list = page("include[]=message.input_image.image_url&include=reasoning.encrypted_content&include[]=message.output_text.logprobs")
            .list("resp_x", &conversation())
            .unwrap();
        assert_eq!(
            list["data"][0]["content"][1]["image_url"],
            "https://example.com/a.png"
        );
        assert!(list["data"][4]["encrypted_content"].is_string());
    }

    #[test]
    fn bad_parameters_are_400_naming_them() {
        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("order=up", "order"),
            ("include=everything", "include"),
            ("before=msg_1", "before"),
        ] {
            let err = Page::parse(query).unwrap_err();
            assert_eq!(err.param.as_deref(), Some(param), "{query}");
            assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST);
        }
        let err = page("after=nope")
            .list("resp_x", &conversation())
            .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("after"));
        let many = "limit=5&".repeat(40);
        assert!(Page::parse(&many).is_err());
    }
}
