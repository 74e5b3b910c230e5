//! Redacting an OpenCode (or Kilo) database: a copy made with `VACUUM INTO`, every text cell
//! rewritten through the structural pass (a JSON `data` column is read as JSON, any other text
//! with the patterns, since the scanner reads both) in one transaction, then `VACUUM` so that no
//! freed page keeps a secret, and no journal or WAL is left beside the copy.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, types::ValueRef};

use super::db::{DbError, open_read_only};
use crate::redact::Redactor;
use crate::redact::scan::Scanner;

/// The tables of a database and their text-bearing columns, in the file's order.
fn tables(conn: &Connection) -> Result<Vec<(String, Vec<String>)>, DbError> {
    let mut out = Vec::new();
    let names: Vec<String> = {
        let mut stmt = conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY rowid",
        )?;
        stmt.query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<_, _>>()?
    };
    for name in names {
        let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quote(&name)))?;
        let columns: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(1))?
            .collect::<Result<_, _>>()?;
        out.push((name, columns));
    }
    Ok(out)
}

/// An SQL identifier, quoted.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Redacts every text cell of `conn`'s tables; with `write`, stores the redacted cells.
fn redact_cells(
    conn: &Connection,
    r: &mut Redactor,
    label: &str,
    write: bool,
) -> Result<(), DbError> {
    for (table, columns) in tables(conn)? {
        if columns.is_empty() {
            continue;
        }
        let list = columns
            .iter()
            .map(|c| quote(c))
            .collect::<Vec<_>>()
            .join(", ");
        let mut updates: Vec<(i64, usize, String)> = Vec::new();
        {
            let mut stmt = conn.prepare(&format!(
                "SELECT rowid, {list} FROM {} ORDER BY rowid",
                quote(&table)
            ))?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let rowid: i64 = row.get(0)?;
                for (k, column) in columns.iter().enumerate() {
                    // Ids and times are kept, as they are in JSON.
                    if crate::redact::detect::is_kept_key(column) {
                        continue;
                    }
                    let ValueRef::Text(text) = row.get_ref(k + 1)? else {
                        continue;
                    };
                    r.set_place(
                        label,
                        format!("table {table}, row {rowid}, column {column}"),
                    );
                    if let Some(new) = Scanner::new().redact(r, text) {
                        updates.push((rowid, k, String::from_utf8_lossy(&new).into_owned()));
                    }
                }
            }
        }
        if write {
            for (rowid, k, value) in updates {
                conn.execute(
                    &format!(
                        "UPDATE {} SET {} = ?1 WHERE rowid = ?2",
                        quote(&table),
                        quote(&columns[k])
                    ),
                    rusqlite::params![value, rowid],
                )?;
            }
        }
    }
    Ok(())
}

/// Lists what redacting the database at `path` would replace, writing nothing.
pub fn dry_run(path: &Path, r: &mut Redactor, label: &str) -> Result<(), DbError> {
    // Any SQLite database (Codex's state and history databases too), opened as a diagnosis
    // opens one: read-only, its WAL included, nothing beside it touched.
    let db = open_read_only(path)?;
    redact_cells(&db.conn, r, label, false)
}

/// Writes a redacted copy of the database at `path` to `out` (a new file's path, removed by
/// the caller on error).
pub fn redact(path: &Path, out: &Path, r: &mut Redactor, label: &str) -> Result<(), DbError> {
    {
        let db = open_read_only(path)?;
        db.conn
            .execute("VACUUM INTO ?1", [out.to_string_lossy().as_ref()])?;
    }
    let mut conn = Connection::open_with_flags(
        out,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA secure_delete = ON")?;
    let tx = conn.transaction()?;
    redact_cells(&tx, r, label, true)?;
    tx.commit()?;
    // Freed pages and the slack of rewritten ones would still hold the old text.
    conn.execute_batch("VACUUM")?;
    conn.close().map_err(|(_, e)| DbError::from(e))?;
    Ok(())
}
