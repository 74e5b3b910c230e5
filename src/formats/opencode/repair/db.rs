//! Applying a repair to an OpenCode database, safely:
//!
//! 1. open the database read-write and plan every session in one read transaction (a snapshot;
//!    OpenCode's writes are not blocked meanwhile), fingerprinting what the plan read (`PRAGMA
//!    data_version` and each planned session's newest `time_updated` and row counts, see
//!    [`live::Fingerprint`]);
//! 2. take the write lock (`BEGIN IMMEDIATE`, 1 s timeout): another writer makes rewind refuse,
//!    and nothing else can write until rewind is done. If a planned session changed since the
//!    plan, another process is writing it: refuse (unless `--force`, which plans again); if only
//!    other sessions changed, plan again. Then refuse (unless `--force`) when a session to change
//!    looks like OpenCode is writing it ([`live::being_written`]: its last message is open and was
//!    written less than 10 minutes ago): OpenCode holds no lock between its writes, and would
//!    overwrite the repair of a message it is streaming into, or have its writes overwritten;
//! 3. before the first write, copy the database with SQLite's online backup API (it includes
//!    what is still in the WAL) to `<db>.rewind-backup-<UTC time>.partial` (no journal: a fresh
//!    file has nothing to roll back), check the copy (`PRAGMA integrity_check`, and the row counts
//!    of every table equal the original's), fsync it and only then rename it to
//!    `<db>.rewind-backup-<UTC time>`: a backup under its final name is always whole. The partial
//!    file is removed on every failure and on SIGINT/SIGTERM; one left by a killed run is removed
//!    by the next repair of that database. A repair that fails after the backup removes the backup
//!    too (the database was not changed);
//! 4. apply every change in that one transaction, appending the matching events to OpenCode's
//!    event log (`event`, `event_sequence`) when the session has one;
//! 5. `PRAGMA integrity_check` and `foreign_key_check`, then diagnose the changed sessions again:
//!    every finding the plan fixes must be gone and none may appear; and no other connection may
//!    have committed since the lock was taken (`data_version`); otherwise roll back;
//! 6. commit.
//!
//! `REWIND_TEST_ABORT_AT=during-backup|after-backup|in-transaction|before-commit` makes the process abort at
//! that point: a test hook for the fault tests, harmless in use (SQLite's journal makes the
//! transaction all-or-nothing). `REWIND_TEST_SQL_AT=after-plan` with `REWIND_TEST_SQL` runs that
//! SQL on a second connection between the plan and the write lock: a test hook standing for
//! another writer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::{Value, json};

use super::{Edit, Options, SessionPlan, live, plan, verify};
use crate::checks;
use crate::core::Format;
use crate::formats::opencode::db::{Db, DbError};
use crate::formats::opencode::replay::{Render, replay};
use crate::formats::opencode::request as rebuild;
use crate::formats::opencode::stored::{Keep, StoredSession, load_db_session};
use crate::formats::write::fault;
use crate::model::ids;
use crate::session::Analysis;
use crate::source::SourceMap;

/// Why a repair did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    #[error(
        "the database is in use by another process (SQLite: {sqlite}): close {client} (every window and `{} serve`) and run rewind repair again",
        client.to_lowercase()
    )]
    Locked {
        client: &'static str,
        sqlite: String,
    },
    /// Why each session looks like it is being written (see [`RepairError::items`]).
    #[error(
        "{client} may be writing to {} of this database now (listed below). A repair now would be overwritten by {client}'s next write, or overwrite it; let the reply finish (or close {client}) and run rewind repair again. If no {client} is running (it died), pass --force; --session ID repairs other sessions",
        sessions(items.len())
    )]
    BeingWritten {
        client: &'static str,
        items: Vec<String>,
    },
    /// What changed (see [`RepairError::items`]).
    #[error(
        "the database changed while rewind planned the repair (listed below): another process ({client}?) is writing to these sessions. Let it finish (or close {client}) and run rewind repair again; if no {client} is running, pass --force"
    )]
    Changed {
        client: &'static str,
        items: Vec<String>,
    },
    #[error("{0}")]
    Db(#[from] DbError),
    #[error("--project {0}: the database has no such project; its projects are: {1}")]
    UnknownProject(String, String),
    #[error("the database is read-only ({0}): rewind needs to write to repair it")]
    ReadOnly(String),
    #[error("the backup failed its check ({detail})")]
    BadBackup { detail: String },
    #[error("cannot write the backup {path}: {detail}")]
    BackupWrite { path: PathBuf, detail: String },
    #[error("the repair was rolled back: {0}")]
    RolledBack(String),
    /// Any of the above, with what it means for the database and the backup.
    #[error("{cause}; the database was not changed{}", backup_note(.backup))]
    NotChanged {
        cause: Box<RepairError>,
        /// A backup that was kept (none is, today: a failed repair removes its backup).
        backup: Option<PathBuf>,
    },
}

fn sessions(n: usize) -> String {
    if n == 1 {
        "a session".into()
    } else {
        format!("{n} sessions")
    }
}

/// The client whose database it is, as messages name it.
fn client_of(db: &Db) -> &'static str {
    if db.schema.kilo { "Kilo" } else { "OpenCode" }
}

impl RepairError {
    /// What the error lists, one item a line after its message: the sessions a repair refuses,
    /// what changed under it.
    pub fn items(&self) -> &[String] {
        match self {
            RepairError::BeingWritten { items, .. } | RepairError::Changed { items, .. } => items,
            RepairError::NotChanged { cause, .. } => cause.items(),
            _ => &[],
        }
    }
}

fn backup_note(backup: &Option<PathBuf>) -> String {
    match backup {
        Some(p) => format!(" (a backup of it is at {})", p.display()),
        None => " and no backup was left behind".into(),
    }
}

impl From<rusqlite::Error> for RepairError {
    fn from(e: rusqlite::Error) -> Self {
        RepairError::Db(DbError::from(e))
    }
}

/// What a repair did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub plans: Vec<SessionPlan>,
    /// Things the plan cannot keep consistent, in words.
    pub caveats: Vec<String>,
    pub backup: Option<PathBuf>,
    pub applied: bool,
}

impl Outcome {
    pub fn changes(&self) -> usize {
        self.plans.iter().map(|p| p.changes.len()).sum()
    }
}

/// A session's plan and the findings it was planned from.
type Planned = (SessionPlan, Vec<crate::checks::diagnostic::Finding>);

/// Why each session with changes in `plans` looks like OpenCode is writing it now.
fn being_written(db: &Db, plans: &[SessionPlan]) -> Vec<String> {
    let now = crate::checks::fix::now_ms();
    plans
        .iter()
        .filter(|p| !p.changes.is_empty())
        .filter_map(|p| live::being_written(db.conn(), &p.session_id, now))
        .collect()
}

/// Checks `--project` against the database's projects.
fn check_project(db: &Db, options: &Options) -> Result<(), RepairError> {
    let Some(want) = &options.relink.project else {
        return Ok(());
    };
    let ids: Vec<String> = db
        .projects()?
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.id)
        .collect();
    if ids.iter().any(|id| id == want) {
        return Ok(());
    }
    let listed = if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.iter()
            .map(|i| format!("`{}`", crate::text::clip(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(RepairError::UnknownProject(
        crate::text::clip(want).into_owned(),
        listed,
    ))
}

/// Plans every selected session of `db`.
fn plan_all(db: &Db, options: &Options) -> Result<Vec<Planned>, DbError> {
    let mut plans = Vec::new();
    for_each_diagnosed(db, options, &options.sessions, |stored, a, findings| {
        // Repairs edit `message`/`part` rows: a session of the v2 store (read from
        // `session_message` rows) has only its session row repaired (`session-hidden`); its
        // other findings are diagnosed, never edited.
        if stored.runtime_v2 {
            let (row, rest): (Vec<_>, Vec<_>) = findings
                .iter()
                .cloned()
                .partition(|f| f.rule == checks::Rule::SessionHidden);
            let mut p = plan(stored, a, &row, &options.relink);
            if !rest.is_empty() {
                p.unfixable.push(format!(
                    "session {}: its {} finding{} stay: the session is kept in the v2 `session_message` store, which rewind does not edit",
                    stored.id,
                    rest.len(),
                    if rest.len() == 1 { "" } else { "s" }
                ));
            }
            if !p.changes.is_empty() || !p.unfixable.is_empty() {
                plans.push((p, findings));
            }
            return;
        }
        let p = plan(stored, a, &findings, &options.relink);
        if !p.changes.is_empty() || !p.unfixable.is_empty() {
            plans.push((p, findings));
        }
    })?;
    Ok(plans)
}

/// The findings of one session, diagnosed from `db` as it is now.
fn diagnose_session(
    db: &Db,
    options: &Options,
    id: &str,
) -> Result<Vec<crate::checks::diagnostic::Finding>, DbError> {
    let mut out = Vec::new();
    for_each_diagnosed(db, options, &[id.to_owned()], |_, _, findings| {
        out = findings;
    })?;
    Ok(out)
}

/// Loads, replays, rebuilds and checks each session of `only` (all when empty), as `diagnose`
/// does, and hands each to `f` with its analysis and findings.
fn for_each_diagnosed(
    db: &Db,
    options: &Options,
    only: &[String],
    mut f: impl FnMut(&StoredSession, &Analysis, Vec<crate::checks::diagnostic::Finding>),
) -> Result<(), DbError> {
    let ropts = options.rebuild_options(
        db.schema.newest_session_version.as_deref(),
        Some(&db.schema),
    );
    // The project rows tell where OpenCode lists each session (`session-hidden`).
    let projects: Option<std::sync::Arc<[crate::session::Project]>> = db.projects()?.map(|rows| {
        rows.into_iter()
            .map(crate::session::Project::from)
            .collect()
    });
    db.for_each_session(
        only,
        |e| e,
        |row| {
            let (stored, _) = load_db_session(db, row, Keep::Text)?;
            let mut sources = SourceMap::new();
            let file = sources.add_file(Path::new("db"));
            let mut a = replay(
                stored.clone(),
                Format::OpencodeDb,
                file,
                &Render::Placeholder(file),
                &mut sources,
            );
            rebuild::rebuild(&mut a, &ropts);
            crate::formats::opencode::git_project::attach(&mut a, &projects);
            let findings = checks::run(&a, &|_| true);
            f(&stored, &a, findings);
            Ok(())
        },
    )
}

/// `<db>.rewind-backup-<UTC time>` (never an existing file).
pub fn backup_path(db: &Path, conn: &Connection) -> PathBuf {
    let stamp: String = conn
        .query_row("SELECT strftime('%Y%m%dT%H%M%SZ', 'now')", [], |r| r.get(0))
        .unwrap_or_else(|_| "now".into());
    let base = crate::formats::opencode::db::companion(db, &format!(".rewind-backup-{stamp}"));
    let mut path = base.clone();
    let mut n = 1;
    while path.exists() {
        path = crate::formats::opencode::db::companion(&base, &format!("-{n}"));
        n += 1;
    }
    path
}

/// Plans (and unless `dry_run`, applies) the repair of the database at `path`.
pub fn repair(path: &Path, options: &Options, dry_run: bool) -> Result<Outcome, RepairError> {
    // The database a link names: its backup lies beside it, and the plan is made from what
    // SQLite reads there, WAL included (adversarial #10).
    let path = &crate::formats::opencode::db::real_path(path);
    let not_changed = |cause: RepairError| RepairError::NotChanged {
        cause: Box::new(cause),
        backup: None,
    };
    if dry_run {
        let db = Db::open(path).map_err(|e| not_changed(e.into()))?;
        check_project(&db, options).map_err(not_changed)?;
        let plans = plan_all(&db, options).map_err(|e| not_changed(e.into()))?;
        let only: Vec<SessionPlan> = plans.iter().map(|(p, _)| p.clone()).collect();
        let logs = EventLogs::read(&db, &only).map_err(|e| not_changed(e.into()))?;
        let mut caveats = caveats(&only, &logs);
        let client = client_of(&db);
        caveats.extend(being_written(&db, &only).into_iter().map(|why| {
            format!(
                "{why}: {client} may be writing it, so a repair refuses it{}",
                if options.force {
                    " unless --force (given)"
                } else {
                    " unless --force"
                }
            )
        }));
        return Ok(Outcome {
            plans: plans.into_iter().map(|(p, _)| p).collect(),
            caveats,
            ..Outcome::default()
        });
    }
    remove_partial_backups(path);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| not_changed(DbError::from(e).into()))?;
    // SQLite opens a file it may not write read-only without saying so.
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Err(not_changed(RepairError::ReadOnly(
            "SQLite opened it read-only: check the file's and its folder's permissions".into(),
        )));
    }
    conn.busy_timeout(Duration::from_millis(1000))
        .map_err(|e| not_changed(e.into()))?;
    // Plan in a read transaction (one snapshot; writers are not blocked meanwhile), and
    // fingerprint what the plan read.
    conn.execute_batch("BEGIN")
        .map_err(|e| not_changed(e.into()))?;
    let mut db = Db::from_connection(conn).map_err(|e| not_changed(e.into()))?;
    db.schema.kilo |= crate::formats::opencode::data::is_kilo_db_name(path);
    check_project(&db, options).map_err(not_changed)?;
    let planned = plan_all(&db, options).map_err(|e| not_changed(e.into()))?;
    let planned_ids: Vec<String> = planned
        .iter()
        .filter(|(p, _)| !p.changes.is_empty())
        .map(|(p, _)| p.session_id.clone())
        .collect();
    let at_plan = live::Fingerprint::read(db.conn(), planned_ids.iter().map(String::as_str));
    let _ = db.conn().execute_batch("COMMIT");
    test_sql("after-plan", path);
    if let Err(e) = db.conn().execute_batch("BEGIN IMMEDIATE") {
        let words = e.to_string();
        return Err(not_changed(match DbError::from(e) {
            DbError::Locked(_) => RepairError::Locked {
                client: client_of(&db),
                sqlite: words,
            },
            other => RepairError::Db(other),
        }));
    }
    let mut backup = None;
    let result = locked(path, &db, options, planned, &at_plan, &mut backup);
    if !matches!(result, Ok(ref o) if o.applied) {
        let _ = db.conn().execute_batch("ROLLBACK");
    }
    result.map_err(|cause| {
        // The database is as it was: the backup is of no use.
        if let Some(b) = backup {
            remove_with_companions(&b);
        }
        not_changed(cause)
    })
}

/// Under the write lock: checks that nothing changed since the plan (re-planning when only other
/// sessions did), then applies it.
fn locked(
    path: &Path,
    db: &Db,
    options: &Options,
    planned: Vec<Planned>,
    at_plan: &live::Fingerprint,
    backup: &mut Option<PathBuf>,
) -> Result<Outcome, RepairError> {
    let ids: Vec<&str> = at_plan.session_ids().collect();
    let now = live::Fingerprint::read(db.conn(), ids.iter().copied());
    let planned = if now == *at_plan {
        planned
    } else {
        let changed = at_plan.differences(&now);
        if at_plan.sessions_differ(&now) && !options.force {
            return Err(RepairError::Changed {
                client: client_of(db),
                items: changed,
            });
        }
        // Another session changed (or `--force`): plan again from what is there now.
        plan_all(db, options)?
    };
    apply(path, db, options, planned, backup)
}

/// Runs `REWIND_TEST_SQL` on a second connection when `REWIND_TEST_SQL_AT` is `point`: a test
/// hook standing for another process that writes at that point.
fn test_sql(point: &str, path: &Path) {
    if std::env::var("REWIND_TEST_SQL_AT").is_ok_and(|p| p == point)
        && let Ok(sql) = std::env::var("REWIND_TEST_SQL")
        && let Ok(c) = Connection::open(path)
    {
        let _ = c.execute_batch(&sql);
    }
}

/// Removes `path` and its `-journal`, `-wal` and `-shm` (best effort).
fn remove_with_companions(path: &Path) {
    let _ = std::fs::remove_file(path);
    for s in ["-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(crate::formats::opencode::db::companion(path, s));
    }
}

/// Removes `<db>.rewind-backup-….partial` files (and their companions) that a killed repair of
/// this database left.
fn remove_partial_backups(db: &Path) {
    crate::formats::write::remove_next_to(db, |name, f| {
        f.starts_with(&format!("{name}.rewind-backup-")) && f.contains(".partial")
    });
}

/// A backup being written: removed (with its companions) when dropped, unless kept; and on
/// SIGINT/SIGTERM through the private-path registry.
struct PartialBackup {
    path: PathBuf,
    _signal: crate::ingest::private::Tracked,
}

impl Drop for PartialBackup {
    fn drop(&mut self) {
        remove_with_companions(&self.path);
    }
}

/// The number of rows of every table of `conn`'s main database.
fn row_counts(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    names
        .into_iter()
        .map(|t| {
            let n = conn.query_row(
                &format!("SELECT count(*) FROM \"{}\"", t.replace('"', "\"\"")),
                [],
                |r| r.get(0),
            )?;
            Ok((t, n))
        })
        .collect()
}

/// Copies the database at `path` to `backup`, through a partial file that is checked and
/// fsynced before it takes the final name.
fn write_backup(path: &Path, backup: &Path) -> Result<(), RepairError> {
    let partial_path = crate::formats::opencode::db::companion(
        backup,
        &format!(".partial-{}", std::process::id()),
    );
    let partial = PartialBackup {
        _signal: crate::ingest::private::Tracked::new(&[
            partial_path.clone(),
            crate::formats::opencode::db::companion(&partial_path, "-journal"),
        ]),
        path: partial_path,
    };
    let write_err = |e: &dyn std::fmt::Display| RepairError::BackupWrite {
        path: backup.to_path_buf(),
        detail: crate::text::clip(&e.to_string()).into_owned(),
    };
    // A second connection reads while the repair's holds the write lock (readers are allowed).
    let src = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    src.busy_timeout(Duration::from_millis(1000))?;
    let mut dst = Connection::open(&partial.path).map_err(|e| write_err(&e))?;
    // A fresh file has nothing to roll back: no journal, so a kill cannot leave a hot one.
    dst.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = FULL")
        .map_err(|e| write_err(&e))?;
    {
        let b = rusqlite::backup::Backup::new(&src, &mut dst).map_err(|e| write_err(&e))?;
        let during = std::env::var("REWIND_TEST_ABORT_AT").is_ok_and(|p| p == "during-backup");
        if during {
            let _ = b.step(1);
            fault("during-backup");
        }
        b.run_to_completion(256, Duration::from_millis(10), None)
            .map_err(|e| write_err(&e))?;
    }
    let check: String = dst
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| write_err(&e))?;
    if check != "ok" {
        return Err(RepairError::BadBackup { detail: check });
    }
    let (want, got) = (
        row_counts(&src)?,
        row_counts(&dst).map_err(|e| write_err(&e))?,
    );
    if want != got {
        return Err(RepairError::BadBackup {
            detail: "its row counts differ from the database's".into(),
        });
    }
    drop(dst);
    let synced = std::fs::File::open(&partial.path).and_then(|f| f.sync_all());
    synced.map_err(|e| write_err(&e))?;
    if std::fs::hard_link(&partial.path, backup).is_err() {
        // No hard links here: a rename is atomic too, but may replace a file that appeared since
        // the name was chosen (it was checked not to exist).
        std::fs::rename(&partial.path, backup).map_err(|e| write_err(&e))?;
    }
    if let Some(dir) = backup.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

fn apply(
    path: &Path,
    db: &Db,
    options: &Options,
    planned: Vec<Planned>,
    backup_made: &mut Option<PathBuf>,
) -> Result<Outcome, RepairError> {
    let plans: Vec<SessionPlan> = planned.iter().map(|(p, _)| p.clone()).collect();
    let mut logs = EventLogs::read(db, &plans)?;
    let mut outcome = Outcome {
        caveats: caveats(&plans, &logs),
        plans,
        ..Outcome::default()
    };
    if outcome.changes() == 0 {
        return Ok(outcome);
    }
    let conn = db.conn();
    if !options.force {
        let live = being_written(db, &outcome.plans);
        if !live.is_empty() {
            return Err(RepairError::BeingWritten {
                client: client_of(db),
                items: live,
            });
        }
    }
    // Under the write lock nothing else commits; checked again before the commit.
    let locked_at = live::Fingerprint::read(conn, []);
    // The backup, before the first write.
    let backup = backup_path(path, conn);
    write_backup(path, &backup)?;
    *backup_made = Some(backup.clone());
    outcome.backup = Some(backup);
    fault("after-backup");
    let now: i64 = conn.query_row(
        "SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)",
        [],
        |r| r.get(0),
    )?;
    let fk_before = foreign_key_violations(conn)?;
    for (plan, _) in &planned {
        for change in &plan.changes {
            write(db, &mut logs, change, now)?;
            fault("in-transaction");
        }
    }
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(RepairError::RolledBack(format!(
            "integrity_check says: {check}"
        )));
    }
    // Only a reference the repair left dangling counts: a store may hold some already (a
    // session whose project row is gone is what `session-hidden` reports).
    if let Some(table) = foreign_key_violations(conn)?
        .into_iter()
        .find(|v| !fk_before.contains(v))
        .map(|v| v.0)
    {
        return Err(RepairError::RolledBack(format!(
            "foreign_key_check found a dangling reference in table {table}"
        )));
    }
    for (plan, before) in &planned {
        if plan.changes.is_empty() {
            continue;
        }
        let after = diagnose_session(db, options, &plan.session_id)?;
        verify(before, &after, &plan.fixes).map_err(|why| {
            RepairError::RolledBack(format!("session {}: {why}", plan.session_id))
        })?;
    }
    if locked_at.others_committed(conn) {
        return Err(RepairError::RolledBack(
            "another connection committed to the database during the repair".into(),
        ));
    }
    fault("before-commit");
    conn.execute_batch("COMMIT")?;
    outcome.applied = true;
    Ok(outcome)
}

/// Every row `PRAGMA foreign_key_check` reports: (table, rowid, parent table).
fn foreign_key_violations(
    conn: &Connection,
) -> rusqlite::Result<std::collections::BTreeSet<(String, Option<i64>, String)>> {
    let mut stmt = conn.prepare("PRAGMA foreign_key_check")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Option<i64>>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    rows.collect()
}

/// What the repair cannot keep consistent: sessions with an event log but no earlier event of
/// a kind it must append (the payload shape to follow is unknown).
fn caveats(plans: &[SessionPlan], logs: &EventLogs) -> Vec<String> {
    let mut out = Vec::new();
    for p in plans.iter().filter(|p| !p.changes.is_empty()) {
        let Some(log) = logs.of(&p.session_id) else {
            continue;
        };
        for ty in EVENT_TYPES {
            let needed = p.changes.iter().any(|c| event_type(&c.edit) == ty);
            if needed && log.template(ty).is_none() {
                out.push(format!(
                    "session {}: its event log has no `{ty}` event to follow, so no event is appended for these changes; OpenCode rebuilding this session from its event log would undo them",
                    p.session_id
                ));
            }
        }
    }
    out
}

/// The types of event a repair appends.
const EVENT_TYPES: [&str; 3] = [
    "message.part.updated.1",
    "message.updated.1",
    "message.part.removed.1",
];

/// The event logs of the sessions a repair changes: for each, the `seq` its next event takes
/// and its latest event of each type in [`EVENT_TYPES`] (the shape an appended one follows),
/// read once for all sessions rather than once per change. OpenCode indexes `event` by
/// `aggregate_id` in the databases it creates, but not every migrated one has the index, and
/// there a query per change read the whole table each time (8,000 changes took 129 s).
///
/// The figures stay right as events are appended: an appended event takes the next `seq`, and
/// its data is the template's with the part, info or ids and time replaced, which is what
/// following it instead of the template gives too.
struct EventLogs {
    /// Whether `event` has a `created` column (OpenCode 1.18 and later).
    created: bool,
    /// By session: `None` when it has no `event_sequence` row (no event log).
    logs: crate::FastMap<String, Option<EventLog>>,
}

struct EventLog {
    next_seq: i64,
    /// By type: the latest event's id and data (`None` when there is none, or its data is not a
    /// JSON object).
    templates: crate::FastMap<&'static str, Option<(String, Value)>>,
}

impl EventLog {
    fn template(&self, ty: &str) -> Option<&(String, Value)> {
        self.templates.get(ty).and_then(Option::as_ref)
    }
}

impl EventLogs {
    /// Reads the logs of the sessions `plans` change: one grouped query over `event` (which the
    /// index, where there is one, answers for these sessions alone) and a lookup of each one's
    /// `event_sequence` row.
    fn read(db: &Db, plans: &[SessionPlan]) -> rusqlite::Result<EventLogs> {
        let mut logs = EventLogs {
            created: false,
            logs: crate::FastMap::default(),
        };
        if !db.schema.event_log {
            return Ok(logs);
        }
        let conn = db.conn();
        logs.created = conn.prepare("SELECT created FROM event LIMIT 0").is_ok();
        let sessions: Vec<&str> = (plans.iter())
            .flat_map(|p| p.changes.iter().map(|c| c.session_id.as_str()))
            .collect();
        for s in sessions {
            if logs.logs.contains_key(s) {
                continue;
            }
            let seq: Option<i64> = conn
                .query_row(
                    "SELECT seq FROM event_sequence WHERE aggregate_id = ?1",
                    [s],
                    |r| Ok(r.get::<_, i64>(0).unwrap_or(0)),
                )
                .optional()
                .ok()
                .flatten();
            logs.logs.insert(
                s.to_owned(),
                seq.map(|seq| EventLog {
                    next_seq: seq,
                    templates: crate::FastMap::default(),
                }),
            );
        }
        let with_log: Vec<&str> = (logs.logs.iter())
            .filter(|(_, l)| l.is_some())
            .map(|(s, _)| s.as_str())
            .collect();
        if with_log.is_empty() {
            return Ok(logs);
        }
        let ids = serde_json::to_string(&with_log).unwrap_or_default();
        // The latest event of each session and type (SQLite takes the bare columns from the
        // row of the `max`).
        // A store whose `event` table this query does not fit gets no events appended (and a
        // caveat saying so), as before; an error reading it refuses the repair.
        let Ok(mut stmt) = conn.prepare(
            "SELECT aggregate_id, type, max(seq), id, data FROM event WHERE aggregate_id IN (SELECT value FROM json_each(?1)) GROUP BY aggregate_id, type",
        ) else {
            return Ok(logs);
        };
        let mut rows = stmt.query([ids])?;
        while let Some(r) = rows.next()? {
            // Whatever a column holds: a value of another type counts as none.
            let Some(Some(log)) = (r.get::<_, String>(0).ok()).and_then(|s| logs.logs.get_mut(&s))
            else {
                continue;
            };
            // Until the end of the loop: the highest seq taken.
            log.next_seq = log.next_seq.max(r.get::<_, i64>(2).unwrap_or(0));
            let ty = r.get::<_, String>(1).unwrap_or_default();
            let Some(ty) = EVENT_TYPES.into_iter().find(|t| *t == ty) else {
                continue;
            };
            let data = r.get::<_, String>(4).ok();
            let template = (r.get::<_, String>(3).ok())
                .zip(data.and_then(|d| serde_json::from_str::<Value>(&d).ok()))
                .filter(|(_, v)| v.is_object());
            log.templates.insert(ty, template);
        }
        for log in logs.logs.values_mut().flatten() {
            log.next_seq += 1;
        }
        Ok(logs)
    }

    /// The log of `session`, when it has one.
    fn of(&self, session: &str) -> Option<&EventLog> {
        self.logs.get(session).and_then(Option::as_ref)
    }
}

/// The type of the event OpenCode logs for `edit`.
fn event_type(edit: &Edit) -> &'static str {
    match edit {
        Edit::UpdatePart { .. } | Edit::InsertPart { .. } => "message.part.updated.1",
        Edit::UpdateMessage { .. } => "message.updated.1",
        Edit::DeletePart => "message.part.removed.1",
        // OpenCode logs no event for a session's project or folder: `Project.fromDirectory`
        // moves sessions between projects with a plain UPDATE too.
        Edit::UpdateSession { .. } => "",
    }
}

fn write(
    db: &Db,
    logs: &mut EventLogs,
    change: &super::Change,
    now: i64,
) -> Result<(), RepairError> {
    let conn = db.conn();
    let sid = &change.session_id;
    let mid = &change.message_id;
    let (full, ty) = match &change.edit {
        Edit::UpdatePart { data } | Edit::InsertPart { data } => {
            let id = change.part_id.clone().unwrap_or_default();
            let text = serde_json::to_string(data).unwrap_or_default();
            if matches!(change.edit, Edit::InsertPart { .. }) {
                conn.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    params![id, mid, sid, now, text],
                )?;
            } else {
                conn.execute(
                    "UPDATE part SET data = ?2, time_updated = ?3 WHERE id = ?1",
                    params![id, text, now],
                )?;
            }
            let mut full = data.clone();
            if let Some(o) = full.as_object_mut() {
                o.insert("id".into(), json!(id));
                o.insert("sessionID".into(), json!(sid));
                o.insert("messageID".into(), json!(mid));
            }
            (full, "message.part.updated.1")
        }
        Edit::UpdateMessage { data } => {
            let text = serde_json::to_string(data).unwrap_or_default();
            conn.execute(
                "UPDATE message SET data = ?2, time_updated = ?3 WHERE id = ?1",
                params![mid, text, now],
            )?;
            let mut full = data.clone();
            if let Some(o) = full.as_object_mut() {
                o.insert("id".into(), json!(mid));
                o.insert("sessionID".into(), json!(sid));
            }
            (full, "message.updated.1")
        }
        Edit::UpdateSession {
            project_id,
            directory,
        } => {
            // The row OpenCode lists: `session_v2`'s in a store OpenCode 2.x has taken over (the
            // 1.x copy of an imported session is left as 1.x wrote it).
            let in_v2 = db.schema.session_v2
                && conn
                    .query_row("SELECT 1 FROM session_v2 WHERE id = ?1", [sid], |_| Ok(()))
                    .optional()?
                    .is_some();
            let table = if in_v2 { "session_v2" } else { "session" };
            if let Some(p) = project_id {
                conn.execute(
                    &format!("UPDATE {table} SET project_id = ?2 WHERE id = ?1"),
                    params![sid, p],
                )?;
            }
            if let Some(d) = directory {
                conn.execute(
                    &format!("UPDATE {table} SET directory = ?2 WHERE id = ?1"),
                    params![sid, d],
                )?;
            }
            return Ok(());
        }
        Edit::DeletePart => {
            let id = change.part_id.clone().unwrap_or_default();
            conn.execute(
                "DELETE FROM part WHERE id = ?1 AND message_id = ?2",
                params![id, mid],
            )?;
            (
                json!({ "sessionID": sid, "messageID": mid, "partID": id }),
                "message.part.removed.1",
            )
        }
    };
    append_event(conn, logs, sid, ty, full, now)?;
    Ok(())
}

/// Appends an event shaped like the session's latest one of the same type, with the next `seq`.
fn append_event(
    conn: &Connection,
    logs: &mut EventLogs,
    session: &str,
    ty: &str,
    record: Value,
    now: i64,
) -> Result<(), RepairError> {
    let created = logs.created;
    let Some(Some(log)) = logs.logs.get_mut(session) else {
        return Ok(());
    };
    let Some((last_id, mut data)) = log.template(ty).cloned() else {
        return Ok(());
    };
    let Some(o) = data.as_object_mut() else {
        return Ok(());
    };
    if ty == "message.part.removed.1" {
        // `{sessionID, messageID, partID}`: the ids of the template are replaced.
        let (Some(ids), true) = (record.as_object(), o.contains_key("partID")) else {
            return Ok(());
        };
        for (k, v) in ids {
            if o.contains_key(k) {
                o.insert(k.clone(), v.clone());
            }
        }
    } else {
        let slot = if ty == "message.updated.1" {
            "info"
        } else {
            "part"
        };
        if !o.contains_key(slot) {
            return Ok(());
        }
        o.insert(slot.into(), record);
    }
    if o.contains_key("time") {
        o.insert("time".into(), json!(now));
    }
    let seq = log.next_seq;
    log.next_seq += 1;
    let prefix = last_id.split_once('_').map_or("evt", |(p, _)| p);
    let id = ids::ascending(
        prefix,
        u64::try_from(now).unwrap_or(0),
        u64::try_from(seq).unwrap_or(0),
    );
    let text = serde_json::to_string(&data).unwrap_or_default();
    if created {
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, created, type, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, session, seq, now, ty, text],
        )?;
    } else {
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, session, seq, ty, text],
        )?;
    }
    conn.execute(
        "UPDATE event_sequence SET seq = ?2 WHERE aggregate_id = ?1",
        params![session, seq],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal names the client whose database it is.
    #[test]
    fn refusals_name_the_client() {
        let items = vec!["ses_1".to_owned()];
        for (client, other) in [("Kilo", "OpenCode"), ("OpenCode", "Kilo")] {
            for e in [
                RepairError::BeingWritten {
                    client,
                    items: items.clone(),
                },
                RepairError::Changed {
                    client,
                    items: items.clone(),
                },
                RepairError::Locked {
                    client,
                    sqlite: "database is locked".into(),
                },
            ] {
                let words = e.to_string();
                assert!(words.contains(client), "{words}");
                assert!(!words.contains(other), "{words}");
            }
        }
        let locked = RepairError::Locked {
            client: "Kilo",
            sqlite: String::new(),
        };
        assert!(locked.to_string().contains("`kilo serve`"));
    }
}
