//! Opening an input: a file with a buffer sized for streaming, and standard input or a FIFO read
//! once into a private copy (`input`, `private`). What the input is, and its records, are the
//! formats' (`formats/`).

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
