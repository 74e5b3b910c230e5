//! One JSON object per line, read line by line with byte spans: the framing of the clients'
//! own transcripts (Claude Code's `<session>.jsonl`, Codex's `rollout-*.jsonl`).
//!
//! Each line is parsed on its own and handed over at once; nothing but the current line is kept.
//! A line that is not valid JSON is handed over too, with the parser's words, so that replay can
//! report it; a last line without its newline that does not parse is *torn* (the writer was cut
//! off mid-append).

use std::io::BufRead;

use serde_json::Value;

use crate::core::IngestError;
use crate::core::MAX_LINE;
use crate::json::scan::{Seg, locate};
use crate::source::{FileId, Span};

/// One non-blank line.
#[derive(Debug)]
pub struct Line {
    /// 0-based position among the non-blank lines.
    pub index: u64,
    /// The line without its line break.
    pub span: Span,
    pub text: String,
    /// The parsed value, or the parser's words and where it stopped.
    pub value: Result<Value, (String, Span)>,
    /// The input ends inside this line: no newline after it, and it does not parse.
    pub torn: bool,
}

impl Line {
    /// The file span of the value at `path`.
    pub fn locate(&self, path: &[Seg<'_>]) -> Option<Span> {
        self.span_of(locate(&self.text, path)?)
    }

    /// Where the items of the array at `path` are in the line's text (none when there is no
    /// array there), to locate values inside each with [`Line::locate_from`].
    pub fn items(&self, path: &[Seg<'_>]) -> Vec<(usize, usize)> {
        crate::json::scan::array_items(&self.text, path).unwrap_or_default()
    }

    /// The file span of the value at `path` inside the value at `from` (see
    /// [`crate::json::scan::locate_from`]).
    pub fn locate_from(&self, from: Option<&(usize, usize)>, path: &[Seg<'_>]) -> Option<Span> {
        self.span_of(crate::json::scan::locate_from(&self.text, *from?, path)?)
    }

    /// A locator for many paths into the line: each array on the way is walked once for all
    /// of them (see [`crate::json::scan::Locator`]).
    pub fn locator(&self) -> LineLocator<'_> {
        LineLocator {
            line: self,
            inner: crate::json::scan::Locator::new(&self.text),
        }
    }

    fn span_of(&self, (s, e): (usize, usize)) -> Option<Span> {
        Some(Span::new(
            self.span.file,
            self.span.offset + s as u64,
            (e - s) as u64,
        ))
    }
}

/// [`Line::locator`]: file spans of many paths into one line.
pub struct LineLocator<'l> {
    line: &'l Line,
    inner: crate::json::scan::Locator<'l>,
}

impl LineLocator<'_> {
    /// The file span of the value at `path`, as [`Line::locate`] finds it.
    pub fn locate(&mut self, path: &[Seg<'_>]) -> Option<Span> {
        let range = self.inner.locate(path)?;
        self.line.span_of(range)
    }
}

/// Where the first line of `head` (an input's first bytes) ends in a carriage return alone, when
/// every line of it does: `head` holds no LF, and a CR before its last non-blank byte. Line
/// readers that split at LF would read such an input as one line; the formats whose writers
/// never end a line so (agent logs, transcripts) refuse it ([`refuse_cr_line_ends`]). Looking
/// at the head costs one search for an LF, found at the end of the first line of any other
/// input.
pub fn cr_line_ends(head: &[u8]) -> Option<u64> {
    if memchr::memchr(b'\n', head).is_some() {
        return None;
    }
    memchr::memchr(b'\r', head.trim_ascii_end()).map(|k| k as u64)
}

/// Refuses an input whose lines end in a carriage return alone (see [`cr_line_ends`]), from
/// what `input` has buffered at its start; reads nothing from it that it does not leave there.
pub fn refuse_cr_line_ends<R: BufRead>(input: &mut R) -> Result<(), IngestError> {
    let head = loop {
        match input.fill_buf() {
            Ok(head) => break head,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // Left to the reading, which reports it.
            Err(_) => return Ok(()),
        }
    };
    match cr_line_ends(head) {
        Some(offset) => Err(IngestError::CrLineEnds {
            offset,
            head: head.len(),
        }),
        None => Ok(()),
    }
}

/// Reads `input` line by line and calls `each` for every non-blank line (an input whose lines
/// end in CR alone is refused, see [`refuse_cr_line_ends`]).
pub fn read<R: BufRead>(
    mut input: R,
    file: FileId,
    each: &mut dyn FnMut(Line),
) -> Result<(), IngestError> {
    refuse_cr_line_ends(&mut input)?;
    let mut buf = Vec::new();
    let (mut offset, mut line_no, mut index) = (0u64, 0u64, 0u64);
    loop {
        buf.clear();
        let mut limited = std::io::Read::take(&mut input, MAX_LINE as u64 + 1);
        let n = limited
            .read_until(b'\n', &mut buf)
            .map_err(IngestError::Io)?;
        if n == 0 {
            return Ok(());
        }
        line_no += 1;
        let newline = buf.last() == Some(&b'\n');
        if !newline && n > MAX_LINE {
            return Err(IngestError::LineTooLong {
                offset,
                line: line_no,
                max: MAX_LINE,
            });
        }
        let start = offset;
        offset += n as u64;
        let mut body: &[u8] = &buf;
        while let Some((last, rest)) = body.split_last()
            && matches!(last, b'\n' | b'\r')
        {
            body = rest;
        }
        let text = match std::str::from_utf8(body) {
            Ok(t) => t,
            Err(e) => {
                return Err(IngestError::InvalidUtf8 {
                    offset: start + e.valid_up_to() as u64,
                    line: line_no,
                });
            }
        };
        let lead = text.len() - text.trim_start().len();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let span = Span::new(file, start + lead as u64, trimmed.len() as u64);
        let value = serde_json::from_str::<Value>(trimmed).map_err(|e| {
            let at = position(trimmed, e.line(), e.column());
            let words = e.to_string();
            let words = words
                .rsplit_once(" at line ")
                .map_or(words.as_str(), |(w, _)| w)
                .to_owned();
            (
                words,
                Span::new(file, span.offset + at as u64, u64::from(at < trimmed.len())),
            )
        });
        let torn = !newline && value.is_err();
        each(Line {
            index,
            span,
            text: trimmed.to_owned(),
            value,
            torn,
        });
        index += 1;
    }
}

/// Byte offset of serde_json's (1-based line, 1-based column) in `text`.
pub fn position(text: &str, line: usize, column: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (off + column.saturating_sub(1)).min(text.len());
        }
        off += l.len();
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Line> {
        let mut out = Vec::new();
        read(text.as_bytes(), FileId(0), &mut |l| out.push(l)).unwrap_or_default();
        out
    }

    #[test]
    fn lines_ended_by_cr_alone_are_told_from_the_head() {
        assert_eq!(cr_line_ends(b"{\"a\":1}\r{\"b\":2}\r"), Some(7));
        assert_eq!(cr_line_ends(b"[ts] x\r\r[ts] y"), Some(6));
        // LF or CRLF anywhere in the head, one line ended by CR, or no line end: not CR alone.
        assert_eq!(cr_line_ends(b"{\"a\":1}\r\n{\"b\":2}\r\n"), None);
        assert_eq!(cr_line_ends(b"a\rb\rc\n"), None);
        assert_eq!(cr_line_ends(b"{\"a\":1}\r"), None);
        assert_eq!(cr_line_ends(b"{\"a\":1}\r \r\r"), None);
        assert_eq!(cr_line_ends(b"{\"a\":1}"), None);
        assert_eq!(cr_line_ends(b""), None);
        let mut out = Vec::new();
        let refused = read(&b"{}\r{}\r"[..], FileId(0), &mut |l| out.push(l));
        assert!(
            matches!(refused, Err(IngestError::CrLineEnds { offset: 2, head: 6 })),
            "{refused:?}"
        );
        assert!(out.is_empty());
    }

    #[test]
    fn spans_and_torn_tail() {
        let l = lines("{\"a\":1}\n\n  {\"b\":\"x\"}\r\n{\"c\":");
        assert_eq!(l.len(), 3);
        assert_eq!((l[0].span.offset, l[0].span.len), (0, 7));
        assert_eq!((l[1].span.offset, l[1].span.len), (11, 9));
        assert_eq!(l[1].locate(&[Seg::Key("b")]).map(|s| s.offset), Some(16));
        assert!(!l[1].torn && l[2].torn && l[2].value.is_err());
        // A bad line that is not the last is not torn.
        let l = lines("{\"a\":\n{}\n");
        assert!(!l[0].torn && l[0].value.is_err());
    }

    #[test]
    fn the_locator_finds_what_each_locate_finds() {
        let items: Vec<String> = (0..50)
            .map(|k| {
                format!(r#"{{"type":"image","source":{{"data":"{k}"}},"content":[{k},[{k}]]}}"#)
            })
            .collect();
        let text = format!(
            "\n{{\"message\":{{\"content\":[{}]}},\"x\":1}}\n",
            items.join(",")
        );
        let l = lines(&text);
        let mut locator = l[0].locator();
        let mut paths: Vec<Vec<Seg<'_>>> = Vec::new();
        for k in (0..52).rev() {
            let item = [Seg::Key("message"), Seg::Key("content"), Seg::Index(k)];
            paths.push([&item[..], &[Seg::Key("source"), Seg::Key("data")]].concat());
            paths.push(
                [
                    &item[..],
                    &[Seg::Key("content"), Seg::Index(1), Seg::Index(0)],
                ]
                .concat(),
            );
            paths.push(item.to_vec());
        }
        paths.push(vec![Seg::Key("x")]);
        paths.push(vec![Seg::Index(0)]);
        let mut found = 0;
        for path in &paths {
            let at = locator.locate(path);
            assert_eq!(at, l[0].locate(path), "{path:?}");
            found += usize::from(at.is_some());
        }
        assert_eq!(found, 151);
    }
}
