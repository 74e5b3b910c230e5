//! A Copilot CLI session (`events.jsonl`) → the session model.
//!
//! `user.message` and `assistant.message` are messages; each of an assistant message's
//! `toolRequests` is a tool part, running until the `tool.execution_complete` with its
//! `toolCallId` (an error when `success` is false). The stored history the next request is
//! rebuilt from (`TranscriptFacts::history`) is the main agent's events in order (a
//! sub-agent's carry an `agentId` and are its own conversation; `system.message` is the
//! system prompt, sent apart from the messages).
//!
//! What the real client (1.0.102, driven offline) does with damage, which the findings say:
//! every line that is not one JSON event (NUL bytes, the pieces of an event a raw line break
//! split, two events on one line, a torn last line) is skipped on resume, and the file is then
//! rewritten without it, so what such a line held is lost for good; a call left without a result
//! at the end (the process was killed while the tool ran) is answered on resume with a
//! `tool.execution_complete` it writes (error code `interrupted`); a call without a result that
//! the session went on past is sent with a synthetic result, not written.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value, json};

use crate::core::{Format, IngestError};
use crate::formats::claude_code::replay::tool_part;
use crate::formats::copilot::read::{self as events, SCHEMA_VERSION};
use crate::json::lines::Line;
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, str_of};
use crate::model::Part;
use crate::request::{Block, BlockKind, ModelMessage, Role};
use crate::session::{
    Analysis, Message, Observation, PartRecord, Seq, Session, StrandedCall, TranscriptFacts,
    TranscriptSize, Undecodable,
};
use crate::source::{FileId, Span};

/// What Copilot CLI 1.0.102 writes as the error of a call it finds without a result on resume.
pub const INTERRUPTED: &str = "Tool execution was interrupted before a result was recorded. Its effects may be absent, partial, or already complete, and other tools may have completed successfully. Check the current state before retrying; do not assume success or replay this operation blindly.";
/// What Copilot CLI 1.0.102 sends as the result of a call the session went on past without
/// one (not written to the file).
pub const INTERRUPTED_SENT: &str =
    "The execution of this tool, or a previous tool was interrupted.";

/// A tool call, as far as pairing needs it.
struct Call {
    mi: usize,
    pi: usize,
    /// How many main-agent messages were in the history when it was made.
    at: usize,
    answered: bool,
}

/// Lines that may be the pieces of one event a raw line break split.
struct Piece {
    span: Span,
    text: String,
    reason: String,
    at: Span,
    torn: bool,
}

#[derive(Default)]
struct Reader {
    analysis: Option<Analysis>,
    session: Session,
    model: Option<String>,
    lines: u64,
    events: u64,
    pending: Vec<Piece>,
    history: Vec<ModelMessage>,
    calls: HashMap<String, Call>,
    /// Call ids in the order they were made.
    order: Vec<String>,
    /// Results that are in a damaged line: the call id and where the line is.
    damaged_results: HashMap<String, Span>,
    /// The history's length after the last user or assistant message.
    last_turn: usize,
    size: TranscriptSize,
}

/// Reads a Copilot CLI session into one analysis, with the model it last selected.
pub fn replay<R: BufRead>(
    input: R,
    file: FileId,
) -> Result<(Analysis, Option<String>), IngestError> {
    let mut r = Reader {
        analysis: Some(Analysis::new(file, Format::CopilotSession)),
        ..Reader::default()
    };
    events::read(input, file, &mut |line| r.line(line))?;
    Ok(r.finish(file))
}

fn type_of(o: &Map<String, Value>) -> String {
    str_of(o, "type").unwrap_or("?").to_owned()
}

impl Reader {
    fn analysis(&mut self) -> &mut Analysis {
        self.analysis
            .get_or_insert_with(|| Analysis::new(FileId(0), Format::CopilotSession))
    }

    fn undecodable(&mut self, span: Span, reason: String, at: Option<Span>, truncated: bool) {
        self.analysis().undecodable.push(Undecodable {
            span,
            reason,
            at,
            truncated,
        });
    }

    fn line(&mut self, line: Line) {
        self.lines += 1;
        self.size.line(line.span);
        match &line.value {
            Ok(Value::Object(o)) => {
                self.flush_pending();
                if events::is_record(o) {
                    self.event(&line, o);
                } else {
                    *self
                        .analysis()
                        .unmodelled
                        .entry("(a JSON object that is no Copilot CLI event)".to_owned())
                        .or_default() += 1;
                }
            }
            Ok(_) => {
                self.flush_pending();
                self.undecodable(
                    line.span,
                    "the line is JSON but not an event (an object); Copilot CLI skips it".into(),
                    None,
                    false,
                );
            }
            Err((reason, at)) => {
                let piece = Piece {
                    span: line.span,
                    text: line.text.clone(),
                    reason: reason.clone(),
                    at: *at,
                    torn: line.torn,
                };
                self.damaged(piece);
            }
        }
    }

    /// A line that does not parse: the next piece of a split event, NUL bytes, events run
    /// together, or a line nothing is made of.
    fn damaged(&mut self, piece: Piece) {
        if !self.pending.is_empty() {
            let mut texts: Vec<&str> = self.pending.iter().map(|p| p.text.as_str()).collect();
            texts.push(&piece.text);
            if let Some(o) = events::rejoin(&texts) {
                let first = self.pending[0].span;
                let n = self.pending.len() + 1;
                self.pending.clear();
                let span = Span::new(
                    first.file,
                    first.offset,
                    piece.span.offset + piece.span.len - first.offset,
                );
                let ty = type_of(&o);
                self.note_result(&o, span);
                self.undecodable(
                    span,
                    format!(
                        "a raw line break inside a string split this `{ty}` event across {n} lines (whole again once each break is written as \\n); Copilot CLI skips the pieces on resume and rewrites the file without them, so the event is lost"
                    ),
                    Some(Span::new(first.file, first.offset + first.len, 1)),
                    false,
                );
                return;
            }
            let joined = texts.join("\\n");
            let open = serde_json::from_str::<Value>(&joined)
                .err()
                .is_some_and(|e| e.is_eof());
            if open && self.pending.len() < events::MAX_PIECES && !piece.torn {
                self.pending.push(piece);
                return;
            }
            self.flush_pending();
        }
        let bytes = piece.text.as_bytes();
        if let Some((n, all)) = events::leading_nuls(bytes) {
            let rest = &piece.text[n..];
            let what = if all {
                format!(
                    "{n} NUL bytes where an event should be: the file's end was zero-filled when the machine or the client crashed"
                )
            } else {
                let ty = serde_json::from_str::<Value>(rest.trim())
                    .ok()
                    .and_then(|v| v.as_object().filter(|o| events::is_record(o)).cloned());
                if let Some(o) = &ty {
                    self.note_result(o, piece.span);
                }
                match ty {
                    Some(o) => format!(
                        "{n} NUL bytes before this `{}` event (a crash zero-filled the file and the client wrote on after them)",
                        type_of(&o)
                    ),
                    None => format!("{n} NUL bytes, then text that is no event"),
                }
            };
            self.undecodable(
                piece.span,
                format!(
                    "{what}; Copilot CLI skips the line on resume and rewrites the file without it"
                ),
                None,
                false,
            );
            return;
        }
        if let Some(parts) = events::concatenated(&piece.text) {
            let types: Vec<String> = parts
                .iter()
                .map(|(_, _, o)| format!("`{}`", type_of(o)))
                .collect();
            for (_, _, o) in &parts {
                self.note_result(o, piece.span);
            }
            let second = Span::new(piece.span.file, piece.span.offset + parts[1].0 as u64, 1);
            self.undecodable(
                piece.span,
                format!(
                    "{} events written on one line ({}): a newline is missing between them; Copilot CLI skips the line on resume and rewrites the file without it, so all of them are lost",
                    parts.len(),
                    types.join(", ")
                ),
                Some(second),
                false,
            );
            return;
        }
        if events::ends_open(&piece.reason) && !piece.torn {
            self.pending.push(piece);
            return;
        }
        self.plain(piece);
    }

    fn plain(&mut self, p: Piece) {
        let reason = if p.torn {
            p.reason
        } else {
            format!("{}; Copilot CLI skips the line on resume", p.reason)
        };
        self.undecodable(p.span, reason, Some(p.at), p.torn);
    }

    fn flush_pending(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            self.plain(p);
        }
    }

    /// A result inside a damaged line: the call it answers is not unanswered, its result is
    /// unreadable.
    fn note_result(&mut self, o: &Map<String, Value>, span: Span) {
        if str_of(o, "type") == Some("tool.execution_complete")
            && let Some(id) = o
                .get("data")
                .and_then(|d| d.get("toolCallId"))
                .and_then(Value::as_str)
        {
            self.damaged_results.insert(id.to_owned(), span);
        }
    }

    fn event(&mut self, line: &Line, o: &Map<String, Value>) {
        self.events += 1;
        let seq = line.index;
        let ty = str_of(o, "type").unwrap_or_default().to_owned();
        let empty = Map::new();
        let data = o.get("data").and_then(Value::as_object).unwrap_or(&empty);
        let at = |path: &[&str]| {
            let mut segs: Vec<Seg<'_>> = vec![Seg::Key("data")];
            segs.extend(path.iter().map(|k| Seg::Key(k)));
            line.locate(&segs)
        };
        for key in o.keys().filter(|k| !events::is_envelope_key(k)) {
            *self
                .analysis()
                .unmodelled
                .entry(format!(
                    "field `{key}` of an event's envelope (not in Copilot CLI {SCHEMA_VERSION}'s schema: not checked)"
                ))
                .or_default() += 1;
        }
        if !events::is_known_type(&ty) {
            *self
                .analysis()
                .unmodelled
                .entry(format!(
                    "{ty} (not in Copilot CLI {SCHEMA_VERSION}'s schema: not checked)"
                ))
                .or_default() += 1;
            return;
        }
        // A sub-agent's events are its own conversation.
        let main = !o.contains_key("agentId");
        match ty.as_str() {
            "session.start" => {
                if let Some(id) = str_of(data, "sessionId") {
                    self.session.id = id.to_owned();
                }
                self.session.version = str_of(data, "copilotVersion").map(str::to_owned);
                self.model = str_of(data, "selectedModel").map(str::to_owned);
            }
            "session.resume" => {
                if let Some(m) = str_of(data, "selectedModel") {
                    self.model = Some(m.to_owned());
                }
            }
            "session.model_change" => {
                if let Some(m) = str_of(data, "newModel") {
                    self.model = Some(m.to_owned());
                }
            }
            "user.message" => {
                let id = str_of(data, "messageId")
                    .or(str_of(o, "id"))
                    .unwrap_or_default()
                    .to_owned();
                self.session.messages.push(Message {
                    id: id.clone(),
                    span: Some(line.span),
                    ..Message::default()
                });
                if main {
                    self.history.push(ModelMessage {
                        role: Role::User,
                        content: vec![Block {
                            kind: BlockKind::Text,
                            span: at(&["content"]),
                            part_id: None,
                        }],
                        span: Some(line.span),
                        message_id: Some(id),
                    });
                    self.last_turn = self.history.len();
                }
            }
            "assistant.message" => self.assistant(seq, line, o, data, main),
            "tool.execution_start" => {
                let Some(id) = str_of(data, "toolCallId") else {
                    return;
                };
                if self.calls.contains_key(id) {
                    return;
                }
                // A call whose assistant message was not read: its own message.
                let name = str_of(data, "toolName").unwrap_or("tool").to_owned();
                let mid = str_of(o, "id").unwrap_or_default().to_owned();
                self.session.messages.push(Message {
                    id: mid.clone(),
                    span: Some(line.span),
                    ..Message::default()
                });
                let mi = self.session.messages.len() - 1;
                let span = at(&["toolCallId"]).unwrap_or(line.span);
                self.call(seq, mi, id, &name, &mid, span);
            }
            "tool.execution_complete" => {
                let Some(id) = str_of(data, "toolCallId") else {
                    return;
                };
                let ok = data.get("success").and_then(Value::as_bool).unwrap_or(true);
                if main {
                    self.history.push(ModelMessage {
                        role: Role::Tool,
                        content: vec![Block {
                            kind: BlockKind::ToolResult {
                                id: id.to_owned(),
                                is_error: !ok,
                            },
                            span: at(&["toolCallId"]),
                            part_id: None,
                        }],
                        span: Some(line.span),
                        message_id: str_of(o, "id").map(str::to_owned),
                    });
                }
                let Some(call) = self.calls.get_mut(id) else {
                    return;
                };
                call.answered = true;
                let (mi, pi) = (call.mi, call.pi);
                let session = self.session.id.clone();
                let record = &mut self.session.messages[mi].parts[pi];
                let Some(name) = record.part.tool().map(|t| t.tool.clone()) else {
                    return;
                };
                let message_id = record.part.message_id.clone();
                let error = data
                    .get("error")
                    .and_then(|e| e.get("message").or(Some(e)))
                    .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
                    .map(|m| crate::session::first_line(&m, MAX_KEPT_STRING));
                let status = if ok { "completed" } else { "error" };
                record.part = tool_part(id, &name, &session, &message_id, status, error.as_deref());
                let span = at(&["toolCallId"]).unwrap_or(line.span);
                record.history.push(Observation::at(
                    seq,
                    span,
                    Some(if ok { "completed" } else { "error" }),
                ));
            }
            _ => {}
        }
    }

    fn assistant(
        &mut self,
        seq: Seq,
        line: &Line,
        o: &Map<String, Value>,
        data: &Map<String, Value>,
        main: bool,
    ) {
        let id = str_of(data, "messageId")
            .or(str_of(o, "id"))
            .unwrap_or_default()
            .to_owned();
        self.session.messages.push(Message {
            id: id.clone(),
            span: Some(line.span),
            ..Message::default()
        });
        let mi = self.session.messages.len() - 1;
        let text = str_of(data, "content").unwrap_or_default();
        let mut blocks = Vec::new();
        if !text.is_empty() {
            let span = line
                .locate(&[Seg::Key("data"), Seg::Key("content")])
                .unwrap_or(line.span);
            let part = Part::from_value(&json!({
                "id": format!("{id}-text"), "sessionID": self.session.id, "messageID": id,
                "type": "text", "text": crate::session::first_line(text, MAX_KEPT_STRING),
            }));
            self.session.messages[mi].parts.push(PartRecord {
                part,
                history: vec![Observation::at(seq, span, None)],
            });
            blocks.push(Block {
                kind: BlockKind::Text,
                span: Some(span),
                part_id: None,
            });
        }
        let requests = data.get("toolRequests").and_then(Value::as_array);
        let places = line.items(&[Seg::Key("data"), Seg::Key("toolRequests")]);
        for (k, r) in requests.into_iter().flatten().enumerate() {
            let Some(call_id) = r.get("toolCallId").and_then(Value::as_str) else {
                continue;
            };
            let name = r.get("name").and_then(Value::as_str).unwrap_or("tool");
            let span = line
                .locate_from(places.get(k), &[Seg::Key("toolCallId")])
                .unwrap_or(line.span);
            blocks.push(Block {
                kind: BlockKind::ToolCall {
                    id: call_id.to_owned(),
                    name: name.to_owned(),
                },
                span: Some(span),
                part_id: Some(call_id.to_owned()),
            });
            if main {
                // The call's place in the history is this message's, pushed below.
                self.call(seq, mi, call_id, name, &id, span);
                if let Some(c) = self.calls.get_mut(call_id) {
                    c.at = self.history.len() + 1;
                }
            } else {
                self.call(seq, mi, call_id, name, &id, span);
            }
        }
        if main {
            self.history.push(ModelMessage {
                role: Role::Assistant,
                content: blocks,
                span: Some(line.span),
                message_id: Some(id),
            });
            self.last_turn = self.history.len();
        }
    }

    fn call(
        &mut self,
        seq: Seq,
        mi: usize,
        call_id: &str,
        name: &str,
        message_id: &str,
        span: Span,
    ) {
        if self.calls.contains_key(call_id) {
            return;
        }
        let session = self.session.id.clone();
        let part = tool_part(call_id, name, &session, message_id, "running", None);
        let parts = &mut self.session.messages[mi].parts;
        parts.push(PartRecord {
            part,
            history: vec![Observation::at(seq, span, Some("running"))],
        });
        self.calls.insert(
            call_id.to_owned(),
            Call {
                mi,
                pi: parts.len() - 1,
                at: self.history.len(),
                answered: false,
            },
        );
        self.order.push(call_id.to_owned());
    }

    fn finish(mut self, file: FileId) -> (Analysis, Option<String>) {
        self.flush_pending();
        let mut analysis = self
            .analysis
            .take()
            .unwrap_or_else(|| Analysis::new(file, Format::CopilotSession));
        analysis.counts.insert("lines", self.lines);
        analysis.counts.insert("events", self.events);
        if self.session.id.is_empty() {
            self.session.id = "session".into();
        }
        let client = match &self.session.version {
            Some(v) => format!("Copilot CLI {v}"),
            None => "Copilot CLI".to_owned(),
        };
        let mut facts = TranscriptFacts {
            client: client.clone(),
            history: std::mem::take(&mut self.history),
            size: std::mem::take(&mut self.size),
            ..TranscriptFacts::default()
        };
        facts.file_calls = self.order.iter().cloned().collect();
        // Unanswered calls: open at the end, or stranded when the session went on past them.
        let mut strand: Vec<(usize, usize, String)> = Vec::new();
        for id in &self.order {
            let Some(call) = self.calls.get(id) else {
                continue;
            };
            if call.answered {
                continue;
            }
            if call.at < self.last_turn || self.damaged_results.contains_key(id) {
                strand.push((call.mi, call.pi, id.clone()));
            } else if facts.open_call_notes.is_empty() {
                facts.open_call_notes.push(format!(
                    "written by {client}; no `tool.execution_complete` follows the call: the process died while the tool ran. On resume Copilot CLI 1.0.102 writes one itself, an error with code `interrupted` (\"{INTERRUPTED}\"), and warns that files may be partially changed"
                ));
            }
        }
        strand.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
        for (mi, pi, id) in strand {
            let record = self.session.messages[mi].parts.remove(pi);
            let Some(tool) = record.part.tool() else {
                continue;
            };
            let damaged = self.damaged_results.get(&id).copied();
            let (why, related) = match damaged {
                Some(span) => (
                    "its result is in a line that cannot be read as it is".to_owned(),
                    vec![(
                        span.head(),
                        "its `tool.execution_complete` is in this damaged line".to_owned(),
                    )],
                ),
                None => (
                    "the session went on past it without one".to_owned(),
                    Vec::new(),
                ),
            };
            let mut notes = vec![format!(
                "written by {client}; on resume Copilot CLI 1.0.102 sends the call with the result \"{INTERRUPTED_SENT}\" (not written to the file), so the request is valid and the model is told the tool was interrupted"
            )];
            if damaged.is_some() {
                notes.push("the client drops the damaged line on resume and rewrites the file without it: repair the file first (`rewind repair` restores the line) and the real result is kept".to_owned());
            }
            facts.stranded_calls.push(StrandedCall {
                session: self.session.id.clone(),
                call_id: id.clone(),
                tool: tool.tool.clone(),
                span: record.history[0].span,
                why,
                related,
                notes,
            });
        }
        facts.stranded_calls.reverse();
        analysis.sessions.push(std::mem::take(&mut self.session));
        analysis.transcript = Some(Box::new(facts));
        (analysis, self.model.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Analysis {
        replay(text.as_bytes(), FileId(0))
            .map(|(a, _)| a)
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::CopilotSession))
    }

    const START: &str = r#"{"type":"session.start","data":{"sessionId":"s1","copilotVersion":"1.0.102","producer":"copilot-agent"},"id":"e1","timestamp":"2026-01-01T00:00:00.000Z","parentId":null}
{"type":"user.message","data":{"content":"go","messageId":"u1"},"id":"e2","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e1"}
{"type":"assistant.message","data":{"messageId":"a1","content":"ok","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{}}]},"id":"e3","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e2"}
{"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"bash"},"id":"e4","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e3"}
"#;
    const DONE: &str = r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":true,"result":{"content":"hi\nthere"}},"id":"e5","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e4"}"#;
    const REPLY: &str = r#"{"type":"assistant.message","data":{"messageId":"a2","content":"done","toolRequests":[]},"id":"e6","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e5"}"#;

    fn statuses(a: &Analysis) -> Vec<String> {
        a.parts()
            .filter_map(|(_, _, p)| p.part.tool().map(|t| t.state.status().to_owned()))
            .collect()
    }

    #[test]
    fn a_paired_call_completes() {
        let a = run(&format!("{START}{DONE}\n{REPLY}\n"));
        assert_eq!(statuses(&a), vec!["completed"]);
        assert!(a.undecodable.is_empty());
        assert_eq!(a.sessions[0].id, "s1");
    }

    #[test]
    fn a_call_killed_mid_run_stays_open() {
        let a = run(START);
        assert_eq!(statuses(&a), vec!["running"]);
        let f = a.transcript.as_deref();
        assert_eq!(f.map(|f| f.open_call_notes.len()), Some(1));
    }

    #[test]
    fn a_result_split_by_a_raw_newline_strands_its_call() {
        let split = DONE.replacen("hi\\nthere", "hi\nthere", 1);
        let a = run(&format!("{START}{split}\n{REPLY}\n"));
        assert_eq!(a.undecodable.len(), 1);
        assert!(
            a.undecodable[0].reason.contains("raw line break"),
            "{}",
            a.undecodable[0].reason
        );
        let f = a.transcript.as_deref();
        assert_eq!(f.map(|f| f.stranded_calls.len()), Some(1));
    }

    #[test]
    fn concatenated_events_and_nul_bytes_are_named() {
        let a = run(&format!("{START}{DONE}{REPLY}\n\0\0\0\0"));
        assert_eq!(a.undecodable.len(), 2);
        assert!(
            a.undecodable[0]
                .reason
                .contains("2 events written on one line")
        );
        assert!(a.undecodable[1].reason.contains("4 NUL bytes"));
    }

    #[test]
    fn an_unknown_event_type_is_noted_not_checked() {
        let a = run(&format!(
            "{START}{DONE}\n{}\n",
            r#"{"type":"session.future_thing","data":{},"id":"e9","timestamp":"t","parentId":"e5"}"#
        ));
        assert!(a.undecodable.is_empty());
        assert_eq!(a.unmodelled.values().sum::<u64>(), 1);
        let a = run(&format!(
            "{START}{}\n",
            r#"{"type":"session.shutdown","data":{},"id":"e9","timestamp":"t","parentId":"e4","sessionId":"s1"}"#
        ));
        assert_eq!(a.unmodelled.len(), 1, "{:?}", a.unmodelled);
        assert!(a.undecodable.is_empty());
    }
}
