//! The library's error type. Every variant says what went wrong and where; the binary prints it
//! on one line and exits with status 2.

use std::path::PathBuf;

use thiserror::Error;

use crate::core::Format;
use crate::ingest::{DetectError, IngestError};

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
        source: crate::ingest::opencode_db::DbError,
    },
    #[error(
        "`{path}` has no session {} (`rewind sessions {path}` lists them)",
        crate::text::clip(id)
    )]
    NoSuchSession { path: PathBuf, id: String },
    #[error("unknown rule `{}` (`rewind rules` lists them)", crate::text::clip(.0))]
    UnknownRule(String),
    #[error(
        "unknown rule `{}` in {origin} (`rewind rules` lists them)",
        crate::text::clip(rule)
    )]
    UnknownRuleIn { rule: String, origin: String },
    #[error("{0}")]
    Config(String),
    #[error("{path}: {message}")]
    Baseline { path: PathBuf, message: String },
    #[error("{0}")]
    Usage(String),
    #[error("cannot write output: {0}")]
    Output(#[from] std::io::Error),
}

/// The most an error message says, in bytes: input it quotes is cut much shorter (see
/// [`crate::text::clip`]); this is the last guard against a message that quotes a whole input.
pub const MAX_MESSAGE: usize = 1000;

impl RewindError {
    /// The message as printed: at most [`MAX_MESSAGE`] bytes.
    pub fn message(&self) -> String {
        crate::text::clip_to(&self.to_string(), MAX_MESSAGE).into_owned()
    }

    /// Whether this is a broken pipe (the reader went away): not an error for a CLI.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RewindError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
