//! Codex's home folder (`~/.codex`): the thread index `state_5.sqlite` (one `threads` row per
//! thread, naming its rollout in `rollout_path`), the thread-history projection of
//! `thread_history_1.sqlite` (`thread_history_projection_state`: how far into each rollout
//! Codex has projected, as a byte offset and a record ordinal), and the rollouts under
//! `sessions/YYYY/MM/DD/` and `archived_sessions/`.
//!
//! The two databases are opened read-only without touching them (the OpenCode reader's
//! [`open_read_only`]). The comparison follows `codex doctor`'s `state.rollout_db_parity`
//! (Codex 0.171.0): a row whose rollout file is missing (a stale row), a rollout with no row,
//! two rollouts with one thread id or two rows naming one file, an `archived` flag that
//! disagrees with the folder the rollout is in. A row whose `rollout_path` does not exist but
//! names a file below `sessions/` or `archived_sessions/` that exists in this home is the home
//! folder moved or copied, not a stale row: rewind matches it there.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Component, Path, PathBuf};

use rusqlite::Connection;

use crate::formats::opencode::db::{DbError, open_read_only};
use crate::formats::store::sorted_entries;
use crate::session::thread_index::{IndexProblem, IndexProblemKind as Kind, ThreadIndex};
use crate::source::{FileId, SourceMap, Span};

/// The thread index's file name in a Codex home.
pub const STATE_DB: &str = "state_5.sqlite";
/// The thread-history database's file name in a Codex home.
pub const HISTORY_DB: &str = "thread_history_1.sqlite";

/// Whether the head of a file is Codex's state database: SQLite's header, and the statement
/// creating its `threads` table with `rollout_path` (in the schema page at the start).
pub fn is_state_db_head(bytes: &[u8]) -> bool {
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    bytes.starts_with(crate::ingest::input::SQLITE_HEADER)
        && has(b"CREATE TABLE threads (")
        && has(b"rollout_path TEXT")
}

/// Whether the SQLite database at `path` (its head `bytes`) is Codex's state database: its
/// schema is read from the head when it is there, else asked of the database file, opened
/// immutable (after a `VACUUM`, or a migration that rewrote the table, the schema can lie past
/// the head). Nothing is copied: recognising a large database costs one page read or two.
pub fn is_state_db(path: &std::path::Path, bytes: &[u8]) -> bool {
    if !bytes.starts_with(crate::ingest::input::SQLITE_HEADER) {
        return false;
    }
    if is_state_db_head(bytes) {
        return true;
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
        | rusqlite::OpenFlags::SQLITE_OPEN_URI
        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let target = crate::formats::opencode::db::uri(path, "immutable=1");
    Connection::open_with_flags(target, flags).is_ok_and(|conn| {
        conn.query_row(
            "SELECT count(*) FROM pragma_table_info('threads') WHERE name = 'rollout_path'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .is_ok_and(|n| n == 1)
    })
}

/// Whether `dir` is a Codex home: its `sessions/` holds rollouts, or its `state_5.sqlite` is
/// Codex's state database.
pub fn is_home(dir: &Path) -> bool {
    if !dir.is_dir() {
        return false;
    }
    !super::store::rollouts(&dir.join("sessions")).is_empty()
        || is_state_db(
            &dir.join(STATE_DB),
            crate::formats::store::head(&dir.join(STATE_DB)).as_bytes(),
        )
}

/// A `threads` row as rewind reads it.
#[derive(Debug, Clone)]
pub struct ThreadRow {
    pub id: String,
    pub rollout_path: String,
    pub archived: bool,
}

/// A projection cursor (`thread_history_projection_state`).
#[derive(Debug, Clone)]
pub struct Cursor {
    pub thread_id: String,
    pub offset: i64,
    pub ordinal: i64,
}

/// A rollout file of the home.
#[derive(Debug, Clone)]
pub struct RolloutFile {
    pub path: PathBuf,
    /// Under `archived_sessions/`.
    pub archived: bool,
    /// The thread id: the file name's UUID, else the `session_meta` record's `payload.id`.
    pub id: Option<String>,
}

/// The rollouts of a home: `sessions/YYYY/MM/DD/rollout-*.jsonl` and
/// `archived_sessions/rollout-*.jsonl` (also dated folders there).
pub fn rollout_files(home: &Path) -> Vec<RolloutFile> {
    let mut out: Vec<RolloutFile> = super::store::rollouts(&home.join("sessions"))
        .into_iter()
        .map(|path| RolloutFile {
            id: thread_id_of(&path),
            path,
            archived: false,
        })
        .collect();
    let archive = home.join("archived_sessions");
    let mut archived: Vec<PathBuf> = sorted_entries(&archive)
        .into_iter()
        .filter(|p| p.is_file() && is_rollout_name(p))
        .collect();
    archived.extend(super::store::rollouts(&archive));
    out.extend(archived.into_iter().map(|path| RolloutFile {
        id: thread_id_of(&path),
        path,
        archived: true,
    }));
    out
}

fn is_rollout_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
}

/// Whether `s` is a UUID as Codex writes thread ids (8-4-4-4-12 hex digits).
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The thread id of a rollout: the UUID its name ends with, else its header's `payload.id`.
pub fn thread_id_of(path: &Path) -> Option<String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if let Some(tail) = stem.get(stem.len().saturating_sub(36)..)
        && is_uuid(tail)
    {
        return Some(tail.to_owned());
    }
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    BufReader::new(file).read_line(&mut first).ok()?;
    let v: serde_json::Value = serde_json::from_str(first.trim_end()).ok()?;
    (v.get("type")?.as_str()? == "session_meta")
        .then(|| v.get("payload")?.get("id")?.as_str().map(str::to_owned))
        .flatten()
}

/// The part of `path` from its last `sessions` or `archived_sessions` component on.
fn store_tail(path: &Path) -> Option<PathBuf> {
    let comps: Vec<Component<'_>> = path.components().collect();
    let at = comps.iter().rposition(
        |c| matches!(c, Component::Normal(n) if *n == "sessions" || *n == "archived_sessions"),
    )?;
    Some(comps.get(at..)?.iter().collect())
}

/// The file a row's `rollout_path` names in this home: the path itself, else (a moved or copied
/// home) the same path below this home's `sessions/` or `archived_sessions/`.
pub fn resolve(home: &Path, rollout_path: &str) -> Option<PathBuf> {
    let p = Path::new(rollout_path);
    if p.is_file() {
        return Some(p.to_path_buf());
    }
    let here = home.join(store_tail(p)?);
    here.is_file().then_some(here)
}

fn key(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Reads the `threads` rows.
pub fn read_rows(conn: &Connection) -> Result<Vec<ThreadRow>, DbError> {
    let mut stmt = conn.prepare("SELECT id, rollout_path, archived FROM threads ORDER BY rowid")?;
    let rows = stmt.query_map([], |r| {
        Ok(ThreadRow {
            id: r.get(0)?,
            rollout_path: r.get(1)?,
            archived: r.get::<_, Option<i64>>(2)?.unwrap_or(0) != 0,
        })
    })?;
    rows.collect::<Result<Vec<_>, _>>().map_err(DbError::from)
}

/// Reads the projection cursors (none when the table is absent).
pub fn read_cursors(conn: &Connection) -> Result<Vec<Cursor>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT thread_id, next_rollout_byte_offset, next_rollout_ordinal \
         FROM thread_history_projection_state ORDER BY rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Cursor {
            thread_id: r.get(0)?,
            offset: r.get(1)?,
            ordinal: r.get(2)?,
        })
    })?;
    rows.collect::<Result<Vec<_>, _>>().map_err(DbError::from)
}

/// Renders a row of the index as the text findings point into.
fn render_row(row: &ThreadRow) -> String {
    format!(
        "id = '{}'  rollout_path = '{}'  archived = {}",
        row.id,
        row.rollout_path,
        u8::from(row.archived)
    )
}

/// Where a projection cursor lands in a rollout.
struct Landing {
    len: u64,
    /// Records in the file.
    records: i64,
    /// The record starting at the cursor: its span and ordinal (its index when it has none).
    at: Option<(u64, u64, i64)>,
    /// The ordinal after the last record (its `ordinal` + 1, else the count).
    next: i64,
    /// The last record's start.
    last: Option<u64>,
}

fn land(path: &Path, offset: u64) -> Option<Landing> {
    let file = std::fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file);
    let mut pos = 0u64;
    let mut records = 0i64;
    let mut next = 0i64;
    let mut at = None;
    let mut last = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).ok()?;
        if n == 0 {
            break;
        }
        let trimmed = line.trim_ascii();
        if !trimmed.is_empty() {
            let ordinal = serde_json::from_slice::<serde_json::Value>(trimmed)
                .ok()
                .and_then(|v| v.get("ordinal").and_then(serde_json::Value::as_i64))
                .unwrap_or(records);
            if pos == offset {
                at = Some((pos, trimmed.len() as u64, ordinal));
            }
            records += 1;
            next = ordinal + 1;
            last = Some(pos);
        }
        pos += n as u64;
    }
    Some(Landing {
        len: pos,
        records,
        at,
        next,
        last,
    })
}

/// Compares the index of the home at `home` with its rollouts. `db` is the state database the
/// user named (or the home's); sources for its rows and the rollouts are added to `sources`.
pub fn compare(home: &Path, db: &Path, sources: &mut SourceMap) -> ThreadIndex {
    let files = rollout_files(home);
    let mut index = ThreadIndex {
        rollouts: files.len(),
        ..ThreadIndex::default()
    };
    let mut rollout_span: BTreeMap<PathBuf, FileId> = BTreeMap::new();
    let mut rollout_at = |sources: &mut SourceMap, p: &Path, offset: u64, len: u64| {
        let id = *rollout_span
            .entry(key(p))
            .or_insert_with(|| sources.add_file(p));
        Span::new(id, offset, len)
    };
    let rows = match open_read_only(db).and_then(|ro| read_rows(&ro.conn)) {
        Ok(rows) => rows,
        Err(e) => {
            let what = crate::text::clip(&e.to_string()).into_owned();
            let at = sources.add_virtual(db, "opened read-only".into(), what.clone());
            index.problems.push(IndexProblem {
                kind: Kind::Unreadable,
                thread_id: None,
                row: Some(Span::new(at, 0, what.len() as u64)),
                rollout: None,
                words: "the state DB cannot be read".into(),
                detail: format!(
                    "{what}; {} rollout file{} in this home",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" }
                ),
            });
            return index;
        }
    };
    index.rows = rows.len();
    let header = |p: &Path| -> u64 {
        std::fs::File::open(p)
            .ok()
            .and_then(|f| {
                let mut l = Vec::new();
                BufReader::new(f).read_until(b'\n', &mut l).ok()?;
                Some(l.trim_ascii_end().len() as u64)
            })
            .unwrap_or(0)
    };
    let by_file: BTreeMap<PathBuf, &RolloutFile> =
        files.iter().map(|f| (key(&f.path), f)).collect();
    let mut row_of_file: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut row_span: BTreeMap<String, Span> = BTreeMap::new();
    let mut resolved: BTreeMap<String, PathBuf> = BTreeMap::new();
    let ids_with_rows: BTreeMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| (r.id.as_str(), k))
        .collect();
    for (k, row) in rows.iter().enumerate() {
        let text = render_row(row);
        let v = sources.add_virtual(db, format!("threads › id = '{}'", row.id), text.clone());
        let span = Span::new(v, 0, text.len() as u64);
        row_span.insert(row.id.clone(), span);
        let Some(file) = resolve(home, &row.rollout_path) else {
            index.problems.push(IndexProblem {
                kind: Kind::StaleRow,
                thread_id: Some(row.id.clone()),
                row: Some(span),
                rollout: None,
                words: "state DB rows point at missing or unusable rollout files".into(),
                detail: format!("no file at rollout_path `{}`", row.rollout_path),
            });
            continue;
        };
        let file_key = key(&file);
        resolved.insert(row.id.clone(), file.clone());
        if let Some(&other) = row_of_file.get(&file_key) {
            let first = rows.get(other).map(|r| r.id.clone()).unwrap_or_default();
            index.problems.push(IndexProblem {
                kind: Kind::Duplicate,
                thread_id: Some(row.id.clone()),
                row: Some(span),
                rollout: Some(rollout_at(sources, &file, 0, header(&file))),
                words: "duplicate thread inventory entries found".into(),
                detail: format!("rows `{first}` and `{}` name one rollout file", row.id),
            });
            continue;
        }
        row_of_file.insert(file_key.clone(), k);
        let archived_file = by_file.get(&file_key).is_some_and(|f| f.archived);
        if by_file.contains_key(&file_key) && archived_file != row.archived {
            index.problems.push(IndexProblem {
                kind: Kind::ArchiveMismatch,
                thread_id: Some(row.id.clone()),
                row: Some(span),
                rollout: Some(rollout_at(sources, &file, 0, header(&file))),
                words: "state DB archive flags disagree with rollout file locations".into(),
                detail: format!(
                    "the row says archived = {}, the rollout is under {}",
                    u8::from(row.archived),
                    if archived_file {
                        "archived_sessions/"
                    } else {
                        "sessions/"
                    }
                ),
            });
        }
    }
    // Rollouts: one thread id each, and a row each.
    let mut first_with_id: BTreeMap<&str, &RolloutFile> = BTreeMap::new();
    for f in &files {
        let k = key(&f.path);
        if row_of_file.contains_key(&k) {
            if let Some(id) = f.id.as_deref() {
                first_with_id.entry(id).or_insert(f);
            }
            continue;
        }
        let span = rollout_at(sources, &f.path, 0, header(&f.path));
        let row = f.id.as_deref().and_then(|id| row_span.get(id)).copied();
        let same_id =
            f.id.as_deref()
                .and_then(|id| resolved.get(id).or(first_with_id.get(id).map(|o| &o.path)));
        if let (Some(id), Some(other)) = (f.id.as_deref(), same_id) {
            index.problems.push(IndexProblem {
                kind: Kind::Duplicate,
                thread_id: Some(id.to_owned()),
                row,
                rollout: Some(span),
                words: "duplicate thread inventory entries found".into(),
                detail: format!(
                    "thread id `{id}` is also the rollout `{}`'s",
                    other.display()
                ),
            });
            continue;
        }
        if let Some(id) = f.id.as_deref() {
            first_with_id.entry(id).or_insert(f);
        }
        let has_row =
            f.id.as_deref()
                .is_some_and(|id| ids_with_rows.contains_key(id));
        index.problems.push(IndexProblem {
            kind: Kind::MissingRow,
            thread_id: f.id.clone(),
            row,
            rollout: Some(span),
            words: "rollout files are missing from the state DB".into(),
            detail: if has_row {
                "its thread's row names another path".into()
            } else {
                format!(
                    "no threads row has id `{}`",
                    f.id.as_deref()
                        .unwrap_or("(none: the file name has no thread id)")
                )
            },
        });
    }
    projection(home, &rows, &resolved, sources, &mut rollout_at, &mut index);
    index
}

/// Compares each projection cursor with its rollout.
fn projection(
    home: &Path,
    rows: &[ThreadRow],
    resolved: &BTreeMap<String, PathBuf>,
    sources: &mut SourceMap,
    rollout_at: &mut dyn FnMut(&mut SourceMap, &Path, u64, u64) -> Span,
    index: &mut ThreadIndex,
) {
    let history = home.join(HISTORY_DB);
    if !history.is_file() || rows.is_empty() {
        return;
    }
    let Ok(cursors) = open_read_only(&history).and_then(|ro| read_cursors(&ro.conn)) else {
        return;
    };
    for c in cursors {
        let Some(file) = resolved.get(&c.thread_id) else {
            continue;
        };
        let Ok(offset) = u64::try_from(c.offset) else {
            continue;
        };
        let Some(landing) = land(file, offset) else {
            continue;
        };
        let problem = if offset > landing.len {
            Some(format!(
                "next_rollout_byte_offset {offset} is past the rollout's end ({} bytes)",
                landing.len
            ))
        } else if offset == landing.len {
            (c.ordinal != landing.next).then(|| {
                format!(
                    "the cursor is at the rollout's end, but next_rollout_ordinal is {} where the rollout's next ordinal is {} ({} records)",
                    c.ordinal, landing.next, landing.records
                )
            })
        } else {
            match landing.at {
                None => Some(format!(
                    "next_rollout_byte_offset {offset} is inside a record, not at the start of one"
                )),
                Some((_, _, ord)) if ord != c.ordinal => Some(format!(
                    "the record at byte {offset} has ordinal {ord}, but next_rollout_ordinal is {}",
                    c.ordinal
                )),
                Some(_) => None,
            }
        };
        let Some(detail) = problem else {
            continue;
        };
        let text = format!(
            "thread_id = '{}'  next_rollout_byte_offset = {}  next_rollout_ordinal = {}",
            c.thread_id, c.offset, c.ordinal
        );
        let v = sources.add_virtual(
            &history,
            format!(
                "thread_history_projection_state › thread_id = '{}'",
                c.thread_id
            ),
            text.clone(),
        );
        // The record at the cursor; past the end, the last record.
        let at = match (landing.at, landing.last) {
            (Some((o, l, _)), _) => rollout_at(sources, file, o, l.min(1)),
            (None, Some(last)) if offset >= landing.len => rollout_at(sources, file, last, 1),
            _ => rollout_at(sources, file, offset.min(landing.len), 0),
        };
        index.problems.push(IndexProblem {
            kind: Kind::ProjectionDrift,
            thread_id: Some(c.thread_id.clone()),
            row: Some(Span::new(v, 0, text.len() as u64)),
            rollout: Some(at),
            words: "the thread-history projection cursor does not match the rollout".into(),
            detail,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_from_names_and_tails() {
        assert_eq!(
            thread_id_of(Path::new(
                "/x/rollout-2026-11-28T20-48-58-01a223eb-145e-7562-9121-ab33480ae7fb.jsonl"
            ))
            .as_deref(),
            Some("01a223eb-145e-7562-9121-ab33480ae7fb")
        );
        assert!(is_uuid("01a223eb-145e-7562-9121-ab33480ae7fb"));
        assert!(!is_uuid("01a223eb-145e-7562-9121-ab33480ae7f"));
        assert_eq!(
            store_tail(Path::new("/old/.codex/sessions/2026/11/28/r.jsonl")),
            Some(PathBuf::from("sessions/2026/11/28/r.jsonl"))
        );
        assert_eq!(store_tail(Path::new("/old/x.jsonl")), None);
    }

    #[test]
    fn a_state_db_is_told_by_its_threads_table() {
        let mut head = b"SQLite format 3\0".to_vec();
        head.extend_from_slice(b"CREATE TABLE threads (\n id TEXT, rollout_path TEXT NOT NULL)");
        assert!(is_state_db_head(&head));
        assert!(!is_state_db_head(
            b"SQLite format 3\0CREATE TABLE session ("
        ));
    }
}
