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
pub use crate::session::damaged::{Damage, DamagedFile, FileKind};
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
        // A damaged session file (`damage`) still names a session: it is listed, without info.
        let text = read_text(&path)?;
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
    // A damaged file is left out: `damaged` reports it, and OpenCode's migration skips it too.
    let record = |path: &Path, sources: &mut SourceMap| -> std::io::Result<Option<StoredRecord>> {
        let bytes = std::fs::read(path)?;
        if damage_of(&bytes).is_some() {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let file = sources.add_file(path);
        Ok(Some(StoredRecord::new(
            stem(path),
            text,
            Place::At { file, offset: 0 },
        )))
    };
    let message_dir = [root.join("message"), root.join("session/message")]
        .into_iter()
        .map(|d| d.join(&session.id))
        .find(|d| d.is_dir());
    let mut messages: Vec<(i64, StoredMessage)> = Vec::new();
    for path in message_dir.as_deref().map(json_files).unwrap_or_default() {
        // A message whose file is damaged is skipped with its parts, as the migration skips them.
        let Some(info) = record(&path, sources)? else {
            continue;
        };
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
            parts.extend(record(&p, sources)?);
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

/// A file's text as OpenCode decodes it (invalid UTF-8 replaced, not refused).
fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Why `JSON.parse` would refuse these bytes, or `None` when they parse.
pub fn damage_of(bytes: &[u8]) -> Option<Damage> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Some(Damage::Empty);
    }
    if bytes.iter().all(|&b| b == 0) {
        return Some(Damage::AllNul);
    }
    let text = String::from_utf8_lossy(bytes);
    let e = serde_json::from_str::<serde::de::IgnoredAny>(&text).err()?;
    // `JSON.parse` takes a lone surrogate escape (`"\ud800"`) that serde_json refuses.
    if e.to_string().contains("surrogate") {
        return None;
    }
    if let Some(k) = memchr::memchr(0, bytes) {
        return Some(Damage::NulFrom { offset: k as u64 });
    }
    if e.is_eof() {
        return Some(Damage::Truncated {
            offset: bytes.len() as u64,
        });
    }
    let offset = crate::json::position::text_offset(&text, e.line(), e.column()).unwrap_or(0);
    // serde_json's message without its position (the offset says where).
    let reason = e.to_string();
    let reason = reason
        .split(" at line ")
        .next()
        .unwrap_or(&reason)
        .to_owned();
    Some(Damage::NotJson {
        offset: offset as u64,
        reason,
    })
}

/// Every `*.json` file under `dir`, in path order. Symbolic links are followed, as OpenCode
/// follows them when it reads the folder (a link to a damaged file is as damaged to it), and
/// each folder is walked once, so a link back up the tree does not make the walk go round.
fn json_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut seen = crate::FastSet::default();
    walk_json_files(dir, out, &mut seen);
}

fn walk_json_files(dir: &Path, out: &mut Vec<PathBuf>, seen: &mut crate::FastSet<PathBuf>) {
    if !seen.insert(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())) {
        return;
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    entries.sort_by_key(std::fs::DirEntry::path);
    for e in entries {
        let Ok(mut t) = e.file_type() else { continue };
        let p = e.path();
        if t.is_symlink() {
            // What the link names; a link to nothing is no file OpenCode lists.
            let Ok(meta) = std::fs::metadata(&p) else {
                continue;
            };
            t = meta.file_type();
        }
        if t.is_dir() {
            walk_json_files(&p, out, seen);
        } else if t.is_file() && p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// Every JSON file under the storage root that OpenCode cannot parse, in path order. A file that
/// cannot be read at all is an error (it says which).
pub fn damaged(root: &Path) -> std::io::Result<Vec<DamagedFile>> {
    let mut files = Vec::new();
    json_files_under(root, &mut files);
    let mut out = Vec::new();
    for path in files {
        let bytes = std::fs::read(&path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        let Some(damage) = damage_of(&bytes) else {
            continue;
        };
        let rel_path = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let rel = rel_path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        out.push(DamagedFile {
            kind: FileKind::of(&rel_path),
            len: bytes.len() as u64,
            damage,
            modified,
            rel,
            path,
        });
    }
    Ok(out)
}

/// The ids of a session's messages (their file names), to tell which damaged part files are its.
pub fn message_ids(root: &Path, session: &str) -> Vec<String> {
    [root.join("message"), root.join("session/message")]
        .into_iter()
        .flat_map(|d| json_files(&d.join(session)))
        .map(|p| stem(&p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_what_is_damaged() {
        assert_eq!(damage_of(b""), Some(Damage::Empty));
        assert_eq!(damage_of(b" \n"), Some(Damage::Empty));
        assert_eq!(damage_of(&[0; 413]), Some(Damage::AllNul));
        assert_eq!(
            damage_of(b"{\"id\":\"a\"}\0\0\0"),
            Some(Damage::NulFrom { offset: 10 })
        );
        assert_eq!(
            damage_of(b"{\"id\":\"a\",\"ti"),
            Some(Damage::Truncated { offset: 13 })
        );
        assert!(matches!(
            damage_of(b"{\"id\": x}"),
            Some(Damage::NotJson { offset: 7, .. })
        ));
        assert_eq!(damage_of(b"{\"id\":\"a\"}\n"), None);
        assert_eq!(damage_of(b"{\"t\":\"\\ud800\"}"), None);
        assert_eq!(damage_of("{\"t\":\"é\"}".as_bytes()), None);
    }

    #[test]
    fn kinds_come_from_where_the_file_lies() {
        for (rel, kind) in [
            ("project/p.json", FileKind::Project),
            ("session/global/ses_1.json", FileKind::Session),
            ("session/info/ses_1.json", FileKind::Session),
            ("message/ses_1/msg_1.json", FileKind::Message),
            ("part/msg_1/prt_1.json", FileKind::Part),
            ("session/message/ses_1/msg_1.json", FileKind::Message),
            ("session/part/ses_1/msg_1/prt_1.json", FileKind::Part),
            ("todo/ses_1.json", FileKind::Other),
            ("session_diff/ses_1.json", FileKind::Other),
        ] {
            assert_eq!(FileKind::of(Path::new(rel)), kind, "{rel}");
        }
    }
}
