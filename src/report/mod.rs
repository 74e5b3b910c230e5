//! Stage 5 of the pipeline: printers.
//!
//! Each diagnosed unit (an [`Analysis`] and its findings) is first *prepared* — positions
//! resolved, records and fingerprints built, human snippets rendered — by [`prepare`], which reads
//! the sources lazily (only the lines a finding shows, see [`snippet`]). Preparation can run on
//! any thread; printers then receive the prepared units in order and write them out, and
//! `finish` writes what needs the whole run (summary tables, the JSON or SARIF document).

pub mod concise;
pub mod github;
pub mod group;
pub mod html;
pub mod human;
pub mod input_text;
pub mod json;
pub mod jsonl;
pub mod junit;
pub mod layout;
pub mod ledger;
pub mod merge;
pub mod record;
pub mod safe_json;
pub mod sarif;
pub mod snippet;
pub mod spool;
pub mod statistics;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;

use crate::checks::diagnostic::{Finding, Severity};
use crate::core::Format;
use crate::session::Analysis;
use crate::source::{FileId, SourceKind, SourceMap, Span};
use input_text::InputText;
use record::FindingRecord;
use snippet::{Lines, Resolved};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Annotated snippets and a summary table.
    Human,
    /// One line per finding: `path:line:col: severity[rule] message`.
    Concise,
    /// One JSON document.
    Json,
    /// One JSON object per finding per line, then a summary line.
    Jsonl,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (annotations), plus a step summary.
    Github,
    /// JUnit XML, one test case per recording.
    Junit,
    /// One self-contained HTML page: per session a timeline with the findings pinned to it.
    Html,
}

/// Whether to colour the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal, unless the environment says otherwise (`NO_COLOR`,
    /// `CLICOLOR=0`; `FORCE_COLOR` or `CLICOLOR_FORCE` colour even when not a terminal).
    #[default]
    Auto,
    Always,
    Never,
}

/// The stream a colour decision is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl ColorChoice {
    /// Resolves `auto` for standard output.
    pub fn enabled(self) -> bool {
        self.enabled_for(Stream::Stdout)
    }

    /// Resolves `auto` for standard error (error lines).
    pub fn enabled_on_stderr(self) -> bool {
        self.enabled_for(Stream::Stderr)
    }

    /// Resolves `auto` for a stream, from the process's environment.
    pub fn enabled_for(self, stream: Stream) -> bool {
        use std::io::IsTerminal;
        let terminal = || match stream {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        };
        self.decide(|name| std::env::var_os(name), terminal)
    }

    /// The one place colour is decided. `--color always|never` wins over the environment; with
    /// `auto`, in this order: a non-empty `NO_COLOR` turns colour off; `FORCE_COLOR` or
    /// `CLICOLOR_FORCE` set to anything but empty or `0` turns it on even when the stream is not
    /// a terminal; `CLICOLOR=0` turns it off; otherwise colour exactly when the stream is a
    /// terminal.
    pub fn decide(
        self,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
        terminal: impl FnOnce() -> bool,
    ) -> bool {
        let set = |name: &str| env(name).is_some_and(|v| !v.is_empty() && v != "0");
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                    false
                } else if set("FORCE_COLOR") || set("CLICOLOR_FORCE") {
                    true
                } else if env("CLICOLOR").is_some_and(|v| v == "0") {
                    false
                } else {
                    terminal()
                }
            }
        }
    }
}

#[cfg(test)]
mod color_tests {
    use super::ColorChoice;

    fn decide(choice: ColorChoice, vars: &[(&str, &str)], terminal: bool) -> bool {
        choice.decide(
            |name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).into())
            },
            || terminal,
        )
    }

    #[test]
    fn environment_and_flag() {
        use ColorChoice::*;
        assert!(decide(Auto, &[], true));
        assert!(!decide(Auto, &[], false));
        assert!(!decide(Auto, &[("NO_COLOR", "1")], true));
        assert!(decide(Auto, &[("NO_COLOR", "")], true));
        assert!(decide(Auto, &[("FORCE_COLOR", "1")], false));
        assert!(!decide(Auto, &[("FORCE_COLOR", "0")], false));
        assert!(!decide(Auto, &[("FORCE_COLOR", "")], false));
        assert!(decide(Auto, &[("CLICOLOR_FORCE", "yes")], false));
        assert!(!decide(Auto, &[("CLICOLOR", "0")], true));
        assert!(decide(Auto, &[("CLICOLOR", "1")], true));
        assert!(decide(
            Always,
            &[("NO_COLOR", "1"), ("CLICOLOR", "0")],
            false
        ));
        assert!(!decide(Never, &[("FORCE_COLOR", "1")], true));
    }
}

/// A diagnosed unit, ready to print.
#[derive(Debug, Clone)]
pub struct UnitOutput {
    /// The input file, as shown (its name is the input's text).
    pub file: InputText,
    pub format: Format,
    pub counts: BTreeMap<&'static str, u64>,
    /// Records read but not modelled, by type (see `Analysis::unmodelled`).
    pub unmodelled: BTreeMap<String, u64>,
    pub sessions: Vec<SessionSummary>,
    /// Findings kept (after baseline filtering), in source order.
    pub records: Vec<FindingRecord>,
    /// Findings dropped because the baseline has them.
    pub baselined: usize,
    /// The human rendering of the kept findings, when asked for.
    pub human: String,
    /// The unit's section of the HTML page, when asked for.
    pub html: String,
}

/// Prepares a unit: resolves positions, fingerprints every finding, drops those in `baseline`,
/// and renders the rest for people when `human` is given.
pub fn prepare(
    sources: &SourceMap,
    analysis: &Analysis,
    findings: &[Finding],
    baseline: Option<&HashSet<String>>,
    human: Option<&human::Renderer>,
) -> UnitOutput {
    // Source lines are kept only for a printer that shows them.
    let located = locate(sources, findings, human.is_some());
    let all = record::records(sources, &located, findings);
    // Without a baseline every finding is kept, and not copied.
    let (kept_findings, records, baselined) = match baseline {
        None => (std::borrow::Cow::Borrowed(findings), all, 0),
        Some(baseline) => {
            let mut kept = Vec::new();
            let mut records = Vec::new();
            let mut baselined = 0;
            for (f, rec) in findings.iter().zip(all) {
                if baseline.contains(&rec.fingerprint) {
                    baselined += 1;
                    continue;
                }
                kept.push(f.clone());
                records.push(rec);
            }
            (std::borrow::Cow::Owned(kept), records, baselined)
        }
    };
    let html = match human {
        Some(r) if r.html => html::section(sources, analysis, &kept_findings, &records, &located),
        _ => String::new(),
    };
    let rendered = human
        .filter(|r| !r.html)
        .map(|r| {
            let order = root_cause_order(&kept_findings);
            let mut text = root_cause_line(&kept_findings, &order, &records, r.width);
            // Alike findings past the first few of their group are counted, not rendered.
            let keys: Vec<u64> = order
                .iter()
                .map(|&i| group_key(&kept_findings[i]))
                .collect();
            for (&i, show) in order.iter().zip(group::plan(&keys)) {
                let group::Show::Full { more } = show else {
                    continue;
                };
                let f = &kept_findings[i];
                text.push_str(&r.render(sources, &located, f));
                if let Some(more) = more {
                    text.push_str(&r.more_line(f.rule, more));
                }
                text.push('\n');
            }
            text
        })
        .unwrap_or_default();
    let file = sources
        .get(analysis.file)
        .map(|s| record::display_path(&s.path))
        .unwrap_or_default();
    UnitOutput {
        file: InputText::new(file),
        format: analysis.format,
        counts: analysis.counts.clone(),
        unmodelled: analysis.unmodelled.clone(),
        sessions: summarize(analysis, &kept_findings),
        records,
        baselined,
        human: rendered,
        html,
    }
}

/// The key of `f`'s group of alike findings (see [`group`]).
pub fn group_key(f: &Finding) -> u64 {
    group::key(f.rule, f.severity, f.message.unescaped(), &f.ids)
}

/// The order findings are shown in for people: by severity, then causality, then position.
pub fn root_cause_order(findings: &[Finding]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..findings.len()).collect();
    order.sort_by_key(|&i| {
        let f = &findings[i];
        (std::cmp::Reverse(f.severity), f.rule.causal_rank(), i)
    });
    order
}

/// One line naming the root cause and where it is (`file:line`), when there are several
/// findings of note to choose among; wrapped to `width`.
fn root_cause_line(
    findings: &[Finding],
    order: &[usize],
    records: &[FindingRecord],
    width: usize,
) -> String {
    let serious = findings
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .count();
    let Some(&first) = order.first() else {
        return String::new();
    };
    if serious < 2 || findings[first].severity == Severity::Info {
        return String::new();
    }
    let f = &findings[first];
    let record = records.get(first);
    // The file name and the message quote the input (a path, tool names, ids, error names):
    // escaped like every other line that shows them.
    let file = record
        .and_then(|r| r.file.as_ref())
        .map(record::InputText::for_terminal);
    let line = record.and_then(|r| r.line);
    let at = match (file, line) {
        (Some(file), Some(line)) => format!(" ({file}:{line})"),
        (Some(file), None) => format!(" ({file})"),
        (None, Some(line)) => format!(" (line {line})"),
        (None, None) => String::new(),
    };
    let text = format!(
        "[{}] {}{at}",
        f.rule,
        f.message.first_line(200).for_terminal()
    );
    layout::wrap(&text, width, "root cause: ", "  ") + "\n"
}

/// What a whole run did, for the printers' last words.
#[derive(Debug, Default, Clone)]
pub struct RunSummary {
    pub files_checked: usize,
    pub files_skipped: Vec<(InputText, InputText)>,
    /// Inputs that could not be read: (file, error).
    pub errors: Vec<(InputText, InputText)>,
    /// Findings at or above this severity fail the run.
    pub fail_on: Option<Severity>,
    pub verbose: bool,
    /// The ledger of `check --shard`, which the JSON, JSON Lines, SARIF and JUnit reports carry
    /// for `rewind merge`.
    pub shard: Option<ledger::Ledger>,
}

/// A printer of diagnoses.
pub trait Printer {
    /// Writes one prepared unit (a printer that keeps its findings for the end keeps them, not
    /// a copy of them).
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()>;
    /// Says, before the first unit, that the run is a shard's (`check --shard`): a printer whose
    /// ledger needs something of each finding (JUnit: each line's length) keeps it as the units
    /// are written, and only then.
    fn for_shard(&mut self) {}
    /// Writes what needs the whole run.
    fn finish(&mut self, run: &RunSummary) -> io::Result<()>;
}

/// Per-session figures for the summary table and JSON output.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    pub id: InputText,
    pub messages: usize,
    pub steps_started: usize,
    pub steps_finished: usize,
    /// Tool parts by final status (a status is the input's word).
    pub tools: BTreeMap<InputText, usize>,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Replies the user stopped (`MessageAbortedError`): what happened, and no finding.
    #[serde(skip_serializing_if = "is_zero")]
    pub stopped_by_user: usize,
    /// Not a session of the agent: a body replayed as a stream of its own (an agent log's
    /// logged HTTP response), whose parts are what the stream built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Figures of each session of `analysis`.
pub fn summarize(analysis: &Analysis, findings: &[Finding]) -> Vec<SessionSummary> {
    // Findings by session and severity, counted in one pass (not once per session).
    let mut by_session: crate::FastMap<&str, Totals> = crate::FastMap::default();
    for f in findings {
        if let Some(id) = f.ids.session_id.as_deref() {
            by_session.entry(id).or_default().count(f.severity);
        }
    }
    analysis
        .sessions
        .iter()
        .map(|s| {
            // What a forgetting replay forgot, and the messages held, counted alike.
            let mut counted = s.forgotten.clone();
            for m in &s.messages {
                counted.count(m);
            }
            let mut sum = SessionSummary {
                id: InputText::new(s.id.clone()),
                messages: counted.messages,
                steps_started: counted.steps_started,
                steps_finished: counted.steps_finished,
                tools: counted
                    .tools
                    .into_iter()
                    .map(|(status, n)| (InputText::new(status), n))
                    .collect(),
                ..SessionSummary::default()
            };
            if analysis.format.is_agent_log() && analysis.stream.is_some() {
                sum.replayed = Some("replayed HTTP response body".into());
            }
            for m in &s.messages {
                if m.info
                    .as_ref()
                    .and_then(|i| i.error())
                    .is_some_and(|e| e.name == "MessageAbortedError")
                {
                    sum.stopped_by_user += 1;
                }
            }
            if let Some(totals) = by_session.get(s.id.as_str()) {
                sum.errors = totals.errors;
                sum.warnings = totals.warnings;
                sum.infos = totals.infos;
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
    pub fn count(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
            Severity::Info => self.infos += 1,
        }
    }

    pub fn of(records: &[FindingRecord]) -> Totals {
        let mut t = Totals::default();
        for r in records {
            t.count(r.severity);
        }
        t
    }

    pub fn merge(&mut self, other: Totals) {
        self.errors += other.errors;
        self.warnings += other.warnings;
        self.infos += other.infos;
    }

    pub fn total(&self) -> usize {
        self.errors + self.warnings + self.infos
    }

    /// Whether any finding reaches `fail_on`.
    pub fn fails(&self, fail_on: Severity) -> bool {
        match fail_on {
            Severity::Error => self.errors > 0,
            Severity::Warning => self.errors + self.warnings > 0,
            Severity::Info => self.total() > 0,
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
pub fn locate(sources: &SourceMap, findings: &[Finding], keep_lines: bool) -> Located {
    let spans = findings
        .iter()
        .flat_map(|f| f.primary.iter().chain(f.related.iter()))
        .map(|l| l.span);
    locate_spans(sources, spans, keep_lines)
}

/// Resolves arbitrary spans (one pass per source), e.g. for a replay's timeline.
pub fn locate_spans(
    sources: &SourceMap,
    spans: impl Iterator<Item = Span>,
    keep_lines: bool,
) -> Located {
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
            // Counted from the file's checkpoints, kept across its units.
            SourceKind::File => {
                let (Ok(file), Ok(indexer)) = (
                    crate::ingest::open(&source.path),
                    crate::ingest::open(&source.path),
                ) else {
                    continue;
                };
                let mut indexer = crate::source::Rereading::new(indexer);
                let mut index = source.lines.lock().unwrap_or_else(|e| e.into_inner());
                snippet::resolve(file, &mut indexer, &mut index, &ranges, keep_lines).ok()
            }
            SourceKind::Virtual { text, .. } => {
                snippet::scan(text.as_bytes(), &ranges, keep_lines).ok()
            }
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

/// Findings by rule and severity, for summaries.
pub fn by_rule<'a>(
    records: impl Iterator<Item = &'a FindingRecord>,
) -> BTreeMap<&'static str, Totals> {
    let mut out: BTreeMap<&'static str, Totals> = BTreeMap::new();
    for r in records {
        out.entry(r.rule.as_str()).or_default().count(r.severity);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Rule;
    use crate::checks::diagnostic::Ids;
    use crate::session::Session;

    #[test]
    fn sessions_count_their_own_findings() {
        let mut analysis = Analysis::new(FileId(0), crate::testing::formats::AGENT_LOG);
        for id in ["ses_a", "ses_b", "ses_c"] {
            analysis.sessions.push(Session {
                id: id.into(),
                ..Session::default()
            });
        }
        let finding = |session: Option<&str>, severity| {
            Finding::new(Rule::StepUnclosed, severity, "m").ids(Ids {
                session_id: session.map(str::to_owned),
                ..Ids::default()
            })
        };
        let findings = [
            finding(Some("ses_a"), Severity::Error),
            finding(Some("ses_b"), Severity::Warning),
            finding(Some("ses_a"), Severity::Info),
            finding(None, Severity::Error),
            finding(Some("ses_a"), Severity::Error),
        ];
        let sums = summarize(&analysis, &findings);
        let counts: Vec<_> = sums
            .iter()
            .map(|s| (s.id.unescaped(), s.errors, s.warnings, s.infos))
            .collect();
        assert_eq!(
            counts,
            [("ses_a", 2, 0, 1), ("ses_b", 0, 1, 0), ("ses_c", 0, 0, 0)]
        );
    }
}
