//! The library's error type. Every variant says what went wrong and where; the binary prints it
//! on one line and exits with status 2.

use std::path::PathBuf;

use thiserror::Error;

use crate::ingest::{DetectError, Format, IngestError};

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
    #[error("`{path}`: {source}")]
    Db {
        path: PathBuf,
        #[source]
        source: crate::ingest::opencode_db::DbError,
    },
    #[error("`{path}` has no session {id} (`rewind sessions {path}` lists them)")]
    NoSuchSession { path: PathBuf, id: String },
    #[error("unknown rule `{0}` (`rewind rules` lists them)")]
    UnknownRule(String),
    #[error("unknown rule `{rule}` in {origin} (`rewind rules` lists them)")]
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

impl RewindError {
    /// Whether this is a broken pipe (the reader went away): not an error for a CLI.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RewindError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
