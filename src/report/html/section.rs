//! A unit's section of the page: its sessions, their timelines and the findings' cards with
//! their annotated source lines.

use std::collections::HashMap;
use std::fmt::Write as _;

use maud::Render;

use super::timeline::{Shown, Timeline, Tools, keep, pins, timeline};
use super::{
    MAX_CARDS, MAX_CLEAN_ENTRIES, MAX_ENTRIES, PAGE_BUDGET, UNIT, esc, esc_into, sev_class,
};
use crate::checks::diagnostic::{Finding, Severity};
use crate::report::record::FindingRecord;
use crate::report::snippet::CONTEXT;
use crate::report::{Located, SessionSummary, Totals, locate_spans, root_cause_order, summarize};
use crate::session::{Analysis, first_line};
use crate::source::{SourceKind, SourceMap, Span};

/// The unit's section of the page.
pub fn section(
    sources: &SourceMap,
    analysis: &Analysis,
    findings: &[Finding],
    records: &[FindingRecord],
    located: &Located,
) -> String {
    let summaries = summarize(analysis, findings);
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
    // session: index into sessions, the last slot for what belongs to none. One pass each, so a
    // unit of many sessions and many events costs no more than their sum.
    let n = analysis.sessions.len();
    let index =
        crate::first_of((analysis.sessions.iter().enumerate()).map(|(si, s)| (s.id.as_str(), si)));
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
    let tools = Tools::of(analysis);
    let mut events_of: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (k, e) in analysis.events.iter().enumerate() {
        events_of[slot(e.session.as_ref())].push(k);
    }

    // Timelines to render, with their findings pinned.
    let mut shown: Vec<Option<Shown>> = Vec::new();
    for si in 0..=n {
        let session = analysis.sessions.get(si).map(|s| s.id.as_str());
        let mine = &findings_of[si];
        let has_findings = !mine.is_empty();
        if store && !has_findings {
            shown.push(None);
            continue;
        }
        // The first session of an id holds its timeline, as `Analysis::session` finds it.
        let stored = session
            .and_then(|id| index.get(id))
            .and_then(|&k| analysis.sessions.get(k));
        let entries = timeline(analysis, &tools, stored, &events_of[si]);
        if entries.is_empty() {
            shown.push(None);
            continue;
        }
        let mut pinned_to: Vec<Vec<usize>> = entries.iter().map(|_| Vec::new()).collect();
        let mine_findings: Vec<&Finding> = mine.iter().map(|&i| &findings[i]).collect();
        for (&i, at) in mine.iter().zip(pins(&mine_findings, &entries)) {
            if let Some(at) = at {
                pinned_to[at].push(i);
            }
        }
        let pins = pinned_to;
        let pinned: Vec<bool> = pins.iter().map(|p| !p.is_empty()).collect();
        let cap = if has_findings {
            MAX_ENTRIES
        } else {
            MAX_CLEAN_ENTRIES
        };
        let kept = keep(&entries, &pinned, cap);
        shown.push(Some(Shown {
            entries,
            kept,
            pins,
            findings: has_findings,
        }));
    }
    // Line numbers of the rendered entries of sessions with findings, one pass per source (a
    // clean session's entries go without: no pass over a large input for them).
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
    let lines = locate_spans(sources, spans.into_iter(), true);

    let file = sources
        .get(analysis.file)
        .map(|s| crate::report::record::display_path(&s.path))
        .unwrap_or_default();
    let totals = Totals::of(records);
    let mut out = String::new();
    let _ = write!(
        out,
        "<section class=\"unit\" id=\"u{UNIT}\">\n<h2><span class=\"file\">{}</span> <span class=\"fmt\">{}</span> <span class=\"totals {}\">{}</span></h2>\n",
        esc(&file),
        esc(analysis.format.describe()),
        if totals.errors > 0 {
            "error"
        } else if totals.warnings > 0 {
            "warning"
        } else {
            "clean"
        },
        esc(&totals.words()),
    );
    if let Some(f) = analysis.stream.as_ref() {
        let _ = writeln!(
            out,
            "<p class=\"meta\">{} · {} events · processor {} · outcome: {}</p>",
            esc(&f.protocol),
            f.events,
            esc(&f.profile),
            esc(&f.outcome.words())
        );
    }
    if analysis.sessions.is_empty() {
        out.push_str("<p class=\"meta\">no session in this input: only its records and log entries were checked</p>\n");
    }
    // Past the page's budget, the unit's remaining sessions go without timelines or source
    // lines: those with findings list them one line each, the others are only counted (as the
    // units past the budget are; a log of many sessions is one unit).
    let mut over_budget = false;
    let mut clean_unshown = 0;
    for (si, shown) in shown.iter().enumerate() {
        let session = analysis.sessions.get(si);
        let mine = &findings_of[si];
        if session.is_none() && mine.is_empty() && shown.is_none() {
            continue;
        }
        let sid = format!("u{UNIT}-s{si}");
        if !over_budget && out.len() as u64 >= PAGE_BUDGET {
            over_budget = true;
            let _ = writeln!(
                out,
                "<p class=\"budget\">This file's part of the page reached {} KiB: its sessions below are listed without timelines or source lines, and those without findings are only counted.</p>",
                PAGE_BUDGET / 1024
            );
        }
        let head = match (session, summaries.get(si)) {
            (Some(s), Some(sum)) => summary_line(sum, s.title.as_deref()),
            _ => "<span class=\"sid\">outside any session</span>".to_owned(),
        };
        if over_budget {
            if mine.is_empty() {
                clean_unshown += 1;
                continue;
            }
            let _ = write!(
                out,
                "<details class=\"session findings\" id=\"{sid}\" open><summary>{head}</summary>\n<ol class=\"findings\">\n"
            );
            for &i in mine {
                finding_line(&mut out, &sid, &findings[i], records.get(i), i, None);
            }
            out.push_str("</ol>\n</details>\n");
            continue;
        }
        if mine.is_empty() {
            let _ = writeln!(
                out,
                "<details class=\"session clean\" id=\"{sid}\"><summary>{head}</summary>"
            );
        } else {
            let _ = write!(
                out,
                "<details class=\"session findings\" id=\"{sid}\" open><summary>{head}</summary>\n<h3>Findings, root cause first</h3>\n<ol class=\"findings\">\n"
            );
            // Where each finding is pinned (finding → entry).
            let pinned_at: HashMap<usize, usize> = shown
                .as_ref()
                .map(|s| {
                    s.pins
                        .iter()
                        .enumerate()
                        .flat_map(|(e, p)| p.iter().map(move |&i| (i, e)))
                        .collect()
                })
                .unwrap_or_default();
            for (k, &i) in mine.iter().enumerate() {
                let at = shown.as_ref().and_then(|s| {
                    pinned_at
                        .get(&i)
                        .map(|&e| (format!("{sid}-e{e}"), s.entries[e].what.as_str()))
                });
                if k == MAX_CARDS {
                    let _ = writeln!(
                        out,
                        "<li class=\"meta more\">{} more findings, one line each (without their source lines):</li>",
                        mine.len() - MAX_CARDS
                    );
                }
                if k < MAX_CARDS {
                    finding_card(
                        &mut out,
                        &sid,
                        sources,
                        located,
                        &findings[i],
                        records.get(i),
                        i,
                        root == Some(i),
                        at,
                    );
                } else {
                    finding_line(&mut out, &sid, &findings[i], records.get(i), i, at);
                }
            }
            out.push_str("</ol>\n");
        }
        match shown {
            Some(s) => Timeline {
                shown: s,
                sid: &sid,
                findings,
                sources,
                lines: &lines,
            }
            .render_to(&mut out),
            None if store && mine.is_empty() => {
                out.push_str("<p class=\"meta\">no findings: timeline not rendered</p>\n")
            }
            None => {}
        }
        if let Some(f) = analysis.stream.as_ref()
            && session.is_some()
        {
            let _ = writeln!(
                out,
                "<p class=\"outcome\">outcome: {}</p>",
                esc(&f.outcome.words())
            );
        }
        out.push_str("</details>\n");
    }
    if clean_unshown > 0 {
        let _ = writeln!(
            out,
            "<p class=\"meta\">{clean_unshown} more session{} without findings</p>",
            if clean_unshown == 1 { "" } else { "s" }
        );
    }
    out.push_str("</section>\n");

    out
}

pub(super) fn summary_line(s: &SessionSummary, title: Option<&str>) -> String {
    let tools = if s.tools.is_empty() {
        "no tools".to_owned()
    } else {
        s.tools
            .iter()
            .map(|(st, n)| format!("{n} {st}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let findings = Totals {
        errors: s.errors,
        warnings: s.warnings,
        infos: s.infos,
    };
    let class = if s.errors > 0 {
        "error"
    } else if s.warnings > 0 {
        "warning"
    } else {
        "clean"
    };
    let mut out = format!("<span class=\"sid\">{}</span>", esc(&s.id));
    if let Some(t) = title {
        let _ = write!(
            out,
            " <span class=\"title\">{}</span>",
            esc(&first_line(t, 80))
        );
    }
    if let Some(r) = &s.replayed {
        let _ = write!(out, " <span class=\"meta\">({})</span>", esc(r));
    }
    let _ = write!(
        out,
        " <span class=\"meta\">{} messages · steps {}/{} · {}</span> <span class=\"totals {class}\">{}</span>",
        s.messages,
        s.steps_started,
        s.steps_finished,
        esc(&tools),
        esc(&findings.words())
    );
    out
}

/// A finding on one line: severity, rule, message, where; for a session's findings past
/// [`MAX_CARDS`].
fn finding_line(
    out: &mut String,
    sid: &str,
    f: &Finding,
    record: Option<&FindingRecord>,
    i: usize,
    at: Option<(String, &str)>,
) {
    let sev = sev_class(f.severity);
    let _ = write!(
        out,
        "<li class=\"finding brief sev-{sev}\" id=\"{sid}-f{i}\"><span class=\"sev\">{sev}</span> <span class=\"rule\">[{}]</span> {}",
        f.rule,
        esc(&first_line(&f.message, 240))
    );
    if let Some(r) = record
        && let (Some(file), Some(line)) = (&r.file, r.line)
    {
        let _ = write!(out, " <span class=\"meta\">· {}:{line}</span>", esc(file));
    }
    if let Some((anchor, what)) = &at {
        let _ = write!(
            out,
            " <span class=\"meta\">· on the timeline: <a href=\"#{anchor}\">{}</a></span>",
            esc(what)
        );
    }
    out.push_str("</li>\n");
}

#[allow(clippy::too_many_arguments)]
fn finding_card(
    out: &mut String,
    sid: &str,
    sources: &SourceMap,
    located: &Located,
    f: &Finding,
    record: Option<&FindingRecord>,
    i: usize,
    root: bool,
    at: Option<(String, &str)>,
) {
    let sev = sev_class(f.severity);
    let _ = writeln!(
        out,
        "<li class=\"finding sev-{sev}\" id=\"{sid}-f{i}\"><div class=\"head\"><span class=\"sev\">{sev}</span> <span class=\"rule\">[{}]</span>{} <span class=\"msg\">{}</span></div>",
        f.rule,
        if root {
            " <span class=\"root\">root cause</span>"
        } else {
            ""
        },
        esc(&f.message)
    );
    let mut meta = Vec::new();
    if let Some((anchor, what)) = &at {
        meta.push(format!(
            "on the timeline: <a href=\"#{anchor}\">{}</a>",
            esc(what)
        ));
    }
    if let Some(r) = record {
        match (&r.file, r.line, &r.locator) {
            (Some(file), Some(line), _) => {
                meta.push(format!("at {}:{line}:{}", esc(file), r.column.unwrap_or(1)))
            }
            (Some(file), None, Some(loc)) => meta.push(format!("at {} › {}", esc(file), esc(loc))),
            _ => {}
        }
    }
    if !meta.is_empty() {
        let _ = writeln!(out, "<div class=\"where\">{}</div>", meta.join(" · "));
    }
    snippets(out, sources, located, f);
    for note in &f.notes {
        let _ = writeln!(
            out,
            "<div class=\"note\"><b>note:</b> <span>{}</span></div>",
            esc(note)
        );
    }
    if let Some(help) = &f.help {
        let _ = writeln!(
            out,
            "<div class=\"help\"><b>help:</b> <span>{}</span></div>",
            esc(help)
        );
    }
    out.push_str("</li>\n");
}

/// The annotated source lines of a finding: per source, the lines around each label with the
/// labelled bytes marked and the label's words under them.
fn snippets(out: &mut String, sources: &SourceMap, located: &Located, f: &Finding) {
    let mut groups: Vec<(
        crate::source::FileId,
        Vec<(&crate::checks::diagnostic::Label, bool)>,
    )> = Vec::new();
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
    for (file, labels) in groups {
        let (Some(lines), Some(source)) = (located.lines(file), sources.get(file)) else {
            continue;
        };
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
        let _ = write!(
            out,
            "<div class=\"src\"><div class=\"src-name\">{}</div><pre>",
            esc(&source.display_name())
        );
        for (ri, (s, e)) in merged.iter().enumerate() {
            if ri > 0 {
                let _ = writeln!(out, "{:>width$} ┆", "");
            }
            for n in *s..=*e {
                let here: Vec<_> = ls.iter().filter(|(r, _, _)| r.start.line == n).collect();
                let marks: Vec<u64> = here.iter().map(|(_, l, _)| l.span.offset).collect();
                let column = here
                    .iter()
                    .map(|(r, l, _)| (l.span.offset, r.start.column))
                    .min()
                    .map_or(1, |(_, column)| column);
                let Some((start, dl)) = lines.display(n, &marks, column) else {
                    continue;
                };
                // Display byte ranges of the labels on this line.
                let marked: Vec<(usize, usize, bool, &str)> = here
                    .iter()
                    .map(|(r, l, p)| {
                        let a = dl.at(l.span.offset.saturating_sub(start) as usize);
                        let end = r.display_end.min(l.span.end());
                        let b = dl.at(end.saturating_sub(start) as usize).max(a);
                        (a, b, *p, l.text.as_str())
                    })
                    .collect();
                let _ = write!(out, "<span class=\"ln\">{n:>width$}</span> │ ");
                marked_line(out, &dl.text, &marked, width);
            }
        }
        out.push_str("</pre></div>\n");
    }
}

/// One source line with the labelled display bytes `marked` (`(start, end, primary, words)`)
/// marked, then a line per label with carets under its bytes and its words.
fn marked_line(out: &mut String, text: &str, marked: &[(usize, usize, bool, &str)], width: usize) {
    // Mark the labelled bytes (non-overlapping, first come first marked).
    let mut pos = 0;
    let mut sorted: Vec<_> = marked.iter().collect();
    sorted.sort_by_key(|m| m.0);
    for (a, b, p, _) in sorted {
        if *a < pos || *b <= *a {
            continue;
        }
        esc_into(out, &text[pos..*a]);
        let _ = write!(out, "<mark class=\"{}\">", if *p { "p" } else { "r" });
        esc_into(out, &text[*a..*b]);
        out.push_str("</mark>");
        pos = *b;
    }
    esc_into(out, &text[pos..]);
    out.push('\n');
    for (a, b, p, words) in marked {
        let col = text[..*a].chars().count();
        let len = text[*a..*b].chars().count().max(1);
        let _ = writeln!(
            out,
            "{:>width$} · {}<span class=\"{}\">{} {}</span>",
            "",
            " ".repeat(col),
            if *p { "lp" } else { "lr" },
            "^".repeat(len.min(80)),
            esc(words)
        );
    }
}
