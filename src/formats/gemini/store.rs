//! Gemini CLI's session folders: `<home>/.gemini/tmp/<project>/chats/session-*.json[l]`, where
//! `<home>` is `$GEMINI_CLI_HOME`, else the home folder (Gemini CLI 0.61.0's `homedir()`), and
//! `<project>` a short name (0.61.0, mapped in `~/.gemini/projects.json`) or the project's
//! SHA-256 hash (older versions). Subagents' sessions in `chats/<parent>/` are not the picker's
//! and are not listed.

use std::path::{Path, PathBuf};

use crate::formats::store::sorted_entries;

/// Whether `name` is a session file the resume picker reads (`session-*.json` or `.jsonl`).
pub fn is_session_name(name: &str) -> bool {
    name.starts_with("session-") && (name.ends_with(".json") || name.ends_with(".jsonl"))
}

/// The session files under `root`: `root` is `~/.gemini/tmp` (`<project>/chats/session-*`), one
/// project's folder (`chats/session-*`) or a `chats` folder.
pub fn sessions(root: &Path) -> Vec<PathBuf> {
    let in_chats = |chats: &Path| -> Vec<PathBuf> {
        sorted_entries(chats)
            .into_iter()
            .filter(|f| {
                f.is_file()
                    && f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_session_name)
            })
            .collect()
    };
    if root.file_name().is_some_and(|n| n == "chats") {
        return in_chats(root);
    }
    if root.join("chats").is_dir() {
        return in_chats(&root.join("chats"));
    }
    sorted_entries(root)
        .into_iter()
        .filter(|d| d.join("chats").is_dir())
        .flat_map(|d| in_chats(&d.join("chats")))
        .collect()
}

/// The session file of session `id` (its full id or the 8 characters the file name carries)
/// under `root`: the file whose name ends with the id's first 8 characters and whose metadata
/// names it, the newest such file first (a legacy file resumed by a newer client has a `.jsonl`
/// twin).
pub fn session_file(root: &Path, id: &str) -> Option<PathBuf> {
    let short: String = id.chars().take(8).collect();
    if short.is_empty() {
        return None;
    }
    let mut found: Vec<PathBuf> = sessions(root)
        .into_iter()
        .filter(|f| {
            f.file_stem()
                .and_then(|s| s.to_str())
                .is_some_and(|s| s.ends_with(&format!("-{short}")))
        })
        .filter(|f| {
            let head = crate::formats::store::head(f);
            id.len() <= 8 || head.contains(&format!("\"{id}\""))
        })
        .collect();
    found.sort_by_key(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok());
    found.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pickers_files_are_sessions() {
        assert!(is_session_name("session-2026-11-28T20-13-5048dce3.jsonl"));
        assert!(is_session_name("session-2026-11-28T20-14-2d8cd05d.json"));
        assert!(!is_session_name("5048dce3.jsonl"));
        assert!(!is_session_name("session-x.jsonl.rewind-backup-1"));
    }
}
