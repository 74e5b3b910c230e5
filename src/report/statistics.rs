//! `--statistics`: how many findings each rule made, commonest first, instead of the findings.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::{Printer, RunSummary, UnitOutput};
use crate::checks::diagnostic::Severity;

pub struct StatisticsPrinter<W: Write> {
    out: W,
    json: bool,
    counts: BTreeMap<(&'static str, Severity), usize>,
}

#[derive(serde::Serialize)]
struct Row {
    rule: &'static str,
    count: usize,
    severity: Severity,
}

impl<W: Write> StatisticsPrinter<W> {
    /// Rows as a table, or as one JSON document (`json`).
    pub fn new(out: W, json: bool) -> Self {
        Self {
            out,
            json,
            counts: BTreeMap::new(),
        }
    }

    /// Rule, count and severity, by count (most first), then severity (worst first), then rule.
    fn rows(&self) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .counts
            .iter()
            .map(|(&(rule, severity), &count)| Row {
                rule,
                count,
                severity,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then(b.severity.cmp(&a.severity))
                .then(a.rule.cmp(b.rule))
        });
        rows
    }
}

impl<W: Write> Printer for StatisticsPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        for rec in &unit.records {
            *self
                .counts
                .entry((rec.rule.as_str(), rec.severity))
                .or_default() += 1;
        }
        Ok(())
    }

    fn finish(&mut self, _run: &RunSummary) -> io::Result<()> {
        let rows = self.rows();
        if self.json {
            serde_json::to_writer_pretty(
                &mut self.out,
                &serde_json::json!({"version": 1, "statistics": rows}),
            )?;
            writeln!(self.out)?;
        } else {
            let width = rows.iter().map(|r| r.rule.len()).max().unwrap_or(0);
            for row in &rows {
                writeln!(
                    self.out,
                    "{:>6}  {:<width$}  {}",
                    row.count, row.rule, row.severity
                )?;
            }
        }
        self.out.flush()
    }
}
