//! Anthropic Messages events → stream parts, as the AI SDK's anthropic provider maps them.
//!
//! `message_start` opens a model call (a step); content blocks become text, reasoning and tool
//! input parts keyed by their `index`; `content_block_stop` of a `tool_use` block emits
//! `tool-input-end` and `tool-call` (an empty input is `{}`). Tools the provider executes are
//! marked so: a `server_tool_use` block (web search, web fetch, code execution, tool search)
//! streams like a `tool_use`; an `mcp_tool_use` block is a `tool-call` at once (its input as
//! the block starts it; the SDK reads no input deltas for it); their results arrive in the same
//! message as `*_tool_result` blocks (`mcp_tool_result`), a `tool-result` — or a `tool-error`
//! when the result is an error (`…_error` content, `is_error`). `message_delta` carries the stop
//! reason; `message_stop` finishes the step; `error` is an in-band provider error; `ping` is
//! nothing. A `message_start` repeated for the open message is ignored; one for *another*
//! message while a message is open is a spliced generation: the SDK reports
//! `InvalidResponseDataError` and reads nothing more (vercel/ai #18402).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use super::envelope::{self, Envelope, Loose, Num, Obj, Parsed, Raw, Str, U64};
use super::openai_chat::is_retryable;
use super::part::{ErrorKind, PartKind, StreamError, unified_finish};
use super::protocol::{Decoder, Focus, Out, Protocol, ProviderError, Rejected, s, sniff_type};
use crate::model::schema::{Ty, Union, opt, req};
use crate::session::OpenAtEnd;
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

/// The events the decoder reads; the fields of the schemas above are strict.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event<'a> {
    #[serde(rename = "ping")]
    Ping,
    #[serde(rename = "message_start")]
    MessageStart {
        #[serde(borrow)]
        message: Obj<Message<'a>>,
    },
    #[serde(rename = "content_block_start")]
    BlockStart {
        index: Num,
        #[serde(borrow)]
        content_block: Box<Obj<Block<'a>>>,
    },
    #[serde(rename = "content_block_delta")]
    BlockDelta {
        index: Num,
        #[serde(borrow)]
        delta: Obj<Delta<'a>>,
    },
    #[serde(rename = "content_block_stop")]
    BlockStop { index: Num },
    #[serde(rename = "message_delta")]
    MessageDelta {
        #[serde(borrow)]
        delta: Obj<MessageDeltaBody<'a>>,
        #[serde(default)]
        usage: Loose<OutputUsage>,
    },
    #[serde(rename = "message_stop")]
    MessageStop,
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
            "message_start" => Some(&MESSAGE_START),
            "content_block_start" => Some(&BLOCK_START),
            "content_block_delta" => Some(&BLOCK_DELTA),
            "content_block_stop" => Some(&BLOCK_STOP),
            "message_delta" => Some(&MESSAGE_DELTA),
            _ => None,
        }
    }
}

impl Event<'_> {
    /// The event's type (`None` for the catch-all, which does not keep it).
    fn name(&self) -> Option<&'static str> {
        Some(match self {
            Event::Ping => "ping",
            Event::MessageStart { .. } => "message_start",
            Event::BlockStart { .. } => "content_block_start",
            Event::BlockDelta { .. } => "content_block_delta",
            Event::BlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
            Event::Error { .. } => "error",
            Event::Other => return None,
        })
    }
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Loose<InputUsage>,
}

#[derive(Deserialize)]
struct InputUsage {
    #[serde(default)]
    input_tokens: U64,
}

#[derive(Deserialize)]
struct OutputUsage {
    #[serde(default)]
    output_tokens: U64,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Str<'a>,
    #[serde(borrow, default)]
    name: Str<'a>,
    #[serde(borrow, default)]
    tool_use_id: Str<'a>,
    #[serde(default)]
    content: Raw,
    #[serde(default)]
    input: Raw,
    #[serde(default)]
    is_error: Raw,
}

/// A content block delta ([`DELTA`]).
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta<'a> {
    #[serde(rename = "text_delta")]
    Text {
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    #[serde(rename = "input_json_delta")]
    InputJson {
        #[serde(borrow)]
        partial_json: Cow<'a, str>,
    },
    #[serde(rename = "thinking_delta")]
    Thinking {
        #[serde(borrow)]
        thinking: Cow<'a, str>,
    },
    #[serde(rename = "signature_delta")]
    Signature {
        #[serde(borrow, rename = "signature")]
        _signature: Cow<'a, str>,
    },
    #[serde(rename = "citations_delta")]
    Citations,
    #[serde(rename = "compaction_delta")]
    Compaction,
}

impl Delta<'_> {
    fn name(&self) -> &'static str {
        match self {
            Delta::Text { .. } => "text_delta",
            Delta::InputJson { .. } => "input_json_delta",
            Delta::Thinking { .. } => "thinking_delta",
            Delta::Signature { .. } => "signature_delta",
            Delta::Citations => "citations_delta",
            Delta::Compaction => "compaction_delta",
        }
    }
}

#[derive(Deserialize)]
struct MessageDeltaBody<'a> {
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
}

/// The input a tool block starts with, when it is not the empty `{}` that deltas fill.
fn given_input(input: &Raw) -> String {
    match &input.0 {
        Some(Value::Object(m)) if !m.is_empty() => Value::Object(m.clone()).to_string(),
        _ => String::new(),
    }
}

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
struct OpenBlock {
    kind: BlockKind,
    at: Span,
    type_name: String,
}

/// The decoder.
#[derive(Default)]
pub struct Anthropic {
    open: Option<(String, Span)>,
    blocks: BTreeMap<u64, OpenBlock>,
    /// Indexes of blocks that stopped in the current message.
    stopped: HashSet<u64>,
    stop_reason: Option<String>,
    usage: (u64, u64),
    invalid_sequence: bool,
    /// The last `message_stop`, when no message opened after it.
    closed: Option<Span>,
}

/// A server tool's result block (`…_tool_result`): the tool's result, or its error.
fn server_tool_result(block: &Block<'_>, t: &str, out: &mut Out) {
    let id = block.tool_use_id.get().unwrap_or_default().to_owned();
    let name = t.trim_end_matches("_tool_result").to_owned();
    let output = block
        .content
        .0
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    let failed = block.is_error.0.as_ref().and_then(Value::as_bool) == Some(true)
        || block
            .content
            .0
            .as_ref()
            .and_then(|c| c.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("_error"));
    let part = if failed {
        PartKind::ToolError {
            id,
            name,
            error: output,
        }
    } else {
        PartKind::ToolResult { id, name, output }
    };
    out.part_at(part, Focus::path(&["content_block", "tool_use_id"]));
}

impl Anthropic {
    pub fn new() -> Self {
        Self::default()
    }

    fn event(&mut self, e: Event<'_>, data: &str, at: Span, out: &mut Out) {
        if let Some(closed) = self.closed
            && !matches!(e, Event::MessageStart { .. } | Event::Ping)
        {
            let ty = e
                .name()
                .map_or_else(|| envelope::type_name(data).into(), Cow::Borrowed);
            out.anomaly(
                format!("`{ty}` arrives after `message_stop`, outside any message"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((closed, "the message ended here".into()));
            }
        }
        match e {
            Event::Ping | Event::Other => {}
            Event::MessageStart { message } => self.message_start(&message.0, at, out),
            Event::BlockStart {
                index,
                content_block,
            } => self.block_start(index.0.unwrap_or(0), &content_block.0, at, out),
            Event::BlockDelta { index, delta } => {
                self.block_delta(index.0.unwrap_or(0), delta.0, out);
            }
            Event::BlockStop { index } => self.block_stop(index.0.unwrap_or(0), out),
            Event::MessageDelta { delta, usage } => {
                if let Some(n) = usage.get().and_then(|u| u.output_tokens.0) {
                    self.usage.1 = n;
                }
                if let Some(r) = delta.0.stop_reason {
                    out.finish_reason = Some(r.to_string());
                    self.stop_reason = Some(r.into_owned());
                }
            }
            Event::MessageStop => self.message_stop(at, out),
            Event::Error { error } => {
                let err = error.0.unwrap_or(Value::Null);
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
        }
    }

    fn block_start(&mut self, index: u64, block: &Block<'_>, at: Span, out: &mut Out) {
        let type_name = block.kind.as_ref();
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
        let kind = match type_name {
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
            "tool_use" | "server_tool_use" => {
                let id = block.id.get().unwrap_or_default().to_owned();
                let name = block.name.get().unwrap_or_default().to_owned();
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
                    // An input given with the block (programmatic calls, web fetch) is its input;
                    // `{}` means it streams in deltas.
                    input: given_input(&block.input),
                }
            }
            "mcp_tool_use" => {
                out.part_at(
                    PartKind::ToolCall {
                        id: block.id.get().unwrap_or_default().to_owned(),
                        name: block.name.get().unwrap_or_default().to_owned(),
                        input: block
                            .input
                            .0
                            .as_ref()
                            .map_or_else(|| "{}".to_owned(), Value::to_string),
                        provider_executed: true,
                    },
                    Focus::path(&["content_block", "id"]),
                );
                BlockKind::Other
            }
            t if t.ends_with("_tool_result") => {
                server_tool_result(block, t, out);
                BlockKind::Other
            }
            _ => BlockKind::Other,
        };
        self.blocks.insert(
            index,
            OpenBlock {
                kind,
                at,
                type_name: type_name.to_owned(),
            },
        );
    }

    fn block_delta(&mut self, index: u64, delta: Delta<'_>, out: &mut Out) {
        let Some(block) = self.blocks.get_mut(&index) else {
            let when = if self.stopped.contains(&index) {
                "after its `content_block_stop`"
            } else {
                "that never started"
            };
            out.anomaly(
                format!("a `{}` for content block {index} {when}", delta.name()),
                false,
                Focus::path(&["index"]),
            );
            // The SDK still forwards text for an unknown block.
            if let Delta::Text { text } = delta {
                out.part(PartKind::TextDelta {
                    id: index.to_string(),
                    delta: text.into_owned(),
                });
            }
            return;
        };
        match (delta, &mut block.kind) {
            (Delta::Text { text }, _) => out.part(PartKind::TextDelta {
                id: index.to_string(),
                delta: text.into_owned(),
            }),
            (Delta::Thinking { thinking }, _) => out.part(PartKind::ReasoningDelta {
                id: index.to_string(),
                delta: thinking.into_owned(),
            }),
            (Delta::InputJson { partial_json }, BlockKind::Tool { id, input, .. })
                if !partial_json.is_empty() =>
            {
                input.push_str(&partial_json);
                out.part(PartKind::ToolInputDelta {
                    id: id.clone(),
                    delta: partial_json.into_owned(),
                });
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: u64, out: &mut Out) {
        let Some(block) = self.blocks.remove(&index) else {
            out.anomaly(
                format!("`content_block_stop` for content block {index}, which is not open"),
                true,
                Focus::path(&["index"]),
            );
            return;
        };
        self.stopped.insert(index);
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

    fn message_stop(&mut self, at: Span, out: &mut Out) {
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

    fn message_start(&mut self, message: &Message<'_>, at: Span, out: &mut Out) {
        let id = message.id.as_deref().unwrap_or_default().to_owned();
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
        let input_tokens = message.usage.get().and_then(|u| u.input_tokens.0);
        self.usage = (input_tokens.unwrap_or(0), 0);
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
        let mut spare = None;
        match envelope::parse::<Event<'_>>(data, &mut spare)? {
            Parsed::Done => {}
            Parsed::Event(e) => self.event(e, data, at, out),
        }
        Ok(())
    }

    fn flush(&mut self, _out: &mut Out) {}

    fn open_at_end(&self) -> Vec<OpenAtEnd> {
        let mut out = Vec::new();
        if let Some((id, at)) = &self.open {
            out.push(OpenAtEnd::new(
                format!("message {id} was never stopped"),
                *at,
            ));
        }
        for (i, b) in &self.blocks {
            out.push(match &b.kind {
                BlockKind::Tool { id, name, .. } => OpenAtEnd::call(
                    format!(
                        "{} block {i} (`{name}`, {id}) was never stopped",
                        b.type_name
                    ),
                    b.at,
                    id,
                ),
                _ => OpenAtEnd::new(format!("{} block {i} was never stopped", b.type_name), b.at),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn decode(d: &mut Anthropic, data: &str) -> (Vec<PartKind>, String) {
        let mut out = Out::default();
        let r = match d.decode(data, Span::new(FileId(0), 0, 0), &mut out) {
            Ok(()) => String::new(),
            Err(Rejected::Json(e)) => format!("json: {e}"),
            Err(Rejected::Schema(i)) => format!("schema: {}", i[0]),
        };
        (out.parts.into_iter().map(|(p, _)| p).collect(), r)
    }

    #[test]
    fn provider_executed_tools_and_their_results() {
        let mut d = Anthropic::new();
        decode(&mut d, r#"{"type":"message_start","message":{"id":"m"}}"#);
        let (parts, _) = decode(
            &mut d,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srv_1","name":"web_fetch","input":{"url":"https://example.com"}}}"#,
        );
        assert_eq!(
            parts,
            [PartKind::ToolInputStart {
                id: "srv_1".into(),
                name: "web_fetch".into(),
                provider_executed: true
            }]
        );
        let (parts, _) = decode(&mut d, r#"{"type":"content_block_stop","index":0}"#);
        assert_eq!(
            parts[1],
            PartKind::ToolCall {
                id: "srv_1".into(),
                name: "web_fetch".into(),
                input: r#"{"url":"https://example.com"}"#.into(),
                provider_executed: true
            }
        );
        let (parts, _) = decode(
            &mut d,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"web_fetch_tool_result","tool_use_id":"srv_1","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}}}"#,
        );
        assert!(
            matches!(&parts[..], [PartKind::ToolError { id, .. }] if id == "srv_1"),
            "{parts:?}"
        );
        // An MCP call is a tool call at once; its input deltas are not read.
        let (parts, _) = decode(
            &mut d,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"mcp_tool_use","id":"mcp_1","name":"echo","input":{},"server_name":"s"}}"#,
        );
        assert_eq!(
            parts,
            [PartKind::ToolCall {
                id: "mcp_1".into(),
                name: "echo".into(),
                input: "{}".into(),
                provider_executed: true
            }]
        );
        let (parts, _) = decode(
            &mut d,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
        );
        assert!(parts.is_empty());
        decode(&mut d, r#"{"type":"content_block_stop","index":2}"#);
        let (parts, _) = decode(
            &mut d,
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"mcp_tool_result","tool_use_id":"mcp_1","is_error":false,"content":[]}}"#,
        );
        assert!(
            matches!(&parts[..], [PartKind::ToolResult { id, .. }] if id == "mcp_1"),
            "{parts:?}"
        );
    }

    #[test]
    fn deltas_are_a_checked_union() {
        let mut d = Anthropic::new();
        decode(&mut d, r#"{"type":"message_start","message":{"id":"m"}}"#);
        decode(
            &mut d,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        );
        let (parts, r) = decode(
            &mut d,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"h\"i"}}"#,
        );
        assert_eq!(r, "");
        assert_eq!(
            parts,
            [PartKind::TextDelta {
                id: "0".into(),
                delta: "h\"i".into()
            }]
        );
        for bad in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"sparkle_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":["text_delta","x"]}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}"#,
            r#"{"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":""}}"#,
        ] {
            let (_, r) = decode(&mut d, bad);
            assert!(r.starts_with("schema: "), "{bad}: {r}");
        }
        let (parts, r) = decode(
            &mut d,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
        );
        assert!(parts.is_empty() && r.is_empty());
    }
}
