//! OpenCode's SQLite database (`~/.local/share/opencode/opencode.db`), opened without touching it.
//!
//! Opening (`opencode-storage.md` §1.2): OpenCode keeps the database in WAL mode, so recent writes
//! may live only in `opencode.db-wal`. A plain read-only connection would still create `-wal` and
//! `-shm` files beside the database and write to the `-shm`, so rewind picks the mode from the
//! companion files present:
//!
//! * none (`-wal`, `-shm`, `-journal` all absent): the file is the whole database; it is opened
//!   `immutable=1`, which reads it without locks and creates nothing;
//! * `-wal` and `-shm`: opened `mode=ro&readonly_shm=1`, which reads the WAL through the existing
//!   shared-memory index (or, when that cannot be trusted, straight from the WAL) without writing
//!   either file — this is also what works while OpenCode is running;
//! * anything else (a `-wal` without its `-shm`, a hot rollback `-journal`): the database and its
//!   companions are copied to a private temporary directory and the copy is opened, so SQLite can
//!   recover it there. The user's files are never opened for writing.
//!
//! The schema is probed (`PRAGMA table_info`, the migration journal) rather than assumed: versions
//! 1.2 through 1.18 differ (§1.3, §1.4). Rows are streamed: sessions one by one, and for each
//! session its messages and parts.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};
use thiserror::Error;

/// How long a read waits for a lock held by a writer (OpenCode's own transactions are short).
const BUSY_TIMEOUT: Duration = Duration::from_millis(2000);

/// Why a database could not be read. Each variant's text ends with SQLite's own words.
#[derive(Debug, Error)]
pub enum DbError {
    #[error("not an SQLite database (SQLite: {0})")]
    NotADatabase(String),
    #[error("the database is corrupt (SQLite: {0}); work on a copy and try `sqlite3 DB .recover`")]
    Corrupt(String),
    #[error(
        "the database is locked by another process (SQLite: {0}); close OpenCode or wait and retry"
    )]
    Locked(String),
    #[error("cannot open the database (SQLite: {0})")]
    CannotOpen(String),
    #[error(
        "not an OpenCode database: table{} {} missing (found: {found})",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", ")
    )]
    MissingTables { missing: Vec<String>, found: String },
    #[error("table `{table}` has no column `{column}`: an OpenCode schema rewind does not know")]
    MissingColumn { table: String, column: String },
    #[error("cannot copy the database to a private snapshot: {0}")]
    Snapshot(#[source] std::io::Error),
    #[error("SQLite: {0}")]
    Other(String),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        let words = crate::text::clip(&e.to_string()).into_owned();
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => DbError::NotADatabase(words),
            Some(ErrorCode::DatabaseCorrupt) => DbError::Corrupt(words),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => DbError::Locked(words),
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => DbError::CannotOpen(words),
            _ => DbError::Other(words),
        }
    }
}

/// Which migration journal the database has, and what it says.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Journal {
    /// `migration` (core package, ~1.14+), `__drizzle_migrations` (1.2 → ~1.14), or none.
    pub table: Option<&'static str>,
    /// Number of applied migrations.
    pub applied: usize,
    /// The newest applied migration.
    pub last: Option<String>,
}

/// What the schema probe found.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub journal: Journal,
    /// Columns of `session`.
    pub session_columns: Vec<String>,
    /// Columns of `project` (empty when the database has no `project` table).
    pub project_columns: Vec<String>,
    /// The `project_directory` table exists (a project's further folders, ~1.17+).
    pub project_directories: bool,
    /// `event` and `event_sequence` exist (OpenCode ≥ 1.14's event log).
    pub event_log: bool,
    /// The v1 `message` and `part` tables exist (every OpenCode 1.x database has them).
    pub v1_store: bool,
    /// The v2 `session_message` table exists, with the columns rewind reads.
    pub v2_store: bool,
    /// `session_message` has its `seq` column (the v2 store orders its rows by it; the first
    /// version of the table had none, and is ordered by `time_created, id`).
    pub v2_seq: bool,
    /// OpenCode 2.x's `session_v2` table exists (with the columns rewind reads): its rows are
    /// the sessions 2.x lists; `session` rows without one are 1.x sessions it never imported.
    pub session_v2: bool,
    /// OpenCode 2.x's one-time import of the 1.x sessions has run (`kv` `migration.v1-v2` is
    /// `completed`).
    pub v1_v2_imported: bool,
    /// The newest `session.version` (the newest OpenCode that created a session here; in a
    /// Kilo database, the newest Kilo).
    pub newest_session_version: Option<String>,
    /// The database is Kilo Code CLI's (`kilo.db`): it holds the tables only Kilo's migrations
    /// create (`kilo_board`, `kilo_board_message`). Kilo is a fork of OpenCode with its
    /// session/message/part schema; its `session.version` is Kilo's own version.
    pub kilo: bool,
}

impl Schema {
    pub fn session_has(&self, column: &str) -> bool {
        self.session_columns.iter().any(|c| c == column)
    }
}

/// How the database was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// No companion files: `immutable=1`.
    Immutable,
    /// `-wal` and `-shm` present: `mode=ro&readonly_shm=1`.
    ReadOnlyShm,
    /// A private copy (a `-wal` without `-shm`, or a hot `-journal`).
    Snapshot,
}

/// A session row.
#[derive(Clone, Debug, Default)]
pub struct SessionRow {
    pub id: String,
    pub title: Option<String>,
    pub parent_id: Option<String>,
    pub version: Option<String>,
    /// The project the session is filed under (`project.id`, or `global`).
    pub project_id: Option<String>,
    /// The folder the session was started in, as stored.
    pub directory: Option<String>,
    pub time_created: Option<i64>,
    pub time_updated: Option<i64>,
    /// Which table holds the row, in a store OpenCode 2.x has taken over.
    pub generation: Option<Generation>,
}

pub use crate::session::Generation;

/// A `project` row: what OpenCode resolved a folder to (the git root commit id since 1.2.21, or
/// `global` outside git) and the folder it claims.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectRow {
    pub id: String,
    pub worktree: Option<String>,
    pub vcs: Option<String>,
    pub time_created: Option<i64>,
    pub time_updated: Option<i64>,
    /// The project's other folders: its git worktrees (`sandboxes`, a JSON array) and its
    /// `project_directory` rows.
    pub folders: Vec<String>,
}

/// A `message` or `part` row as SQLite hands it over (borrowed until the next row): its ids and
/// its JSON `data` (ids stripped, §1.5). Text that is not UTF-8 is decoded lossily.
#[derive(Clone, Debug, Default)]
pub struct Row<'r> {
    pub id: Cow<'r, str>,
    /// The message id (parts only).
    pub message_id: Cow<'r, str>,
    pub data: Cow<'r, str>,
}

/// A `session_message` row (the v2 store), borrowed until the next row: its id, its `type`
/// column and its JSON `data` (the message minus `id` and `type`).
#[derive(Clone, Debug, Default)]
pub struct V2Row<'r> {
    pub id: Cow<'r, str>,
    pub kind: Cow<'r, str>,
    pub data: Cow<'r, str>,
}

/// A private copy of a database (a folder), removed when dropped or on a signal.
#[derive(Debug)]
struct SnapshotDir(crate::ingest::private::PrivatePath);

/// An open OpenCode database.
#[derive(Debug)]
pub struct Db {
    conn: Connection,
    pub schema: Schema,
    pub mode: OpenMode,
    /// How `conn` was opened, so [`Db::reader`] can open more read-only connections to the same
    /// file (`None` for a connection the caller opened, such as an in-memory SQL dump).
    target: Option<(String, OpenFlags)>,
    _snapshot: Option<SnapshotDir>,
}

/// A second connection to an open [`Db`] (see [`Db::reader`]); it dereferences to a `Db`.
pub struct Reader<'a> {
    db: Db,
    _owner: std::marker::PhantomData<&'a ()>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Db;
    fn deref(&self) -> &Db {
        &self.db
    }
}

/// `path` with `suffix` appended to its file name (`opencode.db` → `opencode.db-wal`).
pub fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A `file:` URI for `path` with `query` (SQLite URI rules: `%`, `?` and `#` must be escaped).
pub fn uri(path: &Path, query: &str) -> String {
    let raw = path.to_string_lossy();
    let mut out = String::from("file:");
    for b in raw.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            #[cfg(windows)]
            b'\\' => out.push('/'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    if !query.is_empty() {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// The file a database path names: `path` with symbolic links in its last component followed
/// (a link to a link too), so that the `-wal`, `-shm` and `-journal` looked for are the ones
/// beside the database, which SQLite reads, and not beside the link. Any other path, or a link
/// that cannot be read, is returned as it is.
pub fn real_path(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // As many links as the system itself follows (Linux's `MAXSYMLINKS`).
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    path
}

/// A read-only connection to a SQLite database of any schema, opened as the module docs say
/// (never writing the user's files); the Codex state database is read through it too.
pub struct ReadOnly {
    pub conn: Connection,
    pub mode: OpenMode,
    target: (String, OpenFlags),
    snapshot: Option<SnapshotDir>,
}

/// Opens `path` read-only without touching it (see the module docs); a symbolic link is
/// followed first ([`real_path`]).
pub fn open_read_only(path: &Path) -> Result<ReadOnly, DbError> {
    let path = &real_path(path);
    let wal = companion(path, "-wal").exists();
    let shm = companion(path, "-shm").exists();
    let journal = companion(path, "-journal").exists();
    let ro = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let (target, flags, mode, snapshot) = if !wal && !shm && !journal {
        (uri(path, "immutable=1"), ro, OpenMode::Immutable, None)
    } else if wal && shm && !journal {
        let target = uri(path, "mode=ro&readonly_shm=1");
        (target, ro, OpenMode::ReadOnlyShm, None)
    } else {
        let dir = snapshot(path, &["-wal", "-journal"]).map_err(DbError::Snapshot)?;
        // The copy is private; it is opened writable so SQLite can roll back a hot journal.
        let copy = uri(&dir.0.path().join("opencode.db"), "");
        let rw = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        (copy, rw, OpenMode::Snapshot, Some(dir))
    };
    let conn = Connection::open_with_flags(&target, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(ReadOnly {
        conn,
        mode,
        target: (target, flags),
        snapshot,
    })
}

impl Db {
    /// Opens `path` read-only (see the module docs) and probes its schema. A symbolic link is
    /// followed first ([`real_path`]).
    pub fn open(path: &Path) -> Result<Db, DbError> {
        let path = &real_path(path);
        let ReadOnly {
            conn,
            mode,
            target,
            snapshot,
        } = open_read_only(path)?;
        let mut schema = probe(&conn)?;
        schema.kilo |= super::data::is_kilo_db_name(path);
        Ok(Db {
            conn,
            schema,
            mode,
            target: Some(target),
            _snapshot: snapshot,
        })
    }

    /// Another read-only connection to the same file, for reading on another thread; `None`
    /// when this connection cannot be reopened (an in-memory database). The reader borrows
    /// `self` so that a snapshot copy outlives it.
    pub fn reader(&self) -> Option<Reader<'_>> {
        let (target, flags) = self.target.as_ref()?;
        let conn = Connection::open_with_flags(target, *flags).ok()?;
        conn.busy_timeout(BUSY_TIMEOUT).ok()?;
        Some(Reader {
            db: Db {
                conn,
                schema: self.schema.clone(),
                mode: self.mode,
                target: None,
                _snapshot: None,
            },
            _owner: std::marker::PhantomData,
        })
    }

    /// Wraps a connection the caller opened (repair opens its own, writable one).
    pub fn from_connection(conn: Connection) -> Result<Db, DbError> {
        let schema = probe(&conn)?;
        Ok(Db {
            conn,
            schema,
            mode: OpenMode::Immutable,
            target: None,
            _snapshot: None,
        })
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Streams the sessions (oldest first), or only those in `only`, calling `f` for each.
    pub fn for_each_session<E>(
        &self,
        only: &[String],
        err: impl Fn(DbError) -> E,
        mut f: impl FnMut(SessionRow) -> Result<(), E>,
    ) -> Result<(), E> {
        let col = |c: &str| {
            if self.schema.session_has(c) {
                format!("`{c}`")
            } else {
                "NULL".to_owned()
            }
        };
        let v1 = format!(
            "SELECT id, {}, {}, {}, {}, {}, {}, {}, 1 FROM session",
            col("title"),
            col("parent_id"),
            col("version"),
            col("directory"),
            col("time_created"),
            col("time_updated"),
            col("project_id"),
        );
        // In a store OpenCode 2.x has taken over, its `session_v2` rows first in its eyes, then
        // the 1.x rows it never imported.
        let sql = if self.schema.session_v2 {
            format!(
                "SELECT id, title, parent_id, version, directory, time_created, time_updated, project_id, 2 FROM session_v2 \
                 UNION ALL {v1} WHERE id NOT IN (SELECT id FROM session_v2) ORDER BY 6, 1"
            )
        } else {
            format!("{v1} ORDER BY time_created, id")
        };
        let e = |x: rusqlite::Error| err(DbError::from(x));
        let mut stmt = self.conn.prepare(&sql).map_err(e)?;
        let mut rows = stmt.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let row = SessionRow {
                id: text(r, 0).unwrap_or_default(),
                title: text(r, 1),
                parent_id: text(r, 2),
                version: text(r, 3),
                directory: text(r, 4),
                time_created: r.get::<_, Option<i64>>(5).ok().flatten(),
                time_updated: r.get::<_, Option<i64>>(6).ok().flatten(),
                project_id: text(r, 7),
                generation: self.schema.session_v2.then(|| {
                    if r.get::<_, i64>(8).unwrap_or(1) == 2 {
                        Generation::V2
                    } else {
                        Generation::V1Only {
                            imported: self.schema.v1_v2_imported,
                        }
                    }
                }),
            };
            if !only.is_empty() && !only.contains(&row.id) {
                continue;
            }
            f(row)?;
        }
        Ok(())
    }

    /// The `project` rows, or `None` when the database has no `project` table (or one without
    /// `id` and `worktree`). A small table: read whole.
    pub fn projects(&self) -> Result<Option<Vec<ProjectRow>>, DbError> {
        let cols = &self.schema.project_columns;
        let has = |c: &str| cols.iter().any(|x| x == c);
        if !has("id") || !has("worktree") {
            return Ok(None);
        }
        let col = |c: &str| {
            if has(c) {
                format!("`{c}`")
            } else {
                "NULL".to_owned()
            }
        };
        let sql = format!(
            "SELECT id, worktree, {}, {}, {}, {} FROM project ORDER BY id",
            col("vcs"),
            col("time_created"),
            col("time_updated"),
            col("sandboxes"),
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(ProjectRow {
                id: text(r, 0).unwrap_or_default(),
                worktree: text(r, 1),
                vcs: text(r, 2),
                time_created: r.get::<_, Option<i64>>(3).ok().flatten(),
                time_updated: r.get::<_, Option<i64>>(4).ok().flatten(),
                // A value that is not an array of strings names no folder.
                folders: text(r, 5)
                    .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
                    .unwrap_or_default(),
            });
        }
        drop(rows);
        if self.schema.project_directories {
            let mut stmt = self
                .conn
                .prepare("SELECT project_id, directory FROM project_directory")?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let (Some(project), Some(folder)) = (text(r, 0), text(r, 1)) else {
                    continue;
                };
                if let Some(p) = out.iter_mut().find(|p| p.id == project) {
                    p.folders.push(folder);
                }
            }
        }
        Ok(Some(out))
    }

    /// The messages of a session, streamed to `f` in OpenCode's replay order (`time_created, id`).
    pub fn for_each_message(
        &self,
        session: &str,
        mut f: impl FnMut(Row<'_>),
    ) -> Result<(), DbError> {
        if !self.schema.v1_store {
            return Ok(());
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
        )?;
        let mut rows = stmt.query([session])?;
        while let Some(r) = rows.next()? {
            f(Row {
                id: text_ref(r, 0).unwrap_or_default(),
                message_id: Cow::Borrowed(""),
                data: text_ref(r, 1).unwrap_or_default(),
            });
        }
        Ok(())
    }

    /// The parts of a session, streamed to `f` in storage order: the caller puts each message's
    /// parts in OpenCode's order (`id`). Sorting here would make SQLite copy every row, data
    /// included, through its sorter; sorting the few parts of each message afterwards is cheaper.
    pub fn for_each_part(&self, session: &str, mut f: impl FnMut(Row<'_>)) -> Result<(), DbError> {
        if !self.schema.v1_store {
            return Ok(());
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, message_id, data FROM part WHERE session_id = ?1")?;
        let mut rows = stmt.query([session])?;
        while let Some(r) = rows.next()? {
            f(Row {
                id: text_ref(r, 0).unwrap_or_default(),
                message_id: text_ref(r, 1).unwrap_or_default(),
                data: text_ref(r, 2).unwrap_or_default(),
            });
        }
        Ok(())
    }
}

impl Db {
    /// The v2 `session_message` rows of a session, streamed to `f` in the v2 runtime's order
    /// (`seq`; `time_created, id` where the table has no `seq`). Nothing when there is no such
    /// table.
    pub fn for_each_session_message(
        &self,
        session: &str,
        mut f: impl FnMut(V2Row<'_>),
    ) -> Result<(), DbError> {
        if !self.schema.v2_store {
            return Ok(());
        }
        let sql = if self.schema.v2_seq {
            "SELECT id, type, data FROM session_message WHERE session_id = ?1 ORDER BY seq, id"
        } else {
            "SELECT id, type, data FROM session_message WHERE session_id = ?1 ORDER BY time_created, id"
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query([session])?;
        while let Some(r) = rows.next()? {
            f(V2Row {
                id: text_ref(r, 0).unwrap_or_default(),
                kind: text_ref(r, 1).unwrap_or_default(),
                data: text_ref(r, 2).unwrap_or_default(),
            });
        }
        Ok(())
    }
}

/// A text column, borrowed from the row (a BLOB that is not UTF-8 is decoded lossily, an
/// integer or real becomes its decimal text).
fn text_ref<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> Option<Cow<'r, str>> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).ok()? {
        ValueRef::Null => None,
        // `from_utf8` validates much faster than the lossy decoder, which is kept for bad bytes.
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(match std::str::from_utf8(t) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(t),
        }),
        ValueRef::Integer(n) => Some(Cow::Owned(n.to_string())),
        ValueRef::Real(x) => Some(Cow::Owned(x.to_string())),
    }
}

/// A text column, owned (see [`text_ref`]).
fn text(r: &rusqlite::Row<'_>, i: usize) -> Option<String> {
    text_ref(r, i).map(Cow::into_owned)
}

/// Copies `path` and its companions into a new private temporary directory.
fn snapshot(path: &Path, suffixes: &[&str]) -> std::io::Result<SnapshotDir> {
    let guard = SnapshotDir(crate::ingest::private::PrivatePath::new_dir("db")?);
    let copy = guard.0.path().join("opencode.db");
    std::fs::copy(path, &copy)?;
    for s in suffixes {
        let from = companion(path, s);
        if from.exists() {
            std::fs::copy(&from, companion(&copy, s))?;
        }
    }
    // A test hook: the signal tests interrupt rewind while it holds a copy.
    if std::env::var_os("REWIND_TEST_PAUSE_AFTER_SNAPSHOT").is_some() {
        std::thread::sleep(std::time::Duration::from_secs(30));
    }
    Ok(guard)
}

fn table_columns(conn: &Connection, table: &str) -> Result<Vec<String>, DbError> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(`{table}`)"))?;
    let cols = stmt.query_map([], |r| r.get::<_, String>(1))?;
    cols.collect::<Result<Vec<_>, _>>().map_err(DbError::from)
}

/// Probes the tables, columns and migration journal.
fn probe(conn: &Connection) -> Result<Schema, DbError> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    drop(stmt);
    let has = |t: &str| tables.iter().any(|x| x == t);
    let missing: Vec<String> = ["session", "message", "part"]
        .into_iter()
        .filter(|t| !has(t))
        .map(str::to_owned)
        .collect();
    // A store of the v2 runtime alone (a `session` table and `session_message`, no v1 tables).
    let v2_only = has("session") && has("session_message") && !has("message") && !has("part");
    if !missing.is_empty() && !v2_only {
        let mut found = tables.clone();
        found.sort();
        found.truncate(12);
        let found = if found.is_empty() {
            "no tables".to_owned()
        } else {
            found.join(", ")
        };
        return Err(DbError::MissingTables { missing, found });
    }
    let v1_store = !v2_only;
    let v2_columns = if has("session_message") {
        table_columns(conn, "session_message")?
    } else {
        Vec::new()
    };
    let v2_has = |c: &str| v2_columns.iter().any(|x| x == c);
    let v2_store = ["id", "session_id", "type", "data"]
        .iter()
        .all(|c| v2_has(c));
    if v2_only && !v2_store {
        let column = ["id", "session_id", "type", "data"]
            .into_iter()
            .find(|c| !v2_has(c))
            .unwrap_or("data");
        return Err(DbError::MissingColumn {
            table: "session_message".to_owned(),
            column: column.to_owned(),
        });
    }
    for (table, needed) in [
        ("session", &["id"][..]),
        (
            "message",
            &["id", "session_id", "time_created", "time_updated", "data"][..],
        ),
        (
            "part",
            &[
                "id",
                "message_id",
                "session_id",
                "time_created",
                "time_updated",
                "data",
            ][..],
        ),
    ] {
        if !v1_store && table != "session" {
            continue;
        }
        let cols = table_columns(conn, table)?;
        if let Some(c) = needed.iter().find(|c| !cols.iter().any(|x| x == *c)) {
            return Err(DbError::MissingColumn {
                table: table.to_owned(),
                column: (*c).to_owned(),
            });
        }
    }
    let session_columns = table_columns(conn, "session")?;
    let project_columns = if has("project") {
        table_columns(conn, "project")?
    } else {
        Vec::new()
    };
    let journal = if has("migration") {
        journal(conn, "migration", "id")?
    } else if has("__drizzle_migrations") {
        let cols = table_columns(conn, "__drizzle_migrations")?;
        let col = if cols.iter().any(|c| c == "name") {
            "name"
        } else {
            "hash"
        };
        journal(conn, "__drizzle_migrations", col)?
    } else {
        Journal::default()
    };
    let session_v2 = has("session_v2") && {
        let cols = table_columns(conn, "session_v2")?;
        [
            "id",
            "title",
            "parent_id",
            "version",
            "directory",
            "time_created",
            "time_updated",
            "project_id",
        ]
        .iter()
        .all(|c| cols.iter().any(|x| x == c))
    };
    let v1_v2_imported = has("kv")
        && conn
            .query_row(
                "SELECT value FROM kv WHERE key = 'migration.v1-v2'",
                [],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()
            .ok()
            .flatten()
            .flatten()
            .and_then(|v| serde_json::from_str::<serde_json::Value>(&v).ok())
            .is_some_and(|v| v["phase"] == "completed");
    let mut schema = Schema {
        session_v2,
        v1_v2_imported,
        journal,
        event_log: has("event") && has("event_sequence"),
        v1_store,
        v2_store,
        v2_seq: v2_has("seq"),
        newest_session_version: None,
        kilo: has("kilo_board") || has("kilo_board_message"),
        session_columns,
        project_directories: has("project_directory")
            && table_columns(conn, "project_directory")?
                .iter()
                .filter(|c| *c == "project_id" || *c == "directory")
                .count()
                == 2,
        project_columns,
    };
    let versions = match (schema.session_has("version"), schema.session_v2) {
        (true, true) => {
            Some("SELECT DISTINCT version FROM session UNION SELECT version FROM session_v2")
        }
        (true, false) => Some("SELECT DISTINCT version FROM session"),
        (false, true) => Some("SELECT DISTINCT version FROM session_v2"),
        (false, false) => None,
    };
    if let Some(sql) = versions {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if let Some(v) = text(r, 0)
                && crate::model::version::newer(&v, schema.newest_session_version.as_deref())
            {
                schema.newest_session_version = Some(v);
            }
        }
    }
    Ok(schema)
}

fn journal(conn: &Connection, table: &'static str, column: &str) -> Result<Journal, DbError> {
    let applied: i64 =
        conn.query_row(&format!("SELECT count(*) FROM `{table}`"), [], |r| r.get(0))?;
    let last: Option<String> = conn
        .query_row(
            &format!("SELECT `{column}` FROM `{table}` ORDER BY `{column}` DESC LIMIT 1"),
            [],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()
        .ok()
        .flatten()
        .flatten();
    Ok(Journal {
        table: Some(table),
        applied: usize::try_from(applied).unwrap_or(0),
        last,
    })
}

impl From<ProjectRow> for crate::session::Project {
    fn from(row: ProjectRow) -> crate::session::Project {
        crate::session::Project {
            id: row.id,
            worktree: row.worktree,
            vcs: row.vcs,
            time_updated: row.time_updated,
            folders: row.folders,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_escape_what_sqlite_would_misread() {
        assert_eq!(
            uri(Path::new("/tmp/a b/x?.db"), "mode=ro"),
            "file:/tmp/a%20b/x%3F.db?mode=ro"
        );
        assert_eq!(
            companion(Path::new("/d/opencode.db"), "-wal"),
            PathBuf::from("/d/opencode.db-wal")
        );
    }

    #[test]
    #[cfg(unix)]
    fn real_paths_follow_links_relative_and_chained() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let db = data.join("opencode.db");
        std::fs::write(&db, b"x").unwrap();
        let first = dir.path().join("first.db");
        std::os::unix::fs::symlink("data/opencode.db", &first).unwrap();
        let second = dir.path().join("second.db");
        std::os::unix::fs::symlink(&first, &second).unwrap();
        assert_eq!(real_path(&second), db);
        assert_eq!(real_path(&db), db);
        let missing = dir.path().join("missing.db");
        assert_eq!(real_path(&missing), missing);
    }
}
