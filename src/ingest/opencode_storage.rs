//! The legacy JSON storage folder (`~/.local/share/opencode/storage/`, `opencode-storage.md`
//! §1.6): one file per session, message and part.
//!
//! ```text
//! session/<projectID>/<sessionID>.json     (older: session/info/<sessionID>.json)
//! message/<sessionID>/<messageID>.json     (older: session/message/<sessionID>/<messageID>.json)
//! part/<messageID>/<partID>.json           (older: session/part/<sessionID>/<messageID>/<partID>.json)
//! ```
//!
//! As in OpenCode's own migration, ids come from file names, not from the JSON. Files are read one
//! session at a time.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::stored::{Place, StoredMessage, StoredRecord, StoredSession};
use crate::source::SourceMap;

/// The storage root under `path` (`path` itself or `path/storage`), if it looks like one.
pub fn root(path: &Path) -> Option<PathBuf> {
    [path.join("storage"), path.to_path_buf()]
        .into_iter()
        .find(|r| {
            r.join("session").is_dir()
                && (r.join("message").is_dir() || r.join("session/message").is_dir())
        })
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    out.sort();
    out
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A session file found in the folder.
#[derive(Clone, Debug)]
pub struct SessionFile {
    pub id: String,
    #[allow(
        dead_code,
        reason = "where the session file is; errors name the file by id"
    )]
    pub path: PathBuf,
    pub info: Value,
}

/// Every session file, oldest first.
pub fn sessions(root: &Path) -> std::io::Result<Vec<SessionFile>> {
    let mut files = json_files(&root.join("session/info"));
    for d in subdirs(&root.join("session")) {
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
        if matches!(name.as_deref(), Some("info" | "message" | "part")) {
            continue;
        }
        files.extend(json_files(&d));
    }
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let info = serde_json::from_str(&text).unwrap_or(Value::Null);
        out.push(SessionFile {
            id: stem(&path),
            path,
            info,
        });
    }
    let created = |s: &SessionFile| {
        s.info
            .get("time")
            .and_then(|t| t.get("created"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    out.sort_by(|a, b| created(a).cmp(&created(b)).then(a.id.cmp(&b.id)));
    Ok(out)
}

/// Reads one session's messages and parts, registering each file as a source.
pub fn load(
    root: &Path,
    session: &SessionFile,
    sources: &mut SourceMap,
) -> std::io::Result<StoredSession> {
    let mut stored = StoredSession {
        // The id the file is named by, which is what OpenCode looks sessions up by.
        id: session.id.clone(),
        ..StoredSession::from_info(&session.info)
    };
    let record = |path: &Path, sources: &mut SourceMap| -> std::io::Result<StoredRecord> {
        let text = std::fs::read_to_string(path)?;
        let file = sources.add_file(path);
        Ok(StoredRecord::new(
            stem(path),
            text,
            Place::At { file, offset: 0 },
        ))
    };
    let message_dir = [root.join("message"), root.join("session/message")]
        .into_iter()
        .map(|d| d.join(&session.id))
        .find(|d| d.is_dir());
    let mut messages: Vec<(i64, StoredMessage)> = Vec::new();
    for path in message_dir.as_deref().map(json_files).unwrap_or_default() {
        let info = record(&path, sources)?;
        let created = serde_json::from_str::<Value>(&info.text)
            .ok()
            .and_then(|v| v.get("time")?.get("created")?.as_i64())
            .unwrap_or(0);
        let id = info.id.clone();
        let part_dir = [
            root.join("part").join(&id),
            root.join("session/part").join(&session.id).join(&id),
        ]
        .into_iter()
        .find(|d| d.is_dir());
        let mut parts = Vec::new();
        for p in part_dir.as_deref().map(json_files).unwrap_or_default() {
            parts.push(record(&p, sources)?);
        }
        parts.sort_by(|a, b| a.id.cmp(&b.id));
        messages.push((
            created,
            StoredMessage {
                id,
                info: Some(info),
                parts,
            },
        ));
    }
    messages.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    stored.messages = messages.into_iter().map(|(_, m)| m).collect();
    Ok(stored)
}
