//! The AI SDK UI message stream (v5/v6) and AG-UI (TanStack AI) → stream parts.
//!
//! Both are already close to the normalized parts: UI chunks map back the way
//! `toUIMessageStream` mapped them forward (`tool-input-available` → `tool-call`,
//! `tool-output-available` → `tool-result`, `tool-output-error` → `tool-error`, …); AG-UI
//! `TOOL_CALL_START/ARGS/END` are tool input, `TOOL_CALL_RESULT` a result or — with
//! `state: "output-error"` (top level or under `metadata.tanstack`) — a tool error,
//! `RUN_FINISHED`/`RUN_ERROR` end the run.

use std::collections::BTreeMap;

use serde_json::Value;

use super::part::{PartKind, unified_finish};
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected, parse_value, s};
use crate::model::schema::{self, Ty, req};
use crate::source::Span;

#[derive(Clone, Debug)]
struct Tool {
    name: String,
    args: String,
    at: Span,
    /// Its input is complete (`tool-input-available` / `TOOL_CALL_END`).
    called: bool,
}

/// Shared bookkeeping of the two decoders.
#[derive(Default)]
struct Book {
    tools: BTreeMap<String, Tool>,
    texts: BTreeMap<String, Span>,
    ended_texts: Vec<String>,
    step_open: bool,
    finished: Option<(String, Span)>,
}

impl Book {
    fn after_terminal(&self, ty: &str, out: &mut Out) {
        if let Some((name, at)) = &self.finished {
            out.anomaly(
                format!("`{ty}` arrives after the stream's {name}"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((*at, "the stream ended here".into()));
            }
        }
    }

    fn tool_outcome(&mut self, id: &str, ty: &str, error_before_call_benign: bool, out: &mut Out) {
        match self.tools.get_mut(id) {
            None => out.anomaly(
                format!("`{ty}` for tool call {id}, which never started"),
                false,
                Focus::path(&["toolCallId"]),
            ),
            Some(t) => {
                if !t.called {
                    out.anomaly(
                        format!("`{ty}` for tool call {id} arrives before its input was complete (before the tool call itself)"),
                        error_before_call_benign,
                        Focus::path(&["toolCallId"]),
                    );
                    let at = t.at;
                    if let Some(a) = out.anomalies.last_mut() {
                        a.related.push((at, "the tool call started here".into()));
                    }
                }
            }
        }
    }

    fn open_at_end(&self) -> Vec<(String, Span)> {
        let mut out: Vec<(String, Span)> = self
            .tools
            .iter()
            .filter(|(_, t)| !t.called)
            .map(|(id, t)| {
                (
                    format!("tool call `{}` ({id}) never got its input", t.name),
                    t.at,
                )
            })
            .collect();
        out.extend(
            self.texts
                .iter()
                .map(|(id, at)| (format!("text {id} was never ended"), *at)),
        );
        out
    }
}

static WITH_ID: Ty = Ty::Obj(&[req("id", Ty::Str)]);
static WITH_CALL: Ty = Ty::Obj(&[req("toolCallId", Ty::Str)]);

/// The UI message stream decoder.
#[derive(Default)]
pub struct UiStream {
    book: Book,
    finish_reason: Option<String>,
}

impl UiStream {
    pub fn new() -> Self {
        Self::default()
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let ty = s(v, "type").unwrap_or_default();
        let shape = match ty {
            "text-start" | "text-delta" | "text-end" | "reasoning-start" | "reasoning-delta"
            | "reasoning-end" => Some(&WITH_ID),
            t if t.starts_with("tool-") => Some(&WITH_CALL),
            _ => None,
        };
        if let Some(shape) = shape {
            let issues = schema::validate(v, shape);
            if !issues.is_empty() {
                return Err(Rejected::Schema(issues));
            }
        }
        self.book.after_terminal(ty, out);
        let id = s(v, "id").unwrap_or_default().to_owned();
        let call = s(v, "toolCallId").unwrap_or_default().to_owned();
        let name = s(v, "toolName").unwrap_or_default().to_owned();
        match ty {
            "start" => out.part(PartKind::ResponseMetadata {
                id: s(v, "messageId").map(str::to_owned),
            }),
            "start-step" => {
                self.book.step_open = true;
                out.part(PartKind::StartStep);
            }
            "finish-step" => {
                if !self.book.step_open {
                    out.anomaly("`finish-step` without a `start-step`", true, Focus::None);
                }
                self.book.step_open = false;
                out.part(PartKind::FinishStep {
                    reason: "unknown".into(),
                    input_tokens: 0,
                    output_tokens: 0,
                });
            }
            "text-start" => {
                self.book.texts.insert(id.clone(), at);
                out.part(PartKind::TextStart { id });
            }
            "text-delta" | "reasoning-delta" => {
                let known = self.book.texts.contains_key(&id);
                if !known {
                    let when = if self.book.ended_texts.contains(&id) {
                        "after its end"
                    } else {
                        "that was never started"
                    };
                    out.anomaly(
                        format!("`{ty}` for part {id} {when}"),
                        false,
                        Focus::path(&["id"]),
                    );
                }
                let delta = s(v, "delta").unwrap_or_default().to_owned();
                if ty == "text-delta" {
                    out.part(PartKind::TextDelta { id, delta });
                } else {
                    out.part(PartKind::ReasoningDelta { id, delta });
                }
            }
            "text-end" | "reasoning-end" => {
                self.book.texts.remove(&id);
                self.book.ended_texts.push(id.clone());
                if ty == "text-end" {
                    out.part(PartKind::TextEnd { id });
                } else {
                    out.part(PartKind::ReasoningEnd { id });
                }
            }
            "reasoning-start" => {
                self.book.texts.insert(id.clone(), at);
                out.part(PartKind::ReasoningStart { id });
            }
            "tool-input-start" => {
                self.book.tools.insert(
                    call.clone(),
                    Tool {
                        name: name.clone(),
                        args: String::new(),
                        at,
                        called: false,
                    },
                );
                out.part_at(
                    PartKind::ToolInputStart {
                        id: call,
                        name,
                        provider_executed: v.get("providerExecuted") == Some(&Value::Bool(true)),
                    },
                    Focus::path(&["toolCallId"]),
                );
            }
            "tool-input-delta" => match self.book.tools.get_mut(&call) {
                Some(t) => {
                    let d = s(v, "inputTextDelta").unwrap_or_default();
                    t.args.push_str(d);
                    out.part(PartKind::ToolInputDelta {
                        id: call,
                        delta: d.to_owned(),
                    });
                }
                None => out.anomaly(
                    format!(
                        "`tool-input-delta` for tool call {call} before its `tool-input-start`"
                    ),
                    false,
                    Focus::path(&["toolCallId"]),
                ),
            },
            "tool-input-available" | "tool-input-error" => {
                let input = v.get("input").map(Value::to_string).unwrap_or_default();
                let existed = self.book.tools.contains_key(&call);
                let t = self.book.tools.entry(call.clone()).or_insert(Tool {
                    name: name.clone(),
                    args: String::new(),
                    at,
                    called: false,
                });
                t.called = true;
                if !existed {
                    out.part(PartKind::ToolInputStart {
                        id: call.clone(),
                        name: name.clone(),
                        provider_executed: false,
                    });
                }
                out.part(PartKind::ToolInputEnd { id: call.clone() });
                out.part_at(
                    PartKind::ToolCall {
                        id: call.clone(),
                        name: name.clone(),
                        input,
                        provider_executed: false,
                    },
                    Focus::path(&["toolCallId"]),
                );
                if ty == "tool-input-error" {
                    out.part_at(
                        PartKind::ToolError {
                            id: call,
                            name,
                            error: s(v, "errorText").unwrap_or_default().to_owned(),
                        },
                        Focus::path(&["errorText"]),
                    );
                }
            }
            "tool-output-available" => {
                self.book.tool_outcome(&call, ty, false, out);
                let name = self
                    .book
                    .tools
                    .get(&call)
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                out.part_at(
                    PartKind::ToolResult {
                        id: call,
                        name,
                        output: v.get("output").map(Value::to_string).unwrap_or_default(),
                    },
                    Focus::path(&["toolCallId"]),
                );
            }
            "tool-output-error" | "tool-output-denied" => {
                self.book.tool_outcome(&call, ty, false, out);
                let name = self
                    .book
                    .tools
                    .get(&call)
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                let error = if ty == "tool-output-denied" {
                    "the tool call was denied".to_owned()
                } else {
                    s(v, "errorText").unwrap_or_default().to_owned()
                };
                out.part_at(
                    PartKind::ToolError {
                        id: call,
                        name,
                        error,
                    },
                    Focus::path(&["errorText"]),
                );
            }
            "error" => {
                let message = s(v, "errorText").unwrap_or_default().to_owned();
                let error = ProviderError {
                    name: "error".into(),
                    message,
                    focus: Focus::path(&["errorText"]),
                    data: v.clone(),
                };
                out.provider_error(error, false, Focus::path(&["errorText"]));
            }
            "finish" => {
                let raw = s(v, "finishReason").unwrap_or("stop").to_owned();
                out.finish_reason = Some(raw.clone());
                self.finish_reason = Some(raw.clone());
                out.part(PartKind::Finish { reason: raw });
                out.terminal = Some("`finish`".into());
                self.book.finished = Some(("`finish`".into(), at));
            }
            "abort" => {
                out.part(PartKind::Abort {
                    reason: s(v, "reason").map(str::to_owned),
                });
                out.terminal = Some("`abort`".into());
                self.book.finished = Some(("`abort`".into(), at));
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decoder for UiStream {
    fn protocol(&self) -> Protocol {
        Protocol::UiStream
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
        if self.book.finished.is_some() {
            return Vec::new();
        }
        self.book.open_at_end()
    }
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

    fn tanstack<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
        v.get(key)
            .or_else(|| v.pointer(&format!("/metadata/tanstack/{key}")))
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let ty = s(v, "type").unwrap_or_default();
        if ty.starts_with("TOOL_CALL_") {
            let issues = schema::validate(v, &WITH_CALL);
            if !issues.is_empty() {
                return Err(Rejected::Schema(issues));
            }
        }
        if ty != "RUN_STARTED" {
            self.book.after_terminal(ty, out);
        }
        let call = s(v, "toolCallId").unwrap_or_default().to_owned();
        let message = s(v, "messageId").unwrap_or_default().to_owned();
        match ty {
            "RUN_STARTED" => {
                self.runs += 1;
                self.book.finished = None;
                out.reopened = true;
                out.part(PartKind::ResponseMetadata {
                    id: s(v, "runId").map(str::to_owned),
                });
                out.part(PartKind::StartStep);
            }
            "TEXT_MESSAGE_START" => {
                self.book.texts.insert(message.clone(), at);
                out.part(PartKind::TextStart { id: message });
            }
            "TEXT_MESSAGE_CONTENT" | "TEXT_MESSAGE_CHUNK" => {
                if !self.book.texts.contains_key(&message) {
                    if ty == "TEXT_MESSAGE_CHUNK" {
                        self.book.texts.insert(message.clone(), at);
                        out.part(PartKind::TextStart { id: message.clone() });
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
                    delta: s(v, "delta").unwrap_or_default().to_owned(),
                });
            }
            "TEXT_MESSAGE_END" => {
                self.book.texts.remove(&message);
                out.part(PartKind::TextEnd { id: message });
            }
            "REASONING_MESSAGE_START" | "THINKING_TEXT_MESSAGE_START" => {
                out.part(PartKind::ReasoningStart { id: message })
            }
            "REASONING_MESSAGE_CONTENT" | "THINKING_TEXT_MESSAGE_CONTENT" => {
                out.part(PartKind::ReasoningDelta {
                    id: message,
                    delta: s(v, "delta").unwrap_or_default().to_owned(),
                })
            }
            "REASONING_MESSAGE_END" | "THINKING_TEXT_MESSAGE_END" => {
                out.part(PartKind::ReasoningEnd { id: message })
            }
            "TOOL_CALL_START" => {
                let name = s(v, "toolCallName").unwrap_or_default().to_owned();
                if self.book.tools.contains_key(&call) {
                    out.anomaly(
                        format!("a second `TOOL_CALL_START` for tool call {call}"),
                        true,
                        Focus::path(&["toolCallId"]),
                    );
                    return Ok(());
                }
                self.book.tools.insert(
                    call.clone(),
                    Tool {
                        name: name.clone(),
                        args: String::new(),
                        at,
                        called: false,
                    },
                );
                out.part_at(
                    PartKind::ToolInputStart {
                        id: call,
                        name,
                        provider_executed: false,
                    },
                    Focus::path(&["toolCallId"]),
                );
            }
            "TOOL_CALL_ARGS" => match self.book.tools.get_mut(&call) {
                Some(t) => {
                    let d = s(v, "delta").unwrap_or_default();
                    t.args.push_str(d);
                    out.part(PartKind::ToolInputDelta {
                        id: call,
                        delta: d.to_owned(),
                    });
                }
                None => out.anomaly(
                    format!("`TOOL_CALL_ARGS` for tool call {call} before its `TOOL_CALL_START` (TanStack drops it)"),
                    false,
                    Focus::path(&["toolCallId"]),
                ),
            },
            "TOOL_CALL_END" => match self.book.tools.get_mut(&call) {
                Some(t) => {
                    t.called = true;
                    let input = match Self::tanstack(v, "input") {
                        Some(i) if t.args.is_empty() => i.to_string(),
                        _ => t.args.clone(),
                    };
                    let name = t.name.clone();
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
                None => out.anomaly(
                    format!("`TOOL_CALL_END` for tool call {call}, which never started"),
                    false,
                    Focus::path(&["toolCallId"]),
                ),
            },
            "TOOL_CALL_RESULT" => {
                let error = Self::tanstack(v, "state").and_then(Value::as_str) == Some("output-error");
                // TanStack ≥ #727 handles an error result before TOOL_CALL_END; it still breaks
                // the adapter contract.
                self.book.tool_outcome(&call, ty, error, out);
                let name = self.book.tools.get(&call).map(|t| t.name.clone()).unwrap_or_default();
                let content = s(v, "content").unwrap_or_default().to_owned();
                if error {
                    let text = serde_json::from_str::<Value>(&content)
                        .ok()
                        .and_then(|c| c.get("error").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_else(|| content.clone());
                    out.part_at(
                        PartKind::ToolError {
                            id: call,
                            name,
                            error: text,
                        },
                        Focus::path(&["content"]),
                    );
                } else {
                    out.part_at(
                        PartKind::ToolResult {
                            id: call,
                            name,
                            output: content,
                        },
                        Focus::path(&["content"]),
                    );
                }
            }
            "RUN_FINISHED" => {
                let reason = Self::tanstack(v, "finishReason")
                    .and_then(Value::as_str)
                    .unwrap_or("stop")
                    .to_owned();
                out.finish_reason = Some(reason.clone());
                out.part(PartKind::FinishStep {
                    reason: unified_finish(&reason).into(),
                    input_tokens: 0,
                    output_tokens: 0,
                });
                out.terminal = Some("`RUN_FINISHED`".into());
                self.book.finished = Some(("`RUN_FINISHED`".into(), at));
            }
            "RUN_ERROR" => {
                let message = s(v, "message")
                    .or_else(|| v.pointer("/error/message").and_then(Value::as_str))
                    .unwrap_or("An error occurred")
                    .to_owned();
                let name = s(v, "code").unwrap_or("RUN_ERROR").to_owned();
                let error = ProviderError {
                    name,
                    message,
                    focus: Focus::path(&["message"]),
                    data: v.clone(),
                };
                out.provider_error(error, false, Focus::path(&["message"]));
                out.terminal = Some("`RUN_ERROR`".into());
                self.book.finished = Some(("`RUN_ERROR`".into(), at));
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decoder for AgUi {
    fn protocol(&self) -> Protocol {
        Protocol::AgUi
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if data.trim() == "[DONE]" {
            // TanStack's client synthesizes RUN_FINISHED for a legacy `[DONE]`.
            out.terminal = Some("`[DONE]`".into());
            return Ok(());
        }
        let v = parse_value(data)?;
        self.event(&v, at, out)
    }

    fn flush(&mut self, _out: &mut Out) {}

    fn open_at_end(&self) -> Vec<(String, Span)> {
        if self.book.finished.is_some() {
            return Vec::new();
        }
        self.book.open_at_end()
    }
}
