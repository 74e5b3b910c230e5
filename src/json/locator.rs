//! A stream's way back to the file: the decoded text a stream was read from, mapped to the
//! file's bytes (directly, or through a JSON string's escapes).

use crate::json::string::Anchors;
use crate::source::{FileId, Span};

/// Where a stream's bytes are in its source.
#[derive(Clone, Debug)]
pub enum Locator {
    /// Stream offsets are file offsets.
    File(FileId),
    /// The stream is the decoded value of a JSON string literal: `anchors` map decoded offsets to
    /// offsets in the literal's content, which starts at `base` in a text whose pieces are at
    /// `segments` (`(text offset, file offset)`, ascending) — one piece for a plain file, several
    /// for a log record re-joined from split lines.
    JsonString {
        file: FileId,
        anchors: Anchors,
        base: u64,
        segments: Vec<(u64, u64)>,
    },
    /// Every offset maps to one span (a base64 body: its bytes are not in the file as such).
    Whole(Span),
}

impl Locator {
    pub fn file(&self) -> FileId {
        match self {
            Locator::File(f) | Locator::JsonString { file: f, .. } => *f,
            Locator::Whole(s) => s.file,
        }
    }

    /// The file span of the stream range `start..end`.
    pub fn span(&self, start: u64, end: u64) -> Span {
        match self {
            Locator::File(f) => Span::new(*f, start, end.saturating_sub(start)),
            Locator::Whole(s) => *s,
            Locator::JsonString {
                file,
                anchors,
                base,
                segments,
            } => {
                let (rs, re) = anchors.raw_range(start, end);
                let to_file = |t: u64| -> u64 {
                    let i = segments.partition_point(|(s, _)| *s <= t);
                    match i.checked_sub(1).and_then(|k| segments.get(k)) {
                        Some(&(s, f)) => f + (t - s),
                        None => t,
                    }
                };
                let from = to_file(base + rs);
                let to = to_file(base + re.max(rs + 1) - 1) + 1;
                Span::new(*file, from, to.saturating_sub(from))
            }
        }
    }
}
