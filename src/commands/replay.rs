//! `rewind replay CAPTURE`: re-run a stream capture through an agent's processor and show what
//! happened — steps, tools and their state transitions, skipped events, errors — then the
//! diagnosis; `--compare P1 P2` shows side by side where two processors' outcomes differ.

use std::io::Write;
use std::path::{Path, PathBuf};

use comfy_table::{Table, presets};
use serde_json::{Value, json};

use super::print_error;
use crate::checks;
use crate::checks::diagnostic::{Finding, Severity};
use crate::core::ExitStatus;
use crate::core::Format;
use crate::core::RewindError;
use crate::model::{PartBody, ToolPart};
use crate::pipeline::{self, Options};
use crate::protocols::stream::Profile;
use crate::report::ColorChoice;
use crate::report::html::{self, CompareRow, CompareRun, Comparison, HtmlPrinter, Side};
use crate::report::human::{HumanPrinter, Renderer, Summary};
use crate::report::{
    Located, OutputFormat, Printer, RunSummary, locate, locate_spans, prepare, record,
};
use crate::session::{Analysis, EventKind, Observation, PartRecord, Seq};
use crate::source::{SourceMap, Span};
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The stream capture: a raw SSE body, a JSON-lines capture, an HTTP recording or a HAR file
    /// (`-`: standard input).
    #[arg(value_name = "CAPTURE")]
    pub capture: PathBuf,

    /// The processor to replay the stream with.
    #[arg(long, value_enum, default_value_t = Profile::OpencodeFixed, value_name = "PROFILE")]
    pub processor: Profile,

    /// Replay with two processors and show where their outcomes differ.
    #[arg(long, num_args = 2, value_names = ["P1", "P2"], value_enum)]
    pub compare: Option<Vec<Profile>>,

    /// Output format (`html`: one self-contained page; with `--compare`, the two timelines side
    /// by side with the first divergence marked).
    #[arg(long, value_enum, default_value_t = ReplayFormat::Human)]
    pub format: ReplayFormat,

    /// Read the capture as this kind of input instead of recognising it from its content.
    #[arg(long, value_enum, value_name = "KIND")]
    pub input: Option<Format>,

    /// Exit with status 1 when a finding (of the first processor) has this severity or a higher one.
    #[arg(long, value_enum, default_value_t = Severity::Error, value_name = "SEVERITY")]
    pub fail_on: Severity,
}

/// Output formats of `replay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormat {
    Human,
    Json,
    Html,
}

/// One line of a timeline.
struct Entry {
    seq: Seq,
    span: Span,
    what: String,
    detail: String,
    /// A tool's transitions, each where it happened (the last with the tool's error or wait),
    /// for the side-by-side page; empty for other entries.
    states: Vec<(Seq, Span, String)>,
}

pub fn run(args: Args, choice: ColorChoice) -> Result<ExitStatus, RewindError> {
    let color = choice.enabled();
    // Error lines go to standard error, which may be a terminal when standard output is not.
    let err_color = choice.enabled_on_stderr();
    let profiles = match &args.compare {
        Some(p) if p.len() == 2 => p.clone(),
        Some(_) => return Err(RewindError::Usage("--compare takes two profiles".into())),
        None => vec![args.processor, pipeline::counterpart(args.processor)],
    };
    let options = Options {
        input: args.input,
        profiles: profiles.clone(),
        ..Options::default()
    };
    let mut sources = SourceMap::new();
    let mut worst = None;
    let mut docs: Vec<Value> = Vec::new();
    let renderer = Renderer::new(color);
    let mut human = HumanPrinter::new(super::stdout(), color, Summary::Totals);
    let mut page = HtmlPrinter::new(super::stdout());
    let html_renderer = Renderer::for_format(OutputFormat::Html, false);
    let mut compared: Vec<Comparison> = Vec::new();
    let comparing = args.compare.is_some();
    let result = pipeline::analyze(
        &args.capture,
        &options,
        &mut sources,
        &mut |sources, unit| {
            let units = unit.analyses;
            let sources: &SourceMap = sources;
            let Some(main) = units.first() else {
                return Ok(());
            };
            if main.stream.is_none() && main.requests.is_empty() {
                return Err(RewindError::Usage(format!(
                    "`{}` is not a stream capture: `rewind replay` replays SSE captures, JSON-lines captures, HTTP recordings and HAR files (use `rewind diagnose` for logs and stores)",
                    args.capture.display()
                )));
            }
            let findings: Vec<Vec<Finding>> =
                units.iter().map(|a| checks::run(a, &|_| true)).collect();
            for f in &findings[0] {
                worst = worst.max(Some(f.severity));
            }
            match (args.format, comparing) {
                (ReplayFormat::Human, false) => {
                    let text = timeline_text(sources, main, &args.capture);
                    print_out(&text)?;
                    human.unit(prepare(sources, main, &findings[0], None, Some(&renderer)))?;
                }
                (ReplayFormat::Human, true) => {
                    let text = compare_text(sources, &units, &findings, &args.capture);
                    print_out(&text)?;
                }
                (ReplayFormat::Html, false) => {
                    page.unit(prepare(
                        sources,
                        main,
                        &findings[0],
                        None,
                        html_renderer.as_ref(),
                    ))?;
                }
                (ReplayFormat::Html, true) => {
                    compared.push(comparison(
                        sources,
                        &units,
                        &findings,
                        &args.capture,
                        &profiles,
                    ));
                }
                (ReplayFormat::Json, _) => {
                    let shown = if comparing { units.len() } else { 1 };
                    let runs: Vec<Value> = units
                        .iter()
                        .zip(&findings)
                        .take(shown)
                        .map(|(a, f)| run_json(sources, a, f))
                        .collect();
                    let mut unit = json!({
                        "session": main.sessions.first().map(|s| s.id.clone()),
                        "protocol": main.stream.as_ref().map(|f| f.protocol.clone()),
                        "events": main.stream.as_ref().map_or(0, |f| f.events),
                        "runs": runs,
                    });
                    if comparing {
                        unit["differences"] = Value::Array(
                        differences(sources, &units, &findings)
                            .into_iter()
                            .map(|(row, a, b)| json!({"what": row, profiles[0].name(): a, profiles[1].name(): b}))
                            .collect(),
                    );
                    }
                    docs.push(unit);
                }
            }
            Ok(())
        },
    );
    match result {
        Err(e) if e.is_broken_pipe() => return Ok(ExitStatus::Clean),
        Err(e) => {
            super::Out.flush().ok();
            print_error(&e, err_color);
            return Ok(ExitStatus::Error);
        }
        Ok(()) => {}
    }
    match args.format {
        ReplayFormat::Json => {
            let doc = super::envelope(json!({
                "file": args.capture.display().to_string(),
                "profiles": profiles.iter().take(if comparing { 2 } else { 1 }).map(|p| p.name()).collect::<Vec<_>>(),
                "units": docs,
            }));
            let mut out = super::Out;
            crate::report::safe_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        }
        ReplayFormat::Html if comparing => print_out(&html::compare_page(&compared))?,
        ReplayFormat::Html => match page.finish(&RunSummary::default()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(ExitStatus::Clean);
            }
            other => other?,
        },
        ReplayFormat::Human => {
            if !comparing {
                match human.finish(&RunSummary::default()) {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        return Ok(ExitStatus::Clean);
                    }
                    other => other?,
                }
            }
        }
    }
    Ok(if worst.is_some_and(|w| w >= args.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}

fn print_out(text: &str) -> Result<(), RewindError> {
    let mut out = super::Out;
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `event 5 (line 9)`.
fn at(located: &Located, seq: Seq, span: Span) -> String {
    match located.get(&span) {
        Some(r) => format!("event {} (line {})", seq + 1, r.start.line),
        None => format!("event {}", seq + 1),
    }
}

fn preview(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one.chars().take(60).collect();
    if short.len() < one.len() {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}

/// A tool part's entry: its transitions (the stream's own states of it, `native`, when it has
/// them, else the statuses of its writes), with its error and whether it is `awaiting` execution.
fn tool_entry(
    p: &PartRecord,
    t: &ToolPart,
    first: &Observation,
    native: Option<&Vec<(Seq, String)>>,
    awaiting: bool,
) -> Entry {
    let states: Vec<(Seq, Span, String)> = match native {
        Some(h) => h
            .iter()
            .map(|(s, st)| {
                let span = p
                    .history
                    .iter()
                    .find(|o| o.seq == *s)
                    .map_or(first.span, |o| o.span);
                (*s, span, st.clone())
            })
            .collect(),
        None => {
            let mut v: Vec<(Seq, Span, String)> = Vec::new();
            for o in &p.history {
                let st = o.status.as_deref().unwrap_or_default().to_owned();
                if v.last().map(|(_, _, s)| s) != Some(&st) {
                    v.push((o.seq, o.span, st));
                }
            }
            v
        }
    };
    let mut detail = states
        .iter()
        .map(|(s, _, st)| format!("{st} (event {})", s + 1))
        .collect::<Vec<_>>()
        .join(" → ");
    let mut tail = String::new();
    if let Some(e) = t.state.error_text() {
        tail.push_str(&format!(": {e:?}"));
    }
    if awaiting {
        tail.push_str(" · awaiting execution (the tool runs after the stream)");
    }
    detail.push_str(&tail);
    let mut states = states;
    if let Some(last) = states.last_mut() {
        last.2.push_str(&tail);
    }
    Entry {
        seq: first.seq,
        span: first.span,
        what: format!("tool `{}` {}", t.tool, t.call_id),
        detail,
        states,
    }
}

/// An event of the processor or of the stream in the timeline, in words (what, detail); `None`
/// for the other events.
fn event_entry(kind: &EventKind) -> Option<(String, String)> {
    Some(match kind {
        EventKind::ProcessorSkipped { reason } => ("skipped".to_owned(), reason.clone()),
        EventKind::ProcessorDropped(d) => (
            format!("dropped {}", d.what),
            format!("tool `{}`: {}", d.tool, d.reason),
        ),
        EventKind::ProcessorStopped { remaining } => (
            "stopped".to_owned(),
            format!("the processor reads no further ({remaining} events never processed)"),
        ),
        EventKind::ProcessorCleanup { part_ids } => (
            "cleanup".to_owned(),
            format!(
                "closed {} as \"Tool execution aborted\"",
                part_ids.join(", ")
            ),
        ),
        EventKind::Log { error: Some(i), .. } => (
            "threw".to_owned(),
            crate::protocols::stream::opencode::headline(&i.title()),
        ),
        EventKind::SessionError(i) => (
            "session error".to_owned(),
            crate::protocols::stream::opencode::headline(&i.title()),
        ),
        EventKind::RawError(i) => ("uncaught".to_owned(), i.title()),
        EventKind::StreamProviderError(i) => ("provider error".to_owned(), i.title()),
        EventKind::StreamPayload(p) => (
            if p.schema { "bad shape" } else { "not JSON" }.to_owned(),
            crate::session::first_line(&p.reason, 120),
        ),
        EventKind::StreamOutOfOrder { problem, .. } => ("out of order".to_owned(), problem.clone()),
        EventKind::StreamUnhandled { event_type, .. } => {
            ("unhandled".to_owned(), event_type.clone())
        }
        _ => return None,
    })
}

/// The timeline of one run: parts (steps, text, tools with their transitions) and the
/// processor's and the stream's events, in stream order.
fn timeline(a: &Analysis) -> Vec<Entry> {
    let mut out = Vec::new();
    // By part id (a list searched per part was quadratic in a stream of many tools); the first
    // of an id, as a search finds it.
    let awaiting: crate::FastSet<&str> = (a.stream.iter())
        .flat_map(|f| f.awaiting_execution.iter().map(String::as_str))
        .collect();
    let native = crate::first_of(
        (a.stream.iter())
            .flat_map(|f| f.native_states.iter())
            .map(|(id, states)| (id.as_str(), states)),
    );
    let mut step = 0;
    for (_, _, p) in a.parts() {
        let Some(first) = p.history.first() else {
            continue;
        };
        match &p.part.body {
            PartBody::StepStart(_) => {
                step += 1;
                out.push(Entry {
                    seq: first.seq,
                    span: first.span,
                    what: format!("step {step}"),
                    detail: "starts".into(),
                    states: Vec::new(),
                });
            }
            PartBody::StepFinish(f) => out.push(Entry {
                seq: first.seq,
                span: first.span,
                what: format!("step {step}"),
                detail: format!("finishes: {}", f.reason),
                states: Vec::new(),
            }),
            PartBody::Text(t) => out.push(Entry {
                seq: first.seq,
                span: first.span,
                what: format!("text {}", p.part.id),
                detail: preview(&t.text),
                states: Vec::new(),
            }),
            PartBody::Reasoning(t) => out.push(Entry {
                seq: first.seq,
                span: first.span,
                what: format!("reasoning {}", p.part.id),
                detail: preview(&t.text),
                states: Vec::new(),
            }),
            PartBody::Tool(t) => out.push(tool_entry(
                p,
                t,
                first,
                native.get(p.part.id.as_str()).copied(),
                awaiting.contains(p.part.id.as_str()),
            )),
            _ => {}
        }
    }
    let stop = a.stream.as_ref().and_then(|f| f.outcome.failed_at());
    for e in &a.events {
        let seq = match (&e.kind, stop) {
            (EventKind::ProcessorCleanup { .. }, Some(s)) => s,
            _ => e.seq,
        };
        let Some((what, detail)) = event_entry(&e.kind) else {
            continue;
        };
        out.push(Entry {
            seq,
            span: e.span,
            what,
            detail,
            states: Vec::new(),
        });
    }
    out.sort_by_key(|e| e.seq);
    out
}

fn header(a: &Analysis, path: &Path) -> String {
    if let Some(t) = a.transcript.as_deref() {
        return format!(
            "{} — a transcript written by {} (its active history, in order)\n",
            path.display(),
            t.client
        );
    }
    let Some(f) = a.stream.as_ref() else {
        return format!("{} — recorded request only (no stream)\n", path.display());
    };
    let session = a
        .sessions
        .first()
        .map(|s| s.id.as_str())
        .unwrap_or_default();
    format!(
        "{} — {} · {} · {} events · processor {}\n",
        InputText::from(&path.display().to_string()).for_terminal(),
        session,
        f.protocol,
        f.events,
        f.profile
    )
}

fn timeline_text(sources: &SourceMap, a: &Analysis, path: &Path) -> String {
    let entries = timeline(a);
    let located = locate_spans(sources, entries.iter().map(|e| e.span), false);
    let mut out = header(a, path);
    let width = entries
        .iter()
        .map(|e| e.what.chars().count())
        .max()
        .unwrap_or(0);
    for e in &entries {
        out.push_str(&format!(
            "  {:<18} {:<width$}  {}\n",
            at(&located, e.seq, e.span),
            e.what,
            InputText::from(&e.detail).for_terminal()
        ));
    }
    if let Some(f) = a.stream.as_ref() {
        out.push_str(&format!("  outcome: {}\n", f.outcome.words()));
    }
    out.push('\n');
    out
}

/// A timeline's processor reactions: (event, where, what it did).
fn reactions(t: &[Entry]) -> Vec<(Seq, Span, String)> {
    t.iter()
        .filter(|e| {
            matches!(
                e.what.as_str(),
                "skipped" | "threw" | "session error" | "stopped" | "cleanup" | "uncaught"
            ) || e.what.starts_with("dropped")
        })
        .map(|e| (e.seq, e.span, format!("{}: {}", e.what, e.detail)))
        .collect()
}

/// The rows where two runs differ: (what, first run, second run).
fn differences(
    sources: &SourceMap,
    units: &[Analysis],
    findings: &[Vec<Finding>],
) -> Vec<(String, String, String)> {
    let (Some(a), Some(b)) = (units.first(), units.get(1)) else {
        return Vec::new();
    };
    let (ta, tb) = (timeline(a), timeline(b));
    let located = locate_spans(sources, ta.iter().chain(tb.iter()).map(|e| e.span), false);
    let mut rows = Vec::new();
    let outcome = |x: &Analysis| {
        x.stream
            .as_ref()
            .map(|f| f.outcome.words())
            .unwrap_or_default()
    };
    rows.push(("outcome".to_owned(), outcome(a), outcome(b)));
    // Processor reactions, event by event.
    let (ra, rb) = (reactions(&ta), reactions(&tb));
    let mut seqs: Vec<(Seq, Span)> = ra
        .iter()
        .chain(rb.iter())
        .map(|(s, sp, _)| (*s, *sp))
        .collect();
    seqs.sort_by_key(|(s, _)| *s);
    seqs.dedup_by_key(|(s, _)| *s);
    for (seq, span) in seqs {
        let join = |r: &[(Seq, Span, String)]| {
            let v: Vec<&str> = r
                .iter()
                .filter(|(s, _, _)| *s == seq)
                .map(|(_, _, t)| t.as_str())
                .collect();
            if v.is_empty() {
                "—".to_owned()
            } else {
                v.join("\n")
            }
        };
        let (x, y) = (join(&ra), join(&rb));
        if x != y {
            rows.push((at(&located, seq, span), x, y));
        }
    }
    // Tools, by call id.
    let tools = |t: &[Entry]| -> Vec<(String, String)> {
        t.iter()
            .filter(|e| e.what.starts_with("tool "))
            .map(|e| (e.what.clone(), e.detail.clone()))
            .collect()
    };
    let (xa, xb) = (tools(&ta), tools(&tb));
    let mut names: Vec<&String> = xa.iter().chain(xb.iter()).map(|(n, _)| n).collect();
    names.dedup();
    for name in names {
        let get = |v: &[(String, String)]| {
            v.iter()
                .find(|(n, _)| n == name)
                .map_or("—".to_owned(), |(_, d)| d.clone())
        };
        let (x, y) = (get(&xa), get(&xb));
        if x != y {
            rows.push((name.clone(), x, y));
        }
    }
    let steps = |x: &Analysis| {
        let count = |ty: &str| {
            x.sessions
                .iter()
                .flat_map(|s| &s.messages)
                .map(|m| m.count(ty))
                .sum::<usize>()
        };
        format!(
            "{} started, {} finished",
            count("step-start"),
            count("step-finish")
        )
    };
    let (sa, sb) = (steps(a), steps(b));
    if sa != sb {
        rows.push(("steps".to_owned(), sa, sb));
    }
    let rules = |f: &[Finding]| {
        let mut names: Vec<String> = Vec::new();
        for x in f {
            let label = format!("{} ({})", x.rule, x.severity);
            if !names.contains(&label) {
                names.push(label);
            }
        }
        if names.is_empty() {
            "no findings".to_owned()
        } else {
            names.join("\n")
        }
    };
    rows.push((
        "findings".to_owned(),
        rules(&findings[0]),
        rules(findings.get(1).map_or(&[][..], Vec::as_slice)),
    ));
    rows
}

fn compare_text(
    sources: &SourceMap,
    units: &[Analysis],
    findings: &[Vec<Finding>],
    path: &Path,
) -> String {
    let (Some(a), Some(b)) = (units.first(), units.get(1)) else {
        return String::new();
    };
    let name = |x: &Analysis| {
        x.stream
            .as_ref()
            .map(|f| f.profile.clone())
            .unwrap_or_default()
    };
    let mut out = String::new();
    if let Some(f) = a.stream.as_ref() {
        out.push_str(&format!(
            "{} — {} · {} events · {} vs {}\n",
            InputText::from(&path.display().to_string()).for_terminal(),
            f.protocol,
            f.events,
            name(a),
            name(b)
        ));
    }
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_header(["", name(a).as_str(), name(b).as_str()]);
    t.set_width(100);
    t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    for (row, x, y) in differences(sources, units, findings) {
        t.add_row([
            InputText::from(&row).for_terminal(),
            InputText::from(&x).for_terminal_lines(),
            InputText::from(&y).for_terminal_lines(),
        ]);
    }
    out.push_str(&format!("{t}\n"));
    for (x, f) in units.iter().zip(findings) {
        out.push_str(&format!("\nunder {}:\n", name(x)));
        if f.is_empty() {
            out.push_str("  no findings\n");
        }
        for finding in f {
            out.push_str(&format!(
                "  {}[{}]: {}\n",
                finding.severity,
                finding.rule,
                finding.message.first_line(140).for_terminal()
            ));
        }
    }
    out
}

/// Two runs' timelines aligned for the HTML page: one row per position (event), and at each
/// position the entries of the same name side by side, in order.
fn comparison(
    sources: &SourceMap,
    units: &[Analysis],
    findings: &[Vec<Finding>],
    path: &Path,
    profiles: &[Profile],
) -> Comparison {
    let empty = Vec::new();
    let run = |i: usize| {
        let a = units.get(i);
        CompareRun {
            name: a
                .and_then(|x| x.stream.as_ref())
                .map(|f| f.profile.clone())
                .or_else(|| profiles.get(i).map(|p| p.name().to_owned()))
                .unwrap_or_default(),
            outcome: a
                .and_then(|x| x.stream.as_ref())
                .map_or_else(|| "no stream".to_owned(), |f| f.outcome.words()),
            findings: findings
                .get(i)
                .unwrap_or(&empty)
                .iter()
                .map(|f| (f.severity, f.rule.as_str(), f.message.clone()))
                .collect(),
        }
    };
    // A tool is one row per transition, at the event it happened: the processors may agree on
    // how a call starts and differ on how it ends.
    let expand = |t: Vec<Entry>| -> Vec<Entry> {
        let mut out = Vec::with_capacity(t.len());
        for e in t {
            if e.states.is_empty() {
                out.push(e);
                continue;
            }
            for (k, (seq, span, st)) in e.states.iter().enumerate() {
                out.push(Entry {
                    seq: *seq,
                    span: *span,
                    what: e.what.clone(),
                    detail: if k == 0 {
                        st.clone()
                    } else {
                        format!("→ {st}")
                    },
                    states: Vec::new(),
                });
            }
        }
        out.sort_by_key(|e| e.seq);
        out
    };
    let (ta, tb) = (
        expand(units.first().map(timeline).unwrap_or_default()),
        expand(units.get(1).map(timeline).unwrap_or_default()),
    );
    let located = locate_spans(sources, ta.iter().chain(tb.iter()).map(|e| e.span), false);
    let about = units.first().and_then(|a| a.stream.as_ref()).map_or_else(
        || "recorded request only (no stream)".to_owned(),
        |f| format!("{} · {} events", f.protocol, f.events),
    );
    let mut rows = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ta.len() || j < tb.len() {
        let seq = match (ta.get(i), tb.get(j)) {
            (Some(x), Some(y)) => x.seq.min(y.seq),
            (Some(x), None) => x.seq,
            (None, Some(y)) => y.seq,
            (None, None) => break,
        };
        let (i0, j0) = (i, j);
        while ta.get(i).is_some_and(|e| e.seq == seq) {
            i += 1;
        }
        while tb.get(j).is_some_and(|e| e.seq == seq) {
            j += 1;
        }
        let (ga, gb) = (&ta[i0..i], &tb[j0..j]);
        // A transition recorded without its own event falls back to the part's first span:
        // the furthest span of the position is the position's event.
        let span = ga.iter().chain(gb).map(|e| e.span).max_by_key(|s| s.offset);
        let pos = span.map_or_else(|| format!("event {}", seq + 1), |s| at(&located, seq, s));
        let side = |e: &Entry| Side {
            what: e.what.clone(),
            detail: e.detail.clone(),
        };
        for (x, y) in align(ga, gb) {
            rows.push(CompareRow {
                pos: pos.clone(),
                sides: [x.map(side), y.map(side)],
            });
        }
    }
    Comparison {
        file: path.display().to_string(),
        about,
        runs: [run(0), run(1)],
        rows,
    }
}

/// The entries of one position under two processors, paired: the longest run of entries of the
/// same name in the same order side by side, the others alone on their row.
fn align<'a>(a: &'a [Entry], b: &'a [Entry]) -> Vec<(Option<&'a Entry>, Option<&'a Entry>)> {
    // A position holds a handful of entries; past that, pair them in order.
    if a.len() * b.len() > 10_000 {
        let n = a.len().max(b.len());
        return (0..n).map(|k| (a.get(k), b.get(k))).collect();
    }
    // Longest common subsequence by name.
    let (n, m) = (a.len(), b.len());
    let mut l = vec![vec![0usize; m + 1]; n + 1];
    for x in (0..n).rev() {
        for y in (0..m).rev() {
            l[x][y] = if a[x].what == b[y].what {
                l[x + 1][y + 1] + 1
            } else {
                l[x + 1][y].max(l[x][y + 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut x, mut y) = (0, 0);
    while x < n || y < m {
        if x < n && y < m && a[x].what == b[y].what {
            out.push((Some(&a[x]), Some(&b[y])));
            x += 1;
            y += 1;
        } else if y >= m || (x < n && l[x + 1][y] >= l[x][y + 1]) {
            out.push((Some(&a[x]), None));
            x += 1;
        } else {
            out.push((None, Some(&b[y])));
            y += 1;
        }
    }
    out
}

fn run_json(sources: &SourceMap, a: &Analysis, findings: &[Finding]) -> Value {
    let entries = timeline(a);
    let located = locate_spans(sources, entries.iter().map(|e| e.span), false);
    let timeline: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut v = json!({
                "event": e.seq + 1,
                "what": e.what,
                "detail": e.detail,
                "span": {"offset": e.span.offset, "length": e.span.len},
            });
            if let Some(r) = located.get(&e.span) {
                v["line"] = json!(r.start.line);
            }
            v
        })
        .collect();
    let flocated = locate(sources, findings, false);
    let f = a.stream.as_ref();
    json!({
        "profile": f.map(|f| f.profile.clone()),
        "outcome": f.map(|f| f.outcome.words()),
        "failed": f.is_some_and(|f| f.outcome.failed_at().is_some()),
        "awaiting_execution": f.map(|f| f.awaiting_execution.clone()),
        "timeline": timeline,
        "findings": record::records(sources, &flocated, findings),
    })
}
