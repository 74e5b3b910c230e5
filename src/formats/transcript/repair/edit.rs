//! The plan of a transcript repair and the lines it works on: what Claude Code's and Codex's
//! planners (`claude_code/repair.rs`, `codex/repair.rs`) write into and
//! [`super`] applies.

use std::collections::BTreeSet;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

/// The content Claude Code gives the result of a tool call it interrupted
/// (`[Request interrupted by user for tool use]`, its own constant).
pub const CLAUDE_INTERRUPTED: &str = "[Request interrupted by user for tool use]";
/// The output Codex sends for a call it has no output for.
pub const CODEX_ABORTED: &str = "aborted";
/// Which client wrote the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Client {
    ClaudeCode,
    Codex,
    #[serde(rename = "gemini-cli")]
    Gemini,
    Copilot,
}

/// What kind of problem a change fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Problem {
    /// The last line was cut off mid-append.
    TornLastLine,
    /// A call ends the active history with no result.
    UnansweredCall,
    /// A result whose call is not before it on the active history.
    OrphanResult,
    /// Signed thinking the next request would send changed (`thinking-modified`).
    ChangedThinking,
    /// NUL bytes where a line or its start should be (a crash zero-filled the file).
    NulBytes,
    /// An event split across lines by raw line breaks inside a string.
    SplitRecord,
    /// Events written on one line.
    ConcatenatedRecords,
}

impl Problem {
    pub fn as_str(self) -> &'static str {
        match self {
            Problem::TornLastLine => "torn-last-line",
            Problem::UnansweredCall => "unanswered-call",
            Problem::OrphanResult => "orphan-result",
            Problem::ChangedThinking => "changed-thinking",
            Problem::NulBytes => "nul-bytes",
            Problem::SplitRecord => "split-record",
            Problem::ConcatenatedRecords => "concatenated-records",
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change, in words.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// 1-based line of the file the change is about (for an added line: the line it will be).
    pub line: u64,
    pub problem: Problem,
    /// The call id the change is about, if any.
    pub call_id: Option<String>,
    pub change: String,
}

/// An edit of the file's lines (0-based line indices of the original).
#[derive(Clone, Debug)]
pub(crate) enum Edit {
    /// Leave out the torn last line.
    Trim,
    /// Leave out a line.
    Drop(usize),
    /// Write this line instead.
    Replace(usize, String),
    /// Add a line at the end.
    Append(String),
}

/// The plan for one file.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub client: Client,
    pub session_id: Option<String>,
    pub changes: Vec<Change>,
    /// Problems seen but left alone, in words.
    pub unfixable: Vec<String>,
    #[serde(skip)]
    pub(crate) edits: Vec<Edit>,
    /// Call ids the plan answers or whose orphan results it drops.
    #[serde(skip)]
    pub(crate) calls: BTreeSet<String>,
    /// The newest record's time of the unanswered calls (ms since the epoch).
    #[serde(skip)]
    pub(crate) unanswered_at_ms: Option<i64>,
}

impl Plan {
    /// Plans appending `record`, the answer to the unanswered call `call_id`, as file line
    /// `line`.
    pub(crate) fn answer(
        &mut self,
        line: u64,
        call_id: String,
        record: Map<String, Value>,
        change: String,
    ) {
        self.edits.push(Edit::Append(
            serde_json::to_string(&Value::Object(record)).unwrap_or_default(),
        ));
        self.changes.push(Change {
            line,
            problem: Problem::UnansweredCall,
            call_id: Some(call_id.clone()),
            change,
        });
        self.calls.insert(call_id);
    }
}

/// One line of the file.
pub(crate) struct Line<'a> {
    pub(crate) raw: &'a [u8],
    pub(crate) value: Option<Value>,
}

/// The file split into lines (without their `\n`), and whether the last one had its newline.
pub(crate) fn split(bytes: &[u8]) -> (Vec<Line<'_>>, bool) {
    let mut lines = Vec::new();
    let mut rest = bytes;
    let mut newline_at_end = true;
    while !rest.is_empty() {
        let (raw, next, nl) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        newline_at_end = nl;
        let text = std::str::from_utf8(raw).ok();
        let value = text
            .map(|t| t.trim_end_matches('\r'))
            .filter(|t| !t.trim().is_empty())
            .and_then(|t| serde_json::from_str::<Value>(t).ok());
        lines.push(Line { raw, value });
        rest = next;
    }
    (lines, newline_at_end)
}

pub(crate) fn obj(v: &Option<Value>) -> Option<&Map<String, Value>> {
    v.as_ref().and_then(Value::as_object)
}

/// Milliseconds since the epoch of an RFC 3339 time.
pub(crate) fn time_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

pub(crate) fn now_utc() -> chrono::DateTime<chrono::Utc> {
    SystemTime::now().into()
}

pub(crate) fn now_iso() -> String {
    now_utc().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A random (version 4) UUID, as Claude Code's record ids.
pub fn uuid_v4() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// A time-ordered (version 7) UUID, as Codex's item ids.
pub fn uuid_v7() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}
