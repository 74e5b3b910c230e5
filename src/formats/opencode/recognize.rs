//! OpenCode's stores are recognised by SQLite's file signature (a database), a storage folder's
//! layout, an export's first key (`info`) or its `info` and `messages` on one line, and the SQL
//! statements that create OpenCode's tables (a dump).

use std::path::Path;

use crate::core::Format;
use crate::formats::recognize::{Claim, Evidence, Head, RecordLine, first_key, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    let Some(text) = head.text else {
        if head.bytes.starts_with(crate::ingest::input::SQLITE_HEADER) {
            return vec![Claim::new(
                Format::OpencodeDb,
                Evidence::Magic,
                "SQLite's file header",
            )];
        }
        return Vec::new();
    };
    let mut claims = Vec::new();
    if head.first_is_object() {
        // An export's first key is `info`, however long its title or however far its
        // `messages` lie; no agent, stream or recording object starts with it.
        if first_key(text.trim_start()) == Some("info") {
            claims.push(Claim::new(
                Format::OpencodeExport,
                Evidence::FirstKey,
                "a document whose first key is `info`",
            ));
        }
        claims.extend(first_record(
            head,
            Format::OpencodeExport,
            "an export's `info` and `messages`",
            |line| match line {
                RecordLine::Object(obj) => obj.contains_key("info") && obj.contains_key("messages"),
                _ => false,
            },
        ));
        if head.probe_compact.starts_with("{\"info\":") && head.probe_has("messages") {
            claims.push(Claim::new(
                Format::OpencodeExport,
                Evidence::PrettyDocument,
                "a pretty-printed export",
            ));
        }
    }
    if is_sql_dump(text) {
        claims.push(Claim::new(
            Format::OpencodeSqlDump,
            Evidence::SqlDump,
            "SQL statements creating OpenCode's tables",
        ));
    }
    claims
}

/// A folder is OpenCode's legacy storage when it (or its `storage/`) holds `session/` and
/// `message/`.
pub fn recognize_folder(path: &Path) -> Vec<Claim> {
    super::storage::root(path)
        .map(|_| {
            Claim::new(
                Format::OpencodeStorage,
                Evidence::Folder,
                "`session/` and `message/` folders",
            )
        })
        .into_iter()
        .collect()
}

/// Whether `text` starts like an SQL dump (`sqlite3 DB .dump`) of a database with OpenCode's
/// `message` or `part` table.
fn is_sql_dump(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("--"))
        .unwrap_or_default()
        .to_ascii_uppercase();
    let sql = ["PRAGMA ", "BEGIN", "CREATE TABLE", "INSERT INTO"]
        .iter()
        .any(|k| first.starts_with(k));
    let opencode = ["message", "part"].iter().any(|t| {
        [
            format!("CREATE TABLE `{t}`"),
            format!("CREATE TABLE {t} "),
            format!("CREATE TABLE \"{t}\""),
            format!("CREATE TABLE IF NOT EXISTS `{t}`"),
        ]
        .iter()
        .any(|p| text.contains(p.as_str()))
    });
    sql && opencode
}
