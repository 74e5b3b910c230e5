//! Server-sent events framing, as the WHATWG HTML standard parses an event stream (§9.2.5–6).
//!
//! [`SseFramer`] is a push parser: feed it the bytes of a stream in chunks of any size and it
//! dispatches events as soon as they are complete. The result does not depend on how the bytes
//! were chunked (a `\r` that ends one chunk may be half of a `\r\n`; a line may be cut anywhere):
//! line assembly keeps only the current partial line, and each complete line is a comment or a
//! field (`parse_line`).
//!
//! What the standard says and rewind follows: a leading BOM is dropped; lines end with CRLF, LF or
//! a lone CR; a line starting with `:` is a comment; `field: value` loses one space after the
//! colon; `data` lines join with `\n`; `event` sets the type; `id` sets the last event id, which
//! *persists* across events until changed (an `id` containing NUL is ignored); `retry` is kept
//! when it is all ASCII digits; other fields are ignored; a blank line dispatches the event when
//! its data buffer is not empty. Where rewind departs from a browser: it is reading a capture, not a
//! live connection, so an event still open at the end of the input is dispatched too, marked
//! [`SseEvent::unterminated`], instead of being silently dropped; and bytes that are not UTF-8 are
//! an error (a capture with them is not what it claims to be) rather than U+FFFD.
//!
//! Offsets are *stream offsets*: byte positions in the bytes fed. For a raw `.sse` file they are
//! file offsets; for a body stored inside a JSON string, `capture::Locator` maps them back.

use crate::core::IngestError;

pub use crate::core::MAX_LINE;

/// What a field line sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Data,
    Event,
    Id,
    Retry,
    /// A field the standard ignores (its name).
    Other(String),
}

/// One field line of an event, with where its parts are (stream offsets, end exclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub kind: FieldKind,
    /// The whole line, without its line ending.
    pub line: (u64, u64),
    /// The value (after `:` and the one optional space).
    pub value: (u64, u64),
}

/// A dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` value, when one was given (the standard's default type is `message`).
    pub event_type: Option<String>,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched (ids persist across events).
    pub id: Option<String>,
    /// A valid `retry:` of this event.
    pub retry: Option<u64>,
    /// From the start of the event's first field line to the end of its last one (line endings
    /// excluded).
    pub start: u64,
    pub end: u64,
    /// 1-based line number of the first field line.
    pub line: u64,
    /// Every field line, in order.
    pub fields: Vec<Field>,
    /// The input ended before the blank line that dispatches it.
    pub unterminated: bool,
}

impl SseEvent {
    /// Where each data line's value is: `(offset in data, stream offset)`, ascending.
    pub fn data_segments(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mut at = 0usize;
        self.fields
            .iter()
            .filter(|f| f.kind == FieldKind::Data)
            .map(move |f| {
                let here = at;
                at += (f.value.1 - f.value.0) as usize + 1;
                (here, f.value.0)
            })
    }

    fn clear(&mut self) {
        self.event_type = None;
        self.data.clear();
        self.id = None;
        self.retry = None;
        self.start = 0;
        self.end = 0;
        self.line = 0;
        self.fields.clear();
        self.unterminated = false;
    }
}

/// Counters about what the framer saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SseStats {
    pub lines: u64,
    pub comments: u64,
    pub events: u64,
    /// Blank-line-terminated field groups with no data: the standard dispatches nothing.
    pub events_without_data: u64,
    /// The first and the last of them that named their type (`event: message_start` with no
    /// `data:`): they still tell the protocol of a stream cut before its first data.
    pub first_named_without_data: Option<NamedWithoutData>,
    pub last_named_without_data: Option<NamedWithoutData>,
    pub ignored_fields: u64,
    pub bom: bool,
}

/// A field group with an `event:` type and no data.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NamedWithoutData {
    pub event_type: String,
    /// Stream offsets of its first and past its last field line.
    pub start: u64,
    pub end: u64,
    /// The input ended inside it (no blank line after it).
    pub unterminated: bool,
}

/// A line of an event stream, as the grammar sees it.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Blank,
    Comment,
    /// `name[:[ ]value]`; `value_at` is the value's byte offset in the line.
    Field {
        name: &'a str,
        value: &'a str,
        value_at: usize,
    },
}

/// Parses one complete line (without its line ending): blank, a comment (`:` first), or a
/// field `name[:[ ]value]` (one space after the colon is not part of the value).
fn parse_line(line: &str) -> Line<'_> {
    if line.is_empty() {
        return Line::Blank;
    }
    if line.starts_with(':') {
        return Line::Comment;
    }
    let (name, value) = match line.split_once(':') {
        Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
        None => (line, ""),
    };
    Line::Field {
        name,
        value,
        value_at: line.len() - value.len(),
    }
}

/// Splits a byte stream into lines (CRLF, LF or lone CR), whatever the chunking.
#[derive(Debug, Default, Clone)]
pub struct LineSplitter {
    partial: Vec<u8>,
    /// Stream offset of the current line's first byte.
    line_start: u64,
    /// Bytes consumed so far.
    pos: u64,
    /// The last chunk ended with `\r`: a `\n` opening the next chunk belongs to it.
    skip_lf: bool,
    /// 1-based number of the current line.
    line_no: u64,
    started: bool,
    pub bom: bool,
}

impl LineSplitter {
    pub fn new() -> Self {
        Self {
            line_no: 1,
            ..Self::default()
        }
    }

    /// Feeds a chunk; `on_line(text, start, line_no)` gets each complete line.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        on_line: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        while !chunk.is_empty() {
            if self.skip_lf {
                self.skip_lf = false;
                if chunk[0] == b'\n' {
                    chunk = &chunk[1..];
                    self.pos += 1;
                    self.line_start = self.pos;
                    continue;
                }
            }
            match memchr::memchr2(b'\n', b'\r', chunk) {
                None => {
                    if self.partial.len() + chunk.len() > MAX_LINE {
                        return Err(IngestError::LineTooLong {
                            offset: self.line_start,
                            line: self.line_no,
                            max: MAX_LINE,
                        });
                    }
                    self.partial.extend_from_slice(chunk);
                    self.pos += chunk.len() as u64;
                    return Ok(());
                }
                Some(i) => {
                    let ending = match (chunk[i], chunk.get(i + 1)) {
                        (b'\r', Some(b'\n')) => 2,
                        (b'\r', None) => {
                            self.skip_lf = true;
                            1
                        }
                        _ => 1,
                    };
                    if self.partial.is_empty() {
                        self.line(&chunk[..i], on_line)?;
                    } else {
                        let mut whole = std::mem::take(&mut self.partial);
                        whole.extend_from_slice(&chunk[..i]);
                        let r = self.line(&whole, on_line);
                        whole.clear();
                        self.partial = whole;
                        r?;
                    }
                    self.pos += (i + ending) as u64;
                    self.line_start = self.pos;
                    self.line_no += 1;
                    chunk = &chunk[i + ending..];
                }
            }
        }
        Ok(())
    }

    /// Ends the input: a last line without a line ending is handed over. Returns whether there
    /// was one.
    pub fn finish(
        &mut self,
        on_line: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<bool, IngestError> {
        if self.partial.is_empty() {
            return Ok(false);
        }
        let mut last = std::mem::take(&mut self.partial);
        // An input cut inside a multi-byte character (`head -c N`) is a truncated input, not an
        // invalid one: the bytes of the cut character are dropped and the rest is read.
        if let Err(e) = std::str::from_utf8(&last)
            && e.error_len().is_none()
        {
            last.truncate(e.valid_up_to());
        }
        self.line(&last, on_line)?;
        Ok(true)
    }

    /// Validates a complete line's bytes (before `pos` moves past it) and hands it over.
    fn line(
        &mut self,
        bytes: &[u8],
        on_line: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        let start_of_line = self.line_start;
        // `pos` has not advanced past the part of the line in this chunk yet: the line started at
        // `line_start` (its earlier bytes were buffered).
        let mut bytes = bytes;
        let mut start = start_of_line;
        if !self.started {
            self.started = true;
            if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
                bytes = rest;
                start += 3;
                self.bom = true;
            }
        }
        if let Some(k) = memchr::memchr(0, bytes) {
            return Err(IngestError::Binary {
                offset: start + k as u64,
                line: self.line_no,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|e| IngestError::InvalidUtf8 {
            offset: start + e.valid_up_to() as u64,
            line: self.line_no,
        })?;
        on_line(text, start, self.line_no)
    }
}

/// The WHATWG event-stream parser (see the module docs).
#[derive(Debug, Default, Clone)]
pub struct SseFramer {
    lines: LineSplitter,
    current: SseEvent,
    /// The current event has a data line (its data buffer is not empty in the standard's terms:
    /// `data:` with an empty value still counts).
    has_data: bool,
    has_fields: bool,
    last_event_id: Option<String>,
    stats: SseStats,
}

impl SseFramer {
    pub fn new() -> Self {
        Self {
            lines: LineSplitter::new(),
            ..Self::default()
        }
    }

    pub fn stats(&self) -> SseStats {
        let mut s = self.stats.clone();
        s.bom = self.lines.bom;
        s
    }

    /// Feeds a chunk; `sink` gets every event it completes.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(&SseEvent) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        let (lines, mut state) = self.split(sink);
        lines.feed(chunk, &mut |text, start, line_no| {
            state.line(text, start, line_no)
        })
    }

    /// The line splitter, and the event state borrowed for one feed.
    fn split<'s>(
        &'s mut self,
        sink: &'s mut dyn FnMut(&SseEvent) -> Result<(), IngestError>,
    ) -> (&'s mut LineSplitter, State<'s>) {
        let Self {
            lines,
            current,
            has_data,
            has_fields,
            last_event_id,
            stats,
        } = self;
        let state = State {
            current,
            has_data,
            has_fields,
            last_event_id,
            stats,
            sink,
        };
        (lines, state)
    }

    /// Ends the input: dispatches an event left open (marked unterminated).
    pub fn finish(
        &mut self,
        sink: &mut dyn FnMut(&SseEvent) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        let (lines, mut state) = self.split(sink);
        lines.finish(&mut |text, start, line_no| state.line(text, start, line_no))?;
        if *state.has_data {
            state.current.unterminated = true;
            state.dispatch()?;
        } else if *state.has_fields {
            state.without_data(true);
        }
        Ok(())
    }
}

/// The framer's event state, borrowed for one feed.
struct State<'s> {
    current: &'s mut SseEvent,
    has_data: &'s mut bool,
    has_fields: &'s mut bool,
    last_event_id: &'s mut Option<String>,
    stats: &'s mut SseStats,
    sink: &'s mut dyn FnMut(&SseEvent) -> Result<(), IngestError>,
}

impl State<'_> {
    fn line(&mut self, text: &str, start: u64, line_no: u64) -> Result<(), IngestError> {
        self.stats.lines += 1;
        let end = start + text.len() as u64;
        match parse_line(text) {
            Line::Blank => {
                if *self.has_data {
                    self.dispatch()?;
                } else if *self.has_fields {
                    self.without_data(false);
                }
            }
            Line::Comment => self.stats.comments += 1,
            Line::Field {
                name,
                value,
                value_at,
            } => {
                if !*self.has_fields {
                    *self.has_fields = true;
                    self.current.start = start;
                    self.current.line = line_no;
                }
                self.current.end = end;
                let kind = match name {
                    "data" => {
                        if *self.has_data {
                            self.current.data.push('\n');
                        }
                        self.current.data.push_str(value);
                        *self.has_data = true;
                        FieldKind::Data
                    }
                    "event" => {
                        self.current.event_type = Some(value.to_owned());
                        FieldKind::Event
                    }
                    "id" => {
                        if !value.contains('\0') {
                            *self.last_event_id = Some(value.to_owned());
                        }
                        FieldKind::Id
                    }
                    "retry" => {
                        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
                            self.current.retry = value.parse().ok();
                        }
                        FieldKind::Retry
                    }
                    other => {
                        self.stats.ignored_fields += 1;
                        FieldKind::Other(other.to_owned())
                    }
                };
                let value_start = start + value_at as u64;
                self.current.fields.push(Field {
                    kind,
                    line: (start, end),
                    value: (value_start, end),
                });
            }
        }
        Ok(())
    }

    fn dispatch(&mut self) -> Result<(), IngestError> {
        self.current.id = self.last_event_id.clone().filter(|id| !id.is_empty());
        self.stats.events += 1;
        let r = (self.sink)(self.current);
        self.reset();
        r
    }

    /// A field group ends with no data: nothing is dispatched; a named one is remembered.
    fn without_data(&mut self, unterminated: bool) {
        self.stats.events_without_data += 1;
        if let Some(t) = self.current.event_type.take() {
            let named = NamedWithoutData {
                event_type: t,
                start: self.current.start,
                end: self.current.end,
                unterminated,
            };
            if self.stats.first_named_without_data.is_none() {
                self.stats.first_named_without_data = Some(named.clone());
            }
            self.stats.last_named_without_data = Some(named);
        }
        self.reset();
    }

    fn reset(&mut self) {
        self.current.clear();
        *self.has_data = false;
        *self.has_fields = false;
    }
}

#[cfg(test)]
/// Frames a whole byte slice (for tests and small bodies).
pub fn frame_all(bytes: &[u8]) -> Result<(Vec<SseEvent>, SseStats), IngestError> {
    let mut framer = SseFramer::new();
    let mut out = Vec::new();
    framer.feed(bytes, &mut |e| {
        out.push(e.clone());
        Ok(())
    })?;
    framer.finish(&mut |e| {
        out.push(e.clone());
        Ok(())
    })?;
    Ok((out, framer.stats()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<SseEvent> {
        frame_all(text.as_bytes())
            .map(|(e, _)| e)
            .unwrap_or_default()
    }

    fn datas(text: &str) -> Vec<String> {
        events(text).into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn grammar() {
        assert_eq!(parse_line(""), Line::Blank);
        assert_eq!(parse_line(": ping"), Line::Comment);
        assert_eq!(
            parse_line("data: x"),
            Line::Field {
                name: "data",
                value: "x",
                value_at: 6
            }
        );
        assert_eq!(
            parse_line("data:x"),
            Line::Field {
                name: "data",
                value: "x",
                value_at: 5
            }
        );
        assert_eq!(
            parse_line("data:  x"),
            Line::Field {
                name: "data",
                value: " x",
                value_at: 6
            }
        );
        assert_eq!(
            parse_line("data"),
            Line::Field {
                name: "data",
                value: "",
                value_at: 4
            }
        );
        // Only the first colon separates; only one space after it is dropped.
        assert_eq!(
            parse_line("data:a: b"),
            Line::Field {
                name: "data",
                value: "a: b",
                value_at: 5
            }
        );
        assert_eq!(
            parse_line("id: "),
            Line::Field {
                name: "id",
                value: "",
                value_at: 4
            }
        );
    }

    #[test]
    fn line_endings_and_multiline_data() {
        assert_eq!(datas("data: a\ndata: b\n\n"), ["a\nb"]);
        assert_eq!(datas("data: a\r\n\r\ndata: b\r\r"), ["a", "b"]);
        // `\r\r\n\n` is three line ends: the event is dispatched at the second.
        assert_eq!(datas("data: a\r\r\n\n"), ["a"]);
        assert_eq!(datas("data\n\n"), [""]);
    }

    #[test]
    fn comments_types_ids_and_retry() {
        let (evs, stats) = frame_all(
            b"\xEF\xBB\xBF: hello\nevent: ping\nid: 7\nretry: 100\ndata: {}\n\ndata: 2\n\nid\ndata: 3\n\nretry: x1\nfoo: bar\ndata: 4\n\n",
        )
        .unwrap_or_default();
        assert!(stats.bom);
        assert_eq!(stats.comments, 1);
        assert_eq!(stats.ignored_fields, 1);
        assert_eq!(evs[0].event_type.as_deref(), Some("ping"));
        assert_eq!(evs[0].retry, Some(100));
        assert_eq!(evs[0].id.as_deref(), Some("7"));
        // The id persists until changed; an empty id resets it.
        assert_eq!(evs[1].id.as_deref(), Some("7"));
        assert_eq!(evs[1].event_type, None);
        assert_eq!(evs[2].id, None);
        assert_eq!(evs[3].retry, None);
        // Offsets are after the BOM.
        assert_eq!(evs[0].start, 11);
    }

    #[test]
    fn no_data_dispatches_nothing_and_open_event_is_kept() {
        let (evs, stats) =
            frame_all(b"event: response.output_item.done\n\ndata: {\"a\":1}").unwrap_or_default();
        assert_eq!(stats.events_without_data, 1);
        let named = stats.last_named_without_data.unwrap_or_default();
        assert_eq!(named.event_type, "response.output_item.done");
        assert_eq!((named.start, named.end, named.unterminated), (0, 32, false));
        assert_eq!(evs.len(), 1);
        assert!(evs[0].unterminated);
        assert_eq!(evs[0].data, "{\"a\":1}");
        // Cut right after an event line: nothing dispatched, the name is kept.
        let (evs, stats) = frame_all(b"event: message_start\n").unwrap_or_default();
        assert!(evs.is_empty());
        let named = stats.last_named_without_data.unwrap_or_default();
        assert_eq!(named.event_type, "message_start");
        assert!(named.unterminated);
    }

    #[test]
    fn spans_point_at_values() {
        let text = "event: x\ndata: {\"a\":1}\ndata:  b\n\n";
        let evs = events(text);
        let e = &evs[0];
        assert_eq!(
            &text[e.start as usize..e.end as usize],
            "event: x\ndata: {\"a\":1}\ndata:  b"
        );
        let values: Vec<&str> = e
            .fields
            .iter()
            .map(|f| &text[f.value.0 as usize..f.value.1 as usize])
            .collect();
        assert_eq!(values, ["x", "{\"a\":1}", " b"]);
        let segs: Vec<(usize, u64)> = e.data_segments().collect();
        assert_eq!(segs, [(0, 15), (8, 29)]);
        assert_eq!(&e.data[8..], " b");
    }

    #[test]
    fn chunking_does_not_matter() {
        let text = "\u{feff}: c\r\nevent: a\r\ndata: 1\r\n\r\ndata: é\rdata: 2\r\rid: 9\ndata\n\ndata: tail";
        let whole = frame_all(text.as_bytes()).unwrap_or_default();
        let bytes = text.as_bytes();
        for k in 0..=bytes.len() {
            let mut f = SseFramer::new();
            let mut out = Vec::new();
            let mut push = |e: &SseEvent| {
                out.push(e.clone());
                Ok(())
            };
            let r = f
                .feed(&bytes[..k], &mut push)
                .and_then(|_| f.feed(&bytes[k..], &mut push))
                .and_then(|_| f.finish(&mut push));
            assert!(r.is_ok(), "split at {k}: {r:?}");
            assert_eq!(out, whole.0, "split at {k}");
            assert_eq!(f.stats(), whole.1, "split at {k}");
        }
        // One byte at a time: every offset is a boundary.
        let mut f = SseFramer::new();
        let mut out = Vec::new();
        let mut push = |e: &SseEvent| {
            out.push(e.clone());
            Ok(())
        };
        for b in bytes.chunks(1) {
            assert!(f.feed(b, &mut push).is_ok());
        }
        assert!(f.finish(&mut push).is_ok());
        assert_eq!(out, whole.0);
    }

    #[test]
    fn bad_bytes_are_errors_with_a_position() {
        assert!(matches!(
            frame_all(b"data: ok\n\ndata: \xff\n\n"),
            Err(IngestError::InvalidUtf8 {
                offset: 16,
                line: 3
            })
        ));
        assert!(matches!(
            frame_all(b"data: a\0b\n\n"),
            Err(IngestError::Binary { offset: 7, line: 1 })
        ));
    }
}
