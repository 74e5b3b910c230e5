//! OpenAI Chat Completions chunks → stream parts, as the AI SDK's openai and openai-compatible
//! providers map them.
//!
//! * text: `delta.content` (non-empty) opens text `0` and appends; reasoning likewise from
//!   `delta.reasoning_content` / `delta.reasoning`;
//! * tool calls (the SDK's `StreamingToolCallTracker`): a delta names its call by `id` when it has
//!   a non-empty one, else by `index`, else the latest call; a new call needs an `id` and a
//!   `function.name` (otherwise `InvalidResponseDataError`, which errors the stream); arguments
//!   accumulate and every call is finalized (`tool-input-end`, `tool-call`) when the stream ends;
//! * `{"error": …}` is an in-band provider error (an `error` part);
//! * the stream's end emits `text-end`, the pending tool calls, and `finish`; a stream that never
//!   gave a `finish_reason` gets `InvalidResponseDataError("Response stream ended without a finish
//!   reason.")` first (openai-compatible, #19165).
//!
//! The chunk is parsed into typed, borrowed fields — the hot path of a long capture — and only a
//! chunk that does not fit is parsed again as a value and validated against [`CHUNK`], so a
//! `schema-violation` can name the field.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::envelope;
use super::part::{ErrorKind, PartKind, StreamError, unified_finish};
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected};
use crate::model::schema::{self, Field, Ty, opt};
use crate::session::OpenAtEnd;
use crate::source::Span;

const STR: Ty = Ty::Nullable(&Ty::Str);
const NUM: Ty = Ty::Nullable(&Ty::Num);
const FUNCTION: &[Field] = &[opt("name", STR), opt("arguments", STR)];
const TOOL_CALL: &[Field] = &[
    opt("index", NUM),
    opt("id", STR),
    opt("type", STR),
    opt("function", Ty::Nullable(&Ty::Obj(FUNCTION))),
];
const DELTA: &[Field] = &[
    opt("role", STR),
    opt("content", STR),
    opt("refusal", STR),
    opt("reasoning_content", STR),
    opt("reasoning", STR),
    opt("tool_calls", Ty::Nullable(&Ty::Array(&Ty::Obj(TOOL_CALL)))),
];
const CHOICE: &[Field] = &[
    opt("index", NUM),
    opt("delta", Ty::Nullable(&Ty::Obj(DELTA))),
    opt("finish_reason", STR),
];

/// The chunk schema (the fields the SDK reads; `zod` strips the others).
pub static CHUNK: Ty = Ty::Obj(&[
    opt("id", STR),
    opt("model", STR),
    opt("created", NUM),
    opt("choices", Ty::Array(&Ty::Obj(CHOICE))),
]);

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<f64>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

struct Tracked {
    id: String,
    name: String,
    args: String,
    finished: bool,
    at: Span,
}

/// The decoder.
#[derive(Default)]
pub struct OpenAiChat {
    started: bool,
    text_open: bool,
    reasoning_open: bool,
    tools: Vec<Tracked>,
    by_id: HashMap<String, usize>,
    by_index: HashMap<i64, usize>,
    latest: Option<usize>,
    finish_reason: Option<String>,
    usage: (u64, u64),
    done: Option<Span>,
    failed: bool,
}

impl OpenAiChat {
    pub fn new() -> Self {
        Self::default()
    }

    fn tool_delta(&mut self, d: &ToolCallDelta<'_>, k: usize, at: Span, out: &mut Out) {
        let id = d.id.as_deref().filter(|s| !s.is_empty());
        let found = match id {
            Some(id) => self.by_id.get(id).copied(),
            None => match d.index {
                Some(i) => self.by_index.get(&(i as i64)).copied(),
                None => self.latest,
            },
        };
        let slot = match found {
            Some(slot) => {
                let t = &mut self.tools[slot];
                if !t.finished
                    && let Some(args) = d.function.as_ref().and_then(|f| f.arguments.as_deref())
                {
                    t.args.push_str(args);
                    out.part(PartKind::ToolInputDelta {
                        id: t.id.clone(),
                        delta: args.to_owned(),
                    });
                }
                slot
            }
            None => {
                let name = d.function.as_ref().and_then(|f| f.name.as_deref());
                let (Some(id), Some(name)) = (d.id.as_deref(), name) else {
                    let missing = if d.id.is_none() {
                        "'id' to be a string"
                    } else {
                        "'function.name' to be a string"
                    };
                    self.fail(
                        format!("Expected {missing}."),
                        Focus::path(&["choices", "0", "delta", "tool_calls", &k.to_string()]),
                        out,
                    );
                    return;
                };
                let args = d
                    .function
                    .as_ref()
                    .and_then(|f| f.arguments.as_deref())
                    .unwrap_or_default();
                out.part_at(
                    PartKind::ToolInputStart {
                        id: id.to_owned(),
                        name: name.to_owned(),
                        provider_executed: false,
                    },
                    Focus::path(&["choices", "0", "delta", "tool_calls", &k.to_string(), "id"]),
                );
                if !args.is_empty() {
                    out.part(PartKind::ToolInputDelta {
                        id: id.to_owned(),
                        delta: args.to_owned(),
                    });
                }
                let slot = self.tools.len();
                self.tools.push(Tracked {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    args: args.to_owned(),
                    finished: false,
                    at,
                });
                if !id.is_empty() {
                    self.by_id.insert(id.to_owned(), slot);
                }
                slot
            }
        };
        if let Some(i) = d.index {
            self.by_index.insert(i as i64, slot);
        }
        self.latest = Some(slot);
    }

    /// The SDK throws inside its transform: the stream errors and nothing more is read.
    fn fail(&mut self, message: String, focus: Focus, out: &mut Out) {
        self.failed = true;
        out.part_at(
            PartKind::Error(StreamError {
                kind: ErrorKind::InvalidResponse,
                name: "AI_InvalidResponseDataError".into(),
                message,
                retryable: false,
            }),
            focus,
        );
        out.fatal = true;
    }

    fn chunk(&mut self, c: Chunk<'_>, at: Span, out: &mut Out) {
        if let Some(err) = c.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            let name = err
                .get("type")
                .or_else(|| err.get("code"))
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .unwrap_or_else(|| "error".into());
            let retryable = is_retryable(&name);
            let error = ProviderError {
                name,
                message,
                focus: Focus::path(&["error", "message"]),
                data: err,
            };
            out.provider_error(error, retryable, Focus::path(&["error"]));
            self.finish_reason.get_or_insert_with(|| "error".into());
            return;
        }
        if !self.started {
            self.started = true;
            out.part(PartKind::ResponseMetadata {
                id: c.id.as_deref().map(str::to_owned),
            });
            out.part(PartKind::StartStep);
        }
        if let Some(u) = c.usage.filter(Value::is_object) {
            let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0) as u64;
            self.usage = (n("prompt_tokens"), n("completion_tokens"));
        }
        let Some(choice) = c.choices.and_then(|cs| cs.into_iter().next()) else {
            return;
        };
        if let Some(delta) = choice.delta {
            let has_output = delta.content.as_deref().is_some_and(|s| !s.is_empty())
                || delta.tool_calls.as_ref().is_some_and(|t| !t.is_empty());
            if has_output && self.finish_reason.is_some() {
                out.anomaly(
                    "content after the stream's `finish_reason`",
                    true,
                    Focus::path(&["choices", "0", "delta"]),
                );
            }
            let reasoning = delta
                .reasoning_content
                .as_deref()
                .or(delta.reasoning.as_deref())
                .filter(|s| !s.is_empty());
            if let Some(r) = reasoning {
                if !self.reasoning_open {
                    self.reasoning_open = true;
                    out.part(PartKind::ReasoningStart {
                        id: "reasoning-0".into(),
                    });
                }
                out.part(PartKind::ReasoningDelta {
                    id: "reasoning-0".into(),
                    delta: r.to_owned(),
                });
            }
            if let Some(text) = delta.content.as_deref().filter(|s| !s.is_empty()) {
                if self.reasoning_open {
                    self.reasoning_open = false;
                    out.part(PartKind::ReasoningEnd {
                        id: "reasoning-0".into(),
                    });
                }
                if !self.text_open {
                    self.text_open = true;
                    out.part(PartKind::TextStart { id: "0".into() });
                }
                out.part(PartKind::TextDelta {
                    id: "0".into(),
                    delta: text.to_owned(),
                });
            }
            if let Some(calls) = delta.tool_calls {
                for (k, d) in calls.iter().enumerate() {
                    self.tool_delta(d, k, at, out);
                    if self.failed {
                        return;
                    }
                }
            }
        }
        if let Some(reason) = choice.finish_reason {
            out.finish_reason = Some(reason.to_string());
            out.terminal = Some(format!("finish_reason `{reason}`"));
            self.finish_reason = Some(reason.into_owned());
        }
    }
}

/// Provider error types the agents' retry logic retries.
pub fn is_retryable(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("overloaded")
        || n.contains("rate_limit")
        || n.contains("server_error")
        || n.contains("api_error")
        || n.contains("timeout")
        || n == "529"
        || n == "503"
}

/// A gateway's accounting chunk after `[DONE]`: no choices, only ids, cost and usage.
fn gateway_trailer(data: &str) -> bool {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(data) else {
        return false;
    };
    let no_choices = obj
        .get("choices")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty);
    let accounting = obj.keys().all(|k| {
        matches!(
            k.as_str(),
            "choices" | "cost" | "usage" | "id" | "object" | "created" | "model" | "provider"
        )
    });
    no_choices && accounting
}

impl Decoder for OpenAiChat {
    fn protocol(&self) -> Protocol {
        Protocol::OpenAiChat
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if self.failed {
            return Ok(());
        }
        if envelope::is_done(data) {
            if self.done.is_some() {
                out.anomaly("a second `[DONE]`", true, Focus::None);
            }
            self.done = Some(at);
            out.terminal = Some("`[DONE]`".into());
            return Ok(());
        }
        if self.done.is_some() {
            if gateway_trailer(data) {
                // OpenCode Zen and OpenRouter send `{"choices":[],"cost":"0"}` after `[DONE]`:
                // known gateway behaviour, read by no client.
                return Ok(());
            }
            out.anomaly("an event after `[DONE]`", true, Focus::None);
        }
        match serde_json::from_str::<Chunk<'_>>(data) {
            Ok(c) => {
                // Nothing of a chunk's: another protocol's event read as one.
                out.foreign =
                    c.id.is_none() && c.choices.is_none() && c.usage.is_none() && c.error.is_none();
                self.chunk(c, at, out);
                Ok(())
            }
            Err(e) if e.is_data() => {
                let v: Value = serde_json::from_str(data).map_err(Rejected::Json)?;
                Err(Rejected::Schema(schema::validate(&v, &CHUNK)))
            }
            Err(e) => Err(Rejected::Json(e)),
        }
    }

    fn flush(&mut self, out: &mut Out) {
        if self.failed {
            return;
        }
        if self.reasoning_open {
            out.part(PartKind::ReasoningEnd {
                id: "reasoning-0".into(),
            });
        }
        if self.text_open {
            out.part(PartKind::TextEnd { id: "0".into() });
        }
        if self.finish_reason.is_none() && self.started {
            out.part(PartKind::Error(StreamError {
                kind: ErrorKind::InvalidResponse,
                name: "AI_InvalidResponseDataError".into(),
                message: "Response stream ended without a finish reason.".into(),
                retryable: false,
            }));
        }
        for t in &mut self.tools {
            if !t.finished {
                t.finished = true;
                out.part(PartKind::ToolInputEnd { id: t.id.clone() });
                out.part(PartKind::ToolCall {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    input: std::mem::take(&mut t.args),
                    provider_executed: false,
                });
            }
        }
        if self.started {
            let reason = match self.finish_reason.as_deref() {
                Some(r) => unified_finish(r),
                None => "error",
            };
            out.part(PartKind::FinishStep {
                reason: reason.into(),
                input_tokens: self.usage.0,
                output_tokens: self.usage.1,
            });
        }
    }

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        if self.finish_reason.is_some() || self.done.is_some() {
            return Vec::new();
        }
        self.tools
            .iter()
            .map(|t| {
                OpenAtEnd::call(
                    format!(
                        "tool call `{}` ({}) was still streaming its arguments",
                        t.name, t.id
                    ),
                    t.at,
                    &t.id,
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn run(lines: &[&str]) -> (Vec<String>, Vec<String>) {
        let mut d = OpenAiChat::new();
        let mut out = Out::default();
        let mut parts = Vec::new();
        let mut problems = Vec::new();
        let at = Span::new(FileId(0), 0, 0);
        for l in lines {
            out.clear();
            match d.decode(l, at, &mut out) {
                Ok(()) => {}
                Err(Rejected::Json(e)) => problems.push(format!("json: {e}")),
                Err(Rejected::Schema(issues)) => {
                    problems.extend(issues.iter().map(|i| format!("schema: {i}")));
                }
            }
            parts.extend(out.parts.iter().map(|(p, _)| p.type_name().to_owned()));
        }
        out.clear();
        d.flush(&mut out);
        parts.extend(out.parts.iter().map(|(p, _)| p.type_name().to_owned()));
        (parts, problems)
    }

    #[test]
    fn tool_call_by_index_then_flush() {
        let (parts, problems) = run(&[
            r#"{"id":"c","choices":[{"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","function":{"name":"lookup","arguments":"{\"q\""}}]},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}"#,
            r#"{"id":"c","choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert!(problems.is_empty());
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-delta",
                "tool-input-end",
                "tool-call",
                "finish-step"
            ]
        );
    }

    #[test]
    fn wrong_type_is_a_schema_issue() {
        let (_, problems) = run(&[
            r#"{"id":"c","choices":[{"delta":{"content":123},"finish_reason":null}],"usage":null}"#,
        ]);
        assert_eq!(
            problems,
            ["schema: `choices[0].delta.content` is the number 123, expected a string"]
        );
    }

    #[test]
    fn truncated_stream_errors_at_flush() {
        let (parts, _) = run(&[r#"{"id":"c","choices":[{"delta":{"content":"hi"}}]}"#]);
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "text-start",
                "text-delta",
                "text-end",
                "error",
                "finish-step"
            ]
        );
    }
}
