//! OpenCode's stores read into units of diagnosis: a database (or its SQL dump) session by
//! session on a pool of readers, an export, a legacy storage folder.

use std::collections::HashSet;
use std::path::Path;

use crate::core::{Format, RewindError, in_order};
use crate::formats::opencode::db::{Db, DbError, SessionRow};
use crate::formats::opencode::replay::Render;
use crate::formats::opencode::request as rebuild;
use crate::formats::opencode::stored::{Keep, StoredSession, load_db_session};
use crate::formats::unit::{Input, Options, Unit, UnitSink};
use crate::ingest;
use crate::session::Analysis;
use crate::source::SourceMap;

/// Reads one of OpenCode's stores.
pub fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let (path, format, options) = (input.path, input.format, input.options);
    match format {
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
        _ => {
            let read = ingest::input::readable(path)?;
            let db = Db::open(&read).map_err(|source| db_error(path, source))?;
            analyze_db(path, &db, format, options, sources, each)
        }
    }
}

pub fn db_error(path: &Path, source: DbError) -> RewindError {
    RewindError::Db {
        path: path.to_path_buf(),
        source: Box::new(source),
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
        "the SQL dump does not load: {} at byte {byte} (line {line}), in: {}",
        // SQLite's words quote the token it stopped at, which may be a long literal.
        crate::text::clip(msg),
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
        let mut analysis = crate::formats::opencode::replay::replay(
            stored,
            format,
            file,
            &Render::Placeholder(placeholder),
            &mut unused,
        );
        if orphans > 0 {
            analysis.counts.insert("orphan parts", orphans);
        }
        crate::formats::opencode::git_project::attach(&mut analysis, projects);
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
            let mut a = crate::formats::opencode::replay::replay(
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
            crate::formats::opencode::git_project::attach(&mut a, projects);
            rebuild::rebuild(&mut a, ropts);
            Ok(a)
        };
        let result = each(sources, Unit::with_render(analysis, Box::new(render)));
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
    let stored = match crate::formats::opencode::export::load(&text, file) {
        Ok(stored) => stored,
        // An export cut short is read up to its last complete message or part.
        Err(e) => match crate::formats::opencode::export::close_cut(&text)
            .filter(|_| looks_cut(&text, cut_in_char, '}'))
            .and_then(|(closed, rest)| {
                let stored = crate::formats::opencode::export::load(&closed, file).ok()?;
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
    let mut analysis = crate::formats::opencode::replay::replay(
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
    let Some(root) = crate::formats::opencode::storage::root(path) else {
        return Err(ingest::DetectError::Directory {
            path: path.to_path_buf(),
        }
        .into());
    };
    let file = sources.add_file(path);
    storage_damage(path, &root, options, sources, each)?;
    let mut found = 0;
    for session in crate::formats::opencode::storage::sessions(&root).map_err(io)? {
        if !options.sessions.is_empty() && !options.sessions.contains(&session.id) {
            continue;
        }
        found += 1;
        let mark = sources.len();
        let stored =
            crate::formats::opencode::storage::load(&root, &session, sources).map_err(io)?;
        let ropts = options.rebuild_options(stored.version.as_deref(), None);
        let mut analysis = crate::formats::opencode::replay::replay(
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
    use crate::formats::opencode::storage::{self as storage, FileKind};
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
