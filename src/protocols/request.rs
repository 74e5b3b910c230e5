//! Recorded request bodies → [`ModelRequest`]s: what the model actually received.
//!
//! Anthropic Messages (`messages[].content[]` blocks: `text`, `thinking`, `tool_use`,
//! `tool_result`), OpenAI Chat Completions (`messages[]` with `tool_calls` and `role: "tool"`) and
//! OpenAI Responses (`input[]` items: messages, `function_call`, `function_call_output`). Every
//! block keeps the span of its JSON in the file, through the body's [`Locator`].

use serde_json::Value;

use crate::json::scan::Seg;
use crate::protocols::capture::Locator;
use crate::request::{
    Block, BlockKind, ModelMessage, ModelRequest, Provider, RecordedResponse, Role,
};

/// The provider a request is for, from its URL, else from its shape.
pub fn provider_of(url: Option<&str>, body: &Value) -> Option<Provider> {
    if let Some(u) = url {
        if u.contains("anthropic") || u.trim_end_matches('/').ends_with("/messages") {
            return Some(Provider::Anthropic);
        }
        if u.contains("/chat/completions") || u.contains("/responses") {
            return Some(Provider::OpenAi);
        }
    }
    if body.get("input").is_some_and(Value::is_array) {
        return Some(Provider::OpenAi);
    }
    let messages = body.get("messages")?.as_array()?;
    let block_types = messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter_map(|b| b.get("type").and_then(Value::as_str));
    let mut anthropic = false;
    for t in block_types {
        if matches!(t, "tool_use" | "tool_result" | "thinking") {
            anthropic = true;
        }
    }
    let openai = messages.iter().any(|m| {
        m.get("tool_calls").is_some() || m.get("role").and_then(Value::as_str) == Some("tool")
    });
    if anthropic {
        Some(Provider::Anthropic)
    } else if openai || body.get("system").is_none() {
        Some(Provider::OpenAi)
    } else {
        Some(Provider::Anthropic)
    }
}

fn role(s: Option<&str>) -> Role {
    match s {
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some("system" | "developer") => Role::System,
        _ => Role::User,
    }
}

struct Spans<'a> {
    text: &'a str,
    locator: &'a Locator,
}

/// A value's byte range in the body; the whole body is `(0, len)`.
type Place = (usize, usize);

impl Spans<'_> {
    /// The body as a place, to start from.
    fn body(&self) -> Place {
        (0, self.text.len())
    }

    /// The span of the value at `path` inside the value at `from` (`None` when `from` is).
    fn at(&self, from: Option<&Place>, path: &[Seg<'_>]) -> Option<crate::source::Span> {
        crate::json::scan::locate_from(self.text, *from?, path)
            .map(|(s, e)| self.locator.span(s as u64, e as u64))
    }

    /// The places of the items of the array at `path` inside the value at `from`, found in one
    /// walk of the array (a path with each item's index would walk the items before it again,
    /// for every item).
    fn items(&self, from: Option<&Place>, path: &[Seg<'_>]) -> Vec<Place> {
        from.and_then(|&f| crate::json::scan::array_items_from(self.text, f, path))
            .unwrap_or_default()
    }
}

/// Parses a recorded request body. `None` when it is not a model request.
pub fn from_body(
    text: &str,
    locator: &Locator,
    url: Option<&str>,
    origin: String,
    response: Option<RecordedResponse>,
) -> Option<ModelRequest> {
    let body: Value = serde_json::from_str(text).ok()?;
    let provider = provider_of(url, &body)?;
    let sp = Spans { text, locator };
    let top = Some(sp.body());
    let mut messages = Vec::new();
    if let Some(items) = body.get("input").and_then(Value::as_array) {
        responses_input(items, &sp, &mut messages);
    } else {
        let list = body.get("messages")?.as_array()?;
        let places = sp.items(top.as_ref(), &[Seg::Key("messages")]);
        for (i, m) in list.iter().enumerate() {
            let r = role(m.get("role").and_then(Value::as_str));
            let mut content = Vec::new();
            let base = places.get(i);
            match m.get("content") {
                Some(Value::String(s)) if !s.is_empty() => {
                    let mut b = Block::new(BlockKind::Text);
                    b.span = sp.at(base, &[Seg::Key("content")]);
                    content.push(b);
                }
                Some(Value::Array(blocks)) => {
                    let blocks_at = sp.items(base, &[Seg::Key("content")]);
                    for (k, b) in blocks.iter().enumerate() {
                        let ty = b.get("type").and_then(Value::as_str).unwrap_or_default();
                        let str_of = |key: &str| {
                            b.get(key)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let kind = match ty {
                            "text" | "input_text" | "output_text" => BlockKind::Text,
                            "thinking" | "redacted_thinking" => BlockKind::Reasoning,
                            "tool_use" => BlockKind::ToolCall {
                                id: str_of("id"),
                                name: str_of("name"),
                            },
                            "tool_result" => BlockKind::ToolResult {
                                id: str_of("tool_use_id"),
                                is_error: b.get("is_error") == Some(&Value::Bool(true)),
                            },
                            other => BlockKind::Other(other.to_owned()),
                        };
                        let mut block = Block::new(kind);
                        block.span = sp.at(blocks_at.get(k), &[]);
                        content.push(block);
                    }
                }
                _ => {}
            }
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                let calls_at = sp.items(base, &[Seg::Key("tool_calls")]);
                for (k, c) in calls.iter().enumerate() {
                    let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
                    let name = c
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let mut block = Block::new(BlockKind::ToolCall {
                        id: id.to_owned(),
                        name: name.to_owned(),
                    });
                    block.span = sp.at(calls_at.get(k), &[]);
                    content.push(block);
                }
            }
            if r == Role::Tool {
                let id = m
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mut block = Block::new(BlockKind::ToolResult {
                    id: id.to_owned(),
                    is_error: false,
                });
                block.span = sp.at(base, &[Seg::Key("tool_call_id")]);
                content = vec![block];
            }
            messages.push(ModelMessage {
                role: r,
                content,
                span: sp.at(base, &[]),
                message_id: None,
            });
        }
    }
    let thinking = body
        .pointer("/thinking/type")
        .and_then(Value::as_str)
        .is_some_and(|t| t == "enabled" || t == "adaptive");
    Some(ModelRequest {
        provider,
        messages,
        span: Some(locator.span(0, text.len() as u64)),
        origin,
        thinking,
        response,
        session_id: None,
    })
}

/// Responses `input` items, grouped into messages.
fn responses_input(items: &[Value], sp: &Spans<'_>, out: &mut Vec<ModelMessage>) {
    let places = sp.items(Some(&sp.body()), &[Seg::Key("input")]);
    for (i, item) in items.iter().enumerate() {
        let place = places.get(i);
        let ty = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let s = |k: &str| {
            item.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let (r, kind) = match ty {
            "function_call" | "custom_tool_call" => (
                Role::Assistant,
                BlockKind::ToolCall {
                    id: s("call_id"),
                    name: s("name"),
                },
            ),
            "function_call_output" | "custom_tool_call_output" => (
                Role::Tool,
                BlockKind::ToolResult {
                    id: s("call_id"),
                    is_error: false,
                },
            ),
            "reasoning" => (Role::Assistant, BlockKind::Reasoning),
            "message" => (
                role(item.get("role").and_then(Value::as_str)),
                BlockKind::Text,
            ),
            other => (Role::User, BlockKind::Other(other.to_owned())),
        };
        let mut block = Block::new(kind);
        block.span = sp.at(place, &[]);
        match out.last_mut() {
            Some(m) if m.role == r && r != Role::User && r != Role::System => m.content.push(block),
            _ => out.push(ModelMessage {
                role: r,
                content: vec![block],
                span: sp.at(place, &[]),
                message_id: None,
            }),
        }
    }
}

/// The provider's error message in a response body (`{"error":{"message":…}}`, `{"message":…}`).
pub fn error_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    v.pointer("/error/message")
        .or_else(|| v.get("message"))
        .or_else(|| v.get("error").filter(|e| e.is_string()))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::provider;
    use crate::source::FileId;

    #[test]
    fn anthropic_body_with_text_after_tool_use() {
        let body = r#"{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{}},{"type":"text","text":"I will check."}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"72F"}]}]}"#;
        let loc = Locator::File(FileId(0));
        let req = from_body(
            body,
            &loc,
            Some("https://api.anthropic.com/v1/messages"),
            "r".into(),
            None,
        );
        let Some(req) = req else {
            panic!("not a request");
        };
        assert_eq!(req.provider, Provider::Anthropic);
        let v = provider::check(&req);
        assert_eq!(v.len(), 1);
        let span = v[0]
            .span
            .unwrap_or(crate::source::Span::new(FileId(0), 0, 0));
        assert!(body[span.offset as usize..].starts_with(r#"{"type":"text""#));
    }

    #[test]
    fn openai_chat_and_responses_bodies() {
        let chat = r#"{"messages":[{"role":"assistant","tool_calls":[{"id":"call_a","function":{"name":"f"}}]},{"role":"tool","tool_call_id":"call_a","content":"ok"}]}"#;
        let loc = Locator::File(FileId(0));
        let req = from_body(
            chat,
            &loc,
            Some("https://api.openai.com/v1/chat/completions"),
            "r".into(),
            None,
        );
        assert!(req.is_some_and(|r| provider::check(&r).is_empty()));
        let resp = r#"{"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]}"#;
        let req = from_body(resp, &loc, None, "r".into(), None);
        let errors: Vec<String> = req
            .map(|r| provider::check(&r).into_iter().map(|v| v.error).collect())
            .unwrap_or_default();
        assert_eq!(errors, ["No tool output found for function call c1"]);
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"boom"}}"#
            )
            .as_deref(),
            Some("boom")
        );
    }
}
