//! A unit's section of the page: its sessions, their timelines and the findings' cards with
//! their annotated source lines.

use std::collections::HashMap;

use maud::{Markup, Render, html};

use super::timeline::{Shown, Timeline, Tools, keep, pins, timeline};
use super::{
    MAX_CARDS, MAX_CLEAN_ENTRIES, MAX_ENTRIES, PAGE_BUDGET, Text, UNIT, sev_class, totals_class,
    unit_heading,
};
use crate::checks::diagnostic::{Finding, Label, Severity};
use crate::report::input_text::InputText;
use crate::report::record::FindingRecord;
use crate::report::snippet::{CONTEXT, Lines};
use crate::report::{
    Located, SessionSummary, Totals, group, group_key, locate_spans, root_cause_order, summarize,
};
use crate::session::{Analysis, Session, first_line};
use crate::source::{Source, SourceKind, SourceMap, Span};

/// The unit's section of the page.
pub fn section(
    sources: &SourceMap,
    analysis: &Analysis,
    findings: &[Finding],
    records: &[FindingRecord],
    located: &Located,
) -> String {
    let unit = Unit::new(sources, analysis, findings, records, located);
    let file = sources
        .get(analysis.file)
        .map(|s| crate::report::record::display_path(&s.path))
        .unwrap_or_default();
    html! {
        section.unit #{ "u" (UNIT) } {
            "\n"
            (unit_heading(&InputText::new(file), analysis.format.describe(), &Totals::of(records)))
            @if let Some(f) = analysis.stream.as_ref() {
                p.meta {
                    (Text(&f.protocol)) " · " (f.events) " events · processor " (Text(&f.profile))
                    " · outcome: " (Text(&f.outcome.words()))
                }
                "\n"
            }
            @if analysis.sessions.is_empty() {
                p.meta {
                    "no session in this input: only its records and log entries were checked"
                }
                "\n"
            }
            (Sessions(&unit))
        }
        "\n"
    }
    .into_string()
}

/// A unit as its section shows it: its findings and timelines by session.
struct Unit<'a> {
    sources: &'a SourceMap,
    analysis: &'a Analysis,
    findings: &'a [Finding],
    records: &'a [FindingRecord],
    located: &'a Located,
    summaries: Vec<SessionSummary>,
    /// Each session's findings shown, root cause first (the first few of each group of alike
    /// findings, see [`crate::report::group`]); the last slot for those of no session.
    findings_of: Vec<Vec<usize>>,
    /// How many alike findings are left out after a shown one, by finding.
    more: crate::FastMap<usize, usize>,
    /// Each session's timeline to render (and last, that of what belongs to no session).
    shown: Vec<Option<Shown>>,
    /// Line numbers of the rendered entries of sessions with findings.
    lines: Located,
    /// The finding shown as the root cause.
    root: Option<usize>,
    store: bool,
}

impl<'a> Unit<'a> {
    fn new(
        sources: &'a SourceMap,
        analysis: &'a Analysis,
        findings: &'a [Finding],
        records: &'a [FindingRecord],
        located: &'a Located,
    ) -> Self {
        let store = analysis.format.is_opencode_store();
        let single = analysis.sessions.len() == 1;
        let order = root_cause_order(findings);
        let serious = findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .count();
        let root = order
            .first()
            .copied()
            .filter(|&i| serious >= 2 && findings[i].severity > Severity::Info);

        // Sessions by id (the first of an id), then which findings and events belong to which
        // session: index into sessions, the last slot for what belongs to none. One pass each, so
        // a unit of many sessions and many events costs no more than their sum.
        let n = analysis.sessions.len();
        let index = crate::first_of(
            (analysis.sessions.iter().enumerate()).map(|(si, s)| (s.id.as_str(), si)),
        );
        let slot = |session: Option<&String>| -> usize {
            match session {
                Some(id) => index.get(id.as_str()).copied().unwrap_or(n),
                None if single => 0,
                None => n,
            }
        };
        let mut findings_of: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for &i in &order {
            findings_of[slot(findings[i].ids.session_id.as_ref())].push(i);
        }
        // Alike findings past the first few of their group are counted, neither shown nor
        // pinned: a session of 500,000 tools left running reads as one finding and a count.
        let mut more = crate::FastMap::default();
        for mine in &mut findings_of {
            let keys: Vec<u64> = mine.iter().map(|&i| group_key(&findings[i])).collect();
            let mut kept = Vec::new();
            for (&i, show) in mine.iter().zip(group::plan(&keys)) {
                if let group::Show::Full { more: m } = show {
                    kept.push(i);
                    if let Some(m) = m {
                        more.insert(i, m);
                    }
                }
            }
            *mine = kept;
        }
        let tools = Tools::of(analysis);
        let mut events_of: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
        for (k, e) in analysis.events.iter().enumerate() {
            events_of[slot(e.session.as_ref())].push(k);
        }

        // Timelines to render, with their findings pinned.
        let shown: Vec<Option<Shown>> = (0..=n)
            .map(|si| {
                let mine = &findings_of[si];
                if store && mine.is_empty() {
                    return None;
                }
                // The first session of an id holds its timeline, as `Analysis::session` finds it.
                let stored = analysis
                    .sessions
                    .get(si)
                    .and_then(|s| index.get(s.id.as_str()))
                    .and_then(|&k| analysis.sessions.get(k));
                let events = &events_of[si];
                shown_timeline(analysis, &tools, stored, events, mine, findings)
            })
            .collect();
        let lines = entry_lines(sources, &shown, store);
        Self {
            sources,
            analysis,
            findings,
            records,
            located,
            summaries: summarize(analysis, findings),
            findings_of,
            more,
            shown,
            lines,
            root,
            store,
        }
    }
}

/// A session's timeline (`stored`'s, with `events`), its findings (`mine`) pinned; `None` when it
/// has no entry.
fn shown_timeline(
    analysis: &Analysis,
    tools: &Tools<'_>,
    stored: Option<&Session>,
    events: &[usize],
    mine: &[usize],
    findings: &[Finding],
) -> Option<Shown> {
    let entries = timeline(analysis, tools, stored, events);
    if entries.is_empty() {
        return None;
    }
    let mut pinned_to: Vec<Vec<usize>> = entries.iter().map(|_| Vec::new()).collect();
    let mine_findings: Vec<&Finding> = mine.iter().map(|&i| &findings[i]).collect();
    for (&i, at) in mine.iter().zip(pins(&mine_findings, &entries)) {
        if let Some(at) = at {
            pinned_to[at].push(i);
        }
    }
    let pinned: Vec<bool> = pinned_to.iter().map(|p| !p.is_empty()).collect();
    let cap = if mine.is_empty() {
        MAX_CLEAN_ENTRIES
    } else {
        MAX_ENTRIES
    };
    let kept = keep(&entries, &pinned, cap);
    Some(Shown {
        entries,
        kept,
        pins: pinned_to,
        findings: !mine.is_empty(),
    })
}

/// Line numbers of the rendered entries of sessions with findings, one pass per source (a clean
/// session's entries go without: no pass over a large input for them).
fn entry_lines(sources: &SourceMap, shown: &[Option<Shown>], store: bool) -> Located {
    let spans: Vec<Span> = shown
        .iter()
        .flatten()
        .filter(|s| s.findings)
        .flat_map(|s| {
            s.entries
                .iter()
                .zip(&s.kept)
                .filter(|(_, k)| **k)
                .filter_map(|(e, _)| e.spans.first().copied())
        })
        .filter(|s| {
            matches!(sources.get(s.file).map(|x| &x.kind), Some(SourceKind::File)) && !store
        })
        .collect();
    locate_spans(sources, spans.into_iter(), true)
}

/// A unit's sessions, each a `<details>`. Past the page's budget, the unit's remaining sessions go
/// without timelines or source lines: those with findings list them one line each, the others
/// are only counted (as the units past the budget are; a log of many sessions is one unit).
struct Sessions<'a>(&'a Unit<'a>);

impl Render for Sessions<'_> {
    /// `out` holds the section so far: the budget is its size.
    fn render_to(&self, out: &mut String) {
        let unit = self.0;
        let mut over_budget = false;
        let mut clean_unshown = 0;
        for (si, shown) in unit.shown.iter().enumerate() {
            let mine = &unit.findings_of[si];
            if unit.analysis.sessions.get(si).is_none() && mine.is_empty() && shown.is_none() {
                continue;
            }
            if !over_budget && out.len() as u64 >= PAGE_BUDGET {
                over_budget = true;
                html! {
                    p.budget {
                        "This file's part of the page reached " (PAGE_BUDGET / 1024) " KiB: its \
                        sessions below are listed without timelines or source lines, and those \
                        without findings are only counted."
                    }
                    "\n"
                }
                .render_to(out);
            }
            if !over_budget {
                unit.session(si).render_to(out);
            } else if mine.is_empty() {
                clean_unshown += 1;
            } else {
                unit.session_brief(si).render_to(out);
            }
        }
        if clean_unshown > 0 {
            html! {
                p.meta {
                    (clean_unshown) " more session" @if clean_unshown != 1 { "s" }
                    " without findings"
                }
                "\n"
            }
            .render_to(out);
        }
    }
}

impl Unit<'_> {
    /// Session `si`'s anchor.
    fn sid(si: usize) -> String {
        format!("u{UNIT}-s{si}")
    }

    /// The line that stands for session `si` when it is collapsed.
    fn head(&self, si: usize) -> Markup {
        match (self.analysis.sessions.get(si), self.summaries.get(si)) {
            (Some(s), Some(sum)) => summary_line(sum, s.title.as_deref()),
            _ => html! { span.sid { "outside any session" } },
        }
    }

    /// Session `si` in full: its findings' cards, its timeline, the stream's outcome.
    fn session(&self, si: usize) -> Markup {
        let sid = Self::sid(si);
        let mine = &self.findings_of[si];
        let shown = self.shown[si].as_ref();
        let outcome = (self.analysis.sessions.get(si).is_some())
            .then_some(self.analysis.stream.as_ref())
            .flatten();
        html! {
            details.session.(if mine.is_empty() { "clean" } else { "findings" }) #(sid)
                open[!mine.is_empty()] {
                summary { (self.head(si)) }
                "\n"
                @if !mine.is_empty() {
                    h3 { "Findings, root cause first" }
                    "\n"
                    ol.findings { "\n" (self.cards(si, &sid)) }
                    "\n"
                }
                @if let Some(s) = shown {
                    (Timeline {
                        shown: s,
                        sid: &sid,
                        findings: self.findings,
                        sources: self.sources,
                        lines: &self.lines,
                    })
                } @else if self.store && mine.is_empty() {
                    p.meta { "no findings: timeline not rendered" }
                    "\n"
                }
                @if let Some(f) = outcome {
                    p.outcome { "outcome: " (Text(&f.outcome.words())) }
                    "\n"
                }
            }
            "\n"
        }
    }

    /// Session `si` past the budget: its findings one line each.
    fn session_brief(&self, si: usize) -> Markup {
        let sid = Self::sid(si);
        html! {
            details.session.findings #(sid) open {
                summary { (self.head(si)) }
                "\n"
                ol.findings {
                    "\n"
                    @for &i in &self.findings_of[si] {
                        (self.finding_line(&sid, i, None))
                        (self.more_line(i))
                    }
                }
                "\n"
            }
            "\n"
        }
    }

    /// Session `si`'s findings: the first [`MAX_CARDS`] as cards, the others one line each.
    fn cards(&self, si: usize, sid: &str) -> Markup {
        let mine = &self.findings_of[si];
        let shown = self.shown[si].as_ref();
        // Where each finding is pinned (finding → entry).
        let pinned_at: HashMap<usize, usize> = shown
            .map(|s| {
                s.pins
                    .iter()
                    .enumerate()
                    .flat_map(|(e, p)| p.iter().map(move |&i| (i, e)))
                    .collect()
            })
            .unwrap_or_default();
        let at = |i: usize| {
            let (s, e) = (shown?, pinned_at.get(&i)?);
            Some((format!("{sid}-e{e}"), s.entries[*e].what.as_str()))
        };
        html! {
            @for (k, &i) in mine.iter().enumerate() {
                @if k == MAX_CARDS {
                    li.meta.more {
                        (mine.len() - MAX_CARDS)
                        " more findings, one line each (without their source lines):"
                    }
                    "\n"
                }
                @if k < MAX_CARDS {
                    (self.finding_card(sid, i, at(i)))
                } @else {
                    (self.finding_line(sid, i, at(i)))
                }
                (self.more_line(i))
            }
        }
    }

    /// After the last shown finding of a group of alike ones, how many more there are.
    fn more_line(&self, i: usize) -> Markup {
        let (Some(&more), Some(f)) = (self.more.get(&i), self.findings.get(i)) else {
            return Markup::default();
        };
        html! {
            li.meta.more {
                (group::more_words(more)) " ([" (f.rule) "], the same message but for ids and \
                numbers), not shown here (" code { "--format json" } " lists every one)"
            }
            "\n"
        }
    }

    /// A finding on one line: severity, rule, message, where; for a session's findings past
    /// [`MAX_CARDS`].
    fn finding_line(&self, sid: &str, i: usize, at: Option<(String, &str)>) -> Markup {
        let f = &self.findings[i];
        let sev = sev_class(f.severity);
        let line = self
            .records
            .get(i)
            .and_then(|r| Some((r.file.as_ref()?, r.line?)));
        html! {
            li class={ "finding brief sev-" (sev) } id={ (sid) "-f" (i) } {
                span.sev { (sev) } " " span.rule { "[" (f.rule) "]" } " "
                (f.message.first_line(240).for_html())
                @if let Some((file, line)) = line {
                    " " span.meta { "· " (file.for_html()) ":" (line) }
                }
                @if let Some((anchor, what)) = &at {
                    " "
                    span.meta { "· on the timeline: " a href={ "#" (anchor) } { (Text(what)) } }
                }
            }
            "\n"
        }
    }

    /// A finding in full: severity, rule, message, where it is (in its file, on the timeline),
    /// its annotated source lines, notes and help.
    fn finding_card(&self, sid: &str, i: usize, at: Option<(String, &str)>) -> Markup {
        let f = &self.findings[i];
        let sev = sev_class(f.severity);
        let location = self
            .records
            .get(i)
            .and_then(|r| match (&r.file, r.line, &r.locator) {
                (Some(file), Some(line), _) => Some(html! {
                    "at " (file.for_html()) ":" (line) ":" (r.column.unwrap_or(1))
                }),
                (Some(file), None, Some(loc)) => Some(html! {
                    "at " (file.for_html()) " › " (loc.for_html())
                }),
                _ => None,
            });
        html! {
            li class={ "finding sev-" (sev) } id={ (sid) "-f" (i) } {
                div.head {
                    span.sev { (sev) } " " span.rule { "[" (f.rule) "]" }
                    @if self.root == Some(i) { " " span.root { "root cause" } }
                    " " span.msg { (f.message.for_html()) }
                }
                "\n"
                @if at.is_some() || location.is_some() {
                    div.where {
                        @if let Some((anchor, what)) = &at {
                            "on the timeline: " a href={ "#" (anchor) } { (Text(what)) }
                        }
                        @if let Some(l) = &location {
                            @if at.is_some() { " · " }
                            (l)
                        }
                    }
                    "\n"
                }
                (snippets(self.sources, self.located, f))
                @for note in &f.notes {
                    div.note { b { "note:" } " " span { (note.for_html()) } }
                    "\n"
                }
                @if let Some(help) = &f.help {
                    div.help { b { "help:" } " " span { (help.for_html()) } }
                    "\n"
                }
            }
            "\n"
        }
    }
}

pub(super) fn summary_line(s: &SessionSummary, title: Option<&str>) -> Markup {
    let tools = if s.tools.is_empty() {
        InputText::new("no tools")
    } else {
        let words: Vec<String> = s
            .tools
            .iter()
            .map(|(st, n)| format!("{n} {}", st.unescaped()))
            .collect();
        InputText::new(words.join(", "))
    };
    let findings = Totals {
        errors: s.errors,
        warnings: s.warnings,
        infos: s.infos,
    };
    html! {
        span.sid { (s.id.for_html()) }
        @if let Some(t) = title {
            " " span.title { (Text(&first_line(t, 80))) }
        }
        @if let Some(r) = &s.replayed {
            " " span.meta { "(" (Text(r)) ")" }
        }
        " "
        span.meta {
            (s.messages) " messages · steps " (s.steps_started) "/" (s.steps_finished) " · "
            (tools.for_html())
        }
        " " span.totals.(totals_class(&findings)) { (Text(&findings.words())) }
    }
}

/// The annotated source lines of a finding: per source, the lines around each label with the
/// labelled bytes marked and the label's words under them.
fn snippets(sources: &SourceMap, located: &Located, f: &Finding) -> Markup {
    let mut groups: Vec<(crate::source::FileId, Vec<(&Label, bool)>)> = Vec::new();
    for (l, primary) in f
        .primary
        .iter()
        .map(|l| (l, true))
        .chain(f.related.iter().map(|l| (l, false)))
    {
        if located.get(&l.span).is_none() {
            continue;
        }
        match groups.iter_mut().find(|(file, _)| *file == l.span.file) {
            Some((_, v)) => v.push((l, primary)),
            None => groups.push((l.span.file, vec![(l, primary)])),
        }
    }
    html! {
        @for (file, labels) in &groups {
            @if let (Some(lines), Some(source)) = (located.lines(*file), sources.get(*file)) {
                (snippet(source, lines, located, labels))
            }
        }
    }
}

/// The lines of one source around `labels` (each with whether it is primary).
fn snippet(source: &Source, lines: &Lines, located: &Located, labels: &[(&Label, bool)]) -> Markup {
    // Each label: (resolved, label, primary), sorted by position.
    let mut ls: Vec<_> = labels
        .iter()
        .filter_map(|(l, p)| located.get(&l.span).map(|r| (r, *l, *p)))
        .collect();
    ls.sort_by_key(|(r, _, _)| (r.start.line, r.start.column));
    let mut ranges: Vec<(u64, u64)> = ls
        .iter()
        .map(|(r, l, _)| {
            let end = if r.display_end < l.span.end() {
                r.start.line
            } else {
                r.end.line
            };
            (r.start.line.saturating_sub(CONTEXT).max(1), end + CONTEXT)
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let width = merged.last().map_or(1, |m| m.1.to_string().len());
    let line = |n: u64| {
        let here: Vec<_> = ls.iter().filter(|(r, _, _)| r.start.line == n).collect();
        let marks: Vec<u64> = here.iter().map(|(_, l, _)| l.span.offset).collect();
        let column = here
            .iter()
            .map(|(r, l, _)| (l.span.offset, r.start.column))
            .min()
            .map_or(1, |(_, column)| column);
        let (start, dl) = lines.display(n, &marks, column)?;
        // Display byte ranges of the labels on this line.
        let marked: Vec<(usize, usize, bool, &InputText)> = here
            .iter()
            .map(|(r, l, p)| {
                let a = dl.at(l.span.offset.saturating_sub(start) as usize);
                let end = r.display_end.min(l.span.end());
                let b = dl.at(end.saturating_sub(start) as usize).max(a);
                (a, b, *p, &l.text)
            })
            .collect();
        Some(html! {
            span.ln { (format!("{n:>width$}")) } " │ " (marked_line(&dl.text, &marked, width))
        })
    };
    html! {
        div.src {
            div.src-name { (Text(&source.display_name())) }
            pre {
                @for (ri, (s, e)) in merged.iter().enumerate() {
                    @if ri > 0 { (format!("{:>width$} ┆\n", "")) }
                    @for n in *s..=*e {
                        (line(n).unwrap_or_default())
                    }
                }
            }
        }
        "\n"
    }
}

/// One source line with the labelled display bytes `marked` (`(start, end, primary, words)`)
/// marked, then a line per label with carets under its bytes and its words.
fn marked_line(text: &str, marked: &[(usize, usize, bool, &InputText)], width: usize) -> Markup {
    // The line in pieces, the labelled bytes marked (non-overlapping, first come first marked):
    // (text, primary when marked).
    let mut pieces: Vec<(&str, Option<bool>)> = Vec::new();
    let mut pos = 0;
    let mut sorted: Vec<_> = marked.iter().collect();
    sorted.sort_by_key(|m| m.0);
    for (a, b, p, _) in sorted {
        if *a < pos || *b <= *a {
            continue;
        }
        pieces.push((&text[pos..*a], None));
        pieces.push((&text[*a..*b], Some(*p)));
        pos = *b;
    }
    pieces.push((&text[pos..], None));
    html! {
        @for (piece, primary) in &pieces {
            @match primary {
                Some(p) => mark class=(if *p { "p" } else { "r" }) { (Text(piece)) },
                None => (Text(piece)),
            }
        }
        "\n"
        @for (a, b, p, words) in marked {
            @let col = text[..*a].chars().count();
            @let len = text[*a..*b].chars().count().max(1);
            (format!("{:>width$} · {}", "", " ".repeat(col)))
            span class=(if *p { "lp" } else { "lr" }) {
                ("^".repeat(len.min(80))) " " (words.for_html())
            }
            "\n"
        }
    }
}
