//! The human printer: each finding as an annotated snippet (miette), then a summary — a table per
//! session for `diagnose`, findings by rule for `check` — and a totals line.

use std::fmt;
use std::io::{self, Write};

use comfy_table::{Table, presets};
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, SourceCode};

use super::snippet::{self, Snippet, SourceLabel};
use super::{Located, Printer, RunSummary, SessionSummary, Totals, UnitOutput, by_rule};
use crate::checks::diagnostic::{Finding, Severity};
use crate::report::input_text::InputText;
use crate::source::{FileId, SourceMap};

/// Renders findings as text.
#[derive(Clone, Debug)]
pub struct Renderer {
    pub color: bool,
    pub width: usize,
    /// Render each unit as a section of the HTML page instead (see [`super::html`]).
    pub html: bool,
}

impl Renderer {
    /// A renderer as wide as the terminal (see [`super::layout::width`]).
    pub fn new(color: bool) -> Self {
        Self {
            color,
            width: super::layout::width(),
            html: false,
        }
    }

    /// What `prepare` must render for `format`: text for `human`, a page section for `html`,
    /// nothing for the machine formats.
    pub fn for_format(format: super::OutputFormat, color: bool) -> Option<Self> {
        match format {
            super::OutputFormat::Human => Some(Self::new(color)),
            super::OutputFormat::Html => Some(Self {
                html: true,
                ..Self::new(false)
            }),
            _ => None,
        }
    }

    fn paint(&self, text: &str, code: &str) -> String {
        paint(self.color, text, code)
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

    /// Renders one finding.
    pub fn render(&self, sources: &SourceMap, located: &Located, f: &Finding) -> String {
        let sev = match f.severity {
            Severity::Error => self.paint("error", "1;31"),
            Severity::Warning => self.paint("warning", "1;33"),
            Severity::Info => self.paint("info", "1;36"),
        };
        let headline = format!(
            "{sev}{}: {}",
            self.paint(&format!("[{}]", f.rule), "1"),
            f.message.for_terminal()
        );
        let mut groups: Vec<(FileId, Vec<SourceLabel>)> = Vec::new();
        for (label, primary) in f
            .primary
            .iter()
            .map(|l| (l, true))
            .chain(f.related.iter().take(MAX_RELATED_SHOWN).map(|l| (l, false)))
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
            // Quoted lines are cut to what fits beside the gutter (a line number, bars).
            let shown = self.width.saturating_sub(GUTTER);
            let (snippet, spans) =
                Snippet::build_within(source.display_name(), lines, &labels, shown);
            rendered.push(Rendered {
                message: if i == 0 {
                    headline.clone()
                } else {
                    format!(
                        "related, in {}",
                        InputText::new(source.display_name()).for_terminal()
                    )
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
            out.push_str(&super::layout::wrap_labels(&s, self.width));
        }
        // Notes and help are wrapped to the width, their lines after the first under the text.
        let pad = "  = ";
        let under = "          ";
        let note = format!("{pad}{}: ", self.paint("note", "1"));
        if let Some(more) = f
            .related
            .len()
            .checked_sub(MAX_RELATED_SHOWN)
            .filter(|&n| n > 0)
        {
            out.push_str(&super::layout::wrap(
                &format!(
                    "and {more} more related places, not shown here (`--format json` lists every one)"
                ),
                self.width,
                &note,
                under,
            ));
        }
        for text in &f.notes {
            let text = text.for_terminal_lines();
            let mut lines = text.lines();
            if let Some(first) = lines.next() {
                out.push_str(&super::layout::wrap(first, self.width, &note, under));
            }
            // A note's own lines keep their indentation; what wraps goes two columns further.
            for rest in lines {
                let body = rest.trim_start();
                let indent = format!("{under}{}", &rest[..rest.len() - body.len()]);
                out.push_str(&super::layout::wrap(
                    body,
                    self.width,
                    &indent,
                    &format!("{indent}  "),
                ));
            }
        }
        if let Some(help) = &f.help {
            let help = help.for_terminal_lines();
            let mut lines = help.lines();
            let first = format!("{pad}{}: ", self.paint("help", "1;36"));
            if let Some(line) = lines.next() {
                out.push_str(&super::layout::wrap(line, self.width, &first, under));
            }
            for line in lines {
                out.push_str(&super::layout::wrap(line, self.width, under, under));
            }
        }
        out
    }
}

/// Columns a snippet's gutter takes before a quoted line (`  1234 │ `, the bars of labels that
/// span lines, the `…` of a cut line).
const GUTTER: usize = 14;

impl Renderer {
    /// The note under the last shown finding of a group of alike ones: how many more there are,
    /// wrapped to the width like the other notes.
    pub fn more_line(&self, rule: crate::checks::Rule, more: usize) -> String {
        super::layout::wrap(
            &format!(
                "{} ([{rule}], the same message but for ids and numbers), not shown here (`--format json` lists every one)",
                super::group::more_words(more),
            ),
            self.width,
            &format!("  = {}: ", self.paint("note", "1")),
            "          ",
        )
    }
}

/// Related places shown under one finding. Each label under a line repeats the line's width, so
/// thousands on one line (a payload with an issue per item of a long array) would print their
/// square; the rest are counted in a note.
const MAX_RELATED_SHOWN: usize = 16;

fn paint(color: bool, text: &str, code: &str) -> String {
    if color {
        format!("\u{1b}[{code}m{text}\u{1b}[0m")
    } else {
        text.to_owned()
    }
}

/// Which summary closes the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Summary {
    /// A table per session (`diagnose`).
    Sessions,
    /// Findings by rule (`check`).
    Rules,
    /// Only the totals line of each file (`replay`).
    Totals,
    None,
}

/// Prints prepared units for people.
pub struct HumanPrinter<W: Write> {
    out: W,
    color: bool,
    summary: Summary,
    rows: Vec<(InputText, SessionSummary)>,
    /// Per file: totals, the objects line, and whether it held no session at all.
    files: Vec<(InputText, Totals, String, bool)>,
    /// Each file's place in `files` (a run may check many).
    file_index: crate::FastMap<InputText, usize>,
    rules: std::collections::BTreeMap<&'static str, Totals>,
    totals: Totals,
    sessions: usize,
    baselined: usize,
    /// The width lines and tables are fitted to.
    width: usize,
}

impl<W: Write> HumanPrinter<W> {
    pub fn new(out: W, color: bool, summary: Summary) -> Self {
        Self {
            out,
            color,
            summary,
            rows: Vec::new(),
            files: Vec::new(),
            file_index: crate::FastMap::default(),
            rules: Default::default(),
            totals: Totals::default(),
            sessions: 0,
            baselined: 0,
            width: super::layout::width(),
        }
    }

    fn session_table(&self) -> String {
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
                    .map(|(s, n)| format!("{n} {}", s.for_terminal()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut findings = Totals {
                errors: row.errors,
                warnings: row.warnings,
                infos: row.infos,
            }
            .words();
            if row.stopped_by_user > 0 {
                let n = row.stopped_by_user;
                findings.push_str(&format!(
                    "\n({n} {} stopped by the user)",
                    if n == 1 { "reply" } else { "replies" }
                ));
            }
            let mut id = if self.files.len() > 1 {
                format!("{}\n{}", row.id.for_terminal(), file.for_terminal())
            } else {
                row.id.for_terminal()
            };
            let tools = match &row.replayed {
                Some(what) => {
                    id.push_str(&format!("\n({what}, not a session)"));
                    if tools == "-" {
                        tools
                    } else {
                        format!("{tools} (as the stream left them)")
                    }
                }
                None => tools,
            };
            t.add_row([
                id,
                row.messages.to_string(),
                format!("{}/{}", row.steps_started, row.steps_finished),
                tools,
                findings,
            ]);
        }
        // The session column holds ids, never cut in two.
        super::layout::fit_table(t, self.width)
    }

    fn rule_table(&self) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED);
        t.set_header(["rule", "errors", "warnings", "infos"]);
        for (rule, n) in &self.rules {
            t.add_row([
                rule.to_string(),
                n.errors.to_string(),
                n.warnings.to_string(),
                n.infos.to_string(),
            ]);
        }
        super::layout::fit_table(t, self.width)
    }
}

/// `12 records of types rewind does not model: `attachment` ×5, …` (the five commonest types,
/// escaped: they are the input's text), or nothing when every record was modelled.
fn unmodelled_words(unmodelled: &std::collections::BTreeMap<String, u64>) -> Option<String> {
    let total: u64 = unmodelled.values().sum();
    if total == 0 {
        return None;
    }
    let mut by_count: Vec<(&String, &u64)> = unmodelled.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut shown: Vec<String> = by_count
        .iter()
        .take(5)
        .map(|(ty, n)| format!("`{}` ×{n}", InputText::new(ty.as_str()).for_terminal()))
        .collect();
    if by_count.len() > 5 {
        shown.push("…".to_owned());
    }
    let noun = if total == 1 { "record" } else { "records" };
    Some(format!(
        "{total} {noun} of types rewind does not model: {}",
        shown.join(", ")
    ))
}

impl<W: Write> Printer for HumanPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        // Written through at once, so a reader sees each unit's findings while the next units
        // (and files) are still being read; the summary waits for `finish`.
        if !unit.human.is_empty() {
            self.out.write_all(unit.human.as_bytes())?;
            self.out.flush()?;
        }
        for row in &unit.sessions {
            self.rows.push((unit.file.clone(), row.clone()));
        }
        self.sessions += unit.sessions.len();
        self.baselined += unit.baselined;
        let totals = Totals::of(&unit.records);
        self.totals.merge(totals);
        for (rule, n) in by_rule(unit.records.iter()) {
            self.rules.entry(rule).or_default().merge(n);
        }
        let mut objects = unit
            .counts
            .get("json objects")
            .map(|n| {
                let bad = unit.counts.get("undecodable objects").copied().unwrap_or(0);
                format!("{n} JSON objects, {bad} undecodable")
            })
            .unwrap_or_default();
        if let Some(words) = unmodelled_words(&unit.unmodelled) {
            if !objects.is_empty() {
                objects.push_str("; ");
            }
            objects.push_str(&words);
        }
        let sessionless = unit.format.is_agent_log() && unit.sessions.is_empty();
        match self
            .file_index
            .get(&unit.file)
            .and_then(|&k| self.files.get_mut(k))
        {
            Some((_, t, _, none)) => {
                t.merge(totals);
                *none &= sessionless;
            }
            None => {
                self.file_index.insert(unit.file.clone(), self.files.len());
                self.files
                    .push((unit.file.clone(), totals, objects, sessionless));
            }
        }
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        match self.summary {
            Summary::Sessions | Summary::Totals => {
                if self.summary == Summary::Sessions && !self.rows.is_empty() {
                    writeln!(self.out, "{}", self.session_table())?;
                }
                for (file, totals, objects, sessionless) in &self.files {
                    let mut detail = if objects.is_empty() {
                        String::new()
                    } else {
                        format!(" ({objects})")
                    };
                    if *sessionless {
                        detail.push_str(
                            "; no session in it (no step, part or session error): only its log entries were checked",
                        );
                    }
                    let words = paint(self.color, &totals.words(), "1");
                    let line = format!("{}: {words}{detail}", file.for_terminal());
                    write!(
                        self.out,
                        "{}",
                        super::layout::wrap(&line, self.width, "", "  ")
                    )?;
                }
                if self.files.len() > 1 {
                    writeln!(self.out, "total: {}", self.totals.words())?;
                }
            }
            Summary::Rules => {
                if !self.rules.is_empty() {
                    writeln!(self.out, "{}", self.rule_table())?;
                }
                if run.verbose {
                    for (file, why) in &run.files_skipped {
                        let line =
                            format!("skipped {}: {}", file.for_terminal(), why.for_terminal());
                        write!(
                            self.out,
                            "{}",
                            super::layout::wrap(&line, self.width, "", "  ")
                        )?;
                    }
                }
                let skipped = match run.files_skipped.len() {
                    0 => String::new(),
                    n if run.verbose => format!(", {n} skipped"),
                    n => format!(", {n} skipped (-v lists them)"),
                };
                let baselined = match self.baselined {
                    0 => String::new(),
                    n => format!(", {n} in the baseline"),
                };
                let errors = match run.errors.len() {
                    0 => String::new(),
                    n => format!(", {n} unreadable"),
                };
                let line = format!(
                    "{} file{} checked{skipped}{errors}, {} session{}: {}{baselined}",
                    run.files_checked,
                    if run.files_checked == 1 { "" } else { "s" },
                    self.sessions,
                    if self.sessions == 1 { "" } else { "s" },
                    paint(self.color, &self.totals.words(), "1"),
                );
                write!(
                    self.out,
                    "{}",
                    super::layout::wrap(&line, self.width, "", "  ")
                )?;
            }
            Summary::None => {}
        }
        self.out.flush()
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
