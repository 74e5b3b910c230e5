//! OpenAI Responses events → stream parts, as the AI SDK's openai responses provider maps them.
//!
//! `response.created` opens a model call; output items open and close text, reasoning and tool
//! calls (by `output_index`, which stays stable when a gateway rotates item ids); argument deltas
//! stream tool input; `response.output_item.done` of a `function_call` emits `tool-input-end` and
//! `tool-call`. A `custom_tool_call`'s input is free-form text (an SQL string, an apply_patch
//! body): the call carries it as a JSON string, as the SDK does. A `local_shell_call` is the
//! `local_shell` tool (input `{action}`), an `apply_patch_call` the `apply_patch` tool (input
//! `{callId, operation}`). Provider-executed items (web search, code interpreter, MCP…) become a
//! tool call and its result; `response.completed` / `response.incomplete` finish the step — with
//! `tool-calls` when the response asked for function, custom, local-shell or computer calls — and
//! `response.failed` and `error` are in-band provider errors.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use super::envelope::{self, Envelope, Loose, Num, Obj, Parsed, Raw, Str, U64};
use super::openai_chat::is_retryable;
use super::part::PartKind;
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected, s, text_of};
use crate::model::schema::{Ty, opt, req};
use crate::session::OpenAtEnd;
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

/// Client calls after which the response finishes with `tool-calls` (the SDK's
/// `hasFunctionCall`), plus the local shell.
const TOOL_CALLS_FINISH: [&str; 4] = [
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "computer_call",
];

/// The tool a client call item names: its `name`, or the built-in tool of its kind.
fn call_name<'n>(kind: &'n str, name: Option<&'n str>) -> &'n str {
    match kind {
        "local_shell_call" => "local_shell",
        "apply_patch_call" => "apply_patch",
        "shell_call" => "shell",
        "computer_call" => "computer",
        _ => name.unwrap_or(kind),
    }
}

/// The events the decoder reads; [`ITEM_EVENT`] and [`DELTA_EVENT`] fields are strict.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event<'a> {
    #[serde(rename = "response.created")]
    Created {
        #[serde(borrow, default)]
        response: Loose<Head<'a>>,
    },
    #[serde(rename = "response.output_item.added")]
    ItemAdded {
        #[serde(default)]
        output_index: Num,
        #[serde(borrow)]
        item: Obj<Item<'a>>,
    },
    #[serde(rename = "response.output_item.done")]
    ItemDone {
        #[serde(default)]
        output_index: Num,
        #[serde(borrow)]
        item: Obj<Item<'a>>,
    },
    #[serde(rename = "response.output_text.delta")]
    TextDelta {
        #[serde(default)]
        output_index: Num,
        #[serde(borrow)]
        delta: Cow<'a, str>,
        #[serde(borrow, default)]
        item_id: Str<'a>,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryDelta(#[serde(borrow)] Loosely<'a>),
    #[serde(rename = "response.reasoning_text.delta")]
    ReasoningTextDelta(#[serde(borrow)] Loosely<'a>),
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionArgsDelta {
        #[serde(default)]
        output_index: Num,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.custom_tool_call_input.delta")]
    CustomInputDelta {
        #[serde(default)]
        output_index: Num,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.mcp_call_arguments.delta")]
    McpArgsDelta(#[serde(borrow)] Loosely<'a>),
    #[serde(rename = "response.completed")]
    Completed {
        #[serde(borrow, default)]
        response: Loose<Final<'a>>,
    },
    #[serde(rename = "response.incomplete")]
    Incomplete {
        #[serde(borrow, default)]
        response: Loose<Final<'a>>,
    },
    #[serde(rename = "response.failed")]
    Failed {
        #[serde(default)]
        response: Loose<FailedResponse>,
    },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        error: Raw,
    },
    #[serde(other)]
    Other,
}

impl<'a> Envelope<'a> for Event<'a> {
    fn other() -> Self {
        Event::Other
    }

    fn is_other(&self) -> bool {
        matches!(self, Event::Other)
    }

    fn shape(ty: &str) -> Option<&'static Ty> {
        match ty {
            "response.output_item.added" | "response.output_item.done" => Some(&ITEM_EVENT),
            "response.output_text.delta"
            | "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta" => Some(&DELTA_EVENT),
            _ => None,
        }
    }
}

impl Event<'_> {
    /// The event's type (`None` for the catch-all, which does not keep it).
    fn name(&self) -> Option<&'static str> {
        Some(match self {
            Event::Created { .. } => "response.created",
            Event::ItemAdded { .. } => "response.output_item.added",
            Event::ItemDone { .. } => "response.output_item.done",
            Event::TextDelta { .. } => "response.output_text.delta",
            Event::ReasoningSummaryDelta(_) => "response.reasoning_summary_text.delta",
            Event::ReasoningTextDelta(_) => "response.reasoning_text.delta",
            Event::FunctionArgsDelta { .. } => "response.function_call_arguments.delta",
            Event::CustomInputDelta { .. } => "response.custom_tool_call_input.delta",
            Event::McpArgsDelta(_) => "response.mcp_call_arguments.delta",
            Event::Completed { .. } => "response.completed",
            Event::Incomplete { .. } => "response.incomplete",
            Event::Failed { .. } => "response.failed",
            Event::Error { .. } => "error",
            Event::Other => return None,
        })
    }
}

/// A delta event without a schema: every field lenient.
#[derive(Deserialize)]
struct Loosely<'a> {
    #[serde(default)]
    output_index: U64,
    #[serde(borrow, default)]
    delta: Str<'a>,
    #[serde(borrow, default)]
    item_id: Str<'a>,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Str<'a>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Str<'a>,
    #[serde(borrow, default)]
    call_id: Str<'a>,
    #[serde(borrow, default)]
    name: Str<'a>,
    #[serde(borrow, default)]
    status: Str<'a>,
    /// An `mcp_call`'s: the `mcp_approval_request` the user approved.
    #[serde(borrow, default)]
    approval_request_id: Str<'a>,
    #[serde(default)]
    arguments: Raw,
    #[serde(default)]
    action: Raw,
    #[serde(default)]
    operation: Raw,
    #[serde(default)]
    input: Raw,
    #[serde(default)]
    output: Raw,
    #[serde(default)]
    results: Raw,
    #[serde(default)]
    error: Raw,
}

#[derive(Deserialize)]
struct Final<'a> {
    #[serde(borrow, default)]
    incomplete_details: Loose<IncompleteDetails<'a>>,
    #[serde(default)]
    usage: Loose<Usage>,
}

#[derive(Deserialize)]
struct IncompleteDetails<'a> {
    #[serde(borrow, default)]
    reason: Str<'a>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: U64,
    #[serde(default)]
    output_tokens: U64,
}

#[derive(Deserialize)]
struct FailedResponse {
    #[serde(default)]
    error: Raw,
}

#[derive(Clone, Debug)]
struct OpenItem {
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
    items: BTreeMap<u64, OpenItem>,
    done_items: HashSet<String>,
    has_function_call: bool,
    completed: Option<Span>,
    error_seen: bool,
    /// An event of the open response could not be decoded (the SDK's finish reason is `error`).
    rejected: bool,
}

/// A field rendered as JSON text, strings as they are; `first` when present, else `second`.
/// The tool a provider-executed item runs: `mcp.<name>` for an MCP server's tool, as the SDK
/// names it, else the item's kind without `_call` (`web_search`).
fn provider_tool(kind: &str, name: Option<&str>) -> String {
    match (kind, name) {
        ("mcp_call", Some(name)) => format!("mcp.{name}"),
        _ => kind.trim_end_matches("_call").to_owned(),
    }
}

/// A provider-executed call's id: an approved MCP call answers its approval request, so it is
/// that request's call (the SDK maps the one to the other).
fn provider_call_id<'i>(item: &'i Item<'_>, id: &'i str) -> &'i str {
    match item.kind.as_ref() {
        "mcp_call" => item.approval_request_id.get().unwrap_or(id),
        _ => id,
    }
}

fn text_of_either(first: &Raw, second: &Raw) -> String {
    text_of(first.0.as_ref().or(second.0.as_ref()))
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

    fn event(&mut self, e: Event<'_>, data: &str, at: Span, out: &mut Out) {
        let ty = e.name();
        if let Some(done) = self.completed
            && !matches!(e, Event::Created { .. } | Event::Error { .. })
        {
            let ty = ty.map_or_else(|| envelope::type_name(data).into(), Cow::Borrowed);
            out.anomaly(
                format!("`{ty}` arrives after the response completed"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((done, "the response completed here".into()));
            }
        }
        let ty = ty.unwrap_or_default();
        if !matches!(
            e,
            Event::Created { .. } | Event::Error { .. } | Event::Other
        ) {
            self.implied_start(at, out);
        }
        match e {
            Event::Created { response } => {
                let id = response.get().and_then(|r| r.id.get()).unwrap_or_default();
                self.created(id, at, out);
            }
            Event::ItemAdded { output_index, item } => {
                self.item_added(output_index.0.unwrap_or(0), &item.0, at, out);
            }
            Event::ItemDone { output_index, item } => {
                self.item_done(output_index.0.unwrap_or(0), &item.0, out);
            }
            Event::TextDelta {
                output_index,
                delta,
                item_id,
            } => {
                let id = self.delta_item(ty, output_index.0.unwrap_or(0), item_id.get(), out);
                out.part(PartKind::TextDelta {
                    id,
                    delta: delta.into_owned(),
                });
            }
            Event::ReasoningSummaryDelta(d) | Event::ReasoningTextDelta(d) => {
                let id = self.delta_item(ty, d.output_index.0.unwrap_or(0), d.item_id.get(), out);
                let delta = d.delta.0.map(Cow::into_owned).unwrap_or_default();
                out.part(PartKind::ReasoningDelta { id, delta });
            }
            Event::FunctionArgsDelta {
                output_index,
                delta,
            }
            | Event::CustomInputDelta {
                output_index,
                delta,
            } => self.args_delta(ty, output_index.0.unwrap_or(0), &delta, out),
            Event::McpArgsDelta(d) => {
                let index = d.output_index.0.unwrap_or(0);
                self.args_delta(ty, index, d.delta.get().unwrap_or_default(), out);
            }
            Event::Completed { response } | Event::Incomplete { response } => {
                self.completed(ty, response.get(), at, out);
            }
            Event::Failed { response } => {
                let err = response.0.and_then(|r| r.error.0).unwrap_or(Value::Null);
                self.failed(err, at, out);
            }
            Event::Error { error } => self.error(error.0, data, out),
            Event::Other => {}
        }
    }

    fn created(&mut self, id: &str, at: Span, out: &mut Out) {
        if let Some((open_id, open_at)) = self.open.clone() {
            out.anomaly(
                format!("a new response starts while response {open_id} has not completed"),
                false,
                Focus::path(&["response", "id"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((open_at, "it started here".into()));
            }
        }
        self.open = Some((id.to_owned(), at));
        self.rejected = false;
        self.completed = None;
        self.items.clear();
        self.done_items.clear();
        self.has_function_call = false;
        out.reopened = true;
        out.part(PartKind::ResponseMetadata {
            id: (!id.is_empty()).then(|| id.to_owned()),
        });
        out.part(PartKind::StartStep);
    }

    /// A response event before any `response.created`: the model call (the step) started all
    /// the same — the SDK starts a step for each call, whatever the provider sends first.
    fn implied_start(&mut self, at: Span, out: &mut Out) {
        if self.open.is_some() || self.completed.is_some() {
            return;
        }
        self.open = Some((String::new(), at));
        out.part(PartKind::StartStep);
    }

    fn item_added(&mut self, index: u64, item: &Item<'_>, at: Span, out: &mut Out) {
        let kind = item.kind.as_ref();
        let id = item.id.get().unwrap_or_default();
        let call_id = item.call_id.get();
        let name = call_name(kind, item.name.get());
        match kind {
            "message" => out.part(PartKind::TextStart { id: id.to_owned() }),
            "reasoning" => out.part(PartKind::ReasoningStart { id: id.to_owned() }),
            // The SDK makes nothing of a tool listing, and the call an approval asks for is
            // made when the request is done.
            "mcp_list_tools" | "mcp_approval_request" => {}
            k if PROVIDER_ITEMS.contains(&k) => {
                out.part(PartKind::ToolInputStart {
                    id: provider_call_id(item, id).to_owned(),
                    name: provider_tool(k, item.name.get()),
                    provider_executed: true,
                });
            }
            _ => {
                out.part_at(
                    PartKind::ToolInputStart {
                        id: call_id.unwrap_or(id).to_owned(),
                        name: name.to_owned(),
                        provider_executed: false,
                    },
                    Focus::path(&["item", "call_id"]),
                );
            }
        }
        self.items.insert(
            index,
            OpenItem {
                kind: kind.to_owned(),
                id: id.to_owned(),
                call_id: call_id.map(str::to_owned),
                name: name.to_owned(),
                args: String::new(),
                at,
            },
        );
    }

    /// The item a text or reasoning delta belongs to (by output index, else its `item_id`).
    fn delta_item(&self, ty: &str, index: u64, item_id: Option<&str>, out: &mut Out) -> String {
        let id = self
            .items
            .get(&index)
            .map_or_else(|| item_id.unwrap_or_default().to_owned(), |i| i.id.clone());
        if self.done_items.contains(&id) {
            out.anomaly(
                format!("`{ty}` for output item {id} after its `output_item.done`"),
                false,
                Focus::path(&["item_id"]),
            );
        }
        id
    }

    fn args_delta(&mut self, ty: &str, index: u64, delta: &str, out: &mut Out) {
        match self.items.get_mut(&index) {
            Some(item) => {
                item.args.push_str(delta);
                if !PROVIDER_ITEMS.contains(&item.kind.as_str()) {
                    let id = item.call_id.as_ref().unwrap_or(&item.id).clone();
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

    fn item_done(&mut self, index: u64, item: &Item<'_>, out: &mut Out) {
        let kind = item.kind.as_ref();
        let open = self.items.remove(&index);
        let id = open
            .as_ref()
            .map(|i| i.id.clone())
            .or_else(|| item.id.get().map(str::to_owned))
            .unwrap_or_default();
        self.done_items.insert(id.clone());
        match kind {
            "message" => out.part(PartKind::TextEnd { id }),
            "reasoning" => out.part(PartKind::ReasoningEnd { id }),
            "mcp_list_tools" => {}
            // The call waits for the user's approval: the response ends here, and the approved
            // call (an `mcp_call` naming this request) comes in the next response.
            "mcp_approval_request" => {
                out.part(PartKind::ToolInputStart {
                    id: id.clone(),
                    name: provider_tool("mcp_call", item.name.get()),
                    provider_executed: true,
                });
                out.part(PartKind::ToolInputEnd { id: id.clone() });
                out.part(PartKind::ToolCall {
                    id,
                    name: provider_tool("mcp_call", item.name.get()),
                    input: text_of(item.arguments.0.as_ref()),
                    provider_executed: true,
                });
            }
            k if PROVIDER_ITEMS.contains(&k) => {
                let id = provider_call_id(item, &id).to_owned();
                Self::provider_item_done(k, id, open.is_none(), item, out);
            }
            _ => self.tool_item_done(kind, id, open, item, out),
        }
    }

    /// A provider-executed item: its call and its result (or error) at once.
    fn provider_item_done(kind: &str, id: String, unopened: bool, item: &Item<'_>, out: &mut Out) {
        let name = provider_tool(kind, item.name.get());
        if unopened {
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
            input: text_of_either(&item.action, &item.arguments),
            provider_executed: true,
        });
        if item.status.get() == Some("failed") {
            out.part(PartKind::ToolError {
                id,
                name,
                error: text_of(item.error.0.as_ref()),
            });
        } else {
            out.part(PartKind::ToolResult {
                id,
                name,
                output: text_of_either(&item.output, &item.results),
            });
        }
    }

    /// A function (or custom, or other client-side) tool call is complete.
    fn tool_item_done(
        &mut self,
        kind: &str,
        id: String,
        open: Option<OpenItem>,
        item: &Item<'_>,
        out: &mut Out,
    ) {
        let call_id = item
            .call_id
            .get()
            .map(str::to_owned)
            .or_else(|| open.as_ref().and_then(|i| i.call_id.clone()))
            .unwrap_or(id);
        let name = match item.name.get() {
            Some(n) => call_name(kind, Some(n)).to_owned(),
            None => open
                .as_ref()
                .map_or_else(|| call_name(kind, None).to_owned(), |i| i.name.clone()),
        };
        let input = match kind {
            "function_call" => item
                .arguments
                .0
                .as_ref()
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| open.as_ref().map(|i| i.args.clone()))
                .unwrap_or_default(),
            // Free-form text, carried as a JSON string.
            "custom_tool_call" => {
                let text = match item.input.0.as_ref() {
                    Some(Value::String(t)) => t.clone(),
                    Some(other) => other.to_string(),
                    None => open.as_ref().map(|i| i.args.clone()).unwrap_or_default(),
                };
                Value::String(text).to_string()
            }
            "local_shell_call" => local_shell_input(item.action.0.as_ref()),
            "apply_patch_call" => serde_json::json!({
                "callId": call_id,
                "operation": item.operation.0.clone().unwrap_or(Value::Null),
            })
            .to_string(),
            _ => text_of(item.action.0.as_ref()),
        };
        if open.is_none() {
            out.part(PartKind::ToolInputStart {
                id: call_id.clone(),
                name: name.clone(),
                provider_executed: false,
            });
        }
        if TOOL_CALLS_FINISH.contains(&kind) {
            self.has_function_call = true;
        }
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

    fn completed(&mut self, ty: &str, response: Option<&Final<'_>>, at: Span, out: &mut Out) {
        let incomplete = response
            .and_then(|r| r.incomplete_details.get())
            .and_then(|d| d.reason.get());
        let reason = match incomplete {
            Some("max_output_tokens") => "length",
            Some("content_filter") => "content-filter",
            _ if self.has_function_call => "tool-calls",
            Some(_) => "other",
            None => "stop",
        };
        let usage = response.and_then(|r| r.usage.get());
        out.finish_reason = Some(incomplete.unwrap_or(reason).to_owned());
        out.part(PartKind::FinishStep {
            reason: reason.into(),
            input_tokens: usage.and_then(|u| u.input_tokens.0).unwrap_or(0),
            output_tokens: usage.and_then(|u| u.output_tokens.0).unwrap_or(0),
        });
        out.terminal = Some(format!("`{ty}`"));
        self.completed = Some(at);
        self.open = None;
    }

    fn failed(&mut self, err: Value, at: Span, out: &mut Out) {
        if !err.is_null() {
            let name = s(&err, "code").unwrap_or("response.failed").to_owned();
            let message = s(&err, "message").unwrap_or_default().to_owned();
            let focus = Focus::path(&["response", "error", "message"]);
            if self.error_seen {
                out.provider_errors.push(ProviderError {
                    name,
                    message,
                    focus,
                    data: err,
                });
            } else {
                Self::provider_error(name, message, focus, err, out);
            }
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

    /// Documented flat (`code`, `message`), seen nested (`error: {…}`).
    fn error(&mut self, nested: Option<Value>, data: &str, out: &mut Out) {
        let focus = if nested.is_some() {
            Focus::path(&["error", "message"])
        } else {
            Focus::path(&["message"])
        };
        let err = nested
            .or_else(|| serde_json::from_str(data).ok())
            .unwrap_or(Value::Null);
        let name = s(&err, "code")
            .or_else(|| s(&err, "type").filter(|t| *t != "error"))
            .unwrap_or("error")
            .to_owned();
        let message = s(&err, "message").unwrap_or_default().to_owned();
        self.error_seen = true;
        Self::provider_error(name, message, focus, err, out);
    }
}

impl Decoder for OpenAiResponses {
    fn protocol(&self) -> Protocol {
        Protocol::OpenAiResponses
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        // Read as a value only when the payload may say so (literally, or in `\u` escapes).
        let maybe_chat = data.contains("chat.completion.chunk") || data.contains("\\u");
        if maybe_chat && wrong_protocol(data) {
            out.anomaly(
                "a Chat Completions chunk in a Responses stream (the endpoint answered with the wrong protocol)",
                false,
                Focus::path(&["object"]),
            );
            return Ok(());
        }
        let mut spare = None;
        let parsed = envelope::parse::<Event<'_>>(data, &mut spare);
        self.rejected |= parsed.is_err();
        match parsed? {
            Parsed::Done => {}
            Parsed::Event(e) => self.event(e, data, at, out),
        }
        Ok(())
    }

    /// A response whose terminal event was lost after an event that could not be decoded: the
    /// SDK still finishes the step, with reason `error`. (A response that just stops is left
    /// open: the stream is truncated.)
    fn flush(&mut self, out: &mut Out) {
        if self.open.is_some() && self.rejected {
            out.part(PartKind::FinishStep {
                reason: "error".into(),
                input_tokens: 0,
                output_tokens: 0,
            });
            self.open = None;
        }
    }

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        let mut out = Vec::new();
        if let Some((id, at)) = &self.open {
            let what = if id.is_empty() {
                "the response (no `response.created`) never completed".to_owned()
            } else {
                format!("response {id} never completed")
            };
            out.push(OpenAtEnd::new(what, *at));
        }
        for i in self.items.values() {
            out.push(match &i.call_id {
                Some(c) => OpenAtEnd::call(
                    format!("{} `{}` ({c}) was never done", i.kind, i.name),
                    i.at,
                    c,
                ),
                None => OpenAtEnd::new(format!("{} item {} was never done", i.kind, i.id), i.at),
            });
        }
        out
    }
}

/// The `local_shell` tool's input: the item's exec action, its fields named as the SDK names them.
fn local_shell_input(action: Option<&Value>) -> String {
    let field = |k: &str| {
        action
            .and_then(|a| a.get(k))
            .cloned()
            .unwrap_or(Value::Null)
    };
    serde_json::json!({"action": {
        "type": "exec",
        "command": field("command"),
        "timeoutMs": field("timeout_ms"),
        "user": field("user"),
        "workingDirectory": field("working_directory"),
        "env": field("env"),
    }})
    .to_string()
}

/// A Chat Completions chunk (`"object": "chat.completion.chunk"`), which a Responses stream
/// reports before anything else.
fn wrong_protocol(data: &str) -> bool {
    serde_json::from_str::<Value>(data)
        .is_ok_and(|v| v.get("object").and_then(Value::as_str) == Some("chat.completion.chunk"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn decode(d: &mut OpenAiResponses, data: &str) -> (Vec<PartKind>, Vec<String>, String) {
        let mut out = Out::default();
        let r = match d.decode(data, Span::new(FileId(0), 0, 0), &mut out) {
            Ok(()) => String::new(),
            Err(Rejected::Json(e)) => format!("json: {e}"),
            Err(Rejected::Schema(i)) => format!("schema: {}", i[0]),
        };
        let parts = out.parts.into_iter().map(|(p, _)| p).collect();
        let anomalies = out.anomalies.into_iter().map(|a| a.problem).collect();
        (parts, anomalies, r)
    }

    /// The finish reason and the tool-call parts a response's output items give.
    fn finish_of(items: &[&str]) -> (String, Vec<PartKind>) {
        let mut d = OpenAiResponses::new();
        decode(
            &mut d,
            r#"{"type":"response.created","response":{"id":"r"}}"#,
        );
        let mut calls = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let done = format!(
                r#"{{"type":"response.output_item.done","output_index":{i},"item":{item}}}"#
            );
            let (parts, _, r) = decode(&mut d, &done);
            assert_eq!(r, "", "{item}");
            calls.extend(
                parts
                    .into_iter()
                    .filter(|p| matches!(p, PartKind::ToolCall { .. })),
            );
        }
        let (parts, _, _) = decode(&mut d, r#"{"type":"response.completed","response":{}}"#);
        let reason = parts
            .iter()
            .find_map(|p| match p {
                PartKind::FinishStep { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .unwrap_or_default();
        (reason, calls)
    }

    #[test]
    fn client_calls_are_named_and_finish_as_the_sdk_maps_them() {
        let (reason, calls) = finish_of(&[
            r#"{"type":"custom_tool_call","id":"c","call_id":"call_c","name":"run_sql","input":"SELECT 1"}"#,
        ]);
        assert_eq!(reason, "tool-calls");
        assert_eq!(
            calls,
            [PartKind::ToolCall {
                id: "call_c".into(),
                name: "run_sql".into(),
                input: r#""SELECT 1""#.into(),
                provider_executed: false
            }]
        );
        let (reason, calls) = finish_of(&[
            r#"{"type":"local_shell_call","id":"l","call_id":"call_l","action":{"type":"exec","command":["ls"],"working_directory":"/w"}}"#,
        ]);
        assert_eq!(reason, "tool-calls");
        let PartKind::ToolCall { name, input, .. } = &calls[0] else {
            panic!("{calls:?}")
        };
        assert_eq!(name, "local_shell");
        let input: Value = serde_json::from_str(input).unwrap();
        assert_eq!(input["action"]["command"][0], "ls");
        assert_eq!(input["action"]["workingDirectory"], "/w");
        let (reason, calls) = finish_of(&[
            r#"{"type":"apply_patch_call","id":"a","call_id":"call_a","operation":{"type":"delete_file","path":"x"}}"#,
        ]);
        assert_eq!(reason, "stop");
        let PartKind::ToolCall { name, input, .. } = &calls[0] else {
            panic!("{calls:?}")
        };
        assert_eq!(name, "apply_patch");
        let input: Value = serde_json::from_str(input).unwrap();
        assert_eq!(input["callId"], "call_a");
        assert_eq!(input["operation"]["path"], "x");
        let (reason, _) = finish_of(&[
            r#"{"type":"web_search_call","id":"ws","status":"completed","action":{"type":"search"}}"#,
        ]);
        assert_eq!(reason, "stop");
    }

    #[test]
    fn a_response_without_created_starts_its_step_at_its_first_event() {
        let mut d = OpenAiResponses::new();
        let (parts, _, _) = decode(
            &mut d,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m"}}"#,
        );
        assert_eq!(
            parts,
            [PartKind::StartStep, PartKind::TextStart { id: "m".into() }]
        );
        let (parts, _, _) = decode(
            &mut d,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}"#,
        );
        assert_eq!(parts.len(), 1);
        let (parts, _, _) = decode(&mut d, r#"{"type":"response.completed","response":{}}"#);
        assert!(
            matches!(parts[..], [PartKind::FinishStep { .. }]),
            "{parts:?}"
        );
        // A completion alone is a step too.
        let mut d = OpenAiResponses::new();
        let (parts, _, _) = decode(&mut d, r#"{"type":"response.completed","response":{}}"#);
        assert!(
            matches!(
                parts[..],
                [PartKind::StartStep, PartKind::FinishStep { .. }]
            ),
            "{parts:?}"
        );
    }

    #[test]
    fn strict_fields_are_rejected_with_their_path() {
        let mut d = OpenAiResponses::new();
        let (_, _, r) = decode(
            &mut d,
            r#"{"type":"response.output_text.delta","output_index":null,"delta":"x"}"#,
        );
        assert!(r.starts_with("schema: `output_index`"), "{r}");
        let (_, _, r) = decode(
            &mut d,
            r#"{"type":"response.output_item.added","item":["message"]}"#,
        );
        assert!(r.starts_with("schema: `item`"), "{r}");
        let (_, _, r) = decode(&mut d, r#"{"type":"response.output_text.delta","delta":7}"#);
        assert!(r.starts_with("schema: `delta`"), "{r}");
    }

    #[test]
    fn lenient_fields_and_repeated_keys_read_like_a_value() {
        let mut d = OpenAiResponses::new();
        // A non-string id reads as absent; a repeated key keeps its last value.
        let (parts, _, r) = decode(
            &mut d,
            r#"{"type":"response.created","response":{"id":5},"response":{"id":"resp_2"}}"#,
        );
        assert_eq!(r, "");
        assert_eq!(
            parts[0],
            PartKind::ResponseMetadata {
                id: Some("resp_2".into())
            }
        );
        let (parts, _, _) = decode(
            &mut d,
            r#"{"type":"response.output_text.delta","output_index":1.5,"item_id":{"a":1},"delta":"h\u00e9"}"#,
        );
        assert_eq!(
            parts,
            [PartKind::TextDelta {
                id: String::new(),
                delta: "hé".into()
            }]
        );
        // A `type` that is not a string is no event the decoder reads.
        let (parts, _, r) = decode(&mut d, r#"{"type":3,"delta":"x"}"#);
        assert!(parts.is_empty() && r.is_empty());
        let (parts, _, r) = decode(&mut d, r#"["response.created"]"#);
        assert!(parts.is_empty() && r.is_empty());
    }

    #[test]
    fn chat_chunk_and_late_events_are_anomalies() {
        let mut d = OpenAiResponses::new();
        let (_, a, _) = decode(&mut d, r#"{"object":"chat.completion.chunk","choices":[]}"#);
        assert_eq!(a.len(), 1);
        decode(&mut d, r#"{"type":"response.completed","response":{}}"#);
        let (_, a, _) = decode(&mut d, r#"{"type":"response.in_progress"}"#);
        assert_eq!(
            a,
            ["`response.in_progress` arrives after the response completed"]
        );
    }
}
