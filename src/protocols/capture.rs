//! Stream captures: the bytes of a model response, wherever they are stored, turned into
//! payloads (one per provider event) with spans in the file.
//!
//! A stream can be a raw `text/event-stream` file, a file of one JSON event per line, or a body
//! stored inside another document: a JSON string in an HTTP recording, HAR file or agent log
//! (escaped), or base64 in a HAR file. [`Framing`] turns the stream's bytes into [`Payload`]s in
//! *stream offsets*; a [`Locator`] maps stream offsets back to the file, through the JSON string's
//! escapes when there are some, so every span still points at the bytes a user can open.

use super::sse::{LineSplitter, SseEvent, SseFramer, SseStats};
use crate::core::IngestError;
pub use crate::json::locator::Locator;

/// One provider event as a decoder sees it.
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a> {
    /// 0-based position among the stream's payloads.
    pub index: u64,
    /// The SSE `event:` field, if any.
    pub event_type: Option<&'a str>,
    /// The data (SSE data lines joined), or the line.
    pub data: &'a str,
    /// Stream range of the whole event.
    pub start: u64,
    pub end: u64,
    /// 1-based line of the event in the stream.
    pub line: u64,
    /// Where the data's pieces are: `(offset in data, stream offset)`, ascending.
    pub segments: &'a [(usize, u64)],
    /// The input ended before the event was closed.
    pub unterminated: bool,
}

impl Payload<'_> {
    /// The stream range of `data[start..end]`.
    pub fn stream_range(&self, start: usize, end: usize) -> (u64, u64) {
        let at = |pos: usize| -> u64 {
            let i = self.segments.partition_point(|(d, _)| *d <= pos);
            match i.checked_sub(1).and_then(|k| self.segments.get(k)) {
                Some(&(d, s)) => s + (pos - d) as u64,
                None => self.start,
            }
        };
        let from = at(start);
        let to = at(end.max(start + 1) - 1) + 1;
        (from, to.max(from))
    }
}

/// How a stream's bytes are framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Envelope {
    /// `text/event-stream`.
    Sse,
    /// One JSON event per line, no SSE envelope.
    JsonLines,
    /// A JSON array of events (Gemini's `streamGenerateContent` without `alt=sse`).
    JsonArray,
}

/// Counters of the framing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FramingStats {
    pub sse: SseStats,
    pub lines: u64,
    pub payloads: u64,
    pub bytes: u64,
}

/// A push framer for either envelope.
#[derive(Debug, Clone)]
pub struct Framing {
    envelope: Envelope,
    sse: SseFramer,
    lines: LineSplitter,
    array: super::array::ArraySplitter,
    index: u64,
    stats: FramingStats,
}

impl Framing {
    pub fn new(envelope: Envelope) -> Self {
        Self {
            envelope,
            sse: SseFramer::new(),
            lines: LineSplitter::new(),
            array: super::array::ArraySplitter::new(),
            index: 0,
            stats: FramingStats::default(),
        }
    }

    pub fn envelope(&self) -> Envelope {
        self.envelope
    }

    pub fn stats(&self) -> FramingStats {
        let mut s = self.stats.clone();
        s.sse = self.sse.stats();
        s
    }

    /// Feeds a chunk; `sink` gets each complete payload.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(&Payload<'_>) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        self.stats.bytes += chunk.len() as u64;
        let index = &mut self.index;
        let stats = &mut self.stats;
        match self.envelope {
            Envelope::Sse => self
                .sse
                .feed(chunk, &mut |e| emit_event(e, index, stats, sink)),
            Envelope::JsonLines => self.lines.feed(chunk, &mut |text, start, line| {
                emit_line(text, start, line, index, stats, sink)
            }),
            Envelope::JsonArray => self.array.feed(chunk, &mut |text, start, line| {
                emit_line(text, start, line, index, stats, sink)
            }),
        }
    }

    /// Ends the input.
    pub fn finish(
        &mut self,
        sink: &mut dyn FnMut(&Payload<'_>) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        let index = &mut self.index;
        let stats = &mut self.stats;
        match self.envelope {
            Envelope::Sse => self.sse.finish(&mut |e| emit_event(e, index, stats, sink)),
            Envelope::JsonLines => self
                .lines
                .finish(&mut |text, start, line| emit_line(text, start, line, index, stats, sink))
                .map(|_| ()),
            Envelope::JsonArray => self
                .array
                .finish(&mut |text, start, line| emit_line(text, start, line, index, stats, sink))
                .map(|_| ()),
        }
    }
}

fn emit_event(
    e: &SseEvent,
    index: &mut u64,
    stats: &mut FramingStats,
    sink: &mut dyn FnMut(&Payload<'_>) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let mut segs: smallvec_like::Segs = smallvec_like::Segs::default();
    for s in e.data_segments() {
        segs.push(s);
    }
    let p = Payload {
        index: *index,
        event_type: e.event_type.as_deref(),
        data: &e.data,
        start: e.start,
        end: e.end,
        line: e.line,
        segments: segs.as_slice(),
        unterminated: e.unterminated,
    };
    *index += 1;
    stats.payloads += 1;
    sink(&p)
}

fn emit_line(
    text: &str,
    start: u64,
    line: u64,
    index: &mut u64,
    stats: &mut FramingStats,
    sink: &mut dyn FnMut(&Payload<'_>) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    stats.lines += 1;
    let trimmed = text.trim_end();
    let lead = trimmed.len() - trimmed.trim_start().len();
    let data = &trimmed[lead..];
    if data.is_empty() {
        return Ok(());
    }
    let begin = start + lead as u64;
    let segs = [(0usize, begin)];
    let p = Payload {
        index: *index,
        event_type: None,
        data,
        start: begin,
        end: begin + data.len() as u64,
        line,
        segments: &segs,
        unterminated: false,
    };
    *index += 1;
    stats.payloads += 1;
    sink(&p)
}

/// A tiny inline vector for the data segments of one event (almost always one).
mod smallvec_like {
    #[derive(Default)]
    pub struct Segs {
        one: [(usize, u64); 2],
        len: usize,
        more: Vec<(usize, u64)>,
    }

    impl Segs {
        pub fn push(&mut self, s: (usize, u64)) {
            if self.len < 2 && self.more.is_empty() {
                self.one[self.len] = s;
                self.len += 1;
            } else {
                if self.more.is_empty() {
                    self.more.extend_from_slice(&self.one[..self.len]);
                }
                self.more.push(s);
            }
        }

        pub fn as_slice(&self) -> &[(usize, u64)] {
            if self.more.is_empty() {
                &self.one[..self.len]
            } else {
                &self.more
            }
        }
    }
}

/// Which envelope a body uses, from its first non-blank line (`None`: not a stream).
pub fn sniff_envelope(head: &str) -> Option<Envelope> {
    let head = head.strip_prefix('\u{feff}').unwrap_or(head);
    let first = head.lines().map(str::trim_start).find(|l| !l.is_empty())?;
    let sse = ["data:", "event:", "id:", "retry:", ":"]
        .iter()
        .any(|p| first.starts_with(p));
    if sse {
        return Some(Envelope::Sse);
    }
    if super::array::starts_array_of_objects(head) {
        return Some(Envelope::JsonArray);
    }
    if first.starts_with('{') {
        // One JSON value per line: the first line must be a whole value (a pretty-printed
        // document is a plain JSON response, not a stream).
        let closed = serde_json::from_str::<serde_json::Value>(first.trim_end()).is_ok();
        let cut = !head.contains('\n') || first.len() > 64 * 1024;
        if closed || cut {
            return Some(Envelope::JsonLines);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{FileId, Span};

    fn payloads(env: Envelope, text: &str) -> Vec<(u64, String, u64, u64)> {
        let mut f = Framing::new(env);
        let mut out = Vec::new();
        let mut sink = |p: &Payload<'_>| {
            out.push((p.index, p.data.to_owned(), p.start, p.end));
            Ok(())
        };
        assert!(f.feed(text.as_bytes(), &mut sink).is_ok());
        assert!(f.finish(&mut sink).is_ok());
        out
    }

    #[test]
    fn json_lines_skip_blank_lines() {
        let got = payloads(
            Envelope::JsonLines,
            "{\"a\":1}\r\n\n  {\"b\":2}  \n{\"c\":3}",
        );
        assert_eq!(
            got,
            [
                (0, "{\"a\":1}".to_owned(), 0, 7),
                (1, "{\"b\":2}".to_owned(), 12, 19),
                (2, "{\"c\":3}".to_owned(), 22, 29)
            ]
        );
    }

    #[test]
    fn payload_ranges_follow_data_lines() {
        let text = "data: ab\ndata: cd\n\n";
        let mut f = Framing::new(Envelope::Sse);
        let mut ranges = Vec::new();
        let r = f.feed(text.as_bytes(), &mut |p| {
            ranges.push(p.stream_range(3, 5));
            Ok(())
        });
        assert!(r.is_ok());
        assert_eq!(ranges, [(15, 17)]);
        assert_eq!(&text[15..17], "cd");
    }

    #[test]
    fn json_string_locator_maps_through_escapes_and_segments() {
        // A body `a\"b` stored at file offset 100 of a text re-joined from two pieces.
        let (_, anchors) = crate::json::string::decode(br#"x\"yz"#).unwrap_or_default();
        let loc = Locator::JsonString {
            file: FileId(0),
            anchors,
            base: 0,
            segments: vec![(0, 100), (3, 200)],
        };
        // Decoded `y` (offset 2) is raw offset 3: in the second piece.
        assert_eq!(loc.span(2, 3), Span::new(FileId(0), 200, 1));
        assert_eq!(loc.span(0, 1), Span::new(FileId(0), 100, 1));
    }

    #[test]
    fn envelopes() {
        assert_eq!(sniff_envelope("\n\ndata: x"), Some(Envelope::Sse));
        assert_eq!(sniff_envelope(": ok\n"), Some(Envelope::Sse));
        assert_eq!(
            sniff_envelope("{\"type\":\"start\"}\n{\"type\":\"finish\"}"),
            Some(Envelope::JsonLines)
        );
        assert_eq!(sniff_envelope("{\n  \"type\": \"error\"\n}"), None);
        assert_eq!(sniff_envelope("<html>"), None);
    }
}
