//! The human printer: each finding as an annotated snippet (miette), then a summary table
//! (comfy-table) per session and a totals line.

use std::fmt;
use std::io::{self, Write};

use comfy_table::{Table, presets};
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceCode};

use super::snippet::{self, Snippet, SourceLabel, escape};
use super::{Located, Printer, SessionSummary, Totals, locate, summarize};
use crate::diagnostic::{Finding, Severity};
use crate::session::Analysis;
use crate::source::{FileId, SourceMap};

/// Prints findings for people.
pub struct HumanPrinter<W: Write> {
    out: W,
    color: bool,
    width: usize,
    /// Print the per-session table.
    table: bool,
    rows: Vec<(String, SessionSummary)>,
    files: Vec<(String, Totals, String)>,
    totals: Totals,
}

impl<W: Write> HumanPrinter<W> {
    pub fn new(out: W, color: bool) -> Self {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100usize)
            .clamp(60, 240);
        Self {
            out,
            color,
            width,
            table: true,
            rows: Vec::new(),
            files: Vec::new(),
            totals: Totals::default(),
        }
    }

    pub fn with_width(mut self, width: usize) -> Self {
        self.width = width;
        self
    }

    pub fn with_table(mut self, table: bool) -> Self {
        self.table = table;
        self
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn paint(&self, text: &str, code: &str) -> String {
        if self.color {
            format!("\u{1b}[{code}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }

    fn handler(&self) -> GraphicalReportHandler {
        let mut theme = if self.color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        theme.characters.error = String::new();
        theme.characters.warning = String::new();
        theme.characters.advice = String::new();
        GraphicalReportHandler::new_themed(theme)
            .with_width(self.width)
            .with_links(false)
            .with_context_lines(snippet::CONTEXT as usize)
            .without_syntax_highlighting()
    }

    /// Renders one finding to a string.
    pub fn render(&self, sources: &SourceMap, located: &Located, f: &Finding) -> String {
        let sev = match f.severity {
            Severity::Error => self.paint("error", "1;31"),
            Severity::Warning => self.paint("warning", "1;33"),
            Severity::Info => self.paint("info", "1;36"),
        };
        let headline = format!(
            "{sev}{}: {}",
            self.paint(&format!("[{}]", f.rule), "1"),
            escape(&f.message, false)
        );
        let mut groups: Vec<(FileId, Vec<SourceLabel>)> = Vec::new();
        for (label, primary) in f
            .primary
            .iter()
            .map(|l| (l, true))
            .chain(f.related.iter().map(|l| (l, false)))
        {
            let Some(resolved) = located.get(&label.span) else {
                continue;
            };
            let source_label = SourceLabel {
                start: label.span.offset,
                end: label.span.end(),
                text: label.text.clone(),
                primary,
                resolved,
            };
            match groups.iter_mut().find(|(file, _)| *file == label.span.file) {
                Some((_, labels)) => labels.push(source_label),
                None => groups.push((label.span.file, vec![source_label])),
            }
        }
        let mut rendered = Vec::new();
        for (i, (file, labels)) in groups.into_iter().enumerate() {
            let (Some(lines), Some(source)) = (located.lines(file), sources.get(file)) else {
                continue;
            };
            let (snippet, spans) = Snippet::build(source.display_name(), lines, &labels);
            rendered.push(Rendered {
                message: if i == 0 {
                    headline.clone()
                } else {
                    format!("related, in {}", escape(&source.display_name(), false))
                },
                severity: f.severity,
                labels: spans,
                snippet: Some(snippet),
            });
        }
        if rendered.is_empty() {
            rendered.push(Rendered {
                message: headline,
                severity: f.severity,
                labels: Vec::new(),
                snippet: None,
            });
        }
        let handler = self.handler();
        let mut out = String::new();
        for r in &rendered {
            let mut s = String::new();
            if handler.render_report(&mut s, r).is_err() {
                s = format!("  {}\n", r.message);
            }
            out.push_str(&s);
        }
        let pad = "  = ";
        for note in &f.notes {
            let mut lines = note.lines();
            if let Some(first) = lines.next() {
                out.push_str(&format!(
                    "{pad}{}: {}\n",
                    self.paint("note", "1"),
                    escape(first, false)
                ));
            }
            for rest in lines {
                out.push_str(&format!("          {}\n", escape(rest, false)));
            }
        }
        if let Some(help) = &f.help {
            out.push_str(&format!(
                "{pad}{}: {}\n",
                self.paint("help", "1;36"),
                escape(help, true)
            ));
        }
        out
    }

    fn table(&self) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t.set_header([
            "session",
            "messages",
            "steps (started/finished)",
            "tools by final status",
            "findings",
        ]);
        for (file, row) in &self.rows {
            let tools = if row.tools.is_empty() {
                "-".to_owned()
            } else {
                row.tools
                    .iter()
                    .map(|(s, n)| format!("{n} {s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let findings = Totals {
                errors: row.errors,
                warnings: row.warnings,
                infos: row.infos,
            }
            .words();
            let id = if self.files.len() > 1 {
                format!("{}\n{file}", row.id)
            } else {
                row.id.clone()
            };
            t.add_row([
                escape(&id, true),
                row.messages.to_string(),
                format!("{}/{}", row.steps_started, row.steps_finished),
                escape(&tools, false),
                findings,
            ]);
        }
        t.to_string()
    }
}

impl<W: Write> Printer for HumanPrinter<W> {
    fn unit(
        &mut self,
        sources: &SourceMap,
        analysis: &Analysis,
        findings: &[Finding],
    ) -> io::Result<()> {
        let located = locate(sources, findings);
        for f in findings {
            let text = self.render(sources, &located, f);
            writeln!(self.out, "{text}")?;
        }
        let file = sources
            .get(analysis.file)
            .map(|s| s.path.display().to_string())
            .unwrap_or_default();
        for row in summarize(analysis, findings) {
            self.rows.push((file.clone(), row));
        }
        let mut totals = Totals::default();
        totals.add(findings);
        self.totals.add(findings);
        let objects = analysis
            .counts
            .get("json objects")
            .map(|n| {
                let bad = analysis
                    .counts
                    .get("undecodable objects")
                    .copied()
                    .unwrap_or(0);
                format!("{n} JSON objects, {bad} undecodable")
            })
            .unwrap_or_default();
        match self.files.iter_mut().find(|(f, _, _)| *f == file) {
            Some((_, t, _)) => {
                t.errors += totals.errors;
                t.warnings += totals.warnings;
                t.infos += totals.infos;
            }
            None => self.files.push((file, totals, objects)),
        }
        Ok(())
    }

    fn finish(&mut self, _sources: &SourceMap) -> io::Result<()> {
        if self.table && !self.rows.is_empty() {
            writeln!(self.out, "{}", self.table())?;
        }
        for (file, totals, objects) in &self.files {
            let detail = if objects.is_empty() {
                String::new()
            } else {
                format!(" ({objects})")
            };
            writeln!(
                self.out,
                "{}: {}{detail}",
                escape(file, false),
                totals.words()
            )?;
        }
        if self.files.len() > 1 {
            writeln!(self.out, "total: {}", self.totals.words())?;
        }
        Ok(())
    }
}

/// One block miette renders.
#[derive(Debug)]
struct Rendered {
    message: String,
    severity: Severity,
    labels: Vec<LabeledSpan>,
    snippet: Option<Snippet>,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered {}

impl Diagnostic for Rendered {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.snippet.as_ref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }
}
