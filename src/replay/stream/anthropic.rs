//! Anthropic Messages events → stream parts, as the AI SDK's anthropic provider maps them.
//!
//! `message_start` opens a model call (a step); content blocks become text, reasoning and tool
//! input parts keyed by their `index`; `content_block_stop` of a `tool_use` block emits
//! `tool-input-end` and `tool-call` (an empty input is `{}`); `message_delta` carries the stop
//! reason; `message_stop` finishes the step; `error` is an in-band provider error; `ping` is
//! nothing. A `message_start` repeated for the open message is ignored; one for *another*
//! message while a message is open is a spliced generation: the SDK reports
//! `InvalidResponseDataError` and reads nothing more (vercel/ai #18402).

use std::collections::BTreeMap;

use serde_json::Value;

use super::openai_chat::is_retryable;
use super::part::{ErrorKind, PartKind, StreamError, unified_finish};
use super::protocol::{
    Decoder, Focus, Out, Protocol, ProviderError, Rejected, parse_value, s, sniff_type,
};
use crate::model::schema::{self, Ty, Union, opt, req};
use crate::source::Span;

static MESSAGE_START: Ty = Ty::Obj(&[req(
    "message",
    Ty::Obj(&[opt("id", Ty::Nullable(&Ty::Str))]),
)]);
static BLOCK_START: Ty = Ty::Obj(&[
    req("index", Ty::Num),
    req("content_block", Ty::Obj(&[req("type", Ty::Str)])),
]);
static DELTA: Union = Union {
    what: "content block delta",
    tag: "type",
    variants: &[
        ("text_delta", &[req("text", Ty::Str)]),
        ("input_json_delta", &[req("partial_json", Ty::Str)]),
        ("thinking_delta", &[req("thinking", Ty::Str)]),
        ("signature_delta", &[req("signature", Ty::Str)]),
        ("citations_delta", &[]),
        ("compaction_delta", &[]),
    ],
};
static BLOCK_DELTA: Ty = Ty::Obj(&[req("index", Ty::Num), req("delta", Ty::Union(&DELTA))]);
static BLOCK_STOP: Ty = Ty::Obj(&[req("index", Ty::Num)]);
static MESSAGE_DELTA: Ty = Ty::Obj(&[req(
    "delta",
    Ty::Obj(&[opt("stop_reason", Ty::Nullable(&Ty::Str))]),
)]);

#[derive(Clone, Debug)]
enum BlockKind {
    Text,
    Reasoning,
    Tool {
        id: String,
        name: String,
        input: String,
    },
    /// Server tool results and other blocks the processor does not see.
    Other,
}

#[derive(Clone, Debug)]
struct Block {
    kind: BlockKind,
    at: Span,
    type_name: String,
}

/// The decoder.
#[derive(Default)]
pub struct Anthropic {
    open: Option<(String, Span)>,
    blocks: BTreeMap<u64, Block>,
    /// Indexes of blocks that stopped in the current message.
    stopped: Vec<u64>,
    stop_reason: Option<String>,
    usage: (u64, u64),
    invalid_sequence: bool,
    /// The last `message_stop`, when no message opened after it.
    closed: Option<Span>,
}

impl Anthropic {
    pub fn new() -> Self {
        Self::default()
    }

    fn event(&mut self, v: &Value, at: Span, out: &mut Out) -> Result<(), Rejected> {
        let ty = s(v, "type").unwrap_or_default();
        let shape = match ty {
            "message_start" => Some(&MESSAGE_START),
            "content_block_start" => Some(&BLOCK_START),
            "content_block_delta" => Some(&BLOCK_DELTA),
            "content_block_stop" => Some(&BLOCK_STOP),
            "message_delta" => Some(&MESSAGE_DELTA),
            _ => None,
        };
        if let Some(shape) = shape {
            let issues = schema::validate(v, shape);
            if !issues.is_empty() {
                return Err(Rejected::Schema(issues));
            }
        }
        if let Some(closed) = self.closed
            && !matches!(ty, "message_start" | "ping")
        {
            out.anomaly(
                format!("`{ty}` arrives after `message_stop`, outside any message"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((closed, "the message ended here".into()));
            }
        }
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match ty {
            "ping" => {}
            "message_start" => self.message_start(v, at, out),
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                let type_name = s(&block, "type").unwrap_or_default().to_owned();
                if self.open.is_none() {
                    out.anomaly(
                        format!("content block {index} starts outside a message (no open `message_start`)"),
                        false,
                        Focus::path(&["index"]),
                    );
                }
                if let Some(prev) = self.blocks.get(&index) {
                    out.anomaly(
                        format!("content block {index} starts again while it is still open"),
                        false,
                        Focus::path(&["index"]),
                    );
                    let prev_at = prev.at;
                    if let Some(a) = out.anomalies.last_mut() {
                        a.related.push((prev_at, "it started here".into()));
                    }
                }
                let id = s(&block, "id").unwrap_or_default().to_owned();
                let name = s(&block, "name").unwrap_or_default().to_owned();
                let kind = match type_name.as_str() {
                    "text" => {
                        out.part(PartKind::TextStart {
                            id: index.to_string(),
                        });
                        BlockKind::Text
                    }
                    "thinking" | "redacted_thinking" => {
                        out.part(PartKind::ReasoningStart {
                            id: index.to_string(),
                        });
                        BlockKind::Reasoning
                    }
                    "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                        out.part_at(
                            PartKind::ToolInputStart {
                                id: id.clone(),
                                name: name.clone(),
                                provider_executed: type_name != "tool_use",
                            },
                            Focus::path(&["content_block", "id"]),
                        );
                        BlockKind::Tool {
                            id,
                            name,
                            input: String::new(),
                        }
                    }
                    t if t.ends_with("_tool_result") => {
                        let call = s(&block, "tool_use_id").unwrap_or_default().to_owned();
                        out.part(PartKind::ToolResult {
                            id: call,
                            name: t.trim_end_matches("_tool_result").to_owned(),
                            output: block
                                .get("content")
                                .map(Value::to_string)
                                .unwrap_or_default(),
                        });
                        BlockKind::Other
                    }
                    _ => BlockKind::Other,
                };
                self.blocks.insert(
                    index,
                    Block {
                        kind,
                        at,
                        type_name,
                    },
                );
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                let dty = s(&delta, "type").unwrap_or_default();
                let Some(block) = self.blocks.get_mut(&index) else {
                    let when = if self.stopped.contains(&index) {
                        "after its `content_block_stop`"
                    } else {
                        "that never started"
                    };
                    out.anomaly(
                        format!("a `{dty}` for content block {index} {when}"),
                        false,
                        Focus::path(&["index"]),
                    );
                    // The SDK still forwards text for an unknown block.
                    if dty == "text_delta" {
                        out.part(PartKind::TextDelta {
                            id: index.to_string(),
                            delta: s(&delta, "text").unwrap_or_default().to_owned(),
                        });
                    }
                    return Ok(());
                };
                match (dty, &mut block.kind) {
                    ("text_delta", _) => out.part(PartKind::TextDelta {
                        id: index.to_string(),
                        delta: s(&delta, "text").unwrap_or_default().to_owned(),
                    }),
                    ("thinking_delta", _) => out.part(PartKind::ReasoningDelta {
                        id: index.to_string(),
                        delta: s(&delta, "thinking").unwrap_or_default().to_owned(),
                    }),
                    ("input_json_delta", BlockKind::Tool { id, input, .. }) => {
                        let d = s(&delta, "partial_json").unwrap_or_default();
                        if !d.is_empty() {
                            input.push_str(d);
                            out.part(PartKind::ToolInputDelta {
                                id: id.clone(),
                                delta: d.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => match self.blocks.remove(&index) {
                None => out.anomaly(
                    format!("`content_block_stop` for content block {index}, which is not open"),
                    true,
                    Focus::path(&["index"]),
                ),
                Some(block) => {
                    self.stopped.push(index);
                    match block.kind {
                        BlockKind::Text => out.part(PartKind::TextEnd {
                            id: index.to_string(),
                        }),
                        BlockKind::Reasoning => out.part(PartKind::ReasoningEnd {
                            id: index.to_string(),
                        }),
                        BlockKind::Tool { id, name, input } => {
                            out.part(PartKind::ToolInputEnd { id: id.clone() });
                            let input = if input.is_empty() { "{}".into() } else { input };
                            let provider_executed = block.type_name != "tool_use";
                            out.part(PartKind::ToolCall {
                                id,
                                name,
                                input,
                                provider_executed,
                            });
                        }
                        BlockKind::Other => {}
                    }
                }
            },
            "message_delta" => {
                let reason = v
                    .pointer("/delta/stop_reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(out_tokens) = v.pointer("/usage/output_tokens").and_then(Value::as_u64)
                {
                    self.usage.1 = out_tokens;
                }
                if let Some(r) = reason {
                    out.finish_reason = Some(r.clone());
                    self.stop_reason = Some(r);
                }
            }
            "message_stop" => {
                if self.open.is_none() {
                    out.anomaly("`message_stop` without an open message", true, Focus::None);
                }
                if !self.blocks.is_empty() {
                    let open: Vec<String> = self
                        .blocks
                        .iter()
                        .map(|(i, b)| format!("{} block {i}", b.type_name))
                        .collect();
                    out.anomaly(
                        format!(
                            "`message_stop` while {} is still open (no `content_block_stop`)",
                            open.join(", ")
                        ),
                        false,
                        Focus::None,
                    );
                    let related: Vec<(Span, String)> = self
                        .blocks
                        .values()
                        .map(|b| (b.at, format!("the {} block started here", b.type_name)))
                        .collect();
                    if let Some(a) = out.anomalies.last_mut() {
                        a.related = related;
                    }
                    self.blocks.clear();
                }
                let raw = self.stop_reason.take();
                out.part(PartKind::FinishStep {
                    reason: raw.as_deref().map_or("other", unified_finish).into(),
                    input_tokens: self.usage.0,
                    output_tokens: self.usage.1,
                });
                out.terminal = Some("`message_stop`".into());
                self.open = None;
                self.closed = Some(at);
            }
            "error" => {
                let err = v.get("error").cloned().unwrap_or(Value::Null);
                let name = s(&err, "type").unwrap_or("error").to_owned();
                let message = s(&err, "message").unwrap_or_default().to_owned();
                let retryable = is_retryable(&name);
                let error = ProviderError {
                    name,
                    message,
                    focus: Focus::path(&["error", "type"]),
                    data: err,
                };
                out.provider_error(error, retryable, Focus::path(&["error"]));
                out.terminal = Some("`error`".into());
            }
            _ => {}
        }
        Ok(())
    }

    fn message_start(&mut self, v: &Value, at: Span, out: &mut Out) {
        let id = v
            .pointer("/message/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some((open_id, open_at)) = self.open.clone() {
            if open_id == id {
                out.anomaly(
                    format!("`message_start` repeated for message {id}, which is already open"),
                    true,
                    Focus::path(&["message", "id"]),
                );
                if let Some(a) = out.anomalies.last_mut() {
                    a.related.push((open_at, "the message started here".into()));
                }
                return;
            }
            let mut related = vec![(open_at, format!("message {open_id} started here"))];
            for b in self.blocks.values() {
                let what = match &b.kind {
                    BlockKind::Tool { id, .. } => {
                        format!("{} block {id} is still open", b.type_name)
                    }
                    _ => format!("its {} block is still open", b.type_name),
                };
                related.push((b.at, what));
            }
            let still_open = if self.blocks.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = self
                    .blocks
                    .values()
                    .map(|b| match &b.kind {
                        BlockKind::Tool { id, .. } => format!("{} block {id}", b.type_name),
                        _ => format!("{} block", b.type_name),
                    })
                    .collect();
                format!(" and its {} still open", names.join(", "))
            };
            out.anomaly(
                format!(
                    "a second `message_start` ({id}) arrives while message {open_id} is still open{still_open}: two generations are spliced"
                ),
                false,
                Focus::path(&["message", "id"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related = related;
            }
            self.invalid_sequence = true;
            out.part_at(
                PartKind::Error(StreamError {
                    kind: ErrorKind::InvalidResponse,
                    name: "AI_InvalidResponseDataError".into(),
                    message: format!(
                        "Received message_start for message \"{id}\" while message \"{open_id}\" is still open."
                    ),
                    retryable: false,
                }),
                Focus::path(&["message", "id"]),
            );
            out.fatal = true;
            return;
        }
        self.open = Some((id.clone(), at));
        self.closed = None;
        self.stopped.clear();
        self.usage = (
            v.pointer("/message/usage/input_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            0,
        );
        out.reopened = true;
        out.part(PartKind::ResponseMetadata {
            id: (!id.is_empty()).then_some(id),
        });
        out.part(PartKind::StartStep);
    }
}

impl Decoder for Anthropic {
    fn protocol(&self) -> Protocol {
        Protocol::Anthropic
    }

    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected> {
        if self.invalid_sequence {
            // The SDK reads nothing more; the capture's own end is still noted.
            if sniff_type(data).as_deref() == Some("message_stop") {
                out.terminal = Some("`message_stop`".into());
            }
            return Ok(());
        }
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
            out.push((format!("message {id} was never stopped"), *at));
        }
        for (i, b) in &self.blocks {
            let what = match &b.kind {
                BlockKind::Tool { id, name, .. } => {
                    format!(
                        "{} block {i} (`{name}`, {id}) was never stopped",
                        b.type_name
                    )
                }
                _ => format!("{} block {i} was never stopped", b.type_name),
            };
            out.push((what, b.at));
        }
        out
    }
}
