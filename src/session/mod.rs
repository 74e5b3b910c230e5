//! The session model: what `replay` produces and `checks` read.
//!
//! An [`Analysis`] is one unit of diagnosis — a log file, a replayed capture, or one session of a
//! database. It holds the sessions rebuilt from the input (messages and their parts, each part with
//! the history of writes that produced it) and a timeline of [`Event`]s (errors, aborts, cancels).
//! Everything keeps its [`Span`]; nothing keeps the input's text.

pub mod damaged;
pub mod forgetting;
pub mod stored;
pub mod thread_index;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::core::Format;
use crate::model::schema::SchemaIssue;
use crate::model::{MessageInfo, Part};
use crate::request::ModelRequest;
use crate::source::{FileId, Span};

/// How OpenCode resolves a folder on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The project id (`global` outside git).
    pub id: String,
    /// The folder holding `.git` (the main worktree for a linked one); `/` for `global`.
    pub worktree: std::path::PathBuf,
}

/// Folders resolved on this machine, by the text the store holds them as: what a store's project
/// rows and sessions name, read from the disk and git by the format so that the checks need not.
#[derive(Clone, Debug, Default)]
pub struct FoldersHere(pub std::collections::HashMap<String, Option<Resolved>>);

impl FoldersHere {
    /// How OpenCode resolves `folder` here; `None` when it was not resolved (not here, not
    /// absolute, or its repository's id cannot be read).
    pub fn resolve(&self, folder: &str) -> Option<Resolved> {
        self.0.get(folder).cloned().flatten()
    }
}

/// A folder as OpenCode compares folders: trimmed, `/` separators, no trailing slash, an upper
/// case drive letter.
pub fn canonical_folder(path: &str) -> String {
    let mut p = path.trim().replace('\\', "/");
    while p.len() > 1 && p.ends_with('/') && !p.ends_with(":/") {
        p.pop();
    }
    if let Some(letter) = drive_letter(&p) {
        p.replace_range(..1, &letter.to_ascii_uppercase().to_string());
    }
    p
}

/// The drive letter of a Windows path (`C:/…`, `c:\\…`).
pub fn drive_letter(path: &str) -> Option<char> {
    let mut chars = path.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    (chars.next() == Some(':')).then_some(letter)
}

/// Position of a record in its input: orders parts and events against each other.
pub type Seq = u64;

/// One unit of diagnosis.
#[derive(Debug)]
pub struct Analysis {
    pub file: FileId,
    pub format: Format,
    pub sessions: Vec<Session>,
    /// Timeline of everything that is not a part write, in input order.
    pub events: Vec<Event>,
    /// Payloads that do not satisfy their schema.
    pub schema_issues: Vec<PayloadIssues>,
    /// Records that could not be decoded at all.
    pub undecodable: Vec<Undecodable>,
    /// Requests as the model receives them: recorded request bodies, or requests rebuilt from
    /// the sessions (see `reconstruct`).
    pub requests: Vec<ModelRequest>,
    /// Counters shown by `-v` and in JSON output ("json objects", "rejoined splits", …).
    pub counts: BTreeMap<&'static str, u64>,
    /// Records the format's reader read but does not model, by their type as written
    /// (`file-history-snapshot`): tolerated and shown, never a finding.
    pub unmodelled: BTreeMap<String, u64>,
    /// For a replayed stream capture: the stream, and how the processor ended it.
    pub stream: Option<Box<StreamFacts>>,
    /// Streams found inside this input (an agent log's verbose HTTP `bodyPreview`s), to replay as
    /// units of their own.
    pub embedded_streams: Vec<EmbeddedStream>,
    /// For a client's own transcript (Claude Code, Codex): what it says beyond its messages.
    pub transcript: Option<Box<TranscriptFacts>>,
    /// For a session of an OpenCode database: every `project` row of that database (shared by
    /// its sessions), to tell where OpenCode lists the session. `None` for other inputs and for
    /// a database without a `project` table.
    pub projects: Option<std::sync::Arc<[Project]>>,
    /// With `projects`: the folders of those rows and of this unit's sessions, resolved on this
    /// machine as OpenCode resolves them (read by the OpenCode format, for `session-hidden`).
    pub here: FoldersHere,
    /// For a legacy storage folder: the files OpenCode cannot parse, each with a span on the
    /// byte where its damage shows.
    pub damaged_files: Vec<DamagedStoreFile>,
    /// For a Codex home's thread index: how it disagrees with the rollouts.
    pub thread_index: Option<Box<thread_index::ThreadIndex>>,
    /// For an agent log: how its last run ended (`None`: no record of an agent).
    pub tail: Option<RunTail>,
    /// For an agent log: what a lenient reading got out of its undecodable records, one for
    /// each (by span); other inputs have none.
    pub salvaged: Vec<Salvage>,
}

/// How an agent log's last run ended, as the replay saw it.
#[derive(Debug, Clone)]
pub struct RunTail {
    /// The agent's last record.
    pub last_record: Span,
    /// The agent had work in hand at that record: a prompt, a step, a tool or a provider's
    /// set-up begun since its loop last exited, went idle or failed.
    pub busy: bool,
    /// Said after that record: the run was stopped from outside.
    pub stop: Option<RunStop>,
    /// From the wrapper's timestamp of the agent's last record to the log's last timestamp, in
    /// ms (`None`: the log has no timestamped prefixes).
    pub quiet_ms: Option<u64>,
}

/// A wrapper's or terminal's word that a run was stopped: [`RunTail::stop`].
#[derive(Debug, Clone)]
pub struct RunStop {
    pub span: Span,
    pub words: String,
    /// A timeout (a CI job out of time), not an interrupt or a kill.
    pub timeout: bool,
}

/// A file of a legacy storage folder that OpenCode cannot parse.
#[derive(Debug, Clone)]
pub struct DamagedStoreFile {
    pub span: Span,
    pub file: damaged::DamagedFile,
}

/// What a client's transcript says beyond the messages of its active history.
#[derive(Debug, Clone, Default)]
pub struct TranscriptFacts {
    /// The client and version that wrote it, in words: `Claude Code 2.1.197`.
    pub client: String,
    /// The active history as stored, one entry per stored message (Claude Code's records of one
    /// API message merged), in order: what the client rebuilds its next request from. Text is
    /// not kept, only roles, block kinds and ids.
    pub history: Vec<crate::request::ModelMessage>,
    /// Notes for a tool call left open at the end of the active history: what the client does
    /// with it when the session is resumed.
    pub open_call_notes: Vec<String>,
    /// What to do about such a call, when the client's case differs from the usual one (the
    /// client killed while the tool ran).
    pub open_call_help: Option<String>,
    /// User turns that never got a reply.
    pub unanswered: Vec<UnansweredTurn>,
    /// Tool calls without a result that the active history has moved past (a dead-end branch, a
    /// turn that was resumed): broken on disk, handled by the client when it rebuilds a request.
    pub stranded_calls: Vec<StrandedCall>,
    /// Tool calls written in the file but not part of the history the client rebuilds (before a
    /// compaction, on another branch): their id, where the id is, and why they are out, in words.
    pub off_history_calls: Vec<(String, Span, String)>,
    /// Damage to the tree of records the file is (Claude Code: `parentUuid` links).
    pub tree: Vec<TreeDamage>,
    /// Breaks of a rollout's record order (Codex: the `session_meta` header, `ordinal`s): where,
    /// what, in words, and the last numbered record before it.
    pub order: Vec<(Span, String, Option<Span>)>,
    /// Every tool call id written in the file, on any branch.
    pub file_calls: std::collections::HashSet<String>,
    /// Subagents stored beside the transcript (Claude Code's `subagents/agent-*.meta.json`).
    pub subagents: Vec<Subagent>,
    /// The provider responses whose stored blocks include thinking (Claude Code: records of one
    /// `message.id`), with every block the file holds for them: what the provider's rule on the
    /// latest assistant message compares the rebuilt request with.
    pub thinking: Vec<ThinkingResponse>,
    /// How big the file and its parts are.
    pub size: TranscriptSize,
    /// A compaction the history the client rebuilds starts from, whose summary is missing or
    /// empty while the messages before it are left out of the request.
    pub lost_summaries: Vec<LostSummary>,
    /// Why the client's own list of sessions to resume would not show this one (Gemini CLI's
    /// picker), read by `session-hidden`.
    pub unlisted: Vec<Unlisted>,
}

/// A reason a client's resume picker would not list a transcript (see
/// [`TranscriptFacts::unlisted`]).
#[derive(Debug, Clone)]
pub struct Unlisted {
    /// Where the reason is (the record, or the file's first bytes).
    pub span: Span,
    /// Why, in words.
    pub why: String,
    /// What the client does about it, in words.
    pub notes: Vec<String>,
    /// Something is lost (a warning); else the picker only leaves out a file with nothing to
    /// resume (information).
    pub lost: bool,
}

/// A compaction without a summary (see [`TranscriptFacts::lost_summaries`]).
#[derive(Debug, Clone)]
pub struct LostSummary {
    /// The record that starts the compacted history (Claude Code's `compact_boundary`, Codex's
    /// `compacted`), or its empty summary.
    pub span: Span,
    /// What is wrong, in words: "no summary follows it", "its summary is empty".
    pub what: String,
    /// The label on `span`.
    pub label: &'static str,
    /// Records of messages written before it, which the request no longer carries.
    pub dropped: usize,
}

/// Anthropic rejects an image whose base64 data is longer than this (5 MiB of base64 text; the
/// same limit Claude Code resizes images to stay under).
pub const IMAGE_MAX_BASE64: u64 = 5 * 1024 * 1024;

/// Sizes of a transcript.
#[derive(Debug, Clone, Default)]
pub struct TranscriptSize {
    /// Bytes read (up to the end of the last line).
    pub bytes: u64,
    /// The longest line: its length and where it is.
    pub largest_line: Option<(u64, Span)>,
    /// Inline base64 images: how many, and their total length in the file.
    pub images: u64,
    pub image_bytes: u64,
    /// Their total length on the history the client sends (Claude Code's active history).
    pub image_bytes_sent: u64,
    /// Images longer than [`IMAGE_MAX_BASE64`]: length and where the data is.
    pub big_images: Vec<(u64, Span)>,
}

impl TranscriptSize {
    /// Counts one line.
    pub fn line(&mut self, span: Span) {
        self.bytes = self.bytes.max(span.offset + span.len);
        if self.largest_line.is_none_or(|(n, _)| span.len > n) {
            self.largest_line = Some((span.len, span));
        }
    }
}

/// A subagent stored beside its parent's transcript.
#[derive(Debug, Clone)]
pub struct Subagent {
    pub agent_id: String,
    /// The parent's call it names (`toolUseId`), and where the value is.
    pub tool_use_id: Option<(String, Span)>,
    /// The meta file's start, when it names no call.
    pub span: Span,
    /// Its own transcript is there.
    pub transcript: bool,
}

/// What is wrong with one place of a transcript's record tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeDamageKind {
    /// A `parentUuid` names no record of the file; `live` when the active history stops there.
    MissingParent { live: bool },
    /// Following `parentUuid` comes back to a record already walked.
    Cycle,
    /// Two records share a `uuid`.
    DuplicateUuid,
    /// A branch the active history leaves, as the client leaves one when a turn is resumed or
    /// rewound.
    Abandoned,
}

/// A stored `thinking` or `redacted_thinking` block, as far as the provider's rule on them needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThinkingBlock {
    pub redacted: bool,
    /// It carries a non-empty `signature` (a redacted block: non-empty `data`): the provider
    /// checks it when the block is sent back in the latest assistant message.
    pub signed: bool,
    /// A signed `thinking` block whose text is empty: the signature was made over another text.
    pub blank: bool,
    /// Identifies the block's content (its signature and text), to tell copies of one block.
    pub key: u64,
    pub span: Span,
}

/// One provider response whose stored blocks include thinking.
#[derive(Debug, Clone, Default)]
pub struct ThinkingResponse {
    /// The response's id (Claude Code: `message.id`).
    pub message_id: String,
    /// Every block the file stores for it, on any branch, in file order, each once (a block
    /// copied into another record counts once).
    pub blocks: Vec<StoredBlock>,
}

/// One stored block of a [`ThinkingResponse`].
#[derive(Debug, Clone)]
pub struct StoredBlock {
    /// The record holding it (Claude Code: its `uuid`): the `part_id` of a request block
    /// rebuilt from it.
    pub record: String,
    /// Other records holding a copy of it.
    pub copies: Vec<String>,
    pub kind: crate::request::BlockKind,
    pub thinking: Option<ThinkingBlock>,
    pub span: Option<Span>,
}

/// One place where a transcript's tree is damaged or branches off.
#[derive(Debug, Clone)]
pub struct TreeDamage {
    pub kind: TreeDamageKind,
    pub session: String,
    /// The record (or its `parentUuid` value) where it is.
    pub span: Span,
    pub message: String,
    pub related: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

/// A user turn that got no reply.
#[derive(Debug, Clone)]
pub struct UnansweredTurn {
    pub session: String,
    pub message_id: String,
    /// The user's record.
    pub span: Span,
    /// The session went on with a later turn (a resume): where, and what the client did about it.
    pub resumed: Option<(Span, String)>,
    /// What waits for the reply is tool results, not the user's prompt: the model was to answer
    /// them.
    pub results: bool,
    /// Records the client inserted itself around it (Claude Code's `isMeta` prompt on resume),
    /// with words.
    pub inserted: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

/// A tool call with no result, left behind by the active history.
#[derive(Debug, Clone)]
pub struct StrandedCall {
    pub session: String,
    pub call_id: String,
    pub tool: String,
    /// The call's id in the record.
    pub span: Span,
    /// Why the active history no longer reaches it, in words.
    pub why: String,
    pub related: Vec<(Span, String)>,
    pub notes: Vec<String>,
}

/// A project OpenCode knows (a `project` row): the id it resolves a folder to (the git root
/// commit since 1.2.21, `global` outside git) and the folder it claims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Project {
    pub id: String,
    pub worktree: Option<String>,
    pub vcs: Option<String>,
    /// Last update (epoch milliseconds): OpenCode touches the project it opens.
    pub time_updated: Option<i64>,
    /// Its other folders: git worktrees (`sandboxes`) and `project_directory` rows.
    pub folders: Vec<String>,
}

/// A stream body found inside another input.
#[derive(Debug, Clone)]
pub struct EmbeddedStream {
    /// What it is: `HTTP response body (stream) of call 3`.
    pub label: String,
    /// The decoded body (truncation marker removed).
    pub text: String,
    pub locator: crate::json::locator::Locator,
    /// The logger cut the body.
    pub cut: Option<BodyCut>,
    /// The request URL, when the log gives it.
    pub url: Option<String>,
}

impl Analysis {
    pub fn new(file: FileId, format: Format) -> Self {
        Self {
            file,
            format,
            sessions: Vec::new(),
            events: Vec::new(),
            schema_issues: Vec::new(),
            undecodable: Vec::new(),
            requests: Vec::new(),
            counts: BTreeMap::new(),
            unmodelled: BTreeMap::new(),
            stream: None,
            embedded_streams: Vec::new(),
            transcript: None,
            projects: None,
            here: FoldersHere::default(),
            damaged_files: Vec::new(),
            thread_index: None,
            tail: None,
            salvaged: Vec::new(),
        }
    }

    pub fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    /// The sessions by id, for checks that look many up (the first of sessions sharing an id,
    /// as [`Analysis::session`] finds it).
    pub fn sessions_by_id(&self) -> crate::FastMap<&str, &Session> {
        crate::first_of(self.sessions.iter().map(|s| (s.id.as_str(), s)))
    }

    /// Events after `seq`, in order.
    pub fn events_after(&self, seq: Seq) -> impl Iterator<Item = &Event> {
        let start = self.events.partition_point(|e| e.seq <= seq);
        self.events[start..].iter()
    }

    /// Every part of every message of every session.
    pub fn parts(&self) -> impl Iterator<Item = (&Session, &Message, &PartRecord)> {
        self.sessions.iter().flat_map(|s| {
            s.messages
                .iter()
                .flat_map(move |m| m.parts.iter().map(move |p| (s, m, p)))
        })
    }

    /// The last record position at which a session showed part activity.
    pub fn last_activity(&self, session: &str) -> Option<Seq> {
        self.session(session)?
            .messages
            .iter()
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| p.history.last().map(|o| o.seq))
            .max()
    }
}

impl Session {
    /// Whether the user went on after `message`: a later user message of the session (its
    /// messages are in id order, which is time order). In a store, a turn after a part left open
    /// means the client resumed past it.
    pub fn went_on_after(&self, message: &str) -> bool {
        self.messages.iter().any(|m| {
            m.id.as_str() > message
                && m.info
                    .as_ref()
                    .is_some_and(|i| matches!(i.body, crate::model::MessageBody::User(_)))
        })
    }
}

/// A session: its messages in id order.
#[derive(Debug, Default)]
pub struct Session {
    pub id: String,
    /// Title, when the input stores one.
    pub title: Option<String>,
    pub messages: Vec<Message>,
    /// The parent session (a subagent's session), when the store says.
    pub parent_id: Option<String>,
    /// The OpenCode version that created the session, when the store says.
    pub version: Option<String>,
    /// Creation and last update time (epoch milliseconds), when the store says.
    pub time_created: Option<i64>,
    pub time_updated: Option<i64>,
    /// The project the session is filed under (stores only).
    pub project_id: Option<String>,
    /// The folder the session was started in, as stored (stores only).
    pub directory: Option<String>,
    /// The messages come from the v2 runtime's `session_message` store, whose request is built
    /// by its own rules (`crate::formats::opencode::request`).
    pub runtime_v2: bool,
    /// Which table of a store OpenCode 2.x has taken over the session's row is in (none for a
    /// store without `session_v2`).
    pub generation: Option<Generation>,
    /// What a compaction leaves out of the next request, as the request was rebuilt (set by
    /// `crate::formats::opencode::request`).
    pub compaction: Option<Compaction>,
    /// What the messages a large agent log's replay forgot held (see `checks::quiet`): they are
    /// no longer in `messages`, and the session's summary counts them here.
    pub forgotten: Forgotten,
    /// For a session an agent log recorded from a client that keeps the session in a file of
    /// its own (Claude Code's `stream-json`: its transcript): that file's format, which repair
    /// advice names.
    pub recorded_from: Option<crate::core::Format>,
}

/// Figures of the messages a replay forgot, for the session's summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    pub messages: usize,
    pub steps_started: usize,
    pub steps_finished: usize,
    /// Tool parts by final status.
    pub tools: std::collections::BTreeMap<String, usize>,
    /// The highest id of a message with a `step-finish` (`empty-text-part` asks for it).
    pub highest_finished: Option<String>,
}

impl Forgotten {
    /// Counts forgotten `message` in.
    pub fn add(&mut self, message: &Message) {
        if self.count(message)
            && (self.highest_finished.as_deref()).is_none_or(|h| h < message.id.as_str())
        {
            self.highest_finished = Some(message.id.clone());
        }
    }

    /// Counts `message`'s steps and tools in (the session summary counts the messages held this
    /// way too); whether it has a `step-finish`.
    pub fn count(&mut self, message: &Message) -> bool {
        use crate::model::PartBody;
        self.messages += 1;
        let mut finished = false;
        for p in &message.parts {
            match &p.part.body {
                PartBody::StepStart(_) => self.steps_started += 1,
                PartBody::StepFinish(_) => {
                    self.steps_finished += 1;
                    finished = true;
                }
                PartBody::Tool(t) => {
                    if let Some(n) = self.tools.get_mut(t.state.status()) {
                        *n += 1;
                    } else {
                        self.tools.insert(t.state.status().to_owned(), 1);
                    }
                }
                _ => {}
            }
        }
        finished
    }
}

/// Where a session's row is in a database OpenCode 2.x has taken over (it has `session_v2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generation {
    /// A `session_v2` row: what OpenCode 2.x lists.
    V2,
    /// Only a 1.x `session` row; `imported` when 2.x's one-time import of the 1.x sessions has
    /// run (`kv` `migration.v1-v2` completed), so 2.x will not import it by itself.
    V1Only { imported: bool },
}

/// A compaction that leaves messages out of the next request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compaction {
    /// The message holding the compaction (a v1 user message's `compaction` part, a v2
    /// `compaction` row).
    pub at: String,
    /// The messages stored before it that are no longer sent.
    pub left_out: std::collections::HashSet<String>,
}

impl Session {
    pub fn message(&self, id: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.id == id)
    }

    /// The part with this id, in any message.
    pub fn part(&self, id: &str) -> Option<&PartRecord> {
        self.messages
            .iter()
            .flat_map(|m| &m.parts)
            .find(|p| p.part.id == id)
    }
}

/// A message and its parts (ordered by part id, as OpenCode orders them).
#[derive(Debug, Default)]
pub struct Message {
    pub id: String,
    /// Message info, when the input has it (logs do not).
    pub info: Option<Box<MessageInfo>>,
    /// Where the message info is.
    pub span: Option<Span>,
    pub parts: Vec<PartRecord>,
    /// Where the message's `time` object is (stores only), for labels about completion.
    pub time_span: Option<Span>,
}

impl Message {
    pub fn count(&self, type_name: &str) -> usize {
        self.parts
            .iter()
            .filter(|p| p.part.type_name() == type_name)
            .count()
    }
}

/// A part as it was last written, with every write that led there.
#[derive(Debug, Clone)]
pub struct PartRecord {
    pub part: Part,
    /// Every time the part was written, in order.
    pub history: Vec<Observation>,
}

impl PartRecord {
    /// The latest write.
    pub fn last(&self) -> Option<&Observation> {
        self.history.last()
    }

    /// Where the latest write is, preferring the exact bytes of the tool status.
    pub fn status_span(&self) -> Option<Span> {
        self.last().map(|o| o.status_span.unwrap_or(o.span))
    }

    /// Statuses in the order they were written, deduplicated: `pending → running → error`.
    pub fn status_path(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for o in &self.history {
            if let Some(s) = o.status.as_deref()
                && out.last() != Some(&s)
            {
                out.push(s);
            }
        }
        out
    }
}

/// One write of a part.
#[derive(Debug, Clone)]
pub struct Observation {
    pub seq: Seq,
    /// The whole record (log object, DB row rendering, …).
    pub span: Span,
    /// Tool status at that write (see [`crate::model::ToolState::status_name`]).
    pub status: Option<Cow<'static, str>>,
    /// The exact bytes of the status value.
    pub status_span: Option<Span>,
}

impl Observation {
    /// A write of a record at `span` (the status, when there is one, read in the record
    /// itself: a transcript's or rollout's record is the status's only place).
    pub fn at(seq: Seq, span: Span, status: Option<&'static str>) -> Self {
        Self {
            seq,
            span,
            status: status.map(Cow::Borrowed),
            status_span: status.map(|_| span),
        }
    }
}

/// Payload problems of one record.
#[derive(Debug, Clone)]
pub struct PayloadIssues {
    pub seq: Seq,
    /// What the payload is ("tool part prt_…", "message msg_…").
    pub what: String,
    pub span: Span,
    /// Where each issue is, when it can be located.
    pub issues: Vec<(SchemaIssue, Option<Span>)>,
    pub session_id: Option<String>,
    pub message_id: Option<String>,
    pub part_id: Option<String>,
}

/// A record that could not be decoded.
#[derive(Debug, Clone)]
pub struct Undecodable {
    pub span: Span,
    pub reason: String,
    pub at: Option<Span>,
    /// The input ends inside this record.
    pub truncated: bool,
}

/// What a lenient reading got out of an undecodable record (of [`Analysis::salvaged`]): a
/// finding that says something is missing must first look for it here.
#[derive(Debug, Clone)]
pub struct Salvage {
    /// The record's span, as in [`Undecodable::span`].
    pub span: Span,
    /// The record was read once the escapes a wrapper mangled were made harmless (`\^[`, caret
    /// notation for ESC, is no JSON escape): what it holds is in the model.
    pub recovered: bool,
    /// The ids the record's text names (`"tool_use_id"`, `"callID"`, `"id"`, `"messageID"`),
    /// when it could not be read even so (a cut line): what it may be about.
    pub mentions: Vec<String>,
    /// The `"type"`s its text names (`step_finish`, `tool_use`, `tool_result` …): what kind of
    /// record it may be.
    pub kinds: Vec<String>,
}

/// Something that happened, in input order.
#[derive(Debug, Clone)]
pub struct Event {
    pub seq: Seq,
    pub span: Span,
    pub session: Option<String>,
    pub kind: EventKind,
}

/// Kinds of events. Part writes are not events: they live in [`PartRecord::history`].
#[derive(Debug, Clone)]
pub enum EventKind {
    /// A new agent process started (its `status` banner).
    RunStart,
    /// A user prompt arrived.
    Prompt,
    /// A logger entry at warn or error level.
    Log {
        level: LogLevel,
        service: String,
        message: String,
        error: Option<Box<ErrorInfo>>,
    },
    /// The session's error (`session.error` payload) or a failed prompt request.
    SessionError(Box<ErrorInfo>),
    /// The process died (`UnhandledRejection`, uncaught exception).
    ProcessCrash(Box<ErrorInfo>),
    /// A runtime error printed raw to stderr (e.g. a `ZodError: [` dump).
    RawError(Box<ErrorInfo>),
    /// A stream event the processor did not handle (the AI SDK `abort`, …).
    StreamUnhandled {
        event_type: String,
        reason: Option<String>,
    },
    /// The prompt loop was cancelled.
    Cancel,
    /// The session went idle.
    Idle,
    /// The bus published `session.error` (type only: the log has no payload).
    BusSessionError,
    /// The wrapper's own error classification (`{"type":"error","exitCode":…}`).
    WrapperError { error_type: String, message: String },
    /// A stream event whose payload could not be decoded (not JSON, or not the protocol's shape).
    StreamPayload(Box<PayloadProblem>),
    /// The provider reported an error inside the stream (`overloaded_error`, `response.failed`,
    /// `{"error":…}`, a UI `error` chunk, AG-UI `RUN_ERROR`).
    StreamProviderError(Box<ErrorInfo>),
    /// An event that breaks the protocol's order (a second `message_start`, a delta after its end,
    /// an event after the terminal one, a tool error before its call).
    StreamOutOfOrder {
        problem: String,
        /// Only a warning: the clients in use tolerate it.
        benign: bool,
        related: Vec<(Span, String)>,
    },
    /// The processor skipped this event and read on.
    ProcessorSkipped { reason: String },
    /// The processor ignored a tool's outcome (an error or result for a tool in the wrong state).
    ProcessorDropped(Box<DroppedOutcome>),
    /// The processor stopped reading the stream here; `remaining` events were never processed.
    ProcessorStopped { remaining: u64 },
    /// The processor's cleanup closed these tool parts ("Tool execution aborted").
    ProcessorCleanup { part_ids: Vec<String> },
    /// A step finished (`step_finish`): what it recorded.
    StepFinished(Box<StepFinish>),
    /// The prompt loop logged that it exits (`exiting loop`): no further step follows.
    LoopExit,
    /// The model the user asked for (`--model` on the agent's command line, as it logged it).
    /// `by_wrapper`: on a wrapper's command line (`solve … --model X`), not the agent's own.
    ModelRequested { spec: String, by_wrapper: bool },
    /// The model the agent resolved and will call (`rawModel`, `providerID`, `modelID`).
    ModelResolved(Box<ResolvedModel>),
    /// The agent announced a retry sleep (a rate limit or a retryable error).
    RetryWait(Box<RetryWait>),
    /// Usage (and the finish reason, when it says) as the provider itself sent it: logged
    /// provider metadata, a logged response body or stream. Counts are zero when it gave none.
    ProviderUsage(Box<ProviderUsage>),
    /// The wrapper reported that the agent's command succeeded (`✅ … command completed`,
    /// `Exit Code: 0`) or failed (`Exit Code: 1`).
    WrapperStatus { success: bool, words: String },
}

/// A tool outcome the processor ignored: [`EventKind::ProcessorDropped`].
#[derive(Debug, Clone)]
pub struct DroppedOutcome {
    pub part_id: String,
    pub call_id: String,
    pub tool: String,
    /// `tool-error`, `tool-result`.
    pub what: String,
    pub reason: String,
}

/// The model the agent resolved and will call: [`EventKind::ModelResolved`].
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    pub raw: String,
    pub provider: String,
    pub model: String,
    pub span: Option<Span>,
    /// The agent picked it as its default after failing to initialise this model (one its
    /// catalogue did not have), and where that is said.
    pub fallback_from: Option<(String, Option<Span>)>,
}

/// A retry sleep the agent announced: [`EventKind::RetryWait`].
#[derive(Debug, Clone)]
pub struct RetryWait {
    pub delay_ms: u64,
    /// Where the delay value is.
    pub delay_span: Option<Span>,
    /// The provider's `retry-after`, when the agent logged it just before, and where.
    pub retry_after: Option<(u64, Span)>,
    /// What followed the announcement: whether the agent wrote any part after it, and how long
    /// after it (ms) the log's last timestamped entry came. Work that went on, and a log that
    /// ended, before the sleep could have ended mean nothing waited it out.
    pub after: WaitAfter,
}

/// What a log shows after a retry sleep was announced: [`RetryWait::after`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitAfter {
    /// A part was written after the announcement.
    pub work: bool,
    /// From the announcement to the last timestamped logger entry after it, in ms (`None`: no
    /// timestamp to tell).
    pub log_went_on_ms: Option<u64>,
}

/// Usage as the provider itself sent it: [`EventKind::ProviderUsage`].
#[derive(Debug, Clone)]
pub struct ProviderUsage {
    pub input: u64,
    pub output: u64,
    /// The input tokens read from the provider's cache, and the output tokens spent reasoning,
    /// when the usage says (0 when it does not): flat (`cachedInputTokens`, `reasoningTokens`,
    /// `prompt_tokens_details.cached_tokens` …) or nested inside the input and output counts
    /// (`inputTokens: {total, noCache, cacheRead}`, `outputTokens: {total, text, reasoning}`).
    pub cache_read: u64,
    pub reasoning: u64,
    /// The counts were nested inside `inputTokens`/`outputTokens` objects.
    pub nested: bool,
    /// The provider's own finish reason (`tool_calls`, `end_turn`…), when the body has one.
    pub finish: Option<String>,
    /// What carried it: `providerMetadata`, `response body`.
    pub source: String,
    pub span: Option<Span>,
}

/// A block, item or tool call still open when a stream ended.
#[derive(Debug, Clone)]
pub struct OpenAtEnd {
    /// What it is, in words.
    pub what: String,
    /// Where it started.
    pub span: Span,
    /// The tool call it is, when it is one.
    pub call_id: Option<String>,
}

impl OpenAtEnd {
    pub fn new(what: String, span: Span) -> Self {
        Self {
            what,
            span,
            call_id: None,
        }
    }

    /// A tool call still open.
    pub fn call(what: String, span: Span, call_id: &str) -> Self {
        Self {
            what,
            span,
            call_id: Some(call_id.to_owned()),
        }
    }
}

/// What a `step_finish` recorded.
#[derive(Debug, Clone, Default)]
pub struct StepFinish {
    pub message_id: String,
    pub part_id: String,
    /// The finish reason as written; a value that is not a string is kept as its JSON text.
    pub reason: String,
    /// The finish reason was not a string (e.g. an object).
    pub reason_not_string: bool,
    pub reason_span: Option<Span>,
    /// Every token count is zero, or the counts are missing.
    pub zero_usage: bool,
    /// The cache reads (`tokens.cache.read`) and reasoning tokens (`tokens.reasoning`) the step
    /// recorded (0 when missing).
    pub cache_read: u64,
    pub reasoning: u64,
    pub tokens_span: Option<Span>,
    /// `model.requestedModelID` / `model.respondedModelID`, when the step says.
    pub requested_model: Option<String>,
    pub responded_model: Option<String>,
}

/// The finish reasons the AI SDK defines: `LanguageModelV1FinishReason` and V3's `unified` have
/// the first six; `LanguageModelV2FinishReason` adds `unknown` (no reason was transmitted).
pub const SDK_FINISH_REASONS: &[&str] = &[
    "stop",
    "length",
    "content-filter",
    "tool-calls",
    "error",
    "other",
    "unknown",
];

/// What was wrong with one stream payload.
#[derive(Debug, Clone)]
pub struct PayloadProblem {
    /// The parser's words (`expected `,` or `}` at line 1 column 32`), or the schema issue.
    pub reason: String,
    /// The payload is valid JSON but not the protocol's shape (a schema violation).
    pub schema: bool,
    /// Where the parser stopped.
    pub at: Option<Span>,
    /// The payload text (capped) and where it is.
    pub payload: (String, Span),
    /// Where a second event (`data:`/`event:`) or a second JSON value begins inside it.
    pub embedded: Option<Span>,
    /// The embedded text is a second JSON value, not an SSE field.
    pub second_value: bool,
    /// The event type its text starts with, when it can be read (`response.completed`).
    pub looks_like: Option<String>,
    /// It looks like the protocol's terminal event.
    pub terminal: bool,
}

/// What rewind knows about a replayed stream.
#[derive(Debug, Clone, Default)]
pub struct StreamFacts {
    /// The protocol, in words (`OpenAI Chat Completions`).
    pub protocol: String,
    /// The processor profile the parts were written with.
    pub profile: String,
    /// Provider events read.
    pub events: u64,
    /// The protocol's terminal event, when the stream has one (`[DONE]`, `message_stop`, …).
    pub terminal: Option<(String, Span)>,
    /// What the protocol's terminal event is, in words (for messages).
    pub expected_terminal: String,
    /// The last event.
    pub last_event: Option<Span>,
    /// No data came, only `event:` lines (the last one's type and span), which named the
    /// protocol.
    pub without_data: Option<(String, Span)>,
    /// The last event was still open when the input ended (no blank line after it).
    pub unterminated_last: Option<Span>,
    /// The body was cut by whoever logged it (an agent log's `bodyPreview`).
    pub body_cut: Option<BodyCut>,
    /// The finish reason the provider gave.
    pub finish_reason: Option<String>,
    /// Blocks, items or tool calls still open when the stream ended.
    pub open_at_end: Vec<OpenAtEnd>,
    /// Tool parts (ids) that asked for execution: the tool runs after the stream, so they are
    /// complete as far as the stream goes.
    pub awaiting_execution: Vec<String>,
    pub outcome: StreamOutcome,
    /// The processor's own state names for each tool part (TanStack's `input-complete`…), by
    /// part id, when they differ from the stored statuses.
    pub native_states: Vec<(String, Vec<(Seq, String)>)>,
    /// What another profile (`opencode` when replaying with `opencode-fixed`) did differently.
    pub alternative: Option<Alternative>,
    /// Most payloads do not fit the protocol the stream was read under: nothing else about the
    /// stream is diagnosed.
    pub not_understood: Option<NotUnderstood>,
    /// The relay the recording shows the response came through (a gateway or proxy between the
    /// client and the provider), when its URL or headers name one.
    pub relay: Option<Relay>,
}

/// A relay between the client and the provider, as a recording shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    /// What it is, in words (`LiteLLM`, `a proxy`).
    pub name: String,
    /// What shows it, as recorded (`response header x-litellm-call-id`, `request URL host
    /// openrouter.ai`).
    pub evidence: String,
    /// Where that is in the file.
    pub span: Option<Span>,
}

/// A stream read under a protocol most of whose JSON payloads do not fit it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUnderstood {
    /// The protocol it was read under, in words.
    pub protocol: String,
    /// Payloads that do not fit, of the JSON payloads read.
    pub unfit: u64,
    pub of: u64,
    /// The first payload that does not fit.
    pub first: (Seq, Span),
}

/// A stream body cut by its logger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCut {
    pub kept: u64,
    pub total: Option<u64>,
    /// The truncation marker.
    pub span: Span,
}

/// How the processor's run over a stream ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StreamOutcome {
    /// The processor reached the stream's finish.
    Completed { finish: Option<String> },
    /// The processor threw at event `seq` and the session stopped.
    Failed { seq: Seq, span: Span, error: String },
    /// The processor would retry (a new request, not in the capture).
    Retrying { seq: Seq, span: Span, error: String },
    /// The stream ended without a finish.
    #[default]
    Ended,
}

impl StreamOutcome {
    /// In words: `completed (finish: tool-calls)`, `failed at event 5: …`.
    pub fn words(&self) -> String {
        match self {
            StreamOutcome::Completed { finish: Some(f) } => format!("completed (finish: {f})"),
            StreamOutcome::Completed { finish: None } => "completed".into(),
            StreamOutcome::Failed { seq, error, .. } => {
                format!("failed at event {}: {error}", seq + 1)
            }
            StreamOutcome::Retrying { seq, error, .. } => {
                format!("would retry after event {}: {error}", seq + 1)
            }
            StreamOutcome::Ended => "ended without a finish".into(),
        }
    }

    pub fn failed_at(&self) -> Option<Seq> {
        match self {
            StreamOutcome::Failed { seq, .. } | StreamOutcome::Retrying { seq, .. } => Some(*seq),
            _ => None,
        }
    }
}

/// The outcome of the same stream under another profile.
#[derive(Debug, Clone, Default)]
pub struct Alternative {
    pub profile: String,
    pub outcome: StreamOutcome,
    /// What the other profile did differently, by event: (seq, words).
    pub differences: Vec<(Seq, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// An error as logged, with the places its interesting parts are in the input.
#[derive(Debug, Clone, Default)]
pub struct ErrorInfo {
    /// Error class: `UnknownError`, `APIError`, `AI_JSONParseError`, `ZodError`, …
    pub name: Option<String>,
    /// The class of an error this one wraps, when the log says (`AI_RetryError` → `AI_APICallError`).
    pub wrapped: Option<String>,
    pub message: String,
    pub retryable: Option<bool>,
    /// The whole error value (strings capped), for checks that need more.
    pub data: Value,
    /// Where the message is.
    pub message_span: Option<Span>,
    /// A raw payload the error carries (`AI_JSONParseError.text`), and where it is.
    pub payload: Option<(String, Span)>,
    /// Where `data:` or `event:` occurs inside that payload, if it does (not at its start).
    pub embedded_event: Option<Span>,
    /// Places that explain the error, with words (the tool result the failed request carried).
    pub context: Vec<(Span, String)>,
}

impl ErrorInfo {
    /// A one-line label: `UnknownError: …` or the message alone (a ZodError's issue list is
    /// summarised in words).
    pub fn title(&self) -> String {
        let msg = match crate::model::zod::parse_issues(&self.message) {
            Some(issues) => format!("ZodError: {}", crate::model::zod::decode(&issues).headline),
            None => first_line(&self.message, 160),
        };
        match &self.name {
            Some(n) if !msg.starts_with(n.as_str()) => format!("{n}: {msg}"),
            _ => msg,
        }
    }
}

/// The first line of `s`, at most `max` characters.
pub fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || s.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeline and the model keep one of these per event, message and part write: their
    /// size is memory per record on a long log. Rare, large payloads are boxed to keep them here.
    #[test]
    fn records_kept_per_write_stay_small() {
        assert!(size_of::<Event>() <= 120, "{}", size_of::<Event>());
        assert!(size_of::<EventKind>() <= 64, "{}", size_of::<EventKind>());
        assert!(
            size_of::<PartRecord>() <= 128,
            "{}",
            size_of::<PartRecord>()
        );
    }
}
