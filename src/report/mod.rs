//! Stage 5 of the pipeline: printers.
//!
//! A printer receives each unit (an [`Analysis`] and its findings) as soon as it is diagnosed and
//! writes it out; `finish` writes what needs the whole run (the summary table, the JSON document).
//! Printers read the sources lazily — only the lines a finding shows (see [`snippet`]).

pub mod human;
pub mod json;
pub mod snippet;

use std::collections::{BTreeMap, HashMap};
use std::io;

use crate::diagnostic::{Finding, Severity};
use crate::model::PartBody;
use crate::session::Analysis;
use crate::source::{FileId, SourceKind, SourceMap, Span};
use snippet::{Lines, Resolved};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Annotated snippets and a summary table.
    Human,
    /// One JSON document.
    Json,
}

/// Whether to colour the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Resolves `auto` for standard output.
    pub fn enabled(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        }
    }
}

/// A printer of diagnoses.
pub trait Printer {
    /// Writes one diagnosed unit.
    fn unit(
        &mut self,
        sources: &SourceMap,
        analysis: &Analysis,
        findings: &[Finding],
    ) -> io::Result<()>;
    /// Writes what needs the whole run.
    fn finish(&mut self, sources: &SourceMap) -> io::Result<()>;
}

/// Per-session figures for the summary table and JSON output.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub messages: usize,
    pub steps_started: usize,
    pub steps_finished: usize,
    /// Tool parts by final status.
    pub tools: BTreeMap<String, usize>,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

/// Figures of each session of `analysis`.
pub fn summarize(analysis: &Analysis, findings: &[Finding]) -> Vec<SessionSummary> {
    analysis
        .sessions
        .iter()
        .map(|s| {
            let mut sum = SessionSummary {
                id: s.id.clone(),
                messages: s.messages.len(),
                ..SessionSummary::default()
            };
            for m in &s.messages {
                for p in &m.parts {
                    match &p.part.body {
                        PartBody::StepStart(_) => sum.steps_started += 1,
                        PartBody::StepFinish(_) => sum.steps_finished += 1,
                        PartBody::Tool(t) => {
                            *sum.tools.entry(t.state.status().to_owned()).or_default() += 1;
                        }
                        _ => {}
                    }
                }
            }
            for f in findings
                .iter()
                .filter(|f| f.ids.session_id.as_deref() == Some(&s.id))
            {
                match f.severity {
                    Severity::Error => sum.errors += 1,
                    Severity::Warning => sum.warnings += 1,
                    Severity::Info => sum.infos += 1,
                }
            }
            sum
        })
        .collect()
}

/// Counts of findings by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

impl Totals {
    pub fn add(&mut self, findings: &[Finding]) {
        for f in findings {
            match f.severity {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info => self.infos += 1,
            }
        }
    }

    /// "2 errors, 1 warning" (or "no findings").
    pub fn words(&self) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if self.errors > 0 {
            parts.push(plural(self.errors, "error"));
        }
        if self.warnings > 0 {
            parts.push(plural(self.warnings, "warning"));
        }
        if self.infos > 0 {
            parts.push(plural(self.infos, "info"));
        }
        if parts.is_empty() {
            "no findings".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Line/column positions of every span the findings mention, read with one pass per source.
#[derive(Debug, Default)]
pub struct Located {
    resolved: HashMap<Span, Resolved>,
    lines: HashMap<FileId, Lines>,
}

impl Located {
    pub fn get(&self, span: &Span) -> Option<Resolved> {
        self.resolved.get(span).copied()
    }

    pub fn lines(&self, file: FileId) -> Option<&Lines> {
        self.lines.get(&file)
    }
}

/// Resolves the spans of `findings`. A source that cannot be read any more simply resolves
/// nothing: the findings are still printed, without snippets.
pub fn locate(sources: &SourceMap, findings: &[Finding]) -> Located {
    let spans = findings
        .iter()
        .flat_map(|f| f.primary.iter().chain(f.related.iter()))
        .map(|l| l.span);
    locate_spans(sources, spans)
}

/// Resolves arbitrary spans (one pass per source), e.g. for a replay's timeline.
pub fn locate_spans(sources: &SourceMap, spans: impl Iterator<Item = Span>) -> Located {
    let mut by_file: BTreeMap<FileId, Vec<Span>> = BTreeMap::new();
    for span in spans {
        by_file.entry(span.file).or_default().push(span);
    }
    let mut out = Located::default();
    for (file, mut spans) in by_file {
        spans.sort_unstable();
        spans.dedup();
        let ranges: Vec<(u64, u64)> = spans.iter().map(|s| (s.offset, s.end())).collect();
        let Some(source) = sources.get(file) else {
            continue;
        };
        let scanned = match &source.kind {
            SourceKind::File => crate::ingest::open(&source.path)
                .ok()
                .and_then(|r| snippet::scan(r, &ranges).ok()),
            SourceKind::Virtual { text, .. } => snippet::scan(text.as_bytes(), &ranges).ok(),
        };
        let Some(lines) = scanned else {
            continue;
        };
        for (i, span) in spans.iter().enumerate() {
            if let Some(r) = lines.get(i) {
                out.resolved.insert(*span, r);
            }
        }
        out.lines.insert(file, lines);
    }
    out
}
