//! Reading just enough of a source to show findings.
//!
//! [`scan`] reads a source once, front to back, and stops after the last line it needs: it turns
//! byte offsets into line/column positions and keeps the few lines around each span (a bounded
//! amount of text, however large the file). [`Snippet`] then serves those lines to miette as a
//! [`SourceCode`], with lines escaped (a log must not drive the terminal) and cut to a readable
//! width around the labels.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Seek};

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

use crate::source::{Checkpoint, LineIndex};
use crate::text::lossy_chars;

/// Lines of context shown before and after a label.
pub const CONTEXT: u64 = 2;
/// A label spanning more lines than this is shown on its first line only.
const MAX_LABEL_LINES: u64 = 6;
/// Bytes kept after a label start (or from the start of a line): enough for the widest window
/// [`DisplayLine::build`] shows after a mark, plus the character that tells it the line goes on,
/// whatever their width (four bytes at most each).
const KEPT_AFTER_MARK: u64 = (DISPLAY_WIDTH as u64 + 2) * 4;
/// Bytes before a label that hold at least the [`SHOWN_BEFORE`] characters shown before it.
const SHOWN_BEFORE_BYTES: usize = SHOWN_BEFORE * 4;
/// Bytes kept before a label start far into its line ([`FAR_MARK`]): [`SHOWN_BEFORE_BYTES`], and
/// room for [`char_start`] to step back to a character's first byte.
const KEPT_BEFORE_MARK: u64 = SHOWN_BEFORE_BYTES as u64 + 8;
/// A label starting this many bytes or more into its line is shown from [`SHOWN_BEFORE`]
/// characters before it (the line has more than [`DISPLAY_WIDTH`] characters before it), so the
/// line is kept around it, not from its start.
const FAR_MARK: u64 = DISPLAY_WIDTH as u64 * 4 + 4;
/// Characters of one line shown.
const DISPLAY_WIDTH: usize = 140;
/// Characters shown before a label that does not fit in the first [`DISPLAY_WIDTH`] characters of
/// its line.
const SHOWN_BEFORE: usize = 30;

/// A position: 1-based line, 1-based column in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

/// What [`scan`] learned about one requested span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub start: Position,
    pub end: Position,
    /// The end offset used for display when the span was too tall (the end of its first line).
    pub display_end: u64,
}

/// Consecutive bytes of a line: where they start in the source, and the bytes (the line ending
/// included when they reach it). What is kept of a line is pieces of it ([`windows`]): the first
/// from its start, in [`Lines`]' `captured`, and those around labels farther on, if any, in its
/// `farther` (most lines have none: a line costs one allocation).
#[derive(Debug)]
struct Piece {
    at: u64,
    bytes: Vec<u8>,
}

/// The parts of a line kept for display, as byte ranges from its start (before cutting at its
/// end), for the labels starting at `marks` (from the line's start, in increasing order): its
/// first [`KEPT_AFTER_MARK`] bytes, up to that far past a label near the start, and
/// [`KEPT_BEFORE_MARK`] bytes before to [`KEPT_AFTER_MARK`] bytes after a label farther on
/// ([`FAR_MARK`]), ranges that meet merged. However long the line, a label is shown from bytes
/// kept around it, and what is kept grows with the labels, not with the line.
fn windows(marks: impl Iterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = vec![(0, KEPT_AFTER_MARK)];
    for m in marks {
        let from = if m < FAR_MARK {
            0
        } else {
            m - KEPT_BEFORE_MARK
        };
        let to = m.saturating_add(KEPT_AFTER_MARK);
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// The last place at or before `q` in `bytes` where a character starts, as
/// `String::from_utf8_lossy` reads them from any earlier place: a byte that does not continue a
/// sequence, or one after three that do (no sequence is longer than four bytes). At most three
/// steps back; `0` when it reaches the start.
fn char_start(bytes: &[u8], q: usize) -> usize {
    let continues = |b: &u8| b & 0xc0 == 0x80;
    let mut p = q.min(bytes.len());
    while p > 0
        && bytes.get(p).is_some_and(continues)
        && !(p >= 3 && bytes[p - 3..p].iter().all(continues))
    {
        p -= 1;
    }
    p
}

/// The result of one pass over a source.
#[derive(Debug, Default)]
pub struct Lines {
    resolved: Vec<Option<Resolved>>,
    /// The first piece of each kept line, by line number.
    captured: BTreeMap<u64, Piece>,
    /// The other pieces of kept lines that have more, by line number.
    farther: BTreeMap<u64, Vec<Piece>>,
}

impl Lines {
    /// What was found for the `i`-th requested span.
    pub fn get(&self, i: usize) -> Option<Resolved> {
        self.resolved.get(i).copied().flatten()
    }

    /// Kept line `n` (1-based) as shown with the labels starting at `marks` (source offsets, on
    /// that line), the first of them at `column` (as resolved): where the shown bytes start in the
    /// source, and the display. Only the bytes around the first label are read, so a long line
    /// with many labels costs a window per label, not the line per label.
    pub fn display(&self, n: u64, marks: &[u64], column: u64) -> Option<(u64, DisplayLine)> {
        self.display_within(n, marks, column, DISPLAY_WIDTH)
    }

    /// [`Lines::display`] showing at most `shown` characters of the line (at most
    /// [`DISPLAY_WIDTH`]): what fits a terminal's width.
    pub fn display_within(
        &self,
        n: u64,
        marks: &[u64],
        column: u64,
        shown: usize,
    ) -> Option<(u64, DisplayLine)> {
        let c = self.captured.get(&n)?;
        let first = marks.iter().min().map(|m| m.saturating_sub(c.at));
        // A far label: from a character start about SHOWN_BEFORE characters before it; the
        // characters of the line before that follow from its column.
        let far = first.filter(|&m| m >= FAR_MARK).and_then(|m| {
            let farther = self.farther.get(&n).map_or(&[][..], Vec::as_slice);
            let piece = farther.iter().rev().find(|p| p.at <= c.at + m).unwrap_or(c);
            let k = (c.at + m - piece.at) as usize;
            let from = char_start(&piece.bytes, k.checked_sub(SHOWN_BEFORE_BYTES)?);
            let to = (k + KEPT_AFTER_MARK as usize).min(piece.bytes.len());
            let before = crate::text::lossy_chars(&piece.bytes[from..k.min(to)]);
            let skipped = column.saturating_sub(1).saturating_sub(before);
            Some((
                piece.at + from as u64,
                &piece.bytes[from..to],
                skipped as usize,
            ))
        });
        let (at, bytes, skipped) = match far {
            Some(far) => far,
            None => {
                let to = first.unwrap_or(0).saturating_add(KEPT_AFTER_MARK);
                let to = (to as usize).min(c.bytes.len());
                (c.at, &c.bytes[..to], 0)
            }
        };
        let marks: Vec<usize> = marks
            .iter()
            .map(|m| m.saturating_sub(at) as usize)
            .collect();
        Some((at, DisplayLine::build_within(bytes, skipped, &marks, shown)))
    }
}

/// Keeps the pieces of line `line` (starting at offset `ls`, bytes `buf`) that can be shown
/// around the span starts `marks`: the first in `out.captured` when `capture_this`, else in the
/// `ring` of the last lines (context, should a span start below); the farther ones in
/// `out.farther`.
fn keep_line(
    out: &mut Lines,
    ring: &mut std::collections::VecDeque<(u64, Piece)>,
    line: u64,
    ls: u64,
    buf: &[u8],
    marks: Vec<u64>,
    capture_this: bool,
) {
    let mut pieces = windows(marks.into_iter())
        .into_iter()
        .map(|(from, to)| Piece {
            at: ls + from,
            bytes: buf[(from as usize).min(buf.len())..(to as usize).min(buf.len())].to_vec(),
        });
    let Some(kept) = pieces.next() else {
        return;
    };
    let farther: Vec<Piece> = pieces.collect();
    if !farther.is_empty() {
        out.farther.insert(line, farther);
    }
    if capture_this {
        out.captured.insert(line, kept);
    } else {
        ring.push_back((line, kept));
        if ring.len() > CONTEXT as usize {
            ring.pop_front();
        }
    }
}

/// Reads `input` once and resolves each `(start, end)` byte range (end exclusive). With
/// `keep_lines`, the lines around the spans are kept for display, each only where it can be
/// shown (see [`windows`]), so a log of long lines does not cost a long line per finding.
/// Machine output needs positions only, and keeps no lines.
///
/// Cost: one pass up to the last line needed, O(lines + spans); memory: the captured lines.
pub fn scan(mut input: impl BufRead, spans: &[(u64, u64)], keep_lines: bool) -> io::Result<Lines> {
    let mut out = Lines {
        resolved: vec![None; spans.len()],
        ..Lines::default()
    };
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| spans[i].0);
    let mut next = 0;
    // Spans whose start was seen and whose end was not: (index, start position, start line end).
    let mut active: Vec<(usize, Position, u64)> = Vec::new();
    let mut ring: std::collections::VecDeque<(u64, Piece)> = Default::default();
    let mut capture_until: u64 = 0;
    let mut buf = Vec::new();
    let mut offset: u64 = 0;
    let mut line: u64 = 0;
    while next < order.len() || !active.is_empty() || line < capture_until {
        buf.clear();
        let n = input.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        line += 1;
        let ls = offset;
        let le = offset + n as u64;
        offset = le;
        let content_end = ls
            + buf
                .iter()
                .rposition(|c| *c != b'\n' && *c != b'\r')
                .map_or(0, |k| k as u64 + 1);
        let mut columns = Columns::default();
        let mut col = |o: u64| -> u64 {
            let k = (o.saturating_sub(ls) as usize).min(buf.len());
            columns.before(&buf, k) + 1
        };
        let mut capture_this = line <= capture_until;
        // The span starts on this line, from the line's start.
        let mut marks: Vec<u64> = Vec::new();
        while let Some(&i) = order.get(next) {
            let start = spans[i].0;
            if start >= le {
                break;
            }
            next += 1;
            if start < ls {
                continue; // inside a line already passed: cannot happen for sorted starts
            }
            marks.push(start - ls);
            active.push((
                i,
                Position {
                    line,
                    column: col(start),
                },
                content_end.max(start),
            ));
            for (l, c) in ring.drain(..) {
                out.captured.insert(l, c);
            }
        }
        if !active.is_empty() {
            capture_this = true;
        }
        active.retain(|&(i, start, start_line_end)| {
            let end = spans[i].1;
            let last_byte = end.max(spans[i].0 + 1) - 1;
            if last_byte < le {
                out.resolved[i] = Some(Resolved {
                    start,
                    end: Position {
                        line,
                        column: col(end),
                    },
                    display_end: end,
                });
                capture_until = capture_until.max(line + CONTEXT);
                false
            } else if line - start.line >= MAX_LABEL_LINES {
                out.resolved[i] = Some(Resolved {
                    start,
                    end: start,
                    display_end: start_line_end,
                });
                capture_until = capture_until.max(start.line + CONTEXT);
                false
            } else {
                true
            }
        });
        if keep_lines {
            keep_line(&mut out, &mut ring, line, ls, &buf, marks, capture_this);
        }
    }
    // Spans that run to the end of the input.
    for (i, start, start_line_end) in active {
        out.resolved[i] = Some(Resolved {
            start,
            end: start,
            display_end: start_line_end,
        });
    }
    Ok(out)
}

/// What [`scan`] finds, counted from the checkpoints of `index` (see [`LineIndex`]) instead of
/// from the first byte: the points the spans start and end at are visited in order by a cursor
/// that reads forward, and jumps to a checkpoint when the next point is far. A file diagnosed in
/// many units is then read about once for positions, not once per unit up to its spans (a
/// one-line HAR of 400 failing entries took 18 s that way). With `keep_lines`, the lines `scan`
/// would keep are then read from where the index puts them (see [`capture`]). `index` is built
/// on as far as the spans need, through `indexer` (a second handle on the same file); `file` is
/// read for the counting itself.
pub fn resolve<F: Read + Seek, G: Read + Seek>(
    file: F,
    indexer: &mut G,
    index: &mut LineIndex,
    spans: &[(u64, u64)],
    keep_lines: bool,
) -> io::Result<Lines> {
    let mut out = Lines {
        resolved: vec![None; spans.len()],
        ..Lines::default()
    };
    // Each span's start, and the last byte it covers (with its end, which may take in the byte
    // after: a newline counts towards the end column).
    let mut points: Vec<(u64, u64, usize, bool)> = Vec::with_capacity(spans.len() * 2);
    for (i, &(start, end)) in spans.iter().enumerate() {
        points.push((start, start, i, true));
        points.push((end.max(start + 1) - 1, end, i, false));
    }
    points.sort_unstable_by_key(|p| (p.0, p.1));
    let mut cursor = Cursor::new(file);
    let mut starts: Vec<Option<Position>> = vec![None; spans.len()];
    let mut ends: Vec<Option<Position>> = vec![None; spans.len()];
    for (of, upto, i, is_start) in points {
        let Some(found) = cursor.at(indexer, index, of, upto)? else {
            continue;
        };
        let slot = if is_start { &mut starts } else { &mut ends };
        slot[i] = Some(found);
    }
    // The lines `scan` keeps for each span (first, last): [`CONTEXT`] lines around the lines it
    // is shown on, or its first [`MAX_LABEL_LINES`] lines and the context before.
    let mut shown: Vec<(u64, u64)> = Vec::new();
    for (i, &(start_at, end_at)) in spans.iter().enumerate() {
        let Some(start) = starts[i] else {
            continue;
        };
        out.resolved[i] = Some(match ends[i] {
            Some(end) if end.line - start.line <= MAX_LABEL_LINES => {
                shown.push((start.line.saturating_sub(CONTEXT), end.line + CONTEXT));
                Resolved {
                    start,
                    end,
                    display_end: end_at,
                }
            }
            // Taller than shown, or running to the end of the input: its first line.
            _ => {
                shown.push((
                    start.line.saturating_sub(CONTEXT),
                    start.line + MAX_LABEL_LINES,
                ));
                Resolved {
                    start,
                    end: start,
                    display_end: content_end(indexer, start_at)?,
                }
            }
        });
    }
    if keep_lines {
        let mut marks: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (r, &(start, _)) in out.resolved.iter().zip(spans) {
            if let Some(r) = r {
                marks.entry(r.start.line).or_default().push(start);
            }
        }
        for line in marks.values_mut() {
            line.sort_unstable();
        }
        capture(indexer, index, shown, &marks, &mut out)?;
    }
    Ok(out)
}

/// Keeps in `out` the lines [`scan`] keeps, read from where `index` puts them: the `shown`
/// ranges of lines (first, last), each line kept where `scan` keeps it ([`windows`] of the span
/// starts on it, in `marks` by line). A group of consecutive lines costs one look-up in the
/// index, and a look-up more after each line longer than what is kept of it; nothing else of the
/// file is read.
fn capture<G: Read + Seek>(
    file: &mut G,
    index: &mut LineIndex,
    mut shown: Vec<(u64, u64)>,
    marks: &BTreeMap<u64, Vec<u64>>,
    out: &mut Lines,
) -> io::Result<()> {
    shown.sort_unstable();
    let mut groups: Vec<(u64, u64)> = Vec::new();
    for (first, last) in shown {
        let first = first.max(1);
        match groups.last_mut() {
            Some(group) if first <= group.1 + 1 => group.1 = group.1.max(last),
            _ => groups.push((first, last)),
        }
    }
    let mut read = Vec::new();
    for (first, last) in groups {
        let mut start = index.line_start(file, first)?;
        for n in first..=last {
            let Some(at) = start else {
                break;
            };
            let here = marks.get(&n).map_or(&[][..], Vec::as_slice);
            let mut pieces = Vec::new();
            // Where the next line starts: known once a piece reaches the end of this one.
            let mut next = None;
            for (from, to) in windows(here.iter().map(|m| m.saturating_sub(at))) {
                file.seek(io::SeekFrom::Start(at + from))?;
                read.clear();
                let want = to - from;
                file.by_ref().take(want).read_to_end(&mut read)?;
                let (kept, reached) = match memchr::memchr(b'\n', &read) {
                    Some(k) => (k + 1, Some(Some(at + from + k as u64 + 1))),
                    // The last line of the file.
                    None if (read.len() as u64) < want => (read.len(), Some(None)),
                    None => (read.len(), None),
                };
                next = reached;
                if kept > 0 {
                    pieces.push(Piece {
                        at: at + from,
                        bytes: read[..kept].to_vec(),
                    });
                }
                if next.is_some() {
                    break;
                }
            }
            let mut pieces = pieces.into_iter();
            let Some(kept) = pieces.next() else {
                break;
            };
            let more: Vec<Piece> = pieces.collect();
            if !more.is_empty() {
                out.farther.insert(n, more);
            }
            start = match next {
                Some(next) => next,
                // A line longer than what is kept of it.
                None if n < last => index.line_start(file, n + 1)?,
                None => None,
            };
            out.captured.insert(n, kept);
        }
    }
    Ok(())
}

/// Where the content of the line holding byte `at` ends (before its line ending), not before `at`.
/// Read in pieces: the rest of a minified file's one line is not held.
fn content_end(file: &mut (impl Read + Seek), at: u64) -> io::Result<u64> {
    file.seek(io::SeekFrom::Start(at))?;
    let mut buf = [0; 8 * 1024];
    let (mut read, mut content) = (at, at);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(content);
        }
        let piece = &buf[..n];
        let line = memchr::memchr(b'\n', piece).map_or(piece, |k| &piece[..k]);
        if let Some(k) = line.iter().rposition(|c| *c != b'\r') {
            content = read + k as u64 + 1;
        }
        if line.len() < n {
            return Ok(content);
        }
        read += n as u64;
    }
}

/// Counts lines and characters forward through a file from a place it can count from (the
/// first byte, a line start, an ASCII byte), keeping the bytes read past that place.
struct Cursor<F> {
    file: F,
    at: Checkpoint,
    /// The bytes from `at` on that were read.
    read: Vec<u8>,
    /// `file` is positioned at the end of `read`.
    positioned: bool,
}

impl<F: Read + Seek> Cursor<F> {
    fn new(file: F) -> Self {
        Self {
            file,
            at: Checkpoint::START,
            read: Vec::new(),
            positioned: false,
        }
    }

    /// The line of byte `of` and the column of byte `upto` on it (`of <= upto <= of + 1`), for
    /// points in increasing order. `None` when `of` is past the end of the file.
    fn at<G: Read + Seek>(
        &mut self,
        indexer: &mut G,
        index: &mut LineIndex,
        of: u64,
        upto: u64,
    ) -> io::Result<Option<Position>> {
        if of < self.at.offset {
            return Ok(None); // points come in order; cannot happen
        }
        if of - self.at.offset > index.jump() || !self.positioned {
            match index.before(indexer, of)? {
                None => return Ok(None),
                Some(cp) if cp.offset > self.at.offset || !self.positioned => {
                    self.at = cp;
                    self.read.clear();
                    self.file.seek(io::SeekFrom::Start(cp.offset))?;
                    self.positioned = true;
                }
                Some(_) => {}
            }
        }
        // Byte `of` itself is read too: it tells whether `of` is in the file.
        let need = (upto.max(of + 1) - self.at.offset) as usize;
        if self.read.len() < need {
            let more = (need - self.read.len()) as u64;
            self.file.by_ref().take(more).read_to_end(&mut self.read)?;
        }
        let k = (of - self.at.offset) as usize;
        if k >= self.read.len() {
            return Ok(None);
        }
        let upto = ((upto - self.at.offset) as usize).min(self.read.len());
        let (line, column) = self.count(k, upto);
        // Move on to the last place at or before `of` that counts can start from.
        let mut p = k;
        while p > 0 && !self.read[p].is_ascii() && self.read[p - 1] != b'\n' {
            p -= 1;
        }
        if p > 0 {
            let (line, chars) = self.count(p, p);
            self.at = Checkpoint {
                offset: self.at.offset + p as u64,
                line,
                chars,
            };
            self.read.drain(..p);
        }
        Ok(Some(Position {
            line,
            column: column + 1,
        }))
    }

    /// The line of `read[k]` and the characters of that line before `read[upto]`.
    fn count(&self, k: usize, upto: usize) -> (u64, u64) {
        let before = &self.read[..k];
        let breaks = memchr::memchr_iter(b'\n', before).count() as u64;
        let chars = match memchr::memrchr(b'\n', before) {
            Some(n) => lossy_chars(&self.read[n + 1..upto]),
            None => self.at.chars + lossy_chars(&self.read[..upto]),
        };
        (self.at.line + breaks, chars)
    }
}

/// Characters of one line before a byte offset, as `String::from_utf8_lossy` counts them (an
/// invalid sequence is one character), found without counting from the line's start each time:
/// a line of one long JSON record can hold thousands of spans. The first query on a long line
/// notes the count at an ASCII byte every [`Columns::STEP`] bytes; a query counts from the mark
/// before it. An ASCII byte never continues a sequence, so counts before and after it add up.
#[derive(Default)]
struct Columns {
    /// (position of an ASCII byte, characters before it), in order; empty until a query.
    marks: Vec<(usize, u64)>,
}

impl Columns {
    const STEP: usize = 4096;

    fn before(&mut self, line: &[u8], k: usize) -> u64 {
        if self.marks.is_empty() {
            self.marks.push((0, 0));
            let (mut at, mut count) = (0, 0);
            while let Some(next) = line
                .get(at + Self::STEP..)
                .and_then(|rest| rest.iter().position(u8::is_ascii))
                .map(|d| at + Self::STEP + d)
            {
                count += lossy_chars(&line[at..next]);
                self.marks.push((next, count));
                at = next;
            }
        }
        let i = self.marks.partition_point(|&(at, _)| at <= k) - 1;
        let (at, count) = self.marks[i];
        count + lossy_chars(&line[at..k])
    }
}

/// A label to show, in source byte offsets.
#[derive(Clone, Debug)]
pub struct SourceLabel {
    pub start: u64,
    pub end: u64,
    pub text: super::input_text::InputText,
    pub primary: bool,
    pub resolved: Resolved,
}

#[derive(Debug)]
struct Chunk {
    base: usize,
    text: String,
    first_line: usize,
}

/// The lines a finding shows, served to miette.
#[derive(Debug)]
pub struct Snippet {
    name: String,
    chunks: Vec<Chunk>,
    /// (display offset, 0-based line, 0-based column) of each label start, for miette's header.
    starts: Vec<(usize, usize, usize)>,
}

/// A displayed line and where each original byte went.
pub struct DisplayLine {
    /// The line as shown: control characters escaped, cut to a readable width around the marks.
    pub text: String,
    /// (byte in the original line, byte in `text`) at each kept character boundary.
    map: Vec<(usize, usize)>,
}

impl DisplayLine {
    /// [`DisplayLine::build_within`] as wide as rewind ever shows a line.
    #[cfg(test)]
    pub fn build(bytes: &[u8], skipped: usize, marks: &[usize]) -> DisplayLine {
        Self::build_within(bytes, skipped, marks, DISPLAY_WIDTH)
    }

    /// The shown part of a line, keeping the bytes at `marks` (offsets in `bytes`) in view:
    /// at most `shown` characters (at most [`DISPLAY_WIDTH`], which the bytes kept around a mark
    /// hold). `bytes` is the line from a character start on, `skipped` the characters of the line
    /// before it: given the bytes around the first mark, a line shows as it would whole.
    pub fn build_within(
        bytes: &[u8],
        skipped: usize,
        marks: &[usize],
        shown: usize,
    ) -> DisplayLine {
        let width = shown.clamp(SHOWN_BEFORE + 20, DISPLAY_WIDTH);
        // Each character and the byte it starts at, as `from_utf8_lossy` reads them.
        let mut chars: Vec<(usize, char)> = Vec::new();
        let mut end = 0;
        for chunk in bytes.utf8_chunks() {
            chars.extend(chunk.valid().char_indices().map(|(b, c)| (end + b, c)));
            end += chunk.valid().len();
            if !chunk.invalid().is_empty() {
                chars.push((end, char::REPLACEMENT_CHARACTER));
                end += chunk.invalid().len();
            }
        }
        while let Some(&(b, '\n' | '\r')) = chars.last() {
            end = b;
            chars.pop();
        }
        // In characters of the whole line.
        let (from, to) = if skipped == 0 && chars.len() <= width {
            (0, chars.len())
        } else {
            // The first marked character; a mark on the line ending marks the line's end.
            let first = skipped
                + marks
                    .iter()
                    .map(|m| {
                        let at = chars.iter().position(|(b, _)| *b >= *m);
                        at.unwrap_or(chars.len())
                    })
                    .min()
                    .unwrap_or(0);
            if first + 20 < width {
                (0, width.min(chars.len()))
            } else {
                let from = first.saturating_sub(SHOWN_BEFORE);
                (from, (from + width).min(skipped + chars.len()))
            }
        };
        // In characters of `bytes`.
        let (shown_from, shown_to) = (from.saturating_sub(skipped), to.saturating_sub(skipped));
        let mut text = String::new();
        let mut map = Vec::with_capacity(shown_to - shown_from + 2);
        if from > 0 {
            text.push('…');
        }
        for &(b, c) in &chars[shown_from..shown_to] {
            map.push((b, text.len()));
            push_escaped(&mut text, c);
        }
        let end_byte = chars.get(shown_to).map_or(end, |(b, _)| *b);
        map.push((end_byte, text.len()));
        if shown_to < chars.len() {
            text.push('…');
        }
        DisplayLine { text, map }
    }

    /// Display byte of original byte `b` (clamped into the shown window).
    pub fn at(&self, b: usize) -> usize {
        let i = self.map.partition_point(|(o, _)| *o <= b);
        match i {
            0 => self.map.first().map_or(0, |(_, d)| *d),
            _ => self.map[i - 1].1,
        }
    }
}

/// Appends `c`, escaping what could drive a terminal (controls, DEL, C1, bidi overrides).
pub(in crate::report) fn push_escaped(out: &mut String, c: char) {
    let dangerous = crate::text::is_dangerous(c);
    match c {
        '\t' => out.push(' '),
        _ if dangerous => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        _ => out.push(c),
    }
}

/// `s` with control characters escaped (newlines kept when `keep_newlines`).
pub(in crate::report) fn escape(s: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if keep_newlines && c == '\n' {
            out.push('\n');
        } else {
            push_escaped(&mut out, c);
        }
    }
    out
}

/// The line ranges a snippet of `labels` shows, with their context, merged when they touch.
fn shown_ranges(labels: &[SourceLabel]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = labels
        .iter()
        .map(|l| {
            let end_line = if l.resolved.display_end < l.end {
                l.resolved.start.line
            } else {
                l.resolved.end.line
            };
            (
                l.resolved.start.line.saturating_sub(CONTEXT).max(1),
                end_line + CONTEXT,
            )
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

impl Snippet {
    /// Builds the snippet for `labels` (all in one source) from the scanned `lines`, showing at
    /// most `shown` characters of each line. Returns the snippet and the labels moved into its
    /// coordinates.
    pub fn build_within(
        name: String,
        lines: &Lines,
        labels: &[SourceLabel],
        shown: usize,
    ) -> (Snippet, Vec<miette::LabeledSpan>) {
        let merged = shown_ranges(labels);
        // Where labels start on each line, and the column of the first, to choose what part of
        // long lines shows.
        let mut marks: BTreeMap<u64, (Vec<u64>, (u64, u64))> = BTreeMap::new();
        for l in labels {
            let first = (l.start, l.resolved.start.column);
            let line = marks
                .entry(l.resolved.start.line)
                .or_insert_with(|| (Vec::new(), first));
            line.0.push(l.start);
            line.1 = line.1.min(first);
        }
        let mut chunks = Vec::new();
        // (line number) → (chunk index, offset of the line in the chunk, where the shown bytes
        // start in the source, display line)
        let mut placed: BTreeMap<u64, (usize, usize, u64, DisplayLine)> = BTreeMap::new();
        let mut base = 0usize;
        for (s, e) in merged {
            let mut text = String::new();
            let mut first_line = None;
            for &n in lines.captured.range(s..=e).map(|(n, _)| n) {
                let (here, (_, column)) = marks
                    .get(&n)
                    .map_or((&[][..], (0, 1)), |(m, first)| (m.as_slice(), *first));
                let Some((from, dl)) = lines.display_within(n, here, column, shown) else {
                    continue;
                };
                first_line.get_or_insert(n);
                if !text.is_empty() {
                    text.push('\n');
                }
                let at = text.len();
                text.push_str(&dl.text);
                placed.insert(n, (chunks.len(), at, from, dl));
            }
            let Some(first_line) = first_line else {
                continue;
            };
            let len = text.len();
            chunks.push(Chunk {
                base,
                text,
                first_line: first_line.saturating_sub(1) as usize,
            });
            // Leave a gap so that contexts of different chunks never merge in miette.
            base += len + 2;
        }
        let to_display = |offset: u64, line: u64| -> Option<usize> {
            let (ci, at, from, dl) = placed.get(&line)?;
            let b = offset.saturating_sub(*from) as usize;
            Some(chunks[*ci].base + at + dl.at(b))
        };
        let mut out = Vec::new();
        let mut starts = Vec::new();
        for l in labels {
            let r = l.resolved;
            let Some(start) = to_display(l.start, r.start.line) else {
                continue;
            };
            let end = if r.display_end < l.end {
                to_display(r.display_end, r.start.line)
            } else {
                to_display(l.end, r.end.line)
            }
            .unwrap_or(start)
            .max(start);
            starts.push((
                start,
                (r.start.line - 1) as usize,
                (r.start.column - 1) as usize,
            ));
            let text = Some(l.text.for_terminal());
            out.push(if l.primary {
                miette::LabeledSpan::new_primary_with_span(text, (start, end - start))
            } else {
                miette::LabeledSpan::new_with_span(text, (start, end - start))
            });
        }
        (
            Snippet {
                // A file's name is the input's too: a name can carry a terminal's escapes.
                name: escape(&name, false),
                chunks,
                starts,
            },
            out,
        )
    }
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let off = span.offset();
        let chunk = self
            .chunks
            .iter()
            .find(|c| off >= c.base && off <= c.base + c.text.len())
            .ok_or(MietteError::OutOfBounds)?;
        if before == 0 && after == 0 {
            let local = off - chunk.base;
            let len = span.len().min(chunk.text.len() - local);
            let (line, column) = self
                .starts
                .iter()
                .find(|(o, _, _)| *o == off)
                .map(|(_, l, c)| (*l, *c))
                .unwrap_or((chunk.first_line, 0));
            return Ok(Box::new(MietteSpanContents::new_named(
                self.name.clone(),
                &chunk.text.as_bytes()[local..local + len],
                *span,
                line,
                column,
                1,
            )));
        }
        let lines = chunk.text.lines().count().max(1);
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            chunk.text.as_bytes(),
            SourceSpan::new(chunk.base.into(), chunk.text.len()),
            chunk.first_line,
            0,
            lines,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::xorshift;

    /// What is kept of line `n`: each piece's start and bytes, in order.
    fn pieces_of(lines: &Lines, n: u64) -> Vec<(u64, &[u8])> {
        let first = lines.captured.get(&n).into_iter();
        let farther = lines.farther.get(&n).into_iter().flatten();
        first
            .chain(farther)
            .map(|p| (p.at, p.bytes.as_slice()))
            .collect()
    }

    /// Positions counted from checkpoints, and the lines kept from where the index puts them, are
    /// what a read from the first byte finds: random texts of short and long lines, multi-byte
    /// characters, invalid bytes, `\r` and stretches without ASCII, random spans (empty, tall,
    /// past the end), one index kept across several sets of spans as across a file's units, and
    /// small steps so that checkpoints and jumps fall everywhere.
    #[test]
    fn resolving_from_checkpoints_finds_what_a_scan_finds() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let pieces: [&[u8]; 9] = [
            b"a",
            b"{\"k\":1}",
            "é".as_bytes(),
            "€😀".as_bytes(),
            b"\xff",
            b"\xe2\x82",
            b"\n",
            b"\r\n",
            b" ",
        ];
        for round in 0..2000 {
            let mut text = Vec::new();
            let size = (next() % 4000) as usize;
            while text.len() < size {
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                // Long runs of one piece: long lines, stretches without ASCII.
                let times = if next().is_multiple_of(8) {
                    next() % 400
                } else {
                    1
                };
                for _ in 0..times {
                    text.extend_from_slice(piece);
                }
            }
            let len = text.len() as u64 + 3;
            let mut index = LineIndex::with_step(1 + (next() % 64) as usize);
            for _unit in 0..4 {
                let spans: Vec<(u64, u64)> = (0..(next() % 12))
                    .map(|_| {
                        let start = next() % len;
                        let end = start
                            + if next().is_multiple_of(3) {
                                next() % 400
                            } else {
                                next() % 6
                            };
                        (start, end)
                    })
                    .collect();
                let keep_lines = next().is_multiple_of(2);
                let want = scan(text.as_slice(), &spans, keep_lines).unwrap_or_default();
                let got = resolve(
                    io::Cursor::new(&text),
                    &mut io::Cursor::new(&text),
                    &mut index,
                    &spans,
                    keep_lines,
                )
                .unwrap_or_default();
                for (i, span) in spans.iter().enumerate() {
                    assert_eq!(
                        got.get(i),
                        want.get(i),
                        "round {round}, span {span:?} of {:?}",
                        String::from_utf8_lossy(&text)
                    );
                }
                let kept = |lines: &Lines| -> Vec<(u64, u64, Vec<u8>)> {
                    let lines_kept = lines.captured.keys();
                    lines_kept
                        .flat_map(|&n| {
                            let pieces = pieces_of(lines, n).into_iter();
                            pieces.map(move |(at, bytes)| (n, at, bytes.to_vec()))
                        })
                        .collect()
                };
                assert_eq!(
                    kept(&got),
                    kept(&want),
                    "round {round}, spans {spans:?} of {:?}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    /// Columns from the marks are the characters `from_utf8_lossy` counts, at every offset of
    /// long lines of ASCII, multi-byte characters, invalid bytes and stretches without ASCII.
    #[test]
    fn columns_count_what_a_lossy_string_counts() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let pieces: [&[u8]; 7] = [
            b"a",
            b"{\"k\":",
            "é".as_bytes(),
            "𝄞".as_bytes(),
            b"\xff",
            b"\xe2\x82",
            b"\xc3",
        ];
        for len in [0, 10, Columns::STEP - 1, Columns::STEP * 3 + 7] {
            let mut line = Vec::new();
            while line.len() < len {
                // Long stretches without an ASCII byte too.
                let piece = pieces[(next() % pieces.len() as u64) as usize];
                let times = if next().is_multiple_of(50) { 2000 } else { 1 };
                for _ in 0..times {
                    line.extend_from_slice(piece);
                }
            }
            let mut columns = Columns::default();
            for k in (0..=line.len()).rev().step_by(7) {
                let lossy = String::from_utf8_lossy(&line[..k]).chars().count() as u64;
                assert_eq!(columns.before(&line, k), lossy, "at {k} of {}", line.len());
            }
        }
    }

    fn pos(line: u64, column: u64) -> Position {
        Position { line, column }
    }

    #[test]
    fn resolves_lines_and_columns_and_stops_early() {
        let text = "line one\nsecond é line\nthird\nfourth\nfifth\nsixth\nseventh\n";
        let spans = [(9, 15), (19, 20)];
        let lines = scan(text.as_bytes(), &spans, true).unwrap_or_default();
        assert_eq!(
            lines.get(0),
            Some(Resolved {
                start: pos(2, 1),
                end: pos(2, 7),
                display_end: 15
            })
        );
        // Column counts characters, not bytes.
        assert_eq!(lines.get(1).map(|r| r.start), Some(pos(2, 10)));
        // Two lines of context after line 2, nothing beyond.
        assert_eq!(
            lines.captured.keys().copied().collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn long_lines_are_kept_only_as_far_as_they_can_be_shown() {
        // Three lines of 100,000 bytes; a span near the start of the second and one in the
        // middle of the third.
        let long = |c: char| c.to_string().repeat(100_000) + "\n";
        let text = long('a') + &long('é') + &long('c');
        let second = 100_001u64;
        let third = second + 200_001;
        let spans = [(second + 10, second + 12), (third + 50_000, third + 50_002)];
        let lines = scan(text.as_bytes(), &spans, true).unwrap_or_default();
        let kept = |n| {
            let pieces = pieces_of(&lines, n);
            let start = pieces.first().map(|p| p.0)?;
            let pieces = pieces.iter().map(|(at, b)| (at - start, b.len() as u64));
            Some(pieces.collect::<Vec<_>>())
        };
        // From the start of a line without a label, and up to a label near its start.
        assert_eq!(kept(1), Some(vec![(0, KEPT_AFTER_MARK)]));
        assert_eq!(kept(2), Some(vec![(0, 10 + KEPT_AFTER_MARK)]));
        // Around a label far into its line.
        assert_eq!(
            kept(3),
            Some(vec![
                (0, KEPT_AFTER_MARK),
                (
                    50_000 - KEPT_BEFORE_MARK,
                    KEPT_BEFORE_MARK + KEPT_AFTER_MARK
                )
            ])
        );
        // What is shown is what the whole line shows.
        for (n, mark, start) in [(1, 0, 0), (2, 10, second), (3, 50_000, third)] {
            let column = lines.get(1).map_or(1, |r| r.start.column);
            let column = if n == 3 { column } else { mark + 1 };
            let (_, dl) = lines
                .display(n, &[start + mark], column)
                .unwrap_or_else(|| panic!("line {n} kept"));
            let whole = &text.as_bytes()[start as usize..];
            let whole = &whole[..=whole.iter().position(|&b| b == b'\n').unwrap_or(0)];
            let expected = DisplayLine::build(whole, 0, &[mark as usize]).text;
            assert_eq!(dl.text, expected);
            assert!(n != 3 || dl.text.contains('…'), "{}", dl.text);
        }
        // Machine output needs positions only.
        let bare = scan(text.as_bytes(), &spans, false).unwrap_or_default();
        assert_eq!(bare.get(1), lines.get(1));
        assert!(bare.captured.is_empty());
    }

    #[test]
    fn tall_spans_are_cut_to_their_first_line() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let start = text.find("l2").unwrap_or(0) as u64;
        let end = text.find("l15").unwrap_or(0) as u64;
        let lines = scan(text.as_bytes(), &[(start, end)], true).unwrap_or_default();
        let r = lines.get(0);
        assert_eq!(
            r.map(|r| (r.start.line, r.display_end)),
            Some((2, start + 2))
        );
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape("a\u{1b}[31mred\u{7}", false),
            "a\\u{1b}[31mred\\u{7}"
        );
        assert_eq!(escape("x\ny", true), "x\ny");
        assert_eq!(escape("x\ny\u{202e}", false), "x\\u{a}y\\u{202e}");
    }

    /// A line shows the same from what is kept of it as whole, for any labels on it: random
    /// lines of one-byte, multi-byte and invalid characters (invalid ones before the labels
    /// too), short and far longer than shown, a few labels on each, near its start and far on,
    /// and every choice of them as one finding's.
    #[test]
    fn kept_lines_show_what_whole_lines_show() {
        let mut next = xorshift(0x1234_5678_9abc_def1);
        let pieces: [&[u8]; 9] = [
            b"a",
            b"{\"k\":1}",
            "é".as_bytes(),
            "€😀".as_bytes(),
            "😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀"
                .as_bytes(),
            b"\xff",
            b"\xe2\x82",
            b"\x80\x80\x80\x80",
            b"\t",
        ];
        for round in 0..1500 {
            let mut text = Vec::new();
            let mut starts = Vec::new();
            for _ in 0..3 {
                starts.push(text.len() as u64);
                let size = match next() % 4 {
                    0 => next() % 100,
                    1 => next() % 1000,
                    _ => next() % 8000,
                } as usize;
                let line_start = text.len();
                while text.len() - line_start < size.max(1) {
                    let piece = pieces[(next() % pieces.len() as u64) as usize];
                    text.extend_from_slice(piece);
                }
                text.push(b'\n');
            }
            let line_of = |at: u64| starts.iter().rposition(|&s| s <= at).unwrap_or(0);
            let len = text.len() as u64;
            let spans: Vec<(u64, u64)> = (0..1 + next() % 4)
                .map(|_| {
                    let start = next() % len;
                    (start, start + next() % 20)
                })
                .collect();
            let lines = scan(text.as_slice(), &spans, true).unwrap_or_default();
            let from_index = resolve(
                io::Cursor::new(&text),
                &mut io::Cursor::new(&text),
                &mut LineIndex::with_step(1 + (next() % 256) as usize),
                &spans,
                true,
            )
            .unwrap_or_default();
            for choice in 1..(1u32 << spans.len()) {
                let chosen: Vec<usize> = (0..spans.len())
                    .filter(|i| choice & (1 << i) != 0)
                    .collect();
                let n = line_of(spans[chosen[0]].0);
                let on_line: Vec<usize> = chosen
                    .into_iter()
                    .filter(|&i| line_of(spans[i].0) == n)
                    .collect();
                let marks: Vec<u64> = on_line.iter().map(|&i| spans[i].0).collect();
                let first = on_line
                    .iter()
                    .min_by_key(|&&i| spans[i].0)
                    .copied()
                    .unwrap_or(0);
                let column = lines.get(first).map_or(1, |r| r.start.column);
                let ls = starts[n];
                let whole = &text[ls as usize..];
                let whole = &whole[..=whole.iter().position(|&b| b == b'\n').unwrap_or(0)];
                let rel: Vec<usize> = marks.iter().map(|m| (m - ls) as usize).collect();
                let expected = DisplayLine::build(whole, 0, &rel);
                for kept in [&lines, &from_index] {
                    let (from, dl) = kept
                        .display(n as u64 + 1, &marks, column)
                        .unwrap_or_else(|| panic!("round {round}: line {} kept", n + 1));
                    let context = || {
                        format!(
                            "round {round}, marks {rel:?}, line {:?}",
                            String::from_utf8_lossy(whole)
                        )
                    };
                    assert_eq!(dl.text, expected.text, "{}", context());
                    for &(s, e) in on_line.iter().map(|&i| &spans[i]) {
                        for b in [s, e] {
                            assert_eq!(
                                dl.at(b.saturating_sub(from) as usize),
                                expected.at((b - ls) as usize),
                                "{}, byte {b}",
                                context()
                            );
                        }
                    }
                }
            }
        }
    }

    /// The end of a line's content, read in pieces, is where a read of the whole line puts it:
    /// line endings of `\r`s and a `\n` across piece boundaries, the end of the file.
    #[test]
    fn content_ends_where_the_whole_line_ends() {
        for (text, at, want) in [
            (format!("{}\r\r\nnext", "a".repeat(8191)), 5, 8191),
            (format!("{}\r\nnext", "a".repeat(8192)), 0, 8192),
            (format!("{}\rb\r", "a".repeat(20_000)), 7, 20_002),
            ("\r\n".to_string(), 0, 0),
            ("ab".to_string(), 1, 2),
        ] {
            let got = content_end(&mut io::Cursor::new(text.as_bytes()), at);
            assert_eq!(got.ok(), Some(want), "{at} in {} bytes", text.len());
        }
    }

    #[test]
    fn long_lines_are_cut_around_the_label() {
        let line = format!("{}TARGET{}", "a".repeat(500), "b".repeat(500));
        let dl = DisplayLine::build(line.as_bytes(), 0, &[500]);
        assert!(dl.text.starts_with('…') && dl.text.ends_with('…'));
        let at = dl.at(500);
        assert_eq!(&dl.text[at..at + 6], "TARGET");
    }
}
