//! A streaming walk over one JSON document (HTTP recordings, HAR files).
//!
//! Recordings can be large, and only a few of their strings matter (request and response
//! bodies). [`walk`] reads the document once through a buffered reader and calls a [`Visitor`]:
//! it asks whether the string at each path is wanted, hands over wanted strings raw (still
//! escaped) with their file offset, reports scalars, and says when each object or array closes —
//! so a visitor can process one interaction as soon as it is complete and keep nothing else.
//! Memory is bounded by the largest wanted string.

use std::io::BufRead;

use crate::core::IngestError;
use crate::core::MAX_LINE;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

impl PathSeg {
    pub fn key(&self) -> Option<&str> {
        match self {
            PathSeg::Key(k) => Some(k),
            PathSeg::Index(_) => None,
        }
    }
}

/// A wanted string, as it is in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawString {
    /// The literal's content (between the quotes), still escaped.
    pub raw: Vec<u8>,
    /// File offset of the opening quote.
    pub quote: u64,
}

impl RawString {
    /// File offset of the first content byte.
    pub fn content_start(&self) -> u64 {
        self.quote + 1
    }

    /// File range of the whole literal, quotes included.
    pub fn literal(&self) -> (u64, u64) {
        (self.quote, self.quote + self.raw.len() as u64 + 2)
    }
}

/// What a walk calls back.
pub trait Visitor {
    /// Whether the string value at `path` is wanted.
    fn wants(&mut self, path: &[PathSeg]) -> bool;
    /// A wanted string.
    fn string(&mut self, path: &[PathSeg], value: RawString) -> Result<(), IngestError>;
    /// A number, `true`, `false` or `null`, with its file range.
    fn scalar(&mut self, _path: &[PathSeg], _text: &str, _at: (u64, u64)) {}
    /// The object or array at `path` closed.
    fn close(&mut self, _path: &[PathSeg]) -> Result<(), IngestError> {
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Value,
    KeyOrEnd,
    Key,
    Colon,
    CommaOrObjEnd,
    ValueOrArrEnd,
    CommaOrArrEnd,
    Done,
}

struct Reader<R> {
    input: R,
    offset: u64,
    line: u64,
}

impl<R: BufRead> Reader<R> {
    fn err(&self, reason: impl Into<String>) -> IngestError {
        IngestError::InvalidJson {
            offset: self.offset,
            line: self.line,
            reason: reason.into(),
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, IngestError> {
        let buf = self.input.fill_buf().map_err(IngestError::Io)?;
        Ok(buf.first().copied())
    }

    fn bump(&mut self) {
        self.input.consume(1);
        self.offset += 1;
    }

    fn skip_ws(&mut self) -> Result<Option<u8>, IngestError> {
        loop {
            let buf = self.input.fill_buf().map_err(IngestError::Io)?;
            if buf.is_empty() {
                return Ok(None);
            }
            let n = buf
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(buf.len());
            self.line += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
            let first = buf.get(n).copied();
            self.input.consume(n);
            self.offset += n as u64;
            if let Some(b) = first {
                if b == 0 {
                    return Err(IngestError::Binary {
                        offset: self.offset,
                        line: self.line,
                    });
                }
                return Ok(Some(b));
            }
        }
    }

    fn expect_byte(&mut self, want: u8, what: &str) -> Result<(), IngestError> {
        match self.skip_ws()? {
            Some(b) if b == want => {
                self.bump();
                Ok(())
            }
            Some(b) => Err(self.err(format!("expected {what}, found {:?}", b as char))),
            None => Err(self.err(format!("the file ends where {what} was expected"))),
        }
    }

    /// Reads a string whose opening quote is next; keeps its raw content when `keep`.
    fn string(&mut self, keep: bool) -> Result<RawString, IngestError> {
        let quote = self.offset;
        self.bump();
        let mut raw = Vec::new();
        let mut escape = false;
        loop {
            let buf = self.input.fill_buf().map_err(IngestError::Io)?;
            if buf.is_empty() {
                return Err(IngestError::InvalidJson {
                    offset: quote,
                    line: self.line,
                    reason: "the file ends inside this string".into(),
                });
            }
            let mut i = 0;
            let mut closed = None;
            while i < buf.len() {
                if escape {
                    escape = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &buf[i..]) {
                    None => {
                        i = buf.len();
                    }
                    Some(k) => {
                        i += k;
                        if buf[i] == b'\\' {
                            escape = true;
                            i += 1;
                        } else {
                            closed = Some(i);
                            break;
                        }
                    }
                }
            }
            let take = closed.unwrap_or(buf.len());
            if keep {
                if raw.len() + take > MAX_LINE {
                    return Err(IngestError::InvalidJson {
                        offset: quote,
                        line: self.line,
                        reason: format!("a string longer than {} MiB", MAX_LINE >> 20),
                    });
                }
                raw.extend_from_slice(&buf[..take]);
            }
            if buf[..take].contains(&b'\n') {
                self.line += buf[..take].iter().filter(|b| **b == b'\n').count() as u64;
            }
            let used = take + usize::from(closed.is_some());
            self.input.consume(used);
            self.offset += used as u64;
            if closed.is_some() {
                return Ok(RawString { raw, quote });
            }
        }
    }

    /// Reads a number or literal.
    fn scalar(&mut self) -> Result<(String, (u64, u64)), IngestError> {
        let start = self.offset;
        let mut text = String::new();
        loop {
            let buf = self.input.fill_buf().map_err(IngestError::Io)?;
            let n = buf
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')))
                .unwrap_or(buf.len());
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            let done = n < buf.len() || buf.is_empty();
            self.input.consume(n);
            self.offset += n as u64;
            if done {
                break;
            }
            if text.len() > 1024 {
                return Err(self.err("a number or literal that never ends"));
            }
        }
        let ok = matches!(text.as_str(), "true" | "false" | "null")
            || (!text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')));
        if !ok {
            return Err(IngestError::InvalidJson {
                offset: start,
                line: self.line,
                reason: if text.is_empty() {
                    "expected a value".into()
                } else {
                    format!("`{}` is not a JSON value", crate::text::clip(&text))
                },
            });
        }
        Ok((text, (start, self.offset)))
    }
}

/// What is expected after a value, in the `containers` open (`true` for an object).
fn after_value(containers: &[bool]) -> Expect {
    match containers.last() {
        None => Expect::Done,
        Some(true) => Expect::CommaOrObjEnd,
        Some(false) => Expect::CommaOrArrEnd,
    }
}

/// Reads the value starting with byte `b` at `path`: opens an object or an array, or reads a
/// string or a scalar for `visitor`. Returns what is expected next.
fn value<R: BufRead>(
    r: &mut Reader<R>,
    b: u8,
    path: &mut Vec<PathSeg>,
    containers: &mut Vec<bool>,
    visitor: &mut dyn Visitor,
) -> Result<Expect, IngestError> {
    Ok(match b {
        b'{' => {
            r.bump();
            containers.push(true);
            Expect::KeyOrEnd
        }
        b'[' => {
            r.bump();
            containers.push(false);
            path.push(PathSeg::Index(0));
            Expect::ValueOrArrEnd
        }
        b'"' => {
            let keep = visitor.wants(path);
            let s = r.string(keep)?;
            if keep {
                visitor.string(path, s)?;
            }
            after_value(containers)
        }
        _ => {
            let (text, at) = r.scalar()?;
            visitor.scalar(path, &text, at);
            after_value(containers)
        }
    })
}

/// Walks the JSON document read from `input`, calling `visitor`.
pub fn walk<R: BufRead>(input: R, visitor: &mut dyn Visitor) -> Result<(), IngestError> {
    let mut r = Reader {
        input,
        offset: 0,
        line: 1,
    };
    // A leading BOM is tolerated.
    if r.peek()? == Some(0xEF) {
        let buf = r.input.fill_buf().map_err(IngestError::Io)?;
        if buf.starts_with(b"\xEF\xBB\xBF") {
            r.input.consume(3);
            r.offset += 3;
        }
    }
    let mut path: Vec<PathSeg> = Vec::new();
    let mut containers: Vec<bool> = Vec::new();
    let mut expect = Expect::Value;
    loop {
        let next = r.skip_ws()?;
        let Some(b) = next else {
            if expect == Expect::Done {
                return Ok(());
            }
            return Err(r.err("the file ends inside the JSON document"));
        };
        match expect {
            Expect::Done => return Err(r.err("data after the end of the JSON document")),
            Expect::Value | Expect::ValueOrArrEnd => {
                if expect == Expect::ValueOrArrEnd && b == b']' {
                    r.bump();
                    path.pop();
                    containers.pop();
                    visitor.close(&path)?;
                    expect = after_value(&containers);
                    continue;
                }
                expect = value(&mut r, b, &mut path, &mut containers, visitor)?;
            }
            Expect::KeyOrEnd | Expect::Key => {
                if b == b'}' && expect == Expect::KeyOrEnd {
                    r.bump();
                    containers.pop();
                    visitor.close(&path)?;
                    expect = after_value(&containers);
                    continue;
                }
                if b != b'"' {
                    return Err(r.err(format!("expected a key (a string), found {:?}", b as char)));
                }
                let s = r.string(true)?;
                let key = String::from_utf8_lossy(&s.raw).into_owned();
                path.push(PathSeg::Key(key));
                expect = Expect::Colon;
            }
            Expect::Colon => {
                r.expect_byte(b':', "`:`")?;
                expect = Expect::Value;
            }
            Expect::CommaOrObjEnd => match b {
                b',' => {
                    r.bump();
                    path.pop();
                    expect = Expect::Key;
                }
                b'}' => {
                    r.bump();
                    path.pop();
                    containers.pop();
                    visitor.close(&path)?;
                    expect = after_value(&containers);
                }
                _ => return Err(r.err(format!("expected `,` or `}}`, found {:?}", b as char))),
            },
            Expect::CommaOrArrEnd => match b {
                b',' => {
                    r.bump();
                    if let Some(PathSeg::Index(i)) = path.last_mut() {
                        *i += 1;
                    }
                    expect = Expect::Value;
                }
                b']' => {
                    r.bump();
                    path.pop();
                    containers.pop();
                    visitor.close(&path)?;
                    expect = after_value(&containers);
                }
                _ => return Err(r.err(format!("expected `,` or `]`, found {:?}", b as char))),
            },
        }
    }
}

#[cfg(test)]
/// Renders a path like `interactions[0].response.body`.
pub fn show(path: &[PathSeg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            PathSeg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        strings: Vec<(String, RawString)>,
        scalars: Vec<(String, String, (u64, u64))>,
        closed: Vec<String>,
    }

    impl Visitor for Collect {
        fn wants(&mut self, path: &[PathSeg]) -> bool {
            path.last().and_then(PathSeg::key) == Some("body")
        }
        fn string(&mut self, path: &[PathSeg], value: RawString) -> Result<(), IngestError> {
            self.strings.push((show(path), value));
            Ok(())
        }
        fn scalar(&mut self, path: &[PathSeg], text: &str, at: (u64, u64)) {
            self.scalars.push((show(path), text.to_owned(), at));
        }
        fn close(&mut self, path: &[PathSeg]) -> Result<(), IngestError> {
            self.closed.push(show(path));
            Ok(())
        }
    }

    #[test]
    fn walks_paths_and_keeps_wanted_strings() {
        let doc = r#"{"version": 1, "interactions": [ {"request": {"body": "a\"b", "x": "skip"}, "response": {"status": 200, "body": ""}}, {} ], "e": []}"#;
        let mut c = Collect::default();
        assert!(walk(doc.as_bytes(), &mut c).is_ok());
        let got: Vec<(&str, &[u8])> = c
            .strings
            .iter()
            .map(|(p, s)| (p.as_str(), s.raw.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                ("interactions[0].request.body", &b"a\\\"b"[..]),
                ("interactions[0].response.body", &b""[..])
            ]
        );
        let (s, e) = c.strings[0].1.literal();
        assert_eq!(&doc[s as usize..e as usize], r#""a\"b""#);
        assert_eq!(c.scalars[1].0, "interactions[0].response.status");
        assert_eq!(c.scalars[1].1, "200");
        assert!(c.closed.contains(&"interactions[0]".to_owned()));
        assert!(c.closed.contains(&"interactions[1]".to_owned()));
        assert_eq!(c.closed.last().map(String::as_str), Some(""));
    }

    #[test]
    fn bad_documents_say_where() {
        for (doc, at) in [
            (r#"{"a": tru}"#, 6),
            (r#"{"a" 1}"#, 5),
            (r#"{"a": "x"#, 6),
            (r#"{"a": 1} x"#, 9),
            ("[1, 2", 5),
        ] {
            let mut c = Collect::default();
            match walk(doc.as_bytes(), &mut c) {
                Err(IngestError::InvalidJson { offset, .. }) => assert_eq!(offset, at, "{doc}"),
                other => panic!("{doc}: {other:?}"),
            }
        }
    }

    #[test]
    fn chunking_does_not_matter() {
        let doc = br#"{"interactions":[{"request":{"body":"data: {\"x\":1}\n\n"}}]}"#;
        let mut whole = Collect::default();
        assert!(walk(&doc[..], &mut whole).is_ok());
        for size in 1..8 {
            let mut c = Collect::default();
            let reader = std::io::BufReader::with_capacity(size, &doc[..]);
            assert!(walk(reader, &mut c).is_ok());
            assert_eq!(c.strings, whole.strings, "buffer of {size}");
        }
    }
}
