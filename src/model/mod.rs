//! OpenCode's message-v2 model (shared by link-assistant/agent): messages, the 12 part types and
//! the tool state machine.
//!
//! These types are *lenient views*: they are built from JSON with every field defaulted, so a
//! broken payload still yields a usable value (an unknown tool status becomes
//! [`ToolState::Invalid`], an unknown part type [`PartBody::Unknown`]). Whether a payload actually
//! satisfies the schema is decided separately, and strictly, by [`schema`]. Repair edits the
//! original JSON, never a re-serialisation of these views, so nothing is lost on a round trip.

pub mod conform;
pub mod ids;
pub mod read;
pub mod schema;
pub mod version;
pub mod zod;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The error OpenCode's cleanup writes on tool parts still pending or running when a step ends.
pub const TOOL_ABORTED: &str = "Tool execution aborted";

/// The marker rewind's repair leaves in a part's `metadata`.
pub const REPAIR_MARKER: &str = "rewind";

/// The `metadata` keys the checks and the reconstruction read (the repair marker, Anthropic's
/// thinking signature, `providerExecuted`, and a partial result's `interrupted` and `output`).
/// A part read straight from text keeps only these (and of `output`, only that it is a string).
pub const METADATA_KEYS: [&str; 5] = [
    REPAIR_MARKER,
    "anthropic",
    "providerExecuted",
    "interrupted",
    "output",
];

fn deser<T: Default + for<'de> Deserialize<'de>>(v: &Value) -> Option<T> {
    T::deserialize(v).ok()
}

/// `deser`, or the defaults when a field has the wrong type.
fn lenient<T: Default + for<'de> Deserialize<'de>>(v: &Value) -> T {
    deser(v).unwrap_or_default()
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `{start, end?}` times in epoch milliseconds.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct TimeRange {
    pub start: Option<f64>,
    pub end: Option<f64>,
    pub compacted: Option<f64>,
}

/// Token usage of a step or message.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Tokens {
    pub total: Option<f64>,
    pub input: f64,
    pub output: f64,
    pub reasoning: f64,
    pub cache: CacheTokens,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct CacheTokens {
    pub read: f64,
    pub write: f64,
}

/// A part: the unit OpenCode stores (one `part` row, one `storage/part/…` file).
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub id: String,
    pub session_id: String,
    pub message_id: String,
    pub body: PartBody,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PartBody {
    Text(Box<TextPart>),
    Subtask(Box<SubtaskPart>),
    Reasoning(Box<ReasoningPart>),
    File(Box<FilePart>),
    Tool(Box<ToolPart>),
    StepStart(StepStartPart),
    StepFinish(Box<StepFinishPart>),
    Snapshot(SnapshotPart),
    Patch(Box<PatchPart>),
    Agent(AgentPart),
    Retry(Box<RetryPart>),
    Compaction(Box<CompactionPart>),
    /// A part whose `type` is missing or not one of the 12.
    Unknown {
        type_name: Option<String>,
    },
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct TextPart {
    pub text: String,
    pub synthetic: Option<bool>,
    pub ignored: Option<bool>,
    pub time: Option<TimeRange>,
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SubtaskPart {
    pub prompt: String,
    pub description: String,
    pub agent: String,
    pub command: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ReasoningPart {
    pub text: String,
    pub metadata: Option<Map<String, Value>>,
    pub time: Option<TimeRange>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct FilePart {
    pub mime: String,
    pub filename: Option<String>,
    pub url: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct StepStartPart {
    pub snapshot: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct StepFinishPart {
    pub reason: String,
    pub snapshot: Option<String>,
    pub cost: f64,
    pub tokens: Tokens,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct SnapshotPart {
    pub snapshot: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct PatchPart {
    pub hash: String,
    pub files: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct AgentPart {
    pub name: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct RetryPart {
    pub attempt: f64,
    pub error: Value,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct CompactionPart {
    pub auto: Option<bool>,
    pub overflow: Option<bool>,
    pub tail_start_id: Option<String>,
}

/// A tool call and its state.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolPart {
    pub call_id: String,
    pub tool: String,
    pub state: ToolState,
    pub metadata: Option<Map<String, Value>>,
}

/// `ToolState`: a discriminated union on `status`.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolState {
    Pending(ToolStateFields),
    Running(ToolStateFields),
    Completed(ToolStateFields),
    Error(ToolStateFields),
    /// A status outside `pending | running | completed | error` (e.g. `failed`), or none.
    Invalid {
        status: Option<String>,
        fields: ToolStateFields,
    },
}

/// The union of the fields the four tool states carry (each state requires its own subset; the
/// schema module checks which).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ToolStateFields {
    /// The input; stores and logs keep only whether it is empty (`{}`), as `true` otherwise.
    pub input: Value,
    /// `raw`, `output`, `title` and `attachments` are present or absent as recorded, but a part
    /// read by [`Part::from_json`] keeps them empty (see `Skipped`): nothing reads their text.
    pub raw: Option<String>,
    pub output: Option<String>,
    pub title: Option<String>,
    pub error: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub time: Option<TimeRange>,
    pub attachments: Option<Vec<Value>>,
}

impl ToolState {
    pub fn from_value(v: &Value) -> ToolState {
        let fields = deser::<ToolStateFields>(v).unwrap_or_default();
        Self::with_status(v.get("status").and_then(Value::as_str), fields)
    }

    /// The state a status names, with its fields.
    pub fn with_status(status: Option<&str>, fields: ToolStateFields) -> ToolState {
        match status {
            Some("pending") => ToolState::Pending(fields),
            Some("running") => ToolState::Running(fields),
            Some("completed") => ToolState::Completed(fields),
            Some("error") => ToolState::Error(fields),
            other => ToolState::Invalid {
                status: other.map(str::to_owned),
                fields,
            },
        }
    }

    /// [`ToolState::status`], owned (without copying one of the four the schema allows).
    pub fn status_name(&self) -> std::borrow::Cow<'static, str> {
        match self {
            ToolState::Pending(_) => "pending".into(),
            ToolState::Running(_) => "running".into(),
            ToolState::Completed(_) => "completed".into(),
            ToolState::Error(_) => "error".into(),
            ToolState::Invalid { .. } => self.status().to_owned().into(),
        }
    }

    /// The status as written (`failed` for an invalid one).
    pub fn status(&self) -> &str {
        match self {
            ToolState::Pending(_) => "pending",
            ToolState::Running(_) => "running",
            ToolState::Completed(_) => "completed",
            ToolState::Error(_) => "error",
            ToolState::Invalid { status, .. } => status.as_deref().unwrap_or("(none)"),
        }
    }

    pub fn fields(&self) -> &ToolStateFields {
        match self {
            ToolState::Pending(f)
            | ToolState::Running(f)
            | ToolState::Completed(f)
            | ToolState::Error(f)
            | ToolState::Invalid { fields: f, .. } => f,
        }
    }

    pub fn fields_mut(&mut self) -> &mut ToolStateFields {
        match self {
            ToolState::Pending(f)
            | ToolState::Running(f)
            | ToolState::Completed(f)
            | ToolState::Error(f)
            | ToolState::Invalid { fields: f, .. } => f,
        }
    }

    /// `completed` or `error`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, ToolState::Completed(_) | ToolState::Error(_))
    }

    /// Pending or running: the tool has not ended (an invalid state is neither open nor ended).
    pub fn is_open(&self) -> bool {
        matches!(self, ToolState::Pending(_) | ToolState::Running(_))
    }

    /// Whether the input is `{}` (or missing): what a call that never left `pending` keeps.
    pub fn input_is_empty(&self) -> bool {
        match &self.fields().input {
            Value::Null => true,
            Value::Object(m) => m.is_empty(),
            _ => false,
        }
    }

    /// The error text of an `error` state.
    pub fn error_text(&self) -> Option<&str> {
        match self {
            ToolState::Error(f) => f.error.as_deref(),
            _ => None,
        }
    }
}

/// A tool part as read straight from JSON text (see [`Part::from_json`]).
#[derive(Deserialize, Default)]
#[serde(default)]
struct WireTool {
    #[serde(rename = "callID")]
    call_id: String,
    tool: String,
    state: WireState,
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireState {
    status: Option<String>,
    input: InputShape,
    raw: Option<Skipped>,
    output: Option<Skipped>,
    title: Option<Skipped>,
    error: Option<String>,
    metadata: Option<Map<String, Value>>,
    time: Option<TimeRange>,
    attachments: Option<Skipped>,
}

/// A value [`Part::from_json`] only notes the presence of: the tool's output, title, raw input
/// and attachments are read by no check and no reconstruction rule (they stay in the store), and
/// a tool's output is most of a part's bytes. The model keeps an empty string (or list) instead.
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Skipped)
    }
}

/// What the model keeps of a tool input read by [`Part::from_json`]: `{}` when it is empty,
/// `true` otherwise (the checks only ask whether it is empty; the values stay in the store).
#[derive(Default)]
struct InputShape(Value);

impl<'de> Deserialize<'de> for InputShape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = InputShape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tool input")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<InputShape, A::Error> {
                let mut empty = true;
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {
                    empty = false;
                }
                Ok(InputShape(if empty {
                    Value::Object(Map::new())
                } else {
                    Value::Bool(true)
                }))
            }
            fn visit_unit<E>(self) -> Result<InputShape, E> {
                Ok(InputShape(Value::Null))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Part {
    /// The lenient view of a part read straight from JSON text that satisfies the schema (see
    /// [`conform`]), without building a `Value` first: much faster for stored rows. The ids are
    /// left empty (a database row keeps them in columns). `None` when the text does not read
    /// that way; the caller then takes the [`Part::from_value`] route.
    pub fn from_json(text: &str) -> Option<Part> {
        use crate::json::scan::{Seg, locate};
        let (s, e) = locate(text, &[Seg::Key("type")])?;
        let type_name = text[s..e].strip_prefix('"')?.strip_suffix('"')?;
        let read = |t: &str| -> Option<PartBody> {
            Some(match t {
                "text" => PartBody::Text(serde_json::from_str(text).ok()?),
                "subtask" => PartBody::Subtask(serde_json::from_str(text).ok()?),
                "reasoning" => PartBody::Reasoning(serde_json::from_str(text).ok()?),
                "file" => PartBody::File(serde_json::from_str(text).ok()?),
                "tool" => {
                    let w: WireTool = serde_json::from_str(text).ok()?;
                    let st = w.state;
                    let fields = ToolStateFields {
                        input: st.input.0,
                        raw: st.raw.map(|_| String::new()),
                        output: st.output.map(|_| String::new()),
                        title: st.title.map(|_| String::new()),
                        error: st.error,
                        metadata: st.metadata,
                        time: st.time,
                        attachments: st.attachments.map(|_| Vec::new()),
                    };
                    PartBody::Tool(Box::new(ToolPart {
                        call_id: w.call_id,
                        tool: w.tool,
                        state: ToolState::with_status(st.status.as_deref(), fields),
                        metadata: w.metadata,
                    }))
                }
                "step-start" => PartBody::StepStart(serde_json::from_str(text).ok()?),
                "step-finish" => PartBody::StepFinish(serde_json::from_str(text).ok()?),
                "snapshot" => PartBody::Snapshot(serde_json::from_str(text).ok()?),
                "patch" => PartBody::Patch(serde_json::from_str(text).ok()?),
                "agent" => PartBody::Agent(serde_json::from_str(text).ok()?),
                "retry" => PartBody::Retry(serde_json::from_str(text).ok()?),
                "compaction" => PartBody::Compaction(serde_json::from_str(text).ok()?),
                _ => return None,
            })
        };
        Some(Part {
            id: String::new(),
            session_id: String::new(),
            message_id: String::new(),
            body: read(type_name)?,
        })
    }

    /// Builds the lenient view of a part from its JSON (ids may be absent, as in DB rows).
    pub fn from_value(v: &Value) -> Part {
        let type_name = v.get("type").and_then(Value::as_str);
        // A known type keeps its kind even when a field has the wrong type (its fields are then
        // defaulted): the schema check reports the field, and the part still counts as what it is.
        let body = match type_name {
            Some("text") => PartBody::Text(Box::new(lenient(v))),
            Some("subtask") => PartBody::Subtask(Box::new(lenient(v))),
            Some("reasoning") => PartBody::Reasoning(Box::new(lenient(v))),
            Some("file") => PartBody::File(Box::new(lenient(v))),
            Some("tool") => PartBody::Tool(Box::new(ToolPart {
                call_id: str_field(v, "callID"),
                tool: str_field(v, "tool"),
                state: ToolState::from_value(v.get("state").unwrap_or(&Value::Null)),
                metadata: v.get("metadata").and_then(Value::as_object).cloned(),
            })),
            Some("step-start") => PartBody::StepStart(lenient(v)),
            Some("step-finish") => PartBody::StepFinish(Box::new(lenient(v))),
            Some("snapshot") => PartBody::Snapshot(lenient(v)),
            Some("patch") => PartBody::Patch(lenient(v)),
            Some("agent") => PartBody::Agent(lenient(v)),
            Some("retry") => PartBody::Retry(Box::new(lenient(v))),
            Some("compaction") => PartBody::Compaction(lenient(v)),
            _ => PartBody::Unknown {
                type_name: type_name.map(str::to_owned),
            },
        };
        Part {
            id: str_field(v, "id"),
            session_id: str_field(v, "sessionID"),
            message_id: str_field(v, "messageID"),
            body,
        }
    }

    pub fn type_name(&self) -> &str {
        match &self.body {
            PartBody::Text(_) => "text",
            PartBody::Subtask(_) => "subtask",
            PartBody::Reasoning(_) => "reasoning",
            PartBody::File(_) => "file",
            PartBody::Tool(_) => "tool",
            PartBody::StepStart(_) => "step-start",
            PartBody::StepFinish(_) => "step-finish",
            PartBody::Snapshot(_) => "snapshot",
            PartBody::Patch(_) => "patch",
            PartBody::Agent(_) => "agent",
            PartBody::Retry(_) => "retry",
            PartBody::Compaction(_) => "compaction",
            PartBody::Unknown { type_name } => type_name.as_deref().unwrap_or("(none)"),
        }
    }

    pub fn tool(&self) -> Option<&ToolPart> {
        match &self.body {
            PartBody::Tool(t) => Some(t.as_ref()),
            _ => None,
        }
    }
}

/// A stored error: `{name, data}` (NamedError.toObject).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct NamedError {
    pub name: String,
    pub data: Value,
}

impl NamedError {
    pub fn message(&self) -> Option<&str> {
        self.data.get("message").and_then(Value::as_str)
    }
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct MessageTime {
    pub created: Option<f64>,
    pub completed: Option<f64>,
}

/// Message info (`role` discriminator).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageInfo {
    pub id: String,
    pub session_id: String,
    pub body: MessageBody,
}

// One per message, read once: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum MessageBody {
    User(UserMessage),
    Assistant(Box<AssistantMessage>),
    Unknown { role: Option<String> },
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct ModelRef {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct UserMessage {
    pub time: MessageTime,
    pub agent: String,
    pub model: Option<ModelRef>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct AssistantMessage {
    pub time: MessageTime,
    pub error: Option<NamedError>,
    #[serde(rename = "parentID")]
    pub parent_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
    #[serde(rename = "providerID")]
    pub provider_id: String,
    pub mode: String,
    pub agent: Option<String>,
    pub summary: Option<bool>,
    pub cost: f64,
    pub tokens: Tokens,
    pub finish: Option<String>,
    /// The marker rewind's repair leaves on a message it changed (its `error`, when set by it).
    #[serde(rename = "rewind")]
    pub repaired: Option<serde::de::IgnoredAny>,
}

impl MessageInfo {
    /// An assistant message's stored `error`.
    pub fn error(&self) -> Option<&NamedError> {
        match &self.body {
            MessageBody::Assistant(a) => a.error.as_ref(),
            _ => None,
        }
    }

    /// An assistant message's stored `error`, unless rewind's repair wrote it (closing a reply
    /// that never finished): what struck the session when it ran.
    pub fn original_error(&self) -> Option<&NamedError> {
        match &self.body {
            MessageBody::Assistant(a) if a.repaired.is_none() => a.error.as_ref(),
            _ => None,
        }
    }

    /// The view of message info read straight from JSON text that satisfies the schema (as
    /// [`Part::from_json`]); ids are left empty. `None` when it does not read that way.
    pub fn from_json(text: &str) -> Option<MessageInfo> {
        use crate::json::scan::{Seg, locate};
        let (s, e) = locate(text, &[Seg::Key("role")])?;
        let body = match text[s..e].strip_prefix('"')?.strip_suffix('"')? {
            "user" => MessageBody::User(serde_json::from_str(text).ok()?),
            "assistant" => MessageBody::Assistant(Box::new(serde_json::from_str(text).ok()?)),
            _ => return None,
        };
        Some(MessageInfo {
            id: String::new(),
            session_id: String::new(),
            body,
        })
    }

    pub fn from_value(v: &Value) -> MessageInfo {
        let role = v.get("role").and_then(Value::as_str);
        let body = match role {
            Some("user") => deser(v).map(MessageBody::User),
            Some("assistant") => deser(v).map(|a| MessageBody::Assistant(Box::new(a))),
            _ => None,
        }
        .unwrap_or_else(|| MessageBody::Unknown {
            role: role.map(str::to_owned),
        });
        MessageInfo {
            id: str_field(v, "id"),
            session_id: str_field(v, "sessionID"),
            body,
        }
    }

    pub fn assistant(&self) -> Option<&AssistantMessage> {
        match &self.body {
            MessageBody::Assistant(a) => Some(a.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
impl Part {
    /// What `Part::from_json` keeps of a tool part: a non-empty input as `true` (only its
    /// emptiness is read), the output, title, raw input and attachments emptied.
    pub(crate) fn tool_shape(mut self) -> Part {
        if let PartBody::Tool(t) = &mut self.body {
            let empty = t.state.input_is_empty();
            let f = t.state.fields_mut();
            if !empty {
                f.input = Value::Bool(true);
            }
            for s in [&mut f.output, &mut f.title, &mut f.raw]
                .into_iter()
                .flatten()
            {
                s.clear();
            }
            if let Some(a) = &mut f.attachments {
                a.clear();
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_json_reads_what_from_value_reads() {
        for v in [
            json!({"type": "text", "text": "hi", "time": {"start": 1, "end": 2}, "metadata": {"a": 1}}),
            json!({"type": "tool", "tool": "bash", "callID": "c", "metadata": {"m": true},
                   "state": {"status": "completed", "input": {"command": "ls"}, "output": "o",
                             "title": "t", "metadata": {}, "time": {"start": 1, "end": 2},
                             "attachments": [{"type": "file"}]}}),
            json!({"type": "tool", "tool": "read", "callID": "c2",
                   "state": {"status": "error", "input": {}, "error": "Tool execution aborted",
                             "time": {"start": 1, "end": 1}}}),
            json!({"type": "step-finish", "reason": "stop", "cost": 0.5,
                   "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 4}}}),
            json!({"type": "step-start", "snapshot": "abc"}),
            json!({"type": "compaction", "auto": true}),
        ] {
            let text = v.to_string();
            let expected = Part::from_value(&v).tool_shape();
            assert_eq!(Part::from_json(&text), Some(expected), "{text}");
        }
        assert_eq!(Part::from_json(r#"{"type":"bogus"}"#), None);
        let m = json!({"role": "assistant", "time": {"created": 1, "completed": 2}, "parentID": "p",
                       "modelID": "m", "providerID": "x", "mode": "build", "cost": 0.5,
                       "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                       "error": {"name": "MessageAbortedError", "data": {"message": "stop"}}});
        assert_eq!(
            MessageInfo::from_json(&m.to_string()),
            Some(MessageInfo::from_value(&m))
        );
    }

    #[test]
    fn tool_parts_keep_invalid_status() {
        let p = Part::from_value(&json!({
            "id": "prt_1", "type": "tool", "callID": "call_1", "tool": "edit",
            "state": {"status": "failed", "input": {"filePath": "a"}, "error": "boom"}
        }));
        let t = p.tool().map(|t| (&t.state, t.tool.as_str()));
        assert!(
            matches!(t, Some((ToolState::Invalid { status: Some(s), .. }, "edit")) if s == "failed")
        );
        assert_eq!(p.type_name(), "tool");
    }

    #[test]
    fn aborted_pending_tool_has_empty_input() {
        let s = ToolState::from_value(&json!({
            "status": "error", "input": {}, "error": TOOL_ABORTED, "time": {"start": 1, "end": 1}
        }));
        assert!(s.is_terminal());
        assert!(s.input_is_empty());
        assert_eq!(s.error_text(), Some(TOOL_ABORTED));
    }

    #[test]
    fn wrong_field_types_do_not_lose_the_part() {
        // `cost` must be a number; the part is still a step-finish (the schema check reports it).
        let p = Part::from_value(&json!({"id": "prt_2", "type": "step-finish", "cost": "0.1"}));
        assert_eq!(p.id, "prt_2");
        assert_eq!(p.type_name(), "step-finish");
        let p = Part::from_value(&json!({"type": "bogus"}));
        assert_eq!(p.type_name(), "bogus");
    }

    #[test]
    fn assistant_messages() {
        let m = MessageInfo::from_value(&json!({
            "id": "msg_1", "role": "assistant", "time": {"created": 1},
            "error": {"name": "MessageAbortedError", "data": {"message": "aborted"}}
        }));
        let a = m
            .assistant()
            .map(|a| (a.time.completed, a.error.as_ref().map(|e| e.name.as_str())));
        assert_eq!(a, Some((None, Some("MessageAbortedError"))));
    }
}
