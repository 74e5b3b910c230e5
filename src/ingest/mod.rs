//! Opening an input: a file with a buffer sized for streaming, and standard input or a FIFO read
//! once into a private copy (`input`, `private`). What the input is, and its records, are the
//! formats' (`formats/`).

pub mod input;
pub mod private;

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Bytes read so far by this process from the inputs being diagnosed (through [`open_counted`],
/// and from standard input or a FIFO while it is copied): what a progress indicator shows.
static READ: AtomicU64 = AtomicU64::new(0);

/// Bytes read from inputs so far (see [`open_counted`]).
pub fn bytes_read() -> u64 {
    READ.load(Ordering::Relaxed)
}

/// [`open`] for the reading of an input that diagnoses it: its bytes count in [`bytes_read`].
/// (Reading a finding's lines again for its snippet does not count, nor does reading the copy
/// of standard input or a FIFO: copying it counted.)
pub fn open_counted(path: &Path) -> Result<BufReader<Counted<File>>, DetectError> {
    let counts = !input::is_one_shot(path);
    File::open(input::readable(path)?)
        .map(|f| BufReader::with_capacity(64 * 1024, Counted(f, counts)))
        .map_err(|source| DetectError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// A reader whose bytes count in [`bytes_read`] (when its flag says so).
#[derive(Debug)]
pub struct Counted<R>(pub R, pub bool);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        if self.1 {
            READ.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

impl<R: Seek> Seek for Counted<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(pos)
    }
}
