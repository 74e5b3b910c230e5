//! AG-UI events (TanStack AI) → stream parts.
//!
//! `TEXT_MESSAGE_*` and `REASONING_MESSAGE_*` are text and reasoning; `TOOL_CALL_START/ARGS/END`
//! are tool input, `TOOL_CALL_RESULT` a result or — with `state: "output-error"` (top level or
//! under `metadata.tanstack`) — a tool error; `RUN_FINISHED`/`RUN_ERROR` end the run.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::envelope::{self, Envelope, Loose, Parsed, Raw, Str};
use super::part::{PartKind, unified_finish};
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected};
use super::ui_book::Book;
use crate::model::schema::{Ty, req};
use crate::source::Span;

static WITH_CALL: Ty = Ty::Obj(&[req("toolCallId", Ty::Str)]);

/// The events the decoder reads; `toolCallId` is strict.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
enum Event<'a> {
    #[serde(rename = "RUN_STARTED")]
    RunStarted {
        #[serde(borrow, default)]
        run_id: Str<'a>,
    },
    #[serde(rename = "TEXT_MESSAGE_START")]
    TextStart {
        #[serde(borrow, default)]
        message_id: Str<'a>,
    },
    #[serde(rename = "TEXT_MESSAGE_CONTENT")]
    TextContent {
        #[serde(borrow, default)]
        message_id: Str<'a>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "TEXT_MESSAGE_CHUNK")]
    TextChunk {
        #[serde(borrow, default)]
        message_id: Str<'a>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "TEXT_MESSAGE_END")]
    TextEnd {
        #[serde(borrow, default)]
        message_id: Str<'a>,
    },
    #[serde(
        rename = "REASONING_MESSAGE_START",
        alias = "THINKING_TEXT_MESSAGE_START"
    )]
    ReasoningStart {
        #[serde(borrow, default)]
        message_id: Str<'a>,
    },
    #[serde(
        rename = "REASONING_MESSAGE_CONTENT",
        alias = "THINKING_TEXT_MESSAGE_CONTENT"
    )]
    ReasoningContent {
        #[serde(borrow, default)]
        message_id: Str<'a>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "REASONING_MESSAGE_END", alias = "THINKING_TEXT_MESSAGE_END")]
    ReasoningEnd {
        #[serde(borrow, default)]
        message_id: Str<'a>,
    },
    #[serde(rename = "TOOL_CALL_START")]
    ToolStart {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        tool_call_name: Str<'a>,
    },
    #[serde(rename = "TOOL_CALL_ARGS")]
    ToolArgs {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "TOOL_CALL_END")]
    ToolEnd {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(default)]
        input: Raw,
        #[serde(default)]
        metadata: Loose<Metadata>,
    },
    #[serde(rename = "TOOL_CALL_RESULT")]
    ToolResult {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        content: Str<'a>,
        #[serde(default)]
        state: Raw,
        #[serde(default)]
        metadata: Loose<Metadata>,
    },
    #[serde(rename = "RUN_FINISHED")]
    RunFinished {
        #[serde(default)]
        finish_reason: Raw,
        #[serde(default)]
        metadata: Loose<Metadata>,
    },
    #[serde(rename = "RUN_ERROR")]
    RunError {
        #[serde(borrow, default)]
        message: Str<'a>,
        #[serde(borrow, default)]
        error: Loose<ErrorBody<'a>>,
        #[serde(borrow, default)]
        code: Str<'a>,
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

    /// Every `TOOL_CALL_*` event needs its `toolCallId`, the ones not read here too.
    const CHECKS_OTHER: bool = true;

    fn shape(ty: &str) -> Option<&'static Ty> {
        ty.starts_with("TOOL_CALL_").then_some(&WITH_CALL)
    }
}

/// `metadata`, where TanStack keeps what the top level does not carry.
#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    tanstack: Loose<Tanstack>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tanstack {
    #[serde(default)]
    input: Raw,
    #[serde(default)]
    state: Raw,
    #[serde(default)]
    finish_reason: Raw,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(borrow, default)]
    message: Str<'a>,
}

/// A TanStack field: at the top level when there, else under `metadata.tanstack`.
fn tanstack<'v>(
    top: &'v Raw,
    metadata: &'v Loose<Metadata>,
    field: fn(&Tanstack) -> &Raw,
) -> Option<&'v Value> {
    top.0.as_ref().or_else(|| {
        metadata
            .get()
            .and_then(|m| m.tanstack.get())
            .and_then(|t| field(t).0.as_ref())
    })
}

fn owned(s: &Str<'_>) -> String {
    s.get().unwrap_or_default().to_owned()
}

/// The AG-UI decoder.
#[derive(Default)]
pub struct AgUi {
    book: Book,
    runs: u32,
}

impl AgUi {
    pub fn new() -> Self {
        Self::default()
    }

    /// `RUN_FINISHED`: the step finishes for `reason`, and the run is over.
    fn run_finished(&mut self, reason: String, at: Span, out: &mut Out) {
        out.finish_reason = Some(reason.clone());
        out.part(PartKind::FinishStep {
            reason: unified_finish(&reason).into(),
            input_tokens: 0,
            output_tokens: 0,
        });
        out.terminal = Some("`RUN_FINISHED`".into());
        self.book.finished = Some(("`RUN_FINISHED`".into(), at));
    }

    fn event(&mut self, e: Event<'_>, data: &str, at: Span, out: &mut Out) {
        if !matches!(e, Event::RunStarted { .. }) {
            self.book.after_terminal(|| type_name(&e, data), out);
        }
        match e {
            Event::RunStarted { run_id } => {
                self.runs += 1;
                self.book.finished = None;
                out.reopened = true;
                out.part(PartKind::ResponseMetadata {
                    id: run_id.0.map(Cow::into_owned),
                });
                out.part(PartKind::StartStep);
            }
            Event::TextStart { message_id } => {
                let message = owned(&message_id);
                self.book.texts.insert(message.clone(), at);
                out.part(PartKind::TextStart { id: message });
            }
            Event::TextContent { message_id, delta } => {
                self.text_content(owned(&message_id), &delta, false, at, out);
            }
            Event::TextChunk { message_id, delta } => {
                self.text_content(owned(&message_id), &delta, true, at, out);
            }
            Event::TextEnd { message_id } => {
                let message = owned(&message_id);
                self.book.texts.remove(&message);
                out.part(PartKind::TextEnd { id: message });
            }
            Event::ReasoningStart { message_id } => out.part(PartKind::ReasoningStart {
                id: owned(&message_id),
            }),
            Event::ReasoningContent { message_id, delta } => {
                out.part(PartKind::ReasoningDelta {
                    id: owned(&message_id),
                    delta: owned(&delta),
                });
            }
            Event::ReasoningEnd { message_id } => out.part(PartKind::ReasoningEnd {
                id: owned(&message_id),
            }),
            Event::ToolStart {
                tool_call_id,
                tool_call_name,
            } => self.tool_start(tool_call_id, &tool_call_name, at, out),
            Event::ToolArgs {
                tool_call_id,
                delta,
            } => self.tool_args(tool_call_id, &delta, out),
            Event::ToolEnd {
                tool_call_id,
                input,
                metadata,
            } => {
                let input = tanstack(&input, &metadata, |t| &t.input);
                self.tool_end(tool_call_id, input, out);
            }
            Event::ToolResult {
                tool_call_id,
                content,
                state,
                metadata,
            } => {
                let state = tanstack(&state, &metadata, |t| &t.state);
                let error = state.and_then(Value::as_str) == Some("output-error");
                self.tool_result(tool_call_id, owned(&content), error, out);
            }
            Event::RunFinished {
                finish_reason,
                metadata,
            } => {
                let reason = tanstack(&finish_reason, &metadata, |t| &t.finish_reason)
                    .and_then(Value::as_str)
                    .unwrap_or("stop")
                    .to_owned();
                self.run_finished(reason, at, out);
            }
            Event::RunError {
                message,
                error,
                code,
            } => {
                let message = message
                    .get()
                    .or_else(|| error.get().and_then(|e| e.message.get()))
                    .unwrap_or("An error occurred")
                    .to_owned();
                let error = ProviderError {
                    name: code.get().unwrap_or("RUN_ERROR").to_owned(),
                    message,
                    focus: Focus::path(&["message"]),
                    data: serde_json::from_str(data).unwrap_or(Value::Null),
                };
                out.provider_error(error, false, Focus::path(&["message"]));
                out.terminal = Some("`RUN_ERROR`".into());
                self.book.finished = Some(("`RUN_ERROR`".into(), at));
            }
            Event::Other => {}
        }
    }

    /// `TEXT_MESSAGE_CONTENT`, or `TEXT_MESSAGE_CHUNK` (which starts its message if needed).
    fn text_content(
        &mut self,
        message: String,
        delta: &Str<'_>,
        chunk: bool,
        at: Span,
        out: &mut Out,
    ) {
        if !self.book.texts.contains_key(&message) {
            if chunk {
                self.book.texts.insert(message.clone(), at);
                out.part(PartKind::TextStart {
                    id: message.clone(),
                });
            } else {
                out.anomaly(
                    format!("`TEXT_MESSAGE_CONTENT` for message {message} without a `TEXT_MESSAGE_START`"),
                    true,
                    Focus::path(&["messageId"]),
                );
            }
        }
        out.part(PartKind::TextDelta {
            id: message,
            delta: owned(delta),
        });
    }

    fn tool_start(&mut self, call: Cow<'_, str>, name: &Str<'_>, at: Span, out: &mut Out) {
        if self.book.tools.contains_key(call.as_ref()) {
            out.anomaly(
                format!("a second `TOOL_CALL_START` for tool call {call}"),
                true,
                Focus::path(&["toolCallId"]),
            );
            return;
        }
        self.book.start_tool(call, owned(name), false, at, out);
    }

    fn tool_args(&mut self, call: Cow<'_, str>, delta: &Str<'_>, out: &mut Out) {
        self.book.tool_delta(
            call,
            delta.get().unwrap_or_default(),
            |call| format!("`TOOL_CALL_ARGS` for tool call {call} before its `TOOL_CALL_START` (TanStack drops it)"),
            out,
        );
    }

    fn tool_end(&mut self, call: Cow<'_, str>, input: Option<&Value>, out: &mut Out) {
        let Some(t) = self.book.tools.get_mut(call.as_ref()) else {
            out.anomaly(
                format!("`TOOL_CALL_END` for tool call {call}, which never started"),
                false,
                Focus::path(&["toolCallId"]),
            );
            return;
        };
        t.called = true;
        let input = match input {
            Some(i) if t.args.is_empty() => i.to_string(),
            _ => t.args.clone(),
        };
        let name = t.name.clone();
        let call = call.into_owned();
        out.part(PartKind::ToolInputEnd { id: call.clone() });
        out.part_at(
            PartKind::ToolCall {
                id: call,
                name,
                input,
                provider_executed: false,
            },
            Focus::path(&["toolCallId"]),
        );
    }

    fn tool_result(&mut self, call: Cow<'_, str>, content: String, error: bool, out: &mut Out) {
        // TanStack ≥ #727 handles an error result before TOOL_CALL_END; it still breaks the
        // adapter contract.
        self.book
            .tool_outcome(&call, "TOOL_CALL_RESULT", error, out);
        let name = self
            .book
            .tools
            .get(call.as_ref())
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let id = call.into_owned();
        if error {
            let text = serde_json::from_str::<Value>(&content)
                .ok()
                .and_then(|c| c.get("error").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| content.clone());
            out.part_at(
                PartKind::ToolError {
                    id,
                    name,
                    error: text,
                },
                Focus::path(&["content"]),
            );
        } else {
            out.part_at(
                PartKind::ToolResult {
                    id,
                    name,
                    output: content,
                },
                Focus::path(&["content"]),
            );
        }
    }
}

/// The event's type, for messages.
fn type_name(e: &Event<'_>, data: &str) -> String {
    let name = match e {
        Event::RunStarted { .. } => "RUN_STARTED",
        Event::TextStart { .. } => "TEXT_MESSAGE_START",
        Event::TextContent { .. } => "TEXT_MESSAGE_CONTENT",
        Event::TextChunk { .. } => "TEXT_MESSAGE_CHUNK",
        Event::TextEnd { .. } => "TEXT_MESSAGE_END",
        Event::ToolStart { .. } => "TOOL_CALL_START",
        Event::ToolArgs { .. } => "TOOL_CALL_ARGS",
        Event::ToolEnd { .. } => "TOOL_CALL_END",
        Event::ToolResult { .. } => "TOOL_CALL_RESULT",
        Event::RunFinished { .. } => "RUN_FINISHED",
        Event::RunError { .. } => "RUN_ERROR",
        // Two spellings each, and the catch-all: the payload says which.
        Event::ReasoningStart { .. }
        | Event::ReasoningContent { .. }
        | Event::ReasoningEnd { .. }
        | Event::Other => return envelope::type_name(data),
    };
    name.to_owned()
}

impl Decoder for AgUi {
    fn protocol(&self) -> Protocol {
        Protocol::AgUi
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let mut spare = None;
        match envelope::parse::<Event<'_>>(data, &mut spare)? {
            // TanStack's client synthesizes RUN_FINISHED for a legacy `[DONE]`.
            Parsed::Done => out.terminal = Some("`[DONE]`".into()),
            Parsed::Event(e) => self.event(e, data, at, out),
        }
        Ok(())
    }

    fn flush(&mut self, _out: &mut Out) {}

    fn open_at_end(&self) -> Vec<crate::session::OpenAtEnd> {
        if self.book.finished.is_some() {
            return Vec::new();
        }
        self.book.open_at_end()
    }
}
