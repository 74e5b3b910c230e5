//! What the formats' session folders share.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The entries of `dir`, sorted by path (none when it cannot be read).
pub fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

/// The first 64 KiB of the file at `path`, as text (lossily; empty when it cannot be read): where
/// a transcript's first records say which session it holds.
pub fn head(path: &Path) -> String {
    let mut head = Vec::new();
    let _ = std::fs::File::open(path).and_then(|f| f.take(64 * 1024).read_to_end(&mut head));
    String::from_utf8_lossy(&head).into_owned()
}
