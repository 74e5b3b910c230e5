//! The escapings of input text ([`InputText`], defined in `crate::text` so that the checks can
//! word findings with it): the one way such text reaches a printer. It has no `Display`: a
//! printer must say where the text goes, and gets it escaped for that place — a terminal, an
//! HTML page, GitHub-flavoured Markdown, a workflow command, XML — or, through `Serialize`, as a
//! JSON string (written by [`super::safe_json`], which escapes what serde_json leaves raw). The
//! escaping functions themselves are private to the report layer, so a command or a new printer
//! cannot escape a string of its own by another route, nor print a recorded control sequence,
//! bidirectional override or markup by forgetting a call: a finding's message, labels, notes
//! and help, the file names and session ids of the summaries are all `InputText`.

use maud::Render;

pub use crate::text::InputText;

/// The escapings, one per place input text can be printed.
impl InputText {
    /// For a terminal or a plain-text log, on one line: controls, bidirectional marks and line
    /// separators as `\u{1b}`, tabs as spaces.
    pub fn for_terminal(&self) -> String {
        super::snippet::escape(self.unescaped(), false)
    }

    /// For a terminal, keeping its line breaks (a help text of several lines); everything else
    /// escaped as [`Self::for_terminal`] does.
    pub fn for_terminal_lines(&self) -> String {
        super::snippet::escape(self.unescaped(), true)
    }

    /// For an HTML page (text or a quoted attribute value): markup and quotes as entities,
    /// controls shown as `\u{…}`.
    pub fn for_html(&self) -> impl Render + '_ {
        Html(self.unescaped())
    }

    /// For the GitHub step summary (Markdown with raw HTML allowed), inside one table cell.
    pub fn for_markdown(&self) -> String {
        super::github::escape_markdown(self.unescaped())
    }

    /// For a workflow command's message (`::error …::message`).
    pub fn for_github_data(&self) -> String {
        super::github::escape_data(self.unescaped())
    }

    /// For a workflow command's property value (`file=…`).
    pub fn for_github_property(&self) -> String {
        super::github::escape_property(self.unescaped())
    }

    /// For XML text or a quoted attribute value.
    pub fn for_xml(&self) -> String {
        super::junit::xml_escape(self.unescaped())
    }

    /// Its first line, cut to about `max` bytes (see [`crate::session::first_line`]).
    pub fn first_line(&self, max: usize) -> InputText {
        Self::new(crate::session::first_line(self.unescaped(), max))
    }
}

/// Text from the input on an HTML page.
struct Html<'a>(&'a str);

impl Render for Html<'_> {
    fn render_to(&self, out: &mut String) {
        push_html(out, self.0);
    }
}

/// Appends `s` to a page: escaped for HTML text and attribute values (quotes included), control
/// characters and bidi overrides shown as `\u{…}` (newlines kept). The page's own wrapper of
/// input text (`html::Text`) writes through it too.
pub(super) fn push_html(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push('\n'),
            _ => super::snippet::push_escaped(out, c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_gets_the_text_escaped_its_own_way() {
        let t = InputText::new("a\u{1b}]52;c;x\u{7}<b>`|\u{202e}\n%:,&");
        assert_eq!(
            t.for_terminal(),
            "a\\u{1b}]52;c;x\\u{7}<b>`|\\u{202e}\\u{a}%:,&"
        );
        assert_eq!(
            t.for_html().render().into_string(),
            "a\\u{1b}]52;c;x\\u{7}&lt;b&gt;`|\\u{202e}\n%:,&amp;"
        );
        let md = t.for_markdown();
        assert!(!md.contains(['<', '\n', '\u{1b}', '\u{202e}']), "{md}");
        assert!(md.contains("\\`\\|"), "{md}");
        let data = t.for_github_data();
        assert!(!data.contains(['\n', '\u{1b}', '\u{7}']), "{data}");
        assert!(data.ends_with("%0A%25:,&"), "{data}");
        assert!(t.for_github_property().ends_with("%0A%25%3A%2C&"));
        assert!(t.for_xml().contains("&lt;b&gt;") && t.for_xml().contains("&#x202E;"));
        let mut json = Vec::new();
        super::super::safe_json::to_writer(&mut json, &t).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert!(
            json.contains("\\u001b") && json.contains("\\u202e"),
            "{json}"
        );
        assert!(!json.contains(['\u{1b}', '\u{202e}']), "{json}");
    }
}
