//! Codex's rollout: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<threadId>.jsonl`, one
//! `{timestamp, type, payload}` line per item (0.169.0 adds `ordinal`, 0, 1, 2, … per file).
//!
//! Types: `session_meta` (the header), `response_item` (the conversation as the Responses API
//! sees it: messages, `function_call`/`function_call_output`, `custom_tool_call`/…`_output`,
//! `reasoning`), `event_msg` (`task_started`, `task_complete`, `token_count`, …),
//! `turn_context`, `compacted`, and newer ones (`world_state`, `token_usage_record`). This module
//! recognises the lines and reads them (see [`super::jsonl`]); replay gives them meaning.

use std::io::BufRead;

use serde_json::{Map, Value};

use crate::core::IngestError;
use crate::json::lines::{self as jsonl, Line};
use crate::source::FileId;

/// Line types Codex writes.
pub const TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
    "token_usage_record",
];

/// Whether `obj` is a rollout line: a known `type`, an object `payload`, and no keys but
/// `timestamp`, `ordinal`, `type` and `payload`.
pub fn is_record(obj: &Map<String, Value>) -> bool {
    let known = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| TYPES.contains(&t));
    known
        && obj.get("payload").is_some_and(Value::is_object)
        && obj
            .keys()
            .all(|k| matches!(k.as_str(), "timestamp" | "ordinal" | "type" | "payload"))
}

/// Whether a line that does not parse (cut by the end of the head) looks like a rollout header.
pub fn looks_like_record(compact: &str) -> bool {
    compact.starts_with("{\"timestamp\":")
        && compact.contains("\"type\":\"session_meta\"")
        && compact.contains("\"payload\":")
}

/// Reads the rollout line by line.
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
    fn recognises_old_and_new_lines() {
        assert!(is_record(&obj(json!({
            "timestamp": "t", "ordinal": 0, "type": "session_meta", "payload": {"id": "x"}
        }))));
        assert!(is_record(&obj(json!({
            "timestamp": "t", "type": "response_item", "payload": {"type": "message"}
        }))));
        assert!(!is_record(&obj(
            json!({"type": "response.created", "response": {}})
        )));
        assert!(!is_record(&obj(json!({
            "timestamp": "t", "type": "event_msg", "payload": {}, "extra": 1
        }))));
    }
}
