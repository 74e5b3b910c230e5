//! Replay of agent logs.
//!
//! Every JSON object of the log is classified by `(type, service, message)`
//! (`agent-log-format.md` §2.2):
//! * `service == "bus" && message == "publishing"`: a bus event, whose `type` is the event name
//!   (the payload is not logged);
//! * `message == "unhandled"`: a stream event the processor did not handle (e.g. `abort`);
//! * `type == "log"`: a logger entry (warnings and errors are kept, with their `error` object);
//! * `step_start`, `tool_use`, `text`, `step_finish` (and `reasoning`) with a `part`: a part
//!   write, validated against the schema and applied to the session model;
//! * `type == "error"`: the session's error (`sessionID` + `error`), a process crash
//!   (`errorType`), or the wrapper's own classification (`exitCode`);
//! * `status` / `input`: a new agent run and its prompt.

use std::io::BufRead;

use crate::core::Format;
use crate::formats::agent_log::read::{AgentLogReader, Decoded, LogRecord, LogStats, Texts};
use crate::ingest::IngestError;
use crate::model::Part;
use crate::model::schema;
use crate::session::{Analysis, Seq};
use crate::source::{FileId, Span};

/// Longest error message kept (a ZodError's issue list must survive whole to be decoded).
const MAX_ERROR_MESSAGE: usize = 256 * 1024;

/// Records handed from the reading thread to the replay at once (or fewer, when they are big).
const BATCH_RECORDS: usize = 512;
/// Bytes of JSON text after which a batch is handed over before it is full.
const BATCH_BYTES: usize = 1 << 20;
/// Batches in flight between the two threads: bounds the memory the reader can run ahead by.
const BATCHES_IN_FLIGHT: usize = 4;

/// Records read together, with the texts of their pending JSON values.
type Batch = (Vec<Result<LogRecord, IngestError>>, std::sync::Arc<Texts>);
/// A batch as the replay receives it: decoded, part events read into the model, each JSON value
/// with how [`LogStats`] counts it.
type ReadyBatch = Vec<(Result<Ready, IngestError>, Option<Decoded>)>;

/// A record ready to be applied. A part event is read whole (its part validated and read into
/// the model, a `step_finish`'s step read) while its batch is decoded in parallel, and its value
/// is freed there: the replay's thread, which applies the records one after the other, only
/// files what was read.
#[derive(Debug)]
enum Ready {
    Record(LogRecord),
    Part(Box<PartEvent>),
    /// A line taken whole that is not one JSON object (see
    /// [`AgentLogReader::with_whole_lines`]): the log must be read again, framed.
    Unframed,
}

/// A part event as [`State::apply_part_event`] applies it.
#[derive(Debug)]
struct PartEvent {
    /// The whole record.
    span: Span,
    /// The record's `sessionID`, when it is a string.
    session: RecordSession,
    prepared: PreparedPart,
    /// What a `step_finish` recorded.
    step: Option<Box<crate::session::StepFinish>>,
}

/// A part event's `sessionID`. It is nearly always its part's own, which the event then does not
/// copy: the copy would be made on the decoding thread and freed on the replay's, which costs
/// more than the copy.
#[derive(Debug)]
enum RecordSession {
    /// Not there, or not a string.
    Absent,
    /// The part's `sessionID`.
    Part,
    Other(String),
}

impl RecordSession {
    fn new(id: Option<std::borrow::Cow<'_, str>>, part: &Part) -> Self {
        match id {
            None => Self::Absent,
            Some(id) if id == part.session_id.as_str() => Self::Part,
            Some(id) => Self::Other(id.into_owned()),
        }
    }

    /// The record's session, given its part's.
    fn get<'a>(&'a self, part: &'a str) -> Option<&'a str> {
        match self {
            Self::Absent => None,
            Self::Part => Some(part),
            Self::Other(id) => Some(id),
        }
    }
}

/// A part event's part as [`State::apply_part`] records it, with its schema issues located.
#[derive(Debug)]
struct PreparedPart {
    part: Part,
    /// Schema issues, each with the span of its value (or of its parent object).
    issues: Vec<(schema::SchemaIssue, Option<Span>)>,
    /// The part's value in the file (where the issues are reported).
    part_span: Span,
    status_span: Option<Span>,
}

/// Live parts from which a diagnosis's replay of a log forgets what it no longer needs (see
/// [`replay_forgetting`]): about 1 MiB of model. Below it (most incident logs) nothing is
/// forgotten, so nothing asks for a second reading. Above it, a higher bound buys nothing but
/// memory to fill: at 16,384 parts (16 MiB) a 44 MB log made 4,200 page faults rather than
/// 1,800, and took 5–7% more time (interleaved runs, `benches/agent_log.sh`'s compact log).
pub const FORGET_FROM_PARTS: usize = 1_024;

/// Builds the session model of an agent log: the whole model, every part of every message.
pub fn replay<R: BufRead + Send>(input: R, file: FileId) -> Result<Analysis, IngestError> {
    // Without a window nothing is forgotten, so nothing asks for a second reading.
    Ok(match run(input, file, None, false)? {
        Forgot::Done(analysis) => *analysis,
        Forgot::Again(_) | Forgot::Reframe => Analysis::new(file, Format::AgentLog),
    })
}

/// Builds the session model of an agent log for a diagnosis, in memory that stops growing with
/// the log: once the model holds `from` live parts, each message is forgotten as soon as it is
/// closed (another message of its session started and none of its tools is pending or running)
/// and `rules` find it quiet, and so is every quiet event. A closed message the rules report on
/// its own is put aside whole until the end. The session summaries count what was forgotten.
///
/// What is loud before anything was forgotten makes the replay keep everything from there on,
/// as [`replay`] does; after, it stops the replay with [`Forgot::Again`]. An event the rules
/// report from what is kept and what follows (an error, say) stops the forgetting there, and so
/// does the record `keep_from` (a reading again after [`Forgot::Again`] with a record). So the
/// findings never depend on what was forgotten: they are those of the whole model.
///
/// Forgetting needs each message closed for good: a write to a message put aside, or to a
/// message id at or below the highest forgotten one of its session (OpenCode's ids ascend),
/// reads the log again.
///
/// With `whole_lines`, a compact log's lines are taken whole rather than framed
/// ([`AgentLogReader::with_whole_lines`]); when one is not a JSON object after all, the replay
/// stops with [`Forgot::Reframe`].
pub fn replay_forgetting<R: BufRead + Send>(
    input: R,
    file: FileId,
    from: usize,
    rules: Box<dyn Forgetting>,
    keep_from: Option<Seq>,
    whole_lines: bool,
) -> Result<Forgot, IngestError> {
    let mut window = Window::new(from, rules);
    window.keep_from = keep_from;
    run(input, file, Some(window), whole_lines)
}

/// What a replay that forgets ends with.
#[derive(Debug)]
pub enum Forgot {
    /// The model: its findings are those of the whole model.
    Done(Box<Analysis>),
    /// Something a rule reports with what was forgotten came after it: the log must be read
    /// again, keeping everything from this record on (`Some`), or the whole model (`None`).
    Again(Option<Seq>),
    /// A line taken whole was not one JSON object: the log must be read again, framed.
    Reframe,
}

/// How [`replay_forgetting_again`] got its model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readings {
    /// Times the log was read (1 to 4).
    pub times: u8,
    /// A line taken whole was not one JSON object: the log was read again, framed (see
    /// [`replay_forgetting`]).
    pub reframed: bool,
    /// The last reading kept everything from this record on.
    pub kept_from: Option<Seq>,
    /// The last reading kept the whole model.
    pub whole: bool,
}

/// [`replay_forgetting`], reading the log again (`open`) as often as it asks: keeping everything
/// from the record a loud one needs, then, if that is not enough, with the whole model
/// ([`replay`]). `rules` makes the rules' tracker of each reading.
pub fn replay_forgetting_again<R: BufRead + Send, E>(
    mut open: impl FnMut() -> Result<R, E>,
    file: FileId,
    from: usize,
    rules: impl Fn() -> Box<dyn Forgetting>,
    error: impl Fn(IngestError) -> E,
) -> Result<(Analysis, Readings), E> {
    let mut readings = Readings::default();
    loop {
        readings.times += 1;
        let whole_lines = !readings.reframed;
        let forgot = replay_forgetting(
            open()?,
            file,
            from,
            rules(),
            readings.kept_from,
            whole_lines,
        );
        match forgot.map_err(&error)? {
            Forgot::Done(analysis) => return Ok((*analysis, readings)),
            // Once: a framed reading takes no line whole.
            Forgot::Reframe => readings.reframed = true,
            // Once: a second reading that needs still more reads the whole model.
            Forgot::Again(Some(record)) if readings.kept_from.is_none() => {
                readings.kept_from = Some(record);
            }
            Forgot::Again(_) => {
                readings.times += 1;
                readings.whole = true;
                let analysis = replay(open()?, file).map_err(&error)?;
                return Ok((analysis, readings));
            }
        }
    }
}

pub use crate::session::forgetting::Forgetting;
pub(crate) use events::api_error;

mod apply;
mod claude;
mod decode;
mod events;
mod log;
mod peek;
mod state;
mod window;

use decode::decode_batch;
use peek::{light, parse_object};
use state::State;
use window::Window;

/// Reads the records of an agent log in batches and hands each to `tx`, decoded on rayon's pool
/// when `parallel` (else on this thread), until the end or until the replay stops taking them.
/// Returns the reader's counts.
fn read_batches<R: BufRead>(
    input: R,
    file: FileId,
    whole_lines: bool,
    parallel: bool,
    tx: &std::sync::mpsc::SyncSender<InFlight>,
) -> LogStats {
    let mut reader = AgentLogReader::new(input, file)
        .with_light(light)
        .with_object_parser(parse_object)
        .deferred();
    if whole_lines {
        reader = reader.with_whole_lines();
    }
    let decoding = reader.decoding();
    let mut batch = Vec::with_capacity(BATCH_RECORDS);
    let mut bytes = 0;
    loop {
        let record = reader.next();
        let last = record.is_none();
        if let Some(record) = record {
            bytes += match &record {
                Ok(LogRecord::Pending(p)) => p.text_len(),
                _ => 64,
            };
            batch.push(record);
        }
        if batch.len() >= BATCH_RECORDS || bytes >= BATCH_BYTES || (last && !batch.is_empty()) {
            bytes = 0;
            let records = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_RECORDS));
            let full = (records, reader.take_texts());
            let in_flight = if parallel {
                let (done, decoded) = std::sync::mpsc::sync_channel(1);
                rayon::spawn(move || {
                    // A panic is handed to the replay, which resumes it on its thread.
                    let decode = std::panic::AssertUnwindSafe(|| decode_batch(full, decoding));
                    let result = std::panic::catch_unwind(decode);
                    let _ = done.send(result);
                });
                InFlight::Decoding(decoded)
            } else {
                InFlight::Decoded(decode_batch(full, decoding))
            };
            if tx.send(in_flight).is_err() {
                // The replay stopped (on an error): nothing more is wanted.
                break;
            }
        }
        if last {
            break;
        }
    }
    let mut stats = reader.stats().clone();
    (stats.json_stamp_ms, stats.last_stamp_ms) = reader.stamps();
    stats
}

/// Builds the session model of an agent log, forgetting what `window` allows.
///
/// Reading and re-joining the records runs on its own thread, which hands each batch's JSON
/// values (most of the work) to rayon's pool to be decoded and reads on; the replay applies the
/// decoded batches in file order. A bounded number of batches is in flight at once.
fn run<R: BufRead + Send>(
    input: R,
    file: FileId,
    window: Option<Window>,
    whole_lines: bool,
) -> Result<Forgot, IngestError> {
    // On a rayon worker (files diagnosed in parallel), the pool may be busy with replays waiting
    // for their batches: decode on the reading thread itself rather than queue work behind them.
    let parallel = rayon::current_thread_index().is_none();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<InFlight>(BATCHES_IN_FLIGHT);
        // Out of memory or threads (an address-space limit): an error, not a panic.
        let reading = std::thread::Builder::new()
            .spawn_scoped(scope, move || {
                read_batches(input, file, whole_lines, parallel, &tx)
            })
            .map_err(|e| {
                IngestError::Io(std::io::Error::new(
                    e.kind(),
                    format!("cannot start a thread to read the log: {e}"),
                ))
            })?;
        let mut state = State::new(file);
        state.window = window;
        let mut decoded_stats = LogStats::default();
        let mut seq: Seq = 0;
        let mut reframe = false;
        'batches: for in_flight in rx.iter() {
            let batch = match in_flight {
                InFlight::Decoded(batch) => batch,
                InFlight::Decoding(decoded) => match decoded.recv() {
                    Ok(Ok(batch)) => batch,
                    Ok(Err(panic)) => std::panic::resume_unwind(panic),
                    // The job ended without an answer: it cannot, short of a panic it handed over.
                    Err(_) => break,
                },
            };
            for (record, kind) in batch {
                if let Some(kind) = kind {
                    decoded_stats.count_decoded(kind);
                }
                state.reach(seq);
                match record? {
                    Ready::Record(record) => state.apply(seq, record),
                    Ready::Part(event) => state.apply_part_event(seq, *event),
                    Ready::Unframed => {
                        reframe = true;
                        break 'batches;
                    }
                }
                seq += 1;
            }
            if state.again() {
                break;
            }
        }
        // The reader stops at its next hand-over.
        drop(rx);
        let stats = match reading.join() {
            Ok(stats) => stats,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if reframe {
            return Ok(Forgot::Reframe);
        }
        let mut analysis = match state.finish() {
            Ok(analysis) => analysis,
            Err(keep_from) => return Ok(Forgot::Again(keep_from)),
        };
        let counts = &mut analysis.counts;
        counts.insert("lines", stats.lines);
        counts.insert(
            "json objects",
            stats.json_objects + decoded_stats.json_objects,
        );
        counts.insert(
            "undecodable objects",
            stats.undecodable + decoded_stats.undecodable,
        );
        counts.insert(
            "raw error dumps",
            stats.raw_errors + decoded_stats.raw_errors,
        );
        counts.insert("text lines", stats.text_lines + decoded_stats.text_lines);
        counts.insert("rejoined splits", stats.rejoined_splits);
        if let Some(tail) = &mut analysis.tail
            && let (Some(last), Some(end)) = (stats.json_stamp_ms, stats.last_stamp_ms)
        {
            tail.quiet_ms = Some(end.saturating_sub(last));
        }
        Ok(Forgot::Done(Box::new(analysis)))
    })
}

/// A batch handed from the reading thread to the replay: being decoded on rayon's pool, or
/// decoded on the reading thread.
enum InFlight {
    Decoding(std::sync::mpsc::Receiver<std::thread::Result<ReadyBatch>>),
    Decoded(ReadyBatch),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::EventKind;

    const P: &str = "[2026-02-01T12:30:28.417Z] [INFO] ";

    pub(super) fn run(log: &str) -> Analysis {
        replay(log.as_bytes(), FileId(0))
            .unwrap_or_else(|_| Analysis::new(FileId(0), Format::AgentLog))
    }

    #[test]
    fn rebuilds_parts_and_tool_history() {
        let log = [
            r#"{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"step-start"}}"#,
            r#"{"type":"tool_use","timestamp":2,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","state":{"status":"pending","input":{},"raw":""}}}"#,
            r#"{"type":"tool_use","timestamp":3,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","state":{"status":"running","input":{"a":1},"time":{"start":3}}}}"#,
        ]
        .join("\n");
        let a = run(&log);
        assert_eq!(a.sessions.len(), 1);
        let m = &a.sessions[0].messages[0];
        assert_eq!(m.count("step-start"), 1);
        let tool = &m.parts[1];
        assert_eq!(tool.status_path(), ["pending", "running"]);
        assert!(tool.status_span().is_some());
        assert!(a.schema_issues.is_empty());
    }

    #[test]
    fn classifies_errors_and_lifecycle() {
        let log = format!(
            "{P}{{\"type\":\"status\",\"mode\":\"stdin-stream\"}}\n\
             {P}{{\"type\":\"error\",\"timestamp\":1,\"sessionID\":\"ses_1\",\"error\":\"The operation timed out.\"}}\n\
             {P}{{\"type\":\"log\",\"level\":\"error\",\"service\":\"session.processor\",\"error\":{{\"name\":\"AI_JSONParseError\",\"cause\":{{}},\"text\":\"{{\\\"id\\\":\\\"x-1data:{{\\\"id\\\":2}}\"}},\"message\":\"process\"}}\n\
             {P}{{\"type\":\"session.error\",\"level\":\"info\",\"service\":\"bus\",\"message\":\"publishing\"}}\n\
             {P}{{\"type\":\"log\",\"level\":\"info\",\"service\":\"session.prompt\",\"sessionID\":\"ses_1\",\"message\":\"cancel\"}}\n\
             {P}{{\"type\":\"abort\",\"level\":\"info\",\"service\":\"session.processor\",\"reason\":\"x\",\"message\":\"unhandled\"}}\n\
             {P}{{\"type\":\"error\",\"errorType\":\"UnhandledRejection\",\"message\":\"boom\",\"stack\":\"AI_RetryError: boom\\n at x\"}}\n"
        );
        let a = run(&log);
        let kinds: Vec<&str> = a
            .events
            .iter()
            .map(|e| match &e.kind {
                EventKind::RunStart => "run",
                EventKind::SessionError(_) => "session-error",
                EventKind::Log { .. } => "log",
                EventKind::BusSessionError => "bus-error",
                EventKind::Cancel => "cancel",
                EventKind::StreamUnhandled { .. } => "unhandled",
                EventKind::ProcessCrash(_) => "crash",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "run",
                "session-error",
                "log",
                "bus-error",
                "cancel",
                "unhandled",
                "crash"
            ]
        );
        let EventKind::Log {
            error: Some(err), ..
        } = &a.events[2].kind
        else {
            panic!("expected a log error");
        };
        assert_eq!(err.name.as_deref(), Some("AI_JSONParseError"));
        assert!(err.embedded_event.is_some());
        let EventKind::ProcessCrash(crash) = &a.events[6].kind else {
            panic!("expected a crash");
        };
        assert_eq!(crash.wrapped.as_deref(), Some("AI_RetryError"));
        assert_eq!(a.events[1].session.as_deref(), Some("ses_1"));
    }

    #[test]
    fn invalid_parts_are_recorded_with_spans() {
        let log = r#"{"type":"tool_use","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_9","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c","tool":"edit","state":{"status":"failed","input":{},"error":"x","time":{"start":1,"end":2}}}}"#;
        let a = run(log);
        assert_eq!(a.schema_issues.len(), 1);
        let (issue, span) = &a.schema_issues[0].issues[0];
        assert_eq!(issue.path.to_string(), "state.status");
        let span = span.unwrap_or(Span::new(FileId(0), 0, 0));
        assert_eq!(
            &log[span.offset as usize..span.end() as usize],
            "\"failed\""
        );
    }

    #[test]
    fn sse_body_previews_become_embedded_streams() {
        let log = format!(
            "{P}{{\"type\":\"log\",\"level\":\"debug\",\"service\":\"http\",\"callNum\":3,\"bodyPreview\":\"data: {{\\\"id\\\":1}}\\n\\ndata: {{\\\"id\\\":2... [truncated, total 9000 chars]\",\"message\":\"HTTP response body (stream)\"}}\n"
        );
        let a = run(&log);
        assert_eq!(a.embedded_streams.len(), 1, "{log}");
        let e = &a.embedded_streams[0];
        assert_eq!(e.text, "data: {\"id\":1}\n\ndata: {\"id\":2");
        let cut = e.cut.clone().unwrap_or(crate::session::BodyCut {
            kept: 0,
            total: None,
            span: Span::new(FileId(0), 0, 0),
        });
        assert_eq!(cut.total, Some(9000));
        assert!(log[cut.span.offset as usize..].starts_with("... [truncated"));
        let span = e.locator.span(6, 14);
        assert_eq!(
            &log[span.offset as usize..span.end() as usize],
            "{\\\"id\\\":1}"
        );
    }

    #[test]
    fn retry_errors_get_a_message() {
        let log = r#"{"type":"log","level":"error","service":"session.prompt","error":{"name":"AI_RetryError","reason":"maxRetriesExceeded","errors":[{"name":"AI_APICallError","statusCode":429,"data":{"error":{"message":"Rate limit exceeded."}}}],"lastError":{"name":"AI_APICallError","statusCode":429,"data":{"error":{"message":"Rate limit exceeded."}}}},"message":"process"}"#;
        let a = run(log);
        let EventKind::Log {
            error: Some(err), ..
        } = &a.events[0].kind
        else {
            panic!("expected a log error");
        };
        assert_eq!(
            err.message,
            "AI_RetryError (maxRetriesExceeded) after 1 attempt; last error: AI_APICallError 429: Rate limit exceeded."
        );
        assert_eq!(err.wrapped.as_deref(), Some("AI_APICallError"));
    }

    #[test]
    fn incident_evidence_becomes_events() {
        let log = [
            r#"{"type":"log","level":"info","service":"default","command":"bun agent --model kilo/glm-5-free --verbose","message":"Agent started (continuous mode)"}"#,
            r#"{"type":"log","level":"info","service":"default","providerID":"opencode","modelID":"kimi-k2.5-free","message":"using explicit provider/model"}"#,
            r#"{"type":"log","level":"info","service":"retry-fetch","retryAfterMs":44548000,"delay":44548000,"message":"using retry-after value"}"#,
            r#"{"type":"log","level":"info","service":"retry-fetch","sessionID":"opencode","attempt":1,"delay":46327183,"message":"rate limited, will retry"}"#,
            r#"{"type":"log","level":"warn","service":"session.processor","providerMetadata":"{\"anthropic\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":2}}}","message":"zero"}"#,
            r#"{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"id":"prt_9","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":{"unified":"tool-calls"},"cost":0,"tokens":{"input":0,"output":0}}}"#,
            r#"{"type":"log","level":"info","service":"session.prompt","sessionID":"ses_1","message":"exiting loop"}"#,
            r#"{"type":"log","level":"error","service":"session.prompt","error":"ProviderModelNotFoundError","message":"Failed to initialize"}"#,
            "1433 |   throw new ModelNotFoundError({ providerID })",
            "           ^",
            "ProviderModelNotFoundError: ProviderModelNotFoundError",
            "✅ Agent command completed",
        ]
        .join("\n");
        let a = run(&log);
        let kinds: Vec<&EventKind> = a.events.iter().map(|e| &e.kind).collect();
        assert!(
            matches!(kinds[0], EventKind::ModelRequested { spec, .. } if spec == "kilo/glm-5-free")
        );
        assert!(
            matches!(kinds[1], EventKind::ModelResolved(m) if m.raw == "opencode/kimi-k2.5-free")
        );
        assert!(matches!(
            kinds[2],
            EventKind::RetryWait(w) if w.delay_ms == 46327183
                && matches!(w.retry_after, Some((44548000, _)))
        ));
        assert!(matches!(
            kinds[3],
            EventKind::ProviderUsage(u) if u.input == 10 && u.output == 2
        ));
        assert!(matches!(kinds[4], EventKind::Log { error: None, .. }));
        let EventKind::StepFinished(step) = kinds[5] else {
            panic!("expected a step finish: {kinds:?}");
        };
        assert!(step.reason_not_string && step.zero_usage);
        assert!(matches!(kinds[6], EventKind::LoopExit));
        assert!(
            matches!(kinds[7], EventKind::Log { error: Some(e), .. } if e.name.as_deref() == Some("ProviderModelNotFoundError"))
        );
        assert!(
            matches!(kinds[8], EventKind::RawError(e) if e.name.as_deref() == Some("ProviderModelNotFoundError"))
        );
        assert!(matches!(
            kinds[9],
            EventKind::WrapperStatus { success: true, .. }
        ));
        // `opencode` in a retry-fetch record is the provider, not a session.
        assert!(a.events[2].session.is_none());
        assert!(a.session("opencode").is_none());
    }

    #[test]
    fn claude_code_stream_json_is_a_session() {
        let log = [
            r#"{"type":"system","subtype":"init","session_id":"u-1"}"#,
            r#"{"type":"assistant","message":{"id":"msg_a","model":"claude","content":[{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]},"session_id":"u-1"}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"session_id":"u-1"}"#,
            r#"{"type":"assistant","message":{"id":"msg_b","model":"<synthetic>","content":[{"type":"text","text":"API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Could not process image\"}}"}]},"session_id":"u-1"}"#,
            r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400","session_id":"u-1"}"#,
        ]
        .join("\n");
        let a = run(&log);
        let s = a.session("u-1").map(|s| s.messages.len());
        assert_eq!(s, Some(1));
        let tool = a
            .parts()
            .find_map(|(_, _, p)| p.part.tool().map(|t| t.state.status_name()));
        assert_eq!(tool.as_deref(), Some("completed"));
        let errors: Vec<String> = a
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::SessionError(i) => Some(i.message.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 2);
        assert!(errors[0].contains("Could not process image"));
    }
}
