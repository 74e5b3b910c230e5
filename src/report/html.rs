//! The HTML printer: one self-contained page (inline CSS, no script, no network) that opens from
//! disk. Per unit and per session: a timeline — steps as blocks, each tool call with its state
//! transitions, text and reasoning shortened, retries, the stream events the processor skipped or
//! died of, session errors — with every finding pinned to the entry it is about, and the findings
//! themselves (root cause first) with their annotated source lines, notes and help.
//!
//! Everything that comes from the input is escaped ([`esc`]); the page carries a Content Security
//! Policy that allows no script at all and no network access. Sessions without findings are one
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use super::record::FindingRecord;
use super::snippet::{CONTEXT, push_escaped};
use super::{
    Located, Printer, RunSummary, SessionSummary, Totals, UnitOutput, by_rule, locate_spans,
    root_cause_order, summarize,
};
use crate::checks::diagnostic::{Finding, Severity};
use crate::model::PartBody;
use crate::session::{Analysis, EventKind, LogLevel, PartRecord, Seq, first_line};
use crate::source::{SourceKind, SourceMap, Span};

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

/// `s` escaped for HTML text and attribute values; control characters and bidi overrides are
/// shown as `\u{…}` (newlines kept).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    esc_into(&mut out, s);
    out
}

fn esc_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push('\n'),
            _ => push_escaped(out, c),
        }
    }
}

fn sev_class(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// One line of a timeline.
#[derive(Debug)]
struct Entry {
    seq: Seq,
    /// Where it is: the first span gives the line; all of them are where findings can point.
    spans: Vec<Span>,
    kind: Kind,
    /// A short name (`tool bash`, `skipped`), plain text.
    what: String,
    /// Plain text.
    detail: String,
    /// `error`, `warning`, or empty.
    tone: &'static str,
    part_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    StepStart,
    StepFinish,
    Text,
    Reasoning,
    Tool,
    Retry,
    Part,
    Event,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::StepStart => "step start",
            Kind::StepFinish => "step finish",
            Kind::Text => "text",
            Kind::Reasoning => "reasoning",
            Kind::Tool => "tool call",
            Kind::Retry => "retry",
            Kind::Part => "other part",
            Kind::Event => "event",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Kind::StepStart | Kind::StepFinish => "step",
            Kind::Text => "text",
            Kind::Reasoning => "reasoning",
            Kind::Tool => "tool",
            Kind::Retry => "retry",
            Kind::Part => "part",
            Kind::Event => "event",
        }
    }
}

/// Whitespace collapsed, at most `max` characters, with the full length when cut.
fn shorten(text: &str, max: usize) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = one.chars().count();
    if n <= max {
        one
    } else {
        let short: String = one.chars().take(max).collect();
        format!("{short}… ({n} characters)")
    }
}

fn millis(ms: f64) -> String {
    if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else if ms < 120_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{:.1} min", ms / 60_000.0)
    }
}

/// What a stream's replay says of its tools, by part id (looked up once per part).
struct Tools<'a> {
    /// The processor's own states of a tool, when they differ from the stored ones.
    native: HashMap<&'a str, &'a [(Seq, String)]>,
    /// Tools the stream left for the client to run.
    awaiting: HashSet<&'a str>,
}

impl<'a> Tools<'a> {
    fn of(a: &'a Analysis) -> Self {
        let f = a.stream.as_ref();
        Self {
            native: f
                .map(|f| {
                    f.native_states
                        .iter()
                        .map(|(id, h)| (id.as_str(), h.as_slice()))
                        .collect()
                })
                .unwrap_or_default(),
            awaiting: f
                .map(|f| f.awaiting_execution.iter().map(String::as_str).collect())
                .unwrap_or_default(),
        }
    }
}

/// A tool's transitions: `pending (event 3) → running (event 5, +2) → completed (event 9, +4)`.
fn tool_entry(
    p: &PartRecord,
    tool: &crate::model::ToolPart,
    tools: &Tools<'_>,
    unit: &str,
) -> Entry {
    let states: Vec<(Seq, String)> = match tools.native.get(p.part.id.as_str()) {
        Some(h) => h.to_vec(),
        None => {
            let mut v: Vec<(Seq, String)> = Vec::new();
            for o in &p.history {
                let st = o.status.as_deref().unwrap_or("?").to_owned();
                if v.last().map(|(_, s)| s) != Some(&st) {
                    v.push((o.seq, st));
                }
            }
            v
        }
    };
    let mut detail = String::new();
    let mut prev: Option<Seq> = None;
    for (seq, st) in &states {
        if !detail.is_empty() {
            detail.push_str(" → ");
        }
        match prev {
            Some(p) if *seq > p => {
                let _ = write!(detail, "{st} ({unit} {}, +{})", seq + 1, seq - p);
            }
            _ => {
                let _ = write!(detail, "{st} ({unit} {})", seq + 1);
            }
        }
        prev = Some(*seq);
    }
    if let Some(time) = &tool.state.fields().time
        && let (Some(s), Some(e)) = (time.start, time.end)
        && e > s
    {
        let _ = write!(detail, " · took {}", millis(e - s));
    }
    if let Some(e) = tool.state.error_text() {
        let _ = write!(detail, " · error: {}", shorten(e, 200));
    }
    if tools.awaiting.contains(p.part.id.as_str()) {
        detail.push_str(" · awaiting execution (the tool runs after the stream)");
    }
    let status = tool.state.status();
    Entry {
        seq: p.history.first().map_or(0, |o| o.seq),
        spans: p
            .history
            .iter()
            .map(|o| o.status_span.unwrap_or(o.span))
            .collect(),
        kind: Kind::Tool,
        what: format!("tool {} · {}", tool.tool, tool.call_id),
        detail,
        tone: match status {
            "completed" | "pending" | "running" => "",
            "error" => "warning",
            _ => "error",
        },
        part_id: Some(p.part.id.clone()),
    }
}

fn part_entry(p: &PartRecord, tools: &Tools<'_>, unit: &str) -> Option<Entry> {
    let first = p.history.first()?;
    let base = |kind: Kind, what: String, detail: String| Entry {
        seq: first.seq,
        spans: p.history.iter().map(|o| o.span).collect(),
        kind,
        what,
        detail,
        tone: "",
        part_id: Some(p.part.id.clone()),
    };
    Some(match &p.part.body {
        PartBody::StepStart(_) => base(Kind::StepStart, "step".into(), String::new()),
        PartBody::StepFinish(f) => {
            let t = &f.tokens;
            let mut d = format!(
                "finish: {}",
                if f.reason.is_empty() {
                    "(none)"
                } else {
                    &f.reason
                }
            );
            let _ = write!(d, " · tokens in {} out {}", t.input, t.output);
            if t.reasoning > 0.0 {
                let _ = write!(d, " reasoning {}", t.reasoning);
            }
            if f.cost > 0.0 {
                let _ = write!(d, " · cost {:.4}", f.cost);
            }
            base(Kind::StepFinish, "step finish".into(), d)
        }
        PartBody::Text(t) => {
            let mut e = base(Kind::Text, "text".into(), shorten(&t.text, TEXT_PREVIEW));
            if t.synthetic == Some(true) {
                e.what.push_str(" (synthetic)");
            }
            e
        }
        PartBody::Reasoning(t) => base(
            Kind::Reasoning,
            "reasoning".into(),
            shorten(&t.text, TEXT_PREVIEW),
        ),
        PartBody::Tool(t) => tool_entry(p, t, tools, unit),
        PartBody::Retry(r) => {
            let mut e = base(
                Kind::Retry,
                format!("retry attempt {}", r.attempt),
                shorten(&r.error.to_string(), 200),
            );
            e.tone = "warning";
            e
        }
        PartBody::Subtask(s) => base(
            Kind::Part,
            format!("subtask ({})", s.agent),
            shorten(&s.description, TEXT_PREVIEW),
        ),
        PartBody::File(f) => base(
            Kind::Part,
            "file".into(),
            format!("{} {}", f.mime, f.filename.as_deref().unwrap_or_default()),
        ),
        PartBody::Patch(pt) => base(
            Kind::Part,
            "patch".into(),
            format!("{} file(s)", pt.files.len()),
        ),
        PartBody::Snapshot(_) => base(Kind::Part, "snapshot".into(), String::new()),
        PartBody::Agent(ag) => base(Kind::Part, "agent".into(), ag.name.clone()),
        PartBody::Compaction(_) => base(Kind::Part, "compaction".into(), String::new()),
        PartBody::Unknown { type_name } => base(
            Kind::Part,
            format!("part of type {}", type_name.as_deref().unwrap_or("(none)")),
            String::new(),
        ),
    })
}

/// An event in words: (what, detail, tone); `None` for events not worth a line.
fn event_words(kind: &EventKind) -> Option<(String, String, &'static str)> {
    let headline = |i: &crate::session::ErrorInfo| first_line(&i.title(), 240);
    Some(match kind {
        EventKind::RunStart => ("run starts".into(), String::new(), ""),
        EventKind::Prompt => ("prompt".into(), String::new(), ""),
        EventKind::Log {
            level,
            service,
            message,
            error,
        } => {
            let mut d = format!("{service}: {}", first_line(message, 200));
            if let Some(e) = error {
                let _ = write!(d, " · {}", headline(e));
            }
            let tone = if *level >= LogLevel::Error {
                "error"
            } else {
                "warning"
            };
            (format!("log {level:?}").to_lowercase(), d, tone)
        }
        EventKind::SessionError(i) => ("session error".into(), headline(i), "error"),
        EventKind::ProcessCrash(i) => ("process crash".into(), headline(i), "error"),
        EventKind::RawError(i) => ("uncaught error".into(), headline(i), "error"),
        EventKind::StreamUnhandled { event_type, reason } => (
            "unhandled stream event".into(),
            match reason {
                Some(r) => format!("{event_type}: {}", first_line(r, 200)),
                None => event_type.clone(),
            },
            "warning",
        ),
        EventKind::Cancel => ("cancel".into(), String::new(), ""),
        EventKind::Idle => ("idle".into(), String::new(), ""),
        EventKind::BusSessionError => ("session.error published".into(), String::new(), "warning"),
        EventKind::WrapperError {
            error_type,
            message,
        } => (
            "wrapper error".into(),
            format!("{error_type}: {}", first_line(message, 200)),
            "error",
        ),
        EventKind::StreamPayload(p) => (
            if p.schema {
                "event of the wrong shape".into()
            } else {
                "event not JSON".into()
            },
            first_line(&p.reason, 200),
            "error",
        ),
        EventKind::StreamProviderError(i) => ("provider error".into(), headline(i), "error"),
        EventKind::StreamOutOfOrder {
            problem, benign, ..
        } => (
            "out of order".into(),
            first_line(problem, 200),
            if *benign { "" } else { "warning" },
        ),
        EventKind::ProcessorSkipped { reason } => (
            "skipped by the processor".into(),
            first_line(reason, 200),
            "warning",
        ),
        EventKind::ProcessorDropped(d) => (
            format!("dropped {}", d.what),
            format!("tool {}: {}", d.tool, first_line(&d.reason, 200)),
            "warning",
        ),
        EventKind::ProcessorStopped { remaining } => (
            "processor stopped (fatal)".into(),
            format!("{remaining} events never processed"),
            "error",
        ),
        EventKind::ProcessorCleanup { part_ids } => (
            "cleanup".into(),
            format!(
                "closed {} as \"Tool execution aborted\"",
                part_ids.join(", ")
            ),
            "warning",
        ),
        EventKind::StepFinished(f) => (
            STEP_FINISH_LOGGED.into(),
            format!(
                "reason {}{}",
                f.reason,
                if f.zero_usage { " · zero usage" } else { "" }
            ),
            "",
        ),
        EventKind::LoopExit => ("loop exits".into(), String::new(), ""),
        EventKind::ModelRequested { spec } => ("model requested".into(), spec.clone(), ""),
        EventKind::ModelResolved(m) => ("model resolved".into(), m.raw.clone(), ""),
        EventKind::RetryWait(w) => (
            "retry wait".into(),
            match w.retry_after {
                Some((s, _)) => format!("{} (retry-after {s})", millis(w.delay_ms as f64)),
                None => millis(w.delay_ms as f64),
            },
            "warning",
        ),
        EventKind::ProviderUsage(usage) => {
            let crate::session::ProviderUsage {
                input,
                output,
                finish,
                source,
                ..
            } = &**usage;
            (
                "provider usage".into(),
                format!(
                    "{source}: in {input} out {output}{}",
                    finish
                        .as_deref()
                        .map(|f| format!(" · finish {f}"))
                        .unwrap_or_default()
                ),
                "",
            )
        }
        EventKind::WrapperStatus { success, words } => (
            "wrapper status".into(),
            first_line(words, 200),
            if *success { "" } else { "warning" },
        ),
    })
}

/// The timeline of one session (or, with `session == None`, of what belongs to no session);
/// `events` are the indices of the analysis's events that belong to it.
fn timeline(
    a: &Analysis,
    tools: &Tools<'_>,
    session: Option<&crate::session::Session>,
    events: &[usize],
) -> Vec<Entry> {
    let unit = if a.stream.is_some() {
        "event"
    } else {
        "record"
    };
    let mut out = Vec::new();
    if let Some(s) = session {
        for m in &s.messages {
            for p in &m.parts {
                if let Some(e) = part_entry(p, tools, unit) {
                    out.push(e);
                }
            }
        }
    }
    let stop = a.stream.as_ref().and_then(|f| f.outcome.failed_at());
    for e in events.iter().filter_map(|&k| a.events.get(k)) {
        let Some((what, detail, tone)) = event_words(&e.kind) else {
            continue;
        };
        let seq = match (&e.kind, stop) {
            (EventKind::ProcessorCleanup { .. }, Some(s)) => s,
            _ => e.seq,
        };
        out.push(Entry {
            seq,
            spans: vec![e.span],
            kind: Kind::Event,
            what,
            detail,
            tone,
            part_id: None,
        });
    }
    // A logged step_finish is the step-finish part already shown.
    let finishes: HashSet<Seq> = out
        .iter()
        .filter(|e| e.kind == Kind::StepFinish)
        .map(|e| e.seq)
        .collect();
    out.retain(|e| {
        !(e.kind == Kind::Event && e.what == STEP_FINISH_LOGGED && finishes.contains(&e.seq))
    });
    // Parts before events at the same position: a step starts before what it records.
    out.sort_by_key(|e| (e.seq, e.kind == Kind::Event, e.kind));
    out
}

/// The entry each finding is about: its part, else the first entry holding its primary span,
/// else the last entry before it (by the offset of its first span). One pass for all of a
/// timeline's findings: entries are indexed by part id, and the spans holding each point are
/// found by a sweep over the points in order, not by a walk of the timeline per finding.
fn pins(findings: &[&Finding], entries: &[Entry]) -> Vec<Option<usize>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let by_part = crate::first_of(
        (entries.iter().enumerate()).filter_map(|(i, e)| Some((e.part_id.as_deref()?, i))),
    );
    let mut out: Vec<Option<usize>> = vec![None; findings.len()];
    // The findings left to place by their span: (file, offset, finding).
    let mut points: Vec<(u32, u64, usize)> = Vec::new();
    for (k, f) in findings.iter().enumerate() {
        if let Some(i) = f.ids.part_id.as_deref().and_then(|p| by_part.get(p)) {
            out[k] = Some(*i);
        } else if let Some(l) = &f.primary {
            points.push((l.span.file.0, l.span.offset, k));
        }
    }
    if points.is_empty() {
        return out;
    }
    points.sort_unstable();
    // Every span of every entry as [start, end) (at least one byte), by file and start.
    let mut spans: Vec<(u32, u64, u64, usize)> = entries
        .iter()
        .enumerate()
        .flat_map(|(i, e)| {
            e.spans
                .iter()
                .map(move |s| (s.file.0, s.offset, s.end().max(s.offset + 1), i))
        })
        .collect();
    spans.sort_unstable();
    // Each entry's first span, by file and offset, for "the last entry before".
    let mut firsts: Vec<(u32, u64, usize)> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.spans.first().map(|s| (s.file.0, s.offset, i)))
        .collect();
    firsts.sort_unstable();
    let mut next = 0;
    let mut ending: BinaryHeap<Reverse<(u32, u64, usize)>> = BinaryHeap::new();
    let mut open: BTreeMap<usize, usize> = BTreeMap::new(); // entry → its spans holding the point
    for (file, at, k) in points {
        // Spans that start at or before the point are open until they end.
        while let Some(&(f, start, end, i)) = spans.get(next)
            && (f, start) <= (file, at)
        {
            next += 1;
            ending.push(Reverse((f, end, i)));
            *open.entry(i).or_default() += 1;
        }
        while let Some(&Reverse((f, end, i))) = ending.peek()
            && (f, end) <= (file, at)
        {
            ending.pop();
            if let Some(n) = open.get_mut(&i) {
                *n -= 1;
                if *n == 0 {
                    open.remove(&i);
                }
            }
        }
        out[k] = open.keys().next().copied().or_else(|| {
            let before = firsts.partition_point(|&(f, o, _)| (f, o) <= (file, at));
            before
                .checked_sub(1)
                .and_then(|b| firsts.get(b))
                .filter(|&&(f, _, _)| f == file)
                .map(|&(_, _, i)| i)
        });
    }
    out
}

/// Which entries to render: all when there are at most `cap`; otherwise the first and last ones,
/// every entry a finding is pinned to, and the errors, up to `cap`.
fn keep(entries: &[Entry], pinned: &[bool], cap: usize) -> Vec<bool> {
    if entries.len() <= cap {
        return vec![true; entries.len()];
    }
    let head = cap * 2 / 5;
    let tail = cap / 5;
    let mut kept: Vec<bool> = (0..entries.len())
        .map(|i| i < head || i >= entries.len() - tail)
        .collect();
    let mut budget = cap.saturating_sub(head + tail);
    for pass in 0..2 {
        for (i, e) in entries.iter().enumerate() {
            if budget == 0 && pass == 1 {
                break;
            }
            let wanted = if pass == 0 {
                pinned[i]
            } else {
                e.tone == "error"
            };
            if wanted && !kept[i] {
                kept[i] = true;
                budget = budget.saturating_sub(1);
            }
        }
    }
    kept
}

/// Where a span is, for people: `line 12` of its file, or its row.
fn place(sources: &SourceMap, located: &Located, span: &Span) -> String {
    match sources.get(span.file).map(|s| &s.kind) {
        // The row's last step (`message msg_…`): the session is the section's.
        Some(SourceKind::Virtual { locator, .. }) => locator
            .rsplit('›')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
        _ => located
            .get(span)
            .map(|r| format!("line {}", r.start.line))
            .unwrap_or_default(),
    }
}

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
    struct Shown {
        entries: Vec<Entry>,
        kept: Vec<bool>,
        pins: Vec<Vec<usize>>,
        findings: bool,
    }
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
        .map(|s| super::record::display_path(&s.path))
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
            Some(s) => render_timeline(&mut out, sources, &lines, s, &sid, findings),
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

    fn render_timeline(
        out: &mut String,
        sources: &SourceMap,
        lines: &Located,
        s: &Shown,
        sid: &str,
        findings: &[Finding],
    ) {
        out.push_str("<h3>Timeline</h3>\n<ol class=\"timeline\">\n");
        let mut step_open = false;
        let mut step_no = 0;
        let mut elided: BTreeMap<&'static str, usize> = BTreeMap::new();
        let flush = |out: &mut String, elided: &mut BTreeMap<&'static str, usize>| {
            if elided.is_empty() {
                return;
            }
            let total: usize = elided.values().sum();
            let kinds = elided
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                out,
                "<li class=\"elided\">… {total} entries elided ({kinds})</li>"
            );
            elided.clear();
        };
        for (ei, e) in s.entries.iter().enumerate() {
            if e.kind == Kind::StepStart {
                step_no += 1;
            }
            if !s.kept[ei] {
                *elided.entry(e.kind.name()).or_default() += 1;
                continue;
            }
            flush(out, &mut elided);
            if e.kind == Kind::StepStart {
                if step_open {
                    out.push_str("<li class=\"unfinished\">no step-finish before the next step</li>\n</ol></li>\n");
                }
                step_open = true;
            }
            let worst = s.pins[ei].iter().map(|&i| findings[i].severity).max();
            let mut class = format!("entry {}", e.kind.class());
            if !e.tone.is_empty() {
                let _ = write!(class, " tone-{}", e.tone);
            }
            if let Some(w) = worst {
                let _ = write!(class, " pinned sev-{}", sev_class(w));
            }
            let at = e
                .spans
                .first()
                .map(|sp| place(sources, lines, sp))
                .unwrap_or_default();
            let pos = format!(
                "#{}{}",
                e.seq + 1,
                if at.is_empty() {
                    String::new()
                } else {
                    format!(" · {at}")
                }
            );
            let what = if e.kind == Kind::StepStart {
                format!("step {step_no}")
            } else {
                e.what.clone()
            };
            if e.kind == Kind::StepStart {
                let _ = write!(
                    out,
                    "<li class=\"{class} block\" id=\"{sid}-e{ei}\"><div class=\"row\"><span class=\"pos\">{}</span><span class=\"what\">{}</span><span class=\"detail\">{}</span></div>",
                    esc(&pos),
                    esc(&what),
                    esc(&e.detail)
                );
                pins_html(out, &s.pins[ei], findings, sid);
                out.push_str("\n<ol class=\"steps\">\n");
                continue;
            }
            let _ = write!(
                out,
                "<li class=\"{class}\" id=\"{sid}-e{ei}\"><div class=\"row\"><span class=\"pos\">{}</span><span class=\"what\">{}</span><span class=\"detail\">{}</span></div>",
                esc(&pos),
                esc(&what),
                esc(&e.detail)
            );
            pins_html(out, &s.pins[ei], findings, sid);
            out.push_str("</li>\n");
            if e.kind == Kind::StepFinish && step_open {
                out.push_str("</ol></li>\n");
                step_open = false;
            }
        }
        flush(out, &mut elided);
        if step_open {
            out.push_str("<li class=\"unfinished\">the step never finished</li>\n</ol></li>\n");
        }
        out.push_str("</ol>\n");
    }

    fn pins_html(out: &mut String, pins: &[usize], findings: &[Finding], sid: &str) {
        if pins.is_empty() {
            return;
        }
        out.push_str("<ul class=\"pins\">");
        for &i in pins {
            let f = &findings[i];
            let _ = write!(
                out,
                "<li class=\"sev-{}\"><a href=\"#{}-f{i}\">{} [{}]</a> {}</li>",
                sev_class(f.severity),
                sid,
                sev_class(f.severity),
                f.rule,
                esc(&first_line(&f.message, 160))
            );
        }
        out.push_str("</ul>");
    }
    out
}

fn summary_line(s: &SessionSummary, title: Option<&str>) -> String {
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
                // Mark the labelled bytes (non-overlapping, first come first marked).
                let mut pos = 0;
                let mut sorted: Vec<_> = marked.iter().collect();
                sorted.sort_by_key(|m| m.0);
                for (a, b, p, _) in sorted {
                    if *a < pos || *b <= *a {
                        continue;
                    }
                    esc_into(out, &dl.text[pos..*a]);
                    let _ = write!(out, "<mark class=\"{}\">", if *p { "p" } else { "r" });
                    esc_into(out, &dl.text[*a..*b]);
                    out.push_str("</mark>");
                    pos = *b;
                }
                esc_into(out, &dl.text[pos..]);
                out.push('\n');
                for (a, b, p, text) in &marked {
                    let col = dl.text[..*a].chars().count();
                    let len = dl.text[*a..*b].chars().count().max(1);
                    let _ = writeln!(
                        out,
                        "{:>width$} · {}<span class=\"{}\">{} {}</span>",
                        "",
                        " ".repeat(col),
                        if *p { "lp" } else { "lr" },
                        "^".repeat(len.min(80)),
                        esc(text)
                    );
                }
            }
        }
        out.push_str("</pre></div>\n");
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
    files: Vec<(String, Totals)>,
    /// Each file's place in `files` (a run may check many).
    file_index: crate::FastMap<String, usize>,
    rules: BTreeMap<&'static str, Totals>,
    baselined: usize,
    /// Past this many bytes, units are written compact (see [`compact`]).
    budget: u64,
    /// Units written compact.
    compacted: usize,
    /// Links to the first sessions with findings written in full (for the summary).
    links: Vec<String>,
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

    fn start(&mut self) -> io::Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        write!(
            self.out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>rewind report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<header><h1>rewind report</h1><p class=\"meta\">rewind {} · findings are pinned to the timeline entry they are about; sessions without findings are collapsed</p></header>\n<main>\n",
            env!("CARGO_PKG_VERSION")
        )
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
                        self.links.push(format!(
                            "<li><a href=\"#u{n}-s{si}\">{}</a> <span class=\"meta\">{}</span></li>",
                            esc(&s.id),
                            esc(&unit.file)
                        ));
                    }
                }
            }
        } else {
            if self.compacted == 0 {
                writeln!(
                    self.out,
                    "<p class=\"budget\">The page reached {} KiB: the files and sessions below are listed without timelines or source lines, and sessions without findings are only counted.</p>",
                    self.budget / 1024
                )?;
            }
            self.compacted += 1;
            self.out.write_all(compact(&unit).as_bytes())?;
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
        let mut s = String::from("</main>\n<aside id=\"summary\">\n<h2>Summary</h2>\n");
        let _ = writeln!(
            s,
            "<p class=\"big\">{} file{} · {} session{} · <span class=\"totals {}\">{}</span>{}</p>",
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            self.sessions,
            if self.sessions == 1 { "" } else { "s" },
            if self.totals.errors > 0 {
                "error"
            } else if self.totals.warnings > 0 {
                "warning"
            } else {
                "clean"
            },
            esc(&self.totals.words()),
            match self.baselined {
                0 => String::new(),
                n => format!(" · {n} in the baseline"),
            }
        );
        if !self.rules.is_empty() {
            s.push_str(
                "<table><tr><th>rule</th><th>errors</th><th>warnings</th><th>infos</th></tr>\n",
            );
            for (rule, t) in &self.rules {
                let _ = writeln!(
                    s,
                    "<tr><td>{rule}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    t.errors, t.warnings, t.infos
                );
            }
            s.push_str("</table>\n");
        }
        // With several sessions, a way to the ones with findings among the collapsed others.
        if self.sessions > 1 && !self.links.is_empty() {
            let _ = writeln!(
                s,
                "<p>Sessions with findings ({}){}:</p>\n<ul class=\"jump\">",
                self.with_findings,
                if self.with_findings > self.opened {
                    format!("; the first {} are expanded", self.opened)
                } else {
                    String::new()
                }
            );
            for l in &self.links {
                s.push_str(l);
                s.push('\n');
            }
            if self.with_findings > self.links.len() {
                let _ = writeln!(
                    s,
                    "<li class=\"meta\">and {} more</li>",
                    self.with_findings - self.links.len()
                );
            }
            s.push_str("</ul>\n");
        }
        if self.files.len() > 1 {
            s.push_str("<ul class=\"files\">\n");
            for (f, t) in &self.files {
                let _ = writeln!(s, "<li>{}: {}</li>", esc(f), esc(&t.words()));
            }
            s.push_str("</ul>\n");
        }
        for (file, error) in &run.errors {
            let _ = writeln!(
                s,
                "<p class=\"unreadable\">could not read {}: {}</p>",
                esc(file),
                esc(error)
            );
        }
        if self.compacted > 0 {
            let _ = writeln!(
                s,
                "<p class=\"budget\">{} of {} units are listed compact (page budget {} KiB).</p>",
                self.compacted,
                self.units,
                self.budget / 1024
            );
        }
        if !run.files_skipped.is_empty() {
            let _ = writeln!(
                s,
                "<p class=\"meta\">{} file(s) skipped (not recordings)</p>",
                run.files_skipped.len()
            );
        }
        let tail = "</aside>\n</body>\n</html>\n";
        // The page's size, this line included (its own digits are counted too).
        let base = self.out.written + (s.len() + tail.len()) as u64;
        let mut size = base;
        for _ in 0..3 {
            let line = size_line(size);
            size = base + line.len() as u64;
        }
        s.push_str(&size_line(size));
        s.push_str(tail);
        self.out.write_all(s.as_bytes())?;
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
fn compact(unit: &UnitOutput) -> String {
    let totals = Totals::of(&unit.records);
    let mut out = format!(
        "<section class=\"unit compact\">\n<h2><span class=\"file\">{}</span> <span class=\"fmt\">{}</span> <span class=\"totals {}\">{}</span></h2>\n<ul class=\"compact\">\n",
        esc(&unit.file),
        esc(unit.format.describe()),
        totals_class(&totals),
        esc(&totals.words())
    );
    let mut clean = 0;
    for s in &unit.sessions {
        if s.errors + s.warnings + s.infos == 0 {
            clean += 1;
            continue;
        }
        let _ = writeln!(out, "<li>{}</li>", summary_line(s, None));
    }
    if clean > 0 {
        let _ = writeln!(
            out,
            "<li class=\"meta\">{clean} session{} without findings</li>",
            if clean == 1 { "" } else { "s" }
        );
    }
    for r in &unit.records {
        let sev = sev_class(r.severity);
        let place = match (&r.file, r.line, &r.locator) {
            (Some(f), Some(l), _) => format!(" · {}:{l}", esc(f)),
            (Some(f), None, Some(loc)) => format!(" · {} › {}", esc(f), esc(loc)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "<li class=\"sev-{sev}\"><span class=\"sev\">{sev}</span> <span class=\"rule\">[{}]</span> {}<span class=\"meta\">{place}</span></li>",
            r.rule,
            esc(&first_line(&r.message, 240))
        );
    }
    out.push_str("</ul>\n</section>\n");
    out
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

fn size_line(bytes: u64) -> String {
    format!(
        "<p class=\"meta size\">page size: {bytes} bytes ({:.1} KiB)</p>\n",
        bytes as f64 / 1024.0
    )
}

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

    #[test]
    fn shortening_collapses_whitespace_and_counts() {
        assert_eq!(shorten("a  b\n c", 10), "a b c");
        assert_eq!(shorten("abcdef", 3), "abc… (6 characters)");
    }

    #[test]
    fn the_timeline_keeps_pinned_entries_when_capped() {
        let entries: Vec<Entry> = (0..1000)
            .map(|i| Entry {
                seq: i,
                spans: Vec::new(),
                kind: Kind::Text,
                what: String::new(),
                detail: String::new(),
                tone: "",
                part_id: None,
            })
            .collect();
        let mut pinned = vec![false; 1000];
        pinned[500] = true;
        let kept = keep(&entries, &pinned, 100);
        assert!(kept[500] && kept[0] && kept[999]);
        assert!(kept.iter().filter(|k| **k).count() <= 100);
    }

    fn unit(file: &str, html: &str, sessions: &[(&str, usize)]) -> UnitOutput {
        UnitOutput {
            file: file.into(),
            format: crate::testing::formats::AGENT_LOG,
            counts: BTreeMap::new(),
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

    /// The pinning as it was: walks of the timeline per finding.
    fn pin_by_walking(f: &Finding, entries: &[Entry]) -> Option<usize> {
        if let Some(pid) = &f.ids.part_id
            && let Some(i) = entries
                .iter()
                .position(|e| e.part_id.as_deref() == Some(pid))
        {
            return Some(i);
        }
        let span = f.primary.as_ref()?.span;
        let inside = |s: &Span| {
            s.file == span.file
                && s.offset <= span.offset
                && span.offset < s.end().max(s.offset + 1)
        };
        if let Some(i) = entries.iter().position(|e| e.spans.iter().any(inside)) {
            return Some(i);
        }
        entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.spans
                    .first()
                    .filter(|s| s.file == span.file && s.offset <= span.offset)
                    .map(|s| (s.offset, i))
            })
            .max()
            .map(|(_, i)| i)
    }

    #[test]
    fn findings_are_pinned_where_walks_of_the_timeline_pinned_them() {
        use crate::checks::Rule;
        use crate::checks::diagnostic::Ids;
        use crate::source::FileId;
        // Entries out of offset order, overlapping and empty spans, two files, repeated part ids.
        for seed in 0..25u64 {
            let mut state = seed;
            let mut next = |m: u64| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (state >> 33) % m
            };
            let entries: Vec<Entry> = (0..60)
                .map(|i| Entry {
                    seq: i,
                    spans: (0..next(3))
                        .map(|_| Span::new(FileId(next(2) as u32), next(400), next(30)))
                        .collect(),
                    kind: Kind::Text,
                    what: String::new(),
                    detail: String::new(),
                    tone: "",
                    part_id: (next(3) > 0).then(|| format!("prt_{}", next(40))),
                })
                .collect();
            let findings: Vec<Finding> = (0..400)
                .map(|k| {
                    let mut f = Finding::new(Rule::EmptyTextPart, Severity::Warning, "x");
                    if k % 4 != 0 {
                        f = f.at(
                            Span::new(FileId(next(3) as u32), next(450), next(5)),
                            "here",
                        );
                    }
                    if k % 3 == 0 {
                        f = f.ids(Ids::default().part(format!("prt_{}", next(60))));
                    }
                    f
                })
                .collect();
            let refs: Vec<&Finding> = findings.iter().collect();
            let got = pins(&refs, &entries);
            let want: Vec<Option<usize>> = findings
                .iter()
                .map(|f| pin_by_walking(f, &entries))
                .collect();
            assert_eq!(got, want);
            assert!(want.iter().filter(|w| w.is_some()).count() > 200);
        }
    }
}
