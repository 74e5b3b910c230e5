//! The one-way pipeline, end to end: detect → ingest → replay → checks → printer.
//!
//! [`diagnose`] streams: each unit (a log, a capture, one session of a database) is checked and
//! handed to the printer as soon as it is replayed, so nothing accumulates across units.

use std::collections::HashMap;
use std::path::Path;

use crate::checks::{self, CheckMeta};
use crate::diagnostic::{Finding, Severity};
use crate::error::RewindError;
use crate::ingest::opencode_db::{Db, DbError, Schema};
use crate::ingest::{self, Format};
use crate::model::version;
use crate::reconstruct::opencode::{self as rebuild, ProviderChoice};
use crate::replay;
use crate::replay::opencode::{Place, Render, StoredMessage, StoredRecord, StoredSession};
use crate::report::Printer;
use crate::session::Analysis;
use crate::source::SourceMap;

/// Which rules run.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only these rules (all when empty).
    pub select: Vec<String>,
    /// Never these rules.
    pub ignore: Vec<String>,
}

impl Selection {
    /// Fails on a rule name that does not exist.
    pub fn validate(&self) -> Result<(), RewindError> {
        for name in self.select.iter().chain(&self.ignore) {
            if checks::find(name).is_none() {
                return Err(RewindError::UnknownRule(name.clone()));
            }
        }
        Ok(())
    }

    pub fn enabled(&self, meta: &CheckMeta) -> bool {
        (self.select.is_empty() || self.select.iter().any(|s| s == meta.name))
            && !self.ignore.iter().any(|s| s == meta.name)
    }
}

/// Options shared by the commands that diagnose.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub selection: Selection,
    /// Only these sessions of a session store (all when empty).
    pub sessions: Vec<String>,
    /// The OpenCode version whose history reconstruction to follow (default: the store's).
    pub opencode_version: Option<String>,
    /// Which provider rules the rebuilt requests are checked against.
    pub provider: ProviderChoice,
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
        let given = self.opencode_version.as_deref().or(store_version);
        let interrupted_results = match given.and_then(version::parse) {
            Some(v) => v >= version::INTERRUPTED_RESULT_SINCE,
            None => schema.is_none_or(|s| s.journal.table != Some("__drizzle_migrations")),
        };
        rebuild::Options {
            interrupted_results,
            provider: self.provider,
        }
    }
}

/// Rebuilds a unit with its rows rendered.
type Renderer<'a> = Box<dyn FnOnce(&mut SourceMap) -> Analysis + 'a>;

/// One unit of diagnosis. Units of a database come unrendered (rendering every row would cost
/// more than the rest of the diagnosis); [`Unit::rendered`] renders one when it is worth showing.
pub struct Unit<'a> {
    pub analysis: Analysis,
    render: Option<Renderer<'a>>,
}

impl<'a> Unit<'a> {
    pub fn ready(analysis: Analysis) -> Self {
        Self {
            analysis,
            render: None,
        }
    }

    /// The same unit with its rows rendered as virtual sources (unchanged for other inputs).
    pub fn rendered(self, sources: &mut SourceMap) -> Analysis {
        match self.render {
            Some(f) => f(sources),
            None => self.analysis,
        }
    }
}

/// What a run found, for the exit status.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    pub worst: Option<Severity>,
    pub findings: usize,
}

impl Outcome {
    fn add(&mut self, findings: &[Finding]) {
        self.findings += findings.len();
        for f in findings {
            self.worst = self.worst.max(Some(f.severity));
        }
    }
}

/// Replays `path` into analysis units, calling `each` for every one. The sources a unit adds
/// are forgotten once `each` has returned (it has printed them).
pub fn analyze(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let format = ingest::detect(path)?;
    let ingest_err = |source| RewindError::Ingest {
        path: path.to_path_buf(),
        source,
    };
    match format {
        Format::AgentLog => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let analysis = replay::agent_log::replay(reader, file).map_err(ingest_err)?;
            each(sources, Unit::ready(analysis))
        }
        Format::OpencodeDb => {
            let db = Db::open(path).map_err(|source| db_error(path, source))?;
            analyze_db(path, &db, options, sources, each)
        }
        Format::OpencodeExport => analyze_export(path, options, sources, each),
        Format::OpencodeStorage => analyze_storage(path, options, sources, each),
        other => Err(RewindError::Unsupported {
            path: path.to_path_buf(),
            format: other,
            hint: String::new(),
        }),
    }
}

pub fn db_error(path: &Path, source: DbError) -> RewindError {
    RewindError::Db {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads one session's rows: its messages, and its parts attached to them (parts whose message
/// is not in the session are counted, not kept).
pub fn load_db_session(
    db: &Db,
    row: crate::ingest::opencode_db::SessionRow,
) -> Result<(StoredSession, u64), DbError> {
    let rows = db.messages(&row.id)?;
    let mut index: HashMap<String, usize> = HashMap::with_capacity(rows.len());
    let mut messages: Vec<StoredMessage> = Vec::with_capacity(rows.len());
    for r in rows {
        index.insert(r.id.clone(), messages.len());
        messages.push(StoredMessage {
            id: r.id.clone(),
            info: Some(StoredRecord {
                id: r.id,
                text: r.data,
                place: Place::Row,
            }),
            parts: Vec::new(),
        });
    }
    let mut orphans = 0;
    db.for_each_part(&row.id, |p| match index.get(&p.message_id) {
        Some(&i) => messages[i].parts.push(StoredRecord {
            id: p.id,
            text: p.data,
            place: Place::Row,
        }),
        None => orphans += 1,
    })?;
    Ok((
        StoredSession {
            id: row.id,
            title: row.title,
            parent_id: row.parent_id,
            version: row.version,
            time_created: row.time_created,
            time_updated: row.time_updated,
            messages,
        },
        orphans,
    ))
}

fn analyze_db(
    path: &Path,
    db: &Db,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let v2 = db.v2_rows();
    if v2 > 0 {
        eprintln!(
            "note: `{}` also has {v2} rows in the v2 `session_message` store, which rewind does not support yet; only the v1 `message`/`part` tables are diagnosed",
            path.display()
        );
    }
    let file = sources.add_file(path);
    let placeholder = sources.add_virtual(path, "(rows not rendered)".into(), String::new());
    let ropts = options.rebuild_options(
        db.schema.newest_session_version.as_deref(),
        Some(&db.schema),
    );
    let mut found = 0;
    let err = |e| db_error(path, e);
    db.for_each_session(&options.sessions, err, |row| -> Result<(), RewindError> {
        found += 1;
        let (stored, orphans) = load_db_session(db, row).map_err(|e| db_error(path, e))?;
        let mark = sources.len();
        let mut analysis = replay::opencode::replay(
            &stored,
            Format::OpencodeDb,
            file,
            &Render::Placeholder(placeholder),
            sources,
        );
        if orphans > 0 {
            analysis.counts.insert("orphan parts", orphans);
        }
        rebuild::rebuild(&mut analysis, &ropts);
        let stored = &stored;
        let render = move |sources: &mut SourceMap| {
            let mut a = replay::opencode::replay(
                stored,
                Format::OpencodeDb,
                file,
                &Render::Virtual {
                    origin: path.to_path_buf(),
                },
                sources,
            );
            if orphans > 0 {
                a.counts.insert("orphan parts", orphans);
            }
            rebuild::rebuild(&mut a, &ropts);
            a
        };
        let result = each(
            sources,
            Unit {
                analysis,
                render: Some(Box::new(render)),
            },
        );
        sources.truncate(mark);
        result
    })?;
    missing_sessions(path, options, found)
}

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
    each: &mut dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let text = std::fs::read_to_string(path).map_err(|e| RewindError::Ingest {
        path: path.to_path_buf(),
        source: ingest::IngestError::Io(e),
    })?;
    let file = sources.add_file(path);
    let stored = ingest::opencode_export::load(&text, file)
        .map_err(|e| RewindError::Usage(format!("`{}`: {e}", path.display())))?;
    drop(text);
    if !options.sessions.is_empty() && !options.sessions.contains(&stored.id) {
        return missing_sessions(path, options, 0);
    }
    let ropts = options.rebuild_options(stored.version.as_deref(), None);
    let mut analysis = replay::opencode::replay(
        &stored,
        Format::OpencodeExport,
        file,
        &Render::Placeholder(file),
        sources,
    );
    rebuild::rebuild(&mut analysis, &ropts);
    each(sources, Unit::ready(analysis))
}

fn analyze_storage(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&mut SourceMap, Unit<'_>) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let io = |e| RewindError::Ingest {
        path: path.to_path_buf(),
        source: ingest::IngestError::Io(e),
    };
    let Some(root) = ingest::opencode_storage::root(path) else {
        return Err(ingest::DetectError::Directory {
            path: path.to_path_buf(),
        }
        .into());
    };
    let file = sources.add_file(path);
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
            &stored,
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

/// Diagnoses `path` and prints each unit with `printer`.
pub fn diagnose(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    printer: &mut dyn Printer,
) -> Result<Outcome, RewindError> {
    let mut outcome = Outcome::default();
    let enabled = |m: &CheckMeta| options.selection.enabled(m);
    analyze(path, options, sources, &mut |sources, unit| {
        let mut findings = checks::run(&unit.analysis, &enabled);
        let analysis = if findings.is_empty() {
            unit.analysis
        } else {
            let a = unit.rendered(sources);
            findings = checks::run(&a, &enabled);
            a
        };
        outcome.add(&findings);
        printer.unit(sources, &analysis, &findings)?;
        Ok(())
    })?;
    Ok(outcome)
}
