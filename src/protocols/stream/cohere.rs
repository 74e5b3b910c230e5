//! Cohere v2 chat stream events → stream parts, as the AI SDK's cohere provider maps them.
//!
//! Every event is `{"type": "<hyphenated-type>", …}` (`event: <type>` in front of it on the
//! wire): `message-start` (the response id) opens the model call; `content-start` /
//! `content-delta` / `content-end` carry text or thinking (reasoning) keyed by their `index`;
//! `tool-call-start` (id, name, first arguments), `tool-call-delta` (more arguments) and
//! `tool-call-end` stream one tool call at a time, finalized at its end (empty arguments are
//! `{}`; arguments that are not JSON make the SDK throw, which errors the stream);
//! `tool-plan-delta` and `citation-start/end` are read and dropped, as the SDK does;
//! `message-end` gives the finish reason (`COMPLETE`, `STOP_SEQUENCE`, `MAX_TOKENS`,
//! `TOOL_CALL`, `ERROR`) and the usage, and is the stream's terminal event. The SDK's schema is
//! a union discriminated on `type`: an event of another type is a validation error, as it is
//! for the SDK.

use serde_json::Value;

use super::envelope;
use super::part::{ErrorKind, PartKind, StreamError};
use super::protocol::{Decoder, Focus, Out, Protocol, Rejected, s};
use crate::model::schema::{self, Field, Ty, Union, opt, req};
use crate::session::OpenAtEnd;
use crate::source::Span;

const CONTENT_START: Ty = Ty::Obj(&[req(
    "message",
    Ty::Obj(&[req("content", Ty::Obj(&[req("type", Ty::Str)]))]),
)]);
const CONTENT_DELTA: Ty = Ty::Obj(&[req("message", Ty::Obj(&[req("content", Ty::Any)]))]);
const TOOL_START: Ty = Ty::Obj(&[req(
    "message",
    Ty::Obj(&[req(
        "tool_calls",
        Ty::Obj(&[
            req("id", Ty::Str),
            req(
                "function",
                Ty::Obj(&[req("name", Ty::Str), req("arguments", Ty::Str)]),
            ),
        ]),
    )]),
)]);
const TOOL_DELTA: Ty = Ty::Obj(&[req(
    "message",
    Ty::Obj(&[req(
        "tool_calls",
        Ty::Obj(&[req("function", Ty::Obj(&[req("arguments", Ty::Str)]))]),
    )]),
)]);
const TOOL_PLAN: Ty = Ty::Obj(&[req("message", Ty::Obj(&[req("tool_plan", Ty::Str)]))]);
const TOKENS: Ty = Ty::Obj(&[req("input_tokens", Ty::Num), req("output_tokens", Ty::Num)]);
const MESSAGE_END: Ty = Ty::Obj(&[
    req("finish_reason", Ty::Str),
    req("usage", Ty::Obj(&[req("tokens", TOKENS)])),
]);

const NONE: &[Field] = &[];

/// The events, as the SDK's schema has them (the fields it reads are required).
static EVENT: Union = Union {
    what: "Cohere stream event",
    tag: "type",
    variants: &[
        ("citation-start", NONE),
        ("citation-end", NONE),
        (
            "content-start",
            &[req("index", Ty::Num), req("delta", CONTENT_START)],
        ),
        (
            "content-delta",
            &[req("index", Ty::Num), req("delta", CONTENT_DELTA)],
        ),
        ("content-end", &[req("index", Ty::Num)]),
        ("message-start", &[opt("id", Ty::Nullable(&Ty::Str))]),
        ("message-end", &[req("delta", MESSAGE_END)]),
        ("tool-plan-delta", &[req("delta", TOOL_PLAN)]),
        ("tool-call-start", &[req("delta", TOOL_START)]),
        ("tool-call-delta", &[req("delta", TOOL_DELTA)]),
        ("tool-call-end", NONE),
    ],
};

struct Pending {
    id: String,
    name: String,
    args: String,
    at: Span,
}

/// The decoder.
#[derive(Default)]
pub struct Cohere {
    started: bool,
    reasoning_open: bool,
    /// Content blocks started and not ended, by index (with where they started).
    open_blocks: Vec<(String, Span)>,
    pending: Option<Pending>,
    finish_reason: Option<String>,
    usage: (u64, u64),
    failed: bool,
}

impl Cohere {
    pub fn new() -> Self {
        Self::default()
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) {
        let ty = s(v, "type").unwrap_or_default();
        let index = || {
            v.get("index")
                .and_then(Value::as_f64)
                .map(|i| (i as i64).to_string())
                .unwrap_or_default()
        };
        let message = |path: &[&str]| -> Option<&Value> {
            let mut cur = v.get("delta")?.get("message")?;
            for k in path {
                cur = cur.get(*k)?;
            }
            Some(cur)
        };
        match ty {
            "message-start" => {
                if self.started {
                    if self.finish_reason.is_some() {
                        out.reopened = true;
                    }
                    return;
                }
                self.started = true;
                out.part(PartKind::ResponseMetadata {
                    id: s(v, "id").map(str::to_owned),
                });
                out.part(PartKind::StartStep);
            }
            "content-start" => {
                let id = index();
                self.open_blocks.push((id.clone(), at));
                if message(&["content", "type"]).and_then(Value::as_str) == Some("thinking") {
                    self.reasoning_open = true;
                    out.part(PartKind::ReasoningStart { id });
                } else {
                    out.part(PartKind::TextStart { id });
                }
            }
            "content-delta" => {
                let id = index();
                let content = message(&["content"]);
                if let Some(t) = content.and_then(|c| c.get("thinking")) {
                    out.part(PartKind::ReasoningDelta {
                        id,
                        delta: t.as_str().unwrap_or_default().to_owned(),
                    });
                } else {
                    let text = content.and_then(|c| c.get("text"));
                    out.part(PartKind::TextDelta {
                        id,
                        delta: text.and_then(Value::as_str).unwrap_or_default().to_owned(),
                    });
                }
            }
            "content-end" => {
                let id = index();
                self.open_blocks.retain(|(b, _)| *b != id);
                if self.reasoning_open {
                    self.reasoning_open = false;
                    out.part(PartKind::ReasoningEnd { id });
                } else {
                    out.part(PartKind::TextEnd { id });
                }
            }
            "tool-call-start" => {
                let call = message(&["tool_calls"]);
                let get = |k: &[&str]| {
                    let mut cur = call;
                    for key in k {
                        cur = cur.and_then(|c| c.get(*key));
                    }
                    cur.and_then(Value::as_str).unwrap_or_default().to_owned()
                };
                let (id, name, args) = (
                    get(&["id"]),
                    get(&["function", "name"]),
                    get(&["function", "arguments"]),
                );
                out.part_at(
                    PartKind::ToolInputStart {
                        id: id.clone(),
                        name: name.clone(),
                        provider_executed: false,
                    },
                    Focus::path(&["delta", "message", "tool_calls", "id"]),
                );
                if !args.is_empty() {
                    out.part(PartKind::ToolInputDelta {
                        id: id.clone(),
                        delta: args.clone(),
                    });
                }
                self.pending = Some(Pending { id, name, args, at });
            }
            "tool-call-delta" => {
                if let Some(p) = self.pending.as_mut() {
                    let delta = message(&["tool_calls", "function", "arguments"])
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    p.args.push_str(delta);
                    out.part(PartKind::ToolInputDelta {
                        id: p.id.clone(),
                        delta: delta.to_owned(),
                    });
                }
            }
            "tool-call-end" => {
                if let Some(p) = self.pending.take() {
                    let text = match p.args.trim() {
                        "" => "{}",
                        t => t,
                    };
                    match serde_json::from_str::<Value>(text) {
                        Ok(input) => {
                            out.part(PartKind::ToolInputEnd { id: p.id.clone() });
                            out.part(PartKind::ToolCall {
                                id: p.id,
                                name: p.name,
                                input: input.to_string(),
                                provider_executed: false,
                            });
                        }
                        Err(e) => {
                            // `parseJSON` throws inside the SDK's transform: the stream errors.
                            self.failed = true;
                            out.part(PartKind::Error(StreamError {
                                kind: ErrorKind::InvalidResponse,
                                name: "AI_JSONParseError".into(),
                                message: format!(
                                    "JSON parsing failed: Text: {text}.\nError message: {e}"
                                ),
                                retryable: false,
                            }));
                            out.fatal = true;
                        }
                    }
                }
            }
            "message-end" => {
                let reason = v
                    .get("delta")
                    .and_then(|d| s(d, "finish_reason"))
                    .unwrap_or_default()
                    .to_owned();
                if let Some(t) = v.get("delta").and_then(|d| d.get("usage")?.get("tokens")) {
                    let n = |k: &str| t.get(k).and_then(Value::as_f64).unwrap_or(0.0) as u64;
                    self.usage = (n("input_tokens"), n("output_tokens"));
                }
                out.finish_reason = Some(reason.clone());
                out.terminal = Some("`message-end`".into());
                self.finish_reason = Some(reason);
            }
            // `tool-plan-delta`, `citation-start`, `citation-end`: read, nothing emitted.
            _ => {}
        }
    }
}

/// Cohere's finish reasons onto the unified values (the SDK's `mapCohereFinishReason`).
pub fn unified(raw: &str) -> &'static str {
    match raw {
        "COMPLETE" | "STOP_SEQUENCE" => "stop",
        "MAX_TOKENS" => "length",
        "ERROR" => "error",
        "TOOL_CALL" => "tool-calls",
        _ => "other",
    }
}

impl Decoder for Cohere {
    fn protocol(&self) -> Protocol {
        Protocol::Cohere
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if self.failed || envelope::is_done(data) {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(Rejected::Json)?;
        let issues = schema::validate(&v, &Ty::Union(&EVENT));
        if !issues.is_empty() {
            return Err(Rejected::Schema(issues));
        }
        self.event(&v, at, out);
        Ok(())
    }

    fn flush(&mut self, out: &mut Out) {
        if self.failed || !self.started {
            return;
        }
        let reason = self.finish_reason.as_deref().map_or("other", unified);
        out.part(PartKind::FinishStep {
            reason: reason.into(),
            input_tokens: self.usage.0,
            output_tokens: self.usage.1,
        });
    }

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        if self.finish_reason.is_some() {
            return Vec::new();
        }
        let mut open: Vec<OpenAtEnd> = self
            .open_blocks
            .iter()
            .map(|(i, at)| OpenAtEnd::new(format!("content block {i} was never ended"), *at))
            .collect();
        if let Some(p) = &self.pending {
            open.push(OpenAtEnd::call(
                format!(
                    "tool call `{}` ({}) was still streaming its arguments",
                    p.name, p.id
                ),
                p.at,
                &p.id,
            ));
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::stream::protocol::run_lines as run;

    #[test]
    fn thinking_text_and_a_tool_call() {
        let (parts, rejected) = run(
            &mut Cohere::new(),
            &[
                r#"{"id":"m1","type":"message-start","delta":{"message":{"role":"assistant"}}}"#,
                r#"{"type":"content-start","index":0,"delta":{"message":{"content":{"type":"thinking","thinking":""}}}}"#,
                r#"{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":"hm"}}}}"#,
                r#"{"type":"content-end","index":0}"#,
                r#"{"type":"tool-plan-delta","delta":{"message":{"tool_plan":"I will"}}}"#,
                r#"{"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"c1","type":"function","function":{"name":"read","arguments":""}}}}}"#,
                r#"{"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"{\"a\":1}"}}}}}"#,
                r#"{"type":"tool-call-end","index":0}"#,
                r#"{"type":"message-end","delta":{"finish_reason":"TOOL_CALL","usage":{"tokens":{"input_tokens":3,"output_tokens":4}}}}"#,
            ],
        );
        assert_eq!(rejected, 0);
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "reasoning-start",
                "reasoning-delta",
                "reasoning-end",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-end",
                "tool-call",
                "finish-step"
            ]
        );
    }

    #[test]
    fn an_unknown_type_is_rejected() {
        let (_, rejected) = run(&mut Cohere::new(), &[r#"{"type":"debug-info","x":1}"#]);
        assert_eq!(rejected, 1);
    }
}
