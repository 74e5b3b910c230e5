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
pub fn escape_data(s: &str) -> String {
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
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The workflow command for one finding.
pub fn command(rec: &FindingRecord) -> String {
    let kind = match rec.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let mut props = Vec::new();
    if let Some(file) = &rec.file {
        props.push(format!("file={}", escape_property(file)));
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
    let mut message = rec.message.clone();
    if let Some(locator) = &rec.locator {
        message.push_str(&format!(" ({locator})"));
    }
    if let Some(help) = &rec.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    format!("::{kind} {}::{}", props.join(","), escape_data(&message))
}

pub struct GithubPrinter<W: Write> {
    out: W,
    records: Vec<FindingRecord>,
    summary_path: Option<std::path::PathBuf>,
}

impl<W: Write> GithubPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            records: Vec::new(),
            summary_path: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|p| !p.is_empty())
                .map(Into::into),
        }
    }

    fn markdown(&self, run: &RunSummary) -> String {
        let totals = Totals::of(&self.records);
        let mut md = String::from("## rewind\n\n");
        md.push_str(&format!(
            "{} file(s) checked, {} skipped, {} unreadable: **{}**\n\n",
            run.files_checked,
            run.files_skipped.len(),
            run.errors.len(),
            totals.words()
        ));
        let rules = by_rule(self.records.iter());
        if !rules.is_empty() {
            md.push_str("| rule | errors | warnings | infos |\n|---|---:|---:|---:|\n");
            for (rule, n) in rules {
                md.push_str(&format!(
                    "| `{rule}` | {} | {} | {} |\n",
                    n.errors, n.warnings, n.infos
                ));
            }
            md.push_str("\n| severity | rule | where | message |\n|---|---|---|---|\n");
            for r in &self.records {
                let at = match (&r.file, r.line, &r.locator) {
                    (Some(f), Some(l), _) => format!("{f}:{l}"),
                    (Some(f), None, Some(loc)) => format!("{f} › {loc}"),
                    (Some(f), None, None) => f.clone(),
                    (None, _, _) => String::new(),
                };
                let msg = r.message.replace('|', "\\|").replace('\n', " ");
                md.push_str(&format!(
                    "| {} | `{}` | {} | {} |\n",
                    r.severity,
                    r.rule,
                    at.replace('|', "\\|"),
                    msg
                ));
            }
        }
        for (file, error) in &run.errors {
            md.push_str(&format!(
                "\n- unreadable `{file}`: {}\n",
                error.replace('\n', " ")
            ));
        }
        md
    }
}

impl<W: Write> Printer for GithubPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        for rec in &unit.records {
            writeln!(self.out, "{}", command(rec))?;
        }
        super::append(&mut self.records, unit.records);
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        for (file, error) in &run.errors {
            writeln!(
                self.out,
                "::error file={},title={}::{}",
                escape_property(file),
                escape_property("rewind: unreadable input"),
                escape_data(error)
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
}
