//! JSON Lines: one finding per line as soon as its file is done, then one summary line
//! (`{"summary": {…}}`), so a consumer can stream.

use std::io::{self, Write};

use serde_json::json;

use super::{Printer, RunSummary, Totals, UnitOutput};

/// The last line of a report (before a shard's ledger).
pub(crate) fn summary(
    totals: &Totals,
    files: usize,
    skipped: usize,
    unreadable: usize,
) -> serde_json::Value {
    json!({"summary": {
        "errors": totals.errors,
        "warnings": totals.warnings,
        "infos": totals.infos,
        "files": files,
        "skipped": skipped,
        "unreadable": unreadable,
    }})
}

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
        let summary = summary(
            &self.totals,
            run.files_checked,
            run.files_skipped.len(),
            run.errors.len(),
        );
        super::safe_json::to_writer(&mut self.out, &summary)?;
        writeln!(self.out)?;
        if let Some(ledger) = &run.shard {
            let ledger = super::ledger::Ledger {
                format: "jsonl".to_owned(),
                ..ledger.clone()
            };
            super::safe_json::to_writer(&mut self.out, &json!({ "shard": ledger }))?;
            writeln!(self.out)?;
        }
        self.out.flush()
    }
}
