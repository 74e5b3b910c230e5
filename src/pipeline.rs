//! The one-way pipeline, end to end: detect → ingest → replay → reconstruct → checks →
//! prepared output.
//!
//! [`diagnose_file`] streams: each unit (a log, a capture, one recorded exchange, one session of
//! a store) is checked and prepared for printing as soon as it is replayed, and handed over at
//! once, so nothing accumulates across units. Every file gets its own [`SourceMap`], so files can
//! be diagnosed on several threads.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use crate::checks;
use crate::checks::diagnostic::Finding;
use crate::config::FilePolicy;
use crate::core::Format;
use crate::error::RewindError;
use crate::ingest;
use crate::ingest::capture::{self, Envelope, Locator};
use crate::ingest::opencode_db::{Db, DbError, Schema, SessionRow};
use crate::ingest::recording::{self, Exchange};
use crate::ingest::stored::{Keep, StoredSession, load_db_session};
use crate::reconstruct::opencode::{self as rebuild, ProviderChoice};
use crate::reconstruct::{RecordedResponse, request};
use crate::replay;
use crate::replay::opencode::Render;
use crate::replay::stream::protocol::Protocol;
use crate::replay::stream::{Profile, StreamOptions};
use crate::report::human::Renderer;
use crate::report::{self, UnitOutput};
use crate::session::Analysis;
use crate::source::SourceMap;

/// How inputs are read, replayed and rebuilt.
#[derive(Clone, Debug)]
pub struct Options {
    /// Read every input as this kind instead of recognising it (`--input`).
    pub input: Option<Format>,
    /// Processor profiles for stream captures: the first is diagnosed; a second one is replayed
    /// alongside and what it did differently is reported.
    pub profiles: Vec<Profile>,
    /// Force the stream protocol instead of recognising it.
    pub protocol: Option<Protocol>,
    /// Only these sessions of a session store (all when empty).
    pub sessions: Vec<String>,
    /// The OpenCode version whose history reconstruction to follow (default: the store's).
    pub opencode_version: Option<String>,
    /// Which provider rules the rebuilt requests are checked against.
    pub provider: ProviderChoice,
    /// Forget what a large agent log's diagnosis no longer needs, from this many live parts (see
    /// [`replay::agent_log::replay_forgetting`]). `None` keeps the whole model, which the HTML
    /// report, `rewind sessions` and `rewind replay` read.
    pub forget_logs_from: Option<usize>,
    /// The process exits once this input is reported: [`diagnose_file`] leaves its model to the
    /// operating system instead of freeing it piece by piece (on a log of 100,000 records that
    /// is milliseconds of work nobody waits for). Pure data, so nothing is skipped but the
    /// freeing.
    pub exit_after: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            input: None,
            profiles: vec![Profile::OpencodeFixed, Profile::Opencode],
            protocol: None,
            sessions: Vec::new(),
            opencode_version: None,
            provider: ProviderChoice::default(),
            forget_logs_from: None,
            exit_after: false,
        }
    }
}

impl Options {
    /// How a store's sessions are rebuilt: the version given, else the newest version that
    /// created a session in the store, else what the migration journal says (the `migration`
    /// journal came with the core package, after the interrupted-result change).
    pub fn rebuild_options(
        &self,
        store_version: Option<&str>,
        schema: Option<&Schema>,
    ) -> rebuild::Options {
        rebuild::Options::for_store(
            self.opencode_version.as_deref().or(store_version),
            schema,
            self.provider,
        )
    }
}

/// Rebuilds a unit with its rows rendered.
type RenderFn<'a> = Box<dyn FnOnce(&mut SourceMap) -> Result<Analysis, RewindError> + 'a>;

/// One unit of diagnosis: one analysis per processor profile for stream captures (the first is
/// the one diagnosed), one analysis otherwise. Units of a database come unrendered (rendering
/// every row would cost more than the rest of the diagnosis); [`Unit::rendered`] renders one when
/// it is worth showing.
pub struct Unit<'a> {
    pub analyses: Vec<Analysis>,
    render: Option<RenderFn<'a>>,
}

impl<'a> Unit<'a> {
    pub fn ready(analysis: Analysis) -> Self {
        Self {
            analyses: vec![analysis],
            render: None,
        }
    }

    /// A stream's unit: one analysis per profile.
    pub fn profiles(analyses: Vec<Analysis>) -> Self {
        Self {
            analyses,
            render: None,
        }
    }

    /// The analysis that is diagnosed (the first profile's).
    pub fn primary(&self) -> Option<&Analysis> {
        self.analyses.first()
    }

    /// The primary analysis, with its rows rendered as virtual sources when it has rows.
    pub fn rendered(mut self, sources: &mut SourceMap) -> Result<Option<Analysis>, RewindError> {
        match self.render.take() {
            Some(f) => f(sources).map(Some),
            None => Ok((!self.analyses.is_empty()).then(|| self.analyses.swap_remove(0))),
        }
    }

    /// Whether [`Unit::rendered`] renders anything new.
    pub fn renders(&self) -> bool {
        self.render.is_some()
    }

    /// The primary analysis, rendered only when `render` is true.
    pub fn rendered_if(
        mut self,
        render: bool,
        sources: &mut SourceMap,
    ) -> Result<Option<Analysis>, RewindError> {
        if render {
            self.rendered(sources)
        } else {
            Ok((!self.analyses.is_empty()).then(|| self.analyses.swap_remove(0)))
        }
    }
}

/// Receives each unit. The sources a unit adds are forgotten once it has returned.
pub type UnitSink<'a> = dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError> + 'a;

/// Replays `path` into analysis units, calling `each` for every one.
pub fn analyze(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let format = match options.input {
        Some(f) => {
            if f != Format::OpencodeStorage && std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(ingest::DetectError::Directory {
                    path: path.to_path_buf(),
                }
                .into());
            }
            f
        }
        None => ingest::detect(path)?,
    };
    let ingest_err = |source| RewindError::Ingest {
        path: path.to_path_buf(),
        source,
    };
    let stream_options = |format: Format| {
        let mut o = StreamOptions::new(format, options.profiles.clone());
        o.protocol = options.protocol;
        o
    };
    match format {
        Format::AgentLog => {
            let file = sources.add_file(path);
            let mut analysis = match options.forget_logs_from {
                Some(from) => {
                    let open = || ingest::open(path).map_err(RewindError::from);
                    let rules = || -> Box<dyn replay::agent_log::Forgetting> {
                        Box::<checks::quiet::Quiet>::default()
                    };
                    replay::agent_log::replay_forgetting_again(open, file, from, rules, ingest_err)?
                        .0
                }
                None => replay::agent_log::replay(ingest::open(path)?, file).map_err(ingest_err)?,
            };
            let embedded = std::mem::take(&mut analysis.embedded_streams);
            each(sources, Unit::ready(analysis))?;
            for (n, body) in embedded.into_iter().enumerate() {
                let mut o = stream_options(format);
                o.session_id = format!("http-stream-{}", n + 1);
                o.hint = body.url.as_deref().and_then(protocol_of_url);
                let units = replay::stream::replay_text(
                    &body.text,
                    Envelope::Sse,
                    body.locator,
                    o,
                    body.cut,
                )
                .map_err(ingest_err)?;
                each(sources, Unit::profiles(units))?;
            }
            Ok(())
        }
        Format::Sse | Format::JsonLines => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let envelope = if format == Format::Sse {
                Envelope::Sse
            } else {
                Envelope::JsonLines
            };
            let units = replay::stream::replay_reader(
                reader,
                envelope,
                Locator::File(file),
                stream_options(format),
            )
            .map_err(ingest_err)?;
            each(sources, Unit::profiles(units))
        }
        Format::HttpRecording | Format::Har => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let mut failure: Option<RewindError> = None;
            let opts = stream_options(format);
            recording::read(reader, file, format, &mut |ex| {
                if failure.is_some() {
                    return Ok(());
                }
                let units = exchange_units(&ex, file, format, &opts)?;
                if let Err(e) = each(sources, Unit::profiles(units)) {
                    failure = Some(e);
                }
                Ok(())
            })
            .map_err(ingest_err)?;
            match failure {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
        Format::OpencodeDb => {
            let read = ingest::input::readable(path)?;
            let db = Db::open(&read).map_err(|source| db_error(path, source))?;
            analyze_db(path, &db, format, options, sources, each)
        }
        Format::OpencodeSqlDump => {
            let (db, cut) = load_sql_dump(path)?;
            analyze_db(path, &db, format, options, sources, each)?;
            match cut {
                // The statement the dump ends inside: reported after the sessions read before it.
                Some((offset, len)) => {
                    let file = sources.add_file(path);
                    let mut analysis = Analysis::new(file, format);
                    analysis.undecodable.push(crate::session::Undecodable {
                        span: crate::source::Span::new(file, offset, len),
                        reason: "the dump ends inside this statement: it was cut here".into(),
                        at: None,
                        truncated: true,
                    });
                    each(sources, Unit::ready(analysis))
                }
                None => Ok(()),
            }
        }
        Format::OpencodeExport => analyze_export(path, options, sources, each),
        Format::OpencodeStorage => analyze_storage(path, options, sources, each),
        Format::ClaudeTranscript | Format::CodexRollout => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let mut analysis = if format == Format::ClaudeTranscript {
                replay::claude_transcript::replay(reader, file)
            } else {
                replay::codex_rollout::replay(reader, file)
            }
            .map_err(ingest_err)?;
            if format == Format::ClaudeTranscript
                && let Some(facts) = analysis.transcript.as_deref_mut()
            {
                for meta in ingest::claude_transcript::subagent_metas(path) {
                    let id = sources.add_file(&meta.path);
                    let span = |(s, e): (usize, usize)| {
                        crate::source::Span::new(id, s as u64, e.saturating_sub(s) as u64)
                    };
                    facts.subagents.push(crate::session::Subagent {
                        agent_id: meta.agent_id,
                        tool_use_id: meta.tool_use_id.map(|(t, at)| (t, span(at))),
                        span: crate::source::Span::new(id, 0, 1),
                        transcript: meta.transcript,
                    });
                }
            }
            analysis
                .requests
                .extend(crate::reconstruct::transcript::next_request(&analysis));
            each(sources, Unit::ready(analysis))
        }
    }
}

/// The analysis units of one recorded exchange: its request (the model's input) and, when the
/// response is a stream, the stream replayed with each profile.
fn exchange_units(
    ex: &Exchange,
    file: crate::source::FileId,
    format: Format,
    options: &StreamOptions,
) -> Result<Vec<Analysis>, ingest::IngestError> {
    let n = ex.index + 1;
    let what = if format == Format::Har {
        "entry"
    } else {
        "interaction"
    };
    let session = format!("{what}-{n}");
    let response_text = ex.response_body.as_ref().map(|b| (b, b.decode(file)));
    let mut response = None;
    let mut stream_body = None;
    let mut undecodable = Vec::new();
    if let Some((body, decoded)) = response_text {
        match decoded {
            Err(reason) => undecodable.push(crate::session::Undecodable {
                span: body.span(file),
                reason: format!("the response body of {what} {n} cannot be read: {reason}"),
                at: None,
                truncated: false,
            }),
            Ok((text, locator)) => {
                let is_stream = ex
                    .content_type
                    .as_deref()
                    .is_some_and(|c| c.contains("event-stream") || c.contains("ndjson"))
                    || capture::sniff_envelope(&text).is_some();
                let status = ex.status.unwrap_or(200);
                if is_stream && status < 400 {
                    stream_body = Some((text, locator));
                } else {
                    response = Some(RecordedResponse {
                        status,
                        error: request::error_message(&text),
                        span: ex.status_span.or(Some(body.span(file))),
                    });
                }
            }
        }
    }
    if response.is_none()
        && let Some(status) = ex.status
    {
        response = Some(RecordedResponse {
            status,
            error: None,
            span: ex.status_span,
        });
    }
    let mut requests = Vec::new();
    if let Some(body) = &ex.request_body {
        match body.decode(file) {
            Ok((text, locator)) => {
                if let Some(mut req) = request::from_body(
                    &text,
                    &locator,
                    ex.url.as_deref(),
                    format!("the request of {what} {n}"),
                    response.clone(),
                ) {
                    req.session_id = Some(session.clone());
                    requests.push(req);
                }
            }
            Err(reason) => undecodable.push(crate::session::Undecodable {
                span: body.span(file),
                reason: format!("the request body of {what} {n} cannot be read: {reason}"),
                at: None,
                truncated: false,
            }),
        }
    }
    let mut units = match stream_body {
        Some((text, locator)) => {
            let mut o = options.clone();
            o.session_id = session;
            o.hint = ex.url.as_deref().and_then(protocol_of_url);
            let envelope = capture::sniff_envelope(&text).unwrap_or(Envelope::Sse);
            replay::stream::replay_text(&text, envelope, locator, o, None)?
        }
        None => vec![Analysis::new(file, format)],
    };
    for u in &mut units {
        u.format = format;
        u.requests = requests.clone();
        u.undecodable.extend(undecodable.iter().cloned());
    }
    Ok(units)
}

/// The stream protocol a request URL implies.
fn protocol_of_url(url: &str) -> Option<Protocol> {
    if url.contains("/chat/completions") {
        Some(Protocol::OpenAiChat)
    } else if url.contains("/responses") {
        Some(Protocol::OpenAiResponses)
    } else if url.trim_end_matches('/').ends_with("/messages") {
        Some(Protocol::Anthropic)
    } else {
        None
    }
}

/// The profile compared with `primary` by default: the classic processor for the fixed one and
/// the other way round; TanStack before and after #727.
pub fn counterpart(primary: Profile) -> Profile {
    match primary {
        Profile::OpencodeFixed => Profile::Opencode,
        Profile::Opencode | Profile::Agent08 => Profile::OpencodeFixed,
        Profile::Tanstack => Profile::TanstackPre727,
        Profile::TanstackPre727 => Profile::Tanstack,
    }
}

pub fn db_error(path: &Path, source: DbError) -> RewindError {
    RewindError::Db {
        path: path.to_path_buf(),
        source,
    }
}

/// Loads an SQL dump into an in-memory database (the dump is read whole: SQLite executes it).
/// Why an SQL dump does not load, quoting at most a few hundred bytes of it around the error.
fn sql_dump_error(dump: &str, e: &rusqlite::Error) -> String {
    let rusqlite::Error::SqlInputError {
        msg, sql, offset, ..
    } = e
    else {
        return format!(
            "the SQL dump does not load: {}",
            crate::text::clip(&e.to_string())
        );
    };
    // `execute_batch` hands SQLite the rest of the dump: find where it starts.
    let base = dump.len().saturating_sub(sql.len());
    let base = if dump.get(base..) == Some(sql.as_str()) {
        base
    } else {
        0
    };
    let at = usize::try_from(*offset).unwrap_or(0).min(sql.len());
    let statement_end = sql[at..].find(";\n").map_or(sql.len(), |k| at + k + 1);
    let statement_start = sql[..at].rfind(";\n").map_or(0, |k| k + 2);
    let statement = &sql[statement_start..statement_end];
    let byte = base + at;
    let line = dump[..crate::text::floor_boundary(dump, byte)]
        .matches('\n')
        .count()
        + 1;
    format!(
        "the SQL dump does not load: {msg} at byte {byte} (line {line}), in: {}",
        crate::text::excerpt(statement, at - statement_start)
    )
}

/// The text of a whole-file input (an SQL dump, an export), as far as it is UTF-8. A file cut
/// inside a multi-byte character (`head -c N`) is read up to the cut: the text before it comes
/// back with `true`; invalid bytes anywhere else are an error.
fn read_text_up_to_cut(path: &Path) -> Result<(String, bool), RewindError> {
    let ingest_err = |source| RewindError::Ingest {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(ingest::input::readable(path)?)
        .map_err(|e| ingest_err(ingest::IngestError::Io(e)))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, false)),
        Err(e) => {
            let error = e.utf8_error();
            let valid = error.valid_up_to();
            let mut bytes = e.into_bytes();
            if error.error_len().is_some() {
                let line = memchr::memchr_iter(b'\n', &bytes[..valid]).count() as u64 + 1;
                return Err(ingest_err(ingest::IngestError::InvalidUtf8 {
                    offset: valid as u64,
                    line,
                }));
            }
            bytes.truncate(valid);
            let text = String::from_utf8(bytes).unwrap_or_default();
            Ok((text, true))
        }
    }
}

/// Whether a text that does not load looks cut short: cut inside a character, or ending without
/// the character that closes it (`;` for a dump, `}` for an export).
fn looks_cut(text: &str, cut_in_char: bool, closer: char) -> bool {
    cut_in_char || !text.trim_end().ends_with(closer)
}

/// Loads an SQL dump into an in-memory database. A dump cut short (`head -c N`) is loaded up to
/// its last complete statement; the file range of the unfinished one is returned with it.
fn load_sql_dump(path: &Path) -> Result<(Db, Option<(u64, u64)>), RewindError> {
    let (text, cut_in_char) = read_text_up_to_cut(path)?;
    let file_len =
        std::fs::metadata(ingest::input::readable(path)?).map_or(text.len() as u64, |m| m.len());
    let conn =
        rusqlite::Connection::open_in_memory().map_err(|e| db_error(path, DbError::from(e)))?;
    let mut cut = None;
    if let Err(e) = conn.execute_batch(&text) {
        // The statements before the one that failed are loaded: when that one runs to the end
        // of a dump that looks cut, it is the cut, and the rest is read.
        let start = match &e {
            rusqlite::Error::SqlInputError { sql, offset, .. }
                if looks_cut(&text, cut_in_char, ';') =>
            {
                let at = usize::try_from(*offset).unwrap_or(0).min(sql.len());
                let start = text.len().saturating_sub(sql.len());
                let in_last = !sql.get(at..).unwrap_or_default().contains(";\n");
                (text.get(start..) == Some(sql.as_str()) && in_last)
                    .then(|| start + (sql.len() - sql.trim_start().len()))
            }
            _ => None,
        };
        let Some(start) = start else {
            return Err(db_error(path, DbError::Other(sql_dump_error(&text, &e))));
        };
        // A dump wraps its statements in a transaction it never got to commit.
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("COMMIT");
        }
        cut = Some((start as u64, file_len.saturating_sub(start as u64)));
    } else if cut_in_char {
        // Every statement loaded: the cut fell after the last one.
        let start = text.len() as u64;
        cut = Some((start, file_len.saturating_sub(start)));
    }
    let db = Db::from_connection(conn).map_err(|e| db_error(path, e))?;
    Ok((db, cut))
}

fn analyze_db(
    path: &Path,
    db: &Db,
    format: Format,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let file = sources.add_file(path);
    let placeholder = sources.add_virtual(path, "(rows not rendered)".into(), String::new());
    let ropts = options.rebuild_options(
        db.schema.newest_session_version.as_deref(),
        Some(&db.schema),
    );
    let ropts = &ropts;
    // The project rows tell where OpenCode lists each session (`session-hidden`).
    let projects: Option<std::sync::Arc<[crate::session::Project]>> =
        db.projects().map_err(|e| db_error(path, e))?.map(|rows| {
            rows.into_iter()
                .map(crate::session::Project::from)
                .collect()
        });
    let projects = &projects;
    // This thread streams the session list and hands each replayed session, in order, to `each`
    // (checks, printing). The rayon pool loads, replays and rebuilds the sessions meanwhile, each
    // worker over a read-only connection of its own; where the database cannot be reopened (an
    // in-memory SQL dump) this thread loads the rows and the pool only replays. At most a few
    // sessions are in flight, so memory stays flat whatever the size of the database.
    let threads = rayon::current_num_threads();
    // One connection per worker: a session being loaded borrows one and gives it back.
    let readers: Option<Vec<_>> = (0..threads).map(|_| db.reader()).collect();
    let parallel_reads = readers.is_some();
    let readers = std::sync::Mutex::new(readers.unwrap_or_default());
    let work = |job: Job| -> Result<Replayed, DbError> {
        let (stored, orphans, row) = match job {
            Job::Replay(stored, orphans, row) => (*stored, orphans, row),
            Job::Load(row) => {
                // No more sessions load at once than the pool has workers.
                let reader = readers
                    .lock()
                    .ok()
                    .and_then(|mut r| r.pop())
                    .ok_or_else(|| {
                        DbError::Other("internal error: no free connection to read with".into())
                    })?;
                let loaded = load_db_session(&reader, row.clone(), Keep::Model);
                if let Ok(mut free) = readers.lock() {
                    free.push(reader);
                }
                let (stored, orphans) = loaded?;
                (stored, orphans, row)
            }
        };
        // The placeholder pass touches no source: a private map will do.
        let mut unused = SourceMap::new();
        let mut analysis = replay::opencode::replay(
            stored,
            format,
            file,
            &Render::Placeholder(placeholder),
            &mut unused,
        );
        if orphans > 0 {
            analysis.counts.insert("orphan parts", orphans);
        }
        analysis.projects.clone_from(projects);
        rebuild::rebuild(&mut analysis, ropts);
        Ok((row, analysis))
    };
    let hand_over = |replayed: Result<Replayed, DbError>| {
        let (row, analysis) = replayed.map_err(|e| db_error(path, e))?;
        let mark = sources.len();
        // The first pass kept no row text: a session is read again, text and all, to be shown.
        let render = move |sources: &mut SourceMap| {
            let (stored, orphans) =
                load_db_session(db, row, Keep::Text).map_err(|e| db_error(path, e))?;
            let mut a = replay::opencode::replay(
                stored,
                format,
                file,
                &Render::Virtual {
                    origin: path.to_path_buf(),
                },
                sources,
            );
            if orphans > 0 {
                a.counts.insert("orphan parts", orphans);
            }
            a.projects.clone_from(projects);
            rebuild::rebuild(&mut a, ropts);
            Ok(a)
        };
        let result = each(
            sources,
            Unit {
                analyses: vec![analysis],
                render: Some(Box::new(render)),
            },
        );
        sources.truncate(mark);
        result
    };
    let mut found = 0;
    let feed = |push: &mut dyn FnMut(Job) -> Result<(), RewindError>| {
        let err = |e| db_error(path, e);
        db.for_each_session(&options.sessions, err, |row| {
            found += 1;
            if parallel_reads {
                push(Job::Load(row))
            } else {
                let (stored, orphans) =
                    load_db_session(db, row.clone(), Keep::Model).map_err(err)?;
                push(Job::Replay(Box::new(stored), orphans, row))
            }
        })
    };
    rayon::in_place_scope(|scope| in_order(scope, 4 * threads, &work, feed, hand_over))?;
    missing_sessions(path, options, found)
}

/// Runs `work` on the rayon pool of `scope` for every item `feed` pushes, and hands the results
/// to `sink` on this thread, in the order of the items, each as soon as it and every item before
/// it are done. At most `window` items are between pushed and handed over: pushing waits for
/// room, so memory stays bounded whatever the number of items.
///
/// When `sink` fails, nothing more is pushed (`feed` gets the error back) and its error is
/// returned; when `feed` fails, what it pushed before is still handed over.
pub fn in_order<'s, T, R, E>(
    scope: &rayon::Scope<'s>,
    window: usize,
    work: &'s (dyn Fn(T) -> R + Sync),
    feed: impl FnOnce(&mut dyn FnMut(T) -> Result<(), E>) -> Result<(), E>,
    mut sink: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send + 's,
    R: Send + 's,
{
    let window = window.max(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut done = Reorder {
        rx,
        pending: BTreeMap::new(),
        next: 0,
    };
    let mut pushed: usize = 0;
    let mut stopped = false;
    let fed = feed(&mut |item| {
        if let Err(e) = done.hand_over((pushed + 1).saturating_sub(window), &mut sink) {
            stopped = true;
            return Err(e);
        }
        let tx = tx.clone();
        let i = pushed;
        scope.spawn(move |_| {
            // A panic is carried over to this thread rather than leave it waiting.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)));
            // Only fails once this thread has stopped listening.
            let _ = tx.send((i, result));
        });
        pushed += 1;
        Ok(())
    });
    if stopped {
        return fed;
    }
    done.hand_over(pushed, &mut sink)?;
    fed
}

/// Results that arrived out of order, waiting for their turn.
struct Reorder<R> {
    rx: std::sync::mpsc::Receiver<(usize, std::thread::Result<R>)>,
    pending: BTreeMap<usize, R>,
    /// The next item to hand over.
    next: usize,
}

impl<R> Reorder<R> {
    /// Hands every result that is ready in turn to `sink`, waiting until the first `until` items
    /// have been handed over.
    fn hand_over<E>(
        &mut self,
        until: usize,
        sink: &mut impl FnMut(R) -> Result<(), E>,
    ) -> Result<(), E> {
        loop {
            while let Ok(got) = self.rx.try_recv() {
                self.arrived(got);
            }
            while let Some(ready) = self.pending.remove(&self.next) {
                self.next += 1;
                sink(ready)?;
            }
            if self.next >= until {
                return Ok(());
            }
            let got = match rayon::yield_local() {
                // A pool thread must not block while work it queued waits in its own queue: it
                // does that work itself.
                Some(rayon::Yield::Executed) => continue,
                // Not a pool thread, or one with an empty queue: every item still out is being
                // worked on elsewhere, so waiting for it is safe.
                None | Some(rayon::Yield::Idle) => self.rx.recv().ok(),
            };
            match got {
                Some(got) => self.arrived(got),
                // Every sender is gone (cannot happen while `in_order` holds one).
                None => return Ok(()),
            }
        }
    }

    fn arrived(&mut self, (i, result): (usize, std::thread::Result<R>)) {
        match result {
            Ok(r) => {
                self.pending.insert(i, r);
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// A session the pool replays: this thread either loaded it or leaves the loading to the pool.
enum Job {
    Load(SessionRow),
    Replay(Box<StoredSession>, u64, SessionRow),
}

/// A replayed session: its row (to load it again for rendering) and its placeholder analysis.
type Replayed = (SessionRow, Analysis);

/// Fails when `--session` named sessions that were not found.
fn missing_sessions(path: &Path, options: &Options, found: usize) -> Result<(), RewindError> {
    if options.sessions.is_empty() || found >= options.sessions.len() {
        return Ok(());
    }
    Err(RewindError::NoSuchSession {
        path: path.to_path_buf(),
        id: options.sessions.join(", "),
    })
}

fn analyze_export(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let (text, cut_in_char) = read_text_up_to_cut(path)?;
    let file_len =
        std::fs::metadata(ingest::input::readable(path)?).map_or(text.len() as u64, |m| m.len());
    let file = sources.add_file(path);
    let mut cut = None;
    let stored = match ingest::opencode_export::load(&text, file) {
        Ok(stored) => stored,
        // An export cut short is read up to its last complete message or part.
        Err(e) => match ingest::opencode_export::close_cut(&text)
            .filter(|_| looks_cut(&text, cut_in_char, '}'))
            .and_then(|(closed, rest)| {
                let stored = ingest::opencode_export::load(&closed, file).ok()?;
                Some((stored, rest))
            }) {
            Some((stored, rest)) => {
                cut = Some((rest as u64, file_len.saturating_sub(rest as u64)));
                stored
            }
            None => return Err(RewindError::Usage(format!("`{}`: {e}", path.display()))),
        },
    };
    if cut.is_none() && cut_in_char {
        cut = Some((
            text.len() as u64,
            file_len.saturating_sub(text.len() as u64),
        ));
    }
    drop(text);
    if !options.sessions.is_empty() && !options.sessions.contains(&stored.id) {
        return missing_sessions(path, options, 0);
    }
    let ropts = options.rebuild_options(stored.version.as_deref(), None);
    let mut analysis = replay::opencode::replay(
        stored,
        Format::OpencodeExport,
        file,
        &Render::Placeholder(file),
        sources,
    );
    if let Some((offset, len)) = cut {
        analysis.undecodable.push(crate::session::Undecodable {
            span: crate::source::Span::new(file, offset, len),
            reason: "the export ends inside this record: it was cut here".into(),
            at: None,
            truncated: true,
        });
    }
    rebuild::rebuild(&mut analysis, &ropts);
    each(sources, Unit::ready(analysis))
}

/// An I/O error reading `path`.
fn io_error(path: &Path, e: std::io::Error) -> RewindError {
    RewindError::Ingest {
        path: path.to_path_buf(),
        source: ingest::IngestError::Io(e),
    }
}

fn analyze_storage(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let io = |e| io_error(path, e);
    let Some(root) = ingest::opencode_storage::root(path) else {
        return Err(ingest::DetectError::Directory {
            path: path.to_path_buf(),
        }
        .into());
    };
    let file = sources.add_file(path);
    storage_damage(path, &root, options, sources, each)?;
    let mut found = 0;
    for session in ingest::opencode_storage::sessions(&root).map_err(io)? {
        if !options.sessions.is_empty() && !options.sessions.contains(&session.id) {
            continue;
        }
        found += 1;
        let mark = sources.len();
        let stored = ingest::opencode_storage::load(&root, &session, sources).map_err(io)?;
        let ropts = options.rebuild_options(stored.version.as_deref(), None);
        let mut analysis = replay::opencode::replay(
            stored,
            Format::OpencodeStorage,
            file,
            &Render::Placeholder(file),
            sources,
        );
        rebuild::rebuild(&mut analysis, &ropts);
        let result = each(sources, Unit::ready(analysis));
        sources.truncate(mark);
        result?;
    }
    missing_sessions(path, options, found)
}

/// The files of a storage folder OpenCode cannot parse, as a unit of their own (before the
/// sessions, which are read without them); with `--session`, only those of these sessions.
fn storage_damage(
    path: &Path,
    root: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    use ingest::opencode_storage::{self as storage, FileKind};
    let io = |e| io_error(path, e);
    let mut damaged = storage::damaged(root).map_err(io)?;
    if !options.sessions.is_empty() {
        let messages: HashSet<String> = options
            .sessions
            .iter()
            .flat_map(|s| storage::message_ids(root, s))
            .collect();
        let selected = |id: &str| options.sessions.iter().any(|s| s == id);
        damaged.retain(|d| {
            let owner = d.owner().unwrap_or_default();
            match d.kind {
                FileKind::Session | FileKind::Other => selected(&d.id()),
                FileKind::Message => selected(&owner) || messages.contains(&d.id()),
                FileKind::Part => messages.contains(&owner),
                FileKind::Project => false,
            }
        });
    }
    if damaged.is_empty() {
        return Ok(());
    }
    let mark = sources.len();
    let folder = sources.add_file(path);
    let mut analysis = Analysis::new(folder, Format::OpencodeStorage);
    for d in damaged {
        let file = sources.add_file(&d.path);
        let (at, len) = d.damage.span(d.len);
        analysis
            .damaged_files
            .push(crate::session::DamagedStoreFile {
                span: crate::source::Span::new(file, at, len),
                file: d,
            });
    }
    let result = each(sources, Unit::ready(analysis));
    sources.truncate(mark);
    result
}

/// From how many live parts a diagnosis printed as `format` forgets what it no longer needs of
/// an agent log (`given`, else [`replay::agent_log::FORGET_FROM_PARTS`]): never for HTML, whose
/// report shows each session's timeline.
pub fn forget_logs_from(
    format: crate::report::OutputFormat,
    given: Option<usize>,
) -> Option<usize> {
    (format != crate::report::OutputFormat::Html)
        .then(|| given.unwrap_or(replay::agent_log::FORGET_FROM_PARTS))
}

/// Runs the checks `policy` enables on one unit, with its severity overrides applied.
pub fn check(analysis: &Analysis, policy: &FilePolicy) -> Vec<Finding> {
    let mut findings = checks::run(analysis, &|m| policy.selection.enabled(m));
    policy.apply(&mut findings);
    findings
}

/// Diagnoses one file (with the first processor profile for streams) and hands each prepared
/// unit to `each`. Rows of a store are rendered only for units with findings.
pub fn diagnose_file(
    path: &Path,
    options: &Options,
    policy: &FilePolicy,
    baseline: Option<&HashSet<String>>,
    renderer: Option<&Renderer>,
    each: &mut dyn FnMut(UnitOutput) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let mut sources = SourceMap::new();
    analyze(path, options, &mut sources, &mut |sources, unit| {
        let Some(primary) = unit.primary() else {
            return Ok(());
        };
        let mut findings = check(primary, policy);
        let must_render = !findings.is_empty() && unit.renders();
        let Some(analysis) = unit.rendered_if(must_render, sources)? else {
            return Ok(());
        };
        if must_render {
            findings = check(&analysis, policy);
        }
        let reported = each(report::prepare(
            sources, &analysis, &findings, baseline, renderer,
        ));
        if options.exit_after {
            std::mem::forget(analysis);
        }
        reported
    })
}

#[cfg(test)]
mod forgetting_tests;

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Later items of each group of 8 finish first, so results arrive out of order.
    fn slow_first(i: usize) -> usize {
        std::thread::sleep(Duration::from_micros(((8 - i % 8) * 200) as u64));
        i * 2
    }

    #[test]
    fn checks_side_by_side_find_what_they_find_one_after_the_other() {
        // Every input of the project and the corpus: the same findings, in the same order.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let corpus = std::env::var_os("REWIND_CORPUS")
            .map_or_else(|| root.join("../shared/corpus"), std::path::PathBuf::from);
        let mut dirs = vec![root.join("tests/fixtures"), root.join("samples"), corpus];
        let (mut files, mut found) = (0, 0);
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let mut sources = SourceMap::new();
                let _ = analyze(&path, &Options::default(), &mut sources, &mut |_, unit| {
                    for analysis in &unit.analyses {
                        let serial = checks::run_in(analysis, &|_| true, false);
                        let parallel = checks::run_in(analysis, &|_| true, true);
                        assert_eq!(
                            format!("{serial:?}"),
                            format!("{parallel:?}"),
                            "{}",
                            path.display()
                        );
                        files += 1;
                        found += serial.len();
                    }
                    Ok(())
                });
            }
        }
        // The project's fixtures and samples alone give over 200 of each; the corpus adds more.
        assert!(
            files >= 200 && found >= 200,
            "{files} analyses, {found} findings"
        );
    }

    #[test]
    fn hands_results_over_in_order_and_within_the_window() {
        for threads in [1, 2, 4] {
            let pushed = Cell::new(0);
            let handed = Cell::new(0);
            let mut got = Vec::new();
            let result: Result<(), ()> = pool(threads).in_place_scope(|scope| {
                in_order(
                    scope,
                    3,
                    &slow_first,
                    |push| {
                        (0..50).try_for_each(|i| {
                            assert!(pushed.get() - handed.get() <= 3);
                            push(i)?;
                            pushed.set(pushed.get() + 1);
                            Ok(())
                        })
                    },
                    |r| {
                        got.push(r);
                        handed.set(handed.get() + 1);
                        Ok(())
                    },
                )
            });
            assert_eq!(result, Ok(()));
            assert_eq!(got, (0..50).map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn waits_without_blocking_its_own_pool() {
        // The waiting thread is the pool's only worker: it must run the queued items itself.
        let mut got = Vec::new();
        let result: Result<(), ()> = pool(1).install(|| {
            rayon::in_place_scope(|scope| {
                in_order(
                    scope,
                    4,
                    &slow_first,
                    |push| (0..20).try_for_each(push),
                    |r| {
                        got.push(r);
                        Ok(())
                    },
                )
            })
        });
        assert_eq!(result, Ok(()));
        assert_eq!(got.len(), 20);
    }

    #[test]
    fn a_failing_sink_stops_the_feed() {
        let pushed = Cell::new(0);
        let result = pool(2).in_place_scope(|scope| {
            in_order(
                scope,
                4,
                &slow_first,
                |push| {
                    (0..100).try_for_each(|i| {
                        pushed.set(pushed.get() + 1);
                        push(i)
                    })
                },
                |r| if r == 10 { Err(r) } else { Ok(()) },
            )
        });
        assert_eq!(result, Err(10));
        assert!(pushed.get() < 100);
    }

    #[test]
    fn a_failing_feed_still_hands_over_what_it_pushed() {
        let mut got = Vec::new();
        let result = pool(2).in_place_scope(|scope| {
            in_order(
                scope,
                4,
                &slow_first,
                |push| {
                    (0..10).try_for_each(&mut *push)?;
                    Err("listing failed")
                },
                |r| {
                    got.push(r);
                    Ok(())
                },
            )
        });
        assert_eq!(result, Err("listing failed"));
        assert_eq!(got, (0..10).map(|i| i * 2).collect::<Vec<_>>());
    }
}
