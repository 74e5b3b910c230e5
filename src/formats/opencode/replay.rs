//! Replay of OpenCode session stores (the SQLite database, the legacy JSON storage folder, and
//! `opencode export` documents).
//!
//! A store holds each message and part at rest, one row (or file, or array item) each: there is
//! one [`Observation`] per part. Every message and part JSON is validated against message-v2
//! (`schema-violation`), then read into the lenient model.
//!
//! Where the records live decides where labels point:
//! * database rows have no lines: each message is rendered as a *virtual* source — its info and
//!   then its parts as pretty JSON, one block per part headed by its id — and labels point into
//!   that text (the JSON printer gives the database path and a locator instead of line numbers);
//! * export items and storage files are real files: labels point at their bytes.
//!
//! Rendering costs time, so a first pass can use a placeholder source ([`Render::Placeholder`])
//! and the pipeline renders only the sessions that have findings. That first pass need not keep
//! the text of database rows at all: a row that satisfies the schema can be read into the model
//! as it streams out of SQLite ([`StoredRecord::read_row`]), and the session is loaded again, text
//! and all, if it has to be shown.

use std::path::PathBuf;

use serde_json::Value;

use crate::core::Format;
use crate::formats::opencode::stored::{
    Place, Preread, StoredMessage, StoredRecord, StoredSession, fast_info, fast_part,
};
use crate::json::scan::{self as json_scan, Seg};
use crate::json::value::{MAX_KEPT_STRING, cap_strings_in_place};
use crate::model::{MessageInfo, NamedError, Part, PartBody, schema};
use crate::session::{
    Analysis, ErrorInfo, Event, EventKind, Message, Observation, PartRecord, PayloadIssues, Seq,
    Session, Undecodable,
};
use crate::source::{FileId, SourceMap, Span};

/// How database rows are shown.
#[derive(Clone, Debug)]
pub enum Render {
    /// Not rendered: every row span points at this (empty) source.
    Placeholder(FileId),
    /// Each message becomes a virtual source of `origin` (the database path).
    Virtual { origin: PathBuf },
}

/// A record placed in a source: where its text starts, and the text labels are located in.
struct Placed<'a> {
    file: FileId,
    base: u64,
    text: &'a str,
    /// Spans are real (false for the placeholder).
    real: bool,
}

impl Placed<'_> {
    fn whole(&self) -> Span {
        if self.real {
            Span::new(self.file, self.base, self.text.len() as u64)
        } else {
            Span::new(self.file, 0, 0)
        }
    }

    /// The span of `len` bytes at `offset` of the text (a point in the placeholder).
    fn span_at(&self, offset: usize, len: usize) -> Span {
        if self.real {
            Span::new(self.file, self.base + offset as u64, len as u64)
        } else {
            Span::new(self.file, 0, 0)
        }
    }

    fn locate(&self, path: &[Seg<'_>]) -> Option<Span> {
        if !self.real {
            return None;
        }
        let (s, e) = json_scan::locate(self.text, path)?;
        Some(Span::new(self.file, self.base + s as u64, (e - s) as u64))
    }
}

/// How a record was read: straight into the model, or parsed for the slow way.
enum Read<T> {
    Fast(T),
    Parsed(Result<Value, String>),
}

impl<T> Read<T> {
    /// Reads `rec`: its preread model when it has one, the fast way when it satisfies the schema
    /// (not when rendering: rendering needs every record parsed, nor when the loader already
    /// tried), parsed otherwise.
    fn of(
        rec: &mut StoredRecord,
        rendering: bool,
        fast: fn(&str) -> Option<T>,
        preread: fn(Preread) -> Option<T>,
    ) -> Read<T> {
        let tried = match rec.preread.take() {
            Some(Preread::Slow) => true,
            Some(p) => match preread(p) {
                Some(model) => return Read::Fast(model),
                None => false,
            },
            None => false,
        };
        match (!rendering && !tried).then(|| fast(&rec.text)).flatten() {
            Some(model) => Read::Fast(model),
            None => Read::Parsed(parse(&rec.text)),
        }
    }

    fn parsed(&self) -> Option<&Result<Value, String>> {
        match self {
            Read::Fast(_) => None,
            Read::Parsed(p) => Some(p),
        }
    }
}

/// Builds the session model of one stored session.
pub fn replay(
    stored: StoredSession,
    format: Format,
    file: FileId,
    render: &Render,
    sources: &mut SourceMap,
) -> Analysis {
    let mut analysis = Analysis::new(file, format);
    let StoredSession {
        id: session_id,
        title,
        parent_id,
        version,
        time_created,
        time_updated,
        project_id,
        directory,
        messages,
        runtime_v2,
        generation,
    } = stored;
    let mut session = Session {
        id: session_id.clone(),
        title,
        parent_id,
        version,
        time_created,
        time_updated,
        project_id,
        directory,
        runtime_v2,
        generation,
        ..Session::default()
    };
    let rendering = matches!(render, Render::Virtual { .. });
    let mut seq: Seq = 0;
    let mut parts_seen = 0u64;
    for mut m in messages {
        // Rows that satisfy the schema (most of them) are read straight into the model, here or
        // while they were loaded; the others are parsed, validated and read the slow way.
        let info_read = m.info.as_mut().map(|r| {
            Read::of(r, rendering, fast_info, |p| match p {
                Preread::Info(i) => Some(i),
                Preread::Part(_) | Preread::Slow => None,
            })
        });
        let read_part = |r: &mut StoredRecord| {
            Read::of(r, rendering, fast_part, |p| match p {
                Preread::Part(p) => Some(p),
                Preread::Info(_) | Preread::Slow => None,
            })
        };
        // Rendering needs every part read first; otherwise each is read as it comes.
        let mut part_reads = rendering
            .then(|| m.parts.iter_mut().map(read_part).collect::<Vec<_>>())
            .map(IntoIterator::into_iter);
        // Rendering of database rows: one virtual source per message.
        let rendered = render_rows(
            &session_id,
            &m,
            info_read.as_ref(),
            part_reads.as_ref().map_or(&[], |r| r.as_slice()),
            render,
            runtime_v2,
        );
        let virtual_file = match (&rendered, render) {
            (Some(r), Render::Virtual { origin }) => Some(sources.add_virtual(
                origin,
                if runtime_v2 {
                    format!("session {session_id} › session_message {}", m.id)
                } else {
                    format!("session {session_id} › message {}", m.id)
                },
                r.text.clone(),
            )),
            _ => None,
        };
        // Where block `k` of this message's rendering (0: the info, then the parts) is placed.
        let rows = Rows {
            rendered: rendered.as_ref(),
            virtual_file,
            fallback: match render {
                Render::Placeholder(f) => *f,
                Render::Virtual { .. } => file,
            },
        };

        let mut message = Message {
            id: m.id.clone(),
            ..Message::default()
        };
        // Where the message's stored `error` is, for the event it becomes.
        let mut error_at = ErrorPlaces::default();
        // Message info (block 0 of the rendering).
        if let Some(rec) = &m.info {
            let placed = rows.place(rec, 0);
            seq += 1;
            message.span = Some(placed.whole());
            let info = match info_read {
                Some(Read::Fast(info)) => Some(*info),
                Some(Read::Parsed(Ok(mut v))) => {
                    let issues = schema::validate_message(&v);
                    if !issues.is_empty() {
                        analysis.schema_issues.push(payload_issues(
                            seq,
                            format!("message {}", m.id),
                            &placed,
                            issues,
                            (&session_id, &m.id, None),
                        ));
                    }
                    cap_strings_in_place(&mut v, MAX_KEPT_STRING);
                    Some(MessageInfo::from_value(&v))
                }
                Some(Read::Parsed(Err(reason))) => {
                    analysis.undecodable.push(Undecodable {
                        span: placed.whole(),
                        reason: format!("message {}: {reason}", m.id),
                        at: None,
                        truncated: false,
                    });
                    None
                }
                None => None,
            };
            if let Some(mut info) = info {
                if info.error().is_some() {
                    error_at = ErrorPlaces::of(&placed);
                }
                message.time_span = placed.locate(&[Seg::Key("time")]);
                info.id.clone_from(&m.id);
                info.session_id.clone_from(&session_id);
                message.info = Some(Box::new(info));
            }
        }
        message.parts.reserve_exact(m.parts.len());
        for (k, rec) in m.parts.iter_mut().enumerate() {
            let read = match part_reads.as_mut().and_then(Iterator::next) {
                Some(read) => read,
                None => read_part(rec),
            };
            let placed = rows.place(rec, k + 1);
            seq += 1;
            parts_seen += 1;
            let mut part = match read {
                Read::Fast(part) => *part,
                Read::Parsed(Err(reason)) => {
                    analysis.undecodable.push(Undecodable {
                        span: placed.whole(),
                        reason: format!("part {}: {reason}", rec.id),
                        at: None,
                        truncated: false,
                    });
                    continue;
                }
                Read::Parsed(Ok(mut v)) => {
                    let issues = schema::validate_part(&v);
                    let type_name = v.get("type").and_then(Value::as_str).unwrap_or("(none)");
                    if !issues.is_empty() {
                        analysis.schema_issues.push(payload_issues(
                            seq,
                            format!("{type_name} part {}", rec.id),
                            &placed,
                            issues,
                            (&session_id, &m.id, Some(&rec.id)),
                        ));
                    }
                    cap_strings_in_place(&mut v, MAX_KEPT_STRING);
                    Part::from_value(&v)
                }
            };
            let status = part.tool().map(|t| t.state.status_name());
            let status_span = status
                .as_ref()
                .and_then(|_| placed.locate(&[Seg::Key("state"), Seg::Key("status")]));
            let span = placed.whole();
            part.id = std::mem::take(&mut rec.id);
            part.message_id.clone_from(&m.id);
            part.session_id.clone_from(&session_id);
            message.parts.push(PartRecord {
                part,
                history: vec![Observation {
                    seq,
                    span,
                    status,
                    status_span,
                }],
            });
        }
        if let Some(err) = message
            .info
            .as_deref()
            .and_then(MessageInfo::original_error)
        {
            // The error was recorded when the message ended: after its parts.
            seq += 1;
            let info = stored_error(err, &error_at);
            let span = error_at
                .error
                .or(message.span.map(|s| s.head()))
                .unwrap_or(Span::new(rows.fallback, 0, 0));
            analysis.events.push(Event {
                seq,
                span,
                session: Some(session_id.clone()),
                kind: EventKind::SessionError(Box::new(info)),
            });
        }
        session.messages.push(message);
    }
    analysis
        .counts
        .insert("messages", session.messages.len() as u64);
    analysis.counts.insert("parts", parts_seen);
    analysis.sessions.push(session);
    analysis
}

/// Where the parts of a message's stored `error` are in its rendering.
#[derive(Default)]
struct ErrorPlaces {
    error: Option<Span>,
    message: Option<Span>,
    /// `Text: ` of an `AI_JSONParseError` message, and the end of the text it quotes.
    payload: Option<Span>,
    /// A second SSE field (`data:`, `event:`) inside the quoted text.
    embedded: Option<Span>,
}

impl ErrorPlaces {
    fn of(placed: &Placed<'_>) -> Self {
        let path = [Seg::Key("error"), Seg::Key("data"), Seg::Key("message")];
        let message = placed.locate(&path);
        let raw = message.and_then(|m| {
            let start = usize::try_from(m.offset.checked_sub(placed.base)?).ok()?;
            let len = usize::try_from(m.len).ok()?;
            Some((start, placed.text.get(start..start + len)?))
        });
        let payload = raw.and_then(|(start, raw)| {
            let from = raw.find(PARSE_TEXT)? + PARSE_TEXT.len();
            let to = raw.rfind(PARSE_END).unwrap_or(raw.len());
            (to > from).then(|| placed.span_at(start + from, to - from))
        });
        let embedded = raw.and_then(|(start, raw)| {
            let from = raw.find(PARSE_TEXT)? + PARSE_TEXT.len();
            // A second event's `data:`/`event:` inside the text, else a second JSON value right
            // after the first (`}{`, unescaped in the stored string too).
            ["data:", "event:", "}{"]
                .iter()
                .filter_map(|n| raw[from..].find(n).filter(|k| *k > 0).map(|k| (k, n.len())))
                .min()
                .map(|(k, n)| {
                    if n == 2 {
                        placed.span_at(start + from + k + 1, 1)
                    } else {
                        placed.span_at(start + from + k, n)
                    }
                })
        });
        Self {
            error: placed.locate(&[Seg::Key("error"), Seg::Key("name")]),
            message,
            payload,
            embedded,
        }
    }
}

/// How the AI SDK's `JSONParseError` quotes the text it could not parse: `JSON parsing failed:
/// Text: {text}.\nError message: {cause}`.
const PARSE_TEXT: &str = "Text: ";
const PARSE_END: &str = ".\\nError message:";

/// Whether the text a JSON parse error quotes holds two events: a second SSE field inside it,
/// or a second JSON value right after the first.
fn concatenated(text: &str) -> bool {
    ["data:", "event:"]
        .iter()
        .any(|m| text.find(m).is_some_and(|k| k > 0))
        || crate::json::value::second_json_value(text).is_some()
}

/// Longest error text kept (a quoted stream payload must stay whole enough to be read).
const MAX_ERROR_TEXT: usize = 4096;

/// A message's stored `error` as the session's error.
fn stored_error(err: &NamedError, at: &ErrorPlaces) -> ErrorInfo {
    let message = err.message().unwrap_or_default();
    let payload = message.find(PARSE_TEXT).and_then(|k| {
        let text = &message[k + PARSE_TEXT.len()..];
        let text = text.rfind(".\nError message:").map_or(text, |e| &text[..e]);
        Some((crate::text::capped(text, MAX_ERROR_TEXT), at.payload?))
    });
    ErrorInfo {
        name: Some(err.name.clone()),
        wrapped: None,
        message: crate::text::capped(message, MAX_ERROR_TEXT),
        retryable: err.data.get("isRetryable").and_then(Value::as_bool),
        data: Value::Null,
        message_span: at.message,
        embedded_event: payload
            .as_ref()
            .filter(|(text, _)| concatenated(text))
            .and(at.embedded),
        payload,
        context: Vec::new(),
    }
}

fn parse(text: &str) -> Result<Value, String> {
    serde_json::from_str::<Value>(text)
        .map_err(|e| format!("not JSON ({})", crate::text::clip(&e.to_string())))
}

fn payload_issues(
    seq: Seq,
    what: String,
    placed: &Placed<'_>,
    issues: Vec<schema::SchemaIssue>,
    (session, message, part): (&str, &str, Option<&str>),
) -> PayloadIssues {
    // One locator for the record: its arrays are walked once, however many issues they hold.
    let mut locator = placed.real.then(|| json_scan::Locator::new(placed.text));
    let located = issues
        .into_iter()
        .map(|issue| {
            let path: Vec<Seg<'_>> = issue.path.keys().collect();
            // A missing field is pointed at through its parent object.
            let span = locator.as_mut().and_then(|l| {
                let (s, e) = l
                    .locate(&path)
                    .or_else(|| l.locate(&path[..path.len().saturating_sub(1)]))?;
                Some(placed.span_at(s, e - s))
            });
            (issue, span)
        })
        .collect();
    PayloadIssues {
        seq,
        what,
        span: placed.whole(),
        issues: located,
        session_id: Some(session.to_owned()),
        message_id: Some(message.to_owned()),
        part_id: part.map(str::to_owned),
    }
}

/// A message's rows rendered as text: block 0 is the info, block k+1 is part k.
/// How the records of one message are placed: in its rendering when there is one, at their own
/// file offset when they have one, otherwise nowhere real (`fallback`, spans not real).
struct Rows<'a> {
    rendered: Option<&'a Rendering>,
    virtual_file: Option<FileId>,
    fallback: FileId,
}

impl<'a> Rows<'a> {
    fn place<'b>(&self, rec: &'b StoredRecord, k: usize) -> Placed<'b>
    where
        'a: 'b,
    {
        let (file, base, real) = match (rec.place, self.virtual_file, self.rendered) {
            (Place::At { file, offset }, _, _) => (file, offset, true),
            (Place::Row, Some(f), Some(r)) => (f, r.offsets.get(k).copied().unwrap_or(0), true),
            (Place::Row, _, _) => (self.fallback, 0, false),
        };
        // A rendered row is labelled in its pretty-printed text.
        let text = match (rec.place, self.rendered) {
            (Place::Row, Some(r)) => r.texts.get(k).map(String::as_str),
            _ => None,
        }
        .filter(|t| !t.is_empty())
        .unwrap_or(&rec.text);
        Placed {
            file,
            base,
            text,
            real,
        }
    }
}

struct Rendering {
    text: String,
    /// Offset of each block's JSON in `text`.
    offsets: Vec<u64>,
    /// Each block's JSON as rendered.
    texts: Vec<String>,
}

fn render_rows(
    session_id: &str,
    m: &StoredMessage,
    info: Option<&Read<Box<MessageInfo>>>,
    parts: &[Read<Box<Part>>],
    render: &Render,
    runtime_v2: bool,
) -> Option<Rendering> {
    if !matches!(render, Render::Virtual { .. }) {
        return None;
    }
    let any_row = m
        .info
        .iter()
        .chain(m.parts.iter())
        .any(|r| r.place == Place::Row);
    if !any_row {
        return None;
    }
    let mut r = Rendering {
        text: String::new(),
        offsets: Vec::new(),
        texts: Vec::new(),
    };
    let push = |r: &mut Rendering, header: String, raw: &str, ok: bool| {
        r.text.push_str(&header);
        r.text.push('\n');
        let body = if ok {
            json_scan::pretty(raw)
        } else {
            raw.to_owned()
        };
        r.offsets.push(r.text.len() as u64);
        r.text.push_str(&body);
        r.text.push_str("\n\n");
        r.texts.push(body);
    };
    // A preread record (see [`Preread`]) has no text to show: it is left as it is.
    fn ok(parsed: Option<&Result<Value, String>>) -> Option<&Value> {
        parsed.and_then(|p| p.as_ref().ok())
    }
    match (&m.info, info) {
        (Some(rec), Some(read)) => {
            let parsed = ok(read.parsed());
            let what = parsed.map(describe_message).unwrap_or_default();
            let header = if runtime_v2 {
                format!(
                    "// session_message row {} of session {session_id}{what}, read as message-v2 records",
                    m.id
                )
            } else {
                format!("// message {} of session {session_id}{what}", m.id)
            };
            push(&mut r, header, &rec.text, parsed.is_some());
        }
        _ => push(
            &mut r,
            format!("// message {} of session {session_id} (no info)", m.id),
            "{}",
            true,
        ),
    }
    for (rec, read) in m.parts.iter().zip(parts) {
        let parsed = ok(read.parsed());
        let what = parsed.map(describe_part).unwrap_or_default();
        push(
            &mut r,
            format!("// part {}{what}", rec.id),
            &rec.text,
            parsed.is_some(),
        );
    }
    Some(r)
}

fn describe_message(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    match s("role") {
        Some("assistant") => format!(
            " (assistant, {}/{})",
            s("providerID").unwrap_or("?"),
            s("modelID").unwrap_or("?")
        ),
        Some(role) => format!(" ({role})"),
        None => String::new(),
    }
}

fn describe_part(v: &Value) -> String {
    let part = Part::from_value(v);
    match &part.body {
        PartBody::Tool(t) => format!(" (tool `{}`, {})", t.tool, t.state.status()),
        _ => format!(" ({})", part.type_name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::opencode::stored::Kind;
    use std::path::Path;

    fn row(id: &str, text: &str) -> StoredRecord {
        StoredRecord::new(id.into(), text.into(), Place::Row)
    }

    fn session() -> StoredSession {
        StoredSession {
            id: "ses_1".into(),
            messages: vec![StoredMessage {
                id: "msg_1".into(),
                info: Some(row(
                    "msg_1",
                    r#"{"role":"assistant","time":{"created":1},"parentID":"msg_0","modelID":"m","providerID":"anthropic","mode":"build","path":{"cwd":"/","root":"/"},"cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}}"#,
                )),
                parts: vec![
                    row(
                        "prt_1",
                        r#"{"type":"tool","tool":"edit","callID":"c1","state":{"status":"failed","input":{}}}"#,
                    ),
                    row("prt_2", "{not json"),
                ],
            }],
            ..StoredSession::default()
        }
    }

    #[test]
    fn rows_render_into_one_virtual_source_per_message() {
        let mut sources = SourceMap::new();
        let db = sources.add_file(Path::new("x.db"));
        let render = Render::Virtual {
            origin: "x.db".into(),
        };
        let a = replay(session(), Format::OpencodeDb, db, &render, &mut sources);
        assert_eq!(sources.len(), 2);
        let text = match &sources.get(FileId(1)).unwrap().kind {
            crate::source::SourceKind::Virtual { text, .. } => text.clone(),
            _ => unreachable!(),
        };
        assert!(text.contains("// part prt_1 (tool `edit`, failed)\n{\n  \"type\": \"tool\","));
        let part = &a.sessions[0].messages[0].parts[0];
        let at = part.status_span().unwrap();
        assert_eq!(&text[at.offset as usize..at.end() as usize], "\"failed\"");
        assert_eq!(a.schema_issues.len(), 1);
        assert_eq!(a.schema_issues[0].part_id.as_deref(), Some("prt_1"));
        assert_eq!(a.undecodable.len(), 1);
        assert_eq!(part.part.id, "prt_1");
        assert_eq!(part.part.message_id, "msg_1");
    }

    #[test]
    fn rows_read_while_loading_replay_as_rows_kept_as_text() {
        let mut kept = session();
        kept.messages[0].parts.push(row(
            "prt_3",
            r#"{"type":"text","text":"hi","time":{"start":1,"end":2}}"#,
        ));
        let mut loaded = kept.clone();
        for m in &mut loaded.messages {
            let info = m.info.take();
            m.info = info.map(|r| StoredRecord::read_row(r.id, &r.text, Kind::Info));
            for p in &mut m.parts {
                *p = StoredRecord::read_row(p.id.clone(), &p.text, Kind::Part);
            }
        }
        // The valid rows dropped their text; the others were tried once and kept.
        let parts = &loaded.messages[0].parts;
        assert!(matches!(parts[2].preread, Some(Preread::Part(_))) && parts[2].text.is_empty());
        assert_eq!(parts[0].preread, Some(Preread::Slow));
        assert!(!parts[0].text.is_empty());
        let mut sources = SourceMap::new();
        let db = sources.add_file(Path::new("x.db"));
        let run = |s: StoredSession, sources: &mut SourceMap| {
            replay(s, Format::OpencodeDb, db, &Render::Placeholder(db), sources)
        };
        let (a, b) = (run(kept, &mut sources), run(loaded, &mut sources));
        assert_eq!(format!("{:?}", a.sessions), format!("{:?}", b.sessions));
        assert_eq!(a.schema_issues.len(), 1);
        assert_eq!(b.schema_issues.len(), 1);
        assert_eq!((a.undecodable.len(), b.undecodable.len()), (1, 1));
    }

    #[test]
    fn placeholder_renders_nothing() {
        let mut sources = SourceMap::new();
        let db = sources.add_file(Path::new("x.db"));
        let ph = sources.add_virtual(Path::new("x.db"), "-".into(), String::new());
        let a = replay(
            session(),
            Format::OpencodeDb,
            db,
            &Render::Placeholder(ph),
            &mut sources,
        );
        assert_eq!(sources.len(), 2);
        assert_eq!(a.sessions[0].messages[0].parts.len(), 1);
        assert_eq!(a.schema_issues[0].issues[0].1, None);
    }

    #[test]
    fn issues_of_one_row_are_located_as_one_walk_each_would() {
        // An issue per item of a long array: each is placed where its own walk puts it.
        let zeros = vec!["0"; 300].join(",");
        let text = format!(
            r#"{{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"patch","hash":"h","files":[{zeros}],"x":{{"y":[1,{{"z":2}}]}}}}"#
        );
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        let issues = schema::validate_part(&value);
        assert!(issues.len() >= 300, "{}", issues.len());
        let placed = Placed {
            file: FileId(3),
            base: 100,
            text: &text,
            real: true,
        };
        let got = payload_issues(0, "part".into(), &placed, issues.clone(), ("s", "m", None));
        for (issue, (_, span)) in issues.iter().zip(&got.issues) {
            let path: Vec<Seg<'_>> = issue.path.keys().collect();
            let walked = placed
                .locate(&path)
                .or_else(|| placed.locate(&path[..path.len().saturating_sub(1)]));
            assert_eq!(*span, walked, "{issue}");
        }
        let placeholder = Placed {
            real: false,
            ..placed
        };
        let got = payload_issues(0, "part".into(), &placeholder, issues, ("s", "m", None));
        assert!(got.issues.iter().all(|(_, span)| span.is_none()));
    }
}
