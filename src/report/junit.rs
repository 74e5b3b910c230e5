//! JUnit XML: one test case per recording. A recording with findings at or above `--fail-on`
//! fails (the failure lists them); one rewind could not read is an error.

use std::io::{self, Write};

use super::record::FindingRecord;
use super::{Printer, RunSummary, Totals, UnitOutput};

/// Escapes text for XML 1.0: markup as entities, the other characters [`crate::text::is_dangerous`]
/// names as character references (`&#x202E;`), so that a report shown raw carries none of them;
/// the C0 controls XML cannot carry even as references are dropped.
pub fn xml_escape(s: &str) -> String {
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

struct Case {
    file: String,
    format: crate::core::Format,
    records: Vec<FindingRecord>,
}

pub struct JunitPrinter<W: Write> {
    out: W,
    cases: Vec<Case>,
    /// Each file's place in `cases` (a run may check many).
    case_index: crate::FastMap<String, usize>,
}

impl<W: Write> JunitPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            cases: Vec::new(),
            case_index: crate::FastMap::default(),
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
            Some(c) => c.records.extend(unit.records),
            None => {
                self.case_index.insert(unit.file.clone(), self.cases.len());
                self.cases.push(Case {
                    file: unit.file,
                    format: unit.format,
                    records: unit.records,
                });
            }
        }
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        let fail_on = run
            .fail_on
            .unwrap_or(crate::checks::diagnostic::Severity::Error);
        let failures = self
            .cases
            .iter()
            .filter(|c| Totals::of(&c.records).fails(fail_on))
            .count();
        let tests = self.cases.len() + run.errors.len();
        let errors = run.errors.len();
        let mut x = suite_head(tests, failures, errors);
        if let Some(ledger) = &run.shard {
            let lines = self
                .cases
                .iter()
                .flat_map(|c| {
                    c.records.iter().map(|r| super::ledger::Line {
                        severity: r.severity,
                        fingerprint: r.fingerprint.clone(),
                        bytes: xml_escape(&failure_line(&c.file, r)).len(),
                    })
                })
                .collect();
            let ledger = super::ledger::Ledger {
                format: "junit".to_owned(),
                lines,
                ..ledger.clone()
            };
            x.push_str(&properties(&ledger)?);
        }
        for c in &self.cases {
            let totals = Totals::of(&c.records);
            x.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"rewind.{}\">\n",
                xml_escape(&c.file),
                serde_json::to_value(c.format)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ));
            if totals.fails(fail_on) {
                let body: String = c
                    .records
                    .iter()
                    .map(|r| xml_escape(&failure_line(&c.file, r)))
                    .collect();
                x.push_str(&failure(&totals, &body));
            } else if totals.total() > 0 {
                x.push_str(&system_out(&totals));
            }
            x.push_str("    </testcase>\n");
        }
        for (file, error) in &run.errors {
            x.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"rewind.unreadable\">\n      <error message=\"{}\" type=\"rewind\"/>\n    </testcase>\n",
                xml_escape(file),
                xml_escape(error)
            ));
        }
        x.push_str(SUITE_TAIL);
        self.out.write_all(x.as_bytes())?;
        self.out.flush()
    }
}

/// One finding's line in a failure's text, before escaping.
fn failure_line(file: &str, r: &FindingRecord) -> String {
    let at = match (r.line, r.column, &r.locator) {
        (Some(l), Some(col), _) => format!("{file}:{l}:{col}"),
        (_, _, Some(loc)) => format!("{file} › {loc}"),
        _ => file.to_owned(),
    };
    format!("{} [{}] {at}: {}\n", r.severity, r.rule, r.message)
}

/// A test case's failure: `body` is its findings' lines, escaped.
pub(crate) fn failure(totals: &Totals, body: &str) -> String {
    format!(
        "      <failure message=\"{}\" type=\"rewind\">{body}</failure>\n",
        xml_escape(&totals.words()),
    )
}

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
