//! The JSON printer: one document with every finding (rule, severity, message, file, line,
//! column, byte span, ids, fingerprint) and a summary per file and session.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::json;

use super::record::FindingRecord;
use super::spool::Spool;
use super::{Printer, RunSummary, SessionSummary, Totals, UnitOutput};
use crate::report::input_text::InputText;

/// Version of the JSON output's shape.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct FileEntry {
    path: InputText,
    format: crate::core::Format,
    counts: std::collections::BTreeMap<&'static str, u64>,
    /// Records of types rewind reads but does not model, by type as written.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    unmodelled_records: std::collections::BTreeMap<String, u64>,
    sessions: Vec<SessionSummary>,
}

/// Writes one JSON document at the end: the findings are written as they come, each into a
/// [`Spool`], and copied into their place after the files' summary (which needs every unit).
pub struct JsonPrinter<W: Write> {
    out: W,
    files: Vec<FileEntry>,
    /// Each file's place in `files` (a run may check many).
    file_index: crate::FastMap<InputText, usize>,
    /// The members of the `findings` array, each written as it is in the document.
    findings: Spool,
    /// How many findings `findings` holds.
    written: usize,
    totals: Totals,
}

impl<W: Write> JsonPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            files: Vec::new(),
            file_index: crate::FastMap::default(),
            findings: Spool::new(),
            written: 0,
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
        let mut one = Vec::new();
        for rec in &unit.records {
            one.clear();
            super::safe_json::to_writer_pretty(&mut one, rec)?;
            // As a member of the document's `findings`, two levels in: strings hold no raw
            // newline, so every newline is one of the layout's.
            let sep: &[u8] = if self.written == 0 { b"\n" } else { b",\n" };
            self.findings.write_all(sep)?;
            for (k, line) in one.split(|&b| b == b'\n').enumerate() {
                if k > 0 {
                    self.findings.write_all(b"\n")?;
                }
                self.findings.write_all(MEMBER_INDENT)?;
                self.findings.write_all(line)?;
            }
            self.written += 1;
        }
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        let errors: Vec<_> = run
            .errors
            .iter()
            .map(|(file, error)| json!({"file": file, "error": error}))
            .collect();
        // Everything but the findings, then the findings copied into their place: the document
        // serde_json writes with no finding has them as `[]`.
        let doc = Document {
            version: SCHEMA_VERSION,
            tool: Tool {
                name: "rewind",
                version: env!("CARGO_PKG_VERSION"),
            },
            files: &self.files,
            findings: &[],
            errors,
            summary: &self.totals,
            shard: run.shard.as_ref().map(|l| super::ledger::Ledger {
                format: "json".to_owned(),
                ..l.clone()
            }),
        };
        let mut rest = Vec::new();
        super::safe_json::to_writer_pretty(&mut rest, &doc)?;
        let at = memchr::memmem::find(&rest, FINDINGS)
            .map(|i| i + FINDINGS.len() - 1)
            .ok_or_else(|| io::Error::other("the JSON document has no findings member"))?;
        self.out.write_all(&rest[..at])?;
        if !self.findings.is_empty() {
            self.findings.copy_to(&mut self.out)?;
            self.out.write_all(b"\n  ")?;
        }
        self.out.write_all(&rest[at..])?;
        writeln!(self.out)?;
        self.out.flush()
    }
}

/// Where the findings go in the document written without them (the key's quotes are never
/// raw inside a string, and only the document's own members start a line two spaces in).
const FINDINGS: &[u8] = b"\n  \"findings\": []";

/// A finding's indentation as a member of `findings`.
const MEMBER_INDENT: &[u8] = b"    ";

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
