//! How `rewind redact` rewrites each kind of input: the formats' knowledge of their layout
//! (the rewriting itself is `crate::redact`'s structural pass, and the database's is
//! [`super::opencode::redact`]).

use std::io::{BufReader, Read};
use std::path::Path;

use crate::core::Format;
use crate::redact::file::Layout;

/// How an input is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// Text, line by line, with this layout.
    Text(Layout),
    /// An SQLite database, cell by cell.
    Database,
}

/// How a file of `format` at `path` is rewritten, or why it cannot be (in words, after "it
/// is …").
pub fn rewrite(format: Format, path: &Path) -> Result<Rewrite, String> {
    // A database is rewritten cell by cell whatever claimed it: as text it would be ruined.
    if crate::ingest::input::is_sqlite_file(path) {
        return Ok(Rewrite::Database);
    }
    Ok(match format {
        Format::EventStream => {
            return Err(format!(
                "{}: its frames carry checksums a rewrite would break, so rewind does not redact it",
                format.describe()
            ));
        }
        Format::OpencodeDb => Rewrite::Database,
        // One JSON document over many lines.
        Format::HttpRecording | Format::Har | Format::OpencodeExport | Format::OpencodeStorage => {
            Rewrite::Text(Layout::Document)
        }
        // A JSON array (Claude Code's `claude-execution-output.json`) is one document too.
        _ if first_byte(path) == Some(b'[') => Rewrite::Text(Layout::Document),
        _ => Rewrite::Text(Layout::Lines),
    })
}

/// How a file in a folder that no format claims is rewritten: JSON (a subagent's meta file)
/// as a document; anything else is left out.
pub fn rewrite_unclaimed(path: &Path) -> Option<Rewrite> {
    if crate::ingest::input::is_sqlite_file(path) {
        // A database beside the sessions (Codex's `thread_history_1.sqlite`).
        return Some(Rewrite::Database);
    }
    match path.extension().and_then(|e| e.to_str()) {
        // A store's database file that is no database (Codex's `state_5.sqlite` after "file is
        // not a database"): its text, with the patterns, so that the copy is as unreadable.
        Some("sqlite" | "db") => Some(Rewrite::Text(Layout::Lines)),
        Some("json") => Some(Rewrite::Text(Layout::Document)),
        Some("jsonl") => Some(Rewrite::Text(Layout::Lines)),
        _ => None,
    }
}

/// Every file of a folder of `format` is rewritten as that format's files are (a storage
/// folder's JSON documents); `None` when its files are recognised one by one.
pub fn rewrite_folder(format: Option<Format>) -> Option<Rewrite> {
    // A Codex home holds databases and rollouts: its files are recognised one by one.
    format
        .filter(|&f| f == Format::OpencodeStorage)
        .map(|_| Rewrite::Text(Layout::Document))
}

fn first_byte(path: &Path) -> Option<u8> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f)
        .bytes()
        .map_while(Result::ok)
        .find(|b| !b.is_ascii_whitespace())
}

/// What a folder of `format` needs once its files are redacted into `output`: a Codex home's
/// projection cursors moved to the same places in its redacted rollouts
/// ([`super::codex::redact::remap_cursors`]). `Err` says what could not be done.
pub fn finish_folder(format: Option<Format>, input: &Path, output: &Path) -> Result<(), String> {
    if format != Some(Format::CodexState) {
        return Ok(());
    }
    super::codex::redact::remap_cursors(input, output)
        .map(|_| ())
        .map_err(|e| format!("the projection cursors of the copy could not be moved to its redacted rollouts ({e})"))
}
