//! Claude Code's transcript: `~/.claude/projects/<project>/<sessionId>.jsonl` (and a subagent's
//! `<sessionId>/subagents/agent-<agentId>.jsonl`), one record per line, appended as the session
//! goes.
//!
//! Conversation records (`user`, `assistant`, `system`, `attachment`, …) carry `uuid`,
//! `parentUuid` (null at a root) and `sessionId`; the file is a tree linked by those ids, not a
//! list. Bookkeeping records (`queue-operation`, `last-prompt` with its `leafUuid`, `mode`,
//! `summary`, …) carry no `uuid`. This module recognises the records and reads them line by
//! line (see [`super::jsonl`]); what they mean is `replay::claude_transcript`'s business.

use std::io::BufRead;

use serde_json::{Map, Value};

use super::IngestError;
use super::jsonl::{self, Line};
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
