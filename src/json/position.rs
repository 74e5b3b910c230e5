//! Where in a text serde_json's error positions are.

/// Byte offset in `text` of a 1-based line and column as serde_json reports them: the column
/// counts bytes, and the byte it names is the last one read (0: the line's start).
///
/// The offset is the start of the character holding that byte (the column can fall inside a
/// multi-byte character), clamped to the text's last character: a position past the end, as an
/// unexpected end of input gives, is the last character (0 in an empty text). `None` for line 0
/// and for a line past the end of the text.
pub fn text_offset(text: &str, line: usize, column: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let mut pos = (start + column.saturating_sub(1)).min(text.len().saturating_sub(1));
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where serde_json's error for `text` points.
    fn error_at(text: &str) -> Option<usize> {
        let e = serde_json::from_str::<serde_json::Value>(text).err()?;
        text_offset(text, e.line(), e.column())
    }

    #[test]
    fn first_line() {
        assert_eq!(text_offset("{\"a\":x}", 1, 6), Some(5));
        assert_eq!(error_at("{\"a\":x}"), Some(5));
    }

    #[test]
    fn later_lines() {
        let text = "{\n  \"a\": 1,\n  \"b\": x\n}";
        assert_eq!(error_at(text), text.find('x'));
        assert_eq!(text_offset(text, 2, 1), Some(2));
    }

    #[test]
    fn column_zero_is_the_line_start() {
        assert_eq!(text_offset("ab\ncd", 2, 0), Some(3));
        assert_eq!(text_offset("ab\ncd", 1, 0), Some(0));
    }

    #[test]
    fn line_out_of_range() {
        assert_eq!(text_offset("{}", 0, 1), None);
        assert_eq!(text_offset("{}", 2, 1), None);
        assert_eq!(text_offset("a\nb", 3, 1), None);
        assert_eq!(text_offset("", 2, 0), None);
    }

    #[test]
    fn column_past_the_end_is_the_last_character() {
        assert_eq!(text_offset("{\"a\"", 1, 99), Some(3));
        assert_eq!(text_offset("{\n", 2, 0), Some(1));
        assert_eq!(text_offset("", 1, 0), Some(0));
        assert_eq!(text_offset("", 1, 5), Some(0));
        // An unexpected end of input points at the last byte read.
        assert_eq!(error_at("{\"a\":"), Some(4));
        assert_eq!(error_at("{\n"), Some(1));
    }

    #[test]
    fn multi_byte_characters() {
        // The column counts bytes: `x` is the 9th byte, after a two-byte `é`.
        let text = "{\"é\": 1 x}";
        assert_eq!(error_at(text), text.find('x'));
        // A column inside a character names the character's start.
        assert_eq!(text_offset("é€", 1, 2), Some(0));
        assert_eq!(text_offset("é€", 1, 4), Some(2));
        assert_eq!(text_offset("é€", 1, 5), Some(2));
        // Cut off inside a string that ends with a multi-byte character: serde_json points at
        // the last byte, inside `€`.
        let cut = "{\"a\":\"€";
        let at = error_at(cut);
        assert_eq!(at, Some(cut.len() - 3));
        assert!(at.is_some_and(|k| cut.is_char_boundary(k)));
        // A multi-byte character on a later line.
        assert_eq!(text_offset("a\n€x", 2, 2), Some(2));
        assert_eq!(text_offset("a\n€x", 2, 4), Some(5));
        assert_eq!(text_offset("a\n€", 2, 9), Some(2));
    }
}
