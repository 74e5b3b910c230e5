//! The JSON printer: one document with every finding (rule, severity, message, file, line,
//! column, byte span, ids, fingerprint) and a summary per file and session.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::json;

use super::record::FindingRecord;
use super::{Printer, RunSummary, SessionSummary, Totals, UnitOutput};

/// Version of the JSON output's shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct FileEntry {
    path: String,
    format: crate::core::Format,
    counts: std::collections::BTreeMap<&'static str, u64>,
    /// Records of types rewind reads but does not model, by type as written.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    unmodelled_records: std::collections::BTreeMap<String, u64>,
    sessions: Vec<SessionSummary>,
}

/// Collects everything and writes one JSON document at the end.
pub struct JsonPrinter<W: Write> {
    out: W,
    files: Vec<FileEntry>,
    /// Each file's place in `files` (a run may check many).
    file_index: crate::FastMap<String, usize>,
    findings: Vec<FindingRecord>,
    totals: Totals,
}

impl<W: Write> JsonPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            files: Vec::new(),
            file_index: crate::FastMap::default(),
            findings: Vec::new(),
            totals: Totals::default(),
        }
    }
}

impl<W: Write> Printer for JsonPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        self.totals.merge(Totals::of(&unit.records));
        match self
            .file_index
            .get(&unit.file)
            .and_then(|&k| self.files.get_mut(k))
        {
            // A file diagnosed in several units (a database's sessions, an agent log's embedded
            // streams): its counts are the sum of its units'.
            Some(entry) => {
                entry.sessions.extend(unit.sessions.iter().cloned());
                for (&key, &n) in &unit.counts {
                    *entry.counts.entry(key).or_default() += n;
                }
                for (key, &n) in &unit.unmodelled {
                    *entry.unmodelled_records.entry(key.clone()).or_default() += n;
                }
            }
            None => {
                self.file_index.insert(unit.file.clone(), self.files.len());
                self.files.push(FileEntry {
                    path: unit.file.clone(),
                    format: unit.format,
                    counts: unit.counts.clone(),
                    unmodelled_records: unit.unmodelled.clone(),
                    sessions: unit.sessions.clone(),
                });
            }
        }
        super::append(&mut self.findings, unit.records);
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        let errors: Vec<_> = run
            .errors
            .iter()
            .map(|(file, error)| json!({"file": file, "error": error}))
            .collect();
        // Written from the records themselves: a `Value` of the whole document would hold a
        // second copy of every finding (for a log with 100,000 findings, 355 MB of 464).
        let doc = Document {
            version: SCHEMA_VERSION,
            tool: Tool {
                name: "rewind",
                version: env!("CARGO_PKG_VERSION"),
            },
            files: &self.files,
            findings: &self.findings,
            errors,
            summary: &self.totals,
            shard: run.shard.as_ref().map(|l| super::ledger::Ledger {
                format: "json".to_owned(),
                ..l.clone()
            }),
        };
        super::safe_json::to_writer_pretty(&mut self.out, &doc)?;
        writeln!(self.out)?;
        self.out.flush()
    }
}

/// The JSON document, in the order its members are written.
#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    tool: Tool,
    files: &'a [FileEntry],
    findings: &'a [FindingRecord],
    errors: Vec<serde_json::Value>,
    summary: &'a Totals,
    /// `check --shard`'s ledger, for `rewind merge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<super::ledger::Ledger>,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}
