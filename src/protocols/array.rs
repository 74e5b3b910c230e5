//! A JSON array of stream events, read element by element as it arrives: what Gemini's
//! `streamGenerateContent` sends without `alt=sse` (`[{…},\r\n{…}]`, one chunk per element).
//!
//! The splitter follows strings and nesting byte by byte and hands over each top-level element
//! with its file offset and line as soon as its closing bracket arrives, so memory is bounded by
//! the largest element. What is not an element (the brackets, the commas, whitespace) is
//! skipped; a stray byte between elements starts an element of its own, which the protocol
//! decoder then refuses as it would a bad line.

use crate::core::{IngestError, MAX_LINE};

/// Where the splitter is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum At {
    /// Before the opening `[`.
    #[default]
    Start,
    /// Between elements.
    Between,
    /// Inside an element (`depth` brackets open).
    Element,
    /// After the closing `]`.
    End,
}

/// A push splitter for a top-level JSON array.
#[derive(Clone, Debug, Default)]
pub struct ArraySplitter {
    at: At,
    element: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Offset and line of the current element's first byte.
    start: u64,
    start_line: u64,
    /// Bytes consumed, and the 1-based current line.
    pos: u64,
    line: u64,
}

impl ArraySplitter {
    pub fn new() -> Self {
        Self {
            line: 1,
            ..Self::default()
        }
    }

    /// Feeds a chunk; `on_element(text, start, line)` gets each complete element.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_element: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        for &b in chunk {
            self.byte(b, on_element)?;
            self.pos += 1;
            if b == b'\n' {
                self.line += 1;
            }
        }
        Ok(())
    }

    fn byte(
        &mut self,
        b: u8,
        on_element: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        match self.at {
            At::Start if b == b'[' => self.at = At::Between,
            At::Start | At::End => {}
            At::Between => match b {
                b',' | b']' if self.depth == 0 => {
                    if b == b']' {
                        self.at = At::End;
                    }
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ => {
                    self.at = At::Element;
                    self.start = self.pos;
                    self.start_line = self.line;
                    self.element.clear();
                    self.depth = 0;
                    return self.in_element(b, on_element);
                }
            },
            At::Element => return self.in_element(b, on_element),
        }
        Ok(())
    }

    fn in_element(
        &mut self,
        b: u8,
        on_element: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        if self.element.len() >= MAX_LINE {
            return Err(IngestError::LineTooLong {
                offset: self.start,
                line: self.start_line,
                max: MAX_LINE,
            });
        }
        if self.in_string {
            self.element.push(b);
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return Ok(());
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 0 => self.depth -= 1,
            // A scalar element, or a stray byte, ends at the next separator.
            b',' | b']' if self.depth == 0 => {
                self.emit(on_element)?;
                if b == b']' {
                    self.at = At::End;
                }
                return Ok(());
            }
            _ => {}
        }
        self.element.push(b);
        if self.depth == 0 && matches!(b, b'}' | b']') {
            self.emit(on_element)?;
        }
        Ok(())
    }

    fn emit(
        &mut self,
        on_element: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<(), IngestError> {
        self.at = At::Between;
        let text = String::from_utf8_lossy(&self.element);
        let trimmed = text.trim_end();
        if !trimmed.is_empty() {
            on_element(trimmed, self.start, self.start_line)?;
        }
        self.element.clear();
        Ok(())
    }

    /// Ends the input: an element cut by the end is handed over as it is (its decoder reports
    /// it), and whether the array was closed.
    pub fn finish(
        &mut self,
        on_element: &mut dyn FnMut(&str, u64, u64) -> Result<(), IngestError>,
    ) -> Result<bool, IngestError> {
        if self.at == At::Element {
            self.emit(on_element)?;
        }
        Ok(self.at == At::End)
    }
}

/// Whether `head` starts a JSON array whose first element is an object (whitespace and a
/// byte-order mark before it allowed).
pub fn starts_array_of_objects(head: &str) -> bool {
    let head = head.strip_prefix('\u{feff}').unwrap_or(head).trim_start();
    head.strip_prefix('[')
        .is_some_and(|rest| rest.trim_start().starts_with('{'))
}

/// The first element of the array `head` starts, when it is whole within `head`.
pub fn first_element(head: &str) -> Option<String> {
    let mut splitter = ArraySplitter::new();
    let mut first = None;
    let mut take = |text: &str, _: u64, _: u64| {
        if first.is_none() {
            first = Some(text.to_owned());
        }
        Ok(())
    };
    splitter.feed(head.as_bytes(), &mut take).ok()?;
    first
}

/// The first `max` elements of the array `head` starts that are whole within `head`.
pub fn head_elements(head: &str, max: usize) -> Vec<String> {
    let mut splitter = ArraySplitter::new();
    let mut out = Vec::new();
    let mut take = |text: &str, _: u64, _: u64| {
        if out.len() < max {
            out.push(text.to_owned());
        }
        Ok(())
    };
    // An element too long for the splitter ends the list; those before it stand.
    let _ = splitter.feed(head.as_bytes(), &mut take);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> (Vec<(String, u64, u64)>, bool) {
        let mut s = ArraySplitter::new();
        let mut out = Vec::new();
        let mut sink = |t: &str, start: u64, line: u64| {
            out.push((t.to_owned(), start, line));
            Ok(())
        };
        // Fed a byte at a time: an element may be cut anywhere between chunks.
        for b in text.as_bytes().chunks(1) {
            assert!(s.feed(b, &mut sink).is_ok());
        }
        let closed = s.finish(&mut sink).unwrap_or(false);
        (out, closed)
    }

    #[test]
    fn elements_with_their_offsets_and_lines() {
        let text = "[{\"a\":\"x]},\\\"\"}\r\n,{\"b\":[1,{\"c\":2}]}\n]\n";
        let (got, closed) = split(text);
        assert!(closed);
        assert_eq!(got.len(), 2);
        let (a, start, line) = &got[0];
        assert_eq!(a, "{\"a\":\"x]},\\\"\"}");
        assert_eq!(&text[*start as usize..*start as usize + a.len()], a);
        assert_eq!(*line, 1);
        let (b, start, line) = &got[1];
        assert_eq!(b, "{\"b\":[1,{\"c\":2}]}");
        assert_eq!(&text[*start as usize..*start as usize + b.len()], b);
        assert_eq!(*line, 2);
    }

    #[test]
    fn a_cut_array_hands_over_its_last_element_and_is_not_closed() {
        let (got, closed) = split("[{\"a\":1},\n{\"b\":");
        assert!(!closed);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].0, "{\"b\":");
        let (got, closed) = split("[{\"a\":1}");
        assert!(!closed);
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn scalars_and_stray_bytes_are_elements_of_their_own() {
        let (got, closed) = split("[1, x ,{\"a\":1}]");
        assert!(closed);
        let texts: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(texts, ["1", "x", "{\"a\":1}"]);
    }

    #[test]
    fn recognises_an_array_of_objects() {
        assert!(starts_array_of_objects(
            "\u{feff} [\r\n  {\"candidates\":[]}"
        ));
        assert!(!starts_array_of_objects("[1,2]"));
        assert!(!starts_array_of_objects("{\"a\":[{}]}"));
        assert_eq!(
            first_element("[{\"a\":\"]\"},{\"b\":2}").as_deref(),
            Some("{\"a\":\"]\"}")
        );
        assert_eq!(first_element("[{\"a\":"), None);
    }
}
