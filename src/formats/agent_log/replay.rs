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

// The replay's indexes are looked up once or more per record, keyed by ids the log names, where
// std's SipHash costs more than the lookups need.
use crate::FastMap;
use std::hash::BuildHasher;
use std::io::BufRead;

use serde_json::Value;

use crate::core::Format;
use crate::formats::agent_log::read::{
    AgentLogReader, BusEvent, Decoded, Decoding, JsonRecord, Light, LogRecord, LogStats, Pending,
    RecordView, Texts,
};
use crate::ingest::IngestError;
use crate::json::log_value::{self, Discard};
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, cap_strings, cap_strings_in_place};
use crate::model::schema;
use crate::model::{Part, TOOL_ABORTED};
use crate::protocols::capture;
use crate::session::{
    Analysis, ErrorInfo, Event, EventKind, LogLevel, Message, Observation, PartRecord,
    PayloadIssues, Seq, Session, Undecodable,
};
use crate::source::{FileId, Span};
use crate::text::capped;

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

pub use crate::session::forgetting::{Forgetting, Verdict};

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
        let reading = scope.spawn(move || {
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
                if batch.len() >= BATCH_RECORDS
                    || bytes >= BATCH_BYTES
                    || (last && !batch.is_empty())
                {
                    bytes = 0;
                    let records = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_RECORDS));
                    let full = (records, reader.take_texts());
                    let in_flight = if parallel {
                        let (done, decoded) = std::sync::mpsc::sync_channel(1);
                        rayon::spawn(move || {
                            // A panic is handed to the replay, which resumes it on its thread.
                            let decode =
                                std::panic::AssertUnwindSafe(|| decode_batch(full, decoding));
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
            reader.stats().clone()
        });
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
        Ok(Forgot::Done(Box::new(analysis)))
    })
}

/// A batch handed from the reading thread to the replay: being decoded on rayon's pool, or
/// decoded on the reading thread.
enum InFlight {
    Decoding(std::sync::mpsc::Receiver<std::thread::Result<ReadyBatch>>),
    Decoded(ReadyBatch),
}

/// A string field as `apply_json` reads it (`get(k).and_then(Value::as_str)`): any other value
/// counts as absent.
#[derive(Default, Debug, PartialEq)]
struct Lenient<'a>(Option<std::borrow::Cow<'a, str>>);

impl Lenient<'_> {
    fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Lenient<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Lenient<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Lenient(Some(v.to_owned().into())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Lenient(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_element_seed(Discard)?.is_some() {}
                Ok(Lenient(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Self::Value, A::Error> {
                while a.next_key_seed(Discard)?.is_some() {
                    a.next_value_seed(Discard)?;
                }
                Ok(Lenient(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a key is present, whatever its value (`null` included).
#[derive(Default, Debug, PartialEq)]
struct Seen(bool);

impl<'de> serde::Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Discard::deserialize(d).map(|_| Seen(true))
    }
}

/// What a key of an object tells the light readings ([`Peek`], `flat_peek`).
enum PeekKey {
    /// One of the fields they read: its index in [`Peek`]'s order.
    Field(usize),
    /// A key only an object the full path must read has (a part event, an early compact log
    /// entry, a Claude Code record, provider metadata).
    RuledOut,
    Other,
}

/// What `key` tells the light readings. This runs on every key of every light record: the length
/// picks the candidates, compared as fixed-size arrays (a word or two at once), not by `memcmp`.
fn peek_key(key: &str) -> PeekKey {
    fn is<const N: usize>(k: &[u8], word: &[u8; N]) -> bool {
        k.first_chunk::<N>() == Some(word)
    }
    let k = key.as_bytes();
    match k.len() {
        3 if is(k, b"log") => PeekKey::RuledOut,
        4 if is(k, b"type") => PeekKey::Field(0),
        4 if is(k, b"part") => PeekKey::RuledOut,
        5 if is(k, b"level") => PeekKey::Field(1),
        7 if is(k, b"service") => PeekKey::Field(2),
        7 if is(k, b"message") => PeekKey::Field(3),
        7 if is(k, b"modelID") => PeekKey::Field(6),
        8 if is(k, b"rawModel") => PeekKey::Field(7),
        9 if is(k, b"sessionID") => PeekKey::Field(4),
        10 if is(k, b"providerID") => PeekKey::Field(5),
        10 if is(k, b"session_id") => PeekKey::RuledOut,
        16 if is(k, b"providerMetadata") => PeekKey::RuledOut,
        _ => PeekKey::Other,
    }
}

/// The fields of a JSON object that tell whether `apply_json` needs more of it than [`Light`].
///
/// Read by hand rather than derived: the other members are walked with [`Discard`], which refuses
/// what building a `Value` refuses (a derived reader skips them with `IgnoredAny`, which accepts
/// lone surrogates, numbers out of range and nesting beyond the recursion limit), so an object
/// that reads as a `Peek` also reads as a `Value`. A key that alone rules the object out (`part`,
/// `log`, Claude Code's `session_id`, `providerMetadata`) ends the reading at once: the object
/// takes the full path, and its value (a part event's part, most of its bytes) is not walked
/// twice.
#[derive(Default, Debug, PartialEq)]
struct Peek<'a> {
    ty: Lenient<'a>,
    level: Lenient<'a>,
    service: Lenient<'a>,
    message: Lenient<'a>,
    /// `sessionID`.
    session_id: Lenient<'a>,
    provider_id: Seen,
    model_id: Seen,
    raw_model: Seen,
}

impl<'a> Peek<'a> {
    /// Sets the field of index `field` (in [`peek_key`]'s order) as the flat readings read it:
    /// `value` is a string's contents, `None` another plain value.
    #[inline(always)]
    fn set(&mut self, field: usize, value: Option<&'a str>) {
        let lenient = Lenient(value.map(std::borrow::Cow::Borrowed));
        match field {
            0 => self.ty = lenient,
            1 => self.level = lenient,
            2 => self.service = lenient,
            3 => self.message = lenient,
            4 => self.session_id = lenient,
            5 => self.provider_id = Seen(true),
            6 => self.model_id = Seen(true),
            _ => self.raw_model = Seen(true),
        }
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Peek<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Peek<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Peek<'de>, A::Error> {
                let mut p = Peek::default();
                // A key met twice is refused (the object then takes the full path).
                let mut met = [false; 8];
                while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                    let field = match peek_key(key.as_deref().unwrap_or_default()) {
                        PeekKey::Field(field) => field,
                        PeekKey::RuledOut => {
                            return Err(serde::de::Error::custom("not a light object"));
                        }
                        PeekKey::Other => {
                            map.next_value_seed(Discard)?;
                            continue;
                        }
                    };
                    if std::mem::replace(&mut met[field], true) {
                        return Err(serde::de::Error::custom("a key met twice"));
                    }
                    match field {
                        0 => p.ty = map.next_value()?,
                        1 => p.level = map.next_value()?,
                        2 => p.service = map.next_value()?,
                        3 => p.message = map.next_value()?,
                        4 => p.session_id = map.next_value()?,
                        5 => p.provider_id = map.next_value()?,
                        6 => p.model_id = map.next_value()?,
                        _ => p.raw_model = map.next_value()?,
                    }
                }
                Ok(p)
            }
        }
        d.deserialize_map(V)
    }
}

/// How the replay parses a log's JSON object: without building the heavy fields of a part
/// event's part (see [`log_value`]).
fn parse_object(text: &str) -> serde_json::Result<Value> {
    log_value::parse(text)
}

/// What [`flat_peek`] made of an object.
#[derive(Debug, PartialEq)]
enum Flat<'a> {
    /// What reading it as a [`Peek`] gives.
    Peek(Peek<'a>),
    /// A key that rules it out (reading it as a [`Peek`] fails too).
    RuledOut,
    /// Not a flat object of plain values: read it as a [`Peek`].
    Unsure,
}

/// Most logger entries and bus events are flat objects of plain values: keys without escapes,
/// strings (with escapes only where their text is not read: a git hash's `\n`), short decimal
/// numbers, `true`, `false`, `null`. Such an object is read here ([`flat_fast`] when it is
/// compact and has no escapes, else [`flat_slow`]), much faster than through serde; anything
/// else (an escaped key or read string, a control character, a lone surrogate, a nested value,
/// an exponent, a long number, a key met twice) is [`Flat::Unsure`], and what is read is what
/// reading it as a [`Peek`] would read, so an object this takes also reads as a `Value`.
fn flat_peek(text: &str) -> Flat<'_> {
    flat_fast(text).unwrap_or_else(|| flat_slow(text))
}

/// [`flat_peek`] of the commonest object: written compact (no whitespace), and without a
/// backslash or a control byte in any string. A string then ends at the next quote: the quotes
/// of each 64-byte block are found at once ([`Quotes`]) and the object is read from quote to
/// quote, where [`flat_slow`] reads it byte by byte. `None` leaves the object to [`flat_slow`]
/// (anything else: whitespace, an escape, a nested value); what this reads, that reads the same
/// (tested).
fn flat_fast(text: &str) -> Option<Flat<'_>> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut p = Peek::default();
    if b.len() == 2 {
        return Some(Flat::Peek(p));
    }
    let mut quotes = Quotes {
        b,
        block: usize::MAX,
        stops: 0,
    };
    let mut met = [false; 8];
    let mut i = 1;
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let k = quotes.next(i + 1)?;
        // Cuts fall on ASCII quotes: character boundaries.
        let key = text.get(i + 1..k)?;
        if b.get(k + 1) != Some(&b':') {
            return None;
        }
        let field = match peek_key(key) {
            PeekKey::Field(field) => field,
            PeekKey::RuledOut => return Some(Flat::RuledOut),
            PeekKey::Other => 8,
        };
        let v = k + 2;
        let (value, end) = if b.get(v) == Some(&b'"') {
            let e = quotes.next(v + 1)?;
            (Some(text.get(v + 1..e)?), e + 1)
        } else {
            (None, plain_scalar(b, v)?)
        };
        if field < 8 {
            if std::mem::replace(&mut met[field], true) {
                return None;
            }
            p.set(field, value);
        }
        match b.get(end) {
            Some(b',') => i = end + 1,
            Some(b'}') => return (end + 1 == b.len()).then_some(Flat::Peek(p)),
            _ => return None,
        }
    }
}

/// The quotes of a text without backslashes or control bytes, found 64 bytes at a time.
struct Quotes<'a> {
    b: &'a [u8],
    /// The block `stops` holds (`usize::MAX`: none yet).
    block: usize,
    /// The quotes and control bytes of `block`.
    stops: u64,
}

impl Quotes<'_> {
    /// The index of the first quote at or after `from`; `None` when there is none, or a block
    /// it reads holds a backslash, or a control byte comes first.
    #[inline(always)]
    fn next(&mut self, mut from: usize) -> Option<usize> {
        loop {
            // Most strings end in the block they start in, whose masks are at hand.
            let block = from / 64;
            if block != self.block {
                self.load(block)?;
            }
            let live = self.stops & (!0u64 << (from % 64));
            if live != 0 {
                let k = block * 64 + live.trailing_zeros() as usize;
                return (self.b.get(k) == Some(&b'"')).then_some(k);
            }
            from = (block + 1) * 64;
        }
    }

    /// Reads the masks of block `block`: `None` past the end, or when it holds a backslash.
    #[inline(never)]
    fn load(&mut self, block: usize) -> Option<()> {
        let bytes = self.b.get(block * 64..)?;
        let (stops, backslashes) = match bytes.get(..64) {
            Some(full) => crate::model::conform::string_masks(full),
            None => {
                let mut padded = [b' '; 64];
                padded[..bytes.len()].copy_from_slice(bytes);
                crate::model::conform::string_masks(&padded)
            }
        };
        if backslashes != 0 {
            return None;
        }
        (self.block, self.stops) = (block, stops);
        Some(())
    }
}

/// The index after the number or literal (`true`, `false`, `null`) starting at `i`, if it is one
/// the flat readings take: -?(0|[1-9][0-9]*)(\.[0-9]+)?, at most 15 digits on each side.
fn plain_scalar(b: &[u8], i: usize) -> Option<usize> {
    let literal = |word: &[u8]| {
        b.get(i..i + word.len())
            .filter(|w| *w == word)
            .map(|_| i + word.len())
    };
    match *b.get(i)? {
        b't' => literal(b"true"),
        b'f' => literal(b"false"),
        b'n' => literal(b"null"),
        _ => {
            let mut j = i + usize::from(b.get(i) == Some(&b'-'));
            let digits = |j: usize| {
                b.get(j..)
                    .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
            };
            let int = digits(j);
            if int == 0 || int > 15 || (int > 1 && b.get(j) == Some(&b'0')) {
                return None;
            }
            j += int;
            if b.get(j) == Some(&b'.') {
                let frac = digits(j + 1);
                if frac == 0 || frac > 15 {
                    return None;
                }
                j += 1 + frac;
            }
            match b.get(j) {
                Some(b'e' | b'E') => None,
                _ => Some(j),
            }
        }
    }
}

/// [`flat_peek`] byte by byte, for any flat object.
fn flat_slow(text: &str) -> Flat<'_> {
    let b = text.as_bytes();
    let ws = |mut i: usize| {
        while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            i += 1;
        }
        i
    };
    // A string starting at `i` (a `"`) that serde_json reads the same: its contents when it has
    // no escapes, and the index after it.
    let string = |i: usize| -> Option<(Option<&str>, usize)> {
        let (k, escaped) = crate::model::conform::string_end(b, i + 1)?;
        // The cut falls on ASCII `"`: a character boundary.
        let contents = if escaped {
            None
        } else {
            Some(text.get(i + 1..k)?)
        };
        Some((contents, k + 1))
    };
    // The index after a plain value (number, literal or string) starting at `i`, and whether it
    // is a string with escapes.
    let plain = |i: usize| -> Option<(usize, bool)> {
        match *b.get(i)? {
            b'"' => string(i).map(|(contents, end)| (end, contents.is_none())),
            _ => plain_scalar(b, i).map(|end| (end, false)),
        }
    };
    let mut p = Peek::default();
    let mut met = [false; 8];
    let mut i = ws(0);
    if b.get(i) != Some(&b'{') {
        return Flat::Unsure;
    }
    i = ws(i + 1);
    if b.get(i) == Some(&b'}') {
        return match b.get(ws(i + 1)) {
            None => Flat::Peek(p),
            Some(_) => Flat::Unsure,
        };
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Flat::Unsure;
        }
        // An escaped key is left to serde_json, which decodes it.
        let Some((Some(key), after)) = string(i) else {
            return Flat::Unsure;
        };
        i = ws(after);
        if b.get(i) != Some(&b':') {
            return Flat::Unsure;
        }
        i = ws(i + 1);
        let field = match peek_key(key) {
            PeekKey::Field(field) => field,
            PeekKey::RuledOut => return Flat::RuledOut,
            PeekKey::Other => 8,
        };
        let value_start = i;
        let Some((end, escaped)) = plain(i) else {
            return Flat::Unsure;
        };
        // A field read as a string must be decoded: left to serde_json. A field only seen, or a
        // member not read, may have escapes.
        if field < 5 && escaped {
            return Flat::Unsure;
        }
        if field < 8 {
            if std::mem::replace(&mut met[field], true) {
                return Flat::Unsure;
            }
            let value = match b.get(value_start) {
                Some(b'"') => text.get(value_start + 1..end - 1),
                _ => None,
            };
            p.set(field, value);
        }
        i = ws(end);
        match b.get(i) {
            Some(b',') => i = ws(i + 1),
            Some(b'}') => {
                return match b.get(ws(i + 1)) {
                    None => Flat::Peek(p),
                    Some(_) => Flat::Unsure,
                };
            }
            _ => return Flat::Unsure,
        }
    }
}

/// Longest object [`light`] looks at.
const LIGHT_MAX: usize = 4096;

/// A JSON object `apply_json` reads nothing of but its session and, for a bus event, its name:
/// a logger entry below `warn` that none of `apply_log`'s rules looks at, or a bus event. Any
/// doubt leaves it to the full path.
fn light(text: &str) -> Option<Light> {
    // Logger entries and bus events are short; long objects (parts, HTTP bodies) are not worth
    // a look before their full decoding.
    if text.len() > LIGHT_MAX {
        return None;
    }
    let p: Peek<'_> = match flat_peek(text) {
        Flat::Peek(p) => p,
        Flat::RuledOut => return None,
        Flat::Unsure => serde_json::from_str(text).ok()?,
    };
    let ty = p.ty.get()?;
    let service = p.service.get().unwrap_or_default();
    let message = p.message.get().unwrap_or_default();
    let session = p
        .session_id
        .get()
        .filter(|id| id.starts_with("ses"))
        .map(str::to_owned);
    if service == "bus" && message == "publishing" {
        let bus = match ty {
            "session.error" => BusEvent::SessionError,
            "session.idle" => BusEvent::Idle,
            _ => BusEvent::Other,
        };
        return Some(Light {
            session,
            bus: Some(bus),
        });
    }
    let plain = ty == "log"
        && !matches!(p.level.get(), Some("error" | "warn"))
        && service != "http"
        && !(service == "session.prompt" && message == "cancel")
        && message != "unhandled"
        && message != "exiting loop"
        && !message.starts_with("Agent started")
        && !mentions_retry(message)
        // `apply_log` reads a model resolution from these (and only then).
        && !(p.provider_id.0 && p.model_id.0 && (p.raw_model.0 || service == "default"));
    plain.then_some(Light { session, bus: None })
}

/// Whether a logger message speaks of a retry or a sleep (in ASCII letters of any case), what
/// `apply_log` looks for: one pass over the message, without a copy (messages are short). Each
/// word's first four letters are compared at once: `| 0x20` lowers an ASCII letter (and makes
/// no other byte a letter), so four bytes lowered match a word's four lower-case letters only
/// when they are those letters in any case.
fn mentions_retry(message: &str) -> bool {
    const RETR: u32 = u32::from_le_bytes(*b"retr");
    const WILL: u32 = u32::from_le_bytes(*b"will");
    const SLEE: u32 = u32::from_le_bytes(*b"slee");
    let b = message.as_bytes();
    let at = |i: usize, word: &[u8]| {
        b.get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    // Every word has at least five letters.
    b.windows(5).enumerate().any(|(i, w)| {
        match u32::from_le_bytes([w[0], w[1], w[2], w[3]]) | 0x2020_2020 {
            RETR => at(i, b"retry-after") || at(i, b"retrying"),
            WILL => at(i, b"will retry"),
            SLEE => w[4] | 0x20 == b'p',
            _ => false,
        }
    })
}

/// Decodes the pending JSON values of `batch`, each with how [`LogStats`] counts it.
fn decode_batch((records, texts): Batch, decoding: Decoding) -> ReadyBatch {
    records
        .into_iter()
        .map(|record| match record {
            Ok(LogRecord::Pending(p)) => {
                let (ready, kind) = decode_pending(p, &texts, decoding);
                (Ok(ready), Some(kind))
            }
            other => (other.map(Ready::Record), None),
        })
        .collect()
}

/// What [`ready`] makes of a value decoded, read without building its value where it can be: a
/// light record (`decoding.light`) or a part event ([`part_event`]) is read from its text. The
/// text is borrowed from the batch's `texts`, not shared, until a record keeps it. A line taken
/// whole that does not decode is [`Ready::Unframed`].
fn decode_pending(
    p: Pending,
    texts: &std::sync::Arc<Texts>,
    mut decoding: Decoding,
) -> (Ready, Decoded) {
    if let Some(view) = p.view(texts) {
        if let Some(light) = decoding.light.and_then(|filter| filter(view.text)) {
            let record = LogRecord::Light {
                span: view.span,
                light,
            };
            return (Ready::Record(record), Decoded::JsonObject);
        }
        if let Some(event) = part_event(&view) {
            return (Ready::Part(Box::new(event)), Decoded::JsonObject);
        }
        // Not light: `decode` need not ask again.
        decoding.light = None;
    }
    let whole_line = p.whole_line();
    let decoded = p.decode(texts, decoding);
    let kind = decoded.decoded();
    if whole_line && kind == Decoded::Undecodable {
        return (Ready::Unframed, kind);
    }
    (ready(decoded), kind)
}

/// A part event (`step_start`, `step_finish`, `tool_use`, `text`, `reasoning`) read from its
/// text, without building its value: what [`ready`] makes of it. Most of a log's bytes are in
/// these records (a tool's output, a step's two events), and building a `Value` of every key of
/// each, to validate it, slim it and read it, costs more than the rest of the replay. `None`
/// leaves the record to [`ready`], which reads it whole:
///
/// * unless the record reads as an object whose `type`, `service`, `message` and `sessionID` are
///   each written at most once, and [`ready`] would take it for a part event;
/// * unless its part satisfies the schema (so it has no issue to locate) and is a text,
///   reasoning, tool or step part, which `model::read::logged_part` reads as [`slim`] and
///   `Part::from_value` read it;
/// * unless the part's `id`, `sessionID`, `messageID`, `reason`, `tokens` and `model` are each
///   written at most once, and a `step_finish`'s token counts repeat no key.
///
/// The record is walked by `model::conform`, which says yes only to JSON that serde_json reads
/// (and no to anything it is not sure of), so a record this reads is one `log_value::parse`
/// reads too. The test `part_events_read_as_ready_reads_them` holds the two readings together.
fn part_event(rec: &RecordView<'_>) -> Option<PartEvent> {
    let text = rec.text;
    // Most records are not part events: a look for the key costs less than reading the
    // envelope. The finder is built once.
    static PART: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"part\""));
    PART.find(text.as_bytes())?;
    // The record is walked once: validated, its part read, and where its members are found.
    let logged = crate::model::read::logged_part(text, MAX_KEPT_STRING)?;
    let raw = |r: Option<(usize, usize)>| r.and_then(|(s, e)| text.get(s..e));
    let str_at = |r| raw(r).and_then(crate::model::read::json_str);
    let ty = str_at(logged.top.ty)?;
    let (service, message) = (str_at(logged.top.service), str_at(logged.top.message));
    if !matches!(
        &*ty,
        "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
    ) || (service.as_deref() == Some("bus") && message.as_deref() == Some("publishing"))
        || message.as_deref() == Some("unhandled")
    {
        return None;
    }
    let (part, members) = (logged.part, logged.members);
    let span = |r: Option<(usize, usize)>| r.map(|(s, e)| rec.span_of(s, e));
    let step = match &*ty {
        "step_finish" => {
            // Small values (a reason, a token count object, model ids), read as `ready` reads
            // them, without building a `Value` where it can.
            let reason = match raw(members.reason) {
                None | Some("null") => (String::new(), false),
                Some(raw) => match crate::model::read::json_str(raw) {
                    Some(reason) => (reason.into_owned(), false),
                    None => reason_of(Some(&serde_json::from_str::<Value>(raw).ok()?)),
                },
            };
            let model = match raw(members.model) {
                Some(raw) => serde_json::from_str::<ModelIds>(raw).ok()?,
                None => ModelIds::default(),
            };
            let zero_usage = match raw(members.tokens) {
                Some(raw) => usage_total_of(raw)? == 0,
                None => true,
            };
            let read = StepRead {
                message_id: &part.message_id,
                part_id: &part.id,
                reason,
                reason_span: span(members.reason),
                zero_usage,
                tokens_span: span(members.tokens),
                model,
            };
            Some(Box::new(read.finish()))
        }
        _ => None,
    };
    let status_span = part.tool().and_then(|_| span(members.status));
    Some(PartEvent {
        span: rec.span,
        session: RecordSession::new(str_at(logged.top.session_id), &part),
        prepared: PreparedPart {
            part,
            issues: Vec::new(),
            part_span: rec.span,
            status_span,
        },
        step,
    })
}

/// A part event's part validated and read into the model (see [`Ready`]); any other record as
/// it is.
fn ready(record: LogRecord) -> Ready {
    let LogRecord::Json(mut rec) = record else {
        return Ready::Record(record);
    };
    let Some(obj) = rec.value.as_object() else {
        return Ready::Record(LogRecord::Json(rec));
    };
    let s = |k: &str| obj.get(k).and_then(Value::as_str);
    // The records `apply_json` hands to `apply_part`.
    let ty = s("type").unwrap_or_default();
    let is_part_event = matches!(
        ty,
        "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
    ) && obj.get("part").is_some_and(Value::is_object)
        && !(s("service") == Some("bus") && s("message") == Some("publishing"))
        && s("message") != Some("unhandled");
    if !is_part_event {
        // Only a part event's part may have been read with stand-ins (see `parse_object`).
        if rec.value.get("part").is_some_and(Value::is_object)
            && let Ok(value) = serde_json::from_str(&rec.text)
        {
            rec.value = value;
        }
        return Ready::Record(LogRecord::Json(rec));
    }
    // What `apply_json` reads of a part event, read here.
    let session_id = s("sessionID").map(str::to_owned);
    let (prepared, step) = if ty == "step_finish" {
        // Read where it is, unless slimming it would change it.
        let part = rec.value.get("part").unwrap_or(&Value::Null);
        let prepared = prepare(&rec, std::borrow::Cow::Borrowed(part));
        (prepared, Some(Box::new(step_finish_of(&rec))))
    } else {
        let part = match rec.value.get_mut("part") {
            Some(part) => std::mem::replace(part, Value::Null),
            None => Value::Null,
        };
        (prepare(&rec, std::borrow::Cow::Owned(part)), None)
    };
    Ready::Part(Box::new(PartEvent {
        span: rec.span,
        session: RecordSession::new(session_id.map(Into::into), &prepared.part),
        prepared,
        step,
    }))
}

/// What a `step_finish` record says of its step.
fn step_finish_of(rec: &JsonRecord) -> crate::session::StepFinish {
    let part = &rec.value["part"];
    let s = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default();
    let read = StepRead {
        message_id: s("messageID"),
        part_id: s("id"),
        reason: reason_of(part.get("reason")),
        reason_span: rec.locate(&["part".into(), "reason".into()]),
        zero_usage: part.get("tokens").is_none_or(|t| usage_total(t) == 0),
        tokens_span: rec.locate(&["part".into(), "tokens".into()]),
        model: ModelIds::of(part.get("model")),
    };
    read.finish()
}

/// A step's reason as kept, and whether it was not a string (it is then kept as JSON).
fn reason_of(reason: Option<&Value>) -> (String, bool) {
    match reason {
        Some(Value::String(r)) => (r.clone(), false),
        Some(Value::Null) | None => (String::new(), false),
        Some(other) => (other.to_string(), true),
    }
}

/// The model ids of a `step_finish`'s `model`: its `requestedModelID` and `respondedModelID`
/// when they are strings, and nothing of any other value. Read from the text (by
/// `part_event`) as from a `Value` (by `ready`): a key written twice counts as its last value,
/// as in a `Value`. Only an object is read from the text; a model of another shape (none seen
/// in a real log) fails there, and `part_event` leaves the record to `ready`.
#[derive(Debug, Default, PartialEq)]
struct ModelIds {
    requested: Option<String>,
    responded: Option<String>,
}

impl ModelIds {
    fn of(model: Option<&Value>) -> Self {
        let id = |k: &str| {
            model
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        ModelIds {
            requested: id("requestedModelID"),
            responded: id("respondedModelID"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for ModelIds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ModelIds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ModelIds, A::Error> {
                let mut ids = ModelIds::default();
                while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                    let slot = match key.as_deref() {
                        Some("requestedModelID") => &mut ids.requested,
                        Some("respondedModelID") => &mut ids.responded,
                        _ => {
                            map.next_value_seed(Discard)?;
                            continue;
                        }
                    };
                    let Lenient(id) = map.next_value()?;
                    *slot = id.map(std::borrow::Cow::into_owned);
                }
                Ok(ids)
            }
        }
        d.deserialize_map(V)
    }
}

/// The members of a `step_finish`'s part a [`crate::session::StepFinish`] is made of, however
/// they were read (from the record's value, or by [`part_event`]).
struct StepRead<'a> {
    message_id: &'a str,
    part_id: &'a str,
    /// See [`reason_of`].
    reason: (String, bool),
    /// Where the reason is.
    reason_span: Option<Span>,
    /// Every token count is zero, or there are none.
    zero_usage: bool,
    /// Where the token counts are.
    tokens_span: Option<Span>,
    model: ModelIds,
}

impl StepRead<'_> {
    fn finish(self) -> crate::session::StepFinish {
        let (reason, reason_not_string) = self.reason;
        crate::session::StepFinish {
            message_id: self.message_id.to_owned(),
            part_id: self.part_id.to_owned(),
            reason,
            reason_not_string,
            reason_span: self.reason_span,
            zero_usage: self.zero_usage,
            tokens_span: self.tokens_span.map(|t| t.head()),
            requested_model: self.model.requested,
            responded_model: self.model.responded,
        }
    }
}

/// Validates the part of a part event (`raw`, the value of the record's `part`) and reads it
/// into the model.
fn prepare_part(rec: &JsonRecord, raw: Value) -> PreparedPart {
    prepare(rec, std::borrow::Cow::Owned(raw))
}

/// [`prepare_part`], on a part that may be borrowed: it is copied only when [`slim`] changes it.
fn prepare(rec: &JsonRecord, raw: std::borrow::Cow<'_, Value>) -> PreparedPart {
    // One locator for all the issues: many can be in one long array.
    let mut locator = crate::json::scan::Locator::new(&rec.text);
    let issues = schema::validate_part(&raw)
        .into_iter()
        .map(|issue| {
            let mut path: Vec<Seg<'_>> = vec![Seg::Key("part")];
            path.extend(issue.path.keys());
            // A missing field is pointed at through its parent object.
            let span = (locator.locate(&path))
                .or_else(|| locator.locate(&path[..path.len().saturating_sub(1)]))
                .map(|(s, e)| rec.span_of(s, e));
            (issue.clone(), span)
        })
        .collect::<Vec<_>>();
    let part_span = match issues.is_empty() {
        true => rec.span,
        false => rec.locate(&[Seg::Key("part")]).unwrap_or(rec.span),
    };
    let part = match raw {
        std::borrow::Cow::Borrowed(raw) if slim_keeps(raw) => Part::from_value(raw),
        raw => Part::from_value(&slim(raw.into_owned())),
    };
    let status_span = part
        .tool()
        .and_then(|_| rec.locate(&["part".into(), "state".into(), "status".into()]));
    PreparedPart {
        part,
        issues,
        part_span,
        status_span,
    }
}

/// The number of parts from which a message's parts are found by the part index rather than by
/// comparing ids.
const INDEXED_FROM: usize = 16;

struct State {
    analysis: Analysis,
    session_index: FastMap<String, usize>,
    /// Per session index: hash of a message id → message index (see [`State::message_slot`]).
    message_index: Vec<FastMap<u64, usize>>,
    /// (session index, message index, hash of the part id) → part index, for the parts of
    /// messages with at least [`INDEXED_FROM`] parts: a part's id is not copied into the index
    /// (see [`State::file_part`]).
    part_index: FastMap<(usize, usize, u64), usize>,
    id_hasher: foldhash::fast::RandomState,
    current_session: Option<String>,
    bus_events: u64,
    /// The last `retry-after` the agent parsed, until the sleep it leads to.
    retry_after: Option<(u64, Span)>,
    /// Informational stderr lines a wrapper wrapped as errors (see [`informational`]).
    informational: Vec<String>,
    /// The tool results of the last user turn of a Claude Code session: what the next request
    /// carried (where, words).
    last_results: Vec<(Span, String)>,
    /// Tool results that carried media (images, documents): every later request resends them.
    media_results: Vec<(Span, String)>,
    /// Per session index: how many events there were at the session's last part write (a
    /// cleanup's "Tool execution aborted" write aside). See [`State::file_part`].
    events_at_write: Vec<usize>,
    /// Events so far, forgotten ones included.
    events_seen: usize,
    /// Per session index: the positions of its part writes that came first in it after an
    /// event, in order: the writes [`PartRecord::history`] keeps whatever else it drops.
    first_after_event: Vec<Vec<Seq>>,
    /// What a diagnosis's replay may forget (see [`replay_forgetting`]).
    window: Option<Window>,
    /// Per session index: where each tool call id is first held (message, part), for a session a
    /// Claude Code tool result has asked about (see [`State::claude_call`]).
    claude_calls: Vec<Option<FastMap<String, (usize, usize)>>>,
}

impl State {
    fn new(file: FileId) -> Self {
        Self {
            analysis: Analysis::new(file, Format::AgentLog),
            session_index: FastMap::default(),
            message_index: Vec::new(),
            part_index: FastMap::default(),
            id_hasher: foldhash::fast::RandomState::default(),
            current_session: None,
            bus_events: 0,
            retry_after: None,
            informational: Vec::new(),
            last_results: Vec::new(),
            media_results: Vec::new(),
            events_at_write: Vec::new(),
            events_seen: 0,
            first_after_event: Vec::new(),
            window: None,
            claude_calls: Vec::new(),
        }
    }

    /// The model, or, when the log must be read again, from which record on it must be kept
    /// (`None`: all of it; see [`Forgot::Again`]).
    fn finish(mut self) -> Result<Analysis, Option<Seq>> {
        // What is left after forgetting must not be loud either: it would be reported with what
        // was forgotten around it.
        if self.window.as_ref().is_some_and(|w| w.forgetting) {
            'sessions: for si in 0..self.analysis.sessions.len() {
                for mi in 0..self.analysis.sessions[si].messages.len() {
                    match self.verdict(si, mi) {
                        Verdict::Loud => {
                            self.not_quiet();
                            break 'sessions;
                        }
                        Verdict::Needs(from) => self.needs(from),
                        Verdict::Quiet | Verdict::Kept => {}
                    }
                }
            }
        }
        if let Some(again) = self.window.as_ref().and_then(|w| w.again) {
            return Err(again);
        }
        // The kept messages go back into their sessions.
        if let Some(w) = &mut self.window {
            for (si, kept) in w.kept.iter_mut().enumerate() {
                if let Some(session) = self.analysis.sessions.get_mut(si) {
                    session.messages.append(kept);
                }
            }
        }
        // A session's message ids are distinct, and so are a message's part ids (the indexes
        // file each id once), so an unstable sort orders them as a stable one would, without
        // the stable sort's scratch copy: a copy of every message of the session, at the time
        // the model is largest.
        for session in &mut self.analysis.sessions {
            session.messages.sort_unstable_by(|a, b| a.id.cmp(&b.id));
            for m in &mut session.messages {
                m.parts.sort_unstable_by(|a, b| a.part.id.cmp(&b.part.id));
            }
        }
        self.analysis.counts.insert("bus events", self.bus_events);
        Ok(self.analysis)
    }

    fn event(&mut self, seq: Seq, span: Span, session: Option<String>, kind: EventKind) {
        let session = session.or_else(|| self.current_session.clone());
        let event = Event {
            seq,
            span,
            session,
            kind,
        };
        self.events_seen += 1;
        let State {
            window,
            analysis,
            session_index,
            message_index,
            id_hasher,
            ..
        } = self;
        if let Some(w) = window {
            let find = |session: &str, id: &str| {
                let si = *session_index.get(session)?;
                let messages = &analysis.sessions.get(si)?.messages;
                let hit = message_index.get(si)?.get(&id_hasher.hash_one(id)).copied();
                hashed_position(hit, messages, |m| m.id == id).map(|mi| &messages[mi])
            };
            match w.rules.event(&event, &find) {
                Verdict::Loud => self.not_quiet(),
                // Other events of this record may have been forgotten already.
                Verdict::Kept => self.freeze(seq + 1),
                Verdict::Needs(from) => self.needs(from),
                Verdict::Quiet => {
                    if w.forgetting && w.frozen.is_none() && !w.rules.kept_event(&event.kind) {
                        return;
                    }
                }
            }
        }
        self.analysis.events.push(event);
    }

    /// Something a rule may report with what surrounds it: nothing may be forgotten, and the log
    /// is read again, whole, when something was.
    fn not_quiet(&mut self) {
        match &mut self.window {
            Some(w) if w.forgetting => w.again = Some(None),
            _ => self.window = None,
        }
    }

    /// Something the rules report from what is kept and what comes after: nothing more may be
    /// forgotten from record `at` on, but what was is not needed.
    fn freeze(&mut self, at: Seq) {
        match &mut self.window {
            Some(w) if w.forgetting => {
                w.frozen.get_or_insert(at);
            }
            _ => self.window = None,
        }
    }

    /// Something the rules report from what the log holds from record `from` on: fine when
    /// forgetting stopped at or before it (or never began: then nothing more is forgotten);
    /// otherwise the log is read again, keeping everything from there on.
    fn needs(&mut self, from: Seq) {
        match &mut self.window {
            Some(w) if w.forgetting => {
                if w.frozen.is_some_and(|at| at <= from) {
                    return;
                }
                w.again = match w.again {
                    // Whole already.
                    Some(None) => Some(None),
                    Some(Some(n)) => Some(Some(n.min(from))),
                    None => Some(Some(from)),
                };
            }
            // Nothing was forgotten: keep everything from here on.
            _ => self.window = None,
        }
    }

    /// Record `seq` is next: from the record a reading again must keep everything from, nothing
    /// more is forgotten.
    fn reach(&mut self, seq: Seq) {
        if let Some(w) = &self.window
            && w.frozen.is_none()
            && w.keep_from.is_some_and(|k| k <= seq)
        {
            self.freeze(seq);
        }
    }

    /// Whether the log must be read again without forgetting.
    fn again(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.again.is_some())
    }

    /// What message `mi` of session `si` is to the rules, its tool calls counted as the
    /// session's.
    fn verdict(&mut self, si: usize, mi: usize) -> Verdict {
        let Some(w) = &mut self.window else {
            return Verdict::Loud;
        };
        if w.calls.len() <= si {
            w.calls.resize_with(si + 1, crate::FastMap::default);
        }
        let calls = &mut w.calls[si];
        let hasher = &self.id_hasher;
        let message = &mut self.analysis.sessions[si].messages[mi];
        // The rules read a message's parts in id order, as `finish` sorts them (parts arrive out
        // of it). The message leaves the model next, or the replay stops: the part index, which
        // holds positions, is not asked about it again.
        message
            .parts
            .sort_unstable_by(|a, b| a.part.id.cmp(&b.part.id));
        let mut new_call = |call: &str, at: Seq| match calls.entry(hasher.hash_one(call)) {
            std::collections::hash_map::Entry::Occupied(first) => Some(*first.get()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(at);
                None
            }
        };
        (w.rules).message(message, &mut new_call)
    }

    /// A message is starting in session `si`: forgets the session's messages that are closed and
    /// quiet, and puts aside those that are kept, once the model is large enough (see
    /// [`replay_forgetting`]).
    fn closing(&mut self, si: usize, new_id: &str) {
        let Some(w) = &mut self.window else {
            return;
        };
        if !w.forgetting {
            if w.live_parts < w.from {
                return;
            }
            w.forgetting = true;
            // Every other session's messages but its newest are closed, if their tools are.
            let rules = &w.rules;
            self.analysis.events.retain(|e| rules.kept_event(&e.kind));
            for other in 0..self.analysis.sessions.len() {
                if other != si {
                    self.forget_closed(other, 1);
                }
            }
        }
        if self.again() {
            return;
        }
        let closed_before = |w: &Window| {
            let forgotten = (w.highest.get(si))
                .and_then(Option::as_deref)
                .is_some_and(|h| new_id <= h);
            let kept =
                (w.kept_ids.get(si)).is_some_and(|k| k.contains(&self.id_hasher.hash_one(new_id)));
            forgotten || kept
        };
        if self.window.as_ref().is_some_and(closed_before) {
            // Maybe a message that was closed written again.
            self.not_quiet();
            return;
        }
        self.forget_closed(si, 0);
    }

    /// Forgets the closed messages of session `si` that are quiet, but its `newest` messages.
    fn forget_closed(&mut self, si: usize, newest: usize) {
        let messages = &self.analysis.sessions[si].messages;
        let n = messages.len().saturating_sub(newest);
        let closed: Vec<usize> = (0..n).filter(|&mi| !has_open_tool(&messages[mi])).collect();
        // Messages whose tools never end are looked at again at every new message: past a
        // bound (in number, and in parts against all the parts filed), forgetting would cost
        // more than the square of the log.
        let open_parts: usize = (0..n)
            .filter(|mi| closed.binary_search(mi).is_err())
            .map(|mi| messages[mi].parts.len())
            .sum();
        let too_costly = self.window.as_mut().is_some_and(|w| {
            w.looked_again += open_parts;
            w.looked_again > 4 * w.filed + (1 << 16)
        });
        if n - closed.len() > MAX_OPEN_MESSAGES || too_costly {
            self.not_quiet();
            return;
        }
        // From the last, so that what `swap_remove` moves is never one of them.
        for mi in closed.into_iter().rev() {
            match self.verdict(si, mi) {
                Verdict::Loud => {
                    self.not_quiet();
                    return;
                }
                Verdict::Needs(from) => {
                    self.needs(from);
                    if self.window.as_ref().is_none_or(|w| w.again.is_some()) {
                        return;
                    }
                    self.keep(si, mi);
                }
                Verdict::Quiet if self.window.as_ref().is_some_and(|w| w.frozen.is_none()) => {
                    self.forget(si, mi);
                }
                // Looked at once: its tool calls are the session's now.
                Verdict::Quiet | Verdict::Kept => self.keep(si, mi),
            }
        }
        self.forget_writes(si);
    }

    /// Forgets message `mi` of session `si`, counting it in the session's summary.
    fn forget(&mut self, si: usize, mi: usize) {
        let message = self.take(si, mi);
        let Some(w) = &mut self.window else {
            return;
        };
        let session = &mut self.analysis.sessions[si];
        session.forgotten.add(&message);
        w.rules.forget(&session.id, &message.id);
        if w.highest.len() <= si {
            w.highest.resize(si + 1, None);
        }
        if w.highest[si]
            .as_deref()
            .is_none_or(|h| h < message.id.as_str())
        {
            w.highest[si] = Some(message.id);
        }
    }

    /// Puts message `mi` of session `si` aside until the end: a rule reports it, from what it
    /// holds alone.
    fn keep(&mut self, si: usize, mi: usize) {
        let message = self.take(si, mi);
        let Some(w) = &mut self.window else {
            return;
        };
        if w.kept.len() <= si {
            w.kept.resize_with(si + 1, Vec::new);
            w.kept_ids.resize_with(si + 1, crate::FastSet::default);
        }
        w.kept_ids[si].insert(self.id_hasher.hash_one(&message.id));
        w.kept[si].push(message);
    }

    /// Takes message `mi` out of session `si` and out of the indexes; the session's last message
    /// takes its place.
    fn take(&mut self, si: usize, mi: usize) -> Message {
        let hasher = &self.id_hasher;
        let session = &mut self.analysis.sessions[si];
        let message = session.messages.swap_remove(mi);
        let moved_from = session.messages.len();
        if let Some(w) = &mut self.window {
            w.live_parts = w.live_parts.saturating_sub(message.parts.len());
        }
        let index = &mut self.message_index[si];
        // The message leaves the indexes; the one that took its place moves in them.
        let key = hasher.hash_one(&message.id);
        if index.get(&key) == Some(&mi) {
            index.remove(&key);
        }
        if message.parts.len() >= INDEXED_FROM {
            for p in &message.parts {
                self.part_index
                    .remove(&(si, mi, hasher.hash_one(&p.part.id)));
            }
        }
        if let Some(moved) = session.messages.get(mi) {
            let moved_key = hasher.hash_one(&moved.id);
            if index.get(&moved_key) == Some(&moved_from) {
                index.insert(moved_key, mi);
            }
            if moved.parts.len() >= INDEXED_FROM {
                for p in &moved.parts {
                    let h = hasher.hash_one(&p.part.id);
                    if let Some(pi) = self.part_index.remove(&(si, moved_from, h)) {
                        self.part_index.insert((si, mi, h), pi);
                    }
                }
            }
        }
        // Another message with the same hash (a collision) is found by the index again.
        let collided = self
            .window
            .as_ref()
            .is_some_and(|w| w.collided.contains(&key));
        if collided
            && !index.contains_key(&key)
            && let Some(j) = (session.messages.iter()).position(|m| hasher.hash_one(&m.id) == key)
        {
            index.insert(key, j);
        }
        message
    }

    /// Drops the writes of session `si` that only forgotten parts can ask about (see
    /// [`State::file_part`]): those before the first write of every part it still has. Once the
    /// list has doubled since, so that the walk of the session's parts is paid for.
    fn forget_writes(&mut self, si: usize) {
        let (Some(w), Some(writes)) = (&mut self.window, self.first_after_event.get_mut(si)) else {
            return;
        };
        if w.writes_kept.len() <= si {
            w.writes_kept.resize(si + 1, 0);
        }
        if writes.len() < 2 * w.writes_kept[si] + 64 {
            return;
        }
        let live = (self.analysis.sessions[si].messages.iter())
            .flat_map(|m| m.parts.iter().filter_map(|p| p.history.first()))
            .map(|o| o.seq)
            .min();
        let gone = writes.partition_point(|s| live.is_none_or(|first| *s < first));
        writes.drain(..gone);
        w.writes_kept[si] = writes.len();
    }

    fn apply(&mut self, seq: Seq, record: LogRecord) {
        match record {
            LogRecord::Json(rec) => self.apply_json(seq, &rec),
            // What `apply_json` does with a plain logger entry or a bus event.
            LogRecord::Light { span, light } => {
                if let Some(id) = light.session {
                    self.current_session = Some(id);
                }
                if let Some(bus) = light.bus {
                    self.bus_events += 1;
                    match bus {
                        BusEvent::SessionError => {
                            self.event(seq, span, None, EventKind::BusSessionError);
                        }
                        BusEvent::Idle => self.event(seq, span, None, EventKind::Idle),
                        BusEvent::Other => {}
                    }
                }
            }
            LogRecord::RawError { name, record } => {
                let mut info = ErrorInfo {
                    name: Some(name),
                    message: capped(&record.text, MAX_ERROR_MESSAGE),
                    message_span: Some(record.span),
                    ..ErrorInfo::default()
                };
                info.data = cap_strings(&record.value, MAX_KEPT_STRING);
                self.event(seq, record.span, None, EventKind::RawError(Box::new(info)));
            }
            // Only a deferred reader yields these, and they are decoded before they get here.
            LogRecord::Text(_) | LogRecord::Pending(_) => {}
            LogRecord::Uncaught {
                name,
                message,
                span,
            } => {
                let info = ErrorInfo {
                    name: Some(name),
                    message: capped(&message, MAX_ERROR_MESSAGE),
                    message_span: Some(span),
                    ..ErrorInfo::default()
                };
                self.event(seq, span, None, EventKind::RawError(Box::new(info)));
            }
            LogRecord::Status {
                span,
                success,
                words,
            } => self.event(seq, span, None, EventKind::WrapperStatus { success, words }),
            LogRecord::Undecodable {
                span,
                reason,
                at,
                truncated,
            } => self.analysis.undecodable.push(Undecodable {
                span,
                reason,
                at,
                truncated,
            }),
        }
    }

    /// Applies a JSON object. A part event is, as a rule, read ahead on the decoding pool and
    /// applied by [`State::apply_part_event`]; one that reaches this is read here.
    fn apply_json(&mut self, seq: Seq, rec: &JsonRecord) {
        let Some(obj) = rec.value.as_object() else {
            return;
        };
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        let ty = s("type").unwrap_or_default();
        let service = s("service").unwrap_or_default();
        let message = s("message").unwrap_or_default();
        // `sessionID` of a logger entry can be something else (`retry-fetch` logs the provider id
        // there): only OpenCode's `ses_…` ids, or a part event's, name a session.
        let session_id = s("sessionID")
            .filter(|id| id.starts_with("ses") || obj.get("part").is_some_and(Value::is_object))
            .map(str::to_owned);
        if let Some(id) = &session_id {
            self.current_session = Some(id.clone());
        }
        // `{"log": {…}}`: a logger entry in the agent's early compact form.
        if obj.len() == 1
            && let Some(inner) = obj.get("log").and_then(Value::as_object)
        {
            if let Some(id) = inner
                .get("sessionID")
                .and_then(Value::as_str)
                .filter(|id| id.starts_with("ses"))
            {
                self.current_session = Some(id.to_owned());
            }
            let s = |k: &str| inner.get(k).and_then(Value::as_str).unwrap_or_default();
            self.apply_log(seq, rec, inner, &["log"], s("service"), s("message"));
            return;
        }

        if service == "bus" && message == "publishing" {
            self.bus_events += 1;
            match ty {
                "session.error" => self.event(seq, rec.span, None, EventKind::BusSessionError),
                "session.idle" => self.event(seq, rec.span, None, EventKind::Idle),
                _ => {}
            }
            return;
        }
        if message == "unhandled" {
            let kind = EventKind::StreamUnhandled {
                event_type: ty.to_owned(),
                reason: s("reason").map(str::to_owned),
            };
            self.event(seq, rec.span, None, kind);
            return;
        }
        if let Some(id) = s("session_id")
            && matches!(ty, "system" | "assistant" | "user" | "result")
        {
            self.apply_claude(seq, rec, obj, ty, id);
            return;
        }
        match ty {
            "log" => self.apply_log(seq, rec, obj, &[], service, message),
            "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
                if obj.get("part").is_some_and(Value::is_object) =>
            {
                let prepared = prepare_part(rec, rec.value["part"].clone());
                self.apply_part(seq, rec.span, prepared, session_id.as_deref());
                if ty == "step_finish" {
                    self.step_finished(seq, rec, session_id);
                }
            }
            "error" => {
                if obj.contains_key("exitCode") || obj.contains_key("errorDetectedInOutput") {
                    let matched = s("errorMatch").or(s("message")).unwrap_or_default();
                    if self.informational.iter().any(|i| i == matched.trim()) {
                        // The wrapper matched an informational stderr line: not a failure.
                        return;
                    }
                    let kind = EventKind::WrapperError {
                        error_type: s("errorType").unwrap_or_default().to_owned(),
                        message: s("errorMatch").or(s("message")).unwrap_or_default().into(),
                    };
                    self.event(seq, rec.span, None, kind);
                } else if obj.contains_key("errorType") && informational(obj) {
                    // A stderr line the wrapper wrapped as an error: a banner, not a crash.
                    let line = s("message").unwrap_or_default().trim().to_owned();
                    if self.informational.len() < 64 && !self.informational.contains(&line) {
                        self.informational.push(line);
                    }
                } else if obj.contains_key("errorType") {
                    let mut info = error_info(rec, &[], &rec.value);
                    info.name = s("errorType").map(str::to_owned);
                    if let Some(stack) = s("stack") {
                        // `AI_RetryError: Failed after …` names the thrown class.
                        info.wrapped = stack
                            .split_once(':')
                            .map(|(n, _)| n.trim().to_owned())
                            .filter(|n| !n.contains(' '));
                    }
                    self.event(
                        seq,
                        rec.span,
                        session_id,
                        EventKind::ProcessCrash(Box::new(info)),
                    );
                } else if let Some(err) = obj.get("error") {
                    let info = error_info(rec, &["error"], err);
                    self.event(
                        seq,
                        rec.span,
                        session_id,
                        EventKind::SessionError(Box::new(info)),
                    );
                }
            }
            "status" if obj.contains_key("mode") => {
                self.current_session = None;
                self.event(seq, rec.span, None, EventKind::RunStart);
            }
            "input" => self.event(seq, rec.span, None, EventKind::Prompt),
            "session_idle" => self.event(seq, rec.span, session_id, EventKind::Idle),
            _ => {}
        }
    }

    /// A verbose HTTP entry whose `bodyPreview` is an SSE body: kept to be replayed as a stream.
    fn embedded_stream(&mut self, rec: &JsonRecord) {
        let Some(preview) = rec.value.get("bodyPreview").and_then(Value::as_str) else {
            return;
        };
        if capture::sniff_envelope(preview) != Some(capture::Envelope::Sse) {
            return;
        }
        let Some((s, e)) = crate::json::scan::locate(&rec.text, &[Seg::Key("bodyPreview")]) else {
            return;
        };
        let Some(raw) = rec.text.get(s + 1..e.saturating_sub(1)) else {
            return;
        };
        let Ok((mut text, anchors)) = crate::json::string::decode(raw.as_bytes()) else {
            return;
        };
        let locator = capture::Locator::JsonString {
            file: rec.span.file,
            anchors,
            base: (s + 1) as u64,
            segments: rec
                .segments()
                .iter()
                .map(|(t, f)| (*t as u64, *f))
                .collect(),
        };
        let mut cut = None;
        if let Some(k) = text.rfind("... [truncated") {
            let marker = &text[k..];
            let total = marker
                .split("total ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok());
            cut = Some(crate::session::BodyCut {
                kept: text[..k].chars().count() as u64,
                total,
                span: locator.span(k as u64, text.len() as u64),
            });
            text.truncate(k);
        }
        let call = rec
            .value
            .get("callNum")
            .map(Value::to_string)
            .unwrap_or_default();
        self.analysis
            .embedded_streams
            .push(crate::session::EmbeddedStream {
                label: format!("HTTP response body (stream) of call {call}"),
                text,
                locator,
                cut,
                url: rec
                    .value
                    .get("url")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
    }

    fn apply_log(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        base: &[&str],
        service: &str,
        message: &str,
    ) {
        let at = |key: &str| {
            let mut path: Vec<Seg<'_>> = base.iter().map(|k| Seg::Key(k)).collect();
            path.push(Seg::Key(key));
            rec.locate(&path)
        };
        let num = |k: &str| obj.get(k).and_then(num_of);
        if service == "http" {
            self.embedded_stream(rec);
            self.response_usage(seq, rec, obj, &at);
        }
        if let Some(meta) = obj.get("providerMetadata")
            && let Some((input, output)) = usage_of(&parse_if_string(meta))
        {
            let kind = EventKind::ProviderUsage(Box::new(crate::session::ProviderUsage {
                input,
                output,
                finish: None,
                source: "providerMetadata".into(),
                span: at("providerMetadata"),
            }));
            self.event(seq, rec.span, None, kind);
        }
        if message == "exiting loop" && service.starts_with("session") {
            self.event(seq, rec.span, None, EventKind::LoopExit);
        }
        if message.starts_with("Agent started")
            && let Some(spec) = obj
                .get("command")
                .and_then(Value::as_str)
                .and_then(model_flag)
        {
            let mut path: Vec<Seg<'_>> = base.iter().map(|k| Seg::Key(k)).collect();
            path.push(Seg::Key("command"));
            let span = rec
                .locate_in_string(&path, &spec)
                .or_else(|| at("command"))
                .unwrap_or(rec.span);
            self.event(seq, span, None, EventKind::ModelRequested { spec });
        }
        // The CLI's own model resolution (`using explicit provider/model`, with `rawModel` in
        // later versions); the provider service's `getModel` also loads auxiliary small models.
        if let (Some(provider), Some(model)) = (
            obj.get("providerID").and_then(Value::as_str),
            obj.get("modelID").and_then(Value::as_str),
        ) && (obj.contains_key("rawModel") || service == "default")
        {
            let raw = obj
                .get("rawModel")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{provider}/{model}"), str::to_owned);
            let kind = EventKind::ModelResolved(Box::new(crate::session::ResolvedModel {
                raw,
                provider: provider.to_owned(),
                model: model.to_owned(),
                span: at("rawModel").or_else(|| at("modelID")),
            }));
            self.event(seq, rec.span, None, kind);
        }
        // The provider's `retry-after`, in ms, remembered for the sleep it leads to.
        let lower = message.to_ascii_lowercase();
        if lower.contains("retry-after")
            && let Some(ms) = num("retryAfterMs").or_else(|| num("delayMs"))
        {
            let key = if obj.contains_key("retryAfterMs") {
                "retryAfterMs"
            } else {
                "delayMs"
            };
            if let Some(span) = at(key) {
                self.retry_after = Some((ms, span));
            }
        }
        if (lower.contains("will retry") || lower.contains("retrying") || lower.contains("sleep"))
            && let Some((key, ms)) = ["delay", "delayMs", "waitMs", "sleepMs"]
                .iter()
                .find_map(|k| num(k).map(|v| (*k, v)))
        {
            let kind = EventKind::RetryWait(Box::new(crate::session::RetryWait {
                delay_ms: ms,
                delay_span: at(key),
                retry_after: self.retry_after.take(),
            }));
            self.event(seq, rec.span, None, kind);
        }
        let level = match obj.get("level").and_then(Value::as_str) {
            Some("error") => LogLevel::Error,
            Some("warn") => LogLevel::Warn,
            Some("info") => LogLevel::Info,
            _ => LogLevel::Debug,
        };
        if service == "session.prompt" && message == "cancel" {
            let session = obj
                .get("sessionID")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.event(seq, rec.span, session, EventKind::Cancel);
            return;
        }
        if level < LogLevel::Warn {
            return;
        }
        let mut path: Vec<&str> = base.to_vec();
        path.push("error");
        let error = match obj.get("error") {
            Some(e) if e.is_object() => Some(error_info(rec, &path, e)),
            // An error logged without an error object: its class as a string, or nothing but
            // the message (`Provider returned zero tokens…`).
            Some(Value::String(_)) | None if level == LogLevel::Error => {
                let class = obj
                    .get("error")
                    .and_then(Value::as_str)
                    .filter(|c| c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
                    .map(str::to_owned);
                let text = obj
                    .get("error")
                    .and_then(Value::as_str)
                    .filter(|_| class.is_none())
                    .unwrap_or(message);
                Some(ErrorInfo {
                    name: class,
                    message: capped(text, MAX_ERROR_MESSAGE),
                    message_span: at("message").or_else(|| at("error")),
                    data: cap_strings(&Value::Object(obj.clone()), MAX_KEPT_STRING),
                    ..ErrorInfo::default()
                })
            }
            _ => None,
        };
        let kind = EventKind::Log {
            level,
            service: service.to_owned(),
            message: message.to_owned(),
            error: error.map(Box::new),
        };
        self.event(seq, rec.span, None, kind);
    }

    /// Usage in a logged response body: a JSON body's `usage`, or the last `usage` of an SSE body.
    fn response_usage(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        at: &dyn Fn(&str) -> Option<Span>,
    ) {
        let Some(body) = obj.get("bodyPreview").and_then(Value::as_str) else {
            return;
        };
        // The agent's own server (`POST /session/…/message`) answers with its stored message,
        // not with what a provider sent.
        let url = obj.get("url").and_then(Value::as_str).unwrap_or_default();
        if ["127.0.0.1", "localhost", "/session/"]
            .iter()
            .any(|m| url.contains(m))
        {
            return;
        }
        let mut found = None;
        let mut finish = None;
        if body.trim_start().starts_with('{') {
            if let Ok(v) = serde_json::from_str::<Value>(body) {
                found = usage_of(&v);
                finish = finish_of(&v, 0);
            }
        } else {
            for line in body.lines() {
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                    if let Some(u) = usage_of(&v) {
                        found = Some(u);
                    }
                    if let Some(f) = finish_of(&v, 0) {
                        finish = Some(f);
                    }
                }
            }
        }
        if found.is_some() || finish.is_some() {
            let (input, output) = found.unwrap_or((0, 0));
            let kind = EventKind::ProviderUsage(Box::new(crate::session::ProviderUsage {
                input,
                output,
                finish,
                source: "the logged response body".into(),
                span: at("bodyPreview").map(|s| s.head()),
            }));
            self.event(seq, rec.span, None, kind);
        }
    }

    fn step_finished(&mut self, seq: Seq, rec: &JsonRecord, session_id: Option<String>) {
        let finish = step_finish_of(rec);
        self.event(
            seq,
            rec.span,
            session_id,
            EventKind::StepFinished(Box::new(finish)),
        );
    }

    /// A part event read on the decoding thread: what [`State::apply_json`] does with one.
    fn apply_part_event(&mut self, seq: Seq, event: PartEvent) {
        let PartEvent {
            span,
            session,
            prepared,
            step,
        } = event;
        // Copied for the step's event only (events are kept).
        let step_session = step
            .as_ref()
            .and_then(|_| session.get(&prepared.part.session_id).map(str::to_owned));
        if let Some(id) = session.get(&prepared.part.session_id) {
            self.enter_session(id);
        }
        // `apply_part` reads the record's session only where the part has none: when the
        // record's is the part's, empty as well.
        self.apply_part(seq, span, prepared, session.get(""));
        if let Some(step) = step {
            self.event(seq, span, step_session, EventKind::StepFinished(step));
        }
    }

    fn apply_part(
        &mut self,
        seq: Seq,
        span: Span,
        prepared: PreparedPart,
        session_id: Option<&str>,
    ) {
        let PreparedPart {
            part,
            issues,
            part_span,
            status_span,
        } = prepared;
        // The part's own session, else the record's, else the current one.
        let fallback = part.session_id.is_empty().then(|| {
            (session_id.map(str::to_owned))
                .or_else(|| self.current_session.clone())
                .unwrap_or_default()
        });
        let session_id = fallback.as_deref().unwrap_or(&part.session_id);
        self.enter_session(session_id);

        if !issues.is_empty() {
            self.analysis.schema_issues.push(PayloadIssues {
                seq,
                what: format!("{} part {}", part.type_name(), part.id),
                span: part_span,
                issues,
                session_id: Some(session_id.to_owned()),
                message_id: Some(part.message_id.clone()),
                part_id: Some(part.id.clone()),
            });
        }

        let status = part.tool().map(|t| t.state.status_name());
        let observation = Observation {
            seq,
            span,
            status,
            status_span,
        };

        let si = self.session_slot(session_id);
        let mi = self.message_slot(si, &part.message_id);
        self.file_part(si, mi, part, observation);
    }

    /// Makes `id` the current session (without a copy when it already is).
    fn enter_session(&mut self, id: &str) {
        if self.current_session.as_deref() != Some(id) {
            self.current_session = Some(id.to_owned());
        }
    }

    /// Records a write of `part` in message `mi` of session `si`: a new part, or the latest
    /// write of one the message has.
    ///
    /// A part's history keeps the first and the last write of each run of one status, and every
    /// write that came first in its session after an event; the writes in between (a text part
    /// streamed delta by delta, rewritten hundreds of times) are dropped, so a log's model grows
    /// with its parts, not with its writes. Nothing the checks read changes: the status path, the
    /// first `pending` and last `running` write, the first and last write, and the first write
    /// of a session after any event (what `incidents` and `loop-exited-early` ask for: a
    /// cleanup's write does not count as activity there, so the write after it is kept too).
    fn file_part(&mut self, si: usize, mi: usize, part: Part, observation: Observation) {
        if self.events_at_write.len() <= si {
            self.events_at_write.resize(si + 1, 0);
            self.first_after_event.resize_with(si + 1, Vec::new);
        }
        let events = self.events_seen;
        let first_after_event = &mut self.first_after_event[si];
        if self.events_at_write[si] != events && first_after_event.last() != Some(&observation.seq)
        {
            first_after_event.push(observation.seq);
        }
        let cleanup = part.tool().and_then(|t| t.state.error_text()) == Some(TOOL_ABORTED);
        if !cleanup {
            self.events_at_write[si] = events;
        }
        let tool = part.tool().is_some();
        let message = &mut self.analysis.sessions[si].messages[mi];
        let is_it = |r: &PartRecord| r.part.id == part.id;
        // Most messages have a few parts, found faster by their ids than by a hash, and without
        // an index entry for each: only a message with many parts is indexed.
        let indexed = message.parts.len() >= INDEXED_FROM;
        let hash = |id: &str| (si, mi, self.id_hasher.hash_one(id));
        let at = if indexed {
            let hit = self.part_index.get(&hash(&part.id)).copied();
            hashed_position(hit, &message.parts, is_it)
        } else {
            message.parts.iter().position(is_it)
        };
        let pi = match at {
            Some(pi) => {
                let record = &mut message.parts[pi];
                record.part = part;
                let history = &mut record.history;
                let kept =
                    |o: &Observation| self.first_after_event[si].binary_search(&o.seq).is_ok();
                match history.as_mut_slice() {
                    // The last write is neither the first of its status run nor one to keep.
                    [.., before, last]
                        if before.status == last.status
                            && last.status == observation.status
                            && !kept(last) =>
                    {
                        *last = observation;
                    }
                    _ => history.push(observation),
                }
                pi
            }
            None => {
                if let Some(w) = &mut self.window {
                    w.live_parts += 1;
                    w.filed += 1;
                }
                message.parts.push(PartRecord {
                    part,
                    history: vec![observation],
                });
                let n = message.parts.len();
                // The message reaches the size that is indexed: every part so far goes in.
                let new = if n == INDEXED_FROM { 0 } else { n - 1 };
                if n >= INDEXED_FROM {
                    for (pi, record) in message.parts.iter().enumerate().skip(new) {
                        self.part_index.entry(hash(&record.part.id)).or_insert(pi);
                    }
                }
                n - 1
            }
        };
        // A session whose tool calls are indexed keeps its index (the first place wins).
        if let Some(Some(calls)) = self.claude_calls.get_mut(si)
            && let Some(t) = message.parts[pi].part.tool()
        {
            (calls.entry(t.call_id.clone()))
                .and_modify(|at| *at = (*at).min((mi, pi)))
                .or_insert((mi, pi));
        }
        if let Some(w) = &mut self.window {
            let session = &self.analysis.sessions[si];
            if !w.rules.written(&session.id, &session.messages[mi].id, tool) {
                self.not_quiet();
            }
        }
    }

    /// A Claude Code `--output-format stream-json` record: a session per `session_id`, a tool
    /// part per `tool_use` (running until its `tool_result`), the synthetic "API Error"
    /// assistant message and a `result` with `is_error` as the session's errors.
    fn apply_claude(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        ty: &str,
        session: &str,
    ) {
        // Its tool results are filed into older messages (see `claude_tool`).
        self.not_quiet();
        self.current_session = Some(session.to_owned());
        let si = self.session_slot(session);
        let blocks = obj
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        match ty {
            "assistant" => {
                let message = obj.get("message");
                let msg_id = message
                    .and_then(|m| m.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let synthetic = message.and_then(|m| m.get("model")).and_then(Value::as_str)
                    == Some("<synthetic>");
                // Each block's place, found in one walk of the array.
                let places = rec.items(&["message".into(), "content".into()]);
                for (k, block) in blocks.into_iter().flatten().enumerate() {
                    let at = |key: &str| rec.locate_from(places.get(k), &[Seg::Key(key)]);
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_use") => {
                            let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                            let part = serde_json::json!({
                                "id": id, "sessionID": session, "messageID": msg_id,
                                "type": "tool", "callID": id,
                                "tool": block.get("name").and_then(Value::as_str).unwrap_or_default(),
                                "state": {"status": "running", "input": {}, "time": {"start": 0}},
                            });
                            self.claude_part(si, seq, rec.span, at("id"), &part);
                        }
                        Some("text") if synthetic => {
                            let text = block
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default();
                            if let Some(mut info) = api_error(text, at("text")) {
                                let mut context = self.media_results.clone();
                                for c in std::mem::take(&mut self.last_results) {
                                    if !context.iter().any(|m| m.0 == c.0) {
                                        context.push(c);
                                    }
                                }
                                info.context = context;
                                let span = at("text").unwrap_or(rec.span);
                                self.event(
                                    seq,
                                    span,
                                    Some(session.to_owned()),
                                    EventKind::SessionError(Box::new(info)),
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                if blocks.is_some_and(|b| {
                    b.iter()
                        .any(|x| x.get("type").and_then(Value::as_str) == Some("tool_result"))
                }) {
                    self.last_results.clear();
                }
                // Each block's place, found in one walk of the array.
                let places = rec.items(&["message".into(), "content".into()]);
                for (k, block) in blocks.into_iter().flatten().enumerate() {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                    let Some((mi, tool)) = self.claude_tool(si, id) else {
                        continue;
                    };
                    let msg_id = self.analysis.sessions[si].messages[mi].id.clone();
                    let state = if failed {
                        serde_json::json!({"status": "error", "input": {}, "error": "tool_result is_error", "time": {"start": 0, "end": 0}})
                    } else {
                        serde_json::json!({"status": "completed", "input": {}, "output": "", "title": "", "metadata": {}, "time": {"start": 0, "end": 0}})
                    };
                    let part = serde_json::json!({
                        "id": id, "sessionID": session, "messageID": msg_id,
                        "type": "tool", "callID": id, "tool": tool, "state": state,
                    });
                    let span = rec.locate_from(places.get(k), &[Seg::Key("tool_use_id")]);
                    let kinds: Vec<&str> = match block.get("content") {
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(|c| c.get("type").and_then(Value::as_str))
                            .collect(),
                        _ => vec!["text"],
                    };
                    if let Some(at) = span
                        && self.last_results.len() < 16
                    {
                        let media = kinds.iter().find(|k| matches!(**k, "image" | "document"));
                        let tool_use = self.claude_use_span(si, id);
                        let mut found = Vec::new();
                        if let Some(u) = tool_use {
                            found.push((u, format!("`{tool}` called here")));
                        }
                        match media {
                            Some(m) => {
                                found.push((at, format!("the result of `{tool}` ({id}) is an {m} block; every later request resends it")));
                                if self.media_results.len() < 16 {
                                    self.media_results.extend(found);
                                }
                            }
                            None => {
                                found.push((at, format!("the result of `{tool}` ({id}): the last turn before the failed request")));
                                self.last_results.extend(found);
                            }
                        }
                    }
                    self.claude_part(si, seq, rec.span, span, &part);
                }
            }
            "result" if obj.get("is_error").and_then(Value::as_bool) == Some(true) => {
                let text = obj
                    .get("result")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let span = rec.locate(&["is_error".into()]);
                let mut info =
                    api_error(text, rec.locate(&["result".into()])).unwrap_or(ErrorInfo {
                        message: capped(text, MAX_ERROR_MESSAGE),
                        message_span: span,
                        ..ErrorInfo::default()
                    });
                info.data = serde_json::json!({
                    "is_error": true,
                    "subtype": obj.get("subtype").cloned().unwrap_or(Value::Null),
                });
                self.event(
                    seq,
                    span.unwrap_or(rec.span),
                    Some(session.to_owned()),
                    EventKind::SessionError(Box::new(info)),
                );
            }
            _ => {}
        }
    }

    /// The message index and tool name of the tool part with call id `id` in session `si`.
    fn claude_tool(&mut self, si: usize, id: &str) -> Option<(usize, String)> {
        let (mi, pi) = self.claude_call(si, id)?;
        let tool = self.analysis.sessions[si].messages[mi].parts[pi]
            .part
            .tool()?;
        Some((mi, tool.tool.clone()))
    }

    /// Where the tool part with call id `id` was first written (its `tool_use`).
    fn claude_use_span(&mut self, si: usize, id: &str) -> Option<Span> {
        let (mi, pi) = self.claude_call(si, id)?;
        let part = &self.analysis.sessions[si].messages[mi].parts[pi];
        part.history.first().map(|o| o.span)
    }

    /// The first tool part of the session (in message order, then part order) with call id
    /// `id`: from the session's index of calls, built on the first question (Claude Code
    /// stream-json logs only) and kept by [`State::file_part`]; an entry that no longer holds
    /// the call (its part was rewritten with another) is searched for again.
    fn claude_call(&mut self, si: usize, id: &str) -> Option<(usize, usize)> {
        let messages = &self.analysis.sessions[si].messages;
        let holds = |(mi, pi): (usize, usize)| {
            let part = messages.get(mi).and_then(|m| m.parts.get(pi));
            part.and_then(|p| p.part.tool())
                .is_some_and(|t| t.call_id == id)
        };
        if self.claude_calls.len() <= si {
            self.claude_calls.resize_with(si + 1, || None);
        }
        let index = self.claude_calls[si].get_or_insert_with(|| {
            crate::first_of(messages.iter().enumerate().flat_map(|(mi, m)| {
                (m.parts.iter().enumerate())
                    .filter_map(move |(pi, p)| Some((p.part.tool()?.call_id.clone(), (mi, pi))))
            }))
        });
        match index.get(id).copied() {
            Some(at) if holds(at) => Some(at),
            Some(_) => messages.iter().enumerate().find_map(|(mi, m)| {
                let pi = m
                    .parts
                    .iter()
                    .position(|p| p.part.tool().is_some_and(|t| t.call_id == id))?;
                Some((mi, pi))
            }),
            None => None,
        }
    }

    fn claude_part(&mut self, si: usize, seq: Seq, span: Span, at: Option<Span>, raw: &Value) {
        let part = Part::from_value(raw);
        let observation = Observation {
            seq,
            span: at.unwrap_or(span),
            status: part.tool().map(|t| t.state.status_name()),
            status_span: at,
        };
        let mi = self.message_slot(si, &part.message_id);
        self.file_part(si, mi, part, observation);
    }

    fn session_slot(&mut self, id: &str) -> usize {
        if let Some(&i) = self.session_index.get(id) {
            return i;
        }
        let i = self.analysis.sessions.len();
        self.analysis.sessions.push(Session {
            id: id.to_owned(),
            ..Session::default()
        });
        self.session_index.insert(id.to_owned(), i);
        i
    }

    fn message_slot(&mut self, si: usize, id: &str) -> usize {
        if self.message_index.len() <= si {
            self.message_index.resize_with(si + 1, FastMap::default);
        }
        // As the part index: a 64-bit hash of the id, not a copy of it.
        let key = self.id_hasher.hash_one(id);
        let index = &mut self.message_index[si];
        let messages = &mut self.analysis.sessions[si].messages;
        if let Some(i) = hashed_position(index.get(&key).copied(), messages, |m| m.id == id) {
            return i;
        }
        if self.window.is_some() {
            self.closing(si, id);
        }
        let index = &mut self.message_index[si];
        let messages = &mut self.analysis.sessions[si].messages;
        let i = messages.len();
        // The session's previous message is, as a rule, complete: its parts and their histories
        // give back the room they grew into (up to a quarter of what a session keeps).
        if let Some(previous) = messages.last_mut() {
            fit(&mut previous.parts);
            for record in &mut previous.parts {
                fit(&mut record.history);
            }
        }
        messages.push(Message {
            id: id.to_owned(),
            ..Message::default()
        });
        match index.entry(key) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                if let Some(w) = &mut self.window {
                    w.collided.insert(key);
                }
            }
        }
        i
    }
}

/// Messages of a session looked at again at every new message while forgetting, at most: past
/// that, nothing is forgotten (see [`State::forget_closed`]).
const MAX_OPEN_MESSAGES: usize = 256;

/// What a diagnosis's replay may forget, and what it has (see [`replay_forgetting`]).
struct Window {
    /// Live parts from which closed messages are forgotten.
    from: usize,
    /// Parts of the messages the model holds, and parts filed in all.
    live_parts: usize,
    filed: usize,
    /// Parts of messages with a tool still open looked at again when another message started.
    looked_again: usize,
    /// Something was forgotten.
    forgetting: bool,
    /// Something not quiet came after something was forgotten: the log must be read again,
    /// keeping everything from this record on, or whole (`Some(None)`; see [`Forgot::Again`]).
    again: Option<Option<Seq>>,
    /// Something the rules report from what is kept came after something was forgotten: every
    /// message and event is kept from this record on.
    frozen: Option<Seq>,
    /// A reading again keeps everything from this record on.
    keep_from: Option<Seq>,
    /// What the rules need.
    rules: Box<dyn Forgetting>,
    /// Per session index: hashes of the tool call ids of the messages looked at so far, each
    /// with the record the first message that had it starts at.
    calls: Vec<crate::FastMap<u64, Seq>>,
    /// Per session index: the highest id of a forgotten message.
    highest: Vec<Option<String>>,
    /// Per session index: the messages put aside until the end, and hashes of their ids.
    kept: Vec<Vec<Message>>,
    kept_ids: Vec<crate::FastSet<u64>>,
    /// Hashes of message ids that another message of its session has too (see
    /// [`State::take`]).
    collided: crate::FastSet<u64>,
    /// Per session index: how many of its first-after-event writes were left at its last pruning.
    writes_kept: Vec<usize>,
}

impl Window {
    fn new(from: usize, rules: Box<dyn Forgetting>) -> Self {
        Self {
            from,
            live_parts: 0,
            filed: 0,
            looked_again: 0,
            forgetting: false,
            again: None,
            frozen: None,
            keep_from: None,
            rules,
            calls: Vec::new(),
            highest: Vec::new(),
            kept: Vec::new(),
            kept_ids: Vec::new(),
            collided: crate::FastSet::default(),
            writes_kept: Vec::new(),
        }
    }
}

/// Whether a tool of `message` is still pending or running.
fn has_open_tool(message: &Message) -> bool {
    (message.parts.iter()).any(|p| p.part.tool().is_some_and(|t| t.state.is_open()))
}

/// Gives back the room a vector grew into: its items move to an allocation of their size.
/// (`shrink_to_fit` asks the allocator to shrink in place, which mimalloc declines when the block
/// would stay at least half used: a message's two parts would keep the block of four that the
/// first push made.)
fn fit<T>(items: &mut Vec<T>) {
    if items.capacity() > items.len() {
        let mut fitted = Vec::with_capacity(items.len());
        fitted.append(items);
        *items = fitted;
    }
}

/// Where an item is, from an index of 64-bit hashes of ids that holds the first item with each
/// hash (`hit`): checked with `is_it`, and searched for when another item has the same hash (a
/// collision).
fn hashed_position<T>(
    hit: Option<usize>,
    items: &[T],
    is_it: impl Fn(&T) -> bool,
) -> Option<usize> {
    match hit {
        Some(i) if items.get(i).is_some_and(&is_it) => Some(i),
        Some(_) => items.iter().position(is_it),
        None => None,
    }
}

/// What a log's part keeps in memory: what the checks read (ids, type, tool, call id, status,
/// error, title, whether the input was empty), without tool inputs and outputs, metadata or file
/// contents — so the model grows with the number of parts, not with what the tools printed. (The
/// schema was checked on the full payload before this.)
fn slim(mut v: Value) -> Value {
    if let Some(state) = v.get_mut("state").and_then(Value::as_object_mut) {
        for heavy in ["output", "metadata", "attachments", "raw"] {
            state.remove(heavy);
        }
        // A non-empty input becomes `true`: `input_is_empty()` still answers right.
        if let Some(input) = state.get_mut("input")
            && input.as_object().is_some_and(|m| !m.is_empty())
        {
            *input = Value::Bool(true);
        }
    }
    if let Some(obj) = v.as_object_mut() {
        obj.remove("metadata");
    }
    cap_strings_in_place(&mut v, MAX_KEPT_STRING);
    v
}

/// Whether [`slim`] leaves `v` as it is: no `state` object, no `metadata`, no string longer
/// than it keeps (a `step_finish`'s part, as a rule).
fn slim_keeps(v: &Value) -> bool {
    fn short(v: &Value) -> bool {
        match v {
            Value::String(s) => s.len() <= MAX_KEPT_STRING,
            Value::Array(items) => items.iter().all(short),
            Value::Object(map) => map.values().all(short),
            _ => true,
        }
    }
    !v.get("state").is_some_and(Value::is_object) && v.get("metadata").is_none() && short(v)
}

/// Reads an error value: a string, a NamedError `{name, data}`, a serialised `Error`
/// `{name, message, …}`, or a wrapper `{error: {…}}`. `path` is where `v` is in the record.
fn error_info(rec: &JsonRecord, path: &[&str], v: &Value) -> ErrorInfo {
    let at = |extra: &[&str]| {
        let segs: Vec<Seg<'_>> = path
            .iter()
            .chain(extra.iter())
            .map(|k| Seg::Key(k))
            .collect();
        rec.locate(&segs)
    };
    let mut info = ErrorInfo {
        data: cap_strings(v, MAX_KEPT_STRING),
        ..ErrorInfo::default()
    };
    match v {
        Value::String(s) => {
            info.message = capped(s, MAX_ERROR_MESSAGE);
            info.message_span = at(&[]);
        }
        Value::Object(obj) => {
            // `{error: {name, …}}` (the prompt loop's "stream error" entry): look inside.
            if !obj.contains_key("name")
                && let Some(inner) = obj.get("error").filter(|e| e.is_object())
            {
                let mut deeper = path.to_vec();
                deeper.push("error");
                return error_info(rec, &deeper, inner);
            }
            let s = |k: &str| obj.get(k).and_then(Value::as_str);
            info.name = s("name").map(str::to_owned);
            let data = obj.get("data");
            let (message, where_) =
                if let Some(m) = data.and_then(|d| d.get("message")).and_then(Value::as_str) {
                    (Some(m.to_owned()), at(&["data", "message"]))
                } else if let Some(m) = s("message") {
                    (Some(m.to_owned()), at(&["message"]))
                } else if let Some(text) = s("text") {
                    let short = crate::session::first_line(text, 80);
                    (Some(format!("could not parse {short}")), at(&["name"]))
                } else {
                    (describe_nested(obj), at(&["name"]))
                };
            info.message = capped(&message.unwrap_or_default(), MAX_ERROR_MESSAGE);
            info.message_span = where_;
            info.retryable = data
                .and_then(|d| d.get("isRetryable"))
                .or_else(|| obj.get("isRetryable"))
                .and_then(Value::as_bool);
            info.wrapped = obj
                .get("lastError")
                .or_else(|| obj.get("cause"))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(text) = s("text") {
                let span = at(&["text"]);
                if let Some(span) = span {
                    info.payload = Some((capped(text, MAX_ERROR_MESSAGE), span));
                }
                let mut segs: Vec<Seg<'_>> = path.iter().map(|k| Seg::Key(k)).collect();
                segs.push(Seg::Key("text"));
                info.embedded_event = ["data:", "event:"]
                    .iter()
                    .filter(|m| text.find(**m).is_some_and(|k| k > 0))
                    .find_map(|m| rec.locate_in_string(&segs, m));
            }
        }
        other => info.message = other.to_string(),
    }
    info
}

/// Whether a process-level error object is only a stderr line a wrapper wrapped as an error
/// (`{"type":"error","errorType":"RuntimeError","message":"Verbose mode enabled…"}`): no stack,
/// no data, a generic class, and a message that does not speak of a failure.
fn informational(obj: &serde_json::Map<String, Value>) -> bool {
    const FAILURE: &[&str] = &[
        "error",
        "fail",
        "exception",
        "cannot",
        "can't",
        "unable",
        "denied",
        "timed out",
        "timeout",
        "crash",
        "abort",
        "panic",
        "fatal",
        "reject",
        "invalid",
        "not found",
        "refused",
        "unhandled",
        "uncaught",
        "killed",
        "exit code",
        "missing",
        "unexpected",
    ];
    // The class a stderr line gets when it is wrapped; a real crash names its own class and
    // carries its stack.
    let generic = obj.get("errorType").and_then(Value::as_str) == Some("RuntimeError");
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    generic
        && !obj.contains_key("stack")
        && !obj.contains_key("data")
        && !message.trim().is_empty()
        && !FAILURE.iter().any(|w| message.contains(w))
}

/// Claude Code's synthetic assistant text for a failed request: `API Error: 400 {…json…}`.
pub(crate) fn api_error(text: &str, span: Option<Span>) -> Option<ErrorInfo> {
    let rest = text
        .strip_prefix("API Error")?
        .trim_start_matches(':')
        .trim_start();
    let (code, body) = rest.split_once(' ').unwrap_or((rest, ""));
    let status: Option<u64> = code.parse().ok();
    let body_json: Option<Value> = serde_json::from_str(body.trim()).ok();
    let detail = body_json
        .as_ref()
        .and_then(|b| b.pointer("/error/message"))
        .and_then(Value::as_str);
    let kind = body_json
        .as_ref()
        .and_then(|b| b.pointer("/error/type"))
        .and_then(Value::as_str);
    let message = match (status, kind, detail) {
        (Some(c), Some(k), Some(d)) => format!("{c} {k}: {d}"),
        (Some(c), _, Some(d)) => format!("{c}: {d}"),
        _ => rest.to_owned(),
    };
    Some(ErrorInfo {
        name: Some("API Error".into()),
        message: capped(&message, MAX_ERROR_MESSAGE),
        retryable: status.map(|c| c == 429 || c >= 500),
        data: serde_json::json!({ "statusCode": status, "text": capped(text, MAX_KEPT_STRING) }),
        message_span: span,
        ..ErrorInfo::default()
    })
}

/// A non-negative integer, or a number in a string (`"772.12"` is not read: only integers).
fn num_of(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
}

/// A JSON value logged as a string (`"providerMetadata": "{\"anthropic\":…}"`), parsed.
fn parse_if_string(v: &Value) -> Value {
    match v {
        Value::String(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        other => other.clone(),
    }
}

/// The sum of the counts of a token object (`{input, output, reasoning, cache: {read, write}}`).
fn usage_total(v: &Value) -> u64 {
    match v {
        Value::Object(m) => m.values().map(usage_total).fold(0, u64::saturating_add),
        other => num_of(other).unwrap_or(0),
    }
}

/// [`usage_total`] of the JSON text of a token object, read without building its value:
/// `None` when the text is not one JSON value, or when an object in it repeats a key (its value
/// would keep only the last).
fn usage_total_of(text: &str) -> Option<u64> {
    // What a provider's counts nearly always are: read at once, else through serde.
    match plain_usage(text.as_bytes(), 0, 0) {
        Some((total, repeated, end)) if end == text.len() => (!repeated).then_some(total),
        _ => usage_total_serde(text),
    }
}

/// A token object in its commonest form, read byte by byte: compact, of keys without escapes
/// (at most sixteen to an object) and values that are unsigned integers of at most 15 digits or
/// such objects. Gives the sum of the counts, whether an object repeats a key, and the index
/// after the object starting at `i`; `None` for any other text (read by
/// [`usage_total_serde`]).
fn plain_usage(b: &[u8], mut i: usize, depth: usize) -> Option<(u64, bool, usize)> {
    if depth > 8 || b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    if b.get(i) == Some(&b'}') {
        return Some((0, false, i + 1));
    }
    let mut keys: [&[u8]; 16] = [&[]; 16];
    let (mut n, mut total, mut repeated) = (0, 0u64, false);
    loop {
        if b.get(i) != Some(&b'"') || n == keys.len() {
            return None;
        }
        // An escaped key is left to serde, which decodes it before comparing.
        let (end, escaped) = crate::model::conform::string_end(b, i + 1)?;
        if escaped || b.get(end + 1) != Some(&b':') {
            return None;
        }
        let key = b.get(i + 1..end)?;
        repeated |= keys[..n].contains(&key);
        keys[n] = key;
        n += 1;
        i = end + 2;
        match *b.get(i)? {
            b'{' => {
                let (inner, again, after) = plain_usage(b, i, depth + 1)?;
                total = total.saturating_add(inner);
                repeated |= again;
                i = after;
            }
            b'0'..=b'9' => {
                let digits = b
                    .get(i..)?
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits > 15 || (digits > 1 && b.get(i) == Some(&b'0')) {
                    return None;
                }
                let count: u64 = std::str::from_utf8(b.get(i..i + digits)?)
                    .ok()?
                    .parse()
                    .ok()?;
                total = total.saturating_add(count);
                i += digits;
            }
            _ => return None,
        }
        match *b.get(i)? {
            b',' => i += 1,
            b'}' => return Some((total, repeated, i + 1)),
            _ => return None,
        }
    }
}

/// [`usage_total_of`] through serde, for any JSON text.
fn usage_total_serde(text: &str) -> Option<u64> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Total;
    impl<'de> DeserializeSeed<'de> for Total {
        type Value = Option<u64>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
            d.deserialize_any(self)
        }
    }
    // Each leaf is made into the `Value` the parse would make of it, and counted by `num_of`.
    impl<'de> Visitor<'de> for Total {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Option<u64>, E> {
            Ok(Some(0))
        }
        fn visit_unit<E>(self) -> Result<Option<u64>, E> {
            Ok(Some(0))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Option<u64>, E> {
            Ok(Some(num_of(&Value::from(v)).unwrap_or(0)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Option<u64>, E> {
            Ok(Some(v.parse().unwrap_or(0)))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<u64>, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Some(0))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
            // A set, not a list: an object of many keys is read in linear time.
            let mut keys = crate::FastSet::default();
            let mut total = Some(0u64);
            while let Some(Lenient(key)) = map.next_key::<Lenient<'de>>()? {
                if !keys.insert(key) {
                    total = None;
                }
                let v = map.next_value_seed(Total)?;
                total = total.zip(v).map(|(a, b)| a.saturating_add(b));
            }
            Ok(total)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let total = Total.deserialize(&mut de).ok()?;
    de.end().ok()?;
    total
}

/// Input and output token counts found anywhere in a provider's value, in the names providers
/// use (Anthropic `input_tokens`, OpenAI `prompt_tokens`, Google `promptTokenCount`, the AI SDK
/// `inputTokens`); `None` when it carries none or only zeros.
pub fn usage_of(v: &Value) -> Option<(u64, u64)> {
    const INPUT: &[&str] = &[
        "input_tokens",
        "prompt_tokens",
        "inputTokens",
        "promptTokens",
        "promptTokenCount",
    ];
    const OUTPUT: &[&str] = &[
        "output_tokens",
        "completion_tokens",
        "outputTokens",
        "completionTokens",
        "candidatesTokenCount",
    ];
    fn walk(v: &Value, best: &mut (u64, u64), depth: usize) {
        if depth > 8 {
            return;
        }
        match v {
            Value::Object(m) => {
                let pick = |keys: &[&str]| keys.iter().find_map(|k| m.get(*k).and_then(num_of));
                let (i, o) = (pick(INPUT).unwrap_or(0), pick(OUTPUT).unwrap_or(0));
                if i + o > best.0 + best.1 {
                    *best = (i, o);
                }
                for child in m.values() {
                    walk(child, best, depth + 1);
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, best, depth + 1)),
            _ => {}
        }
    }
    let mut best = (0, 0);
    walk(v, &mut best, 0);
    (best.0 + best.1 > 0).then_some(best)
}

/// The provider's finish reason in a response value (`finish_reason`, `stop_reason`,
/// `finishReason`), the first non-null one found.
fn finish_of(v: &Value, depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    match v {
        Value::Object(m) => ["finish_reason", "stop_reason", "finishReason"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str).map(str::to_owned))
            .or_else(|| m.values().find_map(|c| finish_of(c, depth + 1))),
        Value::Array(a) => a.iter().find_map(|c| finish_of(c, depth + 1)),
        _ => None,
    }
}

/// The model a command line asks for: `--model X`, `--model=X` or `-m X`.
fn model_flag(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    while let Some(w) = words.next() {
        if let Some(v) = w.strip_prefix("--model=") {
            return Some(v.trim_matches(['"', '\'']).to_owned());
        }
        if w == "--model" || w == "-m" {
            return words.next().map(|v| v.trim_matches(['"', '\'']).to_owned());
        }
    }
    None
}

/// A message for errors that carry none (`AI_RetryError` has `reason` and `lastError`).
fn describe_nested(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let name = obj.get("name").and_then(Value::as_str).unwrap_or("error");
    let reason = obj.get("reason").and_then(Value::as_str);
    let last = obj.get("lastError").or_else(|| {
        obj.get("errors")
            .and_then(Value::as_array)
            .and_then(|e| e.last())
    })?;
    let attempts = obj.get("errors").and_then(Value::as_array).map(Vec::len);
    let last_name = last.get("name").and_then(Value::as_str).unwrap_or("error");
    let status = last.get("statusCode").and_then(Value::as_u64);
    let last_msg = last
        .pointer("/data/error/message")
        .or_else(|| last.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = name.to_owned();
    if let Some(r) = reason {
        out.push_str(&format!(" ({r})"));
    }
    if let Some(n) = attempts {
        let s = if n == 1 { "" } else { "s" };
        out.push_str(&format!(" after {n} attempt{s}"));
    }
    out.push_str(&format!("; last error: {last_name}"));
    if let Some(code) = status {
        out.push_str(&format!(" {code}"));
    }
    if !last_msg.is_empty() {
        out.push_str(&format!(": {last_msg}"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_entries_apply_json_reads_nothing_of_are_light() {
        let plain = r#"{"type":"log","level":"info","service":"lsp","sessionID":"ses_1","message":"touching file"}"#;
        assert_eq!(
            light(plain),
            Some(Light {
                session: Some("ses_1".into()),
                bus: None
            })
        );
        // A model named outside the CLI's own resolution (no `rawModel`, not `default`).
        let resolving = r#"{"type":"log","level":"info","service":"session.prompt","providerID":"a","modelID":"b","sessionID":"ses_2","message":"resolving model"}"#;
        assert_eq!(
            light(resolving),
            Some(Light {
                session: Some("ses_2".into()),
                bus: None
            })
        );
        let idle =
            r#"{"type":"session.idle","level":"info","service":"bus","message":"publishing"}"#;
        assert_eq!(light(idle).and_then(|l| l.bus), Some(BusEvent::Idle));
        for full in [
            r#"{"type":"log","level":"warn","service":"lsp","message":"touching file"}"#,
            r#"{"type":"log","level":"info","service":"http","message":"response"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"Will retry in 2s"}"#,
            r#"{"type":"log","level":"info","service":"default","message":"m","providerID":"a","modelID":"b"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"m","providerID":"a","modelID":"b","rawModel":"a/b"}"#,
            r#"{"type":"log","level":"info","service":"x","message":"m","providerMetadata":null}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"id":"prt_1"}}"#,
            // What serde_json skips but does not build: a lone surrogate, a number out of range.
            r#"{"type":"log","level":"info","message":"m","x":"\ud800"}"#,
            r#"{"type":"log","level":"info","message":"m","x":1e400}"#,
            r#"{"type":"log","level":"info","message":"m","message":"twice"}"#,
            r#"{"type":"log","level":"info","message":"m","x":"\udc00 \ud800"}"#,
            r#"{"type":"log","level":"info","message":"m","x":[1e400]}"#,
            r#"{"type":"log","level":"info","message":"m","x":{"y":-1e999}}"#,
            r#"{"type":"log","level":"info","message":"m","\ud800":1}"#,
            r#"{"type":"log","level":"info","message":"m""#,
        ] {
            assert_eq!(light(full), None, "{full}");
        }
        // Nesting beyond serde_json's recursion limit.
        let deep = format!(
            r#"{{"type":"log","level":"info","message":"m","x":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert_eq!(light(&deep), None);
        let shallow = format!(
            r#"{{"type":"log","level":"info","message":"m","x":{}1{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(light(&shallow).is_some());
    }

    /// A part `slim_keeps` is one `slim` leaves as it is.
    #[test]
    fn slim_keeps_only_what_slim_leaves() {
        let long = "x".repeat(MAX_KEPT_STRING + 1);
        for (part, kept) in [
            (
                serde_json::json!({"id": "p", "type": "step-finish", "reason": "stop", "tokens": {"input": 1}}),
                true,
            ),
            (
                serde_json::json!({"id": "p", "state": "odd", "reason": {"unified": "stop"}}),
                true,
            ),
            (
                serde_json::json!({"id": "p", "state": {"status": "completed", "output": "o"}}),
                false,
            ),
            (
                serde_json::json!({"id": "p", "metadata": null, "reason": "stop"}),
                false,
            ),
            (serde_json::json!({"id": "p", "reason": [long]}), false),
            (serde_json::json!("a string"), true),
        ] {
            assert_eq!(slim_keeps(&part), kept, "{part}");
            if kept {
                assert_eq!(slim(part.clone()), part);
            } else {
                assert_ne!(slim(part.clone()), part, "{part}");
            }
        }
    }

    /// The keys the light readings look for are told apart as a match on the whole key tells
    /// them: the keys themselves, and every one-byte mutation of them.
    #[test]
    fn peek_key_knows_its_keys_and_nothing_else() {
        let reference = |key: &str| match key {
            "type" => Some(0),
            "level" => Some(1),
            "service" => Some(2),
            "message" => Some(3),
            "sessionID" => Some(4),
            "providerID" => Some(5),
            "modelID" => Some(6),
            "rawModel" => Some(7),
            "part" | "log" | "session_id" | "providerMetadata" => Some(8),
            _ => None,
        };
        let got = |key: &str| match peek_key(key) {
            PeekKey::Field(i) => Some(i),
            PeekKey::RuledOut => Some(8),
            PeekKey::Other => None,
        };
        let keys = [
            "type",
            "level",
            "service",
            "message",
            "sessionID",
            "providerID",
            "modelID",
            "rawModel",
            "part",
            "log",
            "session_id",
            "providerMetadata",
            "",
            "t",
            "types",
            "messages",
            "providerMetadat",
        ];
        let mut known = 0;
        for seed in keys {
            for key in std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                assert_eq!(got(&key), reference(&key), "{key:?}");
                known += usize::from(reference(&key).is_some());
            }
        }
        assert!(known >= 12, "{known}");
    }

    /// The look for retry words finds what a search of the lower-case copy finds.
    #[test]
    fn mentions_retry_is_a_search_in_any_case() {
        let copy = |m: &str| {
            let lower = m.to_ascii_lowercase();
            ["retry-after", "will retry", "retrying", "sleep"]
                .iter()
                .any(|k| lower.contains(k))
        };
        let seeds = [
            "Rate limited, WILL RETRY in 5s",
            "using Retry-After value",
            "retrying é request",
            "SLeeP 100",
            "sleeping",
            "will retr",
            "retry",
            "ré-try sleep",
            "",
        ];
        let mut found = 0;
        for seed in seeds {
            for m in std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed)) {
                assert_eq!(mentions_retry(&m), copy(&m), "{m:?}");
                found += usize::from(copy(&m));
            }
        }
        assert!(found > 100, "{found}");
    }

    /// The flat reading reads what serde's does, or leaves the object to it: every one-byte
    /// mutation of flat logger entries and bus events.
    #[test]
    fn flat_reading_agrees_with_serde() {
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","x":-0.25,"ok":true,"no":false,"z":null,"providerID":"a","modelID":"b","rawModel":"c","message":"loop é"}"#,
            "{ \"type\" : \"session.idle\" ,\n \"service\":\"bus\",\t\"message\":\"publishing\" }\r\n",
            r#"{"type":"log","part":{"id":"p"},"message":"m"}"#,
            r#"{"type":"log","level":"info","message":"m","n":0}"#,
            // Escapes where the text is not read, and where it is.
            r#"{"type":"log","service":"snapshot","hash":"01fc\n","cwd":"/a \"b\" \u00e9 \\ \/","providerID":"\u0061","message":"tracking"}"#,
            r#"{"type":"log","x":"\ud83d\ude00","message":"m"}"#,
            r#"{"type":"log","service":"snap\u0073hot","message":"tracking"}"#,
            "{}",
        ];
        let (mut flat, mut ruled_out, mut escaped) = (0, 0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let serde = serde_json::from_str::<Peek<'_>>(&text);
                match flat_peek(&text) {
                    Flat::Peek(p) => {
                        assert_eq!(serde.as_ref().ok(), Some(&p), "{text}");
                        flat += 1;
                        escaped += usize::from(text.contains('\\'));
                    }
                    Flat::RuledOut => {
                        assert!(serde.is_err(), "{text}");
                        ruled_out += 1;
                    }
                    Flat::Unsure => {}
                }
            }
        }
        assert!(
            flat > 500 && ruled_out > 50 && escaped > 100,
            "{flat} {ruled_out} {escaped}"
        );
    }

    /// The quote-to-quote reading reads what the byte-by-byte one reads, or leaves the object
    /// to it: every one-byte mutation of compact flat objects, some longer than a block, with
    /// strings across blocks.
    #[test]
    fn fast_flat_reading_agrees_with_the_slow_one() {
        let long = "x".repeat(150);
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","x":-0.25,"ok":true,"no":false,"z":null,"providerID":"a","modelID":"b","rawModel":"c","message":"loop é"}"#.to_owned(),
            r#"{"type":"session.idle","service":"bus","message":"publishing"}"#.to_owned(),
            r#"{"type":"log","part":{"id":"p"},"message":"m"}"#.to_owned(),
            format!(r#"{{"type":"log","{long}":"{long}","message":"{long}","n":1234567,"sessionID":"ses_{long}"}}"#),
            format!(r#"{{"type":"log","a":"{}","b":12345678901234.5,"service":"bus"}}"#, &long[..51]),
            "{}".to_owned(),
        ];
        let (mut fast, mut ruled_out) = (0, 0);
        for seed in &seeds {
            for text in std::iter::once(seed.clone()).chain(crate::text::one_byte_mutations(seed)) {
                let Some(flat) = flat_fast(&text) else {
                    continue;
                };
                assert_eq!(flat, flat_slow(&text), "{text}");
                fast += 1;
                ruled_out += usize::from(flat == Flat::RuledOut);
            }
        }
        assert!(fast > 1000 && ruled_out > 50, "{fast} {ruled_out}");
    }

    /// An object the light filter takes always reads as a `Value` too: every one-byte mutation
    /// of a plain logger entry.
    #[test]
    fn light_objects_are_values() {
        let seed = r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"lsp","sessionID":"ses_1","message":"touching \"file\" \u00e9","n":[1,-2.5e3,{"x":null}],"ok":true}"#;
        let mut taken = 0;
        for text in crate::text::one_byte_mutations(seed) {
            if light(&text).is_some() {
                assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
                taken += 1;
            }
        }
        assert!(taken > 100);
    }

    const P: &str = "[2026-02-01T12:30:28.417Z] [INFO] ";

    fn run(log: &str) -> Analysis {
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
    fn parts_whose_id_hashes_collide_stay_apart() {
        let mut state = State::new(FileId(0));
        let part = |id: &str, status: &str| {
            Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
                "callID": id, "tool": "read", "state": {"status": status, "input": {}},
            }))
        };
        let write = |seq: Seq, status: &'static str| Observation {
            seq,
            span: Span::new(FileId(0), seq, 1),
            status: Some(status.into()),
            status_span: None,
        };
        let si = state.session_slot("ses_1");
        let mi = state.message_slot(si, "msg_1");
        state.file_part(si, mi, part("prt_a", "pending"), write(0, "pending"));
        // Enough parts for the message to be indexed.
        let n = INDEXED_FROM as u64;
        for k in 1..n {
            let id = format!("prt_filler{k:02}");
            state.file_part(si, mi, part(&id, "pending"), write(k, "pending"));
        }
        assert_eq!(state.part_index.len(), INDEXED_FROM);
        // A collision: prt_b's key names prt_a's slot.
        let b_key = (si, mi, state.id_hasher.hash_one("prt_b"));
        state.part_index.insert(b_key, 0);
        state.file_part(si, mi, part("prt_b", "pending"), write(n, "pending"));
        state.file_part(
            si,
            mi,
            part("prt_b", "completed"),
            write(n + 1, "completed"),
        );
        state.file_part(si, mi, part("prt_a", "error"), write(n + 2, "error"));
        let parts = &state.analysis.sessions[si].messages[mi].parts;
        assert_eq!(parts.len(), INDEXED_FROM + 1);
        assert_eq!(parts[0].part.id, "prt_a");
        assert_eq!(parts[0].status_path(), ["pending", "error"]);
        assert_eq!(parts[INDEXED_FROM].part.id, "prt_b");
        assert_eq!(parts[INDEXED_FROM].status_path(), ["pending", "completed"]);
    }

    /// The index of tool calls finds what a walk of the session finds, as parts are filed
    /// after it is built: a call filed again in an earlier message, a part rewritten with another
    /// call id, calls that never were.
    #[test]
    fn the_call_index_finds_what_a_walk_finds() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let mut seq = 0;
        let mut file = |state: &mut State, msg: &str, id: &str, call: &str| {
            seq += 1;
            let part = Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": msg, "type": "tool",
                "callID": call, "tool": "read", "state": {"status": "running", "input": {}},
            }));
            let span = Span::new(FileId(0), seq, 1);
            let observation = Observation {
                seq,
                span,
                status: None,
                status_span: None,
            };
            let mi = state.message_slot(si, msg);
            state.file_part(si, mi, part, observation);
        };
        let walk = |state: &State, call: &str| {
            let messages = &state.analysis.sessions[si].messages;
            messages.iter().enumerate().find_map(|(mi, m)| {
                let pi = (m.parts.iter())
                    .position(|p| p.part.tool().is_some_and(|t| t.call_id == call))?;
                Some((mi, pi))
            })
        };
        let calls = ["c1", "c2", "c3", "c4", "none"];
        file(&mut state, "msg_1", "prt_1", "c1");
        file(&mut state, "msg_2", "prt_2", "c2");
        for call in calls {
            assert_eq!(state.claude_call(si, call), walk(&state, call), "{call}");
        }
        file(&mut state, "msg_2", "prt_3", "c1");
        file(&mut state, "msg_3", "prt_4", "c3");
        file(&mut state, "msg_1", "prt_5", "c3");
        file(&mut state, "msg_1", "prt_1", "c4");
        for call in calls {
            assert_eq!(state.claude_call(si, call), walk(&state, call), "{call}");
        }
    }

    #[test]
    fn fit_leaves_no_room_and_keeps_the_items() {
        let mut v = vec![1u64];
        v.push(2);
        assert!(v.capacity() > 2);
        fit(&mut v);
        assert_eq!((v.as_slice(), v.capacity()), (&[1, 2][..], 2));
        let mut empty: Vec<u64> = Vec::with_capacity(8);
        fit(&mut empty);
        assert_eq!(empty.capacity(), 0);
    }

    #[test]
    fn a_message_is_indexed_once_it_has_many_parts() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let mi = state.message_slot(si, "msg_1");
        let write = |k: usize, status: &'static str| {
            let id = format!("prt_{k:03}");
            let part = Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
                "callID": id, "tool": "read", "state": {"status": status, "input": {}},
            }));
            let seq = k as Seq;
            let span = Span::new(FileId(0), seq, 1);
            (
                part,
                Observation {
                    seq,
                    span,
                    status: Some(status.into()),
                    status_span: None,
                },
            )
        };
        for k in 0..INDEXED_FROM + 3 {
            let (part, observation) = write(k, "pending");
            state.file_part(si, mi, part, observation);
            let indexed = if k + 1 >= INDEXED_FROM { k + 1 } else { 0 };
            assert_eq!(state.part_index.len(), indexed);
        }
        // Every part, indexed or found by its id, is written again in its own place.
        for k in 0..INDEXED_FROM + 3 {
            let (part, observation) = write(k, "completed");
            state.file_part(si, mi, part, observation);
        }
        let parts = &state.analysis.sessions[si].messages[mi].parts;
        assert_eq!(parts.len(), INDEXED_FROM + 3);
        for (k, record) in parts.iter().enumerate() {
            assert_eq!(record.part.id, format!("prt_{k:03}"));
            assert_eq!(record.status_path(), ["pending", "completed"]);
        }
    }

    /// Reads a one-record log both ways: [`part_event`] on the record's text, and [`ready`] on
    /// it decoded.
    fn both_ways(text: &str) -> Option<(Option<PartEvent>, Ready)> {
        let (p, texts, decoding) = pending(text)?;
        // As `decode_pending` tries it: after the light reading.
        let fast = p
            .view(&texts)
            .filter(|rec| light(rec.text).is_none())
            .and_then(|rec| part_event(&rec));
        Some((fast, ready(p.decode(&texts, decoding))))
    }

    /// The first value of a log, not decoded yet, as the replay's reader yields it.
    fn pending(text: &str) -> Option<(Pending, std::sync::Arc<Texts>, Decoding)> {
        let mut reader = AgentLogReader::new(text.as_bytes(), FileId(0))
            .with_light(light)
            .with_object_parser(parse_object)
            .deferred();
        let decoding = reader.decoding();
        let Some(Ok(LogRecord::Pending(p))) = reader.next() else {
            return None;
        };
        Some((p, reader.take_texts(), decoding))
    }

    /// [`decode_pending`], which reads a light record or a part event from its text, reads every
    /// record as [`ready`] reads it decoded: logger entries, bus events, part events, a raw
    /// error dump, and every one-byte mutation of them.
    #[test]
    fn records_read_from_their_text_read_as_decoded() {
        let seeds = [
            r#"{"type":"log","level":"info","timestamp":"2026-03-30T12:02:32.919Z","service":"session.prompt","step":10,"sessionID":"ses_1","message":"loop"}"#,
            r#"{"type":"message.part.updated","level":"info","timestamp":"2026-03-30T12:02:33.088Z","service":"bus","message":"publishing"}"#,
            r#"{"type":"session.status","properties":{"sessionID":"ses_1","status":{"type":"busy"}}}"#,
            r#"{"type":"log","part":{"id":"p"},"message":"m \"part\""}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"hi","time":{"start":1,"end":2}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
            "ZodError: [\n  {\n    \"code\": \"invalid_union\"\n  }\n]\n",
        ];
        let (mut light_read, mut parts, mut all) = (0, 0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let Some((p, texts, decoding)) = pending(&text) else {
                    continue;
                };
                all += 1;
                let slow = ready(p.clone().decode(&texts, decoding));
                let (either, _) = decode_pending(p, &texts, decoding);
                light_read += usize::from(matches!(either, Ready::Record(LogRecord::Light { .. })));
                parts += usize::from(matches!(either, Ready::Part(_)));
                assert_eq!(format!("{either:?}"), format!("{slow:?}"), "{text}");
            }
        }
        assert!(
            light_read > 300 && parts > 300 && all > 1500,
            "{light_read} {parts} {all}"
        );
    }

    /// A part event read from its text is what [`ready`] reads of it decoded: real step, tool,
    /// text and reasoning events, events with every heavy field, and every one-byte mutation of
    /// them.
    #[test]
    fn part_events_read_as_ready_reads_them() {
        let seeds = [
            r#"{"type":"step_start","timestamp":1771057754652,"sessionID":"ses_3a4bb6d8dffeiS5FRAjqmkJinT","part":{"id":"prt_c5b44a795001zQe56nCjjJYlaI","sessionID":"ses_3a4bb6d8dffeiS5FRAjqmkJinT","messageID":"msg_c5b449314001c6ZX5L0bedtpJ6","type":"step-start","snapshot":"4b825dc642cb6eb9a060e54bf8d69288fbee4904"}}"#,
            r#"{"type":"step_finish","timestamp":1771057754652,"sessionID":"ses_1","part":{"id":"prt_2","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"tool-calls","snapshot":"4b82","cost":0.0125,"tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":3,"write":0}}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"id":"prt_3","sessionID":"ses_1","messageID":"msg_1","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"requestedModelID":"a","respondedModelID":"b"}},"level":"info"}"#,
            "{ \"type\" : \"step_finish\",\n \"part\": {\"type\":\"step-finish\",\"id\":\"p\\u00e9\",\"messageID\":\"m\",\"sessionID\":\"s\",\"reason\":\"st\\nop\",\"cost\":0.5,\"tokens\":{\"input\":1,\"output\":2,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}}}, \"sessionID\": \"ses_é\" }",
            "{\"type\":\"step_finish\",\"part\" : { \"reason\" : \"length\" , \"id\" : \"prt_9\", \"type\" : \"step-finish\", \"sessionID\":\"ses_9\",\"messageID\":\"msg_9\", \"model\" : {\"requestedModelID\":\"m1\", \"respondedModelID\" : \"m2\"}, \"cost\" : 1.5 , \"tokens\" : { \"input\" : 3, \"output\":4,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0} } } , \"sessionID\":\"ses_9\"}",
            // Models whose keys repeat (the last counts) or are escaped, an escaped reason.
            r#"{"type":"step_finish","part":{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"stop","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"requestedModelID":"a","requestedModelID":"b","respondedModelID":5,"x":[1,{"y":null}]}}}"#,
            r#"{"type":"step_finish","part":{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"a\"b","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"model":{"respondedModelID":"m\u00e9","requestedModelID":null}}}"#,
            // Tool, text and reasoning events of a real log.
            r#"{"type":"tool_use","timestamp":1774872162685,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3e9ff17b001n5aezfoA0LPbIK","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3e9fcc06001VD5n7TeV1J94hI","type":"tool","callID":"call_function_7h2yanagmomm_1","tool":"bash","state":{"status":"pending","input":{},"raw":""}}}"#,
            r#"{"type":"tool_use","timestamp":1774872215835,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3ea0c050001M4O7kbREQ0fpjm","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3ea0adb0001Krbkwq2lpK0suw","type":"tool","callID":"call_function_dsio76bonyjn_1","tool":"grep","state":{"status":"completed","input":{"pattern":"ACAD_GROUP","include":"*.pas"},"output":"No files found","title":"ACAD_GROUP","metadata":{"matches":0,"truncated":false},"time":{"start":1774872215812,"end":1774872215834}}}}"#,
            r#"{"type":"tool_use","timestamp":1774872343215,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3ea2b2a2001JMnJK4rHE7DZ3y","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3ea2a43c001rCciHVMSNS0cDI","type":"tool","callID":"call_function_ilh011x44gj2_1","tool":"grep","state":{"status":"error","input":{"path":"/tmp","pattern":"^5\\n42$"},"error":"Error: ripgrep failed: rg: the literal \"\\n\" is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\n","time":{"start":1774872343212,"end":1774872343214}}}}"#,
            r#"{"type":"text","timestamp":1774872162683,"sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","part":{"id":"prt_0000d3e9fef15001xE6iYua1mYejok","sessionID":"ses_00002c160341bffe1NPdaoYQqSbTsz","messageID":"msg_0000d3e9fcc06001VD5n7TeV1J94hI","type":"text","text":"I'll start by checking the current branch.","time":{"start":1774872162682,"end":1774872162682}}}"#,
            r#"{"type":"reasoning","sessionID":"ses_1","part":{"id":"prt_r","sessionID":"ses_1","messageID":"msg_1","type":"reasoning","text":"Think \u00e9 first","metadata":{"anthropic":{"signature":"x"}},"time":{"start":1,"end":2}}}"#,
        ];
        // Strings longer than a log keeps (cut inside a two-byte character), with every heavy
        // field a tool part can carry, and a part-level metadata.
        let long = format!("a{}", "é".repeat(300));
        let heavy = format!(
            r#"{{"type":"tool_use","sessionID":"ses_1","part":{{"id":"prt_h","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c1","tool":"read","metadata":{{"k":"{long}"}},"state":{{"status":"completed","input":{{"filePath":"{long}"}},"output":"{long}","title":"{long}","raw":"{long}","metadata":{{"preview":"{long}"}},"attachments":[],"time":{{"start":1,"end":2}}}}}}}}"#
        );
        let failed = format!(
            r#"{{"type":"tool_use","sessionID":"ses_1","part":{{"id":"prt_e","sessionID":"ses_1","messageID":"msg_1","type":"tool","callID":"c2","tool":"bash","state":{{"status":"error","input":{{ }},"error":"{long}","time":{{"start":1,"end":2}}}}}}}}"#
        );
        let text = format!(
            r#"{{"type":"text","part":{{"id":"prt_t","sessionID":"ses_1","messageID":"msg_1","type":"text","text":"{long}","synthetic":true,"metadata":{{"a":1}}}}}}"#
        );
        let seeds: Vec<String> = seeds
            .into_iter()
            .map(str::to_owned)
            .chain([heavy, failed, text])
            .collect();
        let (mut fast, mut all) = (0, 0);
        for seed in &seeds {
            assert!(
                matches!(both_ways(seed), Some((Some(_), _))),
                "read from its text: {seed}"
            );
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                all += 1;
                let Some((Some(event), slow)) = both_ways(&text) else {
                    continue;
                };
                fast += 1;
                let Ready::Part(slow) = slow else {
                    panic!("read as a part event, not by ready: {text}");
                };
                assert_eq!(format!("{event:?}"), format!("{slow:?}"), "{text}");
            }
        }
        assert!(fast * 4 > all, "{fast} of {all}");
        // A model that is not an object is left to the full reading, which reads no ids from it.
        for model in [
            r#""opencode/x""#,
            r#"[{"requestedModelID":"a"}]"#,
            "null",
            "7",
        ] {
            let text = format!(
                r#"{{"type":"step_finish","part":{{"id":"p","sessionID":"s","messageID":"m","type":"step-finish","reason":"stop","cost":0,"tokens":{{"input":0,"output":0,"reasoning":0,"cache":{{"read":0,"write":0}}}},"model":{model}}}}}"#
            );
            let Some((None, Ready::Part(slow))) = both_ways(&text) else {
                panic!("read from its text, or not as a part event: {text}");
            };
            let step = slow.step.expect("a step_finish's step");
            assert_eq!(
                (step.requested_model, step.responded_model),
                (None, None),
                "{text}"
            );
        }
    }

    /// The total read from a token object's text is the total of its value, or `None` where an
    /// object repeats a key.
    #[test]
    fn usage_total_of_reads_what_usage_total_counts() {
        let texts = [
            r#"{"input":0,"output":0,"reasoning":0,"cache":{"read":0,"write":0}}"#,
            r#"{"input":1200,"output":35,"reasoning":0,"cache":{"read":9000,"write":0}}"#,
            r#"{"input":-5,"output":5.7,"total":"12","x":"a","y":null,"z":true,"w":[1,2]}"#,
            r#"{"input":1e3,"output":18446744073709551615,"reasoning":18446744073709551615}"#,
            r#"{"input":123456789012345678901234567890,"cache":{"read":-0.0,"write":0.4}}"#,
            r#"{"a":{"b":{"c":{"d":7}}},"e\u0041":1}"#,
            r#"7"#,
            r#""8""#,
            r#"[]"#,
        ];
        for text in texts {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(usage_total_of(text), Some(usage_total(&v)), "{text}");
        }
        for text in [
            r#"{"input":5,"input":0}"#,
            r#"{"cache":{"read":1,"read":0}}"#,
            r#"{"eA":1,"e\u0041":0}"#,
            r#"{"input":1"#,
            r#"{"input":1} x"#,
        ] {
            assert_eq!(usage_total_of(text), None, "{text}");
        }
        // Keys are told apart by a set: an object of many keys reads as fast as its size allows
        // (a list made this one take seconds), and a key repeated at its end is still found.
        let many: String = (0..50_000).map(|k| format!(r#","k{k}":1"#)).collect();
        let many = format!(r#"{{"input":2{many}}}"#);
        assert_eq!(usage_total_of(&many), Some(50_002));
        let repeated = format!(r#"{},"k0":1}}"#, &many[..many.len() - 1]);
        assert_eq!(usage_total_of(&repeated), None);
    }

    /// The byte-by-byte reading of a plain token object reads what serde's does: every one-byte
    /// mutation of token objects.
    #[test]
    fn plain_token_objects_read_as_serde_reads_them() {
        let seeds = [
            r#"{"input":15835,"output":199,"reasoning":0,"cache":{"read":0,"write":0}}"#,
            r#"{"input":1,"total":999999999999999,"cache":{"read":1,"read":2}}"#,
            r#"{"a":{"b":{"c":{"d":7,"e":10}}},"f":{}}"#,
            // Numbers serde reads otherwise or not at all.
            r#"{"input":007}"#,
            r#"{"output":1.5}"#,
            r#"{"reasoning":-1}"#,
            r#"{"x":1e2}"#,
        ];
        let (mut plain, mut repeated) = (0, 0);
        for seed in seeds {
            for text in
                std::iter::once(seed.to_owned()).chain(crate::text::one_byte_mutations(seed))
            {
                let serde = usage_total_serde(&text);
                match plain_usage(text.as_bytes(), 0, 0) {
                    Some((_, _, end)) if end == text.len() => {
                        assert_eq!(usage_total_of(&text), serde, "{text}");
                        plain += 1;
                        repeated += usize::from(serde.is_none());
                    }
                    _ => {}
                }
            }
        }
        assert!(plain > 300 && repeated > 30, "{plain} {repeated}");
    }

    /// Histories keep what the checks read of every write, whatever the order of writes and
    /// events: random runs of writes (three parts, two sessions, cleanups among them) and events,
    /// each compared with every write kept.
    #[test]
    fn histories_drop_only_writes_nothing_reads() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let statuses = ["pending", "running", "completed", "error"];
        let (mut writes_made, mut writes_kept) = (0, 0);
        for _ in 0..300 {
            let mut state = State::new(FileId(0));
            // (session, part) → every write: (seq, status, cleanup).
            type Writes<'a> = Vec<(Seq, &'a str, bool)>;
            let mut all: std::collections::BTreeMap<(usize, usize), Writes<'_>> =
                std::collections::BTreeMap::new();
            let mut events: Vec<Seq> = Vec::new();
            for seq in 0..60 {
                if next(8) == 0 {
                    state.event(seq, Span::new(FileId(0), seq, 1), None, EventKind::Idle);
                    events.push(seq);
                    continue;
                }
                let (s, p) = (next(2) as usize, next(3) as usize);
                // A part keeps its status for a run of writes, as a streamed one does.
                let previous = all.get(&(s, p)).and_then(|w| w.last()).map(|w| w.1);
                let status = match previous {
                    Some(status) if next(4) != 0 => status,
                    _ => statuses[next(4) as usize],
                };
                let cleanup = status == "error" && next(2) == 0;
                let error = if cleanup { TOOL_ABORTED } else { "boom" };
                let part = Part::from_value(&serde_json::json!({
                    "id": format!("prt_{p}"), "sessionID": format!("ses_{s}"),
                    "messageID": "msg_1", "type": "tool", "callID": "c", "tool": "read",
                    "state": {"status": status, "input": {}, "error": error},
                }));
                let si = state.session_slot(&format!("ses_{s}"));
                let mi = state.message_slot(si, "msg_1");
                let write = Observation {
                    seq,
                    span: Span::new(FileId(0), seq, 1),
                    status: Some(status.into()),
                    status_span: None,
                };
                state.file_part(si, mi, part, write);
                all.entry((s, p)).or_default().push((seq, status, cleanup));
            }
            for ((s, p), writes) in &all {
                let session = state.analysis.session(&format!("ses_{s}")).into_iter();
                let record = session
                    .flat_map(|x| x.messages.iter().flat_map(|m| &m.parts))
                    .find(|r| r.part.id == format!("prt_{p}"));
                let Some(record) = record else {
                    panic!("prt_{p} of ses_{s} is missing");
                };
                let kept: Vec<(Seq, &str)> = record
                    .history
                    .iter()
                    .map(|o| (o.seq, o.status.as_deref().unwrap_or_default()))
                    .collect();
                writes_made += writes.len();
                writes_kept += kept.len();
                let mut path: Vec<&str> = writes.iter().map(|w| w.1).collect();
                path.dedup();
                assert_eq!(record.status_path(), path);
                assert_eq!(kept.first(), writes.first().map(|w| (w.0, w.1)).as_ref());
                assert_eq!(kept.last(), writes.last().map(|w| (w.0, w.1)).as_ref());
                for status in statuses {
                    let first = writes.iter().find(|w| w.1 == status).map(|w| w.0);
                    let last = writes.iter().rev().find(|w| w.1 == status).map(|w| w.0);
                    assert_eq!(kept.iter().find(|k| k.1 == status).map(|k| k.0), first);
                    assert_eq!(kept.iter().rev().find(|k| k.1 == status).map(|k| k.0), last);
                }
            }
            // The first write of each session after each event, with and without the cleanups'
            // last writes (what `incidents` and `loop-exited-early` ask).
            for s in 0..2 {
                for skip_cleanup in [false, true] {
                    let counted = |writes: &[(Seq, &str, bool)], i: usize| {
                        !(skip_cleanup && i + 1 == writes.len() && writes[i].2)
                    };
                    let full: Vec<Seq> = all
                        .iter()
                        .filter(|((x, _), _)| *x == s)
                        .flat_map(|(_, w)| (0..w.len()).filter(|&i| counted(w, i)).map(|i| w[i].0))
                        .collect();
                    let kept: Vec<Seq> = state
                        .analysis
                        .session(&format!("ses_{s}"))
                        .into_iter()
                        .flat_map(|x| x.messages.iter().flat_map(|m| &m.parts))
                        .flat_map(|r| {
                            let writes = &all[&(s, r.part.id[4..].parse::<usize>().unwrap_or(9))];
                            let cleanup = writes.last().is_some_and(|w| w.2);
                            let n = r.history.len();
                            r.history.iter().enumerate().filter_map(move |(i, o)| {
                                (!(skip_cleanup && cleanup && i + 1 == n)).then_some(o.seq)
                            })
                        })
                        .collect();
                    for &e in &events {
                        let after = |v: &[Seq]| v.iter().copied().filter(|&x| x > e).min();
                        assert_eq!(after(&kept), after(&full), "session {s}, event {e}");
                    }
                }
            }
        }
        // Writes were dropped: the runs above are not all kept by chance.
        assert!(
            writes_kept * 4 < writes_made * 3,
            "{writes_kept} of {writes_made}"
        );
    }

    #[test]
    fn messages_whose_id_hashes_collide_stay_apart() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let a = state.message_slot(si, "msg_a");
        // A collision: msg_b's hash names msg_a's slot.
        let b_key = state.id_hasher.hash_one("msg_b");
        state.message_index[si].insert(b_key, a);
        let b = state.message_slot(si, "msg_b");
        assert_ne!(a, b);
        assert_eq!(state.message_slot(si, "msg_b"), b);
        assert_eq!(state.message_slot(si, "msg_a"), a);
        let ids: Vec<&str> = (state.analysis.sessions[si].messages.iter())
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["msg_a", "msg_b"]);
    }

    #[test]
    fn a_new_message_gives_back_the_room_of_the_one_before() {
        let log = (0..3)
            .map(|n| {
                format!(
                    r#"{{"type":"step_start","timestamp":{n},"sessionID":"ses_1","part":{{"id":"prt_{n}","sessionID":"ses_1","messageID":"msg_{}","type":"step-start"}}}}"#,
                    n / 2
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let a = run(&log);
        let messages = &a.sessions[0].messages;
        assert_eq!(messages[0].parts.len(), 2);
        assert_eq!(messages[0].parts.capacity(), 2);
        assert_eq!(messages[1].parts.len(), 1);
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
            matches!(kinds[0], EventKind::ModelRequested { spec } if spec == "kilo/glm-5-free")
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

    #[test]
    fn only_banners_wrapped_as_errors_are_informational() {
        let obj = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert!(informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError",
            "message": "[verbose] Verbose mode enabled: HTTP requests are logged"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError",
            "message": "connect ECONNREFUSED 127.0.0.1:4096 (could not reach the server)"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "RuntimeError", "message": "started", "stack": "at x"
        }))));
        assert!(!informational(&obj(serde_json::json!({
            "type": "error", "errorType": "UnhandledRejection", "message": "started"
        }))));
    }
}
