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

    /// Steps read at a time while building (each read starts again at the last checkpoint, so
    /// it re-reads what followed it: read far enough that this is little).
    const READ_STEPS: usize = 16;

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
        self.build(file, |last| last.offset <= offset)?;
        if self.len.is_some_and(|len| offset >= len) {
            return Ok(None);
        }
        let i = self.points.partition_point(|p| p.offset <= offset);
        Ok(self.points.get(i.wrapping_sub(1)).copied())
    }

    /// Where line `n` (1-based) starts, the index built past that first: counted from the last
    /// checkpoint at or before it, so never more than the bytes between two checkpoints are read.
    /// `None` when the file has fewer lines; a line after the file's final line break may come
    /// back as the file's length, and reads as empty.
    pub fn line_start(&mut self, file: &mut (impl Read + Seek), n: u64) -> io::Result<Option<u64>> {
        self.build(file, |last| last.line < n)?;
        // Checkpoints are in the order of (line, characters before them on it).
        let i = self.points.partition_point(|p| (p.line, p.chars) <= (n, 0));
        let Some(from) = self.points.get(i.wrapping_sub(1)).copied() else {
            return Ok(None);
        };
        let in_file = |at: u64| match self.len {
            Some(len) if at >= len => None,
            _ => Some(at),
        };
        // Line breaks to pass from there.
        let mut breaks = n.saturating_sub(from.line);
        if breaks == 0 {
            return Ok(in_file(from.offset));
        }
        let mut at = from.offset;
        file.seek(SeekFrom::Start(at))?;
        let mut buf = [0; 8 * 1024];
        loop {
            let got = file.read(&mut buf)?;
            if got == 0 {
                return Ok(None);
            }
            for k in memchr::memchr_iter(b'\n', &buf[..got]) {
                breaks -= 1;
                if breaks == 0 {
                    return Ok(in_file(at + k as u64 + 1));
                }
            }
            at += got as u64;
        }
    }

    /// Counts on from the last checkpoint while `more` holds for it and the end was not reached.
    fn build(
        &mut self,
        file: &mut (impl Read + Seek),
        more: impl Fn(&Checkpoint) -> bool,
    ) -> io::Result<()> {
        let mut want = self.step.saturating_mul(Self::READ_STEPS);
        let mut buf = Vec::new();
        while self.len.is_none() && more(&self.last()) {
            let from = self.last();
            file.seek(SeekFrom::Start(from.offset))?;
            let got = fill(file, &mut buf, want)?;
            let at_end = got < want;
            let before = self.points.len();
            self.count(from, &buf[..got]);
            if at_end {
                self.len = Some(from.offset + got as u64);
            } else if self.points.len() == before {
                // No line start or ASCII byte far enough on: read further.
                want = want.saturating_mul(2);
            }
        }
        Ok(())
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

/// Reads up to `want` bytes into the start of `buf`, unless the file ends first; how much it
/// read. The buffer is filled in place (what it holds from an earlier read is not zeroed again)
/// and grows only as the file turns out to hold more, so a large `want` near the end of a file
/// costs no more memory than what is there.
fn fill(file: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
    let mut got = 0;
    while got < want {
        if got == buf.len() {
            buf.resize((2 * got).clamp(4096.min(want), want), 0);
        }
        let room = buf.len().min(want);
        match file.read(&mut buf[got..room]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A buffered file that keeps its buffer when a seek lands inside it (`BufReader::seek` drops
/// it): the lines kept for display are read by seeking to each, and those of one unit lie close
/// together, so most of them cost no read from the file.
pub struct Rereading<F> {
    inner: io::BufReader<F>,
    /// Where the next read starts, once known.
    pos: Option<u64>,
}

impl<F: Read + Seek> Rereading<F> {
    pub fn new(inner: io::BufReader<F>) -> Self {
        Self { inner, pos: None }
    }
}

impl<F: Read> Read for Rereading<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos = self.pos.map(|p| p + n as u64);
        Ok(n)
    }
}

impl<F: Read + Seek> Seek for Rereading<F> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match (to, self.pos) {
            (SeekFrom::Start(at), Some(pos)) => {
                let by = i64::try_from(at)
                    .ok()
                    .zip(i64::try_from(pos).ok())
                    .map(|(at, pos)| at - pos);
                match by {
                    Some(by) => self.inner.seek_relative(by)?,
                    None => {
                        self.inner.seek(to)?;
                    }
                }
                self.pos = Some(at);
                Ok(at)
            }
            _ => {
                let at = self.inner.seek(to)?;
                self.pos = Some(at);
                Ok(at)
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

    /// Reads after seeks, near (inside the buffer) and far, backwards and forwards, past the
    /// end, return what the file holds there.
    #[test]
    fn rereading_reads_what_is_there_after_any_seek() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut file = Rereading::new(io::BufReader::with_capacity(
            4096,
            io::Cursor::new(data.clone()),
        ));
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut at = 0u64;
        for _ in 0..5_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            at = match seed % 4 {
                0 => seed % 210_000,
                1 => at.saturating_sub(seed % 5_000),
                _ => at + seed % 3_000,
            };
            assert_eq!(file.seek(SeekFrom::Start(at)).ok(), Some(at));
            let mut got = vec![0; (seed % 700) as usize];
            let n = file.read(&mut got).unwrap_or(usize::MAX);
            let want = data.get(at as usize..).unwrap_or_default();
            assert!(n <= got.len() && n <= want.len(), "{n} at {at}");
            assert_eq!(got[..n], want[..n], "at {at}");
            assert!(n > 0 || got.is_empty() || want.is_empty(), "at {at}");
            at += n as u64;
        }
    }

    #[test]
    fn cover_spans_both() {
        let f = FileId(0);
        let a = Span::new(f, 10, 5);
        let b = Span::new(f, 30, 2);
        assert_eq!(a.cover(&b), Span::new(f, 10, 22));
        assert_eq!(b.cover(&a), Span::new(f, 10, 22));
        assert_eq!(a.head(), Span::new(f, 10, 1));
    }

    /// `fill` reads what the file holds up to what is asked, keeps the bytes of an earlier read
    /// that it is not asked to overwrite, and grows its buffer only with what the file holds: a
    /// gigabyte asked of a 10,000-byte file takes less than twice that.
    #[test]
    fn fill_reads_what_is_there_and_grows_with_it() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut buf = Vec::new();
        let got = fill(&mut io::Cursor::new(&data), &mut buf, 1 << 30).unwrap_or_default();
        assert_eq!(got, data.len());
        assert_eq!(&buf[..got], &data[..]);
        assert!(buf.len() < 2 * data.len() + 4096, "{}", buf.len());
        let got = fill(&mut io::Cursor::new(&data[5..]), &mut buf, 100).unwrap_or_default();
        assert_eq!((got, &buf[..got]), (100, &data[5..105]));
        // A reader that hands out seven bytes at a time still fills what is asked.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = out.len().min(7).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let got = fill(&mut Trickle(&data), &mut buf, 9_999).unwrap_or_default();
        assert_eq!((got, &buf[..got]), (9_999, &data[..9_999]));
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
