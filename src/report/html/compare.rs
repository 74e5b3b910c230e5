//! The page of `replay --compare`: two processors' timelines side by side.

use maud::{Markup, Render, html};

use super::{MAIN_END, PAGE_END, STYLE, Text, page_start, sev_class, size_line_for};
use crate::checks::diagnostic::Severity;
use crate::report::input_text::InputText;

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
    /// Its findings: severity, rule, message.
    pub findings: Vec<(Severity, &'static str, InputText)>,
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

fn side_cell(side: Option<&Side>) -> Markup {
    html! {
        @match side {
            Some(s) => td.run {
                span.what { (Text(&s.what)) } " " span.detail { (Text(&s.detail)) }
            },
            None => td.run.none { "—" },
        }
    }
}

/// The page of `rewind replay --compare P1 P2 --format html`: per replayed unit, the two
/// processors' timelines side by side, one row per position, the rows where they differ
/// highlighted and the first of them anchored (`#diverge` for the page's first, `#cN-diverge`
/// for each unit's) and focused when the page opens. Self-contained like the report.
pub fn compare_page(units: &[Comparison]) -> String {
    let name = |i: usize| Text(units.first().map_or("", |c| c.runs[i].name.as_str()));
    let (a, b) = (name(0), name(1));
    let mut out = page_start(
        html! { "rewind replay: " (a) " vs " (b) },
        &[STYLE, COMPARE_STYLE],
        html! { "rewind replay: " span.proc { (a) } " vs " span.proc { (b) } },
        "the two processors' timelines side by side; rows where they differ are highlighted",
    );
    let mut first_seen = false;
    for (n, c) in units.iter().enumerate() {
        compare_section(c, n + 1, &mut first_seen).render_to(&mut out);
    }
    if units.is_empty() {
        html! { p.meta { "nothing was replayed" } "\n" }.render_to(&mut out);
    }
    out.push_str(MAIN_END);
    size_line_for((out.len() + PAGE_END.len()) as u64).render_to(&mut out);
    out.push_str(PAGE_END);
    out
}

/// One unit of a comparison page; `first_seen` says whether an earlier unit already holds the
/// page's first divergence.
fn compare_section(c: &Comparison, n: usize, first_seen: &mut bool) -> Markup {
    let first = c.rows.iter().position(CompareRow::differs);
    // The page's first divergence is the anchor `#diverge`, focused (so scrolled to) on opening.
    let page_first = first.is_some() && !*first_seen;
    if first.is_some() {
        *first_seen = true;
    }
    html! {
        section.unit.compare #{ "c" (n) } {
            "\n"
            h2 { span.file { (Text(&c.file)) } " " span.fmt { (Text(&c.about)) } }
            "\n"
            (verdict(c, n, first))
            (runs_table(c))
            @if !c.rows.is_empty() {
                (rows_table(c, n, first, page_first))
            }
        }
        "\n"
    }
}

/// Where the processors first diverge, or that they do not.
fn verdict(c: &Comparison, n: usize, first: Option<usize>) -> Markup {
    let rows = c.rows.len();
    let differing = c.rows.iter().filter(|r| r.differs()).count();
    let agree = format!("c{n}-no-divergence");
    html! {
        @if let Some(i) = first {
            p.verdict.diverge {
                "The processors diverge first at "
                a href={ "#c" (n) "-diverge" } { (Text(&c.rows[i].pos)) }
                "; " (differing) " of " (rows) " rows differ."
            }
        } @else if c.runs[0].outcome != c.runs[1].outcome {
            p.verdict.diverge #(agree) {
                "The timelines agree at all " (rows) " rows, but the outcomes differ."
            }
        } @else if rows == 0 {
            p.verdict.same #(agree) {
                "The processors agree: neither put anything on the timeline."
            }
        } @else {
            p.verdict.same #(agree) {
                "The processors agree at every position: " (rows) " rows identical."
            }
        }
        "\n"
    }
}

/// The runs: outcome and findings of each.
fn runs_table(c: &Comparison) -> Markup {
    let [a, b] = &c.runs;
    let rule_set = |r: &CompareRun| {
        let mut v: Vec<(&str, Severity)> = r.findings.iter().map(|f| (f.1, f.0)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let class = |differ: bool| if differ { "diff" } else { "same" };
    html! {
        table.runs {
            tr { th {} @for r in &c.runs { th.proc { (Text(&r.name)) } } }
            "\n"
            tr class=(class(a.outcome != b.outcome)) {
                th { "outcome" }
                @for r in &c.runs { td { (Text(&r.outcome)) } }
            }
            "\n"
            tr class=(class(rule_set(a) != rule_set(b))) {
                th { "findings" }
                @for r in &c.runs { (findings_cell(r)) }
            }
            "\n"
        }
        "\n"
    }
}

fn findings_cell(r: &CompareRun) -> Markup {
    html! {
        @if r.findings.is_empty() {
            td.meta { "no findings" }
        } @else {
            td { ul.compact {
                @for (sev, rule, msg) in &r.findings {
                    @let sev = sev_class(*sev);
                    li class={ "sev-" (sev) } {
                        span.sev { (sev) } " " span.rule { "[" (rule) "]" } " "
                        (msg.first_line(240).for_html())
                    }
                }
            } }
        }
    }
}

/// A line of the aligned timelines: a row, or rows left out.
enum Line {
    Row(usize),
    Elided { rows: usize, differ: usize },
}

/// The lines of the aligned timelines: the kept rows, and between them how many were left out.
fn lines(rows: &[CompareRow], kept: &[bool]) -> Vec<Line> {
    let mut out = Vec::new();
    let (mut elided, mut differ) = (0, 0);
    for (i, r) in rows.iter().enumerate() {
        if !kept[i] {
            elided += 1;
            differ += usize::from(r.differs());
            continue;
        }
        if elided > 0 {
            out.push(Line::Elided {
                rows: elided,
                differ,
            });
            (elided, differ) = (0, 0);
        }
        out.push(Line::Row(i));
    }
    if elided > 0 {
        out.push(Line::Elided {
            rows: elided,
            differ,
        });
    }
    out
}

/// The timelines, aligned.
fn rows_table(c: &Comparison, n: usize, first: Option<usize>, page_first: bool) -> Markup {
    let kept = keep_rows(&c.rows, MAX_COMPARE_ROWS);
    html! {
        table.compare {
            "\n"
            thead { tr {
                th.pos { "position" }
                @for r in &c.runs { th.proc { (Text(&r.name)) } }
            } }
            "\n"
            tbody {
                "\n"
                @for line in lines(&c.rows, &kept) {
                    @match line {
                        Line::Row(i) => (row(c, n, i, first == Some(i), page_first)),
                        Line::Elided { rows, differ } => {
                            tr.elided { td colspan="3" {
                                "… " (rows) " rows elided"
                                @if differ == 0 {
                                    " (identical under both)"
                                } @else {
                                    " (" (differ) " of them differ)"
                                }
                            } }
                            "\n"
                        }
                    }
                }
            }
            "\n"
        }
        "\n"
    }
}

/// Row `i` of the aligned timelines; the unit's first divergence is anchored, and the page's
/// first also marked.
fn row(c: &Comparison, n: usize, i: usize, is_first: bool, page_first: bool) -> Markup {
    let r = &c.rows[i];
    let class = match (r.differs(), is_first) {
        (true, true) => "diff first",
        (true, false) => "diff",
        _ => "same",
    };
    html! {
        tr class=(class) id={ "c" (n) "-r" (i) } {
            td.pos {
                (Text(&r.pos))
                @if is_first {
                    @if page_first {
                        " "
                        a.first-mark #diverge href="#diverge" autofocus { "first divergence" }
                    }
                    span id={ "c" (n) "-diverge" } class="anchor" {}
                }
            }
            (side_cell(r.sides[0].as_ref()))
            (side_cell(r.sides[1].as_ref()))
        }
        "\n"
    }
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
