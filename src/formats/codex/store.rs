//! Codex's sessions folder (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

use std::path::{Path, PathBuf};

use crate::formats::store::{head, sorted_entries};

/// The rollouts of a Codex sessions folder (`YYYY/MM/DD/rollout-*.jsonl`).
pub fn rollouts(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dirs = |p: &Path| -> Vec<PathBuf> {
        sorted_entries(p)
            .into_iter()
            .filter(|d| d.is_dir())
            .collect()
    };
    for year in dirs(root) {
        for month in dirs(&year) {
            for day in dirs(&month) {
                for f in sorted_entries(&day) {
                    let name = f
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if f.is_file() && name.starts_with("rollout-") && name.ends_with(".jsonl") {
                        out.push(f);
                    }
                }
            }
        }
    }
    out
}

/// The rollout of thread `id` in `root`: the file whose name ends with the id, else the one whose
/// first record (`session_meta`) names it.
pub fn session_file(root: &Path, id: &str) -> Option<PathBuf> {
    let files = rollouts(root);
    let by_name = files.iter().find(|f| {
        f.file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.ends_with(&format!("-{id}")))
    });
    if let Some(f) = by_name {
        return Some(f.clone());
    }
    let quoted = format!("\"{id}\"");
    files.into_iter().find(|f| {
        let head = head(f);
        let first = head.lines().next().unwrap_or_default();
        first.contains("\"session_meta\"") && first.contains(&quoted)
    })
}
