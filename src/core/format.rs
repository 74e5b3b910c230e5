//! The kinds of input rewind reads: each is read by one unit under `formats/`.

/// Kinds of input rewind reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// link-assistant/agent or OpenCode JSON output, optionally under the solve.mjs wrapper.
    AgentLog,
    /// A raw `text/event-stream` body.
    Sse,
    /// One provider stream event per line (`*.chunks.txt`, `.jsonl` captures).
    JsonLines,
    /// A binary `application/vnd.amazon.eventstream` body (Bedrock ConverseStream).
    EventStream,
    /// An HTTP recording (`{version, metadata, interactions: [...]}`).
    HttpRecording,
    /// A HAR 1.2 export.
    Har,
    /// An OpenCode SQLite database.
    OpencodeDb,
    /// An `opencode export` JSON document.
    OpencodeExport,
    /// OpenCode's legacy JSON storage folder (`storage/session|message|part/…`).
    OpencodeStorage,
    /// An SQL dump of an OpenCode database (`sqlite3 opencode.db .dump`).
    OpencodeSqlDump,
    /// A Claude Code transcript (`~/.claude/projects/…/<sessionId>.jsonl`).
    ClaudeTranscript,
    /// A Codex rollout (`~/.codex/sessions/…/rollout-*.jsonl`).
    CodexRollout,
    /// A Gemini CLI session (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, or the legacy
    /// whole-file `session-*.json`).
    GeminiSession,
    /// Codex's thread index (`~/.codex/state_5.sqlite`) with its home folder's rollouts.
    CodexState,
    /// A GitHub Copilot CLI session (`~/.copilot/session-state/<id>/events.jsonl`).
    CopilotSession,
}

impl Format {
    /// The kind in words, with its article.
    pub fn describe(self) -> &'static str {
        match self {
            Format::AgentLog => "an agent log",
            Format::Sse => "an SSE capture",
            Format::JsonLines => "a JSON-lines stream capture",
            Format::EventStream => "an AWS event-stream capture",
            Format::HttpRecording => "an HTTP recording",
            Format::Har => "a HAR file",
            Format::OpencodeDb => "an OpenCode database",
            Format::OpencodeExport => "an OpenCode export",
            Format::OpencodeStorage => "an OpenCode storage folder",
            Format::OpencodeSqlDump => "an SQL dump of an OpenCode database",
            Format::ClaudeTranscript => "a Claude Code transcript",
            Format::CodexRollout => "a Codex rollout",
            Format::GeminiSession => "a Gemini CLI session",
            Format::CodexState => "Codex's thread index (state_5.sqlite)",
            Format::CopilotSession => "a GitHub Copilot CLI session",
        }
    }

    /// One of OpenCode's session stores (a database, its SQL dump, an export, a storage
    /// folder): the sessions are at rest, and their next request is rebuilt from them.
    pub fn is_opencode_store(self) -> bool {
        matches!(
            self,
            Format::OpencodeDb
                | Format::OpencodeSqlDump
                | Format::OpencodeExport
                | Format::OpencodeStorage
        )
    }

    /// A client's own transcript of a session (Claude Code, Codex, Gemini CLI, Copilot CLI).
    pub fn is_client_transcript(self) -> bool {
        matches!(
            self,
            Format::ClaudeTranscript
                | Format::CodexRollout
                | Format::GeminiSession
                | Format::CopilotSession
        )
    }

    /// A Gemini CLI session.
    pub fn is_gemini(self) -> bool {
        self == Format::GeminiSession
    }

    /// A Claude Code transcript.
    pub fn is_claude_code(self) -> bool {
        self == Format::ClaudeTranscript
    }

    /// A Codex rollout.
    pub fn is_codex(self) -> bool {
        self == Format::CodexRollout
    }

    /// A GitHub Copilot CLI session.
    pub fn is_copilot(self) -> bool {
        self == Format::CopilotSession
    }

    /// An agent's log.
    pub fn is_agent_log(self) -> bool {
        self == Format::AgentLog
    }

    /// Read from a folder rather than a file.
    pub fn is_folder(self) -> bool {
        matches!(self, Format::OpencodeStorage | Format::CodexState)
    }
}
