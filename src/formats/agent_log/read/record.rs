//! The records an agent log reads as: their re-joined texts, where each piece came from, and
//! the JSON values pending decoding.

use std::ops::Range;
use std::sync::Arc;

use serde_json::Value;

use super::OpenKind;
use crate::json::position::text_offset;
use crate::json::scan::{Seg, locate};
use crate::source::Span;

/// The re-joined texts of the JSON values read together (a batch of records), with where each
/// piece of them came from. The reader appends every value's text to one buffer rather than
/// giving each its own allocation; [`AgentLogReader::take_texts`] hands the buffer over.
#[derive(Debug, Default)]
pub struct Texts {
    /// Position of `text[0]` in everything the reader re-joined.
    pub(super) text_base: usize,
    pub(super) text: String,
    /// Position of `segments[0]` among all the reader's segments.
    pub(super) segment_base: usize,
    /// `(offset in its value's text, offset in file)`, ascending within each value.
    pub(super) segments: Vec<(usize, u64)>,
}

/// A JSON value's re-joined text (prefixes and split artifacts removed): a piece of the
/// [`Texts`] of its batch. Dereferences to the text.
#[derive(Clone)]
pub struct RecordText {
    texts: Arc<Texts>,
    /// In `texts.text`.
    pub(super) text: Range<usize>,
    /// In `texts.segments`.
    pub(super) segments: Range<usize>,
}

impl RecordText {
    pub(super) fn segments(&self) -> &[(usize, u64)] {
        self.texts
            .segments
            .get(self.segments.clone())
            .unwrap_or_default()
    }
}

impl std::ops::Deref for RecordText {
    type Target = str;

    fn deref(&self) -> &str {
        self.texts.text.get(self.text.clone()).unwrap_or_default()
    }
}

impl std::fmt::Debug for RecordText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// A JSON value's span, text and segments, borrowed from a [`JsonRecord`] or, before it is
/// decoded, from the [`Texts`] of its batch ([`Pending::view`]).
#[derive(Clone, Copy)]
pub struct RecordView<'a> {
    /// From the opening bracket to the closing one, in the file.
    pub span: Span,
    /// The re-joined JSON text (prefixes and split artifacts removed).
    pub text: &'a str,
    /// Where each piece of `text` came from: `(offset in text, offset in file)`, ascending.
    pub(super) segments: &'a [(usize, u64)],
}

impl RecordView<'_> {
    /// The file span of `text[start..end]`.
    pub fn span_of(&self, start: usize, end: usize) -> Span {
        let from = self.file_offset(start);
        let to = self.file_offset(end.max(start + 1) - 1) + 1;
        Span::new(self.span.file, from, to.saturating_sub(from))
    }

    fn file_offset(&self, pos: usize) -> u64 {
        let i = self.segments.partition_point(|(t, _)| *t <= pos);
        match self.segments.get(i.saturating_sub(1)) {
            Some(&(t, f)) => f + pos.saturating_sub(t) as u64,
            None => self.span.offset + pos as u64,
        }
    }
}

/// A JSON value re-joined from one or more physical lines.
#[derive(Debug, Clone)]
pub struct JsonRecord {
    /// From the opening bracket to the closing one, in the file.
    pub span: Span,
    /// The re-joined JSON text (prefixes and split artifacts removed).
    pub text: RecordText,
    pub value: Value,
}

impl JsonRecord {
    /// Where each piece of `text` came from: `(offset in text, offset in file)`, ascending.
    pub fn segments(&self) -> &[(usize, u64)] {
        self.text.segments()
    }

    /// The file span of `text[start..end]`.
    pub fn span_of(&self, start: usize, end: usize) -> Span {
        self.view().span_of(start, end)
    }

    /// The record borrowed: its span, text and segments.
    pub fn view(&self) -> RecordView<'_> {
        RecordView {
            span: self.span,
            text: &self.text,
            segments: self.segments(),
        }
    }

    /// The file span of the value at `path` (e.g. `["part", "state", "status"]`).
    pub fn locate(&self, path: &[Seg<'_>]) -> Option<Span> {
        locate(&self.text, path).map(|(s, e)| self.span_of(s, e))
    }

    /// Where the items of the array at `path` are in the record's text (none when there is no
    /// array there), to locate values inside each with [`JsonRecord::locate_from`].
    pub fn items(&self, path: &[Seg<'_>]) -> Vec<(usize, usize)> {
        crate::json::scan::array_items(&self.text, path).unwrap_or_default()
    }

    /// The file span of the value at `path` inside the value at `from` (see
    /// [`crate::json::scan::locate_from`]).
    pub fn locate_from(&self, from: Option<&(usize, usize)>, path: &[Seg<'_>]) -> Option<Span> {
        let (s, e) = crate::json::scan::locate_from(&self.text, *from?, path)?;
        Some(self.span_of(s, e))
    }

    /// The file span of `needle` inside the string value at `path`, searched in the raw (escaped)
    /// text, so it is exact for needles without characters JSON escapes (`data:`, `event:`).
    pub fn locate_in_string(&self, path: &[Seg<'_>], needle: &str) -> Option<Span> {
        let (s, e) = locate(&self.text, path)?;
        let k = self.text[s..e].find(needle)?;
        Some(self.span_of(s + k, s + k + needle.len()))
    }
}

/// A bus event (`service: bus`, `message: publishing`): its name is all that is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusEvent {
    SessionError,
    Idle,
    Other,
}

/// All a reader of the log needs of a JSON object that is a plain logger entry or a bus event
/// (most of a log): decoded without building its value (see [`AgentLogReader::with_light`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Light {
    /// The OpenCode session (`ses_…`) the entry names.
    pub session: Option<String>,
    pub bus: Option<BusEvent>,
}

/// Decides from a JSON object's text whether it is a [`Light`] one.
pub type LightFilter = fn(&str) -> Option<Light>;

/// Parses a JSON object's text into its value.
pub type ObjectParser = fn(&str) -> serde_json::Result<Value>;

/// How [`Pending::decode`] decodes a JSON value.
#[derive(Clone, Copy)]
pub struct Decoding {
    /// Objects it takes become [`LogRecord::Light`].
    pub light: Option<LightFilter>,
    /// Parses the other objects (raw error dumps are always read as plain `Value`s).
    pub object: ObjectParser,
}

impl Default for Decoding {
    fn default() -> Self {
        Self {
            light: None,
            object: plain_value,
        }
    }
}

fn plain_value(text: &str) -> serde_json::Result<Value> {
    serde_json::from_str(text)
}

/// One record of an agent log.
#[derive(Debug, Clone)]
pub enum LogRecord {
    /// A JSON object (pretty-printed or compact). Boxed, as is a raw error's: most records
    /// are pending or light, and a record is moved several times on its way.
    Json(Box<JsonRecord>),
    /// A JSON object the reader's [`LightFilter`] took: a plain logger entry or a bus event.
    Light { span: Span, light: Light },
    /// A JSON value not decoded yet, from a [deferred](AgentLogReader::deferred) reader.
    Pending(Pending),
    /// A runtime error printed raw, e.g. `ZodError: [ … ]` (the name, then the JSON after it).
    RawError {
        name: String,
        record: Box<JsonRecord>,
    },
    /// A line that is not part of any JSON value (wrapper status text, blank line, …).
    #[allow(
        dead_code,
        reason = "the line's bytes; replay does not read plain text lines yet"
    )]
    Text(Span),
    /// An uncaught error's headline printed raw after a runtime's code frame (Bun prints the
    /// source lines around the throw, a caret, then `Name: message`).
    Uncaught {
        name: String,
        message: String,
        /// The headline line (the code frame before it is not kept).
        span: Span,
    },
    /// A wrapper's verdict on the agent's command (`✅ Agent command completed`, `Exit Code: N`).
    Status {
        span: Span,
        success: bool,
        words: String,
    },
    /// A wrapper's command line that runs an agent with a model (`solve … --model kilo/glm-5-free`,
    /// `… | agent --model opencode/kimi-k2.5-free --verbose`): the model asked for, and where it is.
    Command { spec: String, span: Span },
    /// A word that the run was stopped from outside (see `STOPPED`): an interrupt, a kill, a
    /// timeout (`timeout`).
    Stopped {
        span: Span,
        words: String,
        timeout: bool,
    },
    /// Something that looked like a JSON object but could not be decoded.
    Undecodable {
        span: Span,
        reason: String,
        /// Where the JSON parser stopped, when it got that far.
        at: Option<Span>,
        /// The log ends inside this value.
        truncated: bool,
        /// The ids and the `type`s its text names (see [`mentions`]).
        mentions: (Vec<String>, Vec<String>),
    },
    /// A JSON object a wrapper mangled (an escape that is none of JSON's, such as `\^[` for
    /// ESC), read once those were made harmless: its value, why it was not JSON, and where the
    /// first mangled escape is.
    Mangled {
        record: Box<JsonRecord>,
        reason: String,
        at: Span,
    },
}

/// Counters about what the reader saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LogStats {
    pub lines: u64,
    pub prefixed_lines: u64,
    pub json_objects: u64,
    pub raw_errors: u64,
    pub undecodable: u64,
    pub text_lines: u64,
    /// Newlines dropped because they fell inside a JSON string (64 KiB split artifacts).
    pub rejoined_splits: u64,
    /// The file ends inside a JSON value.
    pub truncated: bool,
    /// The wrapper's timestamp of the line the last JSON value closed on, and of the last
    /// prefixed line, in ms (see `AgentLogReader::stamps`).
    #[serde(skip)]
    pub json_stamp_ms: Option<u64>,
    #[serde(skip)]
    pub last_stamp_ms: Option<u64>,
}

/// `r`, a range in everything the reader re-joined, in a [`Texts`] that starts at `base`.
fn local(r: &Range<usize>, base: usize) -> Range<usize> {
    r.start.saturating_sub(base)..r.end.saturating_sub(base)
}

/// A JSON value re-joined but not decoded yet (see [`AgentLogReader::deferred`]): where its
/// text and segments are in the [`Texts`] the reader hands over with it.
#[derive(Debug, Clone)]
pub struct Pending {
    pub(super) span: Span,
    pub(super) kind: OpenKind,
    pub(super) text: Range<usize>,
    pub(super) segments: Range<usize>,
}

impl Pending {
    /// Length of the value's text.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Whether the value is a line taken whole, not framed (see
    /// [`AgentLogReader::with_whole_lines`]): it is one JSON object only if it decodes.
    pub fn whole_line(&self) -> bool {
        matches!(self.kind, OpenKind::Line)
    }

    /// The object's text, for a reader that reads what it needs of it itself; `None` for a raw
    /// error dump. `texts` are those [`AgentLogReader::take_texts`] handed over after the reader
    /// yielded this value.
    pub fn view<'t>(&self, texts: &'t Texts) -> Option<RecordView<'t>> {
        matches!(self.kind, OpenKind::Object | OpenKind::Line).then(|| RecordView {
            span: self.span,
            text: texts
                .text
                .get(local(&self.text, texts.text_base))
                .unwrap_or_default(),
            segments: texts
                .segments
                .get(local(&self.segments, texts.segment_base))
                .unwrap_or_default(),
        })
    }

    /// The value's text in `texts` (those [`AgentLogReader::take_texts`] handed over after the
    /// reader yielded this value).
    fn text_in(&self, texts: &Arc<Texts>) -> RecordText {
        RecordText {
            texts: Arc::clone(texts),
            text: local(&self.text, texts.text_base),
            segments: local(&self.segments, texts.segment_base),
        }
    }

    /// Decodes the value: a [`LogRecord::Json`], [`LogRecord::Light`] (objects `light` takes),
    /// [`LogRecord::RawError`], or, when it is not JSON, [`LogRecord::Undecodable`] (an object)
    /// or [`LogRecord::Text`] (a raw error dump).
    ///
    /// `texts` are those [`AgentLogReader::take_texts`] handed over after the reader yielded it.
    pub fn decode(self, texts: &Arc<Texts>, decoding: Decoding) -> LogRecord {
        let span = self.span;
        let text = (texts.text)
            .get(local(&self.text, texts.text_base))
            .unwrap_or_default();
        if let (OpenKind::Object | OpenKind::Line, Some(filter)) = (&self.kind, decoding.light)
            && let Some(light) = filter(text)
        {
            return LogRecord::Light { span, light };
        }
        let parse = match &self.kind {
            OpenKind::Object | OpenKind::Line => decoding.object,
            OpenKind::RawError(_) => Decoding::default().object,
        };
        match parse(text) {
            Ok(value) => {
                let record = Box::new(JsonRecord {
                    span,
                    text: self.text_in(texts),
                    value,
                });
                match self.kind {
                    OpenKind::Object | OpenKind::Line => LogRecord::Json(record),
                    OpenKind::RawError(name) => LogRecord::RawError { name, record },
                }
            }
            Err(err) => match self.kind {
                OpenKind::Object | OpenKind::Line => {
                    let mut record = JsonRecord {
                        span,
                        text: self.text_in(texts),
                        value: Value::Null,
                    };
                    let reason = format!("invalid JSON: {err}");
                    if let Some((lenient, first)) = unmangled(text)
                        && let Ok(value) = parse(&lenient)
                    {
                        let at = record.span_of(first, first + 1);
                        record.value = value;
                        return LogRecord::Mangled {
                            record: Box::new(record),
                            reason,
                            at,
                        };
                    }
                    let at = text_offset(&record.text, err.line(), err.column())
                        .map(|pos| record.span_of(pos, pos + 1));
                    LogRecord::Undecodable {
                        span,
                        reason,
                        at,
                        truncated: false,
                        mentions: mentions(text),
                    }
                }
                // A raw dump that is not JSON after all is just text.
                OpenKind::RawError(_) => LogRecord::Text(span),
            },
        }
    }
}

/// A copy of `text` in which what a wrapper mangled is made harmless, when it holds any, with
/// where the first is: inside a string, a backslash before a character no JSON escape starts
/// with (`\^[`, caret notation for ESC), and a raw control character, become spaces. The copy
/// has the text's length, so offsets in it are offsets in the text.
pub(super) fn unmangled(text: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut first = None;
    let (mut in_string, mut i) = (false, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let mangled = match b {
            b'"' => {
                in_string = !in_string;
                false
            }
            b'\\' if in_string => match bytes.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u') => {
                    i += 2;
                    continue;
                }
                _ => true,
            },
            0..0x20 if in_string => true,
            _ => false,
        };
        if mangled {
            first.get_or_insert(i);
            out.get_or_insert_with(|| bytes.to_vec())[i] = b' ';
        }
        i += 1;
    }
    let out = String::from_utf8(out?).ok()?;
    Some((out, first?))
}

/// What an undecodable record's text names, as far as it can be read: the values of its
/// `tool_use_id`, `callID`, `id` and `messageID` members, and of its `type` members (at most 32
/// of each).
pub fn mentions(text: &str) -> (Vec<String>, Vec<String>) {
    static NAMES: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""(tool_use_id|callID|id|messageID|type)"\s*:\s*"([^"\\]{1,128})""#)
            .ok()
    });
    let (mut ids, mut kinds): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let Some(re) = NAMES.as_ref() else {
        return (ids, kinds);
    };
    for caps in re.captures_iter(text) {
        let (Some(key), Some(value)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        let list = if key.as_str() == "type" {
            &mut kinds
        } else {
            &mut ids
        };
        if list.len() < 32 && !list.iter().any(|i| i == value.as_str()) {
            list.push(value.as_str().to_owned());
        }
    }
    (ids, kinds)
}

/// What [`Pending::decode`] made of a value, as [`LogStats`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    JsonObject,
    RawError,
    Undecodable,
    TextLine,
    Other,
}

impl LogRecord {
    /// Where the record is, when it is the agent's (a JSON object or a runtime's error), not a
    /// wrapper's or a terminal's text.
    pub fn agent_span(&self) -> Option<Span> {
        match self {
            LogRecord::Json(rec) | LogRecord::Mangled { record: rec, .. } => Some(rec.span),
            LogRecord::Light { span, .. } | LogRecord::Uncaught { span, .. } => Some(*span),
            LogRecord::RawError { record, .. } => Some(record.span),
            _ => None,
        }
    }

    /// How [`LogStats::count_decoded`] counts this record.
    pub fn decoded(&self) -> Decoded {
        match self {
            LogRecord::Json(_) | LogRecord::Light { .. } | LogRecord::Mangled { .. } => {
                Decoded::JsonObject
            }
            LogRecord::RawError { .. } => Decoded::RawError,
            LogRecord::Undecodable { .. } => Decoded::Undecodable,
            LogRecord::Text(_) => Decoded::TextLine,
            _ => Decoded::Other,
        }
    }
}

impl LogStats {
    /// Counts a record [`Pending::decode`] returned (see [`LogRecord::decoded`]).
    pub fn count_decoded(&mut self, decoded: Decoded) {
        match decoded {
            Decoded::JsonObject => self.json_objects += 1,
            Decoded::RawError => self.raw_errors += 1,
            Decoded::Undecodable => self.undecodable += 1,
            Decoded::TextLine => self.text_lines += 1,
            Decoded::Other => {}
        }
    }
}
