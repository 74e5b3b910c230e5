//! Copilot CLI's sessions folder: `$COPILOT_HOME/session-state`, else
//! `~/.copilot/session-state`, one folder per session (`<sessionId>/events.jsonl`, beside it
//! `workspace.yaml`, `checkpoints/`, `files/`). The legacy flat sessions
//! (`history-session-state/<id>.json`) are not read: Copilot CLI 1.0.102 no longer reads them
//! either.

use std::path::{Path, PathBuf};

use crate::formats::store::sorted_entries;

/// The `events.jsonl` of each session folder of `root` (a `session-state` folder).
pub fn sessions(root: &Path) -> Vec<PathBuf> {
    sorted_entries(root)
        .into_iter()
        .filter(|d| d.is_dir())
        .map(|d| d.join("events.jsonl"))
        .filter(|f| f.is_file())
        .collect()
}

/// The events of session `id` in `root`: `root/<id>/events.jsonl`.
pub fn session_file(root: &Path, id: &str) -> Option<PathBuf> {
    if id.is_empty() || id.contains(['/', '\\']) || id == "." || id == ".." {
        return None;
    }
    let f = root.join(id).join("events.jsonl");
    f.is_file().then_some(f)
}
