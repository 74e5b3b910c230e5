//! GitHub Actions workflow commands: one annotation per finding
//! (`::error file=…,line=…,col=…,endLine=…,endColumn=…,title=…::message`), escaped as
//! `@actions/core` escapes them, and a Markdown summary appended to `$GITHUB_STEP_SUMMARY` when it
//! is set (annotations are capped by GitHub at 10 per type per step; the summary has them all).

use std::io::{self, Write};

use super::record::FindingRecord;
use super::{Printer, RunSummary, Totals, UnitOutput, by_rule};
use crate::checks::diagnostic::Severity;

/// Escapes a command's message: `%`, CR, LF as `@actions/core` does; every other control and
/// bidirectional character as the human printer shows it (`\u{1b}`), so that a recorded string
/// cannot reach the log viewer live.
pub(in crate::report) fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            '\t' => out.push('\t'),
            _ => super::snippet::push_escaped(&mut out, c),
        }
    }
    out
}

/// Escapes a property value: as data, plus `:` and `,`.
pub(in crate::report) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// Escapes text from the input for the step summary, which GitHub renders as GitHub-flavoured
/// Markdown with raw HTML allowed: `<`, `>` and `&` as entities, every ASCII punctuation character
/// that can open or close Markdown (code spans, emphasis, links and images, table cells, math,
/// emoji, mentions) behind a backslash, and line breaks, controls and bidirectional characters as
/// the human printer shows them (`\u{a}`), so that a recorded string renders as the text it is,
/// inside one table cell. Never put the result in a code span: escapes are literal there.
pub(in crate::report) fn escape_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if crate::text::is_dangerous(c) {
            let mut shown = String::new();
            super::snippet::push_escaped(&mut shown, c);
            out.push_str(&escape_markdown(&shown));
            continue;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '{' | '}' | '!' | '~' | '|' | '#'
            | '$' | ':' | '@' | '^' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The workflow command for one finding, saying how many alike ones are left out after it.
pub fn command(rec: &FindingRecord, more: Option<usize>) -> String {
    let kind = match rec.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let mut props = Vec::new();
    if let Some(file) = &rec.file {
        props.push(format!("file={}", file.for_github_property()));
    }
    if let (Some(line), Some(col)) = (rec.line, rec.column) {
        props.push(format!("line={line}"));
        props.push(format!("col={col}"));
        if let (Some(el), Some(ec)) = (rec.end_line, rec.end_column) {
            props.push(format!("endLine={el}"));
            props.push(format!("endColumn={ec}"));
        }
    }
    props.push(format!(
        "title={}",
        escape_property(&format!("rewind: {}", rec.rule))
    ));
    // Escaped piece by piece (the escaping is character by character).
    let mut message = rec.message.for_github_data();
    if let Some(locator) = &rec.locator {
        message.push_str(&format!(" ({})", locator.for_github_data()));
    }
    if let Some(help) = &rec.help {
        message.push_str(&format!(
            "{}{}",
            escape_data("\nhelp: "),
            help.for_github_data()
        ));
    }
    if let Some(more) = more {
        message.push_str(&escape_data(&format!(
            "\n{} (the same message but for ids and numbers), not annotated",
            super::group::more_words(more)
        )));
    }
    format!("::{kind} {}::{message}", props.join(","))
}

pub struct GithubPrinter<W: Write> {
    out: W,
    /// The step summary's rows of findings (the first few of each group of alike ones, then a
    /// row counting the rest): bounded however many findings there are.
    rows: Vec<String>,
    totals: Totals,
    rules: std::collections::BTreeMap<&'static str, Totals>,
    summary_path: Option<std::path::PathBuf>,
}

impl<W: Write> GithubPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            rows: Vec::new(),
            totals: Totals::default(),
            rules: Default::default(),
            summary_path: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|p| !p.is_empty())
                .map(Into::into),
        }
    }

    /// Counts `records` and writes their rows of the step summary, alike findings grouped.
    fn add(&mut self, records: &[FindingRecord], plan: &[super::group::Show]) {
        self.totals.merge(Totals::of(records));
        for (rule, n) in by_rule(records.iter()) {
            self.rules.entry(rule).or_default().merge(n);
        }
        for (r, show) in records.iter().zip(plan) {
            let super::group::Show::Full { more } = *show else {
                continue;
            };
            let at = match (&r.file, r.line, &r.locator) {
                (Some(f), Some(l), _) => format!("{}:{l}", f.for_markdown()),
                (Some(f), None, Some(loc)) => {
                    format!("{} › {}", f.for_markdown(), loc.for_markdown())
                }
                (Some(f), None, None) => f.for_markdown(),
                (None, _, _) => String::new(),
            };
            self.rows.push(format!(
                "| {} | `{}` | {at} | {} |\n",
                r.severity,
                r.rule,
                r.message.for_markdown()
            ));
            if let Some(more) = more {
                self.rows.push(format!(
                    "| {} | `{}` | | {} \\(the same message but for ids and numbers\\) |\n",
                    r.severity,
                    r.rule,
                    super::group::more_words(more)
                ));
            }
        }
    }

    fn markdown(&self, run: &RunSummary) -> String {
        let totals = self.totals;
        let mut md = String::from("## rewind\n\n");
        md.push_str(&format!(
            "{} file(s) checked, {} skipped, {} unreadable: **{}**\n\n",
            run.files_checked,
            run.files_skipped.len(),
            run.errors.len(),
            totals.words()
        ));
        if !self.rules.is_empty() {
            md.push_str("| rule | errors | warnings | infos |\n|---|---:|---:|---:|\n");
            for (rule, n) in &self.rules {
                md.push_str(&format!(
                    "| `{rule}` | {} | {} | {} |\n",
                    n.errors, n.warnings, n.infos
                ));
            }
            md.push_str("\n| severity | rule | where | message |\n|---|---|---|---|\n");
            for row in &self.rows {
                md.push_str(row);
            }
        }
        for (file, error) in &run.errors {
            md.push_str(&format!(
                "\n- unreadable {}: {}\n",
                file.for_markdown(),
                error.for_markdown()
            ));
        }
        md
    }
}

impl<W: Write> Printer for GithubPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        let keys: Vec<u64> = unit.records.iter().map(super::group::record_key).collect();
        let plan = super::group::plan(&keys);
        for (rec, show) in unit.records.iter().zip(&plan) {
            if let super::group::Show::Full { more } = *show {
                writeln!(self.out, "{}", command(rec, more))?;
            }
        }
        self.add(&unit.records, &plan);
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        for (file, error) in &run.errors {
            writeln!(
                self.out,
                "::error file={},title={}::{}",
                file.for_github_property(),
                escape_property("rewind: unreadable input"),
                error.for_github_data()
            )?;
        }
        if let Some(path) = &self.summary_path {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            f.write_all(self.markdown(run).as_bytes())?;
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_actions_core() {
        assert_eq!(escape_data("100% done\r\nnext"), "100%25 done%0D%0Anext");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    #[test]
    fn summary_text_cannot_change_the_markdown() {
        let hostile = "x`<img src=x>`[Re-run passed](https://e.x)|*_\n| a |\u{202e}&";
        let md = escape_markdown(hostile);
        assert_eq!(
            md,
            "x\\`&lt;img src=x&gt;\\`\\[Re-run passed\\]\\(https\\://e.x\\)\\|\\*\\_\\\\u\\{a\\}\\| a \\|\\\\u\\{202e\\}&amp;"
        );
        assert!(!md.contains(['<', '\n', '\u{202e}']));
    }

    #[test]
    fn the_step_summary_escapes_file_names_and_messages() {
        let mut printer = GithubPrinter::new(Vec::new());
        let rec = FindingRecord {
            rule: crate::checks::Rule::StepUnclosed,
            severity: Severity::Warning,
            message: "closed `code` <img src=x> [l](https://e.x)".into(),
            file: Some("a|b\n<img src=x>.log".into()),
            locator: None,
            line: Some(3),
            column: None,
            end_line: None,
            end_column: None,
            span: None,
            label: None,
            ids: Default::default(),
            related: Vec::new(),
            notes: Vec::new(),
            help: None,
            fingerprint: "abc".into(),
        };
        printer.add(&[rec], &[super::super::group::Show::Full { more: None }]);
        let run = RunSummary {
            errors: vec![("bad`\n|.log".into(), "no <b>".into())],
            ..RunSummary::default()
        };
        let md = printer.markdown(&run);
        assert!(!md.contains(['<', '>']), "{md}");
        assert!(!md.contains("]("), "{md}");
        let row = md.lines().find(|l| l.contains("a\\|b")).unwrap_or_default();
        assert!(
            row.ends_with(" |") && row.contains("closed \\`code\\`"),
            "{md}"
        );
        assert!(
            md.contains("- unreadable bad\\`\\\\u\\{a\\}\\|.log: no &lt;b&gt;"),
            "{md}"
        );
    }
}
