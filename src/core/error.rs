//! The errors of reading an input's bytes, shared by the JSON kernel, the protocol decoders and
//! every format.

use std::path::PathBuf;

use thiserror::Error;

use super::Format;

/// Longest line kept (a longer one is reported, not buffered without bound).
pub const MAX_LINE: usize = 256 << 20;

/// Errors of the ingest stage. Each one says what is wrong and where.
#[derive(Debug, Error)]
pub enum IngestError {
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("invalid UTF-8 at byte {offset} (line {line})")]
    InvalidUtf8 { offset: u64, line: u64 },
    #[error("binary data (a NUL byte) at byte {offset} (line {line})")]
    Binary { offset: u64, line: u64 },
    #[error("a line longer than {} MiB at byte {offset} (line {line})", max >> 20)]
    LineTooLong { offset: u64, line: u64, max: usize },
    #[error(
        "its lines end in a carriage return alone (CR at byte {offset}, and no LF in its first {head} bytes), which logs and transcripts never use: rewind reads lines ended by LF or CRLF. Convert it with `tr '\\r' '\\n'` (every byte keeps its offset) and run rewind on that"
    )]
    CrLineEnds { offset: u64, head: usize },
    #[error("invalid JSON at byte {offset} (line {line}): {reason}")]
    InvalidJson {
        offset: u64,
        line: u64,
        reason: String,
    },
}

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
        "`{path}` is a directory but not an OpenCode storage folder (no `session/` and `message/` in it or in `storage/`): to check every recording in it, run `rewind check {}`",
        crate::text::shell_quote(&path.display().to_string())
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
        "cannot tell what `{path}` is: expected an agent log, a stream capture, an HTTP recording, an OpenCode session store or a Claude Code or Codex transcript (it starts with {head:?}; {found}); if you know what it is, say so with `--input` (e.g. `--input agent-log`)"
    )]
    Unknown {
        path: PathBuf,
        head: String,
        /// What the head holds, in words.
        found: String,
    },
}

/// The library's error type. Every variant says what went wrong and where; the binary prints it
/// on one line and exits with status 2.
#[derive(Debug, Error)]
pub enum RewindError {
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error("`{path}`: {source}")]
    Ingest {
        path: PathBuf,
        #[source]
        source: IngestError,
    },
    #[error("`{path}` is {}, which rewind cannot read yet{hint}", format.describe())]
    Unsupported {
        path: PathBuf,
        format: Format,
        hint: String,
    },
    #[error(
        "`{path}` is {}: rewind cannot repair that kind of input; it repairs OpenCode databases, `opencode export` documents, storage folders, Claude Code transcripts and Codex rollouts (`rewind diagnose` reads this one)",
        format.describe()
    )]
    CannotRepair { path: PathBuf, format: Format },
    #[error("`{path}`: {source}")]
    Db {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "`{path}` has no session {} (`rewind sessions {path}` lists them)",
        crate::text::clip(id)
    )]
    NoSuchSession { path: PathBuf, id: String },
    /// `hint` is what follows the name: `; did you mean …?` or where the rules are listed.
    #[error("unknown rule `{}`{hint}", crate::text::clip(rule))]
    UnknownRule { rule: String, hint: String },
    #[error("unknown rule `{}` in {origin}{hint}", crate::text::clip(rule))]
    UnknownRuleIn {
        rule: String,
        origin: String,
        hint: String,
    },
    #[error("{0}")]
    Config(String),
    #[error("{path}: {message}")]
    Baseline { path: PathBuf, message: String },
    #[error("{0}")]
    Usage(String),
    /// An error about a list of things (the sessions a repair refuses): `message` is its first
    /// line, and each item is printed on a line of its own after it, so that no item is cut
    /// off to keep the line short.
    #[error("{message}")]
    Listed { message: String, items: Vec<String> },
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

/// The most an error line says, in bytes, all of it: input it quotes is cut much shorter (see
/// [`crate::text::clip`]); this is the last guard against a line that quotes a whole input.
pub const MAX_MESSAGE: usize = 1000;

impl RewindError {
    /// The message on one line, its items (see [`RewindError::Listed`]) included: at most
    /// [`MAX_MESSAGE`] bytes (for a report's list of unreadable files).
    pub fn message(&self) -> String {
        let mut text = self.to_string();
        for item in self.items() {
            text.push_str("; ");
            text.push_str(item);
        }
        crate::text::cap_line(&text, MAX_MESSAGE).into_owned()
    }

    /// What the error lists, one item a line after its message.
    pub fn items(&self) -> &[String] {
        match self {
            RewindError::Listed { items, .. } => items,
            _ => &[],
        }
    }

    /// Whether this is a broken pipe (the reader went away): not an error for a CLI.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RewindError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
