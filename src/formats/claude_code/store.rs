//! Claude Code's projects folder (`~/.claude/projects`): one folder per project, a transcript
//! per session named by its id, subagents' transcripts beside it.

use std::path::{Path, PathBuf};

use crate::formats::store::{head, sorted_entries};

/// The transcripts of a Claude Code projects folder (or of one project's folder): sessions and
/// their subagents.
pub fn transcripts(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // The folder given may be one project's folder as well as the projects folder.
    let projects = std::iter::once(root.to_path_buf())
        .chain(sorted_entries(root).into_iter().filter(|p| p.is_dir()));
    for project in projects {
        let entries = sorted_entries(&project);
        // The sessions first, then their subagents.
        for entry in &entries {
            if entry.is_file() && entry.extension().is_some_and(|x| x == "jsonl") {
                out.push(entry.clone());
            }
        }
        for entry in entries {
            if entry.is_dir() {
                for agent in sorted_entries(&entry.join("subagents")) {
                    let name = agent
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if agent.is_file() && name.starts_with("agent-") && name.ends_with(".jsonl") {
                        out.push(agent);
                    }
                }
            }
        }
    }
    out
}

/// The transcript of session `id` in `root` (a projects folder, or one project's folder): Claude
/// Code names each file by its session's id; a file named otherwise is found by the `sessionId`
/// of its first records.
pub fn session_file(root: &Path, id: &str) -> Option<PathBuf> {
    let files = transcripts(root);
    if let Some(f) = files
        .iter()
        .find(|f| f.file_stem().is_some_and(|s| s == id))
    {
        return Some(f.clone());
    }
    // A renamed or copied file: the first records name the session.
    let quoted = format!("\"sessionId\":\"{id}\"");
    files.into_iter().find(|f| head(f).contains(&quoted))
}
