//! Recognition: every format looks at the head of an input and claims it only with evidence.
//!
//! [`detect`] reads the first [`SNIFF_BYTES`] of a file (or looks at a folder), prepares a
//! [`Head`] once, and asks each registered format (`formats!` in `formats/mod.rs`) for its
//! [`Claim`]s. A claim names the format, the kind of [`Evidence`] found and where (the index of
//! the first record that fits, for evidence read record by record), in words for the reader. The
//! strongest claim wins: the stronger evidence first, then the earlier record, then the
//! registry's order. When nothing claims the input, the error says what the head holds and
//! suggests `--input`.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::core::Format;
use crate::ingest::{DetectError, input};

/// Size of the head read to recognise a format: real logs start with anything (a shell
/// transcript, a wrapper's header, test-runner output), so the agent's first object can lie
/// well into the file.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// How many candidate JSON values the head scan tries before giving up.
const SNIFF_MAX_VALUES: usize = 400;

/// How many of the head's lines that start with `{` are read as records.
const RECORD_LINES: usize = 50;

/// What a claim rests on, strongest first. Every kind is named by what was seen, so a claim can
/// be shown to the user; the order is the order in which the evidence decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Evidence {
    /// A file signature (SQLite's header).
    Magic,
    /// A store's folder layout.
    Folder,
    /// A wrapper's line prefixes or header line (agent logs under solve.mjs and the like).
    Wrapper,
    /// The first line is a field of a text/event-stream.
    SseField,
    /// The document's first key names its kind (an export's `info`).
    FirstKey,
    /// The document's top-level keys (a recording's `interactions`, a HAR's `log.entries`).
    DocumentKeys,
    /// Those keys within the head's first 4 KiB.
    DocumentProbe,
    /// A line that is one of the format's records (the first such line decides).
    Record,
    /// A pretty-printed document that starts with the format's keys.
    PrettyDocument,
    /// SQL statements creating the format's tables.
    SqlDump,
    /// JSON objects of the format somewhere in the head, after a preamble.
    Objects,
    /// The format's keys mentioned in the head, without a whole object to read.
    Mentions,
}

/// A format's claim on an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    pub format: Format,
    pub evidence: Evidence,
    /// The index of the first record that fits, for [`Evidence::Record`] (0 otherwise).
    pub at: usize,
    /// How many of the head's records fit, for [`Evidence::Record`] (0 otherwise): between two
    /// formats whose records both appear, the one more of them fit wins.
    pub fitting: usize,
    /// What was recognised, in words.
    pub what: String,
}

impl Claim {
    pub fn new(format: Format, evidence: Evidence, what: impl Into<String>) -> Self {
        Self {
            format,
            evidence,
            at: 0,
            fitting: 0,
            what: what.into(),
        }
    }

    /// A claim on the record at `at` of [`Head::records`], `fitting` of which fit.
    pub fn record(format: Format, at: usize, fitting: usize, what: impl Into<String>) -> Self {
        Self {
            format,
            evidence: Evidence::Record,
            at,
            fitting,
            what: what.into(),
        }
    }
}

/// The head of an input, prepared once for every format's recognition.
pub struct Head<'a> {
    /// The file the head is of (a database's schema is asked of the file itself).
    pub path: &'a Path,
    /// The head's bytes, as read (binary formats look at these).
    pub bytes: &'a [u8],
    /// The head as text (a byte-order mark removed, a character cut by the end left out); `None`
    /// for a head that is not UTF-8 text.
    pub text: Option<&'a str>,
    /// The first line that is not blank, trimmed at the start.
    pub first: &'a str,
    /// The lines of the text.
    pub lines: Vec<&'a str>,
    /// The first [`RECORD_LINES`] lines that start with `{`, each decoded once: the candidates
    /// for [`Evidence::Record`], read only when the first line starts with `{` (else empty).
    pub records: Vec<RecordLine>,
    /// The first 4 KiB of the text (a document's distinguishing keys are read there), and the
    /// same without whitespace.
    pub probe: &'a str,
    pub probe_compact: String,
}

impl<'a> Head<'a> {
    /// Whether the first line starts a JSON object.
    pub fn first_is_object(&self) -> bool {
        self.first.starts_with('{')
    }

    /// Whether `key` appears as a quoted string in the first 4 KiB.
    pub fn probe_has(&self, key: &str) -> bool {
        self.probe.contains(&format!("\"{key}\""))
    }
}

/// Each record line of the head decoded once: the object, or the line without whitespace when
/// it is not valid JSON (a line cut by the end of the head, a truncated capture line).
pub enum RecordLine {
    Object(Map<String, Value>),
    Cut(String),
    /// A line that is JSON but no object.
    Other,
}

/// Decodes `line` for [`Evidence::Record`].
pub fn record_line(line: &str) -> RecordLine {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(obj)) => RecordLine::Object(obj),
        Ok(_) => RecordLine::Other,
        Err(_) => RecordLine::Cut(line.chars().filter(|c| !c.is_whitespace()).collect()),
    }
}

/// The first record of `head` that `fits`, as a claim for `format`, with how many fit.
pub fn first_record(
    head: &Head<'_>,
    format: Format,
    what: &str,
    mut fits: impl FnMut(&RecordLine) -> bool,
) -> Option<Claim> {
    if !head.first_is_object() {
        return None;
    }
    let fit: Vec<bool> = head.records.iter().map(&mut fits).collect();
    let fitting = fit.iter().filter(|&&f| f).count();
    fit.iter().position(|&f| f).map(|at| {
        let of = head.records.len();
        Claim::record(
            format,
            at,
            fitting,
            format!("{what} (record {}; {fitting} of {of} records fit)", at + 1),
        )
    })
}

/// Recognises the format of `path` from its first bytes, or from its layout for a folder.
pub fn detect(path: &Path) -> Result<Format, DetectError> {
    let io = |source| DetectError::Io {
        path: path.to_path_buf(),
        source,
    };
    let read = input::readable(path)?;
    let meta = std::fs::metadata(&read).map_err(io)?;
    if meta.is_dir() {
        return super::claims_on_folder(path)
            .into_iter()
            .min_by_key(|c| (c.evidence, c.at))
            .map(|c| c.format)
            .ok_or_else(|| DetectError::Directory {
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

/// Recognises a format from the head of a file.
pub fn sniff(path: &Path, bytes: &[u8]) -> Result<Format, DetectError> {
    recognise(path, bytes).map(|c| c.format)
}

/// The winning claim on the head of a file: the strongest evidence, then the earliest record,
/// then the registry's order.
pub fn recognise(path: &Path, bytes: &[u8]) -> Result<Claim, DetectError> {
    let path_buf = || path.to_path_buf();
    if bytes.is_empty() {
        return Err(DetectError::Empty { path: path_buf() });
    }
    let binary = Head {
        path,
        bytes,
        text: None,
        first: "",
        lines: Vec::new(),
        records: Vec::new(),
        probe: "",
        probe_compact: String::new(),
    };
    if let Some(claim) = strongest(super::claims_on(&binary)) {
        return Ok(claim);
    }
    let line_at = |k: usize| memchr::memchr_iter(b'\n', &bytes[..k]).count() as u64 + 1;
    if let Some(k) = memchr::memchr(0, bytes) {
        // A crash zero-fills a file's end: a session whose reader names NUL bytes as damage
        // (Copilot CLI's) is recognised by its whole lines before them.
        if let Some(cut) = memchr::memrchr(b'\n', &bytes[..k])
            && let Ok(claim) = recognise(path, &bytes[..=cut])
            && claim.format.is_copilot()
        {
            return Ok(claim);
        }
        return Err(DetectError::Binary {
            path: path_buf(),
            offset: k as u64,
            line: line_at(k),
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        // A multi-byte character cut by the end of the head is fine.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
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
    let first = lines
        .iter()
        .map(|l| l.trim_start())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let records = if first.starts_with('{') {
        lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| l.starts_with('{') && l.len() > 1)
            .take(RECORD_LINES)
            .map(record_line)
            .collect()
    } else {
        Vec::new()
    };
    let probe = &text[..text.char_indices().nth(4096).map_or(text.len(), |(i, _)| i)];
    let head = Head {
        path,
        bytes,
        text: Some(text),
        first,
        lines,
        records,
        probe,
        probe_compact: probe.chars().filter(|c| !c.is_whitespace()).collect(),
    };
    strongest(super::claims_on(&head)).ok_or_else(|| DetectError::Unknown {
        path: path_buf(),
        head: first.chars().take(60).collect(),
        found: scan_values(text, |_| false).words(head.lines.len(), bytes.len()),
    })
}

/// The strongest of `claims`, which come in the registry's order: the strongest evidence, then,
/// between record claims, the one more of the head's records fit, then the earliest record.
fn strongest(claims: Vec<Claim>) -> Option<Claim> {
    claims
        .into_iter()
        .min_by_key(|c| (c.evidence, std::cmp::Reverse(c.fitting), c.at))
}

/// The first key of the JSON object `text` starts with, when it is a plain string.
pub fn first_key(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find(['"', '\\'])?;
    (rest.as_bytes().get(end) == Some(&b'"')).then(|| &rest[..end])
}

/// What a scan of the head found: complete JSON objects starting a line, and how many of them
/// are the kind looked for.
#[derive(Debug, Default)]
pub struct Scan {
    pub objects: usize,
    pub found: usize,
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
/// whether compact or pretty-printed, and stops at the first one that is `wanted`. A value cut by
/// the end of the head is skipped.
pub fn scan_values(text: &str, wanted: impl Fn(&Map<String, Value>) -> bool) -> Scan {
    let mut scan = Scan::default();
    let mut tries = 0;
    let mut pos = 0;
    while pos < text.len() && tries < SNIFF_MAX_VALUES {
        let line_end = text[pos..].find('\n').map_or(text.len(), |k| pos + k + 1);
        let line = &text[pos..line_end];
        let skip = super::agent_log::read::line_prefix_len(line.as_bytes()).unwrap_or(0);
        if line[skip..].starts_with('{') {
            tries += 1;
            let start = pos + skip;
            let mut values =
                serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
            if let Some(Ok(Value::Object(obj))) = values.next() {
                scan.objects += 1;
                if wanted(&obj) {
                    scan.found += 1;
                    return scan;
                }
                let end = start + values.byte_offset();
                pos = text[end..].find('\n').map_or(text.len(), |k| end + k + 1);
                continue;
            }
            // A pretty-printed object whose every line carries the prefix.
            if skip > 0
                && let Some((obj, end)) = prefixed_object(text, pos)
            {
                scan.objects += 1;
                if wanted(&obj) {
                    scan.found += 1;
                    return scan;
                }
                pos = end;
                continue;
            }
        }
        pos = line_end;
    }
    scan
}

/// The object that starts on the prefixed line at `pos` of `text` and goes on over lines each with
/// a prefix of their own (a pretty-printed object in a wrapper's or a CI job's log), read without
/// the prefixes up to its closing line (`}` alone), and where the line after that starts.
fn prefixed_object(text: &str, pos: usize) -> Option<(Map<String, Value>, usize)> {
    const MAX_LINES: usize = 2000;
    let mut joined = String::new();
    let mut at = pos;
    for _ in 0..MAX_LINES {
        if at >= text.len() {
            return None;
        }
        let end = text[at..].find('\n').map_or(text.len(), |k| at + k + 1);
        let line = &text[at..end];
        let skip = super::agent_log::read::line_prefix_len(line.as_bytes())?;
        let content = &line[skip..];
        joined.push_str(content);
        at = end;
        if content.trim_end() == "}" {
            return match serde_json::from_str::<Value>(&joined) {
                Ok(Value::Object(obj)) => Some((obj, at)),
                _ => None,
            };
        }
    }
    None
}

/// The keys of the first JSON object in `text` at depth 1, and at depth 2 under a top-level
/// `log` key, as far as `text` goes: what a document is does not depend on how far into it
/// its distinguishing key lies.
pub fn object_keys(text: &str) -> (Vec<&str>, Vec<&str>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Format;

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
        // Gemini, Cohere and Bedrock events, one per line.
        for line in [
            &b"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]}}]}\n"[..],
            b"{\"type\":\"message-start\",\"id\":\"c\"}\n",
            b"{\"messageStart\":{\"role\":\"assistant\"}}\n",
            b"{\"contentBlockDelta\":{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"}}}\n",
        ] {
            assert_eq!(fmt(line).ok(), Some(Format::JsonLines));
        }
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

    /// An agent's JSON inside a GitHub Actions job log: as `gh run view --log` prints it (job,
    /// step and timestamp before each line) and as the raw log downloads (the timestamp alone, a
    /// byte-order mark first), compact or pretty-printed. A job log with no agent in it is not
    /// an agent log.
    #[test]
    fn an_agent_inside_a_github_actions_job_log() {
        let compact = concat!(
            "build\tSet up job\t2026-01-02T03:04:01.0000000Z Current runner version: '2.321.0'\n",
            "build\tRun agent\t2026-01-02T03:04:05.1234567Z ",
            r#"{"type":"log","level":"info","timestamp":"2026-01-02T03:04:05.120Z","service":"default","message":"Agent started (continuous mode)"}"#,
            "\n",
        );
        assert_eq!(fmt(compact.as_bytes()).ok(), Some(Format::AgentLog));
        let pretty = concat!(
            "\u{feff}2026-01-02T03:04:01.0000000Z ##[group]Run agent --verbose\n",
            "2026-01-02T03:04:05.1234567Z {\n",
            "2026-01-02T03:04:05.1234568Z   \"type\": \"log\",\n",
            "2026-01-02T03:04:05.1234569Z   \"service\": \"session.prompt\",\n",
            "2026-01-02T03:04:05.1234570Z   \"message\": \"loop\"\n",
            "2026-01-02T03:04:05.1234571Z }\n",
        );
        assert_eq!(fmt(pretty.as_bytes()).ok(), Some(Format::AgentLog));
        let build = concat!(
            "build\tRun cargo test\t2026-01-02T03:04:05.1234567Z running 12 tests\n",
            "build\tRun cargo test\t2026-01-02T03:04:06.1234567Z {\"reason\":\"compiler-artifact\"}\n",
        );
        assert!(fmt(build.as_bytes()).is_err());
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
        // Copilot CLI: its session's events; the file's first event may be cut by the head.
        let copilot = concat!(
            r#"{"type":"session.start","data":{"sessionId":"s1","producer":"copilot-agent"},"id":"e1","timestamp":"t","parentId":null}"#,
            "\n",
            r#"{"type":"user.message","data":{"content":"hi"},"id":"e2","timestamp":"t","parentId":"e1"}"#,
            "\n"
        );
        assert_eq!(fmt(copilot.as_bytes()).ok(), Some(Format::CopilotSession));
        assert_eq!(
            fmt(br#"{"type":"session.start","data":{"sessionId":"s1","version":1,"producer":"copilot-agent","copilotVersion":"1.0"#).ok(),
            Some(Format::CopilotSession)
        );
        // NUL bytes a crash left after its events do not make it binary.
        let mut zeroed = copilot.as_bytes().to_vec();
        zeroed.extend_from_slice(&[0; 16]);
        assert_eq!(fmt(&zeroed).ok(), Some(Format::CopilotSession));
        // A Responses stream's events and an agent's events with a `type` are not Copilot's.
        assert_ne!(
            fmt(br#"{"type":"response.created","response":{"id":"r1"}}"#).ok(),
            Some(Format::CopilotSession)
        );
        assert_ne!(
            fmt(br#"{"type":"tool.execution_start","data":{},"timestamp":"t","sessionID":"s"}"#)
                .ok(),
            Some(Format::CopilotSession)
        );
        for other in [claude, codex] {
            assert_ne!(fmt(other.as_bytes()).ok(), Some(Format::CopilotSession));
        }
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
    fn gemini_cli_sessions_are_told_by_their_metadata_and_records() {
        let meta = r#"{"sessionId":"s1","projectHash":"ab12","startTime":"t","lastUpdated":"t","kind":"main"}"#;
        let user = r#"{"id":"u1","timestamp":"t","type":"user","content":[{"text":"hi"}]}"#;
        let jsonl = format!("{meta}\n{user}\n");
        assert_eq!(fmt(jsonl.as_bytes()).ok(), Some(Format::GeminiSession));
        // The legacy document, pretty-printed as the client writes it.
        let legacy =
            "{\n  \"sessionId\": \"s1\",\n  \"projectHash\": \"ab12\",\n  \"messages\": []\n}\n";
        assert_eq!(fmt(legacy.as_bytes()).ok(), Some(Format::GeminiSession));
        // The metadata line lost: its message records and `$set`s.
        let set = r#"{"$set":{"lastUpdated":"t"}}"#;
        assert_eq!(
            fmt(format!("{set}\n{user}\n").as_bytes()).ok(),
            Some(Format::GeminiSession)
        );
        // Claude Code's records carry a `sessionId` too, but no `projectHash` and other keys;
        // a Gemini API stream chunk is not a session.
        let claude = r#"{"type":"queue-operation","operation":"enqueue","timestamp":"t","sessionId":"s1","content":"hi"}"#;
        assert_eq!(
            fmt(format!("{claude}\n").as_bytes()).ok(),
            Some(Format::ClaudeTranscript)
        );
        let chunk = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}]}"#;
        assert_ne!(
            fmt(format!("{chunk}\n").as_bytes()).ok(),
            Some(Format::GeminiSession)
        );
        // An object with `id`, `type` and `content` but other keys is no Gemini message.
        let other = r#"{"id":"m1","timestamp":"t","type":"user","content":"x","role":"user"}"#;
        assert_ne!(
            fmt(format!("{other}\n").as_bytes()).ok(),
            Some(Format::GeminiSession)
        );
    }

    /// `claude-code-action` keeps a run's `stream-json` messages as one JSON array: an agent log,
    /// compact or pretty-printed; an array of Gemini chunks stays a stream, and an array of
    /// anything else is no recording.
    #[test]
    fn an_array_of_stream_json_messages_is_an_agent_log() {
        let init = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
        let result = r#"{"type":"result","subtype":"success","is_error":false,"session_id":"s1"}"#;
        assert_eq!(
            fmt(format!("[{init},{result}]").as_bytes()).ok(),
            Some(Format::AgentLog)
        );
        let pretty = "[\n  {\n    \"type\": \"system\",\n    \"subtype\": \"init\",\n    \"session_id\": \"s1\"\n  }\n]\n";
        assert_eq!(fmt(pretty.as_bytes()).ok(), Some(Format::AgentLog));
        assert_eq!(
            fmt(br#"[{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}]"#).ok(),
            Some(Format::JsonLines)
        );
        assert!(matches!(
            fmt(br#"[{"name":"webshop","version":"2.0.3"},{"name":"cart"}]"#),
            Err(DetectError::Unknown { .. })
        ));
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

    /// Between two formats whose records both appear in the head, the one more records fit
    /// wins, whichever comes first; on equal counts the earlier record decides.
    #[test]
    fn the_format_more_records_fit_wins() {
        let a = Claim::record(Format::AgentLog, 0, 1, "one agent record first");
        let b = Claim::record(Format::JsonLines, 1, 40, "forty stream events after it");
        assert_eq!(
            strongest(vec![a.clone(), b.clone()]).map(|c| c.format),
            Some(Format::JsonLines)
        );
        let b_few = Claim::record(Format::JsonLines, 1, 1, "one stream event after it");
        assert_eq!(
            strongest(vec![b_few, a]).map(|c| c.format),
            Some(Format::AgentLog)
        );
        let magic = Claim::new(Format::OpencodeDb, Evidence::Magic, "SQLite's header");
        assert_eq!(
            strongest(vec![b, magic]).map(|c| c.format),
            Some(Format::OpencodeDb)
        );
    }

    /// A line that is a whole object, not an agent's, is no agent log even when text nested in
    /// it looks like an agent's keys (a recorded request's `"type":"text"` blocks); a
    /// pretty-printed agent object still is one.
    #[test]
    fn a_whole_object_is_judged_by_its_keys_not_by_what_it_mentions() {
        let request = concat!(
            r#"{"n":1,"method":"POST","path":"/v1/messages","body":{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}}"#,
            "\n",
            r#"{"n":2,"method":"POST","path":"/v1/messages","body":{"messages":[{"role":"user","content":[{"type":"text","text":"go"}]}]}}"#,
            "\n"
        );
        assert!(matches!(
            fmt(request.as_bytes()),
            Err(DetectError::Unknown { .. })
        ));
        let pretty =
            "{\n  \"body\": {\n    \"type\": \"text\",\n    \"sessionID\": \"ses_1\"\n  }\n}\n";
        assert_eq!(fmt(pretty.as_bytes()).ok(), Some(Format::AgentLog));
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
