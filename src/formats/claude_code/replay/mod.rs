//! A Claude Code transcript → the session model.
//!
//! The file is a tree: every conversation record names its parent (`parentUuid`). The history
//! the client resumes from and sends to the API is the *active* path: from the leaf (the last
//! `last-prompt` record's `leafUuid`, or the newest conversation record written after it) back
//! to a root. A compaction starts a new root (`system`/`compact_boundary` with `parentUuid`
//! null); a resume may branch from an earlier record, leaving a dead end behind.
//!
//! On the active path: one API message is stored as several `assistant` records sharing
//! `message.id` (one per content block) and becomes one message; `tool_use` blocks become tool
//! parts, running until the `tool_result` with their id; synthetic records
//! (`message.model: "<synthetic>"`) are not model output: `isApiErrorMessage` ones are the
//! session's errors, others are what the client wrote itself on resume. Off the active path,
//! tool calls nobody answered are *stranded*. Only a slim view of each record is kept.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;

use serde_json::{Value, json};

use crate::json::value::str_of;

mod tree;

/// How Claude Code's own interruption markers start: the text it writes when the user stops a
/// reply (`[Request interrupted by user]`) and the error result it writes for a tool the user
/// stops (`[Request interrupted by user for tool use]`).
const INTERRUPTED: &str = "[Request interrupted by user";
/// No record: the end of the linked path in `stitch_parallel`.
const END: usize = usize::MAX;

use crate::core::Format;
use crate::core::IngestError;
use crate::formats::claude_code::read as claude_transcript;
use crate::json::lines::Line;
use crate::json::scan::Seg;
use crate::json::value::MAX_KEPT_STRING;
use crate::model::Part;
use crate::request::{Block as RBlock, BlockKind, ModelMessage, Role};
use crate::session::{
    Analysis, Event, EventKind, IMAGE_MAX_BASE64, Message, Observation, PartRecord, Seq, Session,
    StoredBlock, ThinkingBlock, ThinkingResponse, TranscriptFacts, TranscriptSize, UnansweredTurn,
    Undecodable,
};
use crate::source::{FileId, Span};

/// A content block, as far as the checks need it.
#[derive(Debug)]
enum Block {
    Text {
        span: Option<Span>,
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        span: Span,
    },
    ToolResult {
        id: String,
        error: bool,
        /// The result is the client's own interruption marker (`[Request interrupted by user…`):
        /// what Claude Code writes when the user stops a tool, and what `rewind repair` writes
        /// for a call the client was killed in.
        interrupted: bool,
        span: Span,
    },
    /// A `thinking` or `redacted_thinking` block.
    Thinking(crate::session::ThinkingBlock),
    Other,
}

/// What is kept of one conversation record.
#[derive(Debug)]
struct Rec {
    seq: Seq,
    uuid: String,
    parent: Option<String>,
    ty: String,
    span: Span,
    sidechain: bool,
    message_id: Option<String>,
    synthetic: bool,
    /// The client's own result for a call it found unanswered on resume
    /// (`toolDenialKind: "interrupted"`, Claude Code 2.1.3xx).
    interrupted_result: bool,
    meta: bool,
    compact_summary: bool,
    /// The first text of the content, capped (for API errors and words).
    text: Option<(String, Option<Span>)>,
    api_error: Option<(Option<String>, Option<u64>)>,
    blocks: Vec<Block>,
    /// A `compact_boundary`'s `compactMetadata.preservedSegment`: the records kept verbatim
    /// (`headUuid` … `tailUuid`), placed after `anchorUuid` (the summary) when the client loads
    /// the history.
    preserved: Option<Preserved>,
    /// A `system`/`compact_boundary` record.
    boundary: bool,
    /// Where the `parentUuid` value is, when it named no record read before this one.
    parent_span: Option<Span>,
    /// Inline base64 images: their total length, and the ones over the API's limit.
    image_bytes: u64,
    big_images: Vec<(u64, Span)>,
}

#[derive(Debug)]
struct Preserved {
    head: String,
    anchor: String,
    tail: String,
}

impl Rec {
    fn is_prompt(&self) -> bool {
        self.ty == "user"
            && !self.meta
            && !self.compact_summary
            && !self.local_command()
            && !self
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// A local slash command's records (`/compact`, `/cost`…): its name and its output, which
    /// no reply follows; and the marker Claude Code writes when the user interrupts a reply
    /// (`[Request interrupted by user]`), which ends the turn on purpose.
    fn local_command(&self) -> bool {
        self.text.as_ref().is_some_and(|(t, _)| {
            let t = t.trim_start();
            t.starts_with("<command-name>")
                || t.starts_with("<local-command-")
                || t.starts_with(INTERRUPTED)
        })
    }

    fn has_results(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// The ids of its `tool_use` blocks.
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The call ids its `tool_result` blocks answer.
    fn result_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// A user or assistant record that takes part in the conversation.
    fn converses(&self) -> bool {
        matches!(self.ty.as_str(), "user" | "assistant") && !self.meta
    }
}

#[derive(Default)]
struct Reader {
    records: Vec<Rec>,
    index: HashMap<String, usize>,
    main_leaf: Option<String>,
    side_leaf: Option<String>,
    last_prompt_seq: Option<Seq>,
    /// The last `api-request` record (Claude Code 2.1.3xx logs each request it sends, and writes
    /// a `last-prompt` right after it, before any reply).
    last_api_request_seq: Option<Seq>,
    session_id: Option<String>,
    version: Option<String>,
    undecodable: Vec<Undecodable>,
    counts: (u64, u64, u64),
    /// Records of types the replay does not model, by type.
    unmodelled: std::collections::BTreeMap<String, u64>,
    /// Records whose `uuid` an earlier record has: where, and the uuid.
    duplicates: Vec<(Span, String)>,
    size: TranscriptSize,
}

/// Reads a Claude Code transcript into one analysis.
pub fn replay<R: BufRead>(input: R, file: FileId) -> Result<Analysis, IngestError> {
    let mut r = Reader::default();
    claude_transcript::read(input, file, &mut |line| r.line(line))?;
    Ok(r.finish(file))
}

/// How much text of an ordinary record is kept: enough to classify it (a local command, an
/// interrupt marker) and to show it; a synthetic record keeps [`MAX_KEPT_STRING`] (its error).
const KEPT_TEXT: usize = 80;

fn capped(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

impl Reader {
    /// The index of the record `rec` answers, when that record is in the file.
    fn parent_of(&self, rec: &Rec) -> Option<usize> {
        rec.parent.as_ref().and_then(|p| self.index.get(p)).copied()
    }

    fn line(&mut self, line: Line) {
        self.counts.0 += 1;
        self.size.line(line.span);
        let seq = line.index;
        let obj = match &line.value {
            Err((reason, at)) => {
                self.undecodable.push(Undecodable {
                    span: line.span,
                    reason: reason.clone(),
                    at: Some(*at),
                    truncated: line.torn,
                });
                return;
            }
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                self.undecodable.push(Undecodable {
                    span: line.span,
                    reason: "the line is JSON but not an object".into(),
                    at: None,
                    truncated: false,
                });
                return;
            }
        };
        let ty = str_of(obj, "type").unwrap_or_default();
        if self.session_id.is_none() {
            self.session_id = str_of(obj, "sessionId").map(str::to_owned);
        }
        if let Some(v) = str_of(obj, "version") {
            self.version = Some(v.to_owned());
        }
        if ty == "api-request" {
            self.last_api_request_seq = Some(seq);
        }
        if ty == "last-prompt" {
            self.last_prompt_seq = Some(seq);
            if let Some(leaf) = str_of(obj, "leafUuid") {
                self.main_leaf = Some(leaf.to_owned());
            }
            return;
        }
        let Some(uuid) = str_of(obj, "uuid") else {
            if ty != "api-request" {
                *self.unmodelled.entry(ty.to_owned()).or_default() += 1;
            }
            return;
        };
        self.counts.1 += 1;
        let sidechain = obj.get("isSidechain").and_then(Value::as_bool) == Some(true);
        if sidechain {
            self.side_leaf = Some(uuid.to_owned());
        } else {
            self.main_leaf = Some(uuid.to_owned());
        }
        let message = obj.get("message").and_then(Value::as_object);
        let synthetic = message.and_then(|m| str_of(m, "model")) == Some("<synthetic>");
        let interrupted_result = str_of(obj, "toolDenialKind") == Some("interrupted");
        let keep = if synthetic {
            MAX_KEPT_STRING
        } else {
            KEPT_TEXT
        };
        let mut blocks = Vec::new();
        let mut text = None;
        match message.and_then(|m| m.get("content")) {
            Some(Value::String(s)) => {
                text = Some((
                    capped(s, keep),
                    line.locate(&["message".into(), "content".into()]),
                ));
            }
            Some(Value::Array(items)) => {
                // Each block's place, found in one walk of the array.
                let places = line.items(&["message".into(), "content".into()]);
                for (k, b) in items.iter().enumerate() {
                    let at = |key: &str| line.locate_from(places.get(k), &[Seg::Key(key)]);
                    let bo = b.as_object();
                    let field = |key: &str| {
                        bo.and_then(|o| str_of(o, key))
                            .unwrap_or_default()
                            .to_owned()
                    };
                    let block = match bo.and_then(|o| str_of(o, "type")) {
                        Some("text") => {
                            let span = at("text");
                            let t = capped(&field("text"), keep);
                            if text.is_none() {
                                text = Some((t.clone(), span));
                            }
                            Block::Text { span, text: t }
                        }
                        Some("tool_use") => Block::ToolUse {
                            id: field("id"),
                            name: field("name"),
                            span: at("id").unwrap_or(line.span),
                        },
                        Some("tool_result") => Block::ToolResult {
                            id: field("tool_use_id"),
                            error: bo.and_then(|o| o.get("is_error")).and_then(Value::as_bool)
                                == Some(true),
                            interrupted: bo.and_then(|o| o.get("content")).is_some_and(|c| {
                                let first = match c {
                                    Value::String(s) => Some(s.as_str()),
                                    Value::Array(items) => items
                                        .first()
                                        .and_then(|i| i.get("text"))
                                        .and_then(Value::as_str),
                                    _ => None,
                                };
                                first.is_some_and(|t| t.trim_start().starts_with(INTERRUPTED))
                            }),
                            span: at("tool_use_id").unwrap_or(line.span),
                        },
                        Some(ty @ ("thinking" | "redacted_thinking")) => {
                            let key = if ty == "thinking" { "thinking" } else { "data" };
                            Block::Thinking(thinking_block(ty, bo, at(key).unwrap_or(line.span)))
                        }
                        _ => Block::Other,
                    };
                    blocks.push(block);
                }
            }
            _ => {}
        }
        let api_error = (obj.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true)
            || (synthetic
                && text
                    .as_ref()
                    .is_some_and(|(t, _)| t.starts_with("API Error"))))
        .then(|| {
            (
                str_of(obj, "error").map(str::to_owned),
                obj.get("apiErrorStatus").and_then(Value::as_u64),
            )
        });
        let mut rec = Rec {
            seq,
            uuid: uuid.to_owned(),
            parent: str_of(obj, "parentUuid").map(str::to_owned),
            ty: ty.to_owned(),
            span: line.span,
            sidechain,
            message_id: message.and_then(|m| str_of(m, "id")).map(str::to_owned),
            synthetic,
            interrupted_result,
            meta: obj.get("isMeta").and_then(Value::as_bool) == Some(true),
            compact_summary: obj.get("isCompactSummary").and_then(Value::as_bool) == Some(true),
            text,
            api_error,
            blocks,
            preserved: None,
            boundary: false,
            parent_span: None,
            image_bytes: 0,
            big_images: Vec::new(),
        };
        if let Some(content) = message.and_then(|m| m.get("content")) {
            let mut images = Vec::new();
            let mut at = vec![Seg::Key("message"), Seg::Key("content")];
            crate::json::value::inline_images(content, &mut at, &mut images);
            self.size.images += images.len() as u64;
            let mut locator = None;
            for (n, path) in images {
                rec.image_bytes += n;
                if n > IMAGE_MAX_BASE64 {
                    let at = locator.get_or_insert_with(|| line.locator()).locate(&path);
                    rec.big_images.push((n, at.unwrap_or(line.span)));
                }
            }
            self.size.image_bytes += rec.image_bytes;
        }
        if rec
            .parent
            .as_ref()
            .is_some_and(|p| !self.index.contains_key(p))
        {
            rec.parent_span = line.locate(&["parentUuid".into()]);
        }
        // Claude Code writes a uuid once to a session's file; a subagent's file may repeat the
        // records it inherited from its parent.
        if !rec.sidechain && self.index.contains_key(&rec.uuid) {
            self.duplicates.push((
                line.locate(&["uuid".into()]).unwrap_or(line.span),
                rec.uuid.clone(),
            ));
        }
        if rec.ty == "system" && str_of(obj, "subtype") == Some("compact_boundary") {
            self.counts.2 += 1;
            rec.boundary = true;
            rec.preserved = obj
                .get("compactMetadata")
                .and_then(|m| m.get("preservedSegment"))
                .and_then(Value::as_object)
                .and_then(|p| {
                    Some(Preserved {
                        head: str_of(p, "headUuid")?.to_owned(),
                        anchor: str_of(p, "anchorUuid")?.to_owned(),
                        tail: str_of(p, "tailUuid")?.to_owned(),
                    })
                });
        }
        self.index.insert(rec.uuid.clone(), self.records.len());
        self.records.push(rec);
    }

    /// The record the active history ends at.
    fn leaf(&self) -> Option<usize> {
        let leaf = self
            .main_leaf
            .as_ref()
            .filter(|l| self.index.contains_key(*l))
            .or(self.side_leaf.as_ref())
            .or_else(|| self.records.last().map(|r| &r.uuid));
        leaf.and_then(|l| self.index.get(l)).copied()
    }

    /// Indices of the active path, root first.
    fn active_path(&self) -> Vec<usize> {
        let relinks = self.relinks();
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut at = self.leaf();
        while let Some(i) = at {
            if !seen.insert(i) {
                break; // a cycle: the file is corrupt; keep what was walked
            }
            path.push(i);
            at = relinks
                .get(&i)
                .copied()
                .or_else(|| self.parent_of(&self.records[i]));
        }
        path.reverse();
        self.stitch_parallel(path)
    }

    /// Parallel tool calls: one API message is stored as one record per block, and the records
    /// of a message's calls and their results may branch from each other (each result's parent
    /// is its own call's record), so the walk from the leaf passes through one branch only.
    /// Claude Code stitches the siblings back when it loads the transcript: an off-path
    /// assistant record of a message that is on the path, and an off-path record of results
    /// that all answer calls on the path, hanging from the path, are put back — a sibling
    /// next to its message, results after the results that follow the calls.
    fn stitch_parallel(&self, path: Vec<usize>) -> Vec<usize> {
        // The path as a list linked through `next` (record index → the one after it), so that
        // a stitched record goes in after its parent without a search or a shift of the path.
        let mut next = vec![END; self.records.len()];
        for w in path.windows(2) {
            next[w[0]] = w[1];
        }
        let mut on: HashSet<usize> = path.iter().copied().collect();
        let mut calls: HashSet<&str> = HashSet::new();
        let mut messages: HashSet<&str> = HashSet::new();
        for &i in &path {
            let rec = &self.records[i];
            calls.extend(rec.call_ids());
            if rec.ty == "assistant"
                && let Some(m) = &rec.message_id
            {
                messages.insert(m);
            }
        }
        let answered = self.answered();
        // Results already on the path: a stitched record only fills in a missing one.
        let mut results_on: HashSet<&str> = path
            .iter()
            .flat_map(|&i| self.records[i].result_ids())
            .collect();
        for (i, rec) in self.records.iter().enumerate() {
            if on.contains(&i) || rec.meta {
                continue;
            }
            let Some(parent) = self.parent_of(rec) else {
                continue;
            };
            if !on.contains(&parent) {
                continue;
            }
            // A sibling call nobody answered is what a kill leaves; the client branches past
            // it on resume rather than stitching it back.
            let own_calls: Vec<&str> = rec.call_ids().collect();
            let sibling = rec.ty == "assistant"
                && rec
                    .message_id
                    .as_deref()
                    .is_some_and(|m| messages.contains(m))
                && !own_calls.is_empty()
                && own_calls.iter().all(|id| answered.contains(id));
            let results: Vec<&str> = rec.result_ids().collect();
            let answers = rec.ty == "user"
                && !results.is_empty()
                && results
                    .iter()
                    .all(|id| calls.contains(id) && !results_on.contains(id));
            if !(sibling || answers) {
                continue;
            }
            let after = |at: usize| Some(next[at]).filter(|&k| k != END);
            let mut at = parent;
            if sibling {
                // After the last record of the same message.
                while let Some(k) = after(at).filter(|&k| {
                    self.records[k].ty == "assistant"
                        && self.records[k].message_id == rec.message_id
                }) {
                    at = k;
                }
            } else {
                // After the calls' message and the results already there.
                while let Some(k) = after(at).filter(|&k| {
                    let r = &self.records[k];
                    (r.ty == "assistant" && r.message_id == self.records[parent].message_id)
                        || r.has_results()
                }) {
                    at = k;
                }
            }
            next[i] = next[at];
            next[at] = i;
            on.insert(i);
            results_on.extend(results.iter().copied());
            calls.extend(rec.call_ids());
        }
        let mut out = Vec::with_capacity(on.len());
        let mut at = path.first().copied();
        while let Some(k) = at {
            out.push(k);
            at = Some(next[k]).filter(|&k| k != END);
        }
        out
    }

    /// The records a compaction kept (`preservedSegment`: `headUuid` … `tailUuid`) hang from
    /// its anchor when the client loads the transcript: the head's parent becomes `anchorUuid`,
    /// provided the walk from the tail reaches the head. Records written after the compaction
    /// go on from the tail (or from the anchor, when nothing was kept), so the active history
    /// runs boundary → summary → kept records → what came after.
    fn relinks(&self) -> HashMap<usize, usize> {
        let mut out = HashMap::new();
        for rec in &self.records {
            let Some(p) = &rec.preserved else {
                continue;
            };
            let (Some(&head), Some(&anchor)) = (self.index.get(&p.head), self.index.get(&p.anchor))
            else {
                continue;
            };
            let mut at = self.index.get(&p.tail).copied();
            let mut steps = 0;
            while let Some(i) = at {
                if i == head || steps > self.records.len() {
                    break;
                }
                steps += 1;
                at = self.parent_of(&self.records[i]);
            }
            if at == Some(head) && head != anchor {
                out.insert(head, anchor);
            }
        }
        out
    }

    /// The responses holding thinking, with every block the file stores for them.
    fn thinking_responses(&self) -> Vec<ThinkingResponse> {
        let mut order: Vec<&str> = Vec::new();
        let mut by_id: HashMap<&str, Vec<(&Rec, &Block)>> = HashMap::new();
        for rec in self.records.iter().filter(|r| r.ty == "assistant") {
            let Some(id) = rec.message_id.as_deref() else {
                continue;
            };
            let blocks = by_id.entry(id).or_insert_with(|| {
                order.push(id);
                Vec::new()
            });
            blocks.extend(rec.blocks.iter().map(|b| (rec, b)));
        }
        let mut out = Vec::new();
        for id in order {
            let Some(blocks) = by_id.get(id) else {
                continue;
            };
            if !blocks.iter().any(|(_, b)| matches!(b, Block::Thinking(_))) {
                continue;
            }
            let mut response = ThinkingResponse {
                message_id: id.to_owned(),
                blocks: Vec::new(),
            };
            let mut seen: HashMap<u64, usize> = HashMap::new();
            for (k, (rec, block)) in blocks.iter().enumerate() {
                let (kind, thinking, span, key) = match block {
                    Block::Thinking(t) => {
                        (BlockKind::Reasoning, Some(t.clone()), Some(t.span), t.key)
                    }
                    Block::Text { span, text } => {
                        (BlockKind::Text, None, *span, hash_of(("text", text)))
                    }
                    Block::ToolUse { id, name, span } => (
                        BlockKind::ToolCall {
                            id: id.clone(),
                            name: name.clone(),
                        },
                        None,
                        Some(*span),
                        hash_of(("tool_use", id)),
                    ),
                    Block::ToolResult { .. } | Block::Other => (
                        BlockKind::Other("other".into()),
                        None,
                        None,
                        hash_of(("other", &rec.uuid, k)),
                    ),
                };
                match seen.get(&key) {
                    Some(&at) => response.blocks[at].copies.push(rec.uuid.clone()),
                    None => {
                        seen.insert(key, response.blocks.len());
                        response.blocks.push(StoredBlock {
                            record: rec.uuid.clone(),
                            copies: Vec::new(),
                            kind,
                            thinking,
                            span,
                        });
                    }
                }
            }
            out.push(response);
        }
        out
    }

    fn finish(self, file: FileId) -> Analysis {
        let mut analysis = Analysis::new(file, Format::ClaudeTranscript);
        analysis.counts.insert("lines", self.counts.0);
        analysis
            .counts
            .insert("conversation records", self.counts.1);
        analysis.undecodable = self.undecodable.clone();
        analysis.unmodelled = self.unmodelled.clone();
        let session_id = self.session_id.clone().unwrap_or_else(|| "session".into());
        let path = self.active_path();
        analysis
            .counts
            .insert("records on the active history", path.len() as u64);
        if self.counts.2 > 0 {
            analysis.counts.insert("compactions", self.counts.2);
        }
        let client = match &self.version {
            Some(v) => format!("Claude Code {v}"),
            None => "Claude Code".to_owned(),
        };
        let mut facts = TranscriptFacts {
            client: client.clone(),
            ..TranscriptFacts::default()
        };
        let mut session = Session {
            id: session_id.clone(),
            version: self.version.clone(),
            ..Session::default()
        };
        let on_path: HashSet<usize> = path.iter().copied().collect();
        let mut tools: HashMap<String, (usize, usize)> = HashMap::new();
        let mut last_message_key: Option<String> = None;
        let mut used_ids: HashSet<String> = HashSet::new();
        for &i in &path {
            let rec = &self.records[i];
            if let Some((code, status)) = &rec.api_error {
                let text = rec.text.as_ref();
                let mut info = text
                    .and_then(|(t, s)| crate::formats::agent_log::replay::api_error(t, *s))
                    .unwrap_or_default();
                if info.message.is_empty() {
                    info.message = text.map(|(t, _)| t.clone()).unwrap_or_default();
                    info.message_span = text.and_then(|(_, s)| *s);
                }
                info.data = json!({ "error": code, "apiErrorStatus": status, "synthetic": true });
                if info.retryable.is_none() {
                    info.retryable = status.map(|c| c == 429 || c >= 500);
                }
                analysis.events.push(Event {
                    seq: rec.seq,
                    span: info.message_span.unwrap_or(rec.span),
                    session: Some(session_id.clone()),
                    kind: EventKind::SessionError(Box::new(info)),
                });
                last_message_key = None;
                continue;
            }
            // `isMeta` user records are hidden from the user, not from the model.
            if rec.ty == "user" || (rec.ty == "assistant" && !rec.synthetic) {
                push_history(&mut facts.history, rec);
            }
            if !rec.converses() || rec.synthetic {
                continue;
            }
            let key = match (&rec.ty[..], &rec.message_id) {
                ("assistant", Some(id)) => format!("a:{id}"),
                _ => format!("r:{}", rec.uuid),
            };
            let mi = if last_message_key.as_deref() == Some(key.as_str()) {
                session.messages.len() - 1
            } else {
                let base = match (&rec.ty[..], &rec.message_id) {
                    ("assistant", Some(id)) => id.clone(),
                    _ => rec.uuid.clone(),
                };
                let id = if used_ids.insert(base.clone()) {
                    base
                } else {
                    format!("{base}@{}", rec.uuid)
                };
                used_ids.insert(id.clone());
                session.messages.push(Message {
                    id,
                    span: Some(rec.span),
                    ..Message::default()
                });
                session.messages.len() - 1
            };
            last_message_key = Some(key);
            for (k, block) in rec.blocks.iter().enumerate() {
                let message_id = session.messages[mi].id.clone();
                let message = &mut session.messages[mi];
                match block {
                    Block::Text { span, text } if rec.ty == "assistant" => {
                        let part = Part::from_value(&json!({
                            "id": format!("{}:{k}", rec.uuid), "sessionID": session_id,
                            "messageID": message_id, "type": "text", "text": text,
                        }));
                        message.parts.push(PartRecord {
                            part,
                            history: vec![Observation::at(rec.seq, span.unwrap_or(rec.span), None)],
                        });
                    }
                    Block::ToolUse { id, name, span } => {
                        let part = tool_part(id, name, &session_id, &message_id, "running", None);
                        tools.insert(id.clone(), (mi, message.parts.len()));
                        message.parts.push(PartRecord {
                            part,
                            history: vec![Observation::at(rec.seq, *span, Some("running"))],
                        });
                    }
                    Block::ToolResult {
                        id, error, span, ..
                    } => {
                        let Some(&(tmi, tpi)) = tools.get(id) else {
                            continue;
                        };
                        let record = &mut session.messages[tmi].parts[tpi];
                        let (name, mid) = match record.part.tool() {
                            Some(t) => (t.tool.clone(), record.part.message_id.clone()),
                            None => continue,
                        };
                        let status = if *error { "error" } else { "completed" };
                        record.part = tool_part(id, &name, &session_id, &mid, status, None);
                        record
                            .history
                            .push(Observation::at(rec.seq, *span, Some(status)));
                    }
                    _ => {}
                }
            }
        }
        // Tool calls still open at the end of the active history.
        let open_at_end = session
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .any(|p| p.part.tool().is_some_and(|t| !t.state.is_terminal()));
        if open_at_end {
            let answers =
                crate::formats::claude_code::request::answers_on_resume(self.version.as_deref());
            facts.open_call_notes.push(if answers {
                format!(
                    "written by {client}; on resume, Claude Code 2.1.281 and later answer the unanswered `tool_use` with an interrupted `tool_result` and a synthetic reply, and send the call answered"
                )
            } else {
                format!(
                    "written by {client}; on resume, Claude Code up to 2.1.280 branches the next turn from the record before the unanswered `tool_use` and leaves the call out of the request it rebuilds; clients that send it get `tool_use ids were found without tool_result blocks immediately after` (a 400)"
                )
            });
        }
        self.unanswered(&path, &session_id, &client, &mut facts);
        self.stranded(&path, &on_path, &session_id, &client, &mut facts);
        self.off_history(&path, &on_path, &mut facts);
        self.lost_summary(&path, &mut facts);
        self.tree(&path, &on_path, &session_id, &client, &mut facts);
        let mut size = self.size.clone();
        for &i in &path {
            size.image_bytes_sent += self.records[i].image_bytes;
            size.big_images
                .extend(self.records[i].big_images.iter().copied());
        }
        facts.size = size;
        facts.file_calls = self
            .records
            .iter()
            .flat_map(|r| &r.blocks)
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        session
            .messages
            .retain(|m| !m.parts.is_empty() || m.span.is_some());
        analysis.sessions.push(session);
        facts.thinking = self.thinking_responses();
        analysis.transcript = Some(Box::new(facts));
        analysis
    }

    /// A user turn with no reply: the last conversing record of the active history is the
    /// user's and no `last-prompt` (written when a turn ends) follows it; or a prompt followed,
    /// on the active history, by the client's own synthetic reply or the next prompt (a resume).
    fn unanswered(&self, path: &[usize], session: &str, client: &str, facts: &mut TranscriptFacts) {
        let talk: Vec<&Rec> = path
            .iter()
            .map(|&i| &self.records[i])
            .filter(|r| r.converses() || r.api_error.is_some())
            .collect();
        // The hidden prompts of the active history (`isMeta` user records) by file order, each
        // with its place on the history: those between a prompt and its synthetic reply are
        // found by a search, not by walking the history per resumed turn.
        let mut metas: Vec<(Seq, usize, &Rec)> = path
            .iter()
            .enumerate()
            .map(|(k, &i)| (self.records[i].seq, k, &self.records[i]))
            .filter(|(_, _, r)| r.meta && r.ty == "user")
            .collect();
        metas.sort_by_key(|&(seq, k, _)| (seq, k));
        for (n, rec) in talk.iter().enumerate() {
            if !(rec.is_prompt() || rec.has_results()) {
                continue;
            }
            // Claude Code 2.0.x warms its caches at start with side chains whose prompt is
            // "Warmup"; the session does not wait for their replies, and a run that ends first
            // leaves them unanswered on disk.
            if rec.sidechain && rec.text.as_ref().is_some_and(|(t, _)| t == "Warmup") {
                continue;
            }
            let next = talk.get(n + 1);
            let resumed = match next {
                None => {
                    // A `last-prompt` after the prompt ends its turn, unless it only follows the
                    // request the prompt led to (2.1.3xx writes one when it sends a request):
                    // then the reply never came.
                    let sent_unanswered = self.last_api_request_seq.is_some_and(|r| {
                        r > rec.seq && self.last_prompt_seq.is_some_and(|l| l > r)
                    });
                    if self.last_prompt_seq.is_some_and(|s| s > rec.seq) && !sent_unanswered {
                        continue;
                    }
                    None
                }
                // The client closed a call it found unanswered with its own interrupted result
                // and answered that itself: nothing was lost, the turn is whole.
                Some(next) if next.synthetic && rec.interrupted_result => continue,
                Some(next) if next.synthetic && next.api_error.is_none() => Some((
                    next.span.head(),
                    format!(
                        "on resume {client} wrote this reply itself (`<synthetic>`{}), so that the history alternates",
                        next.text
                            .as_ref()
                            .map(|(t, _)| format!(": \"{}\"", crate::session::first_line(t, 60)))
                            .unwrap_or_default()
                    ),
                )),
                Some(next) if next.is_prompt() => Some((
                    next.span.head(),
                    "the session resumed with the next prompt right after it".to_owned(),
                )),
                Some(_) => continue,
            };
            // The prompt Claude Code adds on resume before its synthetic reply (`isMeta`: hidden
            // from the user, sent to the model).
            let between = |next: &Rec| {
                let from = metas.partition_point(|m| m.0 <= rec.seq);
                let to = metas.partition_point(|m| m.0 < next.seq).max(from);
                let mut found = metas[from..to].to_vec();
                found.sort_by_key(|m| m.1);
                found
            };
            let inserted: Vec<(Span, String)> = match (next, &resumed) {
                (Some(next), Some(_)) if next.synthetic => between(next)
                    .into_iter()
                    .map(|(_, _, r)| {
                        (
                            r.text.as_ref().and_then(|(_, s)| *s).unwrap_or(r.span.head()),
                            "on resume the client added this prompt itself (`isMeta`: hidden from the user, sent to the model)".to_owned(),
                        )
                    })
                    .collect(),
                _ => Vec::new(),
            };
            // Tool results that are all the client's interruption marker end the turn on
            // purpose (the user stopped the tool, or `rewind repair` answered a call the
            // client was killed in): resuming goes on from there.
            let interrupted = rec.has_results()
                && rec.blocks.iter().all(|b| match b {
                    Block::ToolResult {
                        error, interrupted, ..
                    } => *error && *interrupted,
                    _ => true,
                });
            if interrupted && resumed.is_none() {
                continue;
            }
            let first_result = rec.blocks.iter().find_map(|b| match b {
                Block::ToolResult { span, .. } => Some(*span),
                _ => None,
            });
            facts.unanswered.push(UnansweredTurn {
                session: session.to_owned(),
                message_id: rec.uuid.clone(),
                span: first_result
                    .or_else(|| rec.text.as_ref().and_then(|(_, s)| *s))
                    .unwrap_or(rec.span),
                resumed,
                results: first_result.is_some(),
                inserted,
                notes: vec![format!(
                    "written by {client}; Claude Code writes a reply's blocks only once each is complete (observed with 2.1.197), so a reply cut off mid-stream leaves nothing"
                )],
            });
        }
    }
}

/// A hash identifying a block's content.
fn hash_of(value: impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(value)
}

/// A `thinking` (`{thinking, signature}`) or `redacted_thinking` (`{data}`) block.
fn thinking_block(
    ty: &str,
    block: Option<&serde_json::Map<String, Value>>,
    span: Span,
) -> ThinkingBlock {
    let text = |key: &str| block.and_then(|o| str_of(o, key)).unwrap_or_default();
    let redacted = ty == "redacted_thinking";
    let (signature, body) = if redacted {
        (text("data"), "")
    } else {
        (text("signature"), text("thinking"))
    };
    ThinkingBlock {
        redacted,
        signed: !signature.is_empty(),
        blank: !redacted && !signature.is_empty() && body.is_empty(),
        key: hash_of((ty, signature, body)),
        span,
    }
}

/// Adds a record to the stored history: blocks of one API message (same `message.id`, in a
/// row) are one message.
fn push_history(history: &mut Vec<ModelMessage>, rec: &Rec) {
    let role = if rec.ty == "assistant" {
        Role::Assistant
    } else {
        Role::User
    };
    let mut blocks: Vec<RBlock> = rec
        .blocks
        .iter()
        .map(|b| {
            let (kind, span) = match b {
                Block::Text { span, .. } => (BlockKind::Text, *span),
                Block::ToolUse { id, name, span } => (
                    BlockKind::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                    },
                    Some(*span),
                ),
                Block::ToolResult {
                    id, error, span, ..
                } => (
                    BlockKind::ToolResult {
                        id: id.clone(),
                        is_error: *error,
                    },
                    Some(*span),
                ),
                Block::Thinking(t) => (BlockKind::Reasoning, Some(t.span)),
                Block::Other => (BlockKind::Other("other".into()), None),
            };
            RBlock {
                kind,
                span,
                part_id: Some(rec.uuid.clone()),
            }
        })
        .collect();
    if rec.blocks.is_empty() && rec.text.is_some() {
        blocks.push(RBlock {
            kind: BlockKind::Text,
            span: rec.text.as_ref().and_then(|(_, s)| *s),
            part_id: Some(rec.uuid.clone()),
        });
    }
    if let (Some(last), Some(id)) = (history.last_mut(), rec.message_id.as_ref())
        && role == Role::Assistant
        && last.role == Role::Assistant
        && last.message_id.as_ref() == Some(id)
    {
        last.content.extend(blocks);
        return;
    }
    history.push(ModelMessage {
        role,
        content: blocks,
        span: Some(rec.span),
        message_id: Some(rec.message_id.clone().unwrap_or_else(|| rec.uuid.clone())),
    });
}

/// A tool part in OpenCode's shape, which the checks read.
pub(crate) fn tool_part(
    id: &str,
    name: &str,
    session: &str,
    message: &str,
    status: &str,
    error: Option<&str>,
) -> Part {
    let state = match status {
        "completed" => {
            json!({"status": "completed", "input": {}, "output": "", "title": "", "metadata": {}, "time": {"start": 0, "end": 0}})
        }
        "error" => {
            json!({"status": "error", "input": {}, "error": error.unwrap_or("tool_result is_error"), "time": {"start": 0, "end": 0}})
        }
        _ => json!({"status": "running", "input": {}, "time": {"start": 0}}),
    };
    Part::from_value(&json!({
        "id": id, "sessionID": session, "messageID": message,
        "type": "tool", "callID": id, "tool": name, "state": state,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::TreeDamageKind;

    fn run(text: &str) -> Analysis {
        replay(text.as_bytes(), FileId(0))
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::ClaudeTranscript))
    }

    const HEAD: &str = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"ok"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s","message":{"id":"msg_1","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}
"#;

    #[test]
    fn merges_blocks_of_one_message_and_leaves_an_orphan_open() {
        let a = run(HEAD);
        let s = &a.sessions[0];
        assert_eq!(s.messages.len(), 2);
        assert_eq!(s.messages[1].id, "msg_1");
        assert_eq!(s.messages[1].parts.len(), 2);
        let tool = s.messages[1].parts[1]
            .part
            .tool()
            .map(|t| t.state.status().to_owned());
        assert_eq!(tool.as_deref(), Some("running"));
        let facts = a.transcript.as_deref().map(|f| f.open_call_notes.len());
        assert_eq!(facts, Some(1));
    }

    #[test]
    fn a_resumed_branch_strands_the_orphan() {
        let text = format!(
            "{HEAD}{}\n{}\n{}\n",
            r#"{"type":"user","uuid":"u2","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":"go on"}}"#,
            r#"{"type":"assistant","uuid":"a3","parentUuid":"u2","sessionId":"s","message":{"id":"msg_2","model":"m","content":[{"type":"text","text":"ok"}]}}"#,
            r#"{"type":"last-prompt","leafUuid":"a3","sessionId":"s"}"#
        );
        let a = run(&text);
        let f = a.transcript.as_deref();
        assert_eq!(f.map(|f| f.stranded_calls.len()), Some(1));
        assert_eq!(f.map(|f| f.open_call_notes.len()), Some(0));
        assert!(a.parts().all(|(_, _, p)| p.part.tool().is_none()));
        assert_eq!(f.map(|f| f.unanswered.len()), Some(0));
    }

    #[test]
    fn a_second_result_on_another_branch_is_not_stitched_back() {
        let text = format!(
            "{HEAD}{}\n{}\n{}\n",
            r#"{"type":"user","uuid":"r_old","parentUuid":"a2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"old"}]}}"#,
            r#"{"type":"user","uuid":"r_new","parentUuid":"a2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"new"}]}}"#,
            r#"{"type":"assistant","uuid":"a3","parentUuid":"r_new","sessionId":"s","message":{"id":"msg_2","model":"m","content":[{"type":"text","text":"ok"}]}}"#
        );
        let a = run(&text);
        let results = a
            .transcript
            .as_deref()
            .map(|f| {
                f.history
                    .iter()
                    .flat_map(|m| &m.content)
                    .filter(|b| b.tool_result_id().is_some())
                    .count()
            })
            .unwrap_or_default();
        assert_eq!(results, 1);
    }

    #[test]
    fn a_cycle_and_a_duplicate_uuid_are_tree_damage() {
        let text = r#"{"type":"user","uuid":"u1","parentUuid":"a1","sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"ok"}]}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"ok"}]}}
"#;
        let a = run(text);
        let kinds: Vec<TreeDamageKind> = a
            .transcript
            .as_deref()
            .map(|f| f.tree.iter().map(|d| d.kind.clone()).collect())
            .unwrap_or_default();
        assert!(kinds.contains(&TreeDamageKind::Cycle), "{kinds:?}");
        assert!(kinds.contains(&TreeDamageKind::DuplicateUuid), "{kinds:?}");
    }

    #[test]
    fn a_user_interrupt_is_not_an_unanswered_turn() {
        let text = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}
"#;
        let a = run(text);
        assert_eq!(a.transcript.as_deref().map(|f| f.unanswered.len()), Some(0));
    }

    #[test]
    fn a_torn_tail_is_undecodable_and_a_dangling_prompt_unanswered() {
        let text = r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","mess"#;
        let a = run(text);
        assert_eq!(a.undecodable.len(), 1);
        assert!(a.undecodable[0].truncated);
        assert_eq!(a.transcript.as_deref().map(|f| f.unanswered.len()), Some(1));
    }

    impl Reader {
        /// The stitching as it was: a search of the path and a shift of it per stitched record.
        fn stitch_parallel_by_insert(&self, mut path: Vec<usize>) -> Vec<usize> {
            let mut on: HashSet<usize> = path.iter().copied().collect();
            let mut calls: HashSet<&str> = HashSet::new();
            let mut messages: HashSet<&str> = HashSet::new();
            for &i in &path {
                let rec = &self.records[i];
                calls.extend(rec.call_ids());
                if rec.ty == "assistant"
                    && let Some(m) = &rec.message_id
                {
                    messages.insert(m);
                }
            }
            let answered = self.answered();
            // Results already on the path: a stitched record only fills in a missing one.
            let mut results_on: HashSet<&str> = path
                .iter()
                .flat_map(|&i| self.records[i].result_ids())
                .collect();
            for (i, rec) in self.records.iter().enumerate() {
                if on.contains(&i) || rec.meta {
                    continue;
                }
                let Some(parent) = self.parent_of(rec) else {
                    continue;
                };
                if !on.contains(&parent) {
                    continue;
                }
                // A sibling call nobody answered is what a kill leaves; the client branches past
                // it on resume rather than stitching it back.
                let own_calls: Vec<&str> = rec.call_ids().collect();
                let sibling = rec.ty == "assistant"
                    && rec
                        .message_id
                        .as_deref()
                        .is_some_and(|m| messages.contains(m))
                    && !own_calls.is_empty()
                    && own_calls.iter().all(|id| answered.contains(id));
                let results: Vec<&str> = rec.result_ids().collect();
                let answers = rec.ty == "user"
                    && !results.is_empty()
                    && results
                        .iter()
                        .all(|id| calls.contains(id) && !results_on.contains(id));
                if !(sibling || answers) {
                    continue;
                }
                let Some(mut at) = path.iter().position(|&k| k == parent) else {
                    continue;
                };
                if sibling {
                    // After the last record of the same message.
                    while path.get(at + 1).is_some_and(|&k| {
                        self.records[k].ty == "assistant"
                            && self.records[k].message_id == rec.message_id
                    }) {
                        at += 1;
                    }
                } else {
                    // After the calls' message and the results already there.
                    while path.get(at + 1).is_some_and(|&k| {
                        let r = &self.records[k];
                        (r.ty == "assistant" && r.message_id == self.records[parent].message_id)
                            || r.has_results()
                    }) {
                        at += 1;
                    }
                }
                path.insert(at + 1, i);
                on.insert(i);
                results_on.extend(results.iter().copied());
                calls.extend(rec.call_ids());
            }
            path
        }
    }

    #[test]
    fn stitching_through_the_linked_path_keeps_the_order_of_inserting_into_it() {
        // Turns of one to three parallel calls, their results in either order, a dangling call
        // (not stitched back), and a second result on another branch.
        let mut lines = Vec::new();
        let mut rec = |t: &str, u: &str, p: Option<&str>, content: Value, mid: Option<&str>| {
            let message = match mid {
                Some(m) => json!({"id": m, "model": "m", "content": content}),
                None => json!({"role": t, "content": content}),
            };
            lines.push(
                json!({"type": t, "uuid": u, "parentUuid": p, "sessionId": "s",
                       "message": message})
                .to_string(),
            );
        };
        let mut prev: Option<String> = None;
        for i in 0..30 {
            let (calls, reversed) = (1 + i % 3, i % 2 == 1);
            rec("user", &format!("p{i}"), prev.as_deref(), json!("go"), None);
            let mut parent = format!("p{i}");
            for c in 0..calls {
                let u = format!("a{i}_{c}");
                let call = json!([{"type": "tool_use", "id": format!("t{i}_{c}"), "name": "R",
                                   "input": {}}]);
                rec("assistant", &u, Some(&parent), call, Some(&format!("m{i}")));
                parent = u;
            }
            let order: Vec<usize> = if reversed {
                (0..calls).rev().collect()
            } else {
                (0..calls).collect()
            };
            let mut last = String::new();
            for c in order {
                last = format!("r{i}_{c}");
                let result = json!([{"type": "tool_result", "tool_use_id": format!("t{i}_{c}"),
                                     "content": "ok"}]);
                rec("user", &last, Some(&format!("a{i}_{c}")), result, None);
            }
            if i % 5 == 0 {
                let call = json!([{"type": "tool_use", "id": format!("x{i}"), "name": "R",
                                   "input": {}}]);
                rec(
                    "assistant",
                    &format!("x{i}"),
                    Some(&format!("p{i}")),
                    call,
                    Some("mx"),
                );
            }
            if i % 7 == 0 {
                let result = json!([{"type": "tool_result", "tool_use_id": format!("t{i}_0"),
                                     "content": "again"}]);
                rec(
                    "user",
                    &format!("q{i}"),
                    Some(&format!("a{i}_0")),
                    result,
                    None,
                );
            }
            let done = format!("c{i}");
            rec(
                "assistant",
                &done,
                Some(&last),
                json!([{"type": "text", "text": "done"}]),
                Some(&format!("n{i}")),
            );
            prev = Some(done);
        }
        let text = lines.join("\n") + "\n";
        let mut r = Reader::default();
        let read = claude_transcript::read(text.as_bytes(), FileId(0), &mut |line| r.line(line));
        assert!(read.is_ok());
        let mut path = Vec::new();
        let mut at = r.leaf();
        while let Some(i) = at {
            path.push(i);
            at = r.parent_of(&r.records[i]);
        }
        path.reverse();
        let stitched = r.stitch_parallel(path.clone());
        assert!(
            stitched.len() > path.len() + 30,
            "{} of {}",
            stitched.len(),
            path.len()
        );
        assert_eq!(stitched, r.stitch_parallel_by_insert(path));
    }
}
