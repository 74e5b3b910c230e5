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
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Some(Rewrite::Text(Layout::Document)),
        Some("jsonl") => Some(Rewrite::Text(Layout::Lines)),
        _ => None,
    }
}

/// Every file of a folder of `format` is rewritten as that format's files are (a storage
/// folder's JSON documents); `None` when its files are recognised one by one.
pub fn rewrite_folder(format: Option<Format>) -> Option<Rewrite> {
    format
        .filter(|f| f.is_folder())
        .map(|_| Rewrite::Text(Layout::Document))
}

fn first_byte(path: &Path) -> Option<u8> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f)
        .bytes()
        .map_while(Result::ok)
        .find(|b| !b.is_ascii_whitespace())
}
