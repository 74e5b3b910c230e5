//! The HTML printer: one self-contained page (inline CSS, no script, no network) that opens from
//! disk. Per unit and per session: a timeline — steps as blocks, each tool call with its state
//! transitions, text and reasoning shortened, retries, the stream events the processor skipped or
//! died of, session errors — with every finding pinned to the entry it is about, and the findings
//! themselves (root cause first) with their annotated source lines, notes and help.
//!
//! The page is rendered by maud templates, which escape whatever is spliced into them; text from
//! the input is spliced as [`Text`], which also shows control characters and bidi overrides
//! instead of keeping them. The page carries a Content Security Policy that allows no script at
//! all and no network access. Sessions without findings are one
//! collapsed line; a session's timeline is capped at [`MAX_ENTRIES`] entries (the entries findings
//! are pinned to are always kept, and the page says how many of each kind were left out), and
//! past [`MAX_CARDS`] its findings are one line each. The summary links to the sessions with
//! findings (the first [`MAX_SUMMARY_LINKS`]).
//!
//! [`compare_page`] is the page of `replay --compare`: two processors' timelines side by side.
//!
//! Each unit's section is rendered by [`section`] while the unit is prepared (on any thread); the
//! printer writes sections as they come, so nothing accumulates across units. The page's summary
//! is written last and shown first (CSS `order`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use maud::{Markup, PreEscaped, Render, html};

use super::record::FindingRecord;
use super::{Printer, RunSummary, Totals, UnitOutput, by_rule};
use crate::checks::diagnostic::Severity;

mod compare;
mod section;
mod timeline;

use crate::report::input_text::InputText;
pub use compare::{CompareRow, CompareRun, Comparison, Side, compare_page};
pub use section::section;
use section::summary_line;

/// Timeline entries rendered per session with findings; the rest are elided (counted by kind).
pub const MAX_ENTRIES: usize = 300;
/// Timeline entries rendered per session without findings (collapsed).
pub const MAX_CLEAN_ENTRIES: usize = 60;
const STEP_FINISH_LOGGED: &str = "step_finish logged";
/// Bytes of page after which units are written compact: no timelines, no source lines.
pub const PAGE_BUDGET: u64 = 16 * 1024 * 1024;
/// Findings of a session shown in full (with their source lines); the rest are one line each.
pub const MAX_CARDS: usize = 100;
/// Sessions with findings linked from the page's summary.
pub const MAX_SUMMARY_LINKS: usize = 200;
/// Sessions with findings expanded on the page (the first ones); the others are collapsed, as
/// the sessions without findings are, and linked from the summary like the first.
pub const MAX_OPEN: usize = 50;
/// Characters of a text or reasoning part shown.
const TEXT_PREVIEW: usize = 160;
/// Stands for the unit's number in ids until the printer knows it (never in escaped text: control
/// characters from the input are escaped).
const UNIT: &str = "\u{1}";

/// The Content Security Policy of the page: no script, no fetch, no frames, inline styles only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// Text from the input, as the page shows it: escaped for HTML text and attribute values (quotes
/// included), control characters and bidi overrides shown as `\u{…}` (newlines kept). Every piece
/// of input text goes on the page through it; a string spliced into a template without it would
/// still be escaped by maud, but keep its control characters and bidi overrides.
#[derive(Clone, Copy)]
struct Text<'a>(&'a str);

impl Render for Text<'_> {
    fn render_to(&self, out: &mut String) {
        super::input_text::push_html(out, self.0);
    }
}

fn sev_class(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// Counts the bytes it writes.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes the page: the head, then each unit's section as it comes, then the summary.
pub struct HtmlPrinter<W: Write> {
    out: Counting<W>,
    started: bool,
    units: usize,
    totals: Totals,
    sessions: usize,
    files: Vec<(InputText, Totals)>,
    /// Each file's place in `files` (a run may check many).
    file_index: crate::FastMap<InputText, usize>,
    rules: BTreeMap<&'static str, Totals>,
    baselined: usize,
    /// Past this many bytes, units are written compact (see [`compact`]).
    budget: u64,
    /// Units written compact.
    compacted: usize,
    /// Links to the first sessions with findings written in full (for the summary).
    links: Vec<Markup>,
    /// Sessions with findings written in full.
    with_findings: usize,
    /// Sessions written expanded.
    opened: usize,
}

impl<W: Write> HtmlPrinter<W> {
    pub fn new(out: W) -> Self {
        Self::with_budget(out, PAGE_BUDGET)
    }

    /// A printer whose page turns compact past `budget` bytes.
    pub fn with_budget(out: W, budget: u64) -> Self {
        Self {
            out: Counting {
                inner: out,
                written: 0,
            },
            started: false,
            units: 0,
            totals: Totals::default(),
            sessions: 0,
            files: Vec::new(),
            file_index: crate::FastMap::default(),
            rules: BTreeMap::new(),
            baselined: 0,
            budget,
            compacted: 0,
            links: Vec::new(),
            with_findings: 0,
            opened: 0,
        }
    }

    /// With several sessions, a way to the ones with findings among the collapsed others.
    fn jump_links(&self) -> Markup {
        let more = self.with_findings.saturating_sub(self.links.len());
        html! {
            @if self.sessions > 1 && !self.links.is_empty() {
                p {
                    "Sessions with findings (" (self.with_findings) ")"
                    @if self.with_findings > self.opened {
                        "; the first " (self.opened) " are expanded"
                    }
                    ":"
                }
                "\n"
                ul.jump {
                    "\n"
                    @for l in &self.links {
                        (l) "\n"
                    }
                    @if more > 0 {
                        li.meta { "and " (more) " more" }
                        "\n"
                    }
                }
                "\n"
            }
        }
    }

    /// The summary of the run, shown first: totals, rules, links to the sessions with findings,
    /// files, what could not be read.
    fn summary(&self, run: &RunSummary) -> Markup {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let (files, sessions) = (self.files.len(), self.sessions);
        html! {
            h2 { "Summary" }
            "\n"
            p.big {
                (files) " file" (plural(files)) " · "
                (sessions) " session" (plural(sessions)) " · "
                span.totals.(totals_class(&self.totals)) { (Text(&self.totals.words())) }
                @if self.baselined > 0 { " · " (self.baselined) " in the baseline" }
            }
            "\n"
            @if !self.rules.is_empty() {
                table {
                    tr { th { "rule" } th { "errors" } th { "warnings" } th { "infos" } }
                    "\n"
                    @for (rule, t) in &self.rules {
                        tr { td { (rule) } td { (t.errors) } td { (t.warnings) } td { (t.infos) } }
                        "\n"
                    }
                }
                "\n"
            }
            (self.jump_links())
            @if files > 1 {
                ul.files {
                    "\n"
                    @for (f, t) in &self.files {
                        li { (f.for_html()) ": " (Text(&t.words())) }
                        "\n"
                    }
                }
                "\n"
            }
            @for (file, error) in &run.errors {
                p.unreadable { "could not read " (file.for_html()) ": " (error.for_html()) }
                "\n"
            }
            @if self.compacted > 0 {
                p.budget {
                    (self.compacted) " of " (self.units) " units are listed compact (page budget "
                    (self.budget / 1024) " KiB)."
                }
                "\n"
            }
            @if !run.files_skipped.is_empty() {
                p.meta { (run.files_skipped.len()) " file(s) skipped (not recordings)" }
                "\n"
            }
        }
    }

    fn start(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        let page = page_start(
            html! { "rewind report" },
            &[STYLE],
            html! { "rewind report" },
            "findings are pinned to the timeline entry they are about; sessions without findings \
             are collapsed",
        );
        self.out.write_all(page.as_bytes())
    }
}

impl<W: Write> Printer for HtmlPrinter<W> {
    fn unit(&mut self, unit: UnitOutput) -> io::Result<()> {
        self.start()?;
        self.units += 1;
        if self.out.written < self.budget {
            let n = self.units.to_string();
            let html = unit.html.replace(UNIT, &n);
            let (html, opened) = open_at_most(html, MAX_OPEN.saturating_sub(self.opened));
            self.opened += opened;
            self.out.write_all(html.as_bytes())?;
            let single = unit.sessions.len() == 1 && !unit.records.is_empty();
            for (si, s) in unit.sessions.iter().enumerate() {
                if s.errors + s.warnings + s.infos > 0 || single {
                    self.with_findings += 1;
                    if self.links.len() < MAX_SUMMARY_LINKS {
                        self.links.push(html! {
                            li {
                                a href={ "#u" (n) "-s" (si) } { (s.id.for_html()) }
                                " " span.meta { (unit.file.for_html()) }
                            }
                        });
                    }
                }
            }
        } else {
            if self.compacted == 0 {
                let note = html! {
                    p.budget {
                        "The page reached " (self.budget / 1024) " KiB: the files and sessions \
                        below are listed without timelines or source lines, and sessions without \
                        findings are only counted."
                    }
                    "\n"
                };
                self.out.write_all(note.0.as_bytes())?;
            }
            self.compacted += 1;
            self.out.write_all(compact(&unit).0.as_bytes())?;
        }
        let totals = Totals::of(&unit.records);
        self.totals.merge(totals);
        self.sessions += unit.sessions.len();
        self.baselined += unit.baselined;
        for (rule, t) in by_rule(unit.records.iter()) {
            self.rules.entry(rule).or_default().merge(t);
        }
        match self
            .file_index
            .get(&unit.file)
            .and_then(|&k| self.files.get_mut(k))
        {
            Some((_, t)) => t.merge(totals),
            None => {
                self.file_index.insert(unit.file.clone(), self.files.len());
                self.files.push((unit.file.clone(), totals));
            }
        }
        Ok(())
    }

    fn finish(&mut self, run: &RunSummary) -> io::Result<()> {
        self.start()?;
        let summary = self.summary(run);
        let aside = |size: &Markup| html! { aside #summary { "\n" (summary) (size) } "\n" };
        // The page's size, the line that gives it included (its own digits are counted too).
        let rest = MAIN_END.len() + aside(&Markup::default()).0.len() + PAGE_END.len();
        let size = size_line_for(self.out.written + rest as u64);
        self.out.write_all(MAIN_END.as_bytes())?;
        self.out.write_all(aside(&size).0.as_bytes())?;
        self.out.write_all(PAGE_END.as_bytes())?;
        self.out.flush()
    }
}

/// What opens a session's `<details>` (never in escaped input: `>` and `<` are escaped).
const OPEN: &str = "\" open><summary>";

/// `html` with at most `allowed` sessions expanded (the first ones), and how many are.
fn open_at_most(html: String, allowed: usize) -> (String, usize) {
    let opened = html.matches(OPEN).count();
    if opened <= allowed {
        return (html, opened);
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html.as_str();
    let mut k = 0;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        out.push_str(if k < allowed { OPEN } else { "\"><summary>" });
        k += 1;
        rest = &rest[at + OPEN.len()..];
    }
    out.push_str(rest);
    (out, allowed)
}

/// A unit in a few lines, from its records alone: its sessions with findings, one line each, a
/// count of the others, and each finding on one line.
fn compact(unit: &UnitOutput) -> Markup {
    let clean = unit
        .sessions
        .iter()
        .filter(|s| s.errors + s.warnings + s.infos == 0)
        .count();
    let place = |r: &FindingRecord| match (&r.file, r.line, &r.locator) {
        (Some(f), Some(l), _) => html! { " · " (f.for_html()) ":" (l) },
        (Some(f), None, Some(loc)) => html! { " · " (f.for_html()) " › " (loc.for_html()) },
        _ => Markup::default(),
    };
    html! {
        section.unit.compact {
            "\n"
            (unit_heading(&unit.file, unit.format.describe(), &Totals::of(&unit.records)))
            ul.compact {
                "\n"
                @for s in unit.sessions.iter().filter(|s| s.errors + s.warnings + s.infos > 0) {
                    li { (summary_line(s, None)) }
                    "\n"
                }
                @if clean > 0 {
                    li.meta { (clean) " session" @if clean != 1 { "s" } " without findings" }
                    "\n"
                }
                @for (r, more) in grouped(&unit.records) {
                    @let sev = sev_class(r.severity);
                    li class={ "sev-" (sev) } {
                        span.sev { (sev) } " " span.rule { "[" (r.rule) "]" } " "
                        (r.message.first_line(240).for_html())
                        span.meta { (place(r)) }
                    }
                    "\n"
                    @if let Some(more) = more {
                        li.meta.more {
                            (super::group::more_words(more)) " ([" (r.rule) "], the same message \
                            but for ids and numbers)"
                        }
                        "\n"
                    }
                }
            }
            "\n"
        }
        "\n"
    }
}

/// The records shown of `records` (the first few of each group of alike findings), each with how
/// many alike ones are left out after it.
fn grouped(records: &[FindingRecord]) -> impl Iterator<Item = (&FindingRecord, Option<usize>)> {
    let keys: Vec<u64> = records.iter().map(super::group::record_key).collect();
    records
        .iter()
        .zip(super::group::plan(&keys))
        .filter_map(|(r, show)| match show {
            super::group::Show::Full { more } => Some((r, more)),
            super::group::Show::Hidden => None,
        })
}

/// A unit's heading: its file, its format, its findings in words.
fn unit_heading(file: &InputText, format: &str, totals: &Totals) -> Markup {
    html! {
        h2 {
            span.file { (file.for_html()) } " " span.fmt { (Text(format)) } " "
            span.totals.(totals_class(totals)) { (Text(&totals.words())) }
        }
        "\n"
    }
}

fn totals_class(t: &Totals) -> &'static str {
    if t.errors > 0 {
        "error"
    } else if t.warnings > 0 {
        "warning"
    } else {
        "clean"
    }
}

/// The page up to its `<main>`: the head (the policy, `styles`) and the header. A page is written
/// in parts (the report's as its units come), so this opens `<html>`, `<body>` and `<main>`, and
/// [`MAIN_END`] and [`PAGE_END`] close them; all that is written in between is whole elements.
fn page_start(title: Markup, styles: &[&str], heading: Markup, about: &str) -> String {
    let mut page = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n");
    html! {
        head {
            "\n" meta charset="utf-8";
            "\n" meta http-equiv="Content-Security-Policy" content=(CSP);
            "\n" meta name="referrer" content="no-referrer";
            "\n" meta name="viewport" content="width=device-width, initial-scale=1";
            "\n" title { (title) }
            "\n" style { @for s in styles { (PreEscaped(s)) } }
            "\n"
        }
        "\n"
    }
    .render_to(&mut page);
    page.push_str("<body>\n");
    html! {
        header {
            h1 { (heading) }
            p.meta { "rewind " (env!("CARGO_PKG_VERSION")) " · " (about) }
        }
        "\n"
    }
    .render_to(&mut page);
    page.push_str("<main>\n");
    page
}

/// Closes what [`page_start`] opened: the `<main>`, then (after what follows it) the page.
const MAIN_END: &str = "</main>\n";
const PAGE_END: &str = "</body>\n</html>\n";

/// The line that gives the page's size, for a page of `base` bytes without it: its own digits
/// are counted too.
fn size_line_for(base: u64) -> Markup {
    let mut size = base;
    for _ in 0..3 {
        size = base + size_line(size).0.len() as u64;
    }
    size_line(size)
}

fn size_line(bytes: u64) -> Markup {
    html! {
        p.meta.size {
            "page size: " (bytes) " bytes (" (format!("{:.1}", bytes as f64 / 1024.0)) " KiB)"
        }
        "\n"
    }
}

const STYLE: &str = r#"
:root{--err:#c62828;--warn:#b26a00;--info:#0277bd;--ok:#2e7d32;--muted:#666;--line:#ddd;--bg:#fafafa}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:1em 1.5em;color:#222;background:#fff;display:flex;flex-direction:column}
header{order:-2}#summary{order:-1;border:1px solid var(--line);border-radius:6px;padding:.5em 1em;margin-bottom:1em;background:var(--bg)}
main{order:0}h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:.3em 0}h3{font-size:.95em;margin:.6em 0 .2em;color:#444}
.meta{color:var(--muted)}.big{font-size:1.1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid var(--line);padding:2px 8px;text-align:left}
.unit{border-top:2px solid var(--line);padding-top:.5em;margin-top:1em}
.file{font-family:ui-monospace,monospace}.fmt{color:var(--muted);font-weight:normal;font-size:.9em}
.totals{font-weight:600;font-size:.9em;padding:0 .4em;border-radius:3px}
.totals.error{color:#fff;background:var(--err)}.totals.warning{color:#fff;background:var(--warn)}.totals.clean{color:var(--ok)}
details.session{border:1px solid var(--line);border-radius:6px;margin:.5em 0;padding:.2em .8em}
details.session.findings{border-left:4px solid var(--err)}
summary{cursor:pointer;padding:.2em 0}.sid{font-family:ui-monospace,monospace;font-weight:600}.title{font-style:italic}
ol.findings{list-style:none;padding:0}
.finding{border:1px solid var(--line);border-left:5px solid var(--info);border-radius:4px;margin:.5em 0;padding:.4em .8em;background:var(--bg)}
.finding.brief{padding:.1em .8em;margin:.15em 0}li.more{margin:.6em 0 .2em}
.finding.sev-error{border-left-color:var(--err)}.finding.sev-warning{border-left-color:var(--warn)}
.sev{font-weight:700;text-transform:uppercase;font-size:.8em}
.sev-error .sev{color:var(--err)}.sev-warning .sev{color:var(--warn)}.sev-info .sev{color:var(--info)}
.rule{font-family:ui-monospace,monospace;font-weight:600}.root{background:#222;color:#fff;font-size:.75em;padding:0 .4em;border-radius:3px}
.where{color:var(--muted);font-size:.9em}.note,.help{white-space:pre-wrap;margin:.2em 0}.help b{color:var(--info)}
.src{margin:.4em 0}.src-name{font-family:ui-monospace,monospace;font-size:.85em;color:var(--muted)}
pre{background:#fff;border:1px solid var(--line);padding:.4em;overflow-x:auto;font-size:12px;line-height:1.35;margin:.2em 0}
.ln{color:#999}mark.p{background:#ffd6d6}mark.r{background:#e3ecff}.lp{color:var(--err)}.lr{color:var(--info)}
ol.timeline,ol.steps{list-style:none;padding-left:0;margin:.3em 0}
ol.steps{margin-left:1.2em;border-left:2px solid #9e9e9e;padding-left:.6em}
.entry .row{display:flex;gap:.8em;align-items:baseline;padding:1px 4px;border-radius:3px}
.pos{color:#999;font-family:ui-monospace,monospace;font-size:.8em;min-width:9em}
.what{font-weight:600;white-space:nowrap}.detail{color:#333;overflow-wrap:anywhere}
.entry.step>.row .what{color:#555}.entry.tool>.row .what{color:#4527a0}.entry.text .detail,.entry.reasoning .detail{color:var(--muted);font-style:italic}
.tone-warning>.row .what{color:var(--warn)}.tone-error>.row .what{color:var(--err)}
.pinned>.row{background:#fff3e0}.pinned.sev-error>.row{background:#ffebee}
ul.pins{list-style:none;margin:0 0 .2em 10em;padding:0;font-size:.9em}
ul.pins a{font-weight:600}.pins .sev-error a{color:var(--err)}.pins .sev-warning a{color:var(--warn)}.pins .sev-info a{color:var(--info)}
.elided,.unfinished{color:var(--muted);font-style:italic;padding:2px 4px}.unfinished{color:var(--warn)}
.outcome{font-weight:600}.unreadable{color:var(--err)}
ul.jump{columns:2;font-family:ui-monospace,monospace;font-size:.9em}
.budget{border:1px solid var(--warn);padding:.4em .8em;border-radius:4px}ul.compact{list-style:none;padding-left:.5em}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SessionSummary;

    fn esc(s: &str) -> String {
        Text(s).render().into_string()
    }

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
        assert_eq!(
            esc("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
    }

    #[test]
    fn control_characters_and_bidi_overrides_are_shown_not_kept() {
        assert_eq!(esc("a\u{1}b\u{202e}c"), "a\\u{1}b\\u{202e}c");
        assert_eq!(esc("x\ny"), "x\ny");
        // The unit placeholder can never come from the input.
        assert!(!esc("\u{1}").contains(UNIT));
    }

    #[test]
    fn escaped_text_has_no_markup_left() {
        let nasty = "</pre></details><script>x</script><a href=\"javascript:x\">\u{0}";
        let e = esc(nasty);
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('"'));
        assert!(!e.contains('\u{0}'));
    }

    fn unit(file: &str, html: &str, sessions: &[(&str, usize)]) -> UnitOutput {
        UnitOutput {
            file: file.into(),
            format: crate::testing::formats::AGENT_LOG,
            counts: BTreeMap::new(),
            unmodelled: BTreeMap::new(),
            sessions: sessions
                .iter()
                .map(|(id, errors)| SessionSummary {
                    id: (*id).into(),
                    errors: *errors,
                    ..SessionSummary::default()
                })
                .collect(),
            records: Vec::new(),
            baselined: 0,
            human: String::new(),
            html: html.into(),
        }
    }

    #[test]
    fn only_the_first_sessions_with_findings_are_expanded() {
        let html = "<details class=\"session findings\" id=\"a\" open><summary>a</summary></details><details class=\"session findings\" id=\"b\" open><summary>b</summary></details>".to_owned();
        let (kept, n) = open_at_most(html.clone(), 5);
        assert_eq!((kept.as_str(), n), (html.as_str(), 2));
        let (one, n) = open_at_most(html.clone(), 1);
        assert_eq!(n, 1);
        assert_eq!(one.matches(" open>").count(), 1);
        assert!(one.contains("id=\"a\" open>") && one.contains("id=\"b\"><summary>b"));
        let (none, n) = open_at_most(html, 0);
        assert_eq!(n, 0);
        assert!(!none.contains(" open>"));
    }

    #[test]
    fn past_the_budget_units_are_compact() {
        let mut page = Vec::new();
        {
            let mut p = HtmlPrinter::with_budget(&mut page, 8192);
            let big = format!("<section id=\"u{UNIT}\">{}</section>", "x".repeat(5000));
            p.unit(unit("a.log", &big, &[("ses_a", 1)])).unwrap();
            p.unit(unit(
                "b.log",
                &big,
                &[("ses_b", 1), ("ses_c", 0), ("ses_d", 0)],
            ))
            .unwrap();
            p.finish(&RunSummary::default()).unwrap();
        }
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("<section id=\"u1\">"));
        assert_eq!(
            page.matches("<section id=").count(),
            1,
            "only the first is in full"
        );
        assert!(page.contains("<span class=\"sid\">ses_b</span>"));
        assert!(page.contains("2 sessions without findings"));
        assert!(!page.contains("ses_c"));
        assert!(page.contains("1 of 2 units are listed compact"));
        let size = page.len().to_string();
        assert!(
            page.contains(&format!("page size: {size} bytes")),
            "the size is exact"
        );
    }
}
