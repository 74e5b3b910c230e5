//! Sources and byte spans.
//!
//! Every record rewind ingests keeps a [`Span`]: the file it came from, the byte offset of its first
//! byte (u64, so multi-gigabyte logs work) and its length. Line and column numbers are computed only
//! when a finding is printed (see `report::snippet`); nothing here keeps a file's text in memory.
//!
//! A source is either a file on disk or a *virtual* text that rewind renders itself — for example
//! a database row shown as pretty JSON — so that findings about rows can be labelled like findings
//! about files.

use std::path::{Path, PathBuf};

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
        })
    }

    pub fn add_virtual(&mut self, origin: &Path, locator: String, text: String) -> FileId {
        self.push(Source {
            path: origin.to_path_buf(),
            kind: SourceKind::Virtual { text, locator },
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
