//! The structural pass: text is read as JSON where it is JSON (a JSON line, an SSE `data:`
//! payload, a pretty-printed document, JSON inside a JSON string) and as plain text elsewhere.
//!
//! A complete string literal is decoded, redacted and encoded again only when something in it
//! changed, so escapes (`\u0073k-ant-…`) hide nothing and nothing else moves. Member names are
//! never touched; the values of ids and times ([`detect::is_kept_key`]) are kept; the values of
//! secret positions are replaced whole. A string literal cut by the end of its line (a torn
//! record) is plain text: the patterns redact it, and it stays cut where it was.

use super::Redactor;
use super::detect;

/// How deep JSON inside JSON strings is read (an SSE body inside a recording's string, a tool's
/// arguments inside a stream event inside that body).
const MAX_DEPTH: usize = 4;

/// An open object or array.
#[derive(Debug, Clone, Default)]
struct Frame {
    object: bool,
    /// In an object, whether the next string is a member name.
    expecting_key: bool,
    /// The current member's name.
    key: Option<String>,
    /// The value of this object's `name` member (a HAR header's `{name, value}`).
    name: Option<String>,
}

/// Reads text as JSON where it can, across calls (a document's nesting carries over lines).
#[derive(Debug, Default)]
pub struct Scanner {
    stack: Vec<Frame>,
}

impl Scanner {
    pub fn new() -> Self {
        Scanner::default()
    }

    /// Forgets the nesting (at the start of a line of a line-oriented file).
    pub fn reset(&mut self) {
        self.stack.clear();
    }

    /// `text` redacted; `None` when nothing changed.
    pub fn redact(&mut self, r: &mut Redactor, text: &[u8]) -> Option<Vec<u8>> {
        self.redact_at(r, text, 0)
    }

    fn redact_at(&mut self, r: &mut Redactor, text: &[u8], depth: usize) -> Option<Vec<u8>> {
        let mut out: Vec<u8> = Vec::new();
        let mut changed = false;
        // Start of plain text not yet handed to the patterns.
        let mut plain = 0;
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'"' => {
                    let Some(end) = literal_end(text, i) else {
                        // Cut by the end of the line: the rest is plain text.
                        break;
                    };
                    let literal = &text[i..end];
                    // Most strings have no escape: their text is their bytes.
                    let inner = &literal[1..literal.len() - 1];
                    let decoded = if memchr::memchr(b'\\', inner).is_none()
                        && !inner.iter().any(|b| *b < 0x20)
                    {
                        std::str::from_utf8(inner)
                            .map(str::to_owned)
                            .map_err(|_| ())
                    } else {
                        serde_json::from_slice::<String>(literal).map_err(|_| ())
                    };
                    let Ok(decoded) = decoded else {
                        // Not a JSON string (a quote in prose): plain text.
                        i += 1;
                        continue;
                    };
                    changed |= flush(r, &text[plain..i], &mut out);
                    let top = self.stack.last_mut();
                    if let Some(f) = top.filter(|f| f.object && f.expecting_key) {
                        f.expecting_key = false;
                        f.key = Some(decoded);
                        out.extend_from_slice(literal);
                    } else {
                        let replaced = self.value(r, &decoded, depth);
                        if let Some(f) = self.stack.last_mut()
                            && f.object
                            && f.key.as_deref() == Some("name")
                        {
                            f.name = Some(decoded);
                        }
                        match replaced {
                            Some(new) => {
                                changed = true;
                                encode(&new, &mut out);
                            }
                            None => out.extend_from_slice(literal),
                        }
                    }
                    i = end;
                    plain = end;
                    continue;
                }
                b'{' => self.stack.push(Frame {
                    object: true,
                    expecting_key: true,
                    ..Frame::default()
                }),
                b'[' => self.stack.push(Frame::default()),
                b'}' | b']' => {
                    self.stack.pop();
                }
                b',' => {
                    if let Some(f) = self.stack.last_mut()
                        && f.object
                    {
                        f.expecting_key = true;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        changed |= flush(r, &text[plain..], &mut out);
        changed.then_some(out)
    }

    /// A decoded string value, redacted by its position or its content.
    fn value(&self, r: &mut Redactor, value: &str, depth: usize) -> Option<String> {
        let n = self.stack.len();
        let top = self.stack.last();
        let key = top.and_then(|f| f.key.as_deref());
        if top.is_some_and(|f| f.object) {
            if let Some(k) = key {
                if detect::is_kept_key(k) {
                    return None;
                }
                if let Some(kind) = detect::kind_of_key(k) {
                    return r.whole(kind, value);
                }
                // A `{name, value}` pair: a HAR header, a cookie.
                if k == "value"
                    && let Some(kind) = top
                        .and_then(|f| f.name.as_deref())
                        .and_then(detect::kind_of_key)
                {
                    return r.whole(kind, value);
                }
            }
            // The members of an `env` map, the pairs of a `cookies` list.
            let parent = n
                .checked_sub(2)
                .and_then(|p| self.stack.get(p))
                .and_then(|f| f.key.as_deref());
            if parent.is_some_and(detect::is_env_key) {
                return r.whole("env", value);
            }
            let grandparent = n
                .checked_sub(3)
                .and_then(|p| self.stack.get(p))
                .and_then(|f| f.key.as_deref());
            if key == Some("value")
                && grandparent.is_some_and(|g| g.eq_ignore_ascii_case("cookies"))
            {
                return r.whole("cookie", value);
            }
        }
        if value.is_empty() {
            return None;
        }
        // JSON or SSE inside the string: read it the same way, with its own nesting.
        if depth < MAX_DEPTH && value.contains('"') {
            let mut inner = Scanner::new();
            return inner
                .redact_at(r, value.as_bytes(), depth + 1)
                .map(|b| String::from_utf8_lossy(&b).into_owned());
        }
        r.patterns(value.as_bytes())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }
}

/// Plain text through the patterns, into `out`; whether it changed.
fn flush(r: &mut Redactor, text: &[u8], out: &mut Vec<u8>) -> bool {
    if text.is_empty() {
        return false;
    }
    match r.patterns(text) {
        Some(new) => {
            out.extend_from_slice(&new);
            true
        }
        None => {
            out.extend_from_slice(text);
            false
        }
    }
}

/// The end (past the closing quote) of the string literal opening at `start`; `None` when a
/// line end or the end of the text comes first.
fn literal_end(text: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'\\' if text.get(i + 1) == Some(&b'\n') => return None,
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            b'\n' => return None,
            _ => i += 1,
        }
    }
    None
}

/// `s` as a JSON string literal: quotes, backslashes and controls escaped, and the characters
/// no output writes raw (`text::is_dangerous`) as `\uXXXX`.
pub fn encode(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 || crate::text::is_dangerous(c) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{u:04x}").as_bytes());
                }
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Redactor};
    use super::*;

    fn run(text: &str) -> String {
        let mut r = Redactor::new(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut s = Scanner::new();
        s.redact(&mut r, text.as_bytes())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn escapes_do_not_hide_a_secret() {
        let out = run(r#"{"text":"key \u0073k-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA done"}"#);
        assert_eq!(out, r#"{"text":"key [REDACTED:anthropic-key:1] done"}"#);
    }

    #[test]
    fn keys_and_ids_are_kept() {
        let text =
            r#"{"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA":1,"id":"bob@corp.io","x":"bob@corp.io"}"#;
        assert_eq!(
            run(text),
            r#"{"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA":1,"id":"bob@corp.io","x":"[REDACTED:email:1]"}"#
        );
    }

    #[test]
    fn positions_are_replaced_whole() {
        let text = r#"{"headers":{"authorization":"Bearer abc","x-api-key":"k1"},"env":{"A":"1"},"h":[{"name":"Cookie","value":"s=1"}]}"#;
        assert_eq!(
            run(text),
            r#"{"headers":{"authorization":"Bearer [REDACTED:authorization:1]","x-api-key":"[REDACTED:api-key:1]"},"env":{"A":"[REDACTED:env:1]"},"h":[{"name":"Cookie","value":"[REDACTED:cookie:1]"}]}"#
        );
    }

    #[test]
    fn json_inside_a_string_is_read_too() {
        let text = r#"{"body":"data: {\"apiKey\":\"k1\",\"t\":\"x\"}\n\n"}"#;
        assert_eq!(
            run(text),
            r#"{"body":"data: {\"apiKey\":\"[REDACTED:api-key:1]\",\"t\":\"x\"}\n\n"}"#
        );
    }

    #[test]
    fn a_torn_line_stays_torn() {
        let text = r#"{"type":"text","text":"mail bob@corp.io and more"#;
        assert_eq!(
            run(text),
            r#"{"type":"text","text":"mail [REDACTED:email:1] and more"#
        );
    }

    #[test]
    fn sse_data_lines_and_plain_text() {
        assert_eq!(
            run(r#"data: {"delta":{"text":"bob@corp.io"}}"#),
            r#"data: {"delta":{"text":"[REDACTED:email:1]"}}"#
        );
        assert_eq!(
            run(r#"INFO said "hi" to bob@corp.io"#),
            r#"INFO said "hi" to [REDACTED:email:1]"#
        );
    }
}
