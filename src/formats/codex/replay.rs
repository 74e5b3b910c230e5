//! A Codex rollout → the session model.
//!
//! `response_item`s are the conversation as the Responses API sees it: messages become messages
//! (consecutive output items one assistant message), `function_call`/`custom_tool_call`/
//! `local_shell_call` tool parts, running until the `…_output` with their `call_id`. `event_msg`
//! `task_started`/`task_complete` delimit turns; `task_complete.error` is the turn's error.
//! Older rollouts have no turn events: the file is then one turn. A call whose output never came
//! is open when it ends the last turn, and *stranded* when a later turn went on without it.

use std::collections::HashMap;
use std::io::BufRead;

use serde_json::{Map, Value, json};

use crate::json::value::str_of;

use crate::core::Format;
use crate::core::IngestError;
use crate::formats::claude_code::replay::tool_part;
use crate::formats::codex::read as codex_rollout;
use crate::json::lines::Line;
use crate::json::scan::Seg;
use crate::json::value::MAX_KEPT_STRING;
use crate::model::Part;
use crate::request::{Block as RBlock, BlockKind, ModelMessage, Role};
use crate::session::{
    Analysis, ErrorInfo, Event, EventKind, IMAGE_MAX_BASE64, Message, Observation, PartRecord, Seq,
    Session, StrandedCall, TranscriptFacts, TranscriptSize, UnansweredTurn, Undecodable,
};
use crate::source::{FileId, Span};

/// A turn, as far as the checks need it.
#[derive(Debug)]
struct Turn {
    /// Where it starts (`task_started`, or the first user message of a rollout without turns).
    span: Span,
    /// The last user message before any output: the prompt.
    prompt: Option<(String, Span)>,
    output: bool,
    complete: bool,
    /// Calls made in this turn: (message index, part index).
    calls: Vec<(usize, usize)>,
    /// The turn's last response item is a tool's output (its item id and call id's place): the
    /// model was to answer it.
    last_result: Option<(String, Span)>,
    /// Every output since the model last spoke is `"aborted"`: Codex's own output for a call
    /// it will not run (what it sends for an interrupted call, and what `rewind repair`
    /// writes for a call the client was killed in). The turn ended on purpose.
    results_aborted: bool,
}

#[derive(Default)]
struct Reader {
    analysis: Option<Analysis>,
    session: Session,
    version: Option<String>,
    turns: Vec<Turn>,
    /// The message consecutive output items go to.
    open_output: Option<usize>,
    calls: HashMap<String, (usize, usize)>,
    lines: u64,
    history: Vec<ModelMessage>,
    /// Calls a compaction took out of the history.
    compacted_calls: Vec<(String, Span, String)>,
    compactions: u64,
    /// Compactions that dropped the history without a summary (see [`Reader::compacted`]).
    lost_summaries: Vec<crate::session::LostSummary>,
    order: Order,
    size: TranscriptSize,
}

/// What the record order needs: the header and the `ordinal`s.
#[derive(Default)]
struct Order {
    /// The type of the first decoded record, and where it is.
    first: Option<(String, Span)>,
    /// The first line could not be decoded.
    first_undecodable: bool,
    header: bool,
    /// The last ordinal seen and where.
    last: Option<(u64, Span)>,
    /// Breaks: (kind, where, what). Kinds: 0 repeated or going back, 1 missing after numbered
    /// records, 2 not a number.
    breaks: Vec<(u8, Span, String, Option<Span>)>,
}

/// Where a response item is in its line.
#[derive(Clone, Copy)]
enum Place<'a> {
    /// The line's `payload`.
    Payload,
    /// An item of an array in the line (from [`Line::items`]).
    Item(Option<&'a (usize, usize)>),
}

/// A response item as a message of the stored history: messages by role (`developer` is a
/// system message), calls as assistant tool calls, outputs as tool results, anything else by its
/// type.
fn history_item(
    ty: &str,
    role: Option<&str>,
    p: &Map<String, Value>,
    id: &str,
    line: &Line,
    place: Place<'_>,
) -> ModelMessage {
    let call_id = str_of(p, "call_id").unwrap_or_default().to_owned();
    let call = [Seg::Key("call_id")];
    let (span, whole) = match place {
        Place::Payload => (
            line.locate(&[Seg::Key("payload"), Seg::Key("call_id")]),
            line.span,
        ),
        Place::Item(item) => (
            line.locate_from(item, &call),
            line.locate_from(item, &[]).unwrap_or(line.span),
        ),
    };
    let (role, kind) = match (ty, role) {
        ("message", Some("user")) => (Role::User, BlockKind::Text),
        ("message", Some("assistant")) => (Role::Assistant, BlockKind::Text),
        ("message", _) => (Role::System, BlockKind::Text),
        ("reasoning", _) => (Role::Assistant, BlockKind::Reasoning),
        ("function_call" | "custom_tool_call" | "local_shell_call", _) => (
            Role::Assistant,
            BlockKind::ToolCall {
                id: call_id,
                name: str_of(p, "name").unwrap_or(ty).to_owned(),
            },
        ),
        ("function_call_output" | "custom_tool_call_output" | "local_shell_call_output", _) => (
            Role::Tool,
            BlockKind::ToolResult {
                id: call_id,
                is_error: false,
            },
        ),
        (other, _) => (Role::Assistant, BlockKind::Other(other.to_owned())),
    };
    ModelMessage {
        role,
        content: vec![RBlock {
            kind,
            span: span.or(Some(whole)),
            part_id: Some(id.to_owned()),
        }],
        span: Some(whole),
        message_id: Some(id.to_owned()),
    }
}

/// Reads a Codex rollout into one analysis.
pub fn replay<R: BufRead>(input: R, file: FileId) -> Result<Analysis, IngestError> {
    let mut r = Reader {
        analysis: Some(Analysis::new(file, Format::CodexRollout)),
        ..Reader::default()
    };
    codex_rollout::read(input, file, &mut |line| r.line(line))?;
    Ok(r.finish(file))
}

/// The error a `task_complete` event carries, with its message and where that is.
fn task_error(error: &Value, message: &str, span: Span) -> ErrorInfo {
    ErrorInfo {
        name: error.get("codex_error_info").and_then(|c| {
            c.as_str()
                .map(str::to_owned)
                .or_else(|| c.as_object().and_then(|o| o.keys().next().cloned()))
        }),
        message: crate::session::first_line(message, MAX_KEPT_STRING),
        data: crate::json::value::cap_strings(error, MAX_KEPT_STRING),
        message_span: Some(span),
        ..ErrorInfo::default()
    }
}

impl Reader {
    fn analysis(&mut self) -> &mut Analysis {
        self.analysis
            .get_or_insert_with(|| Analysis::new(FileId(0), Format::CodexRollout))
    }

    fn line(&mut self, line: Line) {
        self.lines += 1;
        self.size.line(line.span);
        let seq = line.index;
        let obj = match &line.value {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                self.analysis().undecodable.push(Undecodable {
                    span: line.span,
                    reason: "the line is JSON but not an object".into(),
                    at: None,
                    truncated: false,
                });
                return;
            }
            Err((reason, at)) => {
                if self.order.first.is_none() {
                    self.order.first_undecodable = true;
                }
                let u = Undecodable {
                    span: line.span,
                    reason: reason.clone(),
                    at: Some(*at),
                    truncated: line.torn,
                };
                self.analysis().undecodable.push(u);
                return;
            }
        };
        self.order(&line, obj);
        let ty = str_of(obj, "type").unwrap_or_default();
        if !matches!(
            ty,
            "session_meta" | "event_msg" | "response_item" | "compacted"
        ) {
            *self.analysis().unmodelled.entry(ty.to_owned()).or_default() += 1;
        }
        let Some(payload) = obj.get("payload").and_then(Value::as_object) else {
            return;
        };
        let at = |path: &[&str]| {
            let mut segs: Vec<Seg<'_>> = vec![Seg::Key("payload")];
            segs.extend(path.iter().map(|k| Seg::Key(k)));
            line.locate(&segs)
        };
        match ty {
            "session_meta" => {
                if let Some(id) = str_of(payload, "id") {
                    self.session.id = id.to_owned();
                }
                self.version = str_of(payload, "cli_version").map(str::to_owned);
            }
            "event_msg" => match str_of(payload, "type").unwrap_or_default() {
                "task_started" => {
                    self.turns.push(Turn {
                        span: at(&["type"]).unwrap_or(line.span),
                        prompt: None,
                        output: false,
                        complete: false,
                        calls: Vec::new(),
                        last_result: None,
                        results_aborted: false,
                    });
                    self.open_output = None;
                }
                // The user interrupted the turn: it ends on purpose.
                "turn_aborted" => {
                    if let Some(t) = self.turns.last_mut() {
                        t.complete = true;
                    }
                    self.open_output = None;
                }
                "task_complete" => {
                    if let Some(t) = self.turns.last_mut() {
                        t.complete = true;
                    }
                    self.open_output = None;
                    let error = payload.get("error").filter(|e| !e.is_null());
                    if let Some(error) = error {
                        let message = error
                            .get("message")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| error.to_string());
                        let span = at(&["error", "message"])
                            .or(at(&["error"]))
                            .unwrap_or(line.span);
                        let info = task_error(error, &message, span);
                        let session = Some(self.session.id.clone());
                        self.analysis().events.push(Event {
                            seq,
                            span,
                            session,
                            kind: EventKind::SessionError(Box::new(info)),
                        });
                    }
                }
                _ => {}
            },
            "response_item" => self.item(seq, &line, payload),
            "compacted" => self.compacted(seq, &line, payload),
            _ => {}
        }
    }

    /// The header and the ordinals: Codex's recorder wants `session_meta` first ("rollout does
    /// not start with session metadata"), and, once a record has an `ordinal`, every later one
    /// with a greater one (a gap is allowed; a repeat makes paginated history drop records,
    /// openai/codex#35746; a record without one fails the resume, #45150).
    fn order(&mut self, line: &Line, obj: &Map<String, Value>) {
        let ty = str_of(obj, "type").unwrap_or_default();
        let o = &mut self.order;
        if o.first.is_none() {
            o.first = Some((ty.to_owned(), line.span.head()));
        }
        if ty == "session_meta" {
            o.header = true;
        }
        let at = || line.locate(&["ordinal".into()]).unwrap_or(line.span.head());
        match obj.get("ordinal") {
            None | Some(Value::Null) => {
                if o.last.is_some() {
                    o.breaks.push((
                        1,
                        line.span.head(),
                        format!(
                            "line {} has no `ordinal`, after numbered records",
                            line.index + 1
                        ),
                        o.last.map(|l| l.1),
                    ));
                }
            }
            Some(v) => match v.as_u64() {
                None => o.breaks.push((
                    2,
                    at(),
                    format!(
                        "line {} has an `ordinal` that is not a whole number: {v}",
                        line.index + 1
                    ),
                    None,
                )),
                Some(n) => {
                    if let Some((prev, prev_at)) = o.last
                        && n <= prev
                    {
                        let what = if n == prev {
                            "repeats"
                        } else {
                            "goes back from"
                        };
                        o.breaks.push((
                            0,
                            at(),
                            format!(
                                "line {} has ordinal {n}, which {what} the ordinal {prev} before it",
                                line.index + 1,
                            ),
                            Some(prev_at),
                        ));
                    }
                    o.last = Some((n, at()));
                }
            },
        }
    }

    /// A compaction: the history the client resumes from is replaced by `replacement_history`
    /// (Codex reads the newest `compacted` record that has one and replays the items after it);
    /// an older record without one stands for the user's messages and the summary, which is
    /// what Codex rebuilds from it. Calls that leave the history are remembered.
    ///
    /// A compaction with no summary (`message` empty) that keeps nothing of what it replaces
    /// but the user's messages (no `replacement_history`, or an empty one) is a lost summary:
    /// the model goes on without the work before it. A newer record whose replacement history
    /// carries the summary (or an opaque compaction item) is not one.
    fn compacted(&mut self, seq: Seq, line: &Line, p: &Map<String, Value>) {
        let before = std::mem::take(&mut self.history);
        let no_message = p
            .get("message")
            .and_then(Value::as_str)
            .is_none_or(|m| m.trim().is_empty());
        let replacement = p.get("replacement_history").and_then(Value::as_array);
        if no_message && replacement.is_none_or(|r| r.is_empty()) {
            // Without a replacement history Codex keeps the user's messages.
            let dropped = match replacement {
                Some(_) => before.len(),
                None => before.iter().filter(|m| m.role != Role::User).count(),
            };
            if dropped > 0 {
                self.lost_summaries.push(crate::session::LostSummary {
                    span: line
                        .locate(&[Seg::Key("payload"), Seg::Key("message")])
                        .unwrap_or(line.span),
                    what: "its summary (`message`) is empty and it keeps no replacement history"
                        .to_owned(),
                    label: "the compaction's empty summary",
                    dropped,
                });
            }
        }
        match p.get("replacement_history").and_then(Value::as_array) {
            Some(items) => {
                // Each item's place, found in one walk of the array.
                let places = line.items(&[Seg::Key("payload"), Seg::Key("replacement_history")]);
                for (k, item) in items.iter().enumerate() {
                    let Some(o) = item.as_object() else {
                        continue;
                    };
                    let ty = str_of(o, "type").unwrap_or_default();
                    let id = str_of(o, "id")
                        .map(str::to_owned)
                        .unwrap_or_else(|| format!("item-{}.{k}", seq + 1));
                    let at = Place::Item(places.get(k));
                    self.history
                        .push(history_item(ty, str_of(o, "role"), o, &id, line, at));
                }
            }
            None => {
                self.history = before
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .cloned()
                    .collect();
                let summary = line
                    .locate(&[Seg::Key("payload"), Seg::Key("message")])
                    .unwrap_or(line.span);
                self.history.push(ModelMessage {
                    role: Role::User,
                    content: vec![RBlock {
                        kind: BlockKind::Text,
                        span: Some(summary),
                        part_id: None,
                    }],
                    span: Some(line.span),
                    message_id: Some(format!("compacted-{}", seq + 1)),
                });
            }
        }
        let kept: std::collections::HashSet<&str> = self
            .history
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(RBlock::tool_call_id)
            .collect();
        let gone: Vec<(String, Span, String)> = before
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| Some((b.tool_call_id()?, b.span?)))
            .filter(|(id, _)| !kept.contains(id))
            .map(|(id, span)| {
                (
                    id.to_owned(),
                    span,
                    "before a compaction that did not keep it".to_owned(),
                )
            })
            .collect();
        self.compacted_calls.extend(gone);
        self.compactions += 1;
    }

    fn item(&mut self, seq: Seq, line: &Line, p: &Map<String, Value>) {
        for key in ["content", "output"] {
            let Some(v) = p.get(key) else {
                continue;
            };
            let mut images = Vec::new();
            let mut at = vec![Seg::Key("payload"), Seg::Key(key)];
            crate::json::value::inline_images(v, &mut at, &mut images);
            self.size.images += images.len() as u64;
            let mut locator = None;
            for (n, path) in images {
                self.size.image_bytes += n;
                self.size.image_bytes_sent += n;
                if n > IMAGE_MAX_BASE64 {
                    let at = locator.get_or_insert_with(|| line.locator()).locate(&path);
                    self.size.big_images.push((n, at.unwrap_or(line.span)));
                }
            }
        }
        let at = |key: &str| line.locate(&[Seg::Key("payload"), Seg::Key(key)]);
        let ty = str_of(p, "type").unwrap_or_default();
        let role = str_of(p, "role");
        let item_id = str_of(p, "id")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("item-{}", seq + 1));
        self.history
            .push(history_item(ty, role, p, &item_id, line, Place::Payload));
        if let Some(t) = self.turns.last_mut() {
            let aborted = p.get("output").is_some_and(|o| {
                o.as_str()
                    .or_else(|| o.get("content").and_then(Value::as_str))
                    == Some("aborted")
            });
            t.results_aborted = ty.ends_with("_output")
                && aborted
                && (t.last_result.is_none() || t.results_aborted);
            t.last_result = ty.ends_with("_output").then(|| {
                let span = at("call_id").unwrap_or(line.span);
                (item_id.clone(), span)
            });
        }
        match (ty, role) {
            // The context Codex writes as user messages (the environment, AGENTS.md): no turn
            // starts or waits for a reply with them. Codex 0.100 writes them before a turn's
            // `task_started`, later versions after it.
            ("message", Some("user")) if is_context(p) => {
                self.session.messages.push(Message {
                    id: item_id,
                    span: Some(line.span),
                    ..Message::default()
                });
            }
            ("message", Some("user")) => {
                self.open_output = None;
                if self.turns.is_empty() {
                    self.turns.push(Turn {
                        span: line.span.head(),
                        prompt: None,
                        output: false,
                        complete: false,
                        calls: Vec::new(),
                        last_result: None,
                        results_aborted: false,
                    });
                }
                let span = line
                    .locate(&[
                        Seg::Key("payload"),
                        Seg::Key("content"),
                        Seg::Index(0),
                        Seg::Key("text"),
                    ])
                    .unwrap_or(line.span);
                if let Some(t) = self.turns.last_mut()
                    && !t.output
                {
                    t.prompt = Some((item_id.clone(), span));
                }
                self.session.messages.push(Message {
                    id: item_id,
                    span: Some(line.span),
                    ..Message::default()
                });
            }
            ("message", Some("assistant"))
            | (
                "function_call" | "custom_tool_call" | "local_shell_call" | "reasoning"
                | "web_search_call",
                _,
            ) => {
                if let Some(t) = self.turns.last_mut() {
                    t.output = true;
                }
                let mi = match self.open_output {
                    Some(mi) => mi,
                    None => {
                        self.session.messages.push(Message {
                            id: item_id.clone(),
                            span: Some(line.span),
                            ..Message::default()
                        });
                        self.session.messages.len() - 1
                    }
                };
                self.open_output = Some(mi);
                let session = self.session.id.clone();
                let message_id = self.session.messages[mi].id.clone();
                let parts = &mut self.session.messages[mi].parts;
                if ty == "message" {
                    let text: String = p
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|c| c.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("");
                    let part = Part::from_value(&json!({
                        "id": item_id, "sessionID": session, "messageID": message_id,
                        "type": "text", "text": crate::session::first_line(&text, MAX_KEPT_STRING),
                    }));
                    parts.push(PartRecord {
                        part,
                        history: vec![Observation::at(
                            seq,
                            at("content").unwrap_or(line.span),
                            None,
                        )],
                    });
                } else if let Some(call_id) = str_of(p, "call_id") {
                    let name = str_of(p, "name").unwrap_or(ty);
                    let span = at("call_id").unwrap_or(line.span);
                    let part = tool_part(call_id, name, &session, &message_id, "running", None);
                    let pi = parts.len();
                    parts.push(PartRecord {
                        part,
                        history: vec![Observation::at(seq, span, Some("running"))],
                    });
                    self.calls.insert(call_id.to_owned(), (mi, pi));
                    if let Some(t) = self.turns.last_mut() {
                        t.calls.push((mi, pi));
                    }
                }
            }
            ("function_call_output" | "custom_tool_call_output" | "local_shell_call_output", _) => {
                self.open_output = None;
                let Some(call_id) = str_of(p, "call_id") else {
                    return;
                };
                let Some(&(mi, pi)) = self.calls.get(call_id) else {
                    return;
                };
                let session = self.session.id.clone();
                let record = &mut self.session.messages[mi].parts[pi];
                let Some(name) = record.part.tool().map(|t| t.tool.clone()) else {
                    return;
                };
                let mid = record.part.message_id.clone();
                // Codex has no error flag: a failed command is a completed call whose output
                // says so.
                record.part = tool_part(call_id, &name, &session, &mid, "completed", None);
                let span = at("call_id").unwrap_or(line.span);
                record
                    .history
                    .push(Observation::at(seq, span, Some("completed")));
            }
            _ => {}
        }
    }

    /// The header and ordinal breaks, the first of each kind with how many more there are.
    fn order_breaks(&mut self) -> Vec<(Span, String, Option<Span>)> {
        let o = std::mem::take(&mut self.order);
        let mut out = Vec::new();
        match &o.first {
            _ if o.first_undecodable => {} // undecodable-record tells of the first line
            None => {}
            Some((ty, span)) if !o.header => out.push((
                *span,
                format!("the rollout has no `session_meta` header: its first record is `{ty}`, and no record gives the session's id, folder and version"),
                None,
            )),
            Some((ty, span)) if ty != "session_meta" => out.push((
                *span,
                format!("the rollout does not start with its `session_meta` header: the first record is `{ty}`"),
                None,
            )),
            Some(_) => {}
        }
        for kind in 0..3u8 {
            let mut of_kind = o.breaks.iter().filter(|b| b.0 == kind);
            let Some((_, span, what, before)) = of_kind.next() else {
                continue;
            };
            let more = of_kind.count();
            let what = if more > 0 {
                format!("{what} ({more} more like it)")
            } else {
                what.clone()
            };
            out.push((*span, what, *before));
        }
        out
    }

    /// Stranded calls leave the parts (they are not open any more: a later turn moved on).
    fn strand(
        &mut self,
        mut strand: Vec<(usize, usize, Span)>,
        client: &str,
        facts: &mut TranscriptFacts,
    ) {
        strand.sort_by_key(|s| std::cmp::Reverse((s.0, s.1)));
        for (mi, pi, later) in strand {
            let record = self.session.messages[mi].parts.remove(pi);
            let Some(tool) = record.part.tool() else {
                continue;
            };
            facts.stranded_calls.push(StrandedCall {
                session: self.session.id.clone(),
                call_id: tool.call_id.clone(),
                tool: tool.tool.clone(),
                span: record.history[0].span,
                why: "its turn ended or a later turn began without its output".into(),
                related: vec![(later.head(), "the session went on here".into())],
                notes: vec![format!(
                    "written by {client}; on resume Codex 0.169.0 sends a synthetic output \"aborted\" for it (not written to the rollout), so the request is valid; the call stays unanswered on disk"
                )],
            });
        }
        facts.stranded_calls.reverse();
    }

    fn finish(mut self, file: FileId) -> Analysis {
        let mut analysis = self
            .analysis
            .take()
            .unwrap_or_else(|| Analysis::new(file, Format::CodexRollout));
        analysis.counts.insert("lines", self.lines);
        analysis.counts.insert("turns", self.turns.len() as u64);
        if self.session.id.is_empty() {
            self.session.id = "session".into();
        }
        self.session.version = self.version.clone();
        let client = match &self.version {
            Some(v) => format!("Codex {v}"),
            None => "Codex".to_owned(),
        };
        if self.compactions > 0 {
            analysis.counts.insert("compactions", self.compactions);
        }
        let order = self.order_breaks();
        let mut facts = TranscriptFacts {
            client: client.clone(),
            history: std::mem::take(&mut self.history),
            off_history_calls: std::mem::take(&mut self.compacted_calls),
            lost_summaries: std::mem::take(&mut self.lost_summaries),
            order,
            size: std::mem::take(&mut self.size),
            ..TranscriptFacts::default()
        };
        let last = self.turns.len().saturating_sub(1);
        let mut strand: Vec<(usize, usize, Span)> = Vec::new();
        for (n, turn) in self.turns.iter().enumerate() {
            let next = self.turns.get(n + 1);
            for &(mi, pi) in &turn.calls {
                let record = &self.session.messages[mi].parts[pi];
                if record.part.tool().is_none_or(|t| t.state.is_terminal()) {
                    continue;
                }
                if n == last && !turn.complete {
                    if facts.open_call_notes.is_empty() {
                        facts.open_call_notes.push(format!(
                            "written by {client}; the turn has no `task_complete`: the process died while the call ran. On resume, Codex 0.169.0 sends a synthetic output \"aborted\" for the call (not written to the rollout); clients that send the call alone get `No tool output found for function call` (a 400)"
                        ));
                    }
                    continue;
                }
                strand.push((mi, pi, next.map_or(turn.span, |t| t.span)));
            }
            if n == last
                && !turn.complete
                && !turn.results_aborted
                && let Some((id, span)) = &turn.last_result
            {
                facts.unanswered.push(UnansweredTurn {
                    session: self.session.id.clone(),
                    message_id: id.clone(),
                    span: *span,
                    resumed: None,
                    results: true,
                    inserted: Vec::new(),
                    notes: vec![format!(
                        "written by {client}; the turn has no `task_complete`: the process stopped while the model was answering the tool's output, and Codex writes a reply only once its output item is complete"
                    )],
                });
            }
            if turn.output || turn.complete {
                continue;
            }
            let Some((id, span)) = &turn.prompt else {
                continue;
            };
            let resumed = next.map(|t| {
                (
                    t.span,
                    format!(
                        "a later turn began without a reply to it; on resume {client} sends this prompt and the next one as two consecutive user messages, which the Responses API accepts"
                    ),
                )
            });
            facts.unanswered.push(UnansweredTurn {
                session: self.session.id.clone(),
                message_id: id.clone(),
                span: *span,
                resumed,
                results: false,
                inserted: Vec::new(),
                notes: vec![format!(
                    "written by {client}; Codex writes a reply only once its output item is complete (observed with 0.169.0), so a reply cut off mid-stream leaves nothing"
                )],
            });
        }
        self.strand(strand, &client, &mut facts);
        analysis.sessions.push(std::mem::take(&mut self.session));
        analysis.transcript = Some(Box::new(facts));
        analysis
    }
}

/// Whether a user message is context Codex adds, not the user's prompt: the
/// `<environment_context>` block, the project's `AGENTS.md` instructions (`# AGENTS.md
/// instructions for …`, `<user_instructions>`).
fn is_context(payload: &serde_json::Map<String, Value>) -> bool {
    let text = payload
        .get("content")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim_start();
    text.starts_with("<environment_context>")
        || text.starts_with("<user_instructions>")
        || text.starts_with("# AGENTS.md instructions")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Analysis {
        replay(text.as_bytes(), FileId(0))
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::CodexRollout))
    }

    const TURN: &str = r#"{"timestamp":"t","ordinal":0,"type":"session_meta","payload":{"id":"th1","cli_version":"0.169.0"}}
{"timestamp":"t","ordinal":1,"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}
{"timestamp":"t","ordinal":2,"type":"response_item","payload":{"type":"message","id":"m1","role":"user","content":[{"type":"input_text","text":"sleep"}]}}
{"timestamp":"t","ordinal":3,"type":"response_item","payload":{"type":"function_call","id":"fc1","name":"exec_command","arguments":"{}","call_id":"call_1"}}
"#;

    #[test]
    fn an_unanswered_call_ends_the_last_turn_open() {
        let a = run(TURN);
        let open: Vec<_> = a
            .parts()
            .filter_map(|(_, _, p)| p.part.tool().map(|t| t.state.status().to_owned()))
            .collect();
        assert_eq!(open, vec!["running"]);
        assert_eq!(a.sessions[0].id, "th1");
    }

    #[test]
    fn a_later_turn_strands_the_call_and_an_error_is_an_event() {
        let text = format!(
            "{TURN}{}\n{}\n{}\n",
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}"#,
            r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","id":"m2","role":"user","content":[{"type":"input_text","text":"again"}]}}"#,
            r#"{"timestamp":"t","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","error":{"message":"stream disconnected"}}}"#
        );
        let a = run(&text);
        let f = a.transcript.as_deref();
        assert_eq!(f.map(|f| f.stranded_calls.len()), Some(1));
        assert!(a.parts().all(|(_, _, p)| p.part.tool().is_none()));
        assert_eq!(a.events.len(), 1);
        assert_eq!(f.map(|f| f.unanswered.len()), Some(0));
    }

    #[test]
    fn a_dangling_prompt_is_unanswered() {
        let text = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"th1"}}
{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"story"}]}}
"#;
        let a = run(text);
        assert_eq!(a.transcript.as_deref().map(|f| f.unanswered.len()), Some(1));
    }
}
