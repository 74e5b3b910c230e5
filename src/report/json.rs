//! The JSON printer: one document with every finding (rule, severity, message, file, line,
//! column, byte span, ids) and a summary per file and session.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::{Located, Printer, Totals, locate, summarize};
use crate::diagnostic::{Finding, Label};
use crate::session::Analysis;
use crate::source::{SourceKind, SourceMap};

/// Version of the JSON output's shape.
pub const SCHEMA_VERSION: u32 = 1;

/// Builds JSON values for findings; shared by the JSON printers.
pub fn label_json(sources: &SourceMap, located: &Located, label: &Label) -> Value {
    let mut v = json!({
        "message": label.text,
        "span": { "offset": label.span.offset, "length": label.span.len },
    });
    if let Some(source) = sources.get(label.span.file) {
        v["file"] = json!(source.path.display().to_string());
        match &source.kind {
            // Rows rendered by rewind: no line numbers of a file that does not have them.
            SourceKind::Virtual { locator, .. } => v["locator"] = json!(locator),
            SourceKind::File => {
                if let Some(r) = located.get(&label.span) {
                    v["line"] = json!(r.start.line);
                    v["column"] = json!(r.start.column);
                    v["end_line"] = json!(r.end.line);
                    v["end_column"] = json!(r.end.column);
                }
            }
        }
    }
    v
}

/// One finding as JSON.
pub fn finding_json(sources: &SourceMap, located: &Located, f: &Finding) -> Value {
    let mut v = json!({
        "rule": f.rule,
        "severity": f.severity,
        "message": f.message,
    });
    if let Some(p) = &f.primary {
        let at = label_json(sources, located, p);
        for key in [
            "file",
            "locator",
            "line",
            "column",
            "end_line",
            "end_column",
            "span",
        ] {
            if let Some(x) = at.get(key) {
                v[key] = x.clone();
            }
        }
        v["label"] = json!(p.text);
    }
    if let Value::Object(ids) = serde_json::to_value(&f.ids).unwrap_or(Value::Null) {
        for (k, id) in ids {
            v[k] = id;
        }
    }
    v["related"] = Value::Array(
        f.related
            .iter()
            .map(|l| label_json(sources, located, l))
            .collect(),
    );
    v["notes"] = json!(f.notes);
    if let Some(h) = &f.help {
        v["help"] = json!(h);
    }
    v
}

#[derive(Serialize)]
struct FileEntry {
    path: String,
    format: crate::ingest::Format,
    counts: std::collections::BTreeMap<&'static str, u64>,
    sessions: Vec<super::SessionSummary>,
}

/// Collects everything and writes one JSON document at the end.
pub struct JsonPrinter<W: Write> {
    out: W,
    files: Vec<FileEntry>,
    findings: Vec<Value>,
    totals: Totals,
}

impl<W: Write> JsonPrinter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            files: Vec::new(),
            findings: Vec::new(),
            totals: Totals::default(),
        }
    }
}

impl<W: Write> Printer for JsonPrinter<W> {
    fn unit(
        &mut self,
        sources: &SourceMap,
        analysis: &Analysis,
        findings: &[Finding],
    ) -> io::Result<()> {
        let located = locate(sources, findings);
        self.findings
            .extend(findings.iter().map(|f| finding_json(sources, &located, f)));
        self.totals.add(findings);
        let path = sources
            .get(analysis.file)
            .map(|s| s.path.display().to_string())
            .unwrap_or_default();
        let sessions = summarize(analysis, findings);
        match self.files.iter_mut().find(|f| f.path == path) {
            Some(entry) => entry.sessions.extend(sessions),
            None => self.files.push(FileEntry {
                path,
                format: analysis.format,
                counts: analysis.counts.clone(),
                sessions,
            }),
        }
        Ok(())
    }

    fn finish(&mut self, _sources: &SourceMap) -> io::Result<()> {
        let doc = json!({
            "version": SCHEMA_VERSION,
            "tool": { "name": "rewind", "version": env!("CARGO_PKG_VERSION") },
            "files": self.files,
            "findings": self.findings,
            "summary": self.totals,
        });
        serde_json::to_writer_pretty(&mut self.out, &doc)?;
        writeln!(self.out)
    }
}
