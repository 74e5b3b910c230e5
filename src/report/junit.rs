//! JUnit XML: one test case per recording. A recording with findings at or above `--fail-on`
//! fails (the failure lists them); one rewind could not read is an error.

use std::io::{self, Write};

use super::record::FindingRecord;
use super::spool::Spool;
use super::{Printer, RunSummary, Totals, UnitOutput};
use crate::report::input_text::InputText;

/// Escapes text for XML 1.0: markup as entities, the other characters [`crate::text::is_dangerous`]
/// names as character references (`&#x202E;`), so that a report shown raw carries none of them;
/// the C0 controls XML cannot carry even as references are dropped.
pub(in crate::report) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c, '\u{fffe}' | '\u{ffff}') => {}
            c if crate::text::is_dangerous(c) => out.push_str(&format!("&#x{:X};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A recording's test case: its totals, and where its findings' lines are in the printer's
/// spool (a range for each of its units).
struct Case {
    file: InputText,
    format: crate::core::Format,
    totals: Totals,
    body: Vec<(u64, u64)>,
    /// For a shard's ledger (when one is kept): each finding's severity, fingerprint and line
    /// length, taken as its line is written.
    lines: Vec<super::ledger::Line>,
}

impl Case {
    /// Counts `records` and writes their lines (escaped) into `spool`; with `ledger`, keeps
    /// what the shard's ledger says of each.
    fn add(
        &mut self,
        records: &[FindingRecord],
        spool: &mut Spool,
        ledger: bool,
    ) -> io::Result<()> {
        self.totals.merge(Totals::of(records));
        let start = spool.len();
        let file = self.file.for_xml();
        for r in records {
            let line = failure_line(&file, r);
            spool.write_all(line.as_bytes())?;
            if ledger {
                self.lines.push(super::ledger::Line {
                    severity: r.severity,
                    fingerprint: r.fingerprint.clone(),
                    bytes: line.len(),
                });
            }
        }
        if spool.len() > start {
            self.body.push((start, spool.len() - start));
        }
        Ok(())
    }
}

pub struct JunitPrinter<W: Write> {
    out: W,
    cases: Vec<Case>,
    /// Every case's findings' lines, as they came.
    spool: Spool,
    /// Each file's place in `cases` (a run may check many).
    case_index: crate::FastMap<InputText, usize>,
    /// Whether the run is a shard's, whose report carries a ledger (see [`Printer::for_shard`]).
    ledger: bool,
}

impl<W: Write> JunitPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            cases: Vec::new(),
            spool: Spool::new(),
            case_index: crate::FastMap::default(),
            ledger: false,
        }
    }
}

impl<W: Write> Printer for JunitPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        match self
            .case_index
            .get(&unit.file)
            .and_then(|&k| self.cases.get_mut(k))
        {
            Some(c) => c.add(&unit.records, &mut self.spool, self.ledger)?,
            None => {
                self.case_index.insert(unit.file.clone(), self.cases.len());
                let mut case = Case {
                    file: unit.file,
                    format: unit.format,
                    totals: Totals::default(),
                    body: Vec::new(),
                    lines: Vec::new(),
                };
                case.add(&unit.records, &mut self.spool, self.ledger)?;
                self.cases.push(case);
            }
        }
        Ok(())
    }

    fn for_shard(&mut self) {
        self.ledger = true;
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        let fail_on = run
            .fail_on
            .unwrap_or(crate::checks::diagnostic::Severity::Error);
        let failures = self
            .cases
            .iter()
            .filter(|c| c.totals.fails(fail_on))
            .count();
        let tests = self.cases.len() + run.errors.len();
        let errors = run.errors.len();
        // The cases are written one at a time, each finding's line copied from the spool.
        let x = &mut self.out;
        x.write_all(suite_head(tests, failures, errors).as_bytes())?;
        if let Some(ledger) = &run.shard {
            if !self.ledger {
                return Err(io::Error::other(
                    "a shard's JUnit report needs its findings' lines, which were not kept",
                ));
            }
            let ledger = super::ledger::Ledger {
                format: "junit".to_owned(),
                lines: self
                    .cases
                    .iter()
                    .flat_map(|c| c.lines.iter().cloned())
                    .collect(),
                ..ledger.clone()
            };
            x.write_all(properties(&ledger)?.as_bytes())?;
        }
        for c in &self.cases {
            let totals = c.totals;
            writeln!(
                x,
                "    <testcase name=\"{}\" classname=\"rewind.{}\">",
                c.file.for_xml(),
                serde_json::to_value(c.format)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )?;
            if totals.fails(fail_on) {
                x.write_all(failure_open(&totals).as_bytes())?;
                for &(start, len) in &c.body {
                    self.spool.copy_range(start, len, x)?;
                }
                x.write_all(FAILURE_CLOSE.as_bytes())?;
            } else if totals.total() > 0 {
                x.write_all(system_out(&totals).as_bytes())?;
            }
            x.write_all(b"    </testcase>\n")?;
        }
        for (file, error) in &run.errors {
            write!(
                x,
                "    <testcase name=\"{}\" classname=\"rewind.unreadable\">\n      <error message=\"{}\" type=\"rewind\"/>\n    </testcase>\n",
                file.for_xml(),
                error.for_xml(),
            )?;
        }
        x.write_all(SUITE_TAIL.as_bytes())?;
        self.out.flush()
    }
}

/// One finding's line in a failure's text, escaped; `file` is the test case's file, escaped.
fn failure_line(file: &str, r: &FindingRecord) -> String {
    let at = match (r.line, r.column, &r.locator) {
        (Some(l), Some(col), _) => format!("{file}:{l}:{col}"),
        (_, _, Some(loc)) => format!("{file} › {}", loc.for_xml()),
        _ => file.to_owned(),
    };
    format!(
        "{} [{}] {at}: {}\n",
        r.severity,
        r.rule,
        r.message.for_xml()
    )
}

/// A test case's failure: `body` is its findings' lines, escaped.
pub(crate) fn failure(totals: &Totals, body: &str) -> String {
    format!("{}{body}{FAILURE_CLOSE}", failure_open(totals))
}

/// A failure's opening tag, which says its totals.
fn failure_open(totals: &Totals) -> String {
    format!(
        "      <failure message=\"{}\" type=\"rewind\">",
        xml_escape(&totals.words()),
    )
}

/// A failure's closing tag.
const FAILURE_CLOSE: &str = "</failure>\n";

/// What a test case with findings below `--fail-on` says.
pub(crate) fn system_out(totals: &Totals) -> String {
    format!(
        "      <system-out>{}</system-out>\n",
        xml_escape(&totals.words())
    )
}

/// The opening line of the document's two elements, with their counts.
pub(crate) fn suite_head(tests: usize, failures: usize, errors: usize) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rewind\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n  <testsuite name=\"rewind\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\">\n"
    )
}

/// The document's last lines.
pub(crate) const SUITE_TAIL: &str = "  </testsuite>\n</testsuites>\n";

/// The test suite's `<properties>` element that carries a shard's ledger.
pub(crate) const LEDGER_PROPERTY: &str = "rewind.shard";

fn properties(ledger: &super::ledger::Ledger) -> io::Result<String> {
    let mut json = Vec::new();
    super::safe_json::to_writer(&mut json, ledger)?;
    let json = String::from_utf8(json).map_err(io::Error::other)?;
    Ok(format!(
        "    <properties>\n      <property name=\"{LEDGER_PROPERTY}\" value=\"{}\"/>\n    </properties>\n",
        xml_escape(&json)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_bidi_controls_separators_and_c1_as_references() {
        assert_eq!(
            xml_escape("a\u{202e}b\u{2028}\u{85}\u{9b}\u{7f}\u{200e}\u{2066}é"),
            "a&#x202E;b&#x2028;&#x85;&#x9B;&#x7F;&#x200E;&#x2066;é"
        );
    }

    #[test]
    fn escapes_markup_and_drops_controls() {
        assert_eq!(
            xml_escape("a<b>&\"c'\u{1b}d\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;d\n"
        );
    }
}
