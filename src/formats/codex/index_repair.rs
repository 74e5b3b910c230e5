//! Repairs a Codex home's thread index (see [`super::index`]): drops each row whose rollout file
//! is missing (`thread-index-drift`'s stale rows), after a backup of `state_5.sqlite`, in one
//! transaction, verified by comparing the index with the rollouts again. What is not mechanical
//! is said, not done: a rollout without a row is re-indexed by Codex itself (checked with Codex
//! 0.171.0: `codex resume ID` finds the rollout by its id and inserts its row, and a start with
//! `state_5.sqlite` moved aside rebuilds the index from the rollouts), duplicates need a choice, and
//! a drifted projection cursor is left for the user (rewind has not verified that Codex
//! re-projects from a reset cursor).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};
use thiserror::Error;

use super::index::{self, STATE_DB};
use crate::formats::opencode::db::companion;
use crate::session::thread_index::IndexProblemKind as Kind;
use crate::source::SourceMap;

/// How recently the database's `-wal` may have been written for Codex to count as running.
const LIVE: Duration = Duration::from_secs(600);

#[derive(Debug, Error)]
pub enum IndexRepairError {
    #[error("no Codex state database at {0}")]
    NoDatabase(PathBuf),
    #[error(
        "Codex looks like it is running ({0} was written less than 10 minutes ago): close it, or pass --force when it is not running (nothing was changed)"
    )]
    Live(PathBuf),
    #[error("cannot write the backup {path}: {detail} (nothing was changed)")]
    Backup { path: PathBuf, detail: String },
    #[error("SQLite: {0} (the database was not changed)")]
    Sqlite(String),
    #[error("the repaired index still disagrees: {0} (a backup of it is at {1})")]
    Verify(String, PathBuf),
}

impl From<rusqlite::Error> for IndexRepairError {
    fn from(e: rusqlite::Error) -> Self {
        IndexRepairError::Sqlite(crate::text::clip(&e.to_string()).into_owned())
    }
}

/// One planned change.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Change {
    pub thread_id: String,
    pub rule: &'static str,
    pub change: String,
}

/// What the repair planned and did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Outcome {
    pub changes: Vec<Change>,
    /// What rewind does not repair, with what to do instead.
    pub unfixable: Vec<String>,
    pub backup: Option<PathBuf>,
}

/// The home and state database of `path` (a Codex home or its `state_5.sqlite`).
pub fn locate(path: &Path) -> (PathBuf, PathBuf) {
    if path.is_dir() {
        (path.to_path_buf(), path.join(STATE_DB))
    } else {
        let home = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        (home, path.to_path_buf())
    }
}

/// Plans the repair of the index at `path`, and unless `dry_run` applies it.
pub fn repair(path: &Path, dry_run: bool, force: bool) -> Result<Outcome, IndexRepairError> {
    let (home, db) = locate(path);
    if !db.is_file() {
        return Err(IndexRepairError::NoDatabase(db));
    }
    let facts = index::compare(&home, &db, &mut SourceMap::new());
    let mut outcome = Outcome::default();
    let mut drop_ids = Vec::new();
    for p in &facts.problems {
        let id = p.thread_id.clone().unwrap_or_default();
        match p.kind {
            Kind::StaleRow => {
                drop_ids.push(id.clone());
                outcome.changes.push(Change {
                    thread_id: id,
                    rule: "thread-index-drift",
                    change: format!("delete the threads row ({})", p.detail),
                });
            }
            Kind::MissingRow => outcome.unfixable.push(format!(
                "thread `{id}`: {} ({}); `codex resume {id}` finds the rollout by its id and adds the row (Codex 0.171.0), or close Codex, move state_5.sqlite (with -wal and -shm) aside and start `codex`, which rebuilds the index from the rollouts",
                p.words, p.detail
            )),
            Kind::Duplicate | Kind::ArchiveMismatch => {
                outcome
                    .unfixable
                    .push(format!("thread `{id}`: {} ({})", p.words, p.detail));
            }
            Kind::ProjectionDrift => outcome.unfixable.push(format!(
                "thread `{id}`: {} ({}); `rewind explain thread-projection-drift` says how to have Codex project it again",
                p.words, p.detail
            )),
            Kind::Unreadable => outcome.unfixable.push(format!(
                "{}: {}; move it aside (with -wal and -shm) and start `codex`, which rebuilds it",
                p.words, p.detail
            )),
        }
    }
    if dry_run || drop_ids.is_empty() {
        return Ok(outcome);
    }
    let wal = companion(&db, "-wal");
    let recent = std::fs::metadata(&wal)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < LIVE);
    if recent && !force {
        return Err(IndexRepairError::Live(wal));
    }
    let mut conn = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_millis(2000))?;
    let backup = backup_path(&db);
    write_backup(&conn, &backup)?;
    outcome.backup = Some(backup.clone());
    conn.execute_batch("PRAGMA foreign_keys = ON")?;
    let tx = conn.transaction()?;
    for id in &drop_ids {
        tx.execute("DELETE FROM threads WHERE id = ?1", [id])?;
    }
    tx.commit()?;
    drop(conn);
    let after = index::compare(&home, &db, &mut SourceMap::new());
    let left: Vec<String> = after
        .problems
        .iter()
        .filter(|p| p.kind == Kind::StaleRow || p.kind == Kind::Unreadable)
        .map(|p| format!("{} ({})", p.words, p.detail))
        .collect();
    let worse = after.problems.len() + drop_ids.len() != facts.problems.len();
    if !left.is_empty() || worse {
        let what = if left.is_empty() {
            "other disagreements appeared".to_owned()
        } else {
            left.join("; ")
        };
        return Err(IndexRepairError::Verify(what, backup));
    }
    Ok(outcome)
}

/// `<db>.rewind-backup-<unix seconds>` (never an existing file).
fn backup_path(db: &Path) -> PathBuf {
    let stamp = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let base = companion(db, &format!(".rewind-backup-{stamp}"));
    let mut path = base.clone();
    let mut n = 1;
    while path.exists() {
        path = companion(&base, &format!("-{n}"));
        n += 1;
    }
    path
}

/// Copies the database (with what is still in its WAL) to `backup` with SQLite's backup API and
/// checks the copy.
fn write_backup(src: &Connection, backup: &Path) -> Result<(), IndexRepairError> {
    let err = |e: &dyn std::fmt::Display| IndexRepairError::Backup {
        path: backup.to_path_buf(),
        detail: crate::text::clip(&e.to_string()).into_owned(),
    };
    let mut dst = Connection::open(backup).map_err(|e| err(&e))?;
    {
        let b = rusqlite::backup::Backup::new(src, &mut dst).map_err(|e| err(&e))?;
        b.run_to_completion(256, Duration::from_millis(10), None)
            .map_err(|e| err(&e))?;
    }
    let check: String = dst
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| err(&e))?;
    if check != "ok" {
        return Err(err(&check));
    }
    let rows =
        |c: &Connection| c.query_row("SELECT count(*) FROM threads", [], |r| r.get::<_, i64>(0));
    if rows(src)? != rows(&dst).map_err(|e| err(&e))? {
        return Err(err(&"its threads rows differ from the database's"));
    }
    Ok(())
}
