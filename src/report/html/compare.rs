//! The page of `replay --compare`: two processors' timelines side by side.

use std::fmt::Write as _;

use super::{CSP, STYLE, esc, sev_class, size_line};
use crate::checks::diagnostic::Severity;
use crate::session::first_line;

/// One side of a comparison row: what happened at this position under one processor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Side {
    /// A short name (`step 2`, `tool bash call_1`, `skipped`), plain text.
    pub what: String,
    /// Plain text.
    pub detail: String,
}

/// One row of a comparison: a position of the stream and what each processor made of it (`None`:
/// nothing there under that processor).
#[derive(Clone, Debug)]
pub struct CompareRow {
    /// Where: `event 5 (line 9)`, plain text.
    pub pos: String,
    pub sides: [Option<Side>; 2],
}

impl CompareRow {
    /// Whether the two processors differ at this row.
    pub fn differs(&self) -> bool {
        self.sides[0] != self.sides[1]
    }
}

/// One processor's run, for the head of a comparison.
#[derive(Clone, Debug)]
pub struct CompareRun {
    /// The processor's name.
    pub name: String,
    /// Its outcome in words.
    pub outcome: String,
    /// Its findings: severity, rule, message (plain text).
    pub findings: Vec<(Severity, &'static str, String)>,
}

/// Two replays of one capture, side by side.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The capture, as shown.
    pub file: String,
    /// What the capture is (`openai-chat · 12 events`), plain text.
    pub about: String,
    pub runs: [CompareRun; 2],
    /// Aligned rows, in stream order.
    pub rows: Vec<CompareRow>,
}

/// Rows of a comparison rendered at most; past it, identical rows far from a difference are
/// elided first, then the differences past the cap.
pub const MAX_COMPARE_ROWS: usize = 2000;
/// Identical rows kept around each difference.
const COMPARE_CONTEXT: usize = 3;

/// Which comparison rows to render: all up to `cap`; otherwise the first and last ones and those
/// near a difference, in order, up to `cap`.
fn keep_rows(rows: &[CompareRow], cap: usize) -> Vec<bool> {
    if rows.len() <= cap {
        return vec![true; rows.len()];
    }
    let mut kept = vec![false; rows.len()];
    for k in kept.iter_mut().take(20) {
        *k = true;
    }
    for k in kept.iter_mut().rev().take(5) {
        *k = true;
    }
    for (i, r) in rows.iter().enumerate() {
        if r.differs() {
            let lo = i.saturating_sub(COMPARE_CONTEXT);
            let hi = (i + COMPARE_CONTEXT + 1).min(rows.len());
            for k in &mut kept[lo..hi] {
                *k = true;
            }
        }
    }
    let mut n = 0;
    for k in &mut kept {
        if *k {
            n += 1;
            if n > cap {
                *k = false;
            }
        }
    }
    kept
}

fn side_cell(out: &mut String, side: Option<&Side>) {
    match side {
        Some(s) => {
            let _ = write!(
                out,
                "<td class=\"run\"><span class=\"what\">{}</span> <span class=\"detail\">{}</span></td>",
                esc(&s.what),
                esc(&s.detail)
            );
        }
        None => out.push_str("<td class=\"run none\">—</td>"),
    }
}

/// The page of `rewind replay --compare P1 P2 --format html`: per replayed unit, the two
/// processors' timelines side by side, one row per position, the rows where they differ
/// highlighted and the first of them anchored (`#diverge` for the page's first, `#cN-diverge`
/// for each unit's) and focused when the page opens. Self-contained like the report.
pub fn compare_page(units: &[Comparison]) -> String {
    let mut out = String::new();
    let names = |i: usize| {
        units
            .first()
            .map(|c| c.runs[i].name.clone())
            .unwrap_or_default()
    };
    let (na, nb) = (esc(&names(0)), esc(&names(1)));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>rewind replay: {na} vs {nb}</title>\n<style>{STYLE}{COMPARE_STYLE}</style>\n</head>\n<body>\n<header><h1>rewind replay: <span class=\"proc\">{na}</span> vs <span class=\"proc\">{nb}</span></h1><p class=\"meta\">rewind {} · the two processors' timelines side by side; rows where they differ are highlighted</p></header>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
    );
    let mut first_seen = false;
    for (n, c) in units.iter().enumerate() {
        compare_section(&mut out, c, n + 1, &mut first_seen);
    }
    if units.is_empty() {
        out.push_str("<p class=\"meta\">nothing was replayed</p>\n");
    }
    out.push_str("</main>\n");
    let tail = "</body>\n</html>\n";
    let base = (out.len() + tail.len()) as u64;
    let mut size = base;
    for _ in 0..3 {
        size = base + size_line(size).len() as u64;
    }
    out.push_str(&size_line(size));
    out.push_str(tail);
    out
}

/// One unit of a comparison page; `first_seen` says whether an earlier unit already holds the
/// page's first divergence.
fn compare_section(out: &mut String, c: &Comparison, n: usize, first_seen: &mut bool) {
    let [a, b] = &c.runs;
    let _ = writeln!(
        out,
        "<section class=\"unit compare\" id=\"c{n}\">\n<h2><span class=\"file\">{}</span> <span class=\"fmt\">{}</span></h2>",
        esc(&c.file),
        esc(&c.about),
    );
    let first = c.rows.iter().position(CompareRow::differs);
    let differing = c.rows.iter().filter(|r| r.differs()).count();
    let outcomes_differ = a.outcome != b.outcome;
    // The page's first divergence is the anchor `#diverge`, focused (so scrolled to) on opening.
    let page_first = first.is_some() && !*first_seen;
    if first.is_some() {
        *first_seen = true;
    }
    match first {
        Some(i) => {
            let _ = writeln!(
                out,
                "<p class=\"verdict diverge\">The processors diverge first at <a href=\"#c{n}-diverge\">{}</a>; {} of {} rows differ.</p>",
                esc(&c.rows[i].pos),
                differing,
                c.rows.len()
            );
        }
        None if outcomes_differ => {
            let _ = writeln!(
                out,
                "<p class=\"verdict diverge\" id=\"c{n}-no-divergence\">The timelines agree at all {} rows, but the outcomes differ.</p>",
                c.rows.len()
            );
        }
        None if c.rows.is_empty() => {
            let _ = writeln!(
                out,
                "<p class=\"verdict same\" id=\"c{n}-no-divergence\">The processors agree: neither put anything on the timeline.</p>"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<p class=\"verdict same\" id=\"c{n}-no-divergence\">The processors agree at every position: {} rows identical.</p>",
                c.rows.len()
            );
        }
    }
    // The runs: outcome and findings of each.
    out.push_str("<table class=\"runs\"><tr><th></th>");
    for r in &c.runs {
        let _ = write!(out, "<th class=\"proc\">{}</th>", esc(&r.name));
    }
    let _ = write!(
        out,
        "</tr>\n<tr class=\"{}\"><th>outcome</th>",
        if outcomes_differ { "diff" } else { "same" }
    );
    for r in &c.runs {
        let _ = write!(out, "<td>{}</td>", esc(&r.outcome));
    }
    let rule_set = |r: &CompareRun| {
        let mut v: Vec<(&str, Severity)> = r.findings.iter().map(|f| (f.1, f.0)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let _ = write!(
        out,
        "</tr>\n<tr class=\"{}\"><th>findings</th>",
        if rule_set(a) != rule_set(b) {
            "diff"
        } else {
            "same"
        }
    );
    for r in &c.runs {
        if r.findings.is_empty() {
            out.push_str("<td class=\"meta\">no findings</td>");
            continue;
        }
        out.push_str("<td><ul class=\"compact\">");
        for (sev, rule, msg) in &r.findings {
            let sev = sev_class(*sev);
            let _ = write!(
                out,
                "<li class=\"sev-{sev}\"><span class=\"sev\">{sev}</span> <span class=\"rule\">[{rule}]</span> {}</li>",
                esc(&first_line(msg, 240))
            );
        }
        out.push_str("</ul></td>");
    }
    out.push_str("</tr>\n</table>\n");
    if c.rows.is_empty() {
        out.push_str("</section>\n");
        return;
    }
    // The timelines, aligned.
    let _ = write!(
        out,
        "<table class=\"compare\">\n<thead><tr><th class=\"pos\">position</th><th class=\"proc\">{}</th><th class=\"proc\">{}</th></tr></thead>\n<tbody>\n",
        esc(&a.name),
        esc(&b.name)
    );
    let kept = keep_rows(&c.rows, MAX_COMPARE_ROWS);
    let mut elided = 0usize;
    let mut elided_diff = 0usize;
    let flush = |out: &mut String, elided: &mut usize, elided_diff: &mut usize| {
        if *elided == 0 {
            return;
        }
        let _ = writeln!(
            out,
            "<tr class=\"elided\"><td colspan=\"3\">… {} rows elided{}</td></tr>",
            *elided,
            match *elided_diff {
                0 => " (identical under both)".to_owned(),
                n => format!(" ({n} of them differ)"),
            }
        );
        *elided = 0;
        *elided_diff = 0;
    };
    for (i, r) in c.rows.iter().enumerate() {
        if !kept[i] {
            elided += 1;
            if r.differs() {
                elided_diff += 1;
            }
            continue;
        }
        flush(out, &mut elided, &mut elided_diff);
        let is_first = Some(i) == first;
        let class = match (r.differs(), is_first) {
            (true, true) => "diff first",
            (true, false) => "diff",
            _ => "same",
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\" id=\"c{n}-r{i}\"><td class=\"pos\">{}",
            esc(&r.pos)
        );
        if is_first {
            if page_first {
                out.push_str(" <a class=\"first-mark\" id=\"diverge\" href=\"#diverge\" autofocus>first divergence</a>");
            }
            let _ = write!(out, "<span id=\"c{n}-diverge\" class=\"anchor\"></span>");
        }
        out.push_str("</td>");
        side_cell(out, r.sides[0].as_ref());
        side_cell(out, r.sides[1].as_ref());
        out.push_str("</tr>\n");
    }
    flush(out, &mut elided, &mut elided_diff);
    out.push_str("</tbody>\n</table>\n</section>\n");
}

const COMPARE_STYLE: &str = r#"
.proc{font-family:ui-monospace,monospace}
.verdict{font-size:1.1em;font-weight:600;padding:.4em .8em;border-radius:4px}
.verdict.diverge{background:#ffebee;border-left:5px solid var(--err)}.verdict.same{background:#e8f5e9;border-left:5px solid var(--ok)}
table.runs td,table.runs th{vertical-align:top}table.runs tr.diff td{background:#fff3e0}
table.compare{width:100%;table-layout:fixed}table.compare th.pos,table.compare td.pos{width:13em}
table.compare td{vertical-align:top;overflow-wrap:anywhere}
table.compare td.pos{color:#999;font-family:ui-monospace,monospace;font-size:.8em}
tr.diff td.run{background:#fff3e0}tr.diff td.run.none{background:#f3f3f3}
tr.diff.first td{border-top:3px solid var(--err)}tr.diff.first td.run{background:#ffebee}
.first-mark{display:inline-block;color:#fff;background:var(--err);padding:0 .4em;border-radius:3px;font-weight:600;text-decoration:none}
td.none{color:var(--muted);text-align:center}tr.elided td{color:var(--muted);font-style:italic}
:target{scroll-margin-top:4em}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pos: usize, a: &str, b: Option<&str>) -> CompareRow {
        let side = |d: &str| Side {
            what: "text".into(),
            detail: d.into(),
        };
        CompareRow {
            pos: format!("event {pos}"),
            sides: [Some(side(a)), b.map(side)],
        }
    }

    #[test]
    fn a_long_comparison_keeps_the_rows_near_differences() {
        let rows: Vec<CompareRow> = (0..10_000)
            .map(|i| {
                if i == 5000 {
                    row(i, "x", Some("y"))
                } else {
                    row(i, "same", Some("same"))
                }
            })
            .collect();
        let kept = keep_rows(&rows, 2000);
        assert!(kept[0] && kept[9999]);
        assert!(kept[4997] && kept[5000] && kept[5003]);
        assert!(!kept[4996] && !kept[5004] && !kept[2000]);
        assert!(kept.iter().filter(|k| **k).count() <= 2000);
        // Within the cap, every row.
        assert!(keep_rows(&rows[..100], 2000).iter().all(|k| *k));
    }

    #[test]
    fn a_comparison_escapes_the_input_and_anchors_the_first_difference() {
        let run = |name: &str| CompareRun {
            name: name.into(),
            outcome: "completed".into(),
            findings: Vec::new(),
        };
        let c = Comparison {
            file: "<b>.sse".into(),
            about: "chat".into(),
            runs: [run("p1"), run("p2")],
            rows: vec![
                row(
                    1,
                    "<script>alert(1)</script>",
                    Some("<script>alert(1)</script>"),
                ),
                row(2, "a", None),
                row(3, "b", Some("c")),
            ],
        };
        let page = compare_page(std::slice::from_ref(&c));
        assert!(!page.contains("<script") && !page.contains("<b>"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(
            page.matches("<tr class=\"diff first\" id=\"c1-r1\">")
                .count(),
            1
        );
        assert_eq!(page.matches("<tr class=\"diff\"").count(), 1);
        assert_eq!(page.matches(" id=\"diverge\"").count(), 1);
        assert!(page.contains("<td class=\"run none\">—</td>"));
        let size = page.len().to_string();
        assert!(page.contains(&format!("page size: {size} bytes")));
        // Of two units, only the page's first divergence is focused.
        let two = compare_page(&[c.clone(), c]);
        assert_eq!(two.matches(" autofocus").count(), 1);
        assert!(two.contains("id=\"c2-diverge\""));
    }
}
