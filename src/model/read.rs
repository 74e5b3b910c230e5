//! Reading a stored part or message info into the model in the same pass that validates it.
//!
//! [`part`] and [`message`] walk the JSON text once with [`conform::conforms_with`], and a sink
//! builds the model from the raw text of the fields as the walk meets them. They read exactly
//! what [`Part::from_json`] and [`MessageInfo::from_json`] read (a unit test holds them to it),
//! so the model is the same whichever way a record was read; they are just faster, because the
//! text is walked once instead of twice. The part types that are rare in a store (everything but
//! text, reasoning, tool, step-start and step-finish) are validated here and read by
//! [`Part::from_json`].
//!
//! A sink never decides whether a record is valid: the walk does. A sink only gives up ("read
//! it the other way") when a value does not have the type the model wants, where
//! `Part::from_json` would fail too.

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess};
use serde_json::{Map, Value};

use super::conform::{self, Sink};
use super::schema::{self, Ty};
use super::{
    AssistantMessage, METADATA_KEYS, MessageBody, MessageInfo, MessageTime, ModelRef, NamedError,
    Part, PartBody, ReasoningPart, StepFinishPart, StepStartPart, TextPart, TimeRange, Tokens,
    ToolPart, ToolState, ToolStateFields, UserMessage,
};

/// A part whose text satisfies the schema, read into the model; `None` when it does not
/// satisfy it (or is not sure: see [`conform`]) or does not read that way.
pub fn part(text: &str) -> Option<Part> {
    let mut sink = PartSink::default();
    if !conform::conforms_with(text, &Ty::Union(&schema::PART), &mut sink) || sink.failed {
        return None;
    }
    let body = match sink.body {
        Building::Text(t) => PartBody::Text(Box::new(t)),
        Building::Reasoning(r) => PartBody::Reasoning(Box::new(r)),
        Building::Tool(t) => {
            let ToolBuilding {
                call_id,
                tool,
                status,
                fields,
                metadata,
            } = t;
            PartBody::Tool(Box::new(ToolPart {
                call_id,
                tool,
                state: ToolState::with_status(status, fields),
                metadata,
            }))
        }
        Building::StepStart(s) => PartBody::StepStart(s),
        Building::StepFinish(s) => PartBody::StepFinish(Box::new(s)),
        // A rare type: validated, read the other way.
        Building::Other | Building::None => return Part::from_json(text),
    };
    Some(Part {
        id: String::new(),
        session_id: String::new(),
        message_id: String::new(),
        body,
    })
}

/// Where some members of a part are, as [`logged_part`] met them: byte ranges of their values
/// as written, in the text it read.
#[derive(Debug, Default)]
pub struct PartMembers {
    pub id: Option<(usize, usize)>,
    pub session_id: Option<(usize, usize)>,
    pub message_id: Option<(usize, usize)>,
    pub reason: Option<(usize, usize)>,
    pub tokens: Option<(usize, usize)>,
    pub model: Option<(usize, usize)>,
    /// A tool part's `state.status`.
    pub status: Option<(usize, usize)>,
}

/// A JSON object with a `part` member (an agent log's part event), read in one walk: the object
/// must satisfy the schema of an object whose `part` is a part, and the part is read as the
/// log's replay keeps it — without a tool's input (only whether it is empty), output, raw
/// input, attachments or metadata, nor a part's metadata, and with every string it keeps cut to
/// `max_string` bytes (see [`crate::text::cap_in_place`]); its ids are read too (a stored
/// part's are not: they are columns of its row). Where some members of the object and of the
/// part are comes with it. `None` when the object does not satisfy that schema (or the walk is
/// not sure: see [`conform`]), when a member it tells of is written twice, and for part types
/// other than text, reasoning, tool and step parts.
pub fn logged_part(text: &str, max_string: usize) -> Option<LoggedPart> {
    static EVENT: [schema::Field; 1] = [schema::Field {
        name: "part",
        ty: Ty::Union(&schema::PART),
        required: true,
    }];
    let mut sink = LoggedSink {
        part: PartSink {
            slim: Some(max_string),
            ..PartSink::default()
        },
        base: text.as_ptr().addr(),
        top: LoggedMembers::default(),
        members: PartMembers::default(),
        part_met: false,
        twice: false,
    };
    if !conform::conforms_with(text, &Ty::Obj(&EVENT), &mut sink) || sink.part.failed || sink.twice
    {
        return None;
    }
    let members = sink.members;
    let body = match sink.part.body {
        Building::Text(t) => PartBody::Text(Box::new(t)),
        Building::Reasoning(r) => PartBody::Reasoning(Box::new(r)),
        Building::Tool(t) => PartBody::Tool(Box::new(ToolPart {
            call_id: t.call_id,
            tool: t.tool,
            state: ToolState::with_status(t.status, t.fields),
            metadata: None,
        })),
        Building::StepStart(s) => PartBody::StepStart(s),
        Building::StepFinish(s) => PartBody::StepFinish(Box::new(s)),
        Building::Other | Building::None => return None,
    };
    let id = |r: Option<(usize, usize)>| match r {
        Some((s, e)) => {
            let mut id = string(text.get(s..e)?)?;
            crate::text::cap_in_place(&mut id, max_string);
            Some(id)
        }
        None => Some(String::new()),
    };
    Some(LoggedPart {
        part: Part {
            id: id(members.id)?,
            session_id: id(members.session_id)?,
            message_id: id(members.message_id)?,
            body,
        },
        members,
        top: sink.top,
    })
}

/// What [`logged_part`] reads.
#[derive(Debug)]
pub struct LoggedPart {
    pub part: Part,
    /// Where the part's members are in the object's text.
    pub members: PartMembers,
    /// Where the object's own members are.
    pub top: LoggedMembers,
}

/// Where the members of a part event's object that tell what it is are, as written.
#[derive(Debug, Default)]
pub struct LoggedMembers {
    pub ty: Option<(usize, usize)>,
    pub service: Option<(usize, usize)>,
    pub message: Option<(usize, usize)>,
    pub session_id: Option<(usize, usize)>,
}

/// The sink of [`logged_part`]: the part's fields go to a [`PartSink`]; where some of them and
/// some of the object's own are is noted.
struct LoggedSink {
    part: PartSink,
    /// Where the walked text starts in memory.
    base: usize,
    top: LoggedMembers,
    members: PartMembers,
    part_met: bool,
    /// A member noted here, or the part, was met more than once.
    twice: bool,
}

impl<'a> Sink<'a> for LoggedSink {
    fn variant(&mut self, path: &[&'a str], variant: &'static str, raw: &'a str) {
        if let ["part", rest @ ..] = path {
            self.part.variant(rest, variant, raw);
            if rest == ["state"] {
                // A tool state's `status`, the tag of its union.
                let start = raw.as_ptr().addr().wrapping_sub(self.base);
                self.twice |= self
                    .members
                    .status
                    .replace((start, start + raw.len()))
                    .is_some();
            }
        }
    }

    fn open(&mut self, path: &[&'a str]) {
        if let ["part", rest @ ..] = path {
            self.part.open(rest);
        }
    }

    fn field(&mut self, path: &[&'a str], raw: &'a str, known: bool) {
        let slot = match path {
            ["part"] => {
                self.twice |= std::mem::replace(&mut self.part_met, true);
                return;
            }
            ["part", rest @ ..] => {
                self.part.field(rest, raw, known);
                let m = &mut self.members;
                match rest {
                    ["id"] => &mut m.id,
                    ["sessionID"] => &mut m.session_id,
                    ["messageID"] => &mut m.message_id,
                    ["reason"] => &mut m.reason,
                    ["tokens"] => &mut m.tokens,
                    ["model"] => &mut m.model,
                    _ => return,
                }
            }
            ["type"] => &mut self.top.ty,
            ["service"] => &mut self.top.service,
            ["message"] => &mut self.top.message,
            ["sessionID"] => &mut self.top.session_id,
            _ => return,
        };
        let start = raw.as_ptr().addr().wrapping_sub(self.base);
        self.twice |= slot.replace((start, start + raw.len())).is_some();
    }
}

/// A JSON string's content, borrowed when it has no escape; `None` for any other value.
pub fn json_str(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        return Some(inner.into());
    }
    serde_json::from_str::<String>(raw).ok().map(Into::into)
}

/// Message info whose text satisfies the schema, read into the model (see [`part`]).
pub fn message(text: &str) -> Option<MessageInfo> {
    let mut sink = MessageSink::default();
    if !conform::conforms_with(text, &Ty::Union(&schema::MESSAGE), &mut sink) || sink.failed {
        return None;
    }
    let body = match sink.body {
        MessageBuilding::User(u) => MessageBody::User(u),
        MessageBuilding::Assistant(a) => MessageBody::Assistant(a),
        MessageBuilding::None => return None,
    };
    Some(MessageInfo {
        id: String::new(),
        session_id: String::new(),
        body,
    })
}

/// A string's content (`raw` is a JSON string, quotes included).
fn string(raw: &str) -> Option<String> {
    json_str(raw).map(std::borrow::Cow::into_owned)
}

/// `null` as `None`, a string as its content; anything else does not read as an optional
/// string.
fn opt_string(raw: &str) -> Option<Option<String>> {
    if raw == "null" {
        return Some(None);
    }
    string(raw).map(Some)
}

/// A number as serde_json reads it (without its `float_roundtrip` feature, as here): the digits
/// as an integer, divided by the power of ten the fraction calls for. Up to 18 digits this is
/// done here, exactly as serde_json does it; anything longer is left to serde_json.
fn number(raw: &str) -> Option<f64> {
    const POW10: [f64; 19] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18,
    ];
    let bytes = raw.as_bytes();
    let negative = bytes.first() == Some(&b'-');
    let mut n: u64 = 0;
    let mut digits = 0;
    // Digits before the point, once there is one.
    let mut point: Option<usize> = None;
    for &b in &bytes[usize::from(negative)..] {
        match b {
            b'0'..=b'9' if digits < 18 => {
                n = n * 10 + u64::from(b - b'0');
                digits += 1;
            }
            b'.' if point.is_none() && digits > 0 => point = Some(digits),
            _ => return serde_json::from_str(raw).ok(),
        }
    }
    if digits == 0 || point == Some(digits) {
        return serde_json::from_str(raw).ok();
    }
    let f = n as f64 / POW10[digits - point.unwrap_or(digits)];
    Some(if negative { -f } else { f })
}

fn opt_number(raw: &str) -> Option<Option<f64>> {
    if raw == "null" {
        return Some(None);
    }
    number(raw).map(Some)
}

fn opt_bool(raw: &str) -> Option<Option<bool>> {
    match raw {
        "true" => Some(Some(true)),
        "false" => Some(Some(false)),
        "null" => Some(None),
        _ => None,
    }
}

/// Anything serde reads (`null` as `None` for options).
fn serde_read<T: DeserializeOwned>(raw: &str) -> Option<T> {
    serde_json::from_str(raw).ok()
}

/// A `metadata` object, keeping only the keys something reads ([`METADATA_KEYS`]): metadata
/// can be large (diffs, previews), and the rest of it is never looked at.
fn opt_map(raw: &str) -> Option<Option<Map<String, Value>>> {
    serde_read::<Option<KeptMetadata>>(raw).map(|m| m.map(|m| m.0))
}

struct KeptMetadata(Map<String, Value>);

impl<'de> Deserialize<'de> for KeptMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = KeptMetadata;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a metadata object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeptMetadata, A::Error> {
                let mut kept = Map::new();
                while let Some(key) = map.next_key::<KeptKey>()? {
                    match key.0 {
                        Some(k) => {
                            let mut v: Value = map.next_value()?;
                            // Only whether it is a string is read.
                            if k == "output" && v.is_string() {
                                v = Value::String(String::new());
                            }
                            kept.insert(k.to_owned(), v);
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(KeptMetadata(kept))
            }
        }
        d.deserialize_map(Visitor)
    }
}

/// A metadata key: which of [`METADATA_KEYS`] it is, if any.
struct KeptKey(Option<&'static str>);

impl<'de> Deserialize<'de> for KeptKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = KeptKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<KeptKey, E> {
                Ok(KeptKey(METADATA_KEYS.iter().copied().find(|m| *m == k)))
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// The tool input the model keeps: `{}` when the object is empty, `true` otherwise (see
/// `InputShape`); only an object reads.
fn input_shape(raw: &str) -> Option<Value> {
    let inner = raw.strip_prefix('{')?;
    Some(if inner.trim_start().starts_with('}') {
        Value::Object(Map::new())
    } else {
        Value::Bool(true)
    })
}

/// A `{start, end, compacted}` object. A known object has told its fields already (into
/// `acc`); another is read by serde.
fn time_range(raw: &str, known: bool, acc: &mut TimeRange) -> Option<Option<TimeRange>> {
    if known {
        return Some(Some(std::mem::take(acc)));
    }
    serde_read(raw)
}

/// A field of a `{start, end, compacted}` object.
fn time_field(acc: &mut TimeRange, key: &str, raw: &str) -> Option<()> {
    match key {
        "start" => acc.start = opt_number(raw)?,
        "end" => acc.end = opt_number(raw)?,
        "compacted" => acc.compacted = opt_number(raw)?,
        _ => {}
    }
    Some(())
}

/// A field of a tokens object (`path` below `tokens`).
fn tokens_field(acc: &mut Tokens, path: &[&str], raw: &str, known: bool) -> Option<()> {
    match path {
        ["total"] => acc.total = opt_number(raw)?,
        ["input"] => acc.input = number(raw)?,
        ["output"] => acc.output = number(raw)?,
        ["reasoning"] => acc.reasoning = number(raw)?,
        ["cache"] if !known => acc.cache = serde_read(raw)?,
        ["cache", "read"] => acc.cache.read = number(raw)?,
        ["cache", "write"] => acc.cache.write = number(raw)?,
        _ => {}
    }
    Some(())
}

/// What [`PartSink`] is building, once the walk has named the type.
// It lives on the stack for one part: boxing the large variant would cost an allocation per
// tool part.
#[allow(clippy::large_enum_variant)]
#[derive(Default)]
enum Building {
    #[default]
    None,
    Text(TextPart),
    Reasoning(ReasoningPart),
    Tool(ToolBuilding),
    StepStart(StepStartPart),
    StepFinish(StepFinishPart),
    Other,
}

#[derive(Default)]
struct ToolBuilding {
    call_id: String,
    tool: String,
    status: Option<&'static str>,
    fields: ToolStateFields,
    metadata: Option<Map<String, Value>>,
}

#[derive(Default)]
struct PartSink {
    body: Building,
    /// The fields of the `time` object being walked.
    time: TimeRange,
    failed: bool,
    /// Read as a log keeps a part (see [`logged_part`]): strings cut to this many bytes.
    slim: Option<usize>,
}

impl PartSink {
    fn read(&mut self, path: &[&str], raw: &str, known: bool) -> Option<()> {
        let slim = self.slim;
        // A string as it is kept: whole, or cut as a log keeps it.
        let kept = |mut s: String| {
            if let Some(max) = slim {
                crate::text::cap_in_place(&mut s, max);
            }
            s
        };
        match &mut self.body {
            Building::Text(t) => match path {
                ["text"] => t.text = kept(string(raw)?),
                ["synthetic"] => t.synthetic = opt_bool(raw)?,
                ["ignored"] => t.ignored = opt_bool(raw)?,
                ["time"] => t.time = time_range(raw, known, &mut self.time)?,
                ["time", key] => time_field(&mut self.time, key, raw)?,
                ["metadata"] if slim.is_none() => t.metadata = opt_map(raw)?,
                _ => {}
            },
            Building::Reasoning(r) => match path {
                ["text"] => r.text = kept(string(raw)?),
                ["time"] => r.time = time_range(raw, known, &mut self.time)?,
                ["time", key] => time_field(&mut self.time, key, raw)?,
                ["metadata"] if slim.is_none() => r.metadata = opt_map(raw)?,
                _ => {}
            },
            Building::Tool(t) => match path {
                ["callID"] => t.call_id = kept(string(raw)?),
                ["tool"] => t.tool = kept(string(raw)?),
                ["metadata"] if slim.is_none() => t.metadata = opt_map(raw)?,
                ["state"] if !known => return None,
                ["state", field] => {
                    let f = &mut t.fields;
                    let present = |raw: &str| (raw != "null").then(String::new);
                    match (*field, slim) {
                        ("input", _) => f.input = input_shape(raw)?,
                        // A log keeps neither what a tool read and printed nor its metadata.
                        ("raw" | "output" | "attachments" | "metadata", Some(_)) => {}
                        ("title", Some(_)) => f.title = opt_string(raw)?.map(kept),
                        ("raw", None) => f.raw = present(raw),
                        ("output", None) => f.output = present(raw),
                        ("title", None) => f.title = present(raw),
                        ("attachments", None) => f.attachments = (raw != "null").then(Vec::new),
                        ("error", _) => f.error = opt_string(raw)?.map(kept),
                        ("metadata", None) => f.metadata = opt_map(raw)?,
                        ("time", _) => f.time = time_range(raw, known, &mut self.time)?,
                        _ => {}
                    }
                }
                ["state", "time", key] => time_field(&mut self.time, key, raw)?,
                _ => {}
            },
            Building::StepStart(s) => {
                if let ["snapshot"] = path {
                    s.snapshot = opt_string(raw)?.map(kept);
                }
            }
            Building::StepFinish(s) => match path {
                ["reason"] => s.reason = kept(string(raw)?),
                ["snapshot"] => s.snapshot = opt_string(raw)?.map(kept),
                ["cost"] => s.cost = number(raw)?,
                ["tokens"] if !known => s.tokens = serde_read(raw)?,
                ["tokens", rest @ ..] => tokens_field(&mut s.tokens, rest, raw, known)?,
                _ => {}
            },
            Building::None | Building::Other => {}
        }
        Some(())
    }
}

impl<'a> Sink<'a> for PartSink {
    fn variant(&mut self, path: &[&'a str], variant: &'static str, _: &'a str) {
        match (path, &mut self.body) {
            ([], _) => {
                self.body = match variant {
                    "text" => Building::Text(TextPart::default()),
                    "reasoning" => Building::Reasoning(ReasoningPart::default()),
                    "tool" => Building::Tool(ToolBuilding::default()),
                    "step-start" => Building::StepStart(StepStartPart::default()),
                    "step-finish" => Building::StepFinish(StepFinishPart::default()),
                    _ => Building::Other,
                }
            }
            (["state"], Building::Tool(t)) => t.status = Some(variant),
            _ => {}
        }
    }

    fn open(&mut self, path: &[&'a str]) {
        // An object read from its fields starts afresh: a repeated key replaces the earlier
        // value, as it does when the text is parsed.
        match (path, &mut self.body) {
            (["time"] | ["state", "time"], _) => self.time = TimeRange::default(),
            (["state"], Building::Tool(t)) => {
                t.status = None;
                t.fields = ToolStateFields::default();
            }
            (["tokens"], Building::StepFinish(s)) => s.tokens = Tokens::default(),
            (["tokens", "cache"], Building::StepFinish(s)) => {
                s.tokens.cache = Default::default();
            }
            _ => {}
        }
    }

    fn field(&mut self, path: &[&'a str], raw: &'a str, known: bool) {
        // The first value that does not read ends the reading (the walk goes on, to validate).
        self.failed = self.failed || self.read(path, raw, known).is_none();
    }
}

#[derive(Default)]
enum MessageBuilding {
    #[default]
    None,
    User(UserMessage),
    Assistant(Box<AssistantMessage>),
}

#[derive(Default)]
struct MessageSink {
    body: MessageBuilding,
    time: MessageTime,
    model: ModelRef,
    error: NamedError,
    failed: bool,
}

impl MessageSink {
    fn read(&mut self, path: &[&str], raw: &str, known: bool) -> Option<()> {
        match (&mut self.body, path) {
            (_, ["time"]) if !known => self.time = serde_read(raw)?,
            (_, ["time", "created"]) => self.time.created = opt_number(raw)?,
            (_, ["time", "completed"]) => self.time.completed = opt_number(raw)?,
            (MessageBuilding::User(u), path) => match path {
                ["time"] => u.time = std::mem::take(&mut self.time),
                ["agent"] => u.agent = string(raw)?,
                ["model"] if !known => u.model = serde_read(raw)?,
                ["model"] => u.model = Some(std::mem::take(&mut self.model)),
                ["model", "providerID"] => self.model.provider_id = string(raw)?,
                ["model", "modelID"] => self.model.model_id = string(raw)?,
                _ => {}
            },
            (MessageBuilding::Assistant(a), path) => match path {
                ["time"] => a.time = std::mem::take(&mut self.time),
                ["error"] if !known => a.error = serde_read(raw)?,
                ["error"] => a.error = Some(std::mem::take(&mut self.error)),
                ["error", "data"] => self.error.data = serde_read(raw)?,
                ["parentID"] => a.parent_id = string(raw)?,
                ["modelID"] => a.model_id = string(raw)?,
                ["providerID"] => a.provider_id = string(raw)?,
                ["mode"] => a.mode = string(raw)?,
                ["agent"] => a.agent = opt_string(raw)?,
                ["summary"] => a.summary = opt_bool(raw)?,
                ["cost"] => a.cost = number(raw)?,
                ["tokens"] if !known => a.tokens = serde_read(raw)?,
                ["tokens", rest @ ..] => tokens_field(&mut a.tokens, rest, raw, known)?,
                ["finish"] => a.finish = opt_string(raw)?,
                ["rewind"] => a.repaired = Some(serde::de::IgnoredAny),
                _ => {}
            },
            (MessageBuilding::None, _) => {}
        }
        Some(())
    }
}

impl<'a> Sink<'a> for MessageSink {
    fn variant(&mut self, path: &[&'a str], variant: &'static str, _: &'a str) {
        match path {
            [] => {
                self.body = match variant {
                    "user" => MessageBuilding::User(UserMessage::default()),
                    "assistant" => MessageBuilding::Assistant(Box::default()),
                    _ => MessageBuilding::None,
                }
            }
            ["error"] => self.error.name = variant.to_owned(),
            _ => {}
        }
    }

    fn open(&mut self, path: &[&'a str]) {
        // As in `PartSink::open`.
        match (path, &mut self.body) {
            (["time"], _) => self.time = MessageTime::default(),
            (["model"], _) => self.model = ModelRef::default(),
            (["error"], _) => self.error = NamedError::default(),
            (["tokens"], MessageBuilding::Assistant(a)) => a.tokens = Tokens::default(),
            (["tokens", "cache"], MessageBuilding::Assistant(a)) => {
                a.tokens.cache = Default::default();
            }
            _ => {}
        }
    }

    fn field(&mut self, path: &[&'a str], raw: &'a str, known: bool) {
        // The first value that does not read ends the reading (the walk goes on, to validate).
        self.failed = self.failed || self.read(path, raw, known).is_none();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the slow way reads (parse, then the lenient view), reduced as `Part::from_json`
    /// reduces a tool's input, output, title, raw input and attachments.
    fn slow_part(text: &str) -> Option<Part> {
        let v: Value = serde_json::from_str(text).ok()?;
        let mut p = Part::from_value(&v);
        p.id.clear();
        p.session_id.clear();
        p.message_id.clear();
        Some(reduced(p))
    }

    /// A part as the fast way keeps it: metadata reduced to [`METADATA_KEYS`], and a tool's
    /// input, output, title, raw input and attachments to their shape.
    fn reduced(mut p: Part) -> Part {
        let keep = |m: &mut Option<Map<String, Value>>| {
            if let Some(m) = m {
                m.retain(|k, _| METADATA_KEYS.contains(&k.as_str()));
                if let Some(o) = m.get_mut("output").filter(|o| o.is_string()) {
                    *o = Value::String(String::new());
                }
            }
        };
        match &mut p.body {
            PartBody::Text(t) => keep(&mut t.metadata),
            PartBody::Reasoning(r) => keep(&mut r.metadata),
            PartBody::Tool(t) => {
                keep(&mut t.metadata);
                keep(&mut t.state.fields_mut().metadata);
            }
            _ => {}
        }
        p.tool_shape()
    }

    /// `part` reads what `Part::from_json` reads, and where that gives up on a valid text
    /// (a repeated key) it reads what the slow way reads.
    fn same_part(text: &str) {
        let got = part(text);
        if !conform::conforms(text, &Ty::Union(&schema::PART)) {
            assert_eq!(got, None, "{text}");
            return;
        }
        match Part::from_json(text) {
            Some(expected) => assert_eq!(got, Some(reduced(expected)), "{text}"),
            None => {
                if let Some(got) = got {
                    assert_eq!(Some(got), slow_part(text), "{text}");
                }
            }
        }
    }

    fn same_message(text: &str) {
        let got = message(text);
        if !conform::conforms(text, &Ty::Union(&schema::MESSAGE)) {
            assert_eq!(got, None, "{text}");
            return;
        }
        match MessageInfo::from_json(text) {
            Some(expected) => assert_eq!(got, Some(expected), "{text}"),
            None => {
                if let Some(got) = got {
                    let v: Value = serde_json::from_str(text).unwrap_or_default();
                    let mut slow = MessageInfo::from_value(&v);
                    slow.id.clear();
                    slow.session_id.clear();
                    assert_eq!(got, slow, "{text}");
                }
            }
        }
    }

    const PARTS: &[&str] = &[
        r#"{"type":"text","text":"Let me \"look\" \u00e9 \n","time":{"start":1771000000000,"end":1.5},"synthetic":true,"ignored":false,"metadata":{"a":[1,{"b":null}]}}"#,
        r#"{"type":"text","text":"","time":{"start":1,"compacted":2}}"#,
        r#"{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"x"}"#,
        r#"{"type":"reasoning","text":"think","time":{"start":-5,"end":123456789012345678901},"metadata":{"anthropic":{"signature":"sig"}}}"#,
        r#"{"type":"tool","tool":"read","callID":"toolu_1","state":{"status":"completed","input":{"filePath":"/w"},"output":"a\nb","title":"t","metadata":{"lines":5},"time":{"start":1,"end":2},"attachments":[]},"metadata":{"providerExecuted":true}}"#,
        r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"error","input":{ },"error":"Tool execution aborted","time":{"start":1,"end":1},"metadata":{"interrupted":true,"output":"partial"}}}"#,
        r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"pending","input":{},"raw":"","time":{"start":1,"x":"y"},"error":null,"output":null,"metadata":{"k":1}}}"#,
        r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"pending","input":{},"raw":"","time":{"start":"bad"}}}"#,
        r#"{"type":"tool","tool":"bash","callID":"c","state":{"status":"running","input":{"a":1},"time":{"start":1},"title":"run"}}"#,
        r#"{"state":{"time":{"start":1,"end":2},"metadata":{},"title":"t","output":"o","input":{},"status":"completed"},"callID":"c","tool":"t","type":"tool"}"#,
        r#"{"type":"step-start","snapshot":"4b825dc6"}"#,
        r#"{"type":"step-start","snapshot":null}"#,
        r#"{"type":"step-finish","reason":"tool-calls","snapshot":"s","cost":0.01,"tokens":{"input":100,"output":50,"reasoning":0,"total":150.5,"cache":{"read":0,"write":3}}}"#,
        r#"{"type":"step-finish","reason":"stop","cost":1e2,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}"#,
        r#"{"type":"compaction","auto":true}"#,
        r#"{"type":"patch","hash":"h","files":["a","b"]}"#,
        r#"{"type":"text","text":"a","time":{"start":1,"end":2},"time":{"start":3}}"#,
        r#"{"type":"tool","tool":"b","callID":"c","state":{"status":"completed","input":{},"output":"o","title":"t","metadata":{},"time":{"start":1,"end":2}},"state":{"status":"pending","input":{"a":1},"raw":""}}"#,
        r#"{"type":"text","text":"a","time":{"start":1,"time":{"end":2}}}"#,
        r#"{"type":"tool","tool":"b","callID":"c","state":{"status":"error","input":{},"error":"e","time":{"start":1,"end":2,"compacted":5},"time":{"start":3,"end":4}}}"#,
        r#"{"type":"step-finish","reason":"stop","cost":0,"tokens":{"total":3,"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}},"tokens":{"input":5,"output":6,"reasoning":7,"cache":{"read":8,"write":9}}}"#,
        r#"{"type":"text","text":"","time":{"start":1,"compacted":2,"end":null},"metadata":null}"#,
    ];

    const MESSAGES: &[&str] = &[
        r#"{"role":"user","time":{"created":1771000000000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude"},"tools":{"bash":true}}"#,
        r#"{"role":"assistant","time":{"created":1,"completed":2},"parentID":"msg_x","modelID":"m","providerID":"p","mode":"build","agent":"build","path":{"cwd":"/w","root":"/w"},"cost":0.01,"tokens":{"input":100,"output":50,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop","summary":false}"#,
        r#"{"role":"assistant","time":{"created":1},"error":{"name":"MessageAbortedError","data":{"message":"stop"}},"parentID":"p","modelID":"m","providerID":"x","mode":"build","path":{"cwd":"/","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"agent":null}"#,
        r#"{"role":"assistant","time":{"created":1},"time":{"created":2,"completed":3},"parentID":"p","modelID":"m","providerID":"x","mode":"build","path":{"cwd":"/","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}"#,
    ];

    /// A step part read from a part event is the part [`part`] reads, with its ids; where its
    /// members and the event's are is exact.
    #[test]
    fn logged_part_reads_a_step_part_and_says_where_its_members_are() {
        let part = r#"{"id":"prt_1","sessionID":"ses_\u00e9","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0.5,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"a":1}}"#;
        let text = format!(r#"{{"type":"step_finish","part": {part} ,"sessionID":"s","x":[1]}}"#);
        let logged = logged_part(&text, 512).expect("a step part");
        let mut whole = super::part(part).expect("the same part, read whole");
        whole.id = "prt_1".into();
        whole.session_id = "ses_é".into();
        whole.message_id = "msg_1".into();
        assert_eq!(format!("{:?}", logged.part), format!("{whole:?}"));
        let at = |r: Option<(usize, usize)>| r.map(|(s, e)| &text[s..e]);
        let m = &logged.members;
        assert_eq!(at(m.id), Some(r#""prt_1""#));
        assert_eq!(at(m.reason), Some(r#""stop""#));
        assert_eq!(at(m.model), Some(r#"{"a":1}"#));
        assert!(at(m.tokens).is_some_and(|t| t.starts_with(r#"{"input":1"#)));
        assert_eq!(at(logged.top.ty), Some(r#""step_finish""#));
        assert_eq!(at(logged.top.session_id), Some(r#""s""#));
        assert_eq!(at(logged.top.service), None);
        // A member met twice, in the part or around it.
        for twice in [
            text.replace(r#""reason":"stop""#, r#""reason":"stop","reason":"length""#),
            text.replace(r#""sessionID":"s""#, r#""sessionID":"s","sessionID":"t""#),
            text.replace(r#","x":[1]"#, &format!(r#","part":{part}"#)),
        ] {
            assert!(logged_part(&twice, 512).is_none(), "{twice}");
        }
        // A text part's text is cut as a log keeps it; its metadata is not kept.
        let long = "é".repeat(300);
        let text_event = format!(
            r#"{{"type":"text","part":{{"id":"p","sessionID":"s","messageID":"m","type":"text","text":"{long}","metadata":{{"a":1}}}}}}"#
        );
        let Some(logged) = logged_part(&text_event, 511) else {
            panic!("a text part");
        };
        let PartBody::Text(t) = &logged.part.body else {
            panic!("read as text: {:?}", logged.part);
        };
        assert_eq!(t.text, format!("{}…[600 bytes]", "é".repeat(255)));
        assert_eq!(t.metadata, None);
        // A tool part's status is the tag of its state: where it is, and a second state refused.
        let tool = r#"{"type":"tool_use","part":{"id":"p","sessionID":"s","messageID":"m","type":"tool","callID":"c","tool":"bash","state":{"input":{},"status":"running","time":{"start":1}}}}"#;
        let logged = logged_part(tool, 512).expect("a tool part");
        let at = |r: Option<(usize, usize)>| r.map(|(s, e)| &tool[s..e]);
        assert_eq!(at(logged.members.status), Some(r#""running""#));
        let two = tool.replace(
            r#","time""#,
            r#"},"state":{"input":{},"status":"running","time""#,
        );
        assert!(logged_part(&two, 512).is_none(), "{two}");
        // A rare type, no part, or not one object: not read this way.
        let file = r#"{"id":"p","sessionID":"s","messageID":"m","type":"file","mime":"text/plain","url":"u"}"#;
        assert!(super::part(file).is_some());
        for text in [
            format!(r#"{{"part":{file}}}"#),
            r#"{"type":"text"}"#.to_owned(),
            format!("{text} {{}}"),
            text[..text.len() - 1].to_owned(),
            String::new(),
        ] {
            assert!(logged_part(&text, 512).is_none(), "{text}");
        }
    }

    #[test]
    fn json_str_reads_strings_only() {
        assert_eq!(json_str(r#""a""#).as_deref(), Some("a"));
        assert_eq!(json_str(r#""\u00e9\n""#).as_deref(), Some("é\n"));
        assert_eq!(json_str("1"), None);
        assert_eq!(json_str(r#""\x""#), None);
        assert_eq!(json_str(r#"""#), None);
    }

    #[test]
    fn reads_what_from_json_reads() {
        for text in PARTS {
            same_part(text);
        }
        for text in MESSAGES {
            same_message(text);
        }
        // The seeds are read this way, not left to the slow way.
        for t in &PARTS[..6] {
            assert!(part(t).is_some(), "{t}");
        }
        assert!(MESSAGES.iter().all(|t| message(t).is_some()));
        assert_eq!(part(PARTS[7]), None, "a time that is not a number");
    }

    #[test]
    fn mutations_read_the_same_either_way() {
        let inserts = [
            "\"", "{", "}", "[", "]", ",", ":", "1", "-", ".", "n", "\\", " ", "null", "\"x\"",
        ];
        let mutate = |seed: &str, f: &dyn Fn(&str)| {
            for i in 0..=seed.len() {
                if !seed.is_char_boundary(i) {
                    continue;
                }
                let next = (i + 1..=seed.len())
                    .find(|&j| seed.is_char_boundary(j))
                    .unwrap_or(seed.len());
                f(&format!("{}{}", &seed[..i], &seed[next..]));
                for ins in inserts {
                    f(&format!("{}{ins}{}", &seed[..i], &seed[i..]));
                }
            }
        };
        for seed in PARTS {
            mutate(seed, &same_part);
        }
        for seed in MESSAGES {
            mutate(seed, &same_message);
        }
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "-1",
            "0.01",
            "0.1",
            "0.3",
            "1.5",
            "-2.25",
            "123.456",
            "1771000000000",
            "1771000000000.5",
            "999999999999999999",
            "99999999999999999.9",
            "0.000000000000000001",
            "1234567890123456789",
            "12345678901234567.89",
            "1e5",
            "1.",
            "-",
            "",
            ".5",
            "9007199254740993",
            "0.30000000000000004",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // A sweep of short decimals.
        for i in 0..2000u32 {
            for frac in 0..4 {
                let s = format!("{i}");
                cases.push(if frac == 0 || s.len() <= frac {
                    s
                } else {
                    format!("{}.{}", &s[..s.len() - frac], &s[s.len() - frac..])
                });
            }
        }
        for c in cases {
            let expected: Option<f64> = serde_json::from_str(&c).ok();
            let got = number(&c);
            assert_eq!(
                got.map(f64::to_bits),
                expected.map(f64::to_bits),
                "{c}: {got:?} vs {expected:?}"
            );
        }
    }
}
