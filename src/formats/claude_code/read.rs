//! Claude Code's transcript: `~/.claude/projects/<project>/<sessionId>.jsonl` (and a subagent's
//! `<sessionId>/subagents/agent-<agentId>.jsonl`), one record per line, appended as the session
//! goes.
//!
//! Conversation records (`user`, `assistant`, `system`, `attachment`, …) carry `uuid`,
//! `parentUuid` (null at a root) and `sessionId`; the file is a tree linked by those ids, not a
//! list. Bookkeeping records (`queue-operation`, `last-prompt` with its `leafUuid`, `mode`,
//! `summary`, …) carry no `uuid`. This module recognises the records and reads them line by
//! line (see [`super::jsonl`]); what they mean is `crate::formats::claude_code::replay`'s business.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::core::IngestError;
use crate::json::lines::{self as jsonl, Line};
use crate::source::FileId;

/// Record types that carry no `uuid` but are Claude Code's own (seen in 2.1.x transcripts).
const BOOKKEEPING: &[&str] = &[
    "queue-operation",
    "last-prompt",
    "mode",
    "summary",
    "pr-link",
    "custom-title",
    "tag",
    "file-history-snapshot",
];

/// Whether `obj` is a Claude Code transcript record.
pub fn is_record(obj: &Map<String, Value>) -> bool {
    let Some(ty) = obj.get("type").and_then(Value::as_str) else {
        return false;
    };
    let conversation = obj.contains_key("uuid")
        && obj.contains_key("parentUuid")
        && obj.get("sessionId").is_some_and(Value::is_string);
    let bookkeeping = BOOKKEEPING.contains(&ty)
        && (obj.get("sessionId").is_some_and(Value::is_string) || obj.contains_key("leafUuid"));
    conversation || bookkeeping
}

/// Whether a line that does not parse (cut by the end of the head) looks like a record.
pub fn looks_like_record(compact: &str) -> bool {
    compact.contains("\"parentUuid\":") && compact.contains("\"sessionId\":")
}

/// A subagent's `agent-<agentId>.meta.json` beside a session's transcript.
#[derive(Debug, Clone)]
pub struct SubagentMeta {
    pub path: PathBuf,
    pub agent_id: String,
    /// The `toolUseId` it names (the parent's Task/Agent call), and where its value is in the
    /// file (byte range).
    pub tool_use_id: Option<(String, (usize, usize))>,
    /// Its transcript `agent-<agentId>.jsonl` is there.
    pub transcript: bool,
}

/// Largest meta file read (they hold four short fields).
const MAX_META: u64 = 64 * 1024;

/// The subagent meta files of the session whose transcript is `path`
/// (`<dir>/<sessionId>.jsonl` → `<dir>/<sessionId>/subagents/agent-*.meta.json`), in name order.
/// Files that cannot be read or parsed are left out: they are not the transcript asked for.
pub fn subagent_metas(path: &Path) -> Vec<SubagentMeta> {
    let dir = path.with_extension("").join("subagents");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<SubagentMeta> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let agent_id = name.strip_prefix("agent-")?.strip_suffix(".meta.json")?;
            if e.metadata().ok()?.len() > MAX_META {
                return None;
            }
            let text = std::fs::read_to_string(e.path()).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            let tool_use_id = value
                .get("toolUseId")
                .and_then(Value::as_str)
                .and_then(|id| {
                    let at = crate::json::scan::locate(
                        &text,
                        &[crate::json::scan::Seg::Key("toolUseId")],
                    )?;
                    Some((id.to_owned(), at))
                });
            Some(SubagentMeta {
                transcript: dir.join(format!("agent-{agent_id}.jsonl")).is_file(),
                path: e.path(),
                agent_id: agent_id.to_owned(),
                tool_use_id,
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Reads the transcript line by line.
pub fn read<R: BufRead>(
    input: R,
    file: FileId,
    each: &mut dyn FnMut(Line),
) -> Result<(), IngestError> {
    jsonl::read(input, file, each)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn recognises_records_only() {
        assert!(is_record(&obj(json!({
            "type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s"
        }))));
        assert!(is_record(&obj(json!({
            "type": "queue-operation", "operation": "enqueue", "sessionId": "s"
        }))));
        assert!(is_record(&obj(
            json!({"type": "last-prompt", "leafUuid": "u1"})
        )));
        // stream-json output (`session_id`) and stream events are not records.
        assert!(!is_record(&obj(
            json!({"type": "assistant", "session_id": "s"})
        )));
        assert!(!is_record(&obj(json!({"type": "queue-operation"}))));
        assert!(!is_record(&obj(
            json!({"type": "message_start", "message": {}})
        )));
    }
}
