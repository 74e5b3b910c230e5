//! JSON Lines: one finding per line as soon as its file is done, then one summary line
//! (`{"summary": {…}}`), so a consumer can stream.

use std::io::{self, Write};

use serde_json::json;

use super::{Printer, RunSummary, Totals, UnitOutput};

pub struct JsonlPrinter<W: Write> {
    out: W,
    totals: Totals,
    files: usize,
}

impl<W: Write> JsonlPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            totals: Totals::default(),
            files: 0,
        }
    }
}

impl<W: Write> Printer for JsonlPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        self.files += 1;
        for rec in &unit.records {
            super::safe_json::to_writer(&mut self.out, rec)?;
            writeln!(self.out)?;
        }
        self.totals.merge(Totals::of(&unit.records));
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        for (file, error) in &run.errors {
            super::safe_json::to_writer(&mut self.out, &json!({"error": error, "file": file}))?;
            writeln!(self.out)?;
        }
        let summary = json!({"summary": {
            "errors": self.totals.errors,
            "warnings": self.totals.warnings,
            "infos": self.totals.infos,
            "files": run.files_checked,
            "skipped": run.files_skipped.len(),
            "unreadable": run.errors.len(),
        }});
        super::safe_json::to_writer(&mut self.out, &summary)?;
        writeln!(self.out)?;
        self.out.flush()
    }
}
