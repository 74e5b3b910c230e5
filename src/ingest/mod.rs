//! Stage 1 of the pipeline: bytes → records with byte spans.
//!
//! Each input kind has a submodule that streams its records; [`detect`] recognises the kind from
//! the content (never from the file name alone). Ingest knows framing, not meaning: deciding that
//! an object is a tool update or a crash is the job of `replay`.

pub mod agent_log;
pub mod capture;
pub mod claude_transcript;
pub mod codex_rollout;
pub mod git_project;
pub mod input;
pub mod opencode_data;
pub mod opencode_db;
pub mod opencode_export;
pub mod opencode_storage;
pub mod opencode_v2;
pub mod private;
pub mod recording;
pub mod sse;
pub mod stored;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::core::Format;
pub use crate::core::IngestError;

/// Size of the head read to recognise a format: real logs start with anything (a shell
/// transcript, a wrapper's header, test-runner output), so the agent's first object can lie
/// well into the file.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// How many candidate JSON values the head scan tries before giving up.
const SNIFF_MAX_VALUES: usize = 400;

/// Why a file could not be recognised or opened.
#[derive(Debug, Error)]
pub enum DetectError {
    #[error("cannot read `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{path}` is a directory but not an OpenCode storage folder (no `session/` and `message/` in it or in `storage/`); give a file"
    )]
    Directory { path: PathBuf },
    #[error("`{path}` is empty: there is nothing to diagnose")]
    Empty { path: PathBuf },
    #[error(
        "`{path}` is not text (NUL byte at byte {offset}, line {line}): not a log, capture or recording"
    )]
    Binary {
        path: PathBuf,
        offset: u64,
        line: u64,
    },
    #[error(
        "`{path}`: invalid UTF-8 at byte {offset} (line {line}): rewind reads UTF-8 logs and captures"
    )]
    InvalidUtf8 {
        path: PathBuf,
        offset: u64,
        line: u64,
    },
    #[error(
        "cannot tell what `{path}` is: expected an agent log, an SSE capture, an HTTP recording or an OpenCode session store (it starts with {head:?}; {found}); if you know what it is, say so with `--input` (e.g. `--input agent-log`)"
    )]
    Unknown {
        path: PathBuf,
        head: String,
        /// What the head holds, in words.
        found: String,
    },
}

/// Opens `path` for streaming with a 64 KiB buffer (a one-shot input such as standard input or
/// a FIFO is read from its private copy, see [`input`]).
pub fn open(path: &Path) -> Result<BufReader<File>, DetectError> {
    File::open(input::readable(path)?)
        .map(|f| BufReader::with_capacity(64 * 1024, f))
        .map_err(|source| DetectError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// Recognises the format of `path` from its first bytes.
pub fn detect(path: &Path) -> Result<Format, DetectError> {
    let io = |source| DetectError::Io {
        path: path.to_path_buf(),
        source,
    };
    let read = input::readable(path)?;
    let meta = std::fs::metadata(&read).map_err(io)?;
    if meta.is_dir() {
        if opencode_storage::root(path).is_some() {
            return Ok(Format::OpencodeStorage);
        }
        return Err(DetectError::Directory {
            path: path.to_path_buf(),
        });
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    File::open(&read)
        .map_err(io)?
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    sniff(path, &head)
}

/// Recognises a format from the head of a file (exposed for tests).
pub fn sniff(path: &Path, head: &[u8]) -> Result<Format, DetectError> {
    let path_buf = || path.to_path_buf();
    if head.is_empty() {
        return Err(DetectError::Empty { path: path_buf() });
    }
    if head.starts_with(b"SQLite format 3\0") {
        return Ok(Format::OpencodeDb);
    }
    let line_at = |k: usize| memchr::memchr_iter(b'\n', &head[..k]).count() as u64 + 1;
    if let Some(k) = memchr::memchr(0, head) {
        return Err(DetectError::Binary {
            path: path_buf(),
            offset: k as u64,
            line: line_at(k),
        });
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // A multi-byte character cut by the end of the head is fine.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(e) => {
            return Err(DetectError::InvalidUtf8 {
                path: path_buf(),
                offset: e.valid_up_to() as u64,
                line: line_at(e.valid_up_to()),
            });
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(DetectError::Empty { path: path_buf() });
    }
    let lines: Vec<&str> = text.lines().collect();
    if lines
        .iter()
        .any(|l| agent_log::prefix_len(l.as_bytes()).is_some())
        || text.starts_with("Solution draft log")
        || text.starts_with("# Solve.mjs Log")
    {
        return Ok(Format::AgentLog);
    }
    let first = lines
        .iter()
        .map(|l| l.trim_start())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if first.starts_with("data:")
        || first.starts_with("event:")
        || first.starts_with("id:")
        || first.starts_with("retry:")
        || first.starts_with(':')
    {
        return Ok(Format::Sse);
    }
    if first.starts_with('{') {
        // An export's first key is `info`, however long its title or however far its
        // `messages` lie; no agent, stream or recording object starts with it.
        if first_key(text.trim_start()) == Some("info") {
            return Ok(Format::OpencodeExport);
        }
        if let Some(format) = sniff_json(text) {
            return Ok(format);
        }
    }
    if is_sql_dump(text) {
        return Ok(Format::OpencodeSqlDump);
    }
    // A preamble (shell transcript, wrapper header, test-runner output, comments) before the
    // agent's objects: look for them anywhere in the head.
    let scan = scan_values(text);
    if scan.agent > 0 {
        return Ok(Format::AgentLog);
    }
    Err(DetectError::Unknown {
        path: path_buf(),
        head: first.chars().take(60).collect(),
        found: scan.words(lines.len(), head.len()),
    })
}

/// The first key of the JSON object `text` starts with, when it is a plain string.
fn first_key(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find(['"', '\\'])?;
    (rest.as_bytes().get(end) == Some(&b'"')).then(|| &rest[..end])
}

/// What a scan of the head found: complete JSON objects starting a line, and how many of them
/// are an agent's.
#[derive(Debug, Default)]
struct Scan {
    objects: usize,
    agent: usize,
}

impl Scan {
    fn words(&self, lines: usize, bytes: usize) -> String {
        let kib = bytes.div_ceil(1024);
        match self.objects {
            0 => {
                let s = if lines == 1 { "" } else { "s" };
                format!("no JSON object starts a line in its first {lines} line{s} ({kib} KiB)")
            }
            n => {
                let s = if n == 1 { "" } else { "s" };
                format!(
                    "{n} JSON object{s} in its first {kib} KiB, none of them an agent's log entry or event"
                )
            }
        }
    }
}

/// Reads the JSON objects that start a line (after a wrapper prefix, unindented) in `text`,
/// whether compact or pretty-printed, and counts the agent's among them. A value cut by the end
/// of the head is skipped.
fn scan_values(text: &str) -> Scan {
    let mut scan = Scan::default();
    let mut tries = 0;
    let mut pos = 0;
    while pos < text.len() && tries < SNIFF_MAX_VALUES {
        let line_end = text[pos..].find('\n').map_or(text.len(), |k| pos + k + 1);
        let line = &text[pos..line_end];
        let skip = agent_log::prefix_len(line.as_bytes()).unwrap_or(0);
        if line[skip..].starts_with('{') {
            tries += 1;
            let start = pos + skip;
            let mut values =
                serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
            if let Some(Ok(serde_json::Value::Object(obj))) = values.next() {
                scan.objects += 1;
                if agent_object(&obj) {
                    scan.agent += 1;
                    return scan;
                }
                let end = start + values.byte_offset();
                pos = text[end..].find('\n').map_or(text.len(), |k| end + k + 1);
                continue;
            }
        }
        pos = line_end;
    }
    scan
}

/// Whether `text` starts like an SQL dump (`sqlite3 DB .dump`) of a database with OpenCode's
/// `message` or `part` table.
fn is_sql_dump(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("--"))
        .unwrap_or_default()
        .to_ascii_uppercase();
    let sql = ["PRAGMA ", "BEGIN", "CREATE TABLE", "INSERT INTO"]
        .iter()
        .any(|k| first.starts_with(k));
    let opencode = ["message", "part"].iter().any(|t| {
        [
            format!("CREATE TABLE `{t}`"),
            format!("CREATE TABLE {t} "),
            format!("CREATE TABLE \"{t}\""),
            format!("CREATE TABLE IF NOT EXISTS `{t}`"),
        ]
        .iter()
        .any(|p| text.contains(p.as_str()))
    });
    sql && opencode
}

/// Types of the objects an agent writes (`agent-log-format.md` §2.2).
const AGENT_TYPES: &[&str] = &[
    "log",
    "status",
    "input",
    "step_start",
    "step_finish",
    "tool_use",
    "text",
    "reasoning",
    "session_idle",
    "permission_request",
    "model_resolved",
];

/// An object an agent writes: a logger or bus entry (also as `{"log": {…}}`), an output event,
/// an error event, or a Claude Code `stream-json` record.
fn agent_object(obj: &serde_json::Map<String, serde_json::Value>) -> bool {
    let ty = obj.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    let logger = |o: &serde_json::Map<String, serde_json::Value>| {
        o.contains_key("service") && o.contains_key("message")
    };
    obj.contains_key("sessionID")
        || logger(obj)
        || AGENT_TYPES.contains(&ty)
        || (ty == "error" && (obj.contains_key("errorType") || obj.contains_key("exitCode")))
        || (obj.len() == 1
            && obj
                .get("log")
                .and_then(|l| l.as_object())
                .is_some_and(logger))
        || (obj.contains_key("session_id")
            && matches!(ty, "system" | "assistant" | "user" | "result"))
}

/// A provider or UI stream event: Chat Completions chunks, Responses and Anthropic events, AI SDK
/// UI chunks (hyphenated types), AG-UI events (UPPER_CASE types).
fn stream_object(obj: &serde_json::Map<String, serde_json::Value>) -> bool {
    let ty = obj.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    obj.contains_key("choices")
        || obj.get("object").and_then(|o| o.as_str()) == Some("chat.completion.chunk")
        || ty.starts_with("response.")
        || ty.starts_with("message_")
        || ty.starts_with("content_block_")
        || ty.contains('-')
        || matches!(ty, "ping" | "error" | "start" | "finish" | "abort")
        || (!ty.is_empty() && ty.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}

/// Classifies one line of JSON; a line that is not valid JSON (a truncated capture line) is
/// classified by the markers it contains.
fn sniff_line(line: &str) -> Option<Format> {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::Object(obj)) => {
            // The clients' own transcripts first: a Claude Code bookkeeping record's hyphenated
            // type (`queue-operation`) would otherwise read as an AI SDK UI chunk.
            if claude_transcript::is_record(&obj) {
                Some(Format::ClaudeTranscript)
            } else if codex_rollout::is_record(&obj) {
                Some(Format::CodexRollout)
            } else if obj.contains_key("info") && obj.contains_key("messages") {
                Some(Format::OpencodeExport)
            } else if agent_object(&obj) {
                Some(Format::AgentLog)
            } else if stream_object(&obj) {
                Some(Format::JsonLines)
            } else {
                None
            }
        }
        Ok(_) => None,
        Err(_) => {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            let stream = [
                "\"object\":\"chat.completion.chunk\"",
                "\"type\":\"response.",
                "\"type\":\"message_",
                "\"type\":\"content_block_",
            ];
            if claude_transcript::looks_like_record(&compact) {
                Some(Format::ClaudeTranscript)
            } else if codex_rollout::looks_like_record(&compact) {
                Some(Format::CodexRollout)
            } else if stream.iter().any(|m| compact.contains(m)) {
                Some(Format::JsonLines)
            } else if compact.contains("\"sessionID\"") {
                Some(Format::AgentLog)
            } else {
                None
            }
        }
    }
}

/// The keys of the first JSON object in `text` at depth 1, and at depth 2 under a top-level
/// `log` key, as far as `text` goes: what a document is does not depend on how far into it
/// its distinguishing key lies.
fn object_keys(text: &str) -> (Vec<&str>, Vec<&str>) {
    let bytes = text.as_bytes();
    let (mut top, mut log) = (Vec::new(), Vec::new());
    let (mut depth, mut i) = (0u32, 0usize);
    let mut in_log = false;
    let mut last_top: Option<&str> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let Some(key) = text.get(start..j.min(bytes.len())) else {
                    break;
                };
                let after =
                    text[j.min(text.len())..].trim_start_matches(['"', ' ', '\n', '\r', '\t']);
                if after.starts_with(':') {
                    if depth == 1 {
                        top.push(key);
                        last_top = Some(key);
                    } else if depth == 2 && in_log {
                        log.push(key);
                    }
                }
                i = j + 1;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth == 2 {
                    in_log = last_top == Some("log") && bytes[i] == b'{';
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    (top, log)
}

/// Tells JSON documents, JSON lines and the agent's pretty-printed output apart.
fn sniff_json(text: &str) -> Option<Format> {
    let (top, log) = object_keys(text.trim_start());
    if top.contains(&"interactions") {
        return Some(Format::HttpRecording);
    }
    if top.first() == Some(&"log")
        && log
            .iter()
            .any(|k| matches!(*k, "entries" | "creator" | "pages"))
    {
        return Some(Format::Har);
    }
    let probe: String = text.chars().take(4096).collect();
    let has = |k: &str| probe.contains(&format!("\"{k}\""));
    if has("interactions") {
        return Some(Format::HttpRecording);
    }
    if has("log") && has("entries") && !has("sessionID") {
        return Some(Format::Har);
    }
    // One JSON value per line: the first line that tells, tells.
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('{') && l.len() > 1)
        .take(50)
    {
        if let Some(f) = sniff_line(line) {
            return Some(f);
        }
    }
    // A pretty-printed document or stream of objects.
    let compact: String = probe.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.starts_with("{\"info\":") && has("messages") {
        return Some(Format::OpencodeExport);
    }
    if scan_values(text).agent > 0 {
        return Some(Format::AgentLog);
    }
    let agent = has("sessionID")
        || (has("service") && has("message"))
        || AGENT_TYPES
            .iter()
            .any(|t| compact.contains(&format!("\"type\":\"{t}\"")));
    agent.then_some(Format::AgentLog)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(text: &[u8]) -> Result<Format, DetectError> {
        sniff(Path::new("x"), text)
    }

    #[test]
    fn recognises_each_kind() {
        assert_eq!(
            fmt(b"Solution draft log for x\n\n[2026-02-01T12:17:25.666Z] [INFO] hi\n").ok(),
            Some(Format::AgentLog)
        );
        assert_eq!(
            fmt(b"{\n  \"type\": \"status\",\n  \"mode\": \"stdin-stream\"\n}\n").ok(),
            Some(Format::AgentLog)
        );
        assert_eq!(
            fmt(b"{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"ses_1\"}\n").ok(),
            Some(Format::AgentLog)
        );
        assert_eq!(fmt(b"data: {\"a\":1}\n\n").ok(), Some(Format::Sse));
        assert_eq!(fmt(b"event: ping\ndata: {}\n\n").ok(), Some(Format::Sse));
        assert_eq!(
            fmt(b"{\"type\":\"message_start\",\"message\":{}}\n").ok(),
            Some(Format::JsonLines)
        );
        assert_eq!(
            fmt(b"{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n").ok(),
            Some(Format::JsonLines)
        );
        assert_eq!(
            fmt(b"{\"version\":1,\"metadata\":{},\"interactions\":[]}").ok(),
            Some(Format::HttpRecording)
        );
        assert_eq!(
            fmt(b"{\"log\":{\"version\":\"1.2\",\"entries\":[]}}").ok(),
            Some(Format::Har)
        );
        assert_eq!(
            fmt(b"{\"info\":{\"id\":\"ses_1\"},\"messages\":[]}").ok(),
            Some(Format::OpencodeExport)
        );
        assert_eq!(fmt(b"SQLite format 3\0rest").ok(), Some(Format::OpencodeDb));
        assert_eq!(
            fmt(b"-- a dump\nCREATE TABLE `message` (\n  `id` text PRIMARY KEY\n);\n").ok(),
            Some(Format::OpencodeSqlDump)
        );
        assert!(matches!(
            fmt(b"CREATE TABLE users (id integer);\n"),
            Err(DetectError::Unknown { .. })
        ));
        // A corrupt first event is still a stream capture.
        assert_eq!(
            fmt(b"{\"type\":\"response.created\",\"response\":{\"id\":\"r\"}\n{\"type\":\"response.in_progress\"}\n").ok(),
            Some(Format::JsonLines)
        );
    }

    #[test]
    fn client_transcripts_are_not_stream_captures() {
        // Claude Code: a bookkeeping record with a hyphenated type first, then the tree.
        let claude = concat!(
            r#"{"type":"queue-operation","operation":"enqueue","timestamp":"t","sessionId":"s1","content":"hi"}"#,
            "\n",
            r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"u1","sessionId":"s1"}"#,
            "\n"
        );
        assert_eq!(fmt(claude.as_bytes()).ok(), Some(Format::ClaudeTranscript));
        // A first record cut by the end of the head.
        assert_eq!(
            fmt(
                br#"{"parentUuid":"u0","isSidechain":false,"sessionId":"s1","message":{"content":"#
            )
            .ok(),
            Some(Format::ClaudeTranscript)
        );
        // Codex: 0.169.0 lines with `ordinal`, older ones without.
        let codex = concat!(
            r#"{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{"id":"th"}}"#,
            "\n",
            r#"{"timestamp":"t","ordinal":1,"type":"event_msg","payload":{"type":"task_started"}}"#,
            "\n"
        );
        assert_eq!(fmt(codex.as_bytes()).ok(), Some(Format::CodexRollout));
        assert_eq!(
            fmt(br#"{"timestamp":"t","type":"response_item","payload":{"type":"message"}}"#).ok(),
            Some(Format::CodexRollout)
        );
        assert_eq!(
            fmt(br#"{"timestamp":"t","type":"session_meta","payload":{"id":"th","base_instructions":{"text":"You are"#).ok(),
            Some(Format::CodexRollout)
        );
        // Claude Code's stream-json output stays an agent log; a recorded request log is not a
        // transcript.
        assert_eq!(
            fmt(b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}\n").ok(),
            Some(Format::AgentLog)
        );
        assert!(
            fmt(br#"{"n":1,"method":"POST","path":"/v1/messages","headers":{},"body":{"messages":[]}}"#)
                .is_err()
        );
    }

    #[test]
    fn json_that_is_not_a_recording_is_unknown() {
        assert!(matches!(
            fmt(b"{\n  \"name\": \"webshop\",\n  \"version\": \"2.0.3\"\n}\n"),
            Err(DetectError::Unknown { .. })
        ));
        // A capture whose first line is truncated JSON is still a capture.
        assert_eq!(
            fmt(b"{\"type\":\"response.created\",\"response\":{\"id\":\"r\"\n{\"type\":\"response.completed\"}\n").ok(),
            Some(Format::JsonLines)
        );
        assert_eq!(
            fmt(b"{\"type\":\"text-delta\",\"id\":\"0\",\"delta\":\"hi\"}\n").ok(),
            Some(Format::JsonLines)
        );
        assert_eq!(
            fmt(b"{\"type\":\"abort\",\"level\":\"info\",\"service\":\"session.processor\",\"message\":\"unhandled\"}\n").ok(),
            Some(Format::AgentLog)
        );
    }

    #[test]
    fn agent_objects_after_a_preamble() {
        let status = "{\n  \"type\": \"status\",\n  \"mode\": \"stdin-stream\"\n}\n";
        for preamble in [
            "user@host ~ % echo hi | agent --model m\n",
            "=== Start Command Log ===\nCommand: agent\n==========\n\n",
            "# a comment\n# another\n",
            "Running integration test...\n  ok 1 - builds\n",
        ] {
            assert_eq!(
                fmt(format!("{preamble}{status}").as_bytes()).ok(),
                Some(Format::AgentLog),
                "{preamble}"
            );
        }
        // Compact `{"log": {…}}` lines.
        assert_eq!(
            fmt(b"header\n{\"log\":{\"level\":\"info\",\"service\":\"default\",\"message\":\"hi\"}}\n").ok(),
            Some(Format::AgentLog)
        );
        // A single bare error object, pretty-printed.
        assert_eq!(
            fmt(b"{\n  \"type\": \"error\",\n  \"errorType\": \"UnhandledRejection\",\n  \"message\": \"x\"\n}\n").ok(),
            Some(Format::AgentLog)
        );
        // Claude Code stream-json records under a wrapper without prefixes.
        assert_eq!(
            fmt(b"starting\n{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"u-1\"}\n")
                .ok(),
            Some(Format::AgentLog)
        );
        // Far into the head.
        let mut long = "text line of a preamble\n".repeat(2000);
        long.push_str(status);
        assert!(long.len() > 16 * 1024);
        assert_eq!(fmt(long.as_bytes()).ok(), Some(Format::AgentLog));
    }

    #[test]
    fn exports_are_recognised_however_far_their_messages_lie() {
        let title = "t".repeat(8 * 1024);
        let pretty = format!(
            "{{\n  \"info\": {{\n    \"id\": \"ses_1\",\n    \"title\": \"{title}\"\n  }},\n  \"messages\": []\n}}\n"
        );
        assert_eq!(fmt(pretty.as_bytes()).ok(), Some(Format::OpencodeExport));
        // One line, larger than the head, with session ids in it.
        let parts = "{\"id\":\"prt_1\",\"sessionID\":\"ses_1\",\"type\":\"text\"},".repeat(3000);
        let line = format!(
            "{{\"info\":{{\"id\":\"ses_1\"}},\"messages\":[{{\"info\":{{}},\"parts\":[{parts}]}}]}}"
        );
        assert!(line.len() > SNIFF_BYTES);
        assert_eq!(
            fmt(&line.as_bytes()[..SNIFF_BYTES]).ok(),
            Some(Format::OpencodeExport)
        );
    }

    #[test]
    fn recordings_are_recognised_however_far_their_key_lies() {
        let meta = "m".repeat(8 * 1024);
        let rec = format!(
            "{{\n  \"version\": 1,\n  \"metadata\": {{\"note\": \"{meta}\", \"sessionID\": \"ses_1\"}},\n  \"interactions\": []\n}}\n"
        );
        assert_eq!(fmt(rec.as_bytes()).ok(), Some(Format::HttpRecording));
        let har = format!(
            "{{\"log\":{{\"version\":\"1.2\",\"pages\":[{{\"title\":\"{meta}\"}}],\"entries\":[]}}}}"
        );
        assert_eq!(fmt(har.as_bytes()).ok(), Some(Format::Har));
        // `{"log": {…}}` logger lines are not HAR files.
        assert_eq!(
            fmt(b"{\"log\":{\"level\":\"info\",\"service\":\"default\",\"message\":\"hi\"}}\n")
                .ok(),
            Some(Format::AgentLog)
        );
    }

    #[test]
    fn unknown_says_what_was_found_and_suggests_input() {
        let err = fmt(b"just some notes\n{\"name\": \"pkg\"}\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("1 JSON object"), "{err}");
        assert!(err.contains("--input"), "{err}");
    }

    #[test]
    fn rejects_bad_input_with_where() {
        assert!(matches!(fmt(b""), Err(DetectError::Empty { .. })));
        assert!(matches!(fmt(b"  \n\n"), Err(DetectError::Empty { .. })));
        assert!(matches!(
            fmt(b"ab\0cd"),
            Err(DetectError::Binary { offset: 2, .. })
        ));
        assert!(matches!(
            fmt(b"ok \xff\xfe"),
            Err(DetectError::InvalidUtf8 { offset: 3, .. })
        ));
        assert!(matches!(
            fmt(b"hello world\n"),
            Err(DetectError::Unknown { .. })
        ));
        // A multi-byte character cut by the sniff window is not an error.
        assert_eq!(fmt(b"data: \xc3").ok(), Some(Format::Sse));
    }
}
