//! What the formats' session folders share.

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
