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
        let mut rest = fragment;
        while let Some((at, c)) = rest
            .char_indices()
            .find(|&(_, c)| crate::text::is_dangerous(c))
        {
            writer.write_all(&rest.as_bytes()[..at])?;
            // Every dangerous character is in the Basic Multilingual Plane: one escape.
            write!(writer, "\\u{:04x}", c as u32)?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
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
}
