//! JSON string literals whose decoded text must still be located in the file.
//!
//! A response body stored in an HTTP recording is a JSON string: the SSE text is `\"`- and
//! `\n`-escaped inside it. rewind frames and decodes the *decoded* text, but every span it reports
//! must point at the bytes in the file. [`decode`] returns the decoded text and a sparse list of
//! anchors — one after each escape — from which [`Anchors::raw`] maps any decoded offset back to an
//! offset in the literal (between two escapes, one decoded byte is one raw byte).

#[cfg(test)]
use std::fmt::Write as _;

/// `(decoded offset, raw offset)` pairs, ascending; `(0, 0)` is implied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Anchors(Vec<(u64, u64)>);

impl Anchors {
    /// The raw offset (in the literal's content, after the opening quote) of a decoded offset.
    pub fn raw(&self, decoded: u64) -> u64 {
        let i = self.0.partition_point(|(d, _)| *d <= decoded);
        match i.checked_sub(1).and_then(|k| self.0.get(k)) {
            Some(&(d, r)) => r + (decoded - d),
            None => decoded,
        }
    }

    /// The raw range of a decoded range (end exclusive; the end is mapped through its last byte).
    pub fn raw_range(&self, start: u64, end: u64) -> (u64, u64) {
        let from = self.raw(start);
        let last = self.raw(end.max(start + 1) - 1);
        (from, (last + 1).max(from))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a literal could not be decoded, and at which raw offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringError {
    pub at: usize,
    pub reason: &'static str,
}

/// Decodes the content of a JSON string literal (the bytes between the quotes).
pub fn decode(raw: &[u8]) -> Result<(String, Anchors), StringError> {
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut anchors = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr::memchr(b'\\', &raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k;
        let esc = *raw.get(i + 1).ok_or(StringError {
            at: i,
            reason: "the string ends inside an escape",
        })?;
        let simple = match esc {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => {
                return Err(StringError {
                    at: i,
                    reason: "an invalid escape",
                });
            }
        };
        match simple {
            Some(b) => {
                out.push(b);
                i += 2;
            }
            None => {
                let (ch, used) = unicode_escape(raw, i)?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                i += used;
            }
        }
        anchors.push((out.len() as u64, i as u64));
    }
    let text = String::from_utf8(out).map_err(|e| StringError {
        at: e.utf8_error().valid_up_to(),
        reason: "bytes that are not UTF-8",
    })?;
    Ok((text, Anchors(anchors)))
}

fn hex4(raw: &[u8], at: usize) -> Option<u32> {
    let digits = raw.get(at..at + 4)?;
    let s = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// Decodes `\uXXXX` (and a surrogate pair) at `at`; returns the char and the raw bytes used.
fn unicode_escape(raw: &[u8], at: usize) -> Result<(char, usize), StringError> {
    let bad = StringError {
        at,
        reason: "an invalid \\u escape",
    };
    let hi = hex4(raw, at + 2).ok_or(bad.clone())?;
    if (0xD800..0xDC00).contains(&hi) {
        if raw.get(at + 6..at + 8) == Some(b"\\u")
            && let Some(lo) = hex4(raw, at + 8)
            && (0xDC00..0xE000).contains(&lo)
        {
            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return char::from_u32(c).map(|ch| (ch, 12)).ok_or(bad);
        }
        // A lone surrogate: JavaScript keeps it; UTF-8 cannot. U+FFFD stands in for it.
        return Ok(('\u{fffd}', 6));
    }
    if (0xDC00..0xE000).contains(&hi) {
        return Ok(('\u{fffd}', 6));
    }
    char::from_u32(hi).map(|ch| (ch, 6)).ok_or(bad)
}

#[cfg(test)]
/// Encodes `s` as a JSON string literal (quotes included).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_maps_back() {
        let raw = br#"data: {\"a\":\"\u00e9\"}\n\nx"#;
        let (text, anchors) = decode(raw).unwrap_or_default();
        assert_eq!(text, "data: {\"a\":\"é\"}\n\nx");
        // Every decoded position outside an escape maps onto the same character in the raw text.
        let raw_text = std::str::from_utf8(raw).unwrap_or_default();
        for (d, c) in text.char_indices() {
            let r = anchors.raw(d as u64) as usize;
            match c {
                '"' | '\n' | 'é' => assert_eq!(&raw_text[r..r + 1], "\\", "at {d}"),
                _ => assert_eq!(raw_text[r..].chars().next(), Some(c), "at {d}"),
            }
        }
        let k = text.find('x').unwrap_or(0) as u64;
        assert_eq!(
            anchors.raw_range(k, k + 1),
            (raw.len() as u64 - 1, raw.len() as u64)
        );
        assert_eq!(anchors.raw_range(0, 5), (0, 5));
    }

    #[test]
    fn surrogates_and_errors() {
        let (t, _) = decode(br"\ud83d\ude00!").unwrap_or_default();
        assert_eq!(t, "😀!");
        assert!(decode(br"\x").is_err());
        assert!(decode(br"ab\").is_err());
        assert!(decode(br"\u12").is_err());
        assert_eq!(encode("a\"b\n\u{1}"), r#""a\"b\n\u0001""#);
    }
}
