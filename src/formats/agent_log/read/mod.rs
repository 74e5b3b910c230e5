//! Agent logs: link-assistant/agent (and OpenCode-style) JSON output, optionally wrapped by the
//! hive-mind `solve.mjs` runner.
//!
//! The format (see `agent-log-format.md` in the reference) mixes:
//! * wrapper lines prefixed `[2026-02-01T12:30:28.417Z] [INFO] ` — and, when the wrapper got a
//!   multi-line chunk in one write, continuation lines with no prefix at all;
//! * pretty-printed JSON objects (`{` alone on a line, 2-space indentation, `}` alone) or compact
//!   NDJSON, one object per line;
//! * lines longer than ~64 KiB that the wrapper split in two, inserting `\n[ts] [INFO] ` in the
//!   middle of a JSON string (sometimes right after a backslash);
//! * non-JSON lines: wrapper status text, blank lines, a raw `ZodError: [` dump from stderr.
//!
//! [`AgentLogReader`] streams the file line by line and yields [`LogRecord`]s. A JSON object is
//! re-joined with a lexer ([`Depth`]): a newline inside a string is a split artifact and is
//! dropped, any other newline is kept. Memory is bounded by the largest single record.

use std::io::BufRead;
use std::sync::{Arc, LazyLock};

use regex::bytes::Regex;

use crate::core::IngestError;
use crate::json::scan::{Depth, Fed};
use crate::source::{FileId, Span};

mod record;

pub use record::{
    BusEvent, Decoded, Decoding, JsonRecord, Light, LightFilter, LogRecord, LogStats, ObjectParser,
    Pending, RecordView, Texts,
};

/// The `solve.mjs` wrapper prefix: `[ISO timestamp] [LEVEL] `.
static PREFIX: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] \[(?:INFO|WARNING|ERROR|STDOUT|STDERR)\] ",
    )
    .ok()
});

/// A raw error dump printed by the runtime to stderr, e.g. `ZodError: [`.
static RAW_ERROR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z_][A-Za-z0-9_]*Error): *[\[{]").ok());

/// A line of a runtime's code frame (Bun prints the source around a throw: `1433 |   throw …`,
/// then a caret line) — what precedes an uncaught error's `Name: message` line.
static CODE_FRAME: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"^\s*(?:\d+ \|.*|\^+)\s*$").ok());

/// The headline of an uncaught error printed raw: `ProviderModelNotFoundError: …`, `error: …`.
static UNCAUGHT: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"^([A-Za-z_][A-Za-z0-9_]*(?:Error|Exception|Rejection)|error): (.*?)\s*$")
        .ok()
});

/// A wrapper's verdict on the agent's command: `✅ Agent command completed`, `Exit Code: 1`.
static WRAPPER_STATUS: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"^(?:✅ ?(?:[A-Za-z]+ )?command completed(?: successfully)?|Exit Code: (-?\d+))\s*$",
    )
    .ok()
});

/// A command line that runs an agent (or the wrapper that runs one) with a model: the program's
/// name as a word or a path's last part, then, among its arguments, `--model X` or `--model=X`.
static COMMAND: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r#"(?:^|[\s/|(&;$])(?:agent|solve|opencode|kilo|kilocode)(?:\s[^|;&]*?)?\s--model(?:=|\s+)["']?([A-Za-z0-9][A-Za-z0-9._:@/-]*)"#,
    )
    .ok()
});

/// A word that the run was stopped from outside: an interrupt (the terminal's `^C`, solve's
/// `❌ Interrupted (CTRL+C)`), a kill (`❌ Terminated`), a CI job cancelled or out of time.
static STOPPED: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"^(?:\^C\s*$|❌ (?:Interrupted \(CTRL\+C\)|Terminated)\s*$|##\[error\](?:The operation was canceled\.|The job running on runner .* has exceeded the maximum execution time of \d+ minutes\.)|Error: The action '.*' has timed out after \d+ minutes\.)",
    )
    .ok()
});

/// Largest JSON value rewind re-joins (a single record bigger than this is reported, not read).
const MAX_RECORD: usize = 256 << 20;

/// Length of the wrapper prefix at the start of `line`, if there is one.
pub fn prefix_len(line: &[u8]) -> Option<usize> {
    if line.first() != Some(&b'[') {
        return None;
    }
    // The regex's `\d` also takes other scripts' digits: it decides for non-ASCII heads only.
    let head = line.get(..64).unwrap_or(line);
    if !head.is_ascii() {
        return PREFIX.as_ref()?.find(line).map(|m| m.end());
    }
    const STAMP: &[u8; 28] = b"[0000-00-00T00:00:00.000Z] [";
    let stamp = line.get(..STAMP.len())?;
    let shaped = stamp.iter().zip(STAMP).all(|(c, s)| match s {
        b'0' => c.is_ascii_digit(),
        _ => c == s,
    });
    if !shaped {
        return None;
    }
    let rest = &line[STAMP.len()..];
    ["INFO", "WARNING", "ERROR", "STDOUT", "STDERR"]
        .iter()
        .find(|level| {
            rest.strip_prefix(level.as_bytes())
                .is_some_and(|after| after.starts_with(b"] "))
        })
        .map(|level| STAMP.len() + level.len() + 2)
}

/// Length of the prefix a GitHub Actions job log puts before each line of a step's output, if
/// `line` has one: the timestamp of a downloaded raw log (`2026-01-02T03:04:05.1234567Z `, the
/// log's first line after a byte-order mark), or the job, the step and that timestamp, separated
/// by tabs, as `gh run view --log` prints them (`build\tRun agent\t2026-…Z `).
pub fn ci_prefix_len(line: &[u8]) -> Option<usize> {
    let bom = if line.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    if let Some(n) = ci_timestamp_len(&line[bom..]) {
        return Some(bom + n);
    }
    // `job<TAB>step<TAB>timestamp `: the names hold no tab; only the head is searched.
    let head = line.get(..512).unwrap_or(line);
    let job = memchr::memchr(b'\t', head)?;
    let step = job + 1 + memchr::memchr(b'\t', &head[job + 1..])?;
    if job == 0 || head[..step].contains(&b'\n') {
        return None;
    }
    ci_timestamp_len(&line[step + 1..]).map(|n| step + 1 + n)
}

/// Length of a GitHub Actions timestamp and the space after it at the start of `line`:
/// `2026-01-02T03:04:05Z `, with up to nine fractional digits.
fn ci_timestamp_len(line: &[u8]) -> Option<usize> {
    const STAMP: &[u8; 19] = b"0000-00-00T00:00:00";
    let stamp = line.get(..STAMP.len())?;
    let shaped = stamp.iter().zip(STAMP).all(|(c, s)| match s {
        b'0' => c.is_ascii_digit(),
        _ => c == s,
    });
    if !shaped {
        return None;
    }
    let mut i = STAMP.len();
    if line.get(i) == Some(&b'.') {
        let digits = line[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if !(1..=9).contains(&digits) {
            return None;
        }
        i += 1 + digits;
    }
    (line.get(i..i + 2) == Some(b"Z ")).then_some(i + 2)
}

/// Length of whatever prefix a line of an agent log carries: the `solve.mjs` wrapper's
/// ([`prefix_len`]) or a GitHub Actions job log's ([`ci_prefix_len`]).
pub fn line_prefix_len(line: &[u8]) -> Option<usize> {
    prefix_len(line).or_else(|| ci_prefix_len(line))
}

#[derive(Debug, Clone)]
enum OpenKind {
    Object,
    /// An object taken as its whole line, not framed (see [`AgentLogReader::with_whole_lines`]).
    Line,
    RawError(String),
}

struct Open {
    kind: OpenKind,
    start: u64,
    /// Where its text starts in everything the reader re-joined (see [`Buffer`]).
    text: usize,
    /// Where its segments start among all the reader's segments.
    segments: usize,
    lexer: Depth,
    /// One past the last byte consumed, in the file.
    end: u64,
}

/// The texts and segments of the values re-joined since the last [`AgentLogReader::take_texts`]
/// (and of the open one), addressed by their position in everything the reader re-joined.
#[derive(Default)]
struct Buffer {
    text_base: usize,
    text: String,
    segment_base: usize,
    segments: Vec<(usize, u64)>,
}

impl Buffer {
    /// Drops the text and segments from the positions `text` and `segment` on (an abandoned
    /// value's, which is always the last one).
    fn truncate(&mut self, text: usize, segment: usize) {
        let mut cut = text.saturating_sub(self.text_base).min(self.text.len());
        while !self.text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.text.truncate(cut);
        self.segments
            .truncate(segment.saturating_sub(self.segment_base));
    }

    fn text_end(&self) -> usize {
        self.text_base + self.text.len()
    }

    fn segment_end(&self) -> usize {
        self.segment_base + self.segments.len()
    }

    /// The text from position `from` on.
    fn text_from(&self, from: usize) -> &str {
        self.text
            .get(from.saturating_sub(self.text_base)..)
            .unwrap_or_default()
    }

    /// Hands over the texts and segments before the positions `text` and `segment`; what comes
    /// after them stays.
    fn take(&mut self, text: usize, segment: usize) -> Texts {
        let mut cut = text.saturating_sub(self.text_base).min(self.text.len());
        while !self.text.is_char_boundary(cut) {
            cut -= 1;
        }
        let seg_cut = segment
            .saturating_sub(self.segment_base)
            .min(self.segments.len());
        // Room for as much as this batch came to hold (batches of many small records are
        // shorter than those that reach the byte limit, and growing copies the text), up to
        // 2 MiB: a batch handed on keeps its room while it is decoded.
        let mut rest = String::with_capacity(self.text.capacity().clamp(4096, 2 << 20));
        rest.push_str(self.text.get(cut..).unwrap_or_default());
        let mut rest_segments = Vec::with_capacity(self.segments.capacity().clamp(64, 1 << 16));
        rest_segments.extend_from_slice(self.segments.get(seg_cut..).unwrap_or_default());
        let mut text_taken = std::mem::replace(&mut self.text, rest);
        text_taken.truncate(cut);
        let mut segments_taken = std::mem::replace(&mut self.segments, rest_segments);
        segments_taken.truncate(seg_cut);
        let taken = Texts {
            text_base: self.text_base,
            text: text_taken,
            segment_base: self.segment_base,
            segments: segments_taken,
        };
        self.text_base += cut;
        self.segment_base += seg_cut;
        taken
    }
}

/// Streams [`LogRecord`]s out of an agent log.
pub struct AgentLogReader<R> {
    /// Always there but while [`Self::step`] reads a line in its buffer.
    input: Option<R>,
    file: FileId,
    /// File offset of the next physical line.
    offset: u64,
    line_no: u64,
    buf: Vec<u8>,
    open: Option<Open>,
    ready: std::collections::VecDeque<LogRecord>,
    finished: bool,
    stats: LogStats,
    /// Start of the code frame the previous text lines formed, if they did.
    frame: Option<u64>,
    decoding: Decoding,
    deferred: bool,
    /// See [`AgentLogReader::with_whole_lines`].
    whole_lines: bool,
    buffer: Buffer,
    /// The ends (in `buffer`'s positions) of the text and segments of the values yielded so far.
    yielded: (usize, usize),
    /// The last piece read was cut before the end of its physical line (see [`PIECE`]).
    mid_line: bool,
    /// Where the physical line the reader is in starts.
    line_start: u64,
    /// The rest of the physical line is text already recorded (a text line longer than a piece).
    text_continues: bool,
    /// [`PIECE`], or less in tests.
    piece: usize,
    /// The input's line ends were looked at (see [`crate::json::lines::refuse_cr_line_ends`]).
    line_ends_checked: bool,
    /// The timestamp of the last prefixed line, and of the line the last JSON value closed on,
    /// as the prefix wrote it: see [`AgentLogReader::stamps`].
    line_stamp: Stamp,
    json_stamp: Stamp,
    /// Inside a top-level JSON array of records (see [`AgentLogReader::array_punctuation`]).
    in_array: bool,
    /// A JSON value started before (an array of records opens only before any).
    value_seen: bool,
}

/// A line prefix's timestamp, as written (`2026-02-01T12:30:28.417Z`).
#[derive(Debug, Clone, Copy, Default)]
struct Stamp {
    bytes: [u8; 32],
    len: u8,
}

impl Stamp {
    /// The timestamp of a line's prefix (`prefix`, the bytes [`line_prefix_len`] measured).
    fn of(prefix: &[u8]) -> Option<Stamp> {
        let prefix = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(prefix);
        let stamp = match prefix.first() {
            // `[2026-02-01T12:30:28.417Z] [INFO] `
            Some(b'[') => prefix.get(1..25)?,
            // `job<TAB>step<TAB>2026-…Z ` or `2026-…Z `
            _ => {
                let from = prefix
                    .iter()
                    .rposition(|b| *b == b'\t')
                    .map_or(0, |t| t + 1);
                prefix.get(from..prefix.len().checked_sub(1)?)?
            }
        };
        let mut bytes = [0; 32];
        bytes.get_mut(..stamp.len())?.copy_from_slice(stamp);
        Some(Stamp {
            bytes,
            len: stamp.len() as u8,
        })
    }

    /// In ms since the epoch.
    fn ms(&self) -> Option<u64> {
        let text = std::str::from_utf8(&self.bytes[..usize::from(self.len)]).ok()?;
        let t = chrono::DateTime::parse_from_rfc3339(text).ok()?;
        u64::try_from(t.timestamp_millis()).ok()
    }
}

/// Longest piece of a physical line handled at once. A longer line (a log written without
/// newlines, thousands of objects on one line) is read piece by piece, so the reader holds one
/// piece and the objects it closes, not the whole line: memory stays bounded by the largest
/// object, whatever the line's length. 128 KiB is above the longest lines loggers write (the
/// solve.mjs wrapper splits its output at 64 KiB) and small enough that the texts still waiting
/// when a batch is handed over, which are copied into the next batch's buffer, stay small: with
/// 1 MiB pieces a log written on one line peaked at twice the memory of the same log with
/// newlines.
const PIECE: usize = 1 << 17;

/// How many bytes at the end of `bytes` are an incomplete UTF-8 character (0 to 3).
fn incomplete_char_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(4) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            // A lead byte (or ASCII): the character it starts needs this many bytes.
            let needs = match b {
                0xF0..=0xFF => 4,
                0xE0..=0xEF => 3,
                0xC0..=0xDF => 2,
                _ => 1,
            };
            return if needs > back { back } else { 0 };
        }
    }
    0
}

impl<R: BufRead> AgentLogReader<R> {
    pub fn new(input: R, file: FileId) -> Self {
        Self {
            input: Some(input),
            file,
            offset: 0,
            line_no: 0,
            buf: Vec::with_capacity(64 * 1024),
            open: None,
            ready: std::collections::VecDeque::new(),
            finished: false,
            stats: LogStats::default(),
            frame: None,
            decoding: Decoding::default(),
            deferred: false,
            whole_lines: false,
            buffer: Buffer::default(),
            yielded: (0, 0),
            mid_line: false,
            line_start: 0,
            text_continues: false,
            piece: PIECE,
            line_ends_checked: false,
            line_stamp: Stamp::default(),
            json_stamp: Stamp::default(),
            in_array: false,
            value_seen: false,
        }
    }

    /// Appends the rest of the physical line to `self.buf`, or as much of it as fits in a
    /// [`PIECE`]; whether a newline ended it.
    fn read_piece(&mut self) -> std::io::Result<bool> {
        let Some(input) = self.input.as_mut() else {
            return Ok(false);
        };
        loop {
            let available = match input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(false);
            }
            let room = self.piece.saturating_sub(self.buf.len()).max(1);
            let window = &available[..available.len().min(room)];
            if let Some(i) = memchr::memchr(b'\n', window) {
                self.buf.extend_from_slice(&window[..=i]);
                input.consume(i + 1);
                return Ok(true);
            }
            let n = window.len();
            self.buf.extend_from_slice(window);
            input.consume(n);
            if self.buf.len() >= self.piece {
                return Ok(false);
            }
        }
    }

    /// The texts of the [`LogRecord::Pending`] values yielded since the last call, which
    /// [`Pending::decode`] reads them from.
    pub fn take_texts(&mut self) -> Arc<Texts> {
        let (text, segments) = self.yielded;
        Arc::new(self.buffer.take(text, segments))
    }

    /// JSON values are yielded as [`LogRecord::Pending`], to be decoded by the caller (on other
    /// threads) with [`Pending::decode`] and counted with [`LogStats::count_decoded`].
    pub fn deferred(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// A deferred reader yields a line that starts with `{` and ends with `}` (a compact log's
    /// line), complete, unprefixed and outside any value, as one object without framing it: framing (where
    /// each value ends, through its strings and brackets) is most of the reading of a compact
    /// log, and the decoding reads the whole text again anyway. Such an object is framing's
    /// object exactly when its text is one JSON object (a valid object closes at its last byte,
    /// and not before); the decoding must check that, and when it is not (it does not decode,
    /// [`Pending::whole_line`]) the log must be read again without this: framed, the line may
    /// hold two values, or begin one that continues on the next lines.
    pub fn with_whole_lines(mut self) -> Self {
        self.whole_lines = true;
        self
    }

    /// How JSON values are decoded (set by [`Self::with_light`], [`Self::with_object_parser`]).
    pub fn decoding(&self) -> Decoding {
        self.decoding
    }

    /// Objects `filter` takes are yielded as [`LogRecord::Light`], without building their value
    /// (which is most of the cost of reading a log).
    pub fn with_light(mut self, filter: LightFilter) -> Self {
        self.decoding.light = Some(filter);
        self
    }

    /// Other objects are parsed by `parse` instead of `serde_json::from_str`.
    pub fn with_object_parser(mut self, parse: ObjectParser) -> Self {
        self.decoding.object = parse;
        self
    }

    pub fn stats(&self) -> &LogStats {
        &self.stats
    }

    /// Where the log's time stands, from its line prefixes (the wrapper's clock): the timestamp
    /// of the line the last JSON value closed on, and of the last prefixed line, in ms since the
    /// epoch (`None` for a log without timestamped prefixes).
    pub fn stamps(&self) -> (Option<u64>, Option<u64>) {
        (self.json_stamp.ms(), self.line_stamp.ms())
    }

    /// Reads the next physical line (or piece of one, see [`PIECE`]) and turns it into zero or
    /// more ready records.
    fn step(&mut self) -> Result<bool, IngestError> {
        // A log whose lines end in CR alone would be one line here: refused, not read as text.
        if !self.line_ends_checked {
            self.line_ends_checked = true;
            if let Some(input) = self.input.as_mut() {
                crate::json::lines::refuse_cr_line_ends(input)?;
            }
        }
        // Whole lines in the input's buffer are read where they are, not copied into `self.buf`
        // first: what `read_piece` would have copied, they are the same lines.
        if self.buf.is_empty()
            && let Some(mut input) = self.input.take()
        {
            let (used, result) = match input.fill_buf() {
                Ok(available) => {
                    let window = available.get(..self.piece).unwrap_or(available);
                    self.whole_lines_in(window)
                }
                // Left to `read_piece`, which retries an interruption and reports the rest.
                Err(_) => (0, Ok(())),
            };
            input.consume(used);
            self.input = Some(input);
            result?;
            if used > 0 {
                return Ok(true);
            }
        }
        // `self.buf` may start with the incomplete character the last piece ended in.
        let carried = self.buf.len();
        let has_newline = self.read_piece().map_err(IngestError::Io)?;
        if self.buf.is_empty() {
            self.finish_at_eof();
            return Ok(false);
        }
        let mut line = std::mem::take(&mut self.buf);
        let keep = self.line(&line, has_newline, carried)?;
        // The incomplete character the piece ended in starts the next piece.
        line.drain(..line.len() - keep);
        self.buf = line;
        Ok(true)
    }

    /// Reads a physical line or a piece of one (`line`, with its newline if `has_newline`), of
    /// which the first `carried` bytes were carried over from the last piece. Returns how many
    /// bytes at its end (an incomplete character) start the next piece.
    fn line(
        &mut self,
        line: &[u8],
        has_newline: bool,
        carried: usize,
    ) -> Result<usize, IngestError> {
        self.line_checked(line, has_newline, carried, None)
    }

    /// Reads the whole lines `window` starts with, up to the first that holds a NUL byte or is
    /// not UTF-8 (left to [`Self::line`], which reports where): the window is checked at once,
    /// not line by line, which for the short lines of a compact log costs less than the lines'
    /// own checks did. Returns how many bytes it read (0: no whole line to read here), and the
    /// error of the last line read, if it had one.
    fn whole_lines_in(&mut self, window: &[u8]) -> (usize, Result<(), IngestError>) {
        let Some(last) = memchr::memrchr(b'\n', window) else {
            return (0, Ok(()));
        };
        let mut checked = window.get(..=last).unwrap_or_default();
        if let Some(k) = memchr::memchr(0, checked) {
            checked = checked.get(..k).unwrap_or_default();
        }
        let text = match simdutf8::basic::from_utf8(checked) {
            Ok(text) => text,
            // Up to the first bad byte (rare: the error's position costs a second look).
            Err(_) => {
                let valid = simdutf8::compat::from_utf8(checked)
                    .map_or_else(|e| e.valid_up_to(), |text| text.len());
                match std::str::from_utf8(checked.get(..valid).unwrap_or_default()) {
                    Ok(text) => text,
                    Err(_) => return (0, Ok(())),
                }
            }
        };
        let mut used = 0;
        // The lines' ends, found with memchr's vector search (`str::split_inclusive`'s is a
        // byte loop), are ASCII: each line is a piece of `text`.
        for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
            let Some(line) = text.get(used..=end) else {
                break;
            };
            used = end + 1;
            if let Err(e) = self.line_checked(line.as_bytes(), true, 0, Some(line)) {
                return (used, Err(e));
            }
        }
        (used, Ok(()))
    }

    /// [`Self::line`]; `checked` is the line's text when it is a whole line (with its newline)
    /// already known to be UTF-8 without NUL bytes.
    #[inline(always)]
    fn line_checked(
        &mut self,
        line: &[u8],
        has_newline: bool,
        carried: usize,
        checked: Option<&str>,
    ) -> Result<usize, IngestError> {
        let n = line.len();
        // Cut before the end of its line: more of the line follows.
        let partial = !has_newline && n > carried && n >= self.piece;
        let start = self.offset;
        let continues = self.mid_line;
        if !continues {
            self.line_no += 1;
            self.stats.lines += 1;
            self.line_start = start;
        }
        let mut content_len = line.len() - usize::from(has_newline);
        let keep = if partial {
            incomplete_char_len(&line[..content_len])
        } else {
            0
        };
        content_len -= keep;
        self.offset += (n - keep) as u64;
        self.mid_line = partial;
        // The log was cut inside a multi-byte character (`head -c N`): read it up to the cut,
        // and report the cut (inside an object, the object the log ends inside is reported).
        let mut cut_char = None;
        if !has_newline
            && !partial
            && let Err(e) = simdutf8::compat::from_utf8(&line[..content_len])
            && e.error_len().is_none()
        {
            cut_char = Some((
                start + e.valid_up_to() as u64,
                (content_len - e.valid_up_to()) as u64,
            ));
            content_len = e.valid_up_to();
        }
        let text = match checked.and_then(|text| text.get(..content_len)) {
            Some(text) => text,
            None => {
                if let Some(k) = memchr::memchr(0, &line[..content_len]) {
                    return Err(IngestError::Binary {
                        offset: start + k as u64,
                        line: self.line_no,
                    });
                }
                match simdutf8::compat::from_utf8(&line[..content_len]) {
                    Ok(text) => text,
                    Err(e) => {
                        return Err(IngestError::InvalidUtf8 {
                            offset: start + e.valid_up_to() as u64,
                            line: self.line_no,
                        });
                    }
                }
            }
        };
        // The prefix is ASCII, so it ends on a character boundary.
        let prefix = match continues {
            true => 0,
            false => line_prefix_len(text.as_bytes()).unwrap_or(0),
        };
        if prefix > 0 {
            self.stats.prefixed_lines += 1;
            if let Some(stamp) = Stamp::of(&text.as_bytes()[..prefix]) {
                self.line_stamp = stamp;
            }
        }
        let newline_at = has_newline.then_some(start + content_len as u64);
        if continues && self.text_continues {
            // The rest of a text line longer than a piece: recorded with its first piece.
            self.text_continues = partial;
        } else {
            self.text_continues = false;
            self.process(
                text.get(prefix..).unwrap_or(text),
                start + prefix as u64,
                continues,
                partial,
                newline_at,
            );
        }
        if let Some((offset, len)) = cut_char
            && self.open.is_none()
        {
            self.stats.undecodable += 1;
            self.stats.truncated = true;
            self.ready.push_back(LogRecord::Undecodable {
                span: Span::new(self.file, offset, len),
                reason: "the log ends inside a multi-byte character: it was cut here".into(),
                at: None,
                truncated: true,
                mentions: (Vec::new(), Vec::new()),
            });
        }
        Ok(keep)
    }

    /// Handles the content of one physical line (prefix already stripped), or of a piece of
    /// one: `continues` when it is not the line's first piece, `partial` when it is not its last.
    ///
    /// Every cut below falls right after an ASCII byte (a bracket, a `\r`, whitespace), so the
    /// pieces stay `&str` and are copied into the record once, without re-validation.
    fn process(
        &mut self,
        content: &str,
        at: u64,
        continues: bool,
        partial: bool,
        newline_at: Option<u64>,
    ) {
        let line_start = self.line_start;
        // A line the wrapper prefixed may be the first half of a 64 KiB split, which can end in
        // `}` inside a string: only unprefixed lines (an agent's own NDJSON) are taken whole.
        if self.whole_lines
            && self.deferred
            && self.open.is_none()
            && at == line_start
            && !continues
            && !partial
            && newline_at.is_some()
            && content.len() >= 2
            && content.starts_with('{')
            && content.ends_with('}')
        {
            // What framing yields of a line that is one object (see `with_whole_lines`):
            // `open_at`, `push_piece` and a deferred `close_open` in one step (through them, a
            // compact log costs 1.5% more instructions); the test
            // `lines_taken_whole_read_as_framed_lines` holds the two to the same records.
            self.value_closes();
            let (text, segments) = (self.buffer.text_end(), self.buffer.segment_end());
            self.buffer.segments.push((0, at));
            self.buffer.text.push_str(content);
            self.ready.push_back(LogRecord::Pending(Pending {
                span: Span::new(self.file, at, content.len() as u64),
                kind: OpenKind::Line,
                text: text..self.buffer.text_end(),
                segments: segments..self.buffer.segment_end(),
            }));
            return;
        }
        let mut content = content;
        let mut at = at;
        if let Some(open) = &self.open
            && !continues
            && !open.lexer.in_string()
            && breaks_value(content, self.buffer.text_from(open.text))
        {
            self.abort_open(format!(
                "this JSON object is cut off: a line that cannot continue it starts at byte {at}"
            ));
        }
        loop {
            if let Some(open) = &mut self.open {
                let mut piece = content;
                // A raw `\r` inside a string can only be a line-ending artifact.
                if open.lexer.in_string() && !partial {
                    piece = piece.strip_suffix('\r').unwrap_or(piece);
                }
                match open.lexer.feed(piece.as_bytes()) {
                    Fed::Open => {
                        let buffer = &mut self.buffer;
                        push_piece(open, buffer, piece, at);
                        if open.lexer.in_string() {
                            if newline_at.is_some() {
                                self.stats.rejoined_splits += 1;
                            }
                        } else if let Some(nl) = newline_at {
                            buffer.segments.push((buffer.text_end() - open.text, nl));
                            buffer.text.push('\n');
                            open.end = nl + 1;
                        }
                        if buffer.text_end() - open.text > MAX_RECORD {
                            self.abort_open(format!(
                                "a single JSON value larger than {} MiB",
                                MAX_RECORD >> 20
                            ));
                        }
                        return;
                    }
                    Fed::Closed(k) => {
                        let (value, rest) = piece.split_at_checked(k).unwrap_or((piece, ""));
                        push_piece(open, &mut self.buffer, value, at);
                        self.close_open();
                        at += k as u64;
                        let trimmed = rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
                        if trimmed.is_empty() {
                            return;
                        }
                        at += (rest.len() - trimmed.len()) as u64;
                        content = trimmed;
                    }
                }
                continue;
            }
            // No open value: start one, or this line is text.
            let skipped = self.array_punctuation(content);
            if skipped > 0 {
                content = &content[skipped..];
                at += skipped as u64;
                if content.is_empty() {
                    return;
                }
                continue;
            }
            if content.starts_with('{') {
                self.frame = None;
                self.open_at(OpenKind::Object, at);
                continue;
            }
            if let Some(re) = RAW_ERROR.as_ref()
                && let Some(caps) = re.captures(content.as_bytes())
                && let Some(name) = caps.get(1)
            {
                let bracket = caps.get(0).map_or(0, |m| m.end() - 1);
                content = content.get(bracket..).unwrap_or(content);
                at += bracket as u64;
                let kind = OpenKind::RawError(String::from_utf8_lossy(name.as_bytes()).into());
                self.open_at(kind, at);
                continue;
            }
            self.text_line(content, at, line_start, partial, newline_at);
            return;
        }
    }

    /// How many bytes at the start of `content` (no value open) are the punctuation of a top-level
    /// JSON array of records rather than text: the `[` that opens one (alone, or followed by an
    /// object), and inside it the whitespace and commas between elements and the closing `]`.
    /// `claude-code-action` keeps a run's `stream-json` messages as such an array, compact
    /// (`[{…},{…}]`) or pretty-printed (`[`, then `  {` indented, `  },`, …, `]`). Every cut falls
    /// after an ASCII byte.
    fn array_punctuation(&mut self, content: &str) -> usize {
        let bytes = content.as_bytes();
        if !self.in_array {
            // An array opens where no value did before: a line that is `[`, or `[` then `{`.
            let rest = content.strip_prefix('[').map(str::trim_start);
            let opens =
                !self.value_seen && rest.is_some_and(|r| r.is_empty() || r.starts_with('{'));
            if !opens {
                return 0;
            }
            self.in_array = true;
            return 1 + bytes[1..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        }
        let mut k = 0;
        while let Some(&b) = bytes.get(k) {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' | b',' => k += 1,
                b']' => {
                    self.in_array = false;
                    k += 1;
                    k += bytes[k..]
                        .iter()
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
                    break;
                }
                _ => break,
            }
        }
        k
    }

    /// A line (or its first piece) that starts no value, from `content` at `at` on: a line of a
    /// code frame, the uncaught error under one, the wrapper's status line, or text.
    fn text_line(
        &mut self,
        content: &str,
        at: u64,
        line_start: u64,
        partial: bool,
        newline_at: Option<u64>,
    ) {
        let end = newline_at.unwrap_or(at + content.len() as u64);
        // A text line longer than a piece is one text record, spanning its first piece.
        self.text_continues = partial;
        self.stats.text_lines += 1;
        let span = Span::new(self.file, line_start, end - line_start);
        let text = content;
        let frame_start = self.frame.take();
        if text.trim().is_empty() && frame_start.is_some() {
            // Node prints a blank line between the caret and the error.
            self.frame = frame_start;
        } else if CODE_FRAME.as_ref().is_some_and(|re| re.is_match(text)) {
            self.frame = Some(frame_start.unwrap_or(line_start));
        } else if frame_start.is_some()
            && let Some(caps) = UNCAUGHT.as_ref().and_then(|re| re.captures(text))
        {
            let field = |i| caps.get(i).map_or("", |m| m.as_str()).to_owned();
            self.ready.push_back(LogRecord::Uncaught {
                name: field(1),
                message: field(2),
                span: Span::new(self.file, at, end.saturating_sub(at)),
            });
            return;
        } else if STOPPED
            .as_ref()
            .is_some_and(|re| re.is_match(text.trim_start()))
        {
            let words = text.trim();
            let timeout = words.contains("time");
            self.ready.push_back(LogRecord::Stopped {
                span: Span::new(self.file, at, end.saturating_sub(at)),
                words: words.to_owned(),
                timeout,
            });
            return;
        } else if let Some(spec) = COMMAND.as_ref().and_then(|re| re.captures(text))
            && let Some(model) = spec.get(1)
        {
            self.ready.push_back(LogRecord::Command {
                spec: model.as_str().to_owned(),
                span: Span::new(self.file, at + model.start() as u64, model.len() as u64),
            });
            return;
        } else if let Some(caps) = WRAPPER_STATUS.as_ref().and_then(|re| re.captures(text)) {
            let success = caps
                .get(1)
                .is_none_or(|code| code.as_str().parse::<i64>().is_ok_and(|c| c == 0));
            self.ready.push_back(LogRecord::Status {
                span,
                success,
                words: text.trim().to_owned(),
            });
            return;
        }
        self.ready.push_back(LogRecord::Text(span));
    }

    /// A value closes on this line, taken whole: no code frame goes on across it, and the log's
    /// time stands at the line's stamp.
    fn value_closes(&mut self) {
        self.value_seen = true;
        self.frame = None;
        self.json_stamp = self.line_stamp;
    }

    /// Opens a value of `kind` whose opening bracket is at `at`.
    fn open_at(&mut self, kind: OpenKind, at: u64) {
        self.value_seen = true;
        self.open = Some(Open {
            kind,
            start: at,
            text: self.buffer.text_end(),
            segments: self.buffer.segment_end(),
            lexer: Depth::default(),
            end: at,
        });
    }

    fn close_open(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        self.json_stamp = self.line_stamp;
        let pending = Pending {
            span: Span::new(self.file, open.start, open.end.saturating_sub(open.start)),
            kind: open.kind,
            text: open.text..self.buffer.text_end(),
            segments: open.segments..self.buffer.segment_end(),
        };
        if self.deferred {
            self.ready.push_back(LogRecord::Pending(pending));
        } else {
            // Values before this one were decoded when they closed: its text is all there is.
            self.yielded = (pending.text.end, pending.segments.end);
            let texts = self.take_texts();
            let record = pending.decode(&texts, self.decoding);
            self.stats.count_decoded(record.decoded());
            self.ready.push_back(record);
        }
    }

    fn abort_open(&mut self, reason: String) {
        let Some(open) = self.open.take() else {
            return;
        };
        let named = record::mentions(self.buffer.text_from(open.text));
        self.buffer.truncate(open.text, open.segments);
        let span = Span::new(self.file, open.start, open.end.saturating_sub(open.start));
        match open.kind {
            OpenKind::Object | OpenKind::Line => {
                self.stats.undecodable += 1;
                self.ready.push_back(LogRecord::Undecodable {
                    span,
                    reason,
                    at: None,
                    truncated: false,
                    mentions: named,
                });
            }
            OpenKind::RawError(_) => {
                self.stats.text_lines += 1;
                self.ready.push_back(LogRecord::Text(span));
            }
        }
    }

    fn finish_at_eof(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if let Some(open) = self.open.take() {
            let named = record::mentions(self.buffer.text_from(open.text));
            self.buffer.truncate(open.text, open.segments);
            let span = Span::new(self.file, open.start, open.end.saturating_sub(open.start));
            match open.kind {
                OpenKind::Object | OpenKind::Line => {
                    self.stats.undecodable += 1;
                    self.stats.truncated = true;
                    self.ready.push_back(LogRecord::Undecodable {
                        span,
                        reason: "the log ends inside this JSON object".into(),
                        at: None,
                        truncated: true,
                        mentions: named,
                    });
                }
                OpenKind::RawError(_) => {
                    self.stats.text_lines += 1;
                    self.ready.push_back(LogRecord::Text(span));
                }
            }
        }
    }
}

fn push_piece(open: &mut Open, buffer: &mut Buffer, piece: &str, at: u64) {
    if piece.is_empty() {
        return;
    }
    buffer.segments.push((buffer.text_end() - open.text, at));
    buffer.text.push_str(piece);
    open.end = at + piece.len() as u64;
}

/// Whether a line cannot continue the value whose text so far is `open` (outside a string).
fn breaks_value(content: &str, open: &str) -> bool {
    let content = content.as_bytes();
    if content.first() == Some(&b'{') {
        // A pretty-printed top-level object starts with `{` alone on its line; nested ones are
        // indented. A `{` at column 0 can only continue the value if the wrapper split a compact
        // line right where a value was expected (after `:`, `,` or `[`).
        let alone = content.iter().skip(1).all(u8::is_ascii_whitespace);
        let expects_value = matches!(open.trim_end().as_bytes().last(), Some(b':' | b',' | b'['));
        return alone || !expects_value;
    }
    match content.iter().find(|c| !c.is_ascii_whitespace()) {
        None => false,
        Some(c) => !matches!(
            c,
            b'{' | b'}' | b'[' | b']' | b'"' | b',' | b':' | b'-' | b'0'
                ..=b'9' | b't' | b'f' | b'n'
        ),
    }
}

impl<R: BufRead> Iterator for AgentLogReader<R> {
    type Item = Result<LogRecord, IngestError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(rec) = self.ready.pop_front() {
                if let LogRecord::Pending(p) = &rec {
                    self.yielded = (p.text.end, p.segments.end);
                }
                return Some(Ok(rec));
            }
            if self.finished {
                return None;
            }
            match self.step() {
                Ok(_) => {}
                Err(e) => {
                    self.finished = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
