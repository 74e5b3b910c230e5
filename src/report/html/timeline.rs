//! A session's timeline: its entries (steps, tool calls, text, events), the findings pinned
//! to them, which are kept when it is capped, and the timeline rendered: the kept entries with
//! each step's entries nested in it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use maud::{Markup, Render, html};

use super::{STEP_FINISH_LOGGED, TEXT_PREVIEW, Text, sev_class};
use crate::checks::diagnostic::Finding;
use crate::model::PartBody;
use crate::report::Located;
use crate::session::{Analysis, EventKind, LogLevel, PartRecord, Seq, first_line};
use crate::source::{SourceKind, SourceMap, Span};

/// One line of a timeline.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) seq: Seq,
    /// Where it is: the first span gives the line; all of them are where findings can point.
    pub(super) spans: Vec<Span>,
    pub(super) kind: Kind,
    /// A short name (`tool bash`, `skipped`), plain text.
    pub(super) what: String,
    /// Plain text.
    pub(super) detail: String,
    /// `error`, `warning`, or empty.
    pub(super) tone: &'static str,
    part_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
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
    pub(super) fn name(self) -> &'static str {
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

    pub(super) fn class(self) -> &'static str {
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
pub(super) struct Tools<'a> {
    /// The processor's own states of a tool, when they differ from the stored ones.
    native: HashMap<&'a str, &'a [(Seq, String)]>,
    /// Tools the stream left for the client to run.
    awaiting: HashSet<&'a str>,
}

impl<'a> Tools<'a> {
    pub(super) fn of(a: &'a Analysis) -> Self {
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

/// A log entry in words: (what, detail, tone).
fn log_words(
    level: LogLevel,
    service: &str,
    message: &str,
    error: Option<&crate::session::ErrorInfo>,
) -> (String, String, &'static str) {
    let mut d = format!("{service}: {}", first_line(message, 200));
    if let Some(e) = error {
        let _ = write!(d, " · {}", first_line(&e.title(), 240));
    }
    let tone = if level >= LogLevel::Error {
        "error"
    } else {
        "warning"
    };
    (format!("log {level:?}").to_lowercase(), d, tone)
}

/// The usage a provider sent, in words.
fn usage_words(usage: &crate::session::ProviderUsage) -> String {
    let crate::session::ProviderUsage {
        input,
        output,
        finish,
        source,
        ..
    } = usage;
    format!(
        "{source}: in {input} out {output}{}",
        finish
            .as_deref()
            .map(|f| format!(" · finish {f}"))
            .unwrap_or_default()
    )
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
        } => log_words(*level, service, message, error.as_deref()),
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
        EventKind::ModelRequested { spec, .. } => ("model requested".into(), spec.clone(), ""),
        EventKind::ModelResolved(m) => ("model resolved".into(), m.raw.clone(), ""),
        EventKind::RetryWait(w) => (
            "retry wait".into(),
            match w.retry_after {
                Some((s, _)) => format!("{} (retry-after {s})", millis(w.delay_ms as f64)),
                None => millis(w.delay_ms as f64),
            },
            "warning",
        ),
        EventKind::ProviderUsage(usage) => ("provider usage".into(), usage_words(usage), ""),
        EventKind::WrapperStatus { success, words } => (
            "wrapper status".into(),
            first_line(words, 200),
            if *success { "" } else { "warning" },
        ),
    })
}

/// The timeline of one session (or, with `session == None`, of what belongs to no session);
/// `events` are the indices of the analysis's events that belong to it.
pub(super) fn timeline(
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
pub(super) fn pins(findings: &[&Finding], entries: &[Entry]) -> Vec<Option<usize>> {
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
pub(super) fn keep(entries: &[Entry], pinned: &[bool], cap: usize) -> Vec<bool> {
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

/// A timeline to render: its entries, which of them are kept, and the findings (indices into
/// the unit's) pinned to each.
pub(super) struct Shown {
    pub(super) entries: Vec<Entry>,
    pub(super) kept: Vec<bool>,
    pub(super) pins: Vec<Vec<usize>>,
    /// Whether its session has findings.
    pub(super) findings: bool,
}

/// What a rendered timeline lists.
#[derive(Debug, PartialEq)]
enum Item {
    /// A kept entry (its index).
    Entry(usize),
    /// Entries left out here, counted by kind.
    Elided(BTreeMap<&'static str, usize>),
    Step(Step),
}

/// A step: its step-start entry and the items after it up to its step-finish (the last of them);
/// a step that ends otherwise says why.
#[derive(Debug, PartialEq)]
struct Step {
    start: usize,
    /// Its number among all the timeline's steps, the ones left out counted too.
    number: usize,
    items: Vec<Item>,
    unfinished: Option<&'static str>,
}

/// The kept entries in order, each step's entries nested in it (a step ends at its step-finish,
/// at the next step-start or at the end), and where entries were left out, how many of each kind.
fn group(entries: &[Entry], kept: &[bool]) -> Vec<Item> {
    let mut top: Vec<Item> = Vec::new();
    let mut step: Option<Step> = None;
    let mut elided: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut number = 0;
    let close = |top: &mut Vec<Item>, step: Option<Step>, why: Option<&'static str>| {
        if let Some(s) = step {
            top.push(Item::Step(Step {
                unfinished: why,
                ..s
            }));
        }
    };
    for (ei, e) in entries.iter().enumerate() {
        if e.kind == Kind::StepStart {
            number += 1;
        }
        if !kept[ei] {
            *elided.entry(e.kind.name()).or_default() += 1;
            continue;
        }
        let here = step.as_mut().map_or(&mut top, |s| &mut s.items);
        if !elided.is_empty() {
            here.push(Item::Elided(std::mem::take(&mut elided)));
        }
        match e.kind {
            Kind::StepStart => {
                close(
                    &mut top,
                    step.take(),
                    Some("no step-finish before the next step"),
                );
                step = Some(Step {
                    start: ei,
                    number,
                    items: Vec::new(),
                    unfinished: None,
                });
            }
            Kind::StepFinish => {
                here.push(Item::Entry(ei));
                close(&mut top, step.take(), None);
            }
            _ => here.push(Item::Entry(ei)),
        }
    }
    if !elided.is_empty() {
        let here = step.as_mut().map_or(&mut top, |s| &mut s.items);
        here.push(Item::Elided(elided));
    }
    close(&mut top, step, Some("the step never finished"));
    top
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

/// A session's timeline as the page shows it (a [`Render`]): its kept entries, steps as blocks
/// holding their entries, the findings pinned to each entry linked, and what was left out.
pub(super) struct Timeline<'a> {
    pub(super) shown: &'a Shown,
    /// The session's anchor; entries are `{sid}-e{index}`, findings `{sid}-f{index}`.
    pub(super) sid: &'a str,
    pub(super) findings: &'a [Finding],
    pub(super) sources: &'a SourceMap,
    /// Line numbers of the kept entries.
    pub(super) lines: &'a Located,
}

impl Render for Timeline<'_> {
    fn render(&self) -> Markup {
        let items = group(&self.shown.entries, &self.shown.kept);
        html! {
            h3 { "Timeline" }
            "\n"
            ol.timeline {
                "\n"
                @for item in &items {
                    (self.item(item))
                }
            }
            "\n"
        }
    }
}

impl Timeline<'_> {
    fn item(&self, item: &Item) -> Markup {
        html! {
            @match item {
                Item::Entry(ei) => {
                    li class=(self.class(*ei)) id={ (self.sid) "-e" (ei) } { (self.row(*ei, None)) }
                    "\n"
                }
                Item::Elided(kinds) => {
                    li.elided {
                        "… " (kinds.values().sum::<usize>()) " entries elided ("
                        @for (k, (kind, n)) in kinds.iter().enumerate() {
                            @if k > 0 { ", " }
                            (n) " " (kind)
                        }
                        ")"
                    }
                    "\n"
                }
                Item::Step(step) => {
                    li class={ (self.class(step.start)) " block" }
                        id={ (self.sid) "-e" (step.start) } {
                        (self.row(step.start, Some(step.number)))
                        "\n"
                        ol.steps {
                            "\n"
                            @for item in &step.items {
                                (self.item(item))
                            }
                            @if let Some(why) = step.unfinished {
                                li.unfinished { (why) }
                                "\n"
                            }
                        }
                    }
                    "\n"
                }
            }
        }
    }

    /// An entry's classes: its kind, its tone, the severity of the worst finding pinned to it.
    fn class(&self, ei: usize) -> String {
        let e = &self.shown.entries[ei];
        let mut class = format!("entry {}", e.kind.class());
        if !e.tone.is_empty() {
            let _ = write!(class, " tone-{}", e.tone);
        }
        let worst = self.shown.pins[ei]
            .iter()
            .map(|&i| self.findings[i].severity)
            .max();
        if let Some(w) = worst {
            let _ = write!(class, " pinned sev-{}", sev_class(w));
        }
        class
    }

    /// An entry's row (position, what, detail; a step's what is its number), then the findings
    /// pinned to it.
    fn row(&self, ei: usize, step: Option<usize>) -> Markup {
        let e = &self.shown.entries[ei];
        let at = e
            .spans
            .first()
            .map(|sp| place(self.sources, self.lines, sp))
            .unwrap_or_default();
        let pos = match at.is_empty() {
            true => format!("#{}", e.seq + 1),
            false => format!("#{} · {at}", e.seq + 1),
        };
        let what = step.map(|n| format!("step {n}"));
        let pins = &self.shown.pins[ei];
        html! {
            div.row {
                span.pos { (Text(&pos)) }
                span.what { (Text(what.as_deref().unwrap_or(&e.what))) }
                span.detail { (Text(&e.detail)) }
            }
            @if !pins.is_empty() {
                ul.pins {
                    @for &i in pins {
                        @let f = &self.findings[i];
                        @let sev = sev_class(f.severity);
                        li class={ "sev-" (sev) } {
                            a href={ "#" (self.sid) "-f" (i) } { (sev) " [" (f.rule) "]" }
                            " " (f.message.first_line(160).for_html())
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::diagnostic::Severity;

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

    #[test]
    fn kept_entries_are_grouped_into_their_steps() {
        use Kind::*;
        let kinds = [
            StepStart, Text, StepFinish, Event, StepStart, Text, StepStart, Tool, Text, StepStart,
            Text, StepStart,
        ];
        let entries: Vec<Entry> = (0..kinds.len())
            .map(|i| Entry {
                seq: i as Seq,
                spans: Vec::new(),
                kind: kinds[i],
                what: String::new(),
                detail: String::new(),
                tone: "",
                part_id: None,
            })
            .collect();
        let kept: Vec<bool> = (0..kinds.len()).map(|i| ![5, 8, 9].contains(&i)).collect();
        let step = |start, number, items, unfinished| {
            Item::Step(Step {
                start,
                number,
                items,
                unfinished,
            })
        };
        let elided =
            |kinds: &[(&'static str, usize)]| Item::Elided(kinds.iter().copied().collect());
        let next = Some("no step-finish before the next step");
        assert_eq!(
            group(&entries, &kept),
            vec![
                step(0, 1, vec![Item::Entry(1), Item::Entry(2)], None),
                Item::Entry(3),
                step(4, 2, vec![elided(&[("text", 1)])], next),
                step(
                    6,
                    3,
                    vec![
                        Item::Entry(7),
                        elided(&[("step start", 1), ("text", 1)]),
                        Item::Entry(10),
                    ],
                    next
                ),
                step(11, 5, Vec::new(), Some("the step never finished")),
            ]
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
