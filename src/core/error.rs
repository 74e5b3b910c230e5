//! The errors of reading an input's bytes, shared by the JSON kernel, the protocol decoders and
//! every format.

use thiserror::Error;

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
    #[error("invalid JSON at byte {offset} (line {line}): {reason}")]
    InvalidJson {
        offset: u64,
        line: u64,
        reason: String,
    },
}
