//! A Gemini CLI session → the session model.
//!
//! The records are replayed as the client loads them (`loadConversationRecord`): messages in a
//! list keyed by `id`, a re-appended record replacing the earlier one in its place (never
//! counted twice), `$set` merged into the metadata (its `messages` replacing the list),
//! `$rewindTo` cutting the list. Each message keeps only what the rules and the rebuilt request
//! need: its place, its text's first line, and the contents `convertSessionToClientHistory`
//! makes of it (roles, parts, call ids).

use std::io::BufRead;

use serde_json::{Map, Value, json};

use super::read::{self as gemini, Kind};
use crate::core::{Format, IngestError};
use crate::formats::claude_code::replay::tool_part;
use crate::json::lines::Line;
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, str_of};
use crate::model::Part;
use crate::request::{Block, BlockKind, ModelMessage, Role};
use crate::session::{
    Analysis, Message, Observation, PartRecord, Session, TranscriptFacts, TranscriptSize,
    Undecodable, Unlisted,
};
use crate::source::{FileId, Span};

/// The client, as the notes name it: the file does not say which version wrote it.
pub const CLIENT: &str = "Gemini CLI";

/// A call of a Gemini message.
#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    /// Where its id is.
    span: Span,
}

/// One message record, slim.
#[derive(Debug, Clone)]
struct Msg {
    id: String,
    ty: String,
    span: Span,
    /// The first line of its text.
    text: String,
    resumable: bool,
    /// The contents the client makes of it for the model (none, one, or a model turn and the
    /// user turn of its calls' results).
    history: Vec<ModelMessage>,
    calls: Vec<Call>,
    /// A record written after the first one with its id replaced it.
    replaced: bool,
}

/// Where a record is: a line, or an item of an array in it.
struct At<'a> {
    line: &'a Line,
    item: Option<(usize, usize)>,
}

impl At<'_> {
    fn locate(&self, path: &[Seg<'_>]) -> Option<Span> {
        match &self.item {
            Some(item) => self.line.locate_from(Some(item), path),
            None => self.line.locate(path),
        }
    }

    fn span(&self) -> Span {
        match &self.item {
            Some(_) => self.locate(&[]).unwrap_or(self.line.span),
            None => self.line.span,
        }
    }
}

/// A part of a content, as a block of the request: text, thought, call, response, or another
/// kind by its key.
fn block(part: &Value, span: Option<Span>, id_span: Option<Span>, part_id: &str) -> Block {
    let o = part.as_object();
    let get = |k: &str| o.and_then(|o| o.get(k));
    let kind = if let Some(fc) = get("functionCall") {
        BlockKind::ToolCall {
            id: sent_id(&str_of_v(fc, "id"), &str_of_v(fc, "name")),
            name: str_of_v(fc, "name"),
        }
    } else if let Some(fr) = get("functionResponse") {
        BlockKind::ToolResult {
            id: sent_id(&str_of_v(fr, "id"), &str_of_v(fr, "name")),
            is_error: fr.get("response").and_then(|r| r.get("error")).is_some(),
        }
    } else if get("thought").is_some_and(|t| t.as_bool() == Some(true)) {
        BlockKind::Reasoning
    } else if part.is_string() || get("text").is_some() {
        BlockKind::Text
    } else {
        BlockKind::Other(
            o.and_then(|o| o.keys().next().cloned())
                .unwrap_or_else(|| "part".into()),
        )
    };
    let span = match kind {
        BlockKind::ToolCall { .. } | BlockKind::ToolResult { .. } => id_span.or(span),
        _ => span,
    };
    Block {
        kind,
        span,
        part_id: Some(part_id.to_owned()),
    }
}

/// A call id as Gemini CLI 0.61.0 sends it: without the `<tool>__` prefix it stores
/// (`stripToolCallIdPrefixes`; a blank name is `generic_tool`).
pub fn sent_id(id: &str, name: &str) -> String {
    let name = match name.trim() {
        "" => "generic_tool",
        n => n,
    };
    id.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix("__"))
        .unwrap_or(id)
        .to_owned()
}

fn str_of_v(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A text part that makes a model content invalid (`isValidContent`): empty, not a thought, no
/// other keys. The client leaves such a model turn out of the request.
fn empty_text(part: &Value) -> bool {
    part.as_object().is_some_and(|o| {
        o.get("text").and_then(Value::as_str) == Some("")
            && o.get("thought").is_none_or(|t| t.as_bool() != Some(true))
            && o.keys()
                .all(|k| matches!(k.as_str(), "text" | "thought" | "callIndex"))
    })
}

/// `ensurePartArray`: the parts of a content (a string is one text part).
fn parts_of(content: Option<&Value>) -> Vec<(usize, Value)> {
    match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(k, p)| match p {
                Value::String(s) => (k, json!({ "text": s })),
                other => (k, other.clone()),
            })
            .collect(),
        Some(Value::String(s)) => vec![(usize::MAX, json!({ "text": s }))],
        Some(other) => vec![(usize::MAX, other.clone())],
    }
}

/// Whether a JavaScript value is truthy.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(_) => true,
    }
}

/// A message record as the client converts it (`convertSessionToClientHistory`).
fn message(obj: &Map<String, Value>, at: &At<'_>) -> Msg {
    let id = str_of(obj, "id").unwrap_or_default().to_owned();
    let ty = str_of(obj, "type").unwrap_or_default().to_owned();
    let span = at.span();
    let words = gemini::content_words(obj.get("content"));
    let mut m = Msg {
        id: id.clone(),
        ty: ty.clone(),
        span,
        text: crate::session::first_line(&words, MAX_KEPT_STRING),
        resumable: gemini::is_resumable(obj),
        history: Vec::new(),
        calls: Vec::new(),
        replaced: false,
    };
    let content_at = |k: usize, tail: &[Seg<'_>]| -> Option<Span> {
        let mut path = vec![Seg::Key("content")];
        if k != usize::MAX {
            path.push(Seg::Index(k));
        }
        path.extend_from_slice(tail);
        at.locate(&path)
    };
    let content_block = |k: usize, p: &Value, n: usize| {
        let key = if p.get("functionCall").is_some() {
            "functionCall"
        } else {
            "functionResponse"
        };
        block(
            p,
            content_at(k, &[]),
            content_at(k, &[Seg::Key(key), Seg::Key("id")]),
            &format!("{id}/content/{n}"),
        )
    };
    match ty.as_str() {
        "user" => {
            if gemini::is_ignored_user_text(&words) {
                return m;
            }
            let content: Vec<Block> = parts_of(obj.get("content"))
                .iter()
                .enumerate()
                .map(|(n, (k, p))| content_block(*k, p, n))
                .collect();
            m.history.push(ModelMessage {
                role: Role::User,
                content,
                span: Some(span),
                message_id: Some(id),
            });
        }
        "gemini" => {
            let content = if truthy(obj.get("content")) {
                parts_of(obj.get("content"))
            } else {
                Vec::new()
            };
            let in_content = content.iter().any(|(_, p)| {
                p.get("functionCall").is_some() || p.get("thought").is_some_and(|t| truthy(Some(t)))
            });
            let mut blocks = Vec::new();
            let tool_calls = obj.get("toolCalls").and_then(Value::as_array);
            let mut invalid = false;
            if !in_content {
                let thoughts = obj.get("thoughts").and_then(Value::as_array);
                for (k, _) in thoughts.into_iter().flatten().enumerate() {
                    blocks.push(Block {
                        kind: BlockKind::Reasoning,
                        span: at.locate(&[Seg::Key("thoughts"), Seg::Index(k)]),
                        part_id: Some(format!("{id}/thoughts/{k}")),
                    });
                }
            }
            for (n, (k, p)) in content.iter().enumerate() {
                invalid |= empty_text(p);
                let b = content_block(*k, p, n);
                if let BlockKind::ToolCall { id: cid, name } = &b.kind {
                    m.calls.push(Call {
                        id: cid.clone(),
                        name: name.clone(),
                        span: b.span.unwrap_or(span),
                    });
                }
                blocks.push(b);
            }
            let mut responses = Vec::new();
            for (k, call) in tool_calls.into_iter().flatten().enumerate() {
                let cid = str_of_v(call, "id");
                let name = str_of_v(call, "name");
                let call_at = |tail: &[Seg<'_>]| {
                    let mut path = vec![Seg::Key("toolCalls"), Seg::Index(k)];
                    path.extend_from_slice(tail);
                    at.locate(&path)
                };
                let id_span = call_at(&[Seg::Key("id")]).or(call_at(&[]));
                if !in_content {
                    blocks.push(Block {
                        kind: BlockKind::ToolCall {
                            id: sent_id(&cid, &name),
                            name: name.clone(),
                        },
                        span: id_span,
                        part_id: Some(format!("{id}/toolCalls/{k}")),
                    });
                    m.calls.push(Call {
                        id: cid.clone(),
                        name,
                        span: id_span.unwrap_or(span),
                    });
                }
                let result = call.get("result");
                if !truthy(result) {
                    continue;
                }
                let result_at = call_at(&[Seg::Key("result")]);
                match result {
                    Some(Value::String(_)) => responses.push(Block {
                        kind: BlockKind::ToolResult {
                            id: sent_id(&cid, &str_of_v(call, "name")),
                            is_error: false,
                        },
                        span: result_at,
                        part_id: Some(format!("{id}/toolCalls/{k}/result")),
                    }),
                    Some(Value::Array(items)) => {
                        for (j, p) in items.iter().enumerate() {
                            let p = match p {
                                Value::String(s) => json!({ "text": s }),
                                other => other.clone(),
                            };
                            let base = [Seg::Key("result"), Seg::Index(j)];
                            let mut idp = base.to_vec();
                            idp.extend([Seg::Key("functionResponse"), Seg::Key("id")]);
                            responses.push(block(
                                &p,
                                call_at(&base),
                                call_at(&idp),
                                &format!("{id}/toolCalls/{k}/result/{j}"),
                            ));
                        }
                    }
                    Some(other) => responses.push(block(
                        other,
                        result_at,
                        call_at(&[
                            Seg::Key("result"),
                            Seg::Key("functionResponse"),
                            Seg::Key("id"),
                        ]),
                        &format!("{id}/toolCalls/{k}/result"),
                    )),
                    None => {}
                }
            }
            // The results follow only a model turn the message made; a model turn with an empty
            // text part is left out of the request (`extractCuratedHistory`), its results not.
            let made = !blocks.is_empty();
            if made && !invalid {
                m.history.push(ModelMessage {
                    role: Role::Assistant,
                    content: blocks,
                    span: Some(span),
                    message_id: Some(id.clone()),
                });
            }
            if made && !responses.is_empty() {
                m.history.push(ModelMessage {
                    role: Role::User,
                    content: responses,
                    span: Some(span),
                    message_id: Some(format!("{id}_response")),
                });
            }
        }
        _ => {}
    }
    m
}

/// The messages as the client keeps them: in order, keyed by id.
#[derive(Default)]
struct List {
    items: Vec<Option<Msg>>,
    index: crate::FastMap<String, usize>,
}

impl List {
    fn set(&mut self, m: Msg) -> bool {
        match self.index.get(&m.id) {
            Some(&i) => {
                let mut m = m;
                m.replaced = true;
                self.items[i] = Some(m);
                true
            }
            None => {
                self.index.insert(m.id.clone(), self.items.len());
                self.items.push(Some(m));
                false
            }
        }
    }

    fn clear(&mut self) {
        self.items.clear();
        self.index.clear();
    }

    /// `$rewindTo`: drops `id` and every later message; everything when `id` is not there.
    fn rewind(&mut self, id: &str) {
        match self.index.get(id) {
            Some(&i) => {
                for m in self.items.drain(i..).flatten() {
                    self.index.remove(&m.id);
                }
            }
            None => self.clear(),
        }
    }

    fn into_messages(self) -> Vec<Msg> {
        self.items.into_iter().flatten().collect()
    }
}

#[derive(Default)]
struct Reader {
    analysis: Option<Analysis>,
    list: List,
    session_id: Option<String>,
    project_hash: bool,
    kind: Option<String>,
    summary: Option<String>,
    /// Where the metadata starts (the first metadata record).
    meta_span: Option<Span>,
    lines: u64,
    reappended: u64,
    size: TranscriptSize,
    legacy: bool,
    /// The legacy document could not be parsed.
    unreadable: Option<Span>,
}

impl Reader {
    fn analysis(&mut self) -> &mut Analysis {
        self.analysis
            .get_or_insert_with(|| Analysis::new(FileId(0), Format::GeminiSession))
    }

    fn metadata(&mut self, obj: &Map<String, Value>, span: Span) {
        if let Some(s) = str_of(obj, "sessionId") {
            self.session_id = Some(s.to_owned());
        }
        if str_of(obj, "projectHash").is_some() {
            self.project_hash = true;
        }
        if let Some(k) = str_of(obj, "kind") {
            self.kind = Some(k.to_owned());
        }
        if let Some(s) = str_of(obj, "summary") {
            self.summary = Some(crate::session::first_line(s, MAX_KEPT_STRING));
        }
        self.meta_span.get_or_insert(span.head());
    }

    /// The messages of an array at `path` in the line, each with its span.
    fn messages_at(&mut self, line: &Line, path: &[Seg<'_>], items: &[Value]) {
        let places = line.items(path);
        for (k, v) in items.iter().enumerate() {
            let Some(o) = v.as_object() else { continue };
            if gemini::kind(o) != Kind::Message {
                continue;
            }
            let at = At {
                line,
                item: places.get(k).copied(),
            };
            let m = message(o, &at);
            self.note_type(&m.ty);
            self.list.set(m);
        }
    }

    fn note_type(&mut self, ty: &str) {
        if !gemini::MESSAGE_TYPES.contains(&ty) {
            *self
                .analysis()
                .unmodelled
                .entry(format!("{{\"type\": \"{ty}\"}}"))
                .or_default() += 1;
        }
    }

    fn line(&mut self, line: Line) {
        self.lines += 1;
        self.size.line(line.span);
        let obj = match &line.value {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                self.analysis().undecodable.push(Undecodable {
                    span: line.span,
                    reason: "the line is JSON but not an object; Gemini CLI ignores it".into(),
                    at: None,
                    truncated: false,
                });
                return;
            }
            Err((reason, at)) => {
                let u = Undecodable {
                    span: line.span,
                    reason: format!(
                        "{reason}; Gemini CLI skips a line it cannot parse, and the record it held is lost on resume"
                    ),
                    at: Some(*at),
                    truncated: line.torn,
                };
                self.analysis().undecodable.push(u);
                return;
            }
        };
        match gemini::kind(obj) {
            Kind::Rewind => {
                let id = str_of(obj, "$rewindTo").unwrap_or_default().to_owned();
                self.list.rewind(&id);
            }
            Kind::Message => {
                let m = message(
                    obj,
                    &At {
                        line: &line,
                        item: None,
                    },
                );
                self.note_type(&m.ty);
                if self.list.set(m) {
                    self.reappended += 1;
                }
            }
            Kind::Set => {
                let Some(set) = obj.get("$set").and_then(Value::as_object) else {
                    return;
                };
                if let Some(items) = set.get("messages").and_then(Value::as_array) {
                    self.list.clear();
                    self.messages_at(&line, &[Seg::Key("$set"), Seg::Key("messages")], items);
                }
                self.metadata(set, line.span);
            }
            Kind::Metadata => {
                self.metadata(obj, line.span);
                if let Some(items) = obj.get("messages").and_then(Value::as_array) {
                    self.messages_at(&line, &[Seg::Key("messages")], items);
                }
            }
            Kind::Unknown => {
                let key = obj.keys().next().cloned().unwrap_or_default();
                *self
                    .analysis()
                    .unmodelled
                    .entry(format!("{{\"{key}\": …}}"))
                    .or_default() += 1;
            }
        }
    }

    /// The legacy document: one JSON object, read whole (the client reads it so too).
    fn legacy(&mut self, text: String, file: FileId) {
        self.legacy = true;
        let whole = Span::new(file, 0, text.len() as u64);
        self.size.line(whole);
        let value = serde_json::from_str::<Value>(&text);
        let value = match value {
            Ok(v) => v,
            Err(e) => {
                let at = crate::json::lines::position(&text, e.line(), e.column());
                let at = Span::new(file, at as u64, 0);
                let truncated = e.is_eof();
                self.unreadable = Some(at);
                // The id the client would have read, from the document's head.
                self.session_id = text
                    .find("\"sessionId\"")
                    .and_then(|k| text.get(k + 11..))
                    .and_then(|rest| rest.split('"').nth(1))
                    .filter(|id| !id.is_empty() && id.len() < 100)
                    .map(str::to_owned);
                self.analysis().undecodable.push(Undecodable {
                    span: whole,
                    reason: format!(
                        "the legacy session document does not parse ({e}); Gemini CLI cannot load it"
                    ),
                    at: Some(at),
                    truncated,
                });
                return;
            }
        };
        let line = Line {
            index: 0,
            span: whole,
            text,
            value: Ok(Value::Null),
            torn: false,
        };
        let Some(obj) = value.as_object() else {
            self.unreadable = Some(whole.head());
            return;
        };
        self.metadata(obj, whole);
        if let Some(items) = obj.get("messages").and_then(Value::as_array) {
            self.messages_at(&line, &[Seg::Key("messages")], items);
        }
    }

    fn finish(mut self, file: FileId) -> Analysis {
        let mut analysis = self
            .analysis
            .take()
            .unwrap_or_else(|| Analysis::new(file, Format::GeminiSession));
        analysis.file = file;
        let legacy = self.legacy;
        analysis.counts.insert(
            if legacy {
                "messages (legacy JSON)"
            } else {
                "lines"
            },
            self.lines,
        );
        if self.reappended > 0 {
            analysis
                .counts
                .insert("re-appended records", self.reappended);
        }
        let msgs = std::mem::take(&mut self.list).into_messages();
        analysis.counts.insert("messages", msgs.len() as u64);
        let id = self.session_id.clone().unwrap_or_else(|| "session".into());
        let mut session = Session {
            id: id.clone(),
            title: self.summary.clone().or_else(|| {
                msgs.iter()
                    .find(|m| m.ty == "user" && m.resumable)
                    .map(|m| m.text.clone())
            }),
            ..Session::default()
        };
        let history: Vec<ModelMessage> = msgs.iter().flat_map(|m| m.history.clone()).collect();
        // The last content answering each call id.
        let mut answered_at: crate::FastMap<&str, usize> = crate::FastMap::default();
        for (i, h) in history.iter().enumerate() {
            for rid in h.content.iter().filter_map(Block::tool_result_id) {
                answered_at.insert(rid, i);
            }
        }
        let mut open = 0;
        let mut h = 0usize;
        for m in &msgs {
            let first = h;
            h += m.history.len();
            let mut parts = Vec::new();
            if m.ty == "gemini" && !m.text.trim().is_empty() {
                let part = Part::from_value(&json!({
                    "id": format!("{}/text", m.id), "sessionID": id, "messageID": m.id,
                    "type": "text", "text": m.text,
                }));
                parts.push(PartRecord {
                    part,
                    history: vec![Observation::at(0, m.span, None)],
                });
            }
            for c in &m.calls {
                let sent = sent_id(&c.id, &c.name);
                let done = answered_at.get(sent.as_str()).is_some_and(|&i| i >= first);
                let status = if done { "completed" } else { "running" };
                if !done {
                    open += 1;
                }
                parts.push(PartRecord {
                    part: tool_part(&c.id, &c.name, &id, &m.id, status, None),
                    history: vec![Observation::at(0, c.span, Some(status))],
                });
            }
            if m.ty == "user" || m.ty == "gemini" {
                session.messages.push(Message {
                    id: m.id.clone(),
                    span: Some(m.span),
                    parts,
                    ..Message::default()
                });
            }
        }
        let mut facts = TranscriptFacts {
            client: CLIENT.to_owned(),
            history,
            size: std::mem::take(&mut self.size),
            ..TranscriptFacts::default()
        };
        facts.file_calls = msgs
            .iter()
            .flat_map(|m| m.calls.iter().map(|c| c.id.clone()))
            .collect();
        if open > 0 {
            facts.open_call_help = Some(
                "`rewind repair` answers it as Gemini CLI answers a call it cancels (status \"cancelled\", a `functionResponse` with the error \"[Operation Cancelled] Operation cancelled.\"), writing the message again as the client does".into(),
            );
            facts.open_call_notes.push(
                "Gemini CLI records a call with its result once the call completes, so a call without one was written by another version or by hand; on resume Gemini CLI (0.61.0) sends the call without a `functionResponse`, and the Gemini API refuses the request (400)".into(),
            );
        }
        let head = Span::new(file, 0, 0);
        let resumable = msgs.iter().any(|m| m.resumable);
        let no_load =
            "its conversation cannot be resumed, although the file is still there".to_owned();
        if let Some(at) = self.unreadable {
            facts.unlisted.push(Unlisted {
                span: at,
                why: "Gemini CLI cannot parse the legacy session file".into(),
                notes: vec![no_load],
                lost: true,
            });
        } else if !legacy && (self.session_id.is_none() || !self.project_hash) {
            facts.unlisted.push(Unlisted {
                span: self.meta_span.unwrap_or(head),
                why: "no line gives the session's `sessionId` and `projectHash` (the metadata line is lost or damaged), so Gemini CLI tries the file as a legacy JSON document, which fails".into(),
                notes: vec![no_load],
                lost: true,
            });
        } else if !resumable && self.kind.as_deref() != Some("subagent") {
            facts.unlisted.push(Unlisted {
                span: self.meta_span.unwrap_or(head),
                why: "it holds no prompt or reply the picker counts (`hasResumableContent` is false: no user message but commands and context the client adds, no Gemini message with text, tool calls or thoughts)".into(),
                notes: vec![
                    "nothing is lost: Gemini CLI leaves out a session with nothing to resume, and deletes such a file when its own session ends".into(),
                ],
                lost: false,
            });
        }
        analysis.sessions.push(session);
        analysis.transcript = Some(Box::new(facts));
        analysis
    }
}

/// Reads a Gemini CLI session (either dialect) into one analysis.
pub fn replay<R: BufRead>(mut input: R, file: FileId) -> Result<Analysis, IngestError> {
    let mut r = Reader {
        analysis: Some(Analysis::new(file, Format::GeminiSession)),
        ..Reader::default()
    };
    let head = input.fill_buf().map_err(IngestError::Io)?;
    let first = head
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l))
        .find(|l| !l.trim().is_empty())
        .map(|l| l.into_owned())
        .unwrap_or_default();
    if gemini::is_legacy(&first) {
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes).map_err(IngestError::Io)?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            IngestError::InvalidUtf8 {
                offset: at as u64,
                line: memchr::memchr_iter(b'\n', &bytes[..at]).count() as u64 + 1,
            }
        })?;
        r.legacy(text, file);
    } else {
        crate::json::lines::read(input, file, &mut |line| r.line(line))?;
    }
    Ok(r.finish(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Analysis {
        replay(text.as_bytes(), FileId(0))
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::GeminiSession))
    }

    const META: &str =
        r#"{"sessionId":"s1","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#;

    #[test]
    fn a_reappended_message_replaces_the_earlier_in_its_place() {
        let text = format!(
            "{META}\n{}\n{}\n{}\n",
            r#"{"id":"u1","type":"user","content":[{"text":"run it"}]}"#,
            r#"{"id":"g1","type":"gemini","content":"ok"}"#,
            r#"{"id":"g1","type":"gemini","content":"ok","toolCalls":[{"id":"c1","name":"run_shell_command","args":{},"result":[{"functionResponse":{"id":"c1","name":"run_shell_command","response":{"output":"hi"}}}],"status":"success"}]}"#,
        );
        let a = run(&text);
        assert_eq!(a.sessions[0].messages.len(), 2);
        assert_eq!(a.counts.get("re-appended records"), Some(&1));
        let tools: Vec<_> = a
            .parts()
            .filter_map(|(_, _, p)| p.part.tool().map(|t| t.state.status().to_owned()))
            .collect();
        assert_eq!(tools, vec!["completed"]);
        let h = &a
            .transcript
            .as_deref()
            .map(|f| f.history.clone())
            .unwrap_or_default();
        let roles: Vec<Role> = h.iter().map(|m| m.role).collect();
        assert_eq!(roles, vec![Role::User, Role::Assistant, Role::User]);
    }

    #[test]
    fn set_messages_and_rewind_replace_the_list() {
        let text = format!(
            "{META}\n{}\n{}\n{}\n",
            r#"{"id":"u1","type":"user","content":"one"}"#,
            r#"{"$set":{"messages":[{"id":"u2","type":"user","content":"two"},{"id":"g2","type":"gemini","content":"reply"}]}}"#,
            r#"{"$rewindTo":"g2"}"#,
        );
        let a = run(&text);
        let ids: Vec<&str> = a.sessions[0]
            .messages
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, vec!["u2"]);
    }

    #[test]
    fn a_call_without_a_result_is_open() {
        let text = format!(
            "{META}\n{}\n{}\n",
            r#"{"id":"u1","type":"user","content":"run it"}"#,
            r#"{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run_shell_command","args":{},"result":null,"status":"executing"}]}"#,
        );
        let a = run(&text);
        let tools: Vec<_> = a
            .parts()
            .filter_map(|(_, _, p)| p.part.tool().map(|t| t.state.status().to_owned()))
            .collect();
        assert_eq!(tools, vec!["running"]);
    }

    #[test]
    fn a_session_with_nothing_to_resume_is_unlisted_but_nothing_is_lost() {
        let text = format!(
            "{META}\n{}\n",
            r#"{"$set":{"messages":[{"id":"ctx","type":"user","content":[{"text":"<session_context>\nx"}]}]}}"#
        );
        let a = run(&text);
        let f = a.transcript.as_deref();
        assert_eq!(f.map(|f| f.unlisted.len()), Some(1));
        assert_eq!(f.map(|f| f.unlisted[0].lost), Some(false));
    }

    #[test]
    fn the_legacy_document_keeps_each_messages_place() {
        let text = "{\n  \"sessionId\": \"s1\",\n  \"projectHash\": \"h\",\n  \"messages\": [\n    {\"id\": \"u1\", \"type\": \"user\", \"content\": [{\"text\": \"hi\"}]},\n    {\"id\": \"g1\", \"type\": \"gemini\", \"content\": \"hello\"}\n  ]\n}\n";
        let a = run(text);
        let m = &a.sessions[0].messages;
        assert_eq!(m.len(), 2);
        let span = m[1].span.map(|s| (s.offset as usize, s.len as usize));
        let (o, l) = span.unwrap_or_default();
        assert!(text[o..o + l].starts_with("{\"id\": \"g1\""));
        let cut = &text[..text.len() - 20];
        let a = run(cut);
        assert_eq!(a.undecodable.len(), 1);
        assert!(a.transcript.as_deref().is_some_and(|f| f.unlisted[0].lost));
    }
}
