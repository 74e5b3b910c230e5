//! Stage 1 of the pipeline: bytes → records with byte spans.
//!
//! Each input kind has a submodule that streams its records; [`detect`] recognises the kind from
//! the content (never from the file name alone). Ingest knows framing, not meaning: deciding that
//! an object is a tool update or a crash is the job of `replay`.

pub mod input;
pub mod private;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

pub use crate::core::{DetectError, IngestError};

/// Opens `path` for streaming with a 64 KiB buffer (a one-shot input such as standard input or
/// a FIFO is read from its private copy, see [`input`]).
pub fn open(path: &Path) -> Result<BufReader<File>, DetectError> {
    File::open(input::readable(path)?)
        .map(|f| BufReader::with_capacity(64 * 1024, f))
        .map_err(|source| DetectError::Io {
            path: path.to_path_buf(),
            source,
        })
}
