//! Amazon Bedrock ConverseStream events → stream parts, as the AI SDK's amazon-bedrock provider
//! maps them.
//!
//! On the wire the events are binary `application/vnd.amazon.eventstream` frames
//! (`protocols::eventstream`), each an `:event-type` header and a JSON body; the SDK (and an
//! SDK's log) wraps each as a single-key object, `{"contentBlockDelta": {…}}`, which is what
//! this decoder reads:
//!
//! * `messageStart` opens the model call; `contentBlockStart` with `start.toolUse` starts a tool
//!   call (`toolUseId`, `name`), without it a text block; `contentBlockDelta` carries `text`,
//!   `toolUse.input` (argument text), or `reasoningContent` (`text`, `signature`, redacted
//!   `data`/`redactedContent`), keyed by `contentBlockIndex`; `contentBlockStop` ends the block
//!   (a tool call is finalized there, empty arguments being `{}`);
//! * `messageStop` gives the `stopReason` and is the terminal event; `metadata` (usage) follows
//!   it;
//! * `internalServerException`, `modelStreamErrorException`, `serviceUnavailableException`,
//!   `throttlingException`, `validationException` are the service's errors in the stream: each
//!   an `error` part, and the finish becomes `error`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::envelope;
use super::part::PartKind;
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected, s};
use crate::model::schema::{self, Ty, opt, req};
use crate::session::OpenAtEnd;
use crate::source::Span;

const TOOL_USE: Ty = Ty::Obj(&[req("toolUseId", Ty::Str), req("name", Ty::Str)]);
const START: Ty = Ty::Obj(&[opt("toolUse", Ty::Nullable(&TOOL_USE))]);
const USAGE: Ty = Ty::Obj(&[req("inputTokens", Ty::Num), req("outputTokens", Ty::Num)]);

/// The event schema (the fields the SDK reads).
static EVENT: Ty = Ty::Obj(&[
    opt(
        "contentBlockDelta",
        Ty::Nullable(&Ty::Obj(&[
            req("contentBlockIndex", Ty::Num),
            opt("delta", Ty::Nullable(&Ty::Any)),
        ])),
    ),
    opt(
        "contentBlockStart",
        Ty::Nullable(&Ty::Obj(&[
            req("contentBlockIndex", Ty::Num),
            opt("start", Ty::Nullable(&START)),
        ])),
    ),
    opt(
        "contentBlockStop",
        Ty::Nullable(&Ty::Obj(&[req("contentBlockIndex", Ty::Num)])),
    ),
    opt(
        "messageStop",
        Ty::Nullable(&Ty::Obj(&[req("stopReason", Ty::Str)])),
    ),
    opt(
        "metadata",
        Ty::Nullable(&Ty::Obj(&[opt("usage", Ty::Nullable(&USAGE))])),
    ),
]);

/// The exceptions the SDK turns into `error` parts.
const EXCEPTIONS: [&str; 5] = [
    "internalServerException",
    "modelStreamErrorException",
    "serviceUnavailableException",
    "throttlingException",
    "validationException",
];

enum Block {
    Text,
    Reasoning,
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

/// The decoder.
#[derive(Default)]
pub struct Bedrock {
    started: bool,
    blocks: BTreeMap<i64, (Block, Span)>,
    stop_reason: Option<String>,
    errored: bool,
    usage: (u64, u64),
}

fn index(v: &Value) -> i64 {
    v.get("contentBlockIndex")
        .and_then(Value::as_f64)
        .unwrap_or(0.0) as i64
}

impl Bedrock {
    pub fn new() -> Self {
        Self::default()
    }

    fn start_block(&mut self, i: i64, block: Block, at: Span, out: &mut Out) {
        let id = i.to_string();
        match &block {
            Block::Text => out.part(PartKind::TextStart { id }),
            Block::Reasoning => out.part(PartKind::ReasoningStart { id }),
            Block::Tool { id, name, .. } => out.part_at(
                PartKind::ToolInputStart {
                    id: id.clone(),
                    name: name.clone(),
                    provider_executed: false,
                },
                Focus::path(&["contentBlockStart", "start", "toolUse", "toolUseId"]),
            ),
        }
        self.blocks.insert(i, (block, at));
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) {
        if let Some((key, body)) = v
            .as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.ends_with("Exception")))
        {
            let error = ProviderError {
                name: key.clone(),
                message: s(body, "message").unwrap_or_default().to_owned(),
                focus: Focus::path(&[key, "message"]),
                data: body.clone(),
            };
            if EXCEPTIONS.contains(&key.as_str()) {
                self.errored = true;
                let retryable = matches!(
                    key.as_str(),
                    "throttlingException"
                        | "serviceUnavailableException"
                        | "internalServerException"
                );
                out.provider_error(error, retryable, Focus::path(&[key]));
            } else {
                out.provider_errors.push(error);
            }
            return;
        }
        if !self.started {
            self.started = true;
            out.part(PartKind::ResponseMetadata { id: None });
            out.part(PartKind::StartStep);
        }
        if let Some(stop) = v.get("messageStop").filter(|m| m.is_object()) {
            let reason = s(stop, "stopReason").unwrap_or_default().to_owned();
            out.finish_reason = Some(reason.clone());
            out.terminal = Some("`messageStop`".into());
            self.stop_reason = Some(reason);
        }
        if let Some(u) = v
            .get("metadata")
            .and_then(|m| m.get("usage"))
            .filter(|u| u.is_object())
        {
            let n = |k: &str| u.get(k).and_then(Value::as_f64).unwrap_or(0.0) as u64;
            self.usage = (n("inputTokens"), n("outputTokens"));
        }
        let start = v.get("contentBlockStart").filter(|b| b.is_object());
        let tool_use = start
            .and_then(|b| b.get("start"))
            .and_then(|st| st.get("toolUse"))
            .filter(|t| t.is_object());
        if let (Some(b), None) = (start, tool_use) {
            self.start_block(index(b), Block::Text, at, out);
        }
        let delta_event = v.get("contentBlockDelta").filter(|b| b.is_object());
        let delta = delta_event.and_then(|b| b.get("delta"));
        if let (Some(b), Some(text)) = (delta_event, delta.and_then(|d| s(d, "text"))) {
            let i = index(b);
            if !text.is_empty() {
                if !self.blocks.contains_key(&i) {
                    self.start_block(i, Block::Text, at, out);
                }
                out.part(PartKind::TextDelta {
                    id: i.to_string(),
                    delta: text.to_owned(),
                });
            }
        }
        if let Some(b) = v.get("contentBlockStop").filter(|b| b.is_object()) {
            let i = index(b);
            if let Some((block, _)) = self.blocks.remove(&i) {
                let id = i.to_string();
                match block {
                    Block::Reasoning => out.part(PartKind::ReasoningEnd { id }),
                    Block::Text => out.part(PartKind::TextEnd { id }),
                    Block::Tool { id, name, json } => {
                        out.part(PartKind::ToolInputEnd { id: id.clone() });
                        out.part(PartKind::ToolCall {
                            id,
                            name,
                            input: if json.is_empty() { "{}".into() } else { json },
                            provider_executed: false,
                        });
                    }
                }
            }
        }
        if let (Some(b), Some(r)) = (
            delta_event,
            delta
                .and_then(|d| d.get("reasoningContent"))
                .filter(|r| r.is_object()),
        ) {
            let i = index(b);
            let text = s(r, "text").filter(|t| !t.is_empty());
            let other = ["signature", "data", "redactedContent"]
                .iter()
                .any(|k| s(r, k).is_some_and(|x| !x.is_empty()));
            if (text.is_some() || other) && !self.blocks.contains_key(&i) {
                self.start_block(i, Block::Reasoning, at, out);
            }
            if let Some(t) = text {
                out.part(PartKind::ReasoningDelta {
                    id: i.to_string(),
                    delta: t.to_owned(),
                });
            }
        }
        if let (Some(b), Some(t)) = (start, tool_use) {
            let block = Block::Tool {
                id: s(t, "toolUseId").unwrap_or_default().to_owned(),
                name: s(t, "name").unwrap_or_default().to_owned(),
                json: String::new(),
            };
            self.start_block(index(b), block, at, out);
        }
        if let (Some(b), Some(t)) = (delta_event, delta.and_then(|d| d.get("toolUse"))) {
            let input = s(t, "input").unwrap_or_default();
            if let Some((Block::Tool { id, json, .. }, _)) = self.blocks.get_mut(&index(b)) {
                out.part(PartKind::ToolInputDelta {
                    id: id.clone(),
                    delta: input.to_owned(),
                });
                json.push_str(input);
            }
        }
        let known = [
            "messageStart",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata",
        ];
        if !v
            .as_object()
            .is_some_and(|o| o.keys().any(|k| known.contains(&k.as_str())))
        {
            out.foreign = true;
        }
    }
}

/// Bedrock's stop reasons onto the unified values (the SDK's `mapAmazonBedrockFinishReason`).
pub fn unified(raw: &str) -> &'static str {
    match raw {
        "stop_sequence" | "end_turn" => "stop",
        "max_tokens" => "length",
        "content_filtered" | "guardrail_intervened" => "content-filter",
        "tool_use" => "tool-calls",
        _ => "other",
    }
}

impl Decoder for Bedrock {
    fn protocol(&self) -> Protocol {
        Protocol::Bedrock
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if envelope::is_done(data) {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(Rejected::Json)?;
        let issues = schema::validate(&v, &EVENT);
        if !issues.is_empty() {
            return Err(Rejected::Schema(issues));
        }
        self.event(&v, at, out);
        Ok(())
    }

    fn flush(&mut self, out: &mut Out) {
        if !self.started {
            return;
        }
        let reason = if self.errored {
            "error"
        } else {
            self.stop_reason.as_deref().map_or("other", unified)
        };
        out.part(PartKind::FinishStep {
            reason: reason.into(),
            input_tokens: self.usage.0,
            output_tokens: self.usage.1,
        });
    }

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        if self.stop_reason.is_some() {
            return Vec::new();
        }
        self.blocks
            .iter()
            .map(|(i, (block, at))| match block {
                Block::Tool { id, name, .. } => OpenAtEnd::call(
                    format!("tool call `{name}` ({id}) was still streaming its arguments"),
                    *at,
                    id,
                ),
                _ => OpenAtEnd::new(format!("content block {i} was never stopped"), *at),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocols::stream::protocol::run_lines;

    #[test]
    fn text_then_a_tool_call() {
        let (parts, rejected) = run_lines(
            &mut Bedrock::new(),
            &[
                r#"{"messageStart":{"role":"assistant"}}"#,
                r#"{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Hi"}}}"#,
                r#"{"contentBlockStop":{"contentBlockIndex":0}}"#,
                r#"{"contentBlockStart":{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t1","name":"read"}}}}"#,
                r#"{"contentBlockDelta":{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\":1}"}}}}"#,
                r#"{"contentBlockStop":{"contentBlockIndex":1}}"#,
                r#"{"messageStop":{"stopReason":"tool_use"}}"#,
                r#"{"metadata":{"usage":{"inputTokens":1,"outputTokens":2}}}"#,
            ],
        );
        assert_eq!(rejected, 0);
        assert_eq!(
            parts,
            [
                "response-metadata",
                "start-step",
                "text-start",
                "text-delta",
                "text-end",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-end",
                "tool-call",
                "finish-step"
            ]
        );
    }
}
