//! Replay of agent logs.
//!
//! Every JSON object of the log is classified by `(type, service, message)`
//! (`agent-log-format.md` §2.2):
//! * `service == "bus" && message == "publishing"`: a bus event, whose `type` is the event name
//!   (the payload is not logged);
//! * `message == "unhandled"`: a stream event the processor did not handle (e.g. `abort`);
//! * `type == "log"`: a logger entry (warnings and errors are kept, with their `error` object);
//! * `step_start`, `tool_use`, `text`, `step_finish` (and `reasoning`) with a `part`: a part
//!   write, validated against the schema and applied to the session model;
//! * `type == "error"`: the session's error (`sessionID` + `error`), a process crash
//!   (`errorType`), or the wrapper's own classification (`exitCode`);
//! * `status` / `input`: a new agent run and its prompt.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::Value;

use super::{MAX_KEPT_STRING, cap_strings};
use crate::ingest::agent_log::{AgentLogReader, JsonRecord, LogRecord};
use crate::ingest::capture;
use crate::ingest::{Format, IngestError};
use crate::json_scan::Seg;
use crate::model::Part;
use crate::model::schema;
use crate::session::{
    Analysis, ErrorInfo, Event, EventKind, LogLevel, Message, Observation, PartRecord,
    PayloadIssues, Seq, Session, Undecodable,
};
use crate::source::{FileId, Span};

/// Longest error message kept (a ZodError's issue list must survive whole to be decoded).
const MAX_ERROR_MESSAGE: usize = 256 * 1024;

/// Builds the session model of an agent log.
pub fn replay<R: BufRead>(input: R, file: FileId) -> Result<Analysis, IngestError> {
    let mut reader = AgentLogReader::new(input, file);
    let mut state = State::new(file);
    for (seq, record) in (&mut reader).enumerate() {
        state.apply(seq as Seq, record?);
    }
    let stats = reader.stats().clone();
    let mut analysis = state.finish();
    let counts = &mut analysis.counts;
    counts.insert("lines", stats.lines);
    counts.insert("json objects", stats.json_objects);
    counts.insert("undecodable objects", stats.undecodable);
    counts.insert("raw error dumps", stats.raw_errors);
    counts.insert("text lines", stats.text_lines);
    counts.insert("rejoined splits", stats.rejoined_splits);
    Ok(analysis)
}

struct State {
    analysis: Analysis,
    session_index: HashMap<String, usize>,
    /// (session index, message id) → message index.
    message_index: HashMap<(usize, String), usize>,
    /// (session index, message index, part id) → part index.
    part_index: HashMap<(usize, usize, String), usize>,
    current_session: Option<String>,
    bus_events: u64,
}

impl State {
    fn new(file: FileId) -> Self {
        Self {
            analysis: Analysis::new(file, Format::AgentLog),
            session_index: HashMap::new(),
            message_index: HashMap::new(),
            part_index: HashMap::new(),
            current_session: None,
            bus_events: 0,
        }
    }

    fn finish(mut self) -> Analysis {
        for session in &mut self.analysis.sessions {
            session.messages.sort_by(|a, b| a.id.cmp(&b.id));
            for m in &mut session.messages {
                m.parts.sort_by(|a, b| a.part.id.cmp(&b.part.id));
            }
        }
        self.analysis.counts.insert("bus events", self.bus_events);
        self.analysis
    }

    fn event(&mut self, seq: Seq, span: Span, session: Option<String>, kind: EventKind) {
        let session = session.or_else(|| self.current_session.clone());
        self.analysis.events.push(Event {
            seq,
            span,
            session,
            kind,
        });
    }

    fn apply(&mut self, seq: Seq, record: LogRecord) {
        match record {
            LogRecord::Json(rec) => self.apply_json(seq, &rec),
            LogRecord::RawError { name, record } => {
                let mut info = ErrorInfo {
                    name: Some(name),
                    message: capped(&record.text, MAX_ERROR_MESSAGE),
                    message_span: Some(record.span),
                    ..ErrorInfo::default()
                };
                info.data = cap_strings(&record.value, MAX_KEPT_STRING);
                self.event(seq, record.span, None, EventKind::RawError(info));
            }
            LogRecord::Text(_) => {}
            LogRecord::Undecodable {
                span,
                reason,
                at,
                truncated,
            } => self.analysis.undecodable.push(Undecodable {
                span,
                reason,
                at,
                truncated,
            }),
        }
    }

    fn apply_json(&mut self, seq: Seq, rec: &JsonRecord) {
        let Some(obj) = rec.value.as_object() else {
            return;
        };
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        let ty = s("type").unwrap_or_default();
        let service = s("service").unwrap_or_default();
        let message = s("message").unwrap_or_default();
        let session_id = s("sessionID").map(str::to_owned);
        if let Some(id) = &session_id {
            self.current_session = Some(id.clone());
        }

        if service == "bus" && message == "publishing" {
            self.bus_events += 1;
            match ty {
                "session.error" => self.event(seq, rec.span, None, EventKind::BusSessionError),
                "session.idle" => self.event(seq, rec.span, None, EventKind::Idle),
                _ => {}
            }
            return;
        }
        if message == "unhandled" {
            let kind = EventKind::StreamUnhandled {
                event_type: ty.to_owned(),
                reason: s("reason").map(str::to_owned),
            };
            self.event(seq, rec.span, None, kind);
            return;
        }
        match ty {
            "log" => self.apply_log(seq, rec, service, message),
            "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
                if obj.get("part").is_some_and(Value::is_object) =>
            {
                self.apply_part(seq, rec, session_id);
            }
            "error" => {
                if obj.contains_key("exitCode") || obj.contains_key("errorDetectedInOutput") {
                    let kind = EventKind::WrapperError {
                        error_type: s("errorType").unwrap_or_default().to_owned(),
                        message: s("errorMatch").or(s("message")).unwrap_or_default().into(),
                    };
                    self.event(seq, rec.span, None, kind);
                } else if obj.contains_key("errorType") {
                    let mut info = error_info(rec, &[], &rec.value);
                    info.name = s("errorType").map(str::to_owned);
                    if let Some(stack) = s("stack") {
                        // `AI_RetryError: Failed after …` names the thrown class.
                        info.wrapped = stack
                            .split_once(':')
                            .map(|(n, _)| n.trim().to_owned())
                            .filter(|n| !n.contains(' '));
                    }
                    self.event(seq, rec.span, session_id, EventKind::ProcessCrash(info));
                } else if let Some(err) = obj.get("error") {
                    let info = error_info(rec, &["error"], err);
                    self.event(seq, rec.span, session_id, EventKind::SessionError(info));
                }
            }
            "status" if obj.contains_key("mode") => {
                self.current_session = None;
                self.event(seq, rec.span, None, EventKind::RunStart);
            }
            "input" => self.event(seq, rec.span, None, EventKind::Prompt),
            "session_idle" => self.event(seq, rec.span, session_id, EventKind::Idle),
            _ => {}
        }
    }

    /// A verbose HTTP entry whose `bodyPreview` is an SSE body: kept to be replayed as a stream.
    fn embedded_stream(&mut self, rec: &JsonRecord) {
        let Some(preview) = rec.value.get("bodyPreview").and_then(Value::as_str) else {
            return;
        };
        if capture::sniff_envelope(preview) != Some(capture::Envelope::Sse) {
            return;
        }
        let Some((s, e)) = crate::json_scan::locate(&rec.text, &[Seg::Key("bodyPreview")]) else {
            return;
        };
        let Some(raw) = rec.text.get(s + 1..e.saturating_sub(1)) else {
            return;
        };
        let Ok((mut text, anchors)) = crate::ingest::json_string::decode(raw.as_bytes()) else {
            return;
        };
        let locator = capture::Locator::JsonString {
            file: rec.span.file,
            anchors,
            base: (s + 1) as u64,
            segments: rec
                .segments()
                .iter()
                .map(|(t, f)| (*t as u64, *f))
                .collect(),
        };
        let mut cut = None;
        if let Some(k) = text.rfind("... [truncated") {
            let marker = &text[k..];
            let total = marker
                .split("total ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok());
            cut = Some(crate::session::BodyCut {
                kept: text[..k].chars().count() as u64,
                total,
                span: locator.span(k as u64, text.len() as u64),
            });
            text.truncate(k);
        }
        let call = rec
            .value
            .get("callNum")
            .map(Value::to_string)
            .unwrap_or_default();
        self.analysis
            .embedded_streams
            .push(crate::session::EmbeddedStream {
                label: format!("HTTP response body (stream) of call {call}"),
                text,
                locator,
                cut,
                url: rec
                    .value
                    .get("url")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
    }

    fn apply_log(&mut self, seq: Seq, rec: &JsonRecord, service: &str, message: &str) {
        if service == "http" {
            self.embedded_stream(rec);
        }
        let level = match rec.value.get("level").and_then(Value::as_str) {
            Some("error") => LogLevel::Error,
            Some("warn") => LogLevel::Warn,
            Some("info") => LogLevel::Info,
            _ => LogLevel::Debug,
        };
        if service == "session.prompt" && message == "cancel" {
            let session = rec
                .value
                .get("sessionID")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.event(seq, rec.span, session, EventKind::Cancel);
            return;
        }
        if level < LogLevel::Warn {
            return;
        }
        let error = rec
            .value
            .get("error")
            .filter(|e| e.is_object())
            .map(|e| error_info(rec, &["error"], e));
        let kind = EventKind::Log {
            level,
            service: service.to_owned(),
            message: message.to_owned(),
            error,
        };
        self.event(seq, rec.span, None, kind);
    }

    fn apply_part(&mut self, seq: Seq, rec: &JsonRecord, session_id: Option<String>) {
        let raw = &rec.value["part"];
        let capped_part = slim(raw);
        let part = Part::from_value(&capped_part);
        let session_id = match part.session_id.as_str() {
            "" => session_id
                .or_else(|| self.current_session.clone())
                .unwrap_or_default(),
            id => id.to_owned(),
        };
        self.current_session = Some(session_id.clone());

        let issues = schema::validate_part(raw);
        if !issues.is_empty() {
            let located = issues
                .into_iter()
                .map(|issue| {
                    let mut path: Vec<Seg<'_>> = vec![Seg::Key("part")];
                    path.extend(issue.path.keys());
                    // A missing field is pointed at through its parent object.
                    let span = rec
                        .locate(&path)
                        .or_else(|| rec.locate(&path[..path.len().saturating_sub(1)]));
                    (issue.clone(), span)
                })
                .collect();
            self.analysis.schema_issues.push(PayloadIssues {
                seq,
                what: format!("{} part {}", part.type_name(), part.id),
                span: rec.locate(&[Seg::Key("part")]).unwrap_or(rec.span),
                issues: located,
                session_id: Some(session_id.clone()),
                message_id: Some(part.message_id.clone()),
                part_id: Some(part.id.clone()),
            });
        }

        let status = part.tool().map(|t| t.state.status_name());
        let status_span = status
            .as_ref()
            .and_then(|_| rec.locate(&["part".into(), "state".into(), "status".into()]));
        let observation = Observation {
            seq,
            span: rec.span,
            status,
            status_span,
        };

        let si = self.session_slot(&session_id);
        let mi = self.message_slot(si, &part.message_id);
        let key = (si, mi, part.id.clone());
        let message = &mut self.analysis.sessions[si].messages[mi];
        match self.part_index.get(&key) {
            Some(&pi) => {
                let record = &mut message.parts[pi];
                record.part = part;
                record.history.push(observation);
            }
            None => {
                self.part_index.insert(key, message.parts.len());
                message.parts.push(PartRecord {
                    part,
                    history: vec![observation],
                });
            }
        }
    }

    fn session_slot(&mut self, id: &str) -> usize {
        if let Some(&i) = self.session_index.get(id) {
            return i;
        }
        let i = self.analysis.sessions.len();
        self.analysis.sessions.push(Session {
            id: id.to_owned(),
            ..Session::default()
        });
        self.session_index.insert(id.to_owned(), i);
        i
    }

    fn message_slot(&mut self, si: usize, id: &str) -> usize {
        let key = (si, id.to_owned());
        if let Some(&i) = self.message_index.get(&key) {
            return i;
        }
        let messages = &mut self.analysis.sessions[si].messages;
        let i = messages.len();
        messages.push(Message {
            id: id.to_owned(),
            ..Message::default()
        });
        self.message_index.insert(key, i);
        i
    }
}

/// What a log's part keeps in memory: what the checks read (ids, type, tool, call id, status,
/// error, title, whether the input was empty), without tool inputs and outputs, metadata or file
/// contents — so the model grows with the number of parts, not with what the tools printed. (The
/// schema was checked on the full payload before this.)
fn slim(part: &Value) -> Value {
    let mut v = part.clone();
    if let Some(state) = v.get_mut("state").and_then(Value::as_object_mut) {
        for heavy in ["output", "metadata", "attachments", "raw"] {
            state.remove(heavy);
        }
        // A non-empty input becomes `true`: `input_is_empty()` still answers right.
        if let Some(input) = state.get_mut("input")
            && input.as_object().is_some_and(|m| !m.is_empty())
        {
            *input = Value::Bool(true);
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.remove("metadata");
    }
    cap_strings(&v, MAX_KEPT_STRING)
}

fn capped(s: &str, max: usize) -> String {
    match cap_strings(&Value::String(s.to_owned()), max) {
        Value::String(s) => s,
        _ => String::new(),
    }
}

/// Reads an error value: a string, a NamedError `{name, data}`, a serialised `Error`
/// `{name, message, …}`, or a wrapper `{error: {…}}`. `path` is where `v` is in the record.
fn error_info(rec: &JsonRecord, path: &[&str], v: &Value) -> ErrorInfo {
    let at = |extra: &[&str]| {
        let segs: Vec<Seg<'_>> = path
            .iter()
            .chain(extra.iter())
            .map(|k| Seg::Key(k))
            .collect();
        rec.locate(&segs)
    };
    let mut info = ErrorInfo {
        data: cap_strings(v, MAX_KEPT_STRING),
        ..ErrorInfo::default()
    };
    match v {
        Value::String(s) => {
            info.message = capped(s, MAX_ERROR_MESSAGE);
            info.message_span = at(&[]);
        }
        Value::Object(obj) => {
            // `{error: {name, …}}` (the prompt loop's "stream error" entry): look inside.
            if !obj.contains_key("name")
                && let Some(inner) = obj.get("error").filter(|e| e.is_object())
            {
                let mut deeper = path.to_vec();
                deeper.push("error");
                return error_info(rec, &deeper, inner);
            }
            let s = |k: &str| obj.get(k).and_then(Value::as_str);
            info.name = s("name").map(str::to_owned);
            let data = obj.get("data");
            let (message, where_) =
                if let Some(m) = data.and_then(|d| d.get("message")).and_then(Value::as_str) {
                    (Some(m.to_owned()), at(&["data", "message"]))
                } else if let Some(m) = s("message") {
                    (Some(m.to_owned()), at(&["message"]))
                } else if let Some(text) = s("text") {
                    let short = crate::session::first_line(text, 80);
                    (Some(format!("could not parse {short}")), at(&["name"]))
                } else {
                    (describe_nested(obj), at(&["name"]))
                };
            info.message = capped(&message.unwrap_or_default(), MAX_ERROR_MESSAGE);
            info.message_span = where_;
            info.retryable = data
                .and_then(|d| d.get("isRetryable"))
                .or_else(|| obj.get("isRetryable"))
                .and_then(Value::as_bool);
            info.wrapped = obj
                .get("lastError")
                .or_else(|| obj.get("cause"))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(text) = s("text") {
                let span = at(&["text"]);
                if let Some(span) = span {
                    info.payload = Some((capped(text, MAX_ERROR_MESSAGE), span));
                }
                let mut segs: Vec<Seg<'_>> = path.iter().map(|k| Seg::Key(k)).collect();
                segs.push(Seg::Key("text"));
                info.embedded_event = ["data:", "event:"]
                    .iter()
                    .filter(|m| text.find(**m).is_some_and(|k| k > 0))
                    .find_map(|m| rec.locate_in_string(&segs, m));
            }
        }
        other => info.message = other.to_string(),
    }
    info
}

/// A message for errors that carry none (`AI_RetryError` has `reason` and `lastError`).
fn describe_nested(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let name = obj.get("name").and_then(Value::as_str).unwrap_or("error");
    let reason = obj.get("reason").and_then(Value::as_str);
    let last = obj.get("lastError").or_else(|| {
        obj.get("errors")
            .and_then(Value::as_array)
            .and_then(|e| e.last())
    })?;
    let attempts = obj.get("errors").and_then(Value::as_array).map(Vec::len);
    let last_name = last.get("name").and_then(Value::as_str).unwrap_or("error");
    let status = last.get("statusCode").and_then(Value::as_u64);
    let last_msg = last
        .pointer("/data/error/message")
        .or_else(|| last.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = name.to_owned();
    if let Some(r) = reason {
        out.push_str(&format!(" ({r})"));
    }
    if let Some(n) = attempts {
        let s = if n == 1 { "" } else { "s" };
        out.push_str(&format!(" after {n} attempt{s}"));
    }
    out.push_str(&format!("; last error: {last_name}"));
    if let Some(code) = status {
        out.push_str(&format!(" {code}"));
    }
    if !last_msg.is_empty() {
        out.push_str(&format!(": {last_msg}"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "[2026-02-01T12:30:28.417Z] [INFO] ";

    fn run(log: &str) -> Analysis {
        replay(log.as_bytes(), FileId(0))
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::AgentLog))
    }

    #[test]
    fn rebuilds_parts_and_tool_history() {
        let log = [
            r#"{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"step-start"}}"#,
            r#"{"type":"tool_use","timestamp":2,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","state":{"status":"pending","input":{},"raw":""}}}"#,
            r#"{"type":"tool_use","timestamp":3,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","state":{"status":"running","input":{"a":1},"time":{"start":3}}}}"#,
        ]
        .join("\n");
        let a = run(&log);
        assert_eq!(a.sessions.len(), 1);
        let m = &a.sessions[0].messages[0];
        assert_eq!(m.count("step-start"), 1);
        let tool = &m.parts[1];
        assert_eq!(tool.status_path(), ["pending", "running"]);
        assert!(tool.status_span().is_some());
        assert!(a.schema_issues.is_empty());
    }

    #[test]
    fn classifies_errors_and_lifecycle() {
        let log = format!(
            "{P}{{\"type\":\"status\",\"mode\":\"stdin-stream\"}}\n\
             {P}{{\"type\":\"error\",\"timestamp\":1,\"sessionID\":\"ses_1\",\"error\":\"The operation timed out.\"}}\n\
             {P}{{\"type\":\"log\",\"level\":\"error\",\"service\":\"session.processor\",\"error\":{{\"name\":\"AI_JSONParseError\",\"cause\":{{}},\"text\":\"{{\\\"id\\\":\\\"x-1data:{{\\\"id\\\":2}}\"}},\"message\":\"process\"}}\n\
             {P}{{\"type\":\"session.error\",\"level\":\"info\",\"service\":\"bus\",\"message\":\"publishing\"}}\n\
             {P}{{\"type\":\"log\",\"level\":\"info\",\"service\":\"session.prompt\",\"sessionID\":\"ses_1\",\"message\":\"cancel\"}}\n\
             {P}{{\"type\":\"abort\",\"level\":\"info\",\"service\":\"session.processor\",\"reason\":\"x\",\"message\":\"unhandled\"}}\n\
             {P}{{\"type\":\"error\",\"errorType\":\"UnhandledRejection\",\"message\":\"boom\",\"stack\":\"AI_RetryError: boom\\n at x\"}}\n"
        );
        let a = run(&log);
        let kinds: Vec<&str> = a
            .events
            .iter()
            .map(|e| match &e.kind {
                EventKind::RunStart => "run",
                EventKind::SessionError(_) => "session-error",
                EventKind::Log { .. } => "log",
                EventKind::BusSessionError => "bus-error",
                EventKind::Cancel => "cancel",
                EventKind::StreamUnhandled { .. } => "unhandled",
                EventKind::ProcessCrash(_) => "crash",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "run",
                "session-error",
                "log",
                "bus-error",
                "cancel",
                "unhandled",
                "crash"
            ]
        );
        let EventKind::Log {
            error: Some(err), ..
        } = &a.events[2].kind
        else {
            panic!("expected a log error");
        };
        assert_eq!(err.name.as_deref(), Some("AI_JSONParseError"));
        assert!(err.embedded_event.is_some());
        let EventKind::ProcessCrash(crash) = &a.events[6].kind else {
            panic!("expected a crash");
        };
        assert_eq!(crash.wrapped.as_deref(), Some("AI_RetryError"));
        assert_eq!(a.events[1].session.as_deref(), Some("ses_1"));
    }

    #[test]
    fn invalid_parts_are_recorded_with_spans() {
        let log = r#"{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_9","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c","tool":"edit","state":{"status":"failed","input":{},"error":"x","time":{"start":1,"end":2}}}}"#;
        let a = run(log);
        assert_eq!(a.schema_issues.len(), 1);
        let (issue, span) = &a.schema_issues[0].issues[0];
        assert_eq!(issue.path.to_string(), "state.status");
        let span = span.unwrap_or(Span::new(FileId(0), 0, 0));
        assert_eq!(
            &log[span.offset as usize..span.end() as usize],
            "\"failed\""
        );
    }

    #[test]
    fn sse_body_previews_become_embedded_streams() {
        let log = format!(
            "{P}{{\"type\":\"log\",\"level\":\"debug\",\"service\":\"http\",\"callNum\":3,\"bodyPreview\":\"data: {{\\\"id\\\":1}}\\n\\ndata: {{\\\"id\\\":2... [truncated, total 9000 chars]\",\"message\":\"HTTP response body (stream)\"}}\n"
        );
        let a = run(&log);
        assert_eq!(a.embedded_streams.len(), 1, "{log}");
        let e = &a.embedded_streams[0];
        assert_eq!(e.text, "data: {\"id\":1}\n\ndata: {\"id\":2");
        let cut = e.cut.clone().unwrap_or(crate::session::BodyCut {
            kept: 0,
            total: None,
            span: Span::new(FileId(0), 0, 0),
        });
        assert_eq!(cut.total, Some(9000));
        assert!(log[cut.span.offset as usize..].starts_with("... [truncated"));
        let span = e.locator.span(6, 14);
        assert_eq!(
            &log[span.offset as usize..span.end() as usize],
            "{\\\"id\\\":1}"
        );
    }

    #[test]
    fn retry_errors_get_a_message() {
        let log = r#"{"type":"log","level":"error","service":"session.prompt","error":{"name":"AI_RetryError","reason":"maxRetriesExceeded","errors":[{"name":"AI_APICallError","statusCode":429,"data":{"error":{"message":"Rate limit exceeded."}}}],"lastError":{"name":"AI_APICallError","statusCode":429,"data":{"error":{"message":"Rate limit exceeded."}}}},"message":"process"}"#;
        let a = run(log);
        let EventKind::Log {
            error: Some(err), ..
        } = &a.events[0].kind
        else {
            panic!("expected a log error");
        };
        assert_eq!(
            err.message,
            "AI_RetryError (maxRetriesExceeded) after 1 attempt; last error: AI_APICallError 429: Rate limit exceeded."
        );
        assert_eq!(err.wrapped.as_deref(), Some("AI_APICallError"));
    }
}
