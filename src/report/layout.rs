//! Fitting human output to the terminal: how wide it is, lines wrapped to that width, and tables
//! that shrink to it or, when they cannot, stack into `key: value` lines.
//!
//! The width is the terminal's when standard output is one (asked of the terminal, so a resized
//! window is honoured), otherwise `$COLUMNS`, otherwise [`DEFAULT_WIDTH`]. Every line rewind
//! words itself fits; the lines of a snippet that quote the input are cut to a window of their
//! own (see [`super::snippet`]) and may be wider.

use std::io::IsTerminal;

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width};

/// The width when neither the terminal nor `$COLUMNS` says: the classic terminal's.
pub const DEFAULT_WIDTH: usize = 80;
/// Narrower than this, wrapping would leave a word or two a line: rewind prints as if this wide.
pub const MIN_WIDTH: usize = 40;
/// Wider than this, lines get too long to read: rewind prints as if this wide.
pub const MAX_WIDTH: usize = 240;

/// The width human output is fitted to (see the module's documentation).
pub fn width() -> usize {
    let terminal = if std::io::stdout().is_terminal() {
        terminal_size::terminal_size().map(|(w, _)| usize::from(w.0))
    } else {
        None
    };
    decide_width(terminal, std::env::var("COLUMNS").ok().as_deref())
}

/// The one place the width is decided: the terminal's, else `columns` (`$COLUMNS`) when it is a
/// number, else [`DEFAULT_WIDTH`]; kept within [`MIN_WIDTH`]..=[`MAX_WIDTH`].
pub fn decide_width(terminal: Option<usize>, columns: Option<&str>) -> usize {
    terminal
        .filter(|&w| w > 0)
        .or_else(|| {
            columns
                .and_then(|c| c.trim().parse().ok())
                .filter(|&w| w > 0)
        })
        .unwrap_or(DEFAULT_WIDTH)
        .clamp(MIN_WIDTH, MAX_WIDTH)
}

/// Columns `s` takes on a terminal (colour codes take none).
pub fn display_width(s: &str) -> usize {
    textwrap::core::display_width(s)
}

/// `text` wrapped to `width`: its first line after `first`, the others after `rest`. Every line
/// ends with a newline; an empty text is `first` alone. Lines break at spaces, never inside a
/// code span (`` `rewind repair --dry-run …` ``): a suggested command stays one line that pastes
/// as one command, and one too long for a line stands on a line of its own, whole. Any other
/// word longer than a line is broken.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    for (n, paragraph) in text.split('\n').enumerate() {
        let indent = if n == 0 { first } else { rest };
        wrap_paragraph(paragraph, width, indent, rest, &mut out);
    }
    out
}

/// One line of text (no line break in it) wrapped onto `out`, greedily.
fn wrap_paragraph(text: &str, width: usize, first: &str, rest: &str, out: &mut String) {
    let mut line = first.to_owned();
    let mut used = display_width(first);
    let mut has_word = false;
    let flush = |line: &mut String, out: &mut String| {
        out.push_str(line.trim_end());
        out.push('\n');
    };
    for (space, word, code) in words(text) {
        let w = display_width(word);
        if has_word && used + display_width(space) + w <= width {
            line.push_str(space);
            line.push_str(word);
            used += display_width(space) + w;
            continue;
        }
        if has_word {
            flush(&mut line, out);
            line = rest.to_owned();
            used = display_width(rest);
        }
        has_word = true;
        if used + w <= width || code {
            line.push_str(word);
            used += w;
            continue;
        }
        // A word longer than a line (an id, a path outside a code span): cut where it reaches
        // the edge.
        let mut at_start = true;
        for c in word.chars() {
            let cw = display_width(c.encode_utf8(&mut [0; 4]));
            if used + cw > width && !at_start {
                flush(&mut line, out);
                line = rest.to_owned();
                used = display_width(rest);
            }
            line.push(c);
            used += cw;
            at_start = false;
        }
    }
    flush(&mut line, out);
}

/// The words of one line with the spaces before each: runs of characters between ASCII spaces,
/// except that a code span (from a backtick to the next one) is one word, spaces and all. A
/// backtick with no partner is an ordinary character.
fn words(text: &str) -> Vec<(&str, &str, bool)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let space_start = i;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        if i == bytes.len() {
            break;
        }
        let start = i;
        let mut code = false;
        while i < bytes.len() && bytes[i] != b' ' {
            if bytes[i] == b'`'
                && let Some(close) = text[i + 1..].find('`')
            {
                code = true;
                i += close + 2;
                continue;
            }
            i += 1;
        }
        out.push((&text[space_start..start], &text[start..i], code));
    }
    out
}

/// `t` rendered within `width` columns: its columns shrunk and their cells wrapped at spaces
/// when that is enough, otherwise each row as a block of `header: value` lines. No column is
/// narrower than its longest word: an id, a path or a header is never cut in two.
pub fn fit_table(mut t: Table, width: usize) -> String {
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    let header: Vec<String> = t
        .header()
        .map(|h| h.cell_iter().map(|c| c.content()).collect())
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = t
        .row_iter()
        .map(|r| r.cell_iter().map(|c| c.content()).collect())
        .collect();
    for i in 0..header.len() {
        let widest = rows
            .iter()
            .filter_map(|r| r.get(i))
            .chain(header.get(i))
            .flat_map(|cell| cell.split_whitespace())
            .map(display_width)
            .max()
            .unwrap_or(0);
        if let Some(column) = t.column_mut(i) {
            // The boundary counts the cell's padding (a space each side).
            let at_least = u16::try_from(widest + 2).unwrap_or(u16::MAX);
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(at_least)));
        }
    }
    let shown = t.to_string();
    if shown.lines().all(|l| display_width(l) <= width) {
        return shown;
    }
    stacked(&header, &rows, width)
}

/// Each row as `header: value` lines, the first unindented, a blank line between rows.
fn stacked(header: &[String], rows: &[Vec<String>], width: usize) -> String {
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        for (i, cell) in row.iter().enumerate() {
            let key = header.get(i).map_or("", String::as_str);
            let value = cell.split('\n').collect::<Vec<_>>().join(" ");
            let (first, rest) = if i == 0 {
                (format!("{key}: "), "    ".to_owned())
            } else {
                (format!("  {key}: "), "      ".to_owned())
            };
            out.push_str(&wrap(&value, width, &first, &rest));
        }
    }
    // Printed with `writeln!`, like a table.
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// The label lines of a snippet miette rendered (`·   ╰── text`) wrapped to `width`: the text
/// of a label that runs past it goes on under itself. A label anchored so far right (under the
/// quoted input) that less than [`MIN_LABEL`] columns are left still gets that many.
pub fn wrap_labels(rendered: &str, width: usize) -> String {
    let mut out = String::with_capacity(rendered.len());
    for line in rendered.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        match label_parts(body) {
            Some((prefix, text)) if display_width(body) > width => {
                // The text's colour codes, kept around each of its lines.
                let (lead, plain, trail) = sgr_around(text);
                let room = width.saturating_sub(display_width(prefix)).max(MIN_LABEL);
                let under = prefix.replace(['╰', '─'], " ");
                let options = textwrap::Options::new(room)
                    .break_words(true)
                    .word_separator(textwrap::WordSeparator::AsciiSpace)
                    .word_splitter(textwrap::WordSplitter::NoHyphenation);
                for (i, part) in textwrap::wrap(plain, options).iter().enumerate() {
                    let start = if i == 0 { prefix } else { under.as_str() };
                    out.push_str(start);
                    out.push_str(lead);
                    out.push_str(part.trim_end());
                    out.push_str(trail);
                    out.push('\n');
                }
                if !line.ends_with('\n') {
                    out.pop();
                }
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// The fewest columns a wrapped label is given.
pub const MIN_LABEL: usize = 30;

/// A label line split after its `╰── ` (the prefix, the text), if it is one: a snippet line
/// (`·` first) with a `╰`, dashes and a space.
fn label_parts(line: &str) -> Option<(&str, &str)> {
    let start = strip_sgr(line.trim_start());
    if !start.starts_with('·') {
        return None;
    }
    let corner = line.find('╰')?;
    let after = &line[corner + '╰'.len_utf8()..];
    let dashes = after.len() - after.trim_start_matches('─').len();
    if dashes == 0 {
        return None;
    }
    let rest = &after[dashes..];
    // Colour codes may close the mark before the space.
    let rest_plain = strip_sgr(rest);
    let text = rest_plain.strip_prefix(' ')?;
    let at = line.len() - text.len();
    Some((&line[..at], text))
}

/// `s` after any colour codes (`ESC [ … m`) it starts with.
fn strip_sgr(mut s: &str) -> &str {
    while let Some(rest) = s.strip_prefix("\u{1b}[") {
        match rest.find('m') {
            Some(end) => s = &rest[end + 1..],
            None => break,
        }
    }
    s
}

/// `text` as (the colour codes it starts with, its words, the codes it ends with).
fn sgr_around(text: &str) -> (&str, &str, &str) {
    let body = strip_sgr(text);
    let lead = &text[..text.len() - body.len()];
    let mut plain = body;
    while let Some(rest) = plain.strip_suffix("\u{1b}[0m") {
        plain = rest;
    }
    let trail = &body[plain.len()..];
    (lead, plain, trail)
}

/// A writer of human output that wraps each line wider than its width, its continuation lines
/// under the line's own indentation and two columns further. Drawn lines (tables, snippets:
/// those starting with a box-drawing character) pass as they are: they are fitted when drawn.
/// Without a width (a machine format), every byte passes untouched.
pub struct Fitted<W: std::io::Write> {
    inner: W,
    width: Option<usize>,
    line: Vec<u8>,
}

impl<W: std::io::Write> Fitted<W> {
    pub fn new(inner: W, width: Option<usize>) -> Self {
        Self {
            inner,
            width,
            line: Vec::new(),
        }
    }

    fn emit(&mut self, width: usize, newline: bool) -> std::io::Result<()> {
        let line = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&line);
        let drawn = text
            .trim_start()
            .starts_with(['┌', '│', '╞', '├', '└', '╭', '╰', '·', '┆']);
        if drawn || display_width(&text) <= width {
            self.inner.write_all(&line)?;
        } else {
            let body = text.trim_start();
            let indent = &text[..text.len() - body.len()];
            let mut wrapped = wrap(body, width, indent, &format!("{indent}  "));
            if !newline {
                wrapped.pop();
            }
            self.inner.write_all(wrapped.as_bytes())?;
            return Ok(());
        }
        if newline {
            self.inner.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for Fitted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let Some(width) = self.width else {
            return self.inner.write(buf);
        };
        let mut rest = buf;
        while let Some(end) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..end]);
            self.emit(width, true)?;
            rest = &rest[end + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(width) = self.width
            && !self.line.is_empty()
        {
            self.emit(width, false)?;
        }
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for Fitted<W> {
    fn drop(&mut self) {
        let _ = std::io::Write::flush(self);
    }
}

/// A rule's Markdown documentation wrapped to `width`: paragraphs and list items re-flowed
/// (a list item's lines under its text), headings wrapped; fenced code blocks (verbatim
/// examples of input) and table rows kept as they are.
pub fn wrap_markdown(md: &str, width: usize) -> String {
    let mut out = String::new();
    // The paragraph being gathered: (first-line indent, later-line indent, words).
    let mut para: Option<(String, String, String)> = None;
    let flush = |out: &mut String, para: &mut Option<(String, String, String)>| {
        if let Some((first, rest, text)) = para.take() {
            out.push_str(&wrap(&text, width, &first, &rest));
        }
    };
    let mut fenced = false;
    for line in md.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            flush(&mut out, &mut para);
            fenced = !fenced;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if fenced || trimmed.is_empty() || trimmed.starts_with('|') {
            flush(&mut out, &mut para);
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if trimmed.starts_with('#') {
            flush(&mut out, &mut para);
            out.push_str(&wrap(trimmed, width, indent, indent));
            continue;
        }
        if let Some(marker) = list_marker(trimmed) {
            flush(&mut out, &mut para);
            let under = " ".repeat(indent.len() + marker.len());
            para = Some((
                format!("{indent}{marker}"),
                under,
                trimmed[marker.len()..].to_owned(),
            ));
            continue;
        }
        match &mut para {
            Some((_, _, text)) => {
                text.push(' ');
                text.push_str(trimmed);
            }
            None => para = Some((indent.to_owned(), indent.to_owned(), trimmed.to_owned())),
        }
    }
    flush(&mut out, &mut para);
    out
}

/// `- `, `* ` or `12. ` at the start of a list item.
fn list_marker(line: &str) -> Option<&str> {
    if line.starts_with("- ") || line.starts_with("* ") {
        return Some(&line[..2]);
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && line[digits..].starts_with(". ")).then(|| &line[..digits + 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminal_then_columns_then_eighty() {
        assert_eq!(decide_width(Some(120), Some("90")), 120);
        assert_eq!(decide_width(None, Some("90")), 90);
        assert_eq!(decide_width(None, Some(" 90 ")), 90);
        assert_eq!(decide_width(None, Some("wide")), DEFAULT_WIDTH);
        assert_eq!(decide_width(None, None), DEFAULT_WIDTH);
        assert_eq!(decide_width(Some(0), None), DEFAULT_WIDTH);
        assert_eq!(decide_width(Some(10), None), MIN_WIDTH);
        assert_eq!(decide_width(None, Some("100000")), MAX_WIDTH);
    }

    #[test]
    fn wrapped_lines_fit() {
        let text = "the agent crashed on its own validation (logged by session.processor): a tool \
                    state was written with a `status` outside pending | running | completed";
        let out = wrap(text, 40, "  = note: ", "          ");
        assert!(out.lines().count() > 2, "{out}");
        assert!(out.lines().all(|l| display_width(l) <= 40), "{out}");
        assert!(out.starts_with("  = note: the agent"), "{out}");
        assert!(out.lines().skip(1).all(|l| l.starts_with("          ")));
        // A word longer than the width is broken rather than overflowing.
        let long = wrap(&"x".repeat(100), 30, "", "");
        assert!(long.lines().all(|l| display_width(l) <= 30), "{long}");
        assert_eq!(wrap("", 30, "a: ", ""), "a:\n");
    }

    #[test]
    fn a_code_span_is_never_broken() {
        let text = "to close it, run `rewind repair --dry-run /home/dev/.local/share/opencode/opencode.db` \
                    first, then again without `--dry-run`";
        let out = wrap(text, 40, "  = help: ", "          ");
        let command = "`rewind repair --dry-run /home/dev/.local/share/opencode/opencode.db`";
        assert!(
            out.lines().any(|l| l.trim_start() == command),
            "the command is one line of its own: {out}"
        );
        assert!(out.contains("`--dry-run`"), "{out}");
        // Outside code spans, lines still fit; a short code span wraps like a word.
        for l in out.lines().filter(|l| !l.contains("opencode.db")) {
            assert!(display_width(l) <= 40, "{l:?} in {out}");
        }
        let short = wrap("a `b c` d", 6, "", "");
        assert_eq!(short, "a\n`b c`\nd\n");
        // A lone backtick is an ordinary character.
        assert_eq!(wrap("it's a ` b", 80, "", ""), "it's a ` b\n");
        // Line breaks in the text start lines after `rest`.
        assert_eq!(wrap("a\nb", 80, "> ", "  "), "> a\n  b\n");
    }

    fn table(rows: &[[&str; 3]]) -> Table {
        let mut t = Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(["session", "tools by final status", "findings"]);
        for r in rows {
            t.add_row(*r);
        }
        t
    }

    #[test]
    fn tables_shrink_then_stack() {
        let rows = [[
            "ses_2d9e3a1c0ffeQk4VYbq7XN2mTd",
            "3 completed, 2 error, 1 running, 4 pending",
            "4 errors, 2 warnings",
        ]];
        let wide = fit_table(table(&rows), 200);
        assert_eq!(wide.lines().count(), 5, "{wide}");
        let shrunk = fit_table(table(&rows), 70);
        assert!(shrunk.lines().all(|l| display_width(l) <= 70), "{shrunk}");
        assert!(
            shrunk.contains("ses_2d9e3a1c0ffeQk4VYbq7XN2mTd"),
            "{shrunk}"
        );
        let stacked = fit_table(table(&rows), 40);
        assert!(stacked.lines().all(|l| display_width(l) <= 40), "{stacked}");
        assert!(
            stacked
                .starts_with("session: ses_2d9e3a1c0ffeQk4VYbq7XN2mTd\n  tools by final status:"),
            "{stacked}"
        );
    }

    #[test]
    fn long_labels_go_on_under_themselves() {
        let rendered = " 48 │ some quoted line\n    ·   │     ╰── the process crashed here: UnhandledRejection: Failed after 3 attempts\n    ╰────\n";
        let out = wrap_labels(rendered, 60);
        assert_eq!(
            out,
            " 48 │ some quoted line\n    ·   │     ╰── the process crashed here:\n    ·   │         UnhandledRejection: Failed after 3\n    ·   │         attempts\n    ╰────\n"
        );
        // Coloured: each line keeps the label's colour; a label is given at least `MIN_LABEL`
        // columns.
        let coloured = "    · \u{1b}[35;1m╰── \u{1b}[35;1mthe error is long enough to wrap here\u{1b}[0m\u{1b}[0m";
        let out = wrap_labels(coloured, 30);
        assert_eq!(
            out,
            "    · \u{1b}[35;1m╰── \u{1b}[35;1mthe error is long enough to\u{1b}[0m\u{1b}[0m\n    · \u{1b}[35;1m    \u{1b}[35;1mwrap here\u{1b}[0m\u{1b}[0m"
        );
        // A line that fits, and lines that are not labels, are left alone.
        let fits = "    · ╰── short\n 12 │ ╰── quoted input, not a label\n";
        assert_eq!(wrap_labels(fits, 10), fits);
    }

    #[test]
    fn markdown_reflows_but_keeps_code() {
        let md = "# rule-name (error by default)\n\n## What it does\nReports a stream that ends without\nits terminal event.\n- one item that is long enough to wrap\n  onto a second line\n\n```text\ndata: {\"a\": \"a quoted input line that is long\"}\n```\n";
        let out = wrap_markdown(md, 30);
        assert_eq!(
            out,
            "# rule-name (error by default)\n\n## What it does\nReports a stream that ends\nwithout its terminal event.\n- one item that is long enough\n  to wrap onto a second line\n\n```text\ndata: {\"a\": \"a quoted input line that is long\"}\n```\n"
        );
    }

    #[test]
    fn fitted_lines_wrap_under_their_indentation() {
        let mut out = Vec::new();
        {
            let mut w = Fitted::new(&mut out, Some(20));
            use std::io::Write;
            write!(w, "  a line of words that runs past twenty\n│ drawn lines stay as they are, whatever │\nshort\nno newline at the end").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "  a line of words\n    that runs past\n    twenty\n│ drawn lines stay as they are, whatever │\nshort\nno newline at the\n  end"
        );
        let mut raw = Vec::new();
        {
            use std::io::Write;
            let mut w = Fitted::new(&mut raw, None);
            writeln!(w, "{}", "x ".repeat(50)).unwrap();
        }
        assert_eq!(raw.len(), 101);
    }
}
