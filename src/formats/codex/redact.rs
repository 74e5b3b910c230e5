//! What `rewind redact` must add for a Codex home: the thread-history projection's cursors
//! (`thread_history_1.sqlite`) are byte offsets into the rollouts, and redacting a rollout
//! changes its length. Each cursor of the redacted copy is moved to the same place — the same
//! line, and the same byte within it — in the redacted rollout, so the copy's projection agrees
//! with its rollouts exactly as the original's did (a cursor that was past its rollout's end
//! stays past it).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::index::HISTORY_DB;

/// Moves the cursors of the redacted home `output` (a copy of `input`, line for line) to the
/// places in its rollouts that they had in `input`'s. How many moved.
pub fn remap_cursors(input: &Path, output: &Path) -> Result<usize, rusqlite::Error> {
    let db = output.join(HISTORY_DB);
    if !db.is_file() {
        return Ok(0);
    }
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    let cursors: Vec<(String, i64)> = {
        let mut stmt = match conn.prepare(
            "SELECT thread_id, next_rollout_byte_offset FROM thread_history_projection_state",
        ) {
            Ok(stmt) => stmt,
            // Not the projection this knows: nothing to move.
            Err(_) => return Ok(0),
        };
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    let rollouts: Vec<PathBuf> = ["sessions", "archived_sessions"]
        .iter()
        .flat_map(|d| super::store::rollouts(&input.join(d)))
        .collect();
    let mut moved = 0;
    for (thread, offset) in cursors {
        let Some(from) = rollouts.iter().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&format!("{thread}.jsonl")))
        }) else {
            continue;
        };
        let Ok(rel) = from.strip_prefix(input) else {
            continue;
        };
        let (Ok(old), Ok(new)) = (std::fs::read(from), std::fs::read(output.join(rel))) else {
            continue;
        };
        let Some(at) = remap(&old, &new, offset) else {
            continue;
        };
        if at != offset {
            conn.execute(
                "UPDATE thread_history_projection_state SET next_rollout_byte_offset = ?1 WHERE thread_id = ?2",
                rusqlite::params![at, thread],
            )?;
            moved += 1;
        }
    }
    Ok(moved)
}

/// Where byte `offset` of `old` is in `new`, its copy line for line: the same line, the same
/// byte of it (kept within the line). `None` for an offset outside `old` (left as it is).
fn remap(old: &[u8], new: &[u8], offset: i64) -> Option<i64> {
    let offset = usize::try_from(offset).ok().filter(|&o| o <= old.len())?;
    let line = memchr::memchr_iter(b'\n', &old[..offset]).count();
    let old_start = line_start(old, line)?;
    let new_start = line_start(new, line)?;
    let new_end = memchr::memchr(b'\n', &new[new_start..]).map_or(new.len(), |e| new_start + e);
    let within = (offset - old_start).min(new_end - new_start);
    i64::try_from(new_start + within).ok()
}

/// The byte where line `n` (from 0) of `text` starts.
fn line_start(text: &[u8], n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    memchr::memchr_iter(b'\n', text).nth(n - 1).map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_keeps_its_line_and_byte() {
        let old = b"{\"a\":\"/home/somebody\"}\n{\"b\":1}\n";
        let new = b"{\"a\":\"~\"}\n{\"b\":1}\n";
        // The end of the file, the start of the second line, inside it, the start.
        assert_eq!(remap(old, new, old.len() as i64), Some(new.len() as i64));
        assert_eq!(remap(old, new, 23), Some(10));
        assert_eq!(remap(old, new, 25), Some(12));
        assert_eq!(remap(old, new, 0), Some(0));
        // Past the end: left alone.
        assert_eq!(remap(old, new, old.len() as i64 + 5), None);
    }
}
