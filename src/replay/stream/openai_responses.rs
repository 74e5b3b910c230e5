//! OpenAI Responses events → stream parts, as the AI SDK's openai responses provider maps them.
//!
//! `response.created` opens a model call; output items open and close text, reasoning and tool
//! calls (by `output_index`, which stays stable when a gateway rotates item ids); argument deltas
//! stream tool input; `response.output_item.done` of a `function_call` emits `tool-input-end` and
//! `tool-call`; provider-executed items (web search, code interpreter, MCP…) become a tool call and
//! its result; `response.completed` / `response.incomplete` finish the step; `response.failed` and
//! `error` are in-band provider errors.

use std::collections::BTreeMap;

use serde_json::Value;

use super::openai_chat::is_retryable;
use super::part::PartKind;
use super::protocol::{
    Decoder, Focus, Out, Protocol, ProviderError, Rejected, parse_value, s, text_of,
};
use crate::model::schema::{self, Ty, opt, req};
use crate::source::Span;

static ITEM_EVENT: Ty = Ty::Obj(&[
    opt("output_index", Ty::Num),
    req("item", Ty::Obj(&[req("type", Ty::Str)])),
]);
static DELTA_EVENT: Ty = Ty::Obj(&[opt("output_index", Ty::Num), req("delta", Ty::Str)]);

/// Items the provider executes itself: they arrive with their result.
const PROVIDER_ITEMS: [&str; 6] = [
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "tool_search_call",
];

#[derive(Clone, Debug)]
struct Item {
    kind: String,
    /// The item id (text and reasoning parts are keyed by it).
    id: String,
    /// The call id of a tool item.
    call_id: Option<String>,
    name: String,
    args: String,
    at: Span,
}

/// The decoder.
#[derive(Default)]
pub struct OpenAiResponses {
    open: Option<(String, Span)>,
    items: BTreeMap<u64, Item>,
    done_items: Vec<String>,
    has_function_call: bool,
    completed: Option<Span>,
    error_seen: bool,
}

impl OpenAiResponses {
    pub fn new() -> Self {
        Self::default()
    }

    /// A provider error, labelled at `focus` both as an error and as the stream error part.
    fn provider_error(name: String, message: String, focus: Focus, data: Value, out: &mut Out) {
        let retryable = is_retryable(&name);
        let error = ProviderError {
            name,
            message,
            focus: focus.clone(),
            data,
        };
        out.provider_error(error, retryable, focus);
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let ty = s(v, "type").unwrap_or_default();
        if v.get("object").and_then(Value::as_str) == Some("chat.completion.chunk") {
            out.anomaly(
                "a Chat Completions chunk in a Responses stream (the endpoint answered with the wrong protocol)",
                false,
                Focus::path(&["object"]),
            );
            return Ok(());
        }
        let shape = match ty {
            "response.output_item.added" | "response.output_item.done" => Some(&ITEM_EVENT),
            "response.output_text.delta"
            | "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta" => Some(&DELTA_EVENT),
            _ => None,
        };
        if let Some(shape) = shape {
            let issues = schema::validate(v, shape);
            if !issues.is_empty() {
                return Err(Rejected::Schema(issues));
            }
        }
        if let Some(done) = self.completed
            && ty != "response.created"
            && ty != "error"
        {
            out.anomaly(
                format!("`{ty}` arrives after the response completed"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((done, "the response completed here".into()));
            }
        }
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match ty {
            "response.created" => {
                if let Some((id, open_at)) = self.open.clone() {
                    out.anomaly(
                        format!("a new response starts while response {id} has not completed"),
                        false,
                        Focus::path(&["response", "id"]),
                    );
                    if let Some(a) = out.anomalies.last_mut() {
                        a.related.push((open_at, "it started here".into()));
                    }
                }
                let id = v
                    .pointer("/response/id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                self.open = Some((id.clone(), at));
                self.completed = None;
                self.items.clear();
                self.done_items.clear();
                self.has_function_call = false;
                out.reopened = true;
                out.part(PartKind::ResponseMetadata {
                    id: (!id.is_empty()).then_some(id),
                });
                out.part(PartKind::StartStep);
            }
            "response.output_item.added" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                let kind = s(&item, "type").unwrap_or_default().to_owned();
                let id = s(&item, "id").unwrap_or_default().to_owned();
                let call_id = s(&item, "call_id").map(str::to_owned);
                let name = s(&item, "name").unwrap_or(&kind).to_owned();
                match kind.as_str() {
                    "message" => out.part(PartKind::TextStart { id: id.clone() }),
                    "reasoning" => out.part(PartKind::ReasoningStart { id: id.clone() }),
                    k if PROVIDER_ITEMS.contains(&k) => {
                        out.part(PartKind::ToolInputStart {
                            id: id.clone(),
                            name: k.trim_end_matches("_call").to_owned(),
                            provider_executed: true,
                        });
                    }
                    _ => {
                        let tool_id = call_id.clone().unwrap_or_else(|| id.clone());
                        out.part_at(
                            PartKind::ToolInputStart {
                                id: tool_id,
                                name: name.clone(),
                                provider_executed: false,
                            },
                            Focus::path(&["item", "call_id"]),
                        );
                    }
                }
                self.items.insert(
                    index,
                    Item {
                        kind,
                        id,
                        call_id,
                        name,
                        args: String::new(),
                        at,
                    },
                );
            }
            "response.output_text.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta" => {
                let delta = s(v, "delta").unwrap_or_default().to_owned();
                let item_id = s(v, "item_id").unwrap_or_default();
                let id = self
                    .items
                    .get(&index)
                    .map_or_else(|| item_id.to_owned(), |i| i.id.clone());
                if self.done_items.contains(&id) {
                    out.anomaly(
                        format!("`{ty}` for output item {id} after its `output_item.done`"),
                        false,
                        Focus::path(&["item_id"]),
                    );
                }
                if ty == "response.output_text.delta" {
                    out.part(PartKind::TextDelta { id, delta });
                } else {
                    out.part(PartKind::ReasoningDelta { id, delta });
                }
            }
            "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta"
            | "response.mcp_call_arguments.delta" => {
                let delta = s(v, "delta").unwrap_or_default();
                match self.items.get_mut(&index) {
                    Some(item) => {
                        item.args.push_str(delta);
                        let id = item.call_id.clone().unwrap_or_else(|| item.id.clone());
                        if !PROVIDER_ITEMS.contains(&item.kind.as_str()) {
                            out.part(PartKind::ToolInputDelta {
                                id,
                                delta: delta.to_owned(),
                            });
                        }
                    }
                    None => out.anomaly(
                        format!("`{ty}` for output item {index}, which is not open"),
                        false,
                        Focus::path(&["output_index"]),
                    ),
                }
            }
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                let kind = s(&item, "type").unwrap_or_default().to_owned();
                let open = self.items.remove(&index);
                let id = open
                    .as_ref()
                    .map(|i| i.id.clone())
                    .or_else(|| s(&item, "id").map(str::to_owned))
                    .unwrap_or_default();
                self.done_items.push(id.clone());
                match kind.as_str() {
                    "message" => out.part(PartKind::TextEnd { id }),
                    "reasoning" => out.part(PartKind::ReasoningEnd { id }),
                    k if PROVIDER_ITEMS.contains(&k) => {
                        let name = k.trim_end_matches("_call").to_owned();
                        if open.is_none() {
                            out.part(PartKind::ToolInputStart {
                                id: id.clone(),
                                name: name.clone(),
                                provider_executed: true,
                            });
                        }
                        out.part(PartKind::ToolInputEnd { id: id.clone() });
                        out.part(PartKind::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                            input: text_of(item.get("action").or_else(|| item.get("arguments"))),
                            provider_executed: true,
                        });
                        let status = s(&item, "status").unwrap_or_default();
                        if status == "failed" {
                            out.part(PartKind::ToolError {
                                id,
                                name,
                                error: text_of(item.get("error")),
                            });
                        } else {
                            out.part(PartKind::ToolResult {
                                id,
                                name,
                                output: text_of(item.get("output").or_else(|| item.get("results"))),
                            });
                        }
                    }
                    _ => {
                        let call_id = s(&item, "call_id")
                            .map(str::to_owned)
                            .or_else(|| open.as_ref().and_then(|i| i.call_id.clone()))
                            .unwrap_or_else(|| id.clone());
                        let name = s(&item, "name")
                            .map(str::to_owned)
                            .or_else(|| open.as_ref().map(|i| i.name.clone()))
                            .unwrap_or_else(|| kind.clone());
                        let input = match kind.as_str() {
                            "function_call" => s(&item, "arguments")
                                .map(str::to_owned)
                                .or_else(|| open.as_ref().map(|i| i.args.clone()))
                                .unwrap_or_default(),
                            "custom_tool_call" => text_of(item.get("input")),
                            _ => text_of(item.get("action")),
                        };
                        if open.is_none() {
                            out.part(PartKind::ToolInputStart {
                                id: call_id.clone(),
                                name: name.clone(),
                                provider_executed: false,
                            });
                        }
                        self.has_function_call = true;
                        out.part(PartKind::ToolInputEnd {
                            id: call_id.clone(),
                        });
                        out.part_at(
                            PartKind::ToolCall {
                                id: call_id,
                                name,
                                input,
                                provider_executed: false,
                            },
                            Focus::path(&["item", "call_id"]),
                        );
                    }
                }
            }
            "response.completed" | "response.incomplete" => {
                let incomplete = v
                    .pointer("/response/incomplete_details/reason")
                    .and_then(Value::as_str);
                let reason = match incomplete {
                    Some("max_output_tokens") => "length",
                    Some("content_filter") => "content-filter",
                    Some(_) => "other",
                    None if self.has_function_call => "tool-calls",
                    None => "stop",
                };
                let usage = |k: &str| {
                    v.pointer(&format!("/response/usage/{k}"))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                out.finish_reason = Some(incomplete.unwrap_or(reason).to_owned());
                out.part(PartKind::FinishStep {
                    reason: reason.into(),
                    input_tokens: usage("input_tokens"),
                    output_tokens: usage("output_tokens"),
                });
                out.terminal = Some(format!("`{ty}`"));
                self.completed = Some(at);
                self.open = None;
            }
            "response.failed" => {
                let err = v.pointer("/response/error").cloned().unwrap_or(Value::Null);
                if !self.error_seen && !err.is_null() {
                    let name = s(&err, "code").unwrap_or("response.failed").to_owned();
                    let message = s(&err, "message").unwrap_or_default().to_owned();
                    Self::provider_error(
                        name,
                        message,
                        Focus::path(&["response", "error", "message"]),
                        err,
                        out,
                    );
                } else if !err.is_null() {
                    out.provider_errors.push(ProviderError {
                        name: s(&err, "code").unwrap_or("response.failed").to_owned(),
                        message: s(&err, "message").unwrap_or_default().to_owned(),
                        focus: Focus::path(&["response", "error", "message"]),
                        data: err,
                    });
                }
                out.finish_reason = Some("failed".into());
                out.part(PartKind::FinishStep {
                    reason: "error".into(),
                    input_tokens: 0,
                    output_tokens: 0,
                });
                out.terminal = Some("`response.failed`".into());
                self.completed = Some(at);
                self.open = None;
            }
            "error" => {
                // Documented flat (`code`, `message`), seen nested (`error: {…}`).
                let err = v.get("error").cloned().unwrap_or_else(|| v.clone());
                let name = s(&err, "code")
                    .or_else(|| s(&err, "type").filter(|t| *t != "error"))
                    .unwrap_or("error")
                    .to_owned();
                let message = s(&err, "message").unwrap_or_default().to_owned();
                let focus = if v.get("error").is_some() {
                    Focus::path(&["error", "message"])
                } else {
                    Focus::path(&["message"])
                };
                self.error_seen = true;
                Self::provider_error(name, message, focus, err, out);
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decoder for OpenAiResponses {
    fn protocol(&self) -> Protocol {
        Protocol::OpenAiResponses
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if data.trim() == "[DONE]" {
            return Ok(());
        }
        let v = parse_value(data)?;
        self.event(&v, at, out)
    }

    fn flush(&mut self, _out: &mut Out) {}

    fn open_at_end(&self) -> Vec<(String, Span)> {
        let mut out = Vec::new();
        if let Some((id, at)) = &self.open {
            out.push((format!("response {id} never completed"), *at));
        }
        for i in self.items.values() {
            let what = match &i.call_id {
                Some(c) => format!("{} `{}` ({c}) was never done", i.kind, i.name),
                None => format!("{} item {} was never done", i.kind, i.id),
            };
            out.push((what, i.at));
        }
        out
    }
}
