//! The AI SDK UI message stream (v5/v6) → stream parts.
//!
//! UI chunks are already close to the normalized parts: they map back the way
//! `toUIMessageStream` mapped them forward (`tool-input-available` → `tool-call`,
//! `tool-output-available` → `tool-result`, `tool-output-error` → `tool-error`, …).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::envelope::{self, Envelope, Parsed, Raw, Str, True};
use super::part::PartKind;
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected};
use super::ui_book::{Book, Tool};
use crate::model::schema::{Ty, req};
use crate::source::Span;

static WITH_ID: Ty = Ty::Obj(&[req("id", Ty::Str)]);
static WITH_CALL: Ty = Ty::Obj(&[req("toolCallId", Ty::Str)]);

/// The chunks the decoder reads; `id` and `toolCallId` are strict.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
enum Chunk<'a> {
    #[serde(rename = "start")]
    Start {
        #[serde(borrow, default)]
        message_id: Str<'a>,
    },
    #[serde(rename = "start-step")]
    StartStep,
    #[serde(rename = "finish-step")]
    FinishStep,
    #[serde(rename = "text-start")]
    TextStart {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
    #[serde(rename = "text-delta")]
    TextDelta {
        #[serde(borrow)]
        id: Cow<'a, str>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "text-end")]
    TextEnd {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
    #[serde(rename = "reasoning-start")]
    ReasoningStart {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
    #[serde(rename = "reasoning-delta")]
    ReasoningDelta {
        #[serde(borrow)]
        id: Cow<'a, str>,
        #[serde(borrow, default)]
        delta: Str<'a>,
    },
    #[serde(rename = "reasoning-end")]
    ReasoningEnd {
        #[serde(borrow)]
        id: Cow<'a, str>,
    },
    #[serde(rename = "tool-input-start")]
    ToolInputStart {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        tool_name: Str<'a>,
        #[serde(default)]
        provider_executed: True,
    },
    #[serde(rename = "tool-input-delta")]
    ToolInputDelta {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        input_text_delta: Str<'a>,
    },
    #[serde(rename = "tool-input-available")]
    ToolInputAvailable {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        tool_name: Str<'a>,
        #[serde(default)]
        input: Raw,
    },
    #[serde(rename = "tool-input-error")]
    ToolInputError {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        tool_name: Str<'a>,
        #[serde(default)]
        input: Raw,
        #[serde(borrow, default)]
        error_text: Str<'a>,
    },
    #[serde(rename = "tool-output-available")]
    ToolOutputAvailable {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(default)]
        output: Raw,
    },
    #[serde(rename = "tool-output-error")]
    ToolOutputError {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
        #[serde(borrow, default)]
        error_text: Str<'a>,
    },
    #[serde(rename = "tool-output-denied")]
    ToolOutputDenied {
        #[serde(borrow)]
        tool_call_id: Cow<'a, str>,
    },
    #[serde(rename = "error")]
    Error {
        #[serde(borrow, default)]
        error_text: Str<'a>,
    },
    #[serde(rename = "finish")]
    Finish {
        #[serde(borrow, default)]
        finish_reason: Str<'a>,
    },
    #[serde(rename = "abort")]
    Abort {
        #[serde(borrow, default)]
        reason: Str<'a>,
    },
    #[serde(other)]
    Other,
}

impl<'a> Envelope<'a> for Chunk<'a> {
    fn other() -> Self {
        Chunk::Other
    }

    fn is_other(&self) -> bool {
        matches!(self, Chunk::Other)
    }

    /// Every `tool-*` chunk needs its `toolCallId`, the ones not read here too.
    const CHECKS_OTHER: bool = true;

    fn shape(ty: &str) -> Option<&'static Ty> {
        match ty {
            "text-start" | "text-delta" | "text-end" | "reasoning-start" | "reasoning-delta"
            | "reasoning-end" => Some(&WITH_ID),
            t if t.starts_with("tool-") => Some(&WITH_CALL),
            _ => None,
        }
    }
}

impl Chunk<'_> {
    /// The chunk's type (`None` for the catch-all, which does not keep it).
    fn name(&self) -> Option<&'static str> {
        Some(match self {
            Chunk::Start { .. } => "start",
            Chunk::StartStep => "start-step",
            Chunk::FinishStep => "finish-step",
            Chunk::TextStart { .. } => "text-start",
            Chunk::TextDelta { .. } => "text-delta",
            Chunk::TextEnd { .. } => "text-end",
            Chunk::ReasoningStart { .. } => "reasoning-start",
            Chunk::ReasoningDelta { .. } => "reasoning-delta",
            Chunk::ReasoningEnd { .. } => "reasoning-end",
            Chunk::ToolInputStart { .. } => "tool-input-start",
            Chunk::ToolInputDelta { .. } => "tool-input-delta",
            Chunk::ToolInputAvailable { .. } => "tool-input-available",
            Chunk::ToolInputError { .. } => "tool-input-error",
            Chunk::ToolOutputAvailable { .. } => "tool-output-available",
            Chunk::ToolOutputError { .. } => "tool-output-error",
            Chunk::ToolOutputDenied { .. } => "tool-output-denied",
            Chunk::Error { .. } => "error",
            Chunk::Finish { .. } => "finish",
            Chunk::Abort { .. } => "abort",
            Chunk::Other => return None,
        })
    }
}

/// A JSON field rendered as JSON text, or "" when absent.
fn json_text(r: &Raw) -> String {
    r.0.as_ref().map(Value::to_string).unwrap_or_default()
}

fn owned(s: &Str<'_>) -> String {
    s.get().unwrap_or_default().to_owned()
}

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

    fn chunk(&mut self, c: Chunk<'_>, data: &str, at: Span, out: &mut Out) {
        let ty = c.name();
        self.book.after_terminal(
            || ty.map_or_else(|| envelope::type_name(data), str::to_owned),
            out,
        );
        let ty = ty.unwrap_or_default();
        match c {
            Chunk::Start { message_id } => out.part(PartKind::ResponseMetadata {
                id: message_id.0.map(Cow::into_owned),
            }),
            Chunk::StartStep => {
                self.book.step_open = true;
                out.part(PartKind::StartStep);
            }
            Chunk::FinishStep => self.finish_step(out),
            Chunk::TextStart { id } => {
                self.book.texts.insert(id.to_string(), at);
                out.part(PartKind::TextStart {
                    id: id.into_owned(),
                });
            }
            Chunk::ReasoningStart { id } => {
                self.book.texts.insert(id.to_string(), at);
                out.part(PartKind::ReasoningStart {
                    id: id.into_owned(),
                });
            }
            Chunk::TextDelta { id, delta } => {
                let (id, delta) = self.delta(ty, id, delta, out);
                out.part(PartKind::TextDelta { id, delta });
            }
            Chunk::ReasoningDelta { id, delta } => {
                let (id, delta) = self.delta(ty, id, delta, out);
                out.part(PartKind::ReasoningDelta { id, delta });
            }
            Chunk::TextEnd { id } => {
                let id = self.end(id);
                out.part(PartKind::TextEnd { id });
            }
            Chunk::ReasoningEnd { id } => {
                let id = self.end(id);
                out.part(PartKind::ReasoningEnd { id });
            }
            Chunk::ToolInputStart {
                tool_call_id,
                tool_name,
                provider_executed,
            } => self.tool_input_start(tool_call_id, &tool_name, provider_executed.0, at, out),
            Chunk::ToolInputDelta {
                tool_call_id,
                input_text_delta,
            } => self.tool_input_delta(tool_call_id, &input_text_delta, out),
            Chunk::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
            } => {
                self.tool_input(&tool_call_id, &tool_name, &input, at, out);
            }
            Chunk::ToolInputError {
                tool_call_id,
                tool_name,
                input,
                error_text,
            } => {
                self.tool_input(&tool_call_id, &tool_name, &input, at, out);
                Self::tool_error(tool_call_id, owned(&tool_name), owned(&error_text), out);
            }
            Chunk::ToolOutputAvailable {
                tool_call_id,
                output,
            } => self.tool_result(tool_call_id, &output, ty, out),
            Chunk::ToolOutputError {
                tool_call_id,
                error_text,
            } => {
                let name = self.tool_outcome(&tool_call_id, ty, out);
                let error = owned(&error_text);
                Self::tool_error(tool_call_id, name, error, out);
            }
            Chunk::ToolOutputDenied { tool_call_id } => {
                let name = self.tool_outcome(&tool_call_id, ty, out);
                let error = "the tool call was denied".to_owned();
                Self::tool_error(tool_call_id, name, error, out);
            }
            Chunk::Error { error_text } => {
                let error = ProviderError {
                    name: "error".into(),
                    message: owned(&error_text),
                    focus: Focus::path(&["errorText"]),
                    data: serde_json::from_str(data).unwrap_or(Value::Null),
                };
                out.provider_error(error, false, Focus::path(&["errorText"]));
            }
            Chunk::Finish { finish_reason } => self.finish(&finish_reason, at, out),
            Chunk::Abort { reason } => self.abort(reason, at, out),
            Chunk::Other => {}
        }
    }

    /// `tool-output-available`: the call's result.
    fn tool_result(&mut self, call: Cow<'_, str>, output: &Raw, ty: &str, out: &mut Out) {
        let name = self.tool_outcome(&call, ty, out);
        out.part_at(
            PartKind::ToolResult {
                id: call.into_owned(),
                name,
                output: json_text(output),
            },
            Focus::path(&["toolCallId"]),
        );
    }

    /// `finish`: the end of the message, with its reason (`stop` when it gives none).
    fn finish(&mut self, finish_reason: &Str<'_>, at: Span, out: &mut Out) {
        let raw = finish_reason.get().unwrap_or("stop").to_owned();
        out.finish_reason = Some(raw.clone());
        self.finish_reason = Some(raw.clone());
        out.part(PartKind::Finish { reason: raw });
        out.terminal = Some("`finish`".into());
        self.book.finished = Some(("`finish`".into(), at));
    }

    /// `abort`: the stream was aborted.
    fn abort(&mut self, reason: Str<'_>, at: Span, out: &mut Out) {
        out.part(PartKind::Abort {
            reason: reason.0.map(Cow::into_owned),
        });
        out.terminal = Some("`abort`".into());
        self.book.finished = Some(("`abort`".into(), at));
    }

    fn finish_step(&mut self, out: &mut Out) {
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

    /// A text or reasoning delta: its part id and its text.
    fn delta(&self, ty: &str, id: Cow<'_, str>, delta: Str<'_>, out: &mut Out) -> (String, String) {
        if !self.book.texts.contains_key(id.as_ref()) {
            let when = if self.book.ended_texts.contains(id.as_ref()) {
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
        let delta = delta.0.map(Cow::into_owned).unwrap_or_default();
        (id.into_owned(), delta)
    }

    fn end(&mut self, id: Cow<'_, str>) -> String {
        self.book.texts.remove(id.as_ref());
        let id = id.into_owned();
        self.book.ended_texts.insert(id.clone());
        id
    }

    fn tool_input_start(
        &mut self,
        call: Cow<'_, str>,
        name: &Str<'_>,
        provider_executed: bool,
        at: Span,
        out: &mut Out,
    ) {
        self.book
            .start_tool(call, owned(name), provider_executed, at, out);
    }

    fn tool_input_delta(&mut self, call: Cow<'_, str>, delta: &Str<'_>, out: &mut Out) {
        self.book.tool_delta(
            call,
            delta.get().unwrap_or_default(),
            |call| format!("`tool-input-delta` for tool call {call} before its `tool-input-start`"),
            out,
        );
    }

    /// `tool-input-available` / `tool-input-error`: the call's input is complete.
    fn tool_input(&mut self, call: &str, name: &Str<'_>, input: &Raw, at: Span, out: &mut Out) {
        let name = owned(name);
        let existed = self.book.tools.contains_key(call);
        let t = self.book.tools.entry(call.to_owned()).or_insert(Tool {
            name: name.clone(),
            args: String::new(),
            at,
            called: false,
        });
        t.called = true;
        if !existed {
            out.part(PartKind::ToolInputStart {
                id: call.to_owned(),
                name: name.clone(),
                provider_executed: false,
            });
        }
        out.part(PartKind::ToolInputEnd {
            id: call.to_owned(),
        });
        out.part_at(
            PartKind::ToolCall {
                id: call.to_owned(),
                name,
                input: json_text(input),
                provider_executed: false,
            },
            Focus::path(&["toolCallId"]),
        );
    }

    /// A tool's outcome arrives: checked against its call; returns the tool's name.
    fn tool_outcome(&mut self, call: &str, ty: &str, out: &mut Out) -> String {
        self.book.tool_outcome(call, ty, false, out);
        self.book
            .tools
            .get(call)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    }

    fn tool_error(call: Cow<'_, str>, name: String, error: String, out: &mut Out) {
        out.part_at(
            PartKind::ToolError {
                id: call.into_owned(),
                name,
                error,
            },
            Focus::path(&["errorText"]),
        );
    }
}

impl Decoder for UiStream {
    fn protocol(&self) -> Protocol {
        Protocol::UiStream
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let mut spare = None;
        match envelope::parse::<Chunk<'_>>(data, &mut spare)? {
            Parsed::Done => {}
            Parsed::Event(c) => self.chunk(c, data, at, out),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn decode(d: &mut UiStream, data: &str) -> (usize, String) {
        let mut out = Out::default();
        let r = match d.decode(data, Span::new(FileId(0), 0, 0), &mut out) {
            Ok(()) => String::new(),
            Err(Rejected::Json(e)) => format!("json: {e}"),
            Err(Rejected::Schema(i)) => format!("schema: {}", i[0]),
        };
        (out.parts.len(), r)
    }

    #[test]
    fn every_tool_chunk_needs_its_call_id() {
        let mut d = UiStream::new();
        let (_, r) = decode(
            &mut d,
            r#"{"type":"tool-approval-request","approvalId":"a"}"#,
        );
        assert!(r.starts_with("schema: `toolCallId`"), "{r}");
        let (n, r) = decode(
            &mut d,
            r#"{"type":"tool-approval-request","toolCallId":"c","approvalId":"a"}"#,
        );
        assert_eq!((n, r.as_str()), (0, ""));
        let (_, r) = decode(&mut d, r#"{"type":"text-delta","delta":"x"}"#);
        assert!(r.starts_with("schema: `id`"), "{r}");
        let (n, r) = decode(&mut d, r#"{"type":"data-weather","data":{}}"#);
        assert_eq!((n, r.as_str()), (0, ""));
    }
}
