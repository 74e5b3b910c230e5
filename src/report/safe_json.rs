//! JSON as every machine printer writes it: serde_json's output with the characters
//! [`crate::text::is_dangerous`] names written as `\uXXXX` escapes too (serde_json escapes only C0
//! controls), so that a document shown in a terminal, a log viewer or a page carries no raw
//! bidirectional override, line separator or C1 control from the input.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// A formatter that writes as `F` does, escaping dangerous characters in strings.
struct Safe<F>(F);

impl<F: Formatter> Formatter for Safe<F> {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Every dangerous character serde_json leaves raw starts with one of three bytes (DEL,
        // C1's 0xC2, the bidi and separator block's 0xE2): the rest is copied as it is.
        let bytes = fragment.as_bytes();
        let (mut from, mut at) = (0, 0);
        while let Some(found) = memchr::memchr3(0x7f, 0xc2, 0xe2, &bytes[at..]) {
            let i = at + found;
            // A lead byte (or ASCII): `i` is a character boundary.
            let c = fragment[i..].chars().next().unwrap_or_default();
            at = i + c.len_utf8();
            if crate::text::is_dangerous(c) {
                writer.write_all(&bytes[from..i])?;
                // Every dangerous character is in the Basic Multilingual Plane: one escape.
                write!(writer, "\\u{:04x}", c as u32)?;
                from = at;
            }
        }
        writer.write_all(&bytes[from..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `value` as compact JSON, dangerous characters escaped.
pub fn to_writer<W: Write, T: ?Sized + Serialize>(out: W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Safe(CompactFormatter));
    value.serialize(&mut ser).map_err(io::Error::from)
}

/// `value` as indented JSON, dangerous characters escaped.
pub fn to_writer_pretty<W: Write, T: ?Sized + Serialize>(out: W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, Safe(PrettyFormatter::new()));
    value.serialize(&mut ser).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangerous_characters_are_written_as_escapes() {
        let s = "a\u{202e}b\u{2028}\u{85}\u{1b}\u{7f}é\u{200f}\"";
        let mut out = Vec::new();
        to_writer(&mut out, &serde_json::json!({"k\u{2066}": [s]})).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            r#"{"k\u2066":["a\u202eb\u2028\u0085\u001b\u007fé\u200f\""]}"#
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["k\u{2066}"][0], s);
        let mut pretty = Vec::new();
        to_writer_pretty(&mut pretty, &serde_json::json!({"k": [s]})).unwrap();
        let text = String::from_utf8(pretty).unwrap();
        assert!(text.contains("\n  \"k\": [\n    \"a\\u202eb"), "{text}");
    }

    #[test]
    fn every_dangerous_character_and_only_those_is_escaped() {
        for c in (0..0x3000).filter_map(char::from_u32) {
            let mut out = Vec::new();
            to_writer(&mut out, &format!("é{c}\u{2027}")).unwrap();
            let text = String::from_utf8(out).unwrap();
            // Quotes and backslashes are in any JSON string, escaped or as delimiters.
            let dangerous = crate::text::is_dangerous(c);
            assert_eq!(text.contains(c), !dangerous, "{c:?}: {text}");
            assert_eq!(
                serde_json::from_str::<String>(&text).unwrap(),
                format!("é{c}\u{2027}")
            );
        }
    }
}
