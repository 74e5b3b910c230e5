//! One line per finding, `path:line:col: severity[rule] message`, for terminals, editors and
//! `grep`; then a totals line (left out with `--quiet`).

use std::io::{self, Write};

use super::{Printer, RunSummary, Totals, UnitOutput};
use crate::report::input_text::InputText;
use crate::report::record::FindingRecord;

pub struct ConcisePrinter<W: Write> {
    out: W,
    quiet: bool,
    totals: Totals,
}

impl<W: Write> ConcisePrinter<W> {
    pub fn new(out: W, quiet: bool) -> Self {
        Self {
            out,
            quiet,
            totals: Totals::default(),
        }
    }
}

/// A finding's line: where (file, then line and column, or the row's locator), what.
pub fn line(file: &InputText, rec: &FindingRecord) -> String {
    let file = match &rec.file {
        Some(f) => f.for_terminal(),
        None => file.for_terminal(),
    };
    let place = match (rec.line, rec.column, &rec.locator) {
        (Some(line), Some(column), _) => format!("{file}:{line}:{column}"),
        (Some(line), None, _) => format!("{file}:{line}"),
        (None, _, Some(locator)) => format!("{file}:{}", locator.for_terminal()),
        (None, _, None) => file,
    };
    format!(
        "{place}: {}[{}] {}",
        rec.severity,
        rec.rule.as_str(),
        rec.message.for_terminal()
    )
}

impl<W: Write> Printer for ConcisePrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        for rec in &unit.records {
            writeln!(self.out, "{}", line(&unit.file, rec))?;
        }
        self.totals.merge(Totals::of(&unit.records));
        Ok(())
    }

    fn finish(&mut self, _run: &RunSummary) -> io::Result<()> {
        if !self.quiet {
            writeln!(self.out, "{}", self.totals.words())?;
        }
        self.out.flush()
    }
}
