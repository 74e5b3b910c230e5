//! Sources and byte spans.
//!
//! Every record rewind ingests keeps a [`Span`]: the file it came from, the byte offset of its first
//! byte (u64, so multi-gigabyte logs work) and its length. Line and column numbers are computed only
//! when a finding is printed (see `report::snippet`); nothing here keeps a file's text in memory.
//!
//! A source is either a file on disk or a *virtual* text that rewind renders itself — for example
//! a database row shown as pretty JSON — so that findings about rows can be labelled like findings
//! about files.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

/// Index of a source in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FileId(pub u32);

/// A byte range in one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: FileId,
    pub offset: u64,
    pub len: u64,
}

impl Span {
    pub const fn new(file: FileId, offset: u64, len: u64) -> Self {
        Self { file, offset, len }
    }

    /// One past the last byte.
    pub const fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// The smallest span covering both (they must be in the same file).
    pub fn cover(&self, other: &Span) -> Span {
        let start = self.offset.min(other.offset);
        let end = self.end().max(other.end());
        Span::new(self.file, start, end - start)
    }

    /// The first byte only: used where a label should point at where something begins.
    pub const fn head(&self) -> Span {
        Span::new(self.file, self.offset, if self.len == 0 { 0 } else { 1 })
    }
}

/// What a source is.
#[derive(Debug)]
pub enum SourceKind {
    /// A file on disk; read lazily when a finding is printed.
    File,
    /// Text rewind rendered itself (e.g. a database row as JSON). `origin` is the real file the
    /// text stands for, and `locator` says where in it (e.g. `session ses_… › message msg_…`).
    Virtual { text: String, locator: String },
}

/// One source.
#[derive(Debug)]
pub struct Source {
    /// The path as the user gave it (used in every message, so it stays recognisable).
    pub path: PathBuf,
    pub kind: SourceKind,
    /// Where lines are in a file, as far as positions were asked for: kept for the run, so that
    /// the units of one file (a HAR's entries, an agent log's embedded streams) do not each count
    /// lines from its first byte.
    pub lines: Mutex<LineIndex>,
}

impl Source {
    /// Name shown in diagnostics.
    pub fn display_name(&self) -> String {
        match &self.kind {
            SourceKind::File => self.path.display().to_string(),
            SourceKind::Virtual { locator, .. } => {
                format!("{} › {locator}", self.path.display())
            }
        }
    }
}

/// Checkpoints of a file for counting positions from: a line start, or an ASCII byte inside a
/// long line, about every [`LineIndex::STEP`] bytes, each with its line and the characters of its
/// line before it (as `text::lossy_chars` counts them, which add up at such bytes). Built as far
/// as it is asked for, reading on from its last checkpoint.
#[derive(Debug)]
pub struct LineIndex {
    points: Vec<Checkpoint>,
    /// The file's length, once the count reached its end.
    len: Option<u64>,
    step: usize,
}

/// A place to count from: a byte offset, its 1-based line, and the characters of that line
/// before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub offset: u64,
    pub line: u64,
    pub chars: u64,
}

impl Checkpoint {
    pub const START: Checkpoint = Checkpoint {
        offset: 0,
        line: 1,
        chars: 0,
    };
}

impl Default for LineIndex {
    fn default() -> Self {
        Self::with_step(Self::STEP)
    }
}

impl LineIndex {
    /// Bytes between checkpoints (16 KiB: 24 bytes of index per 16 KiB of file).
    pub const STEP: usize = 16 * 1024;

    pub fn with_step(step: usize) -> Self {
        Self {
            points: vec![Checkpoint::START],
            len: None,
            step: step.max(1),
        }
    }

    /// How far ahead a position is counted from the checkpoint before it rather than read on to
    /// (four steps: 64 KiB).
    pub fn jump(&self) -> u64 {
        4 * self.step as u64
    }

    fn last(&self) -> Checkpoint {
        self.points.last().copied().unwrap_or(Checkpoint::START)
    }

    /// The last checkpoint at or before `offset`, the index built past it first (or to the end of
    /// the file). `None` when `offset` is past the end of the file.
    pub fn before(
        &mut self,
        file: &mut (impl Read + Seek),
        offset: u64,
    ) -> io::Result<Option<Checkpoint>> {
        let mut want = 4 * self.step as u64;
        let mut buf = Vec::new();
        while self.len.is_none() && self.last().offset <= offset {
            let from = self.last();
            file.seek(SeekFrom::Start(from.offset))?;
            buf.clear();
            file.by_ref().take(want).read_to_end(&mut buf)?;
            let at_end = (buf.len() as u64) < want;
            let before = self.points.len();
            self.count(from, &buf);
            if at_end {
                self.len = Some(from.offset + buf.len() as u64);
            } else if self.points.len() == before {
                // No line start or ASCII byte far enough on: read further.
                want = want.saturating_mul(2);
            }
        }
        if self.len.is_some_and(|len| offset >= len) {
            return Ok(None);
        }
        let i = self.points.partition_point(|p| p.offset <= offset);
        Ok(self.points.get(i.wrapping_sub(1)).copied())
    }

    /// Adds the checkpoints of `buf`, the bytes from checkpoint `from` on.
    fn count(&mut self, from: Checkpoint, buf: &[u8]) {
        let step = self.step;
        let (mut line, mut chars) = (from.line, from.chars);
        // Where the characters not yet in `chars` start, and the last checkpoint, in `buf`.
        let (mut counted, mut last) = (0usize, 0usize);
        let breaks = memchr::memchr_iter(b'\n', buf).map(Some).chain([None]);
        for newline in breaks {
            let end = newline.unwrap_or(buf.len());
            while end > last + step {
                let Some(p) = buf[last + step..end]
                    .iter()
                    .position(u8::is_ascii)
                    .map(|k| last + step + k)
                else {
                    break;
                };
                chars += crate::text::lossy_chars(&buf[counted..p]);
                (counted, last) = (p, p);
                self.points.push(Checkpoint {
                    offset: from.offset + p as u64,
                    line,
                    chars,
                });
            }
            let Some(newline) = newline else {
                break;
            };
            line += 1;
            chars = 0;
            counted = newline + 1;
            if counted - last >= step {
                last = counted;
                self.points.push(Checkpoint {
                    offset: from.offset + counted as u64,
                    line,
                    chars: 0,
                });
            }
        }
    }
}

/// All sources of a run.
#[derive(Debug, Default)]
pub struct SourceMap {
    sources: Vec<Source>,
}

impl SourceMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_file(&mut self, path: &Path) -> FileId {
        self.push(Source {
            path: path.to_path_buf(),
            kind: SourceKind::File,
            lines: Mutex::default(),
        })
    }

    pub fn add_virtual(&mut self, origin: &Path, locator: String, text: String) -> FileId {
        self.push(Source {
            path: origin.to_path_buf(),
            kind: SourceKind::Virtual { text, locator },
            lines: Mutex::default(),
        })
    }

    fn push(&mut self, source: Source) -> FileId {
        let id = FileId(u32::try_from(self.sources.len()).unwrap_or(u32::MAX));
        self.sources.push(source);
        id
    }

    pub fn get(&self, id: FileId) -> Option<&Source> {
        self.sources.get(id.0 as usize)
    }

    /// Forgets the sources added after the first `len` (a unit's sources, once it is printed).
    pub fn truncate(&mut self, len: usize) {
        self.sources.truncate(len);
    }

    pub fn len(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_spans_both() {
        let f = FileId(0);
        let a = Span::new(f, 10, 5);
        let b = Span::new(f, 30, 2);
        assert_eq!(a.cover(&b), Span::new(f, 10, 22));
        assert_eq!(b.cover(&a), Span::new(f, 10, 22));
        assert_eq!(a.head(), Span::new(f, 10, 1));
    }

    #[test]
    fn virtual_sources_name_their_origin() {
        let mut map = SourceMap::new();
        let id = map.add_virtual(
            Path::new("opencode.db"),
            "message msg_1".into(),
            "{}".into(),
        );
        let src = map.get(id).map(Source::display_name);
        assert_eq!(src.as_deref(), Some("opencode.db › message msg_1"));
    }
}
