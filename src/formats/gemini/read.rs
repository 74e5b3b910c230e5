//! Gemini CLI's session files (`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.json[l]`),
//! as its `chatRecordingService` writes and loads them (checked against 0.61.0 and 0.34.0):
//!
//! * **JSON lines** (0.61.0; since google-gemini/gemini-cli#23749): the first line is the
//!   metadata `{sessionId, projectHash, startTime, lastUpdated, kind, directories?}`; then one
//!   line per message record (`{id, timestamp, type, content, …}`, `type` `user`, `gemini`,
//!   `info`, `error`, `warning`), appended again with the same `id` each time it changes (its
//!   tokens, its `toolCalls`): the later record replaces the earlier in place. `{"$set": {…}}`
//!   updates the metadata; a `$set` of `messages` replaces the whole list. `{"$rewindTo": id}`
//!   drops that message and every later one. A line that does not parse is skipped silently.
//! * **legacy JSON** (0.34.0 and older): one pretty-printed document, the metadata with
//!   `messages[]`, rewritten whole on every change (`writeFileSync`, not atomic).
//!
//! The client reads a JSON-lines file first and falls back to one JSON document when no line
//! gave it a `sessionId` and a `projectHash`.

use serde_json::{Map, Value};

use crate::json::value::str_of;

/// What one JSON-lines record is, told as `loadConversationRecord` tells it (in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{"$rewindTo": id}`.
    Rewind,
    /// A message: a string `id`.
    Message,
    /// `{"$set": {…}}`.
    Set,
    /// Metadata: string `sessionId` and `projectHash`.
    Metadata,
    /// Anything else: the client ignores it.
    Unknown,
}

/// The kind of a JSON-lines record.
pub fn kind(obj: &Map<String, Value>) -> Kind {
    if str_of(obj, "$rewindTo").is_some() {
        Kind::Rewind
    } else if str_of(obj, "id").is_some() {
        Kind::Message
    } else if obj
        .get("$set")
        .is_some_and(|v| v.is_object() || v.is_array())
    {
        Kind::Set
    } else if str_of(obj, "sessionId").is_some() && str_of(obj, "projectHash").is_some() {
        Kind::Metadata
    } else {
        Kind::Unknown
    }
}

/// The keys of the message records Gemini CLI writes.
const MESSAGE_KEYS: &[&str] = &[
    "id",
    "timestamp",
    "type",
    "content",
    "displayContent",
    "thoughts",
    "tokens",
    "model",
    "toolCalls",
];

/// The keys of the metadata Gemini CLI writes (its first line, and `$set` records).
const METADATA_KEYS: &[&str] = &[
    "sessionId",
    "projectHash",
    "startTime",
    "lastUpdated",
    "kind",
    "directories",
    "summary",
    "memoryScratchpad",
    "messages",
];

/// Whether `obj` is one of Gemini CLI's records beyond doubt, for recognising a file whose
/// metadata line is lost: a message (a string `id` and `timestamp`, a `type` the client
/// writes, `content`, no key its messages lack) or a `$set` of its metadata's keys.
pub fn is_message_record(obj: &Map<String, Value>) -> bool {
    if let Some(set) = obj.get("$set").and_then(Value::as_object) {
        return obj.len() == 1
            && !set.is_empty()
            && set.keys().all(|k| METADATA_KEYS.contains(&k.as_str()));
    }
    str_of(obj, "id").is_some()
        && str_of(obj, "timestamp").is_some()
        && str_of(obj, "type").is_some_and(|t| MESSAGE_TYPES.contains(&t))
        && obj.contains_key("content")
        && obj.keys().all(|k| MESSAGE_KEYS.contains(&k.as_str()))
}

/// Whether the file is the legacy whole-file JSON: Gemini CLI pretty-prints it, so its first
/// non-blank line is `{` alone. (A legacy document on one line reads as a metadata record with
/// `messages`, which is how the client reads it too.)
pub fn is_legacy(first_line: &str) -> bool {
    first_line.trim() == "{"
}

/// The message types whose records the client sends to the model.
pub const MESSAGE_TYPES: &[&str] = &["user", "gemini", "info", "error", "warning"];

/// Whether a user message's text is one the client does not count or send: empty, a slash or
/// `?` command, or context it adds itself (`isIgnoredUserContent`).
pub fn is_ignored_user_text(text: &str) -> bool {
    let t = text.trim();
    t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>")
}

/// A message's content in words as the client renders it to decide what counts
/// (`partListUnionToString` with `verbose`): text as is, other parts as a `[…]` placeholder.
pub fn content_words(content: Option<&Value>) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => out.push_str(s),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(o) => {
                if let Some(t) = o.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                } else if !o.is_empty() {
                    out.push_str("[part]");
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    if let Some(v) = content {
        walk(v, &mut out);
    }
    out
}

/// Whether a message record counts as conversation for the resume picker
/// (`isResumableMessageRecord`): a user message that is not ignored, a Gemini message with
/// text, tool calls or thoughts.
pub fn is_resumable(obj: &Map<String, Value>) -> bool {
    let words = content_words(obj.get("content"));
    let len = |k: &str| obj.get(k).and_then(Value::as_array).map_or(0, Vec::len);
    match str_of(obj, "type") {
        Some("user") => !is_ignored_user_text(&words),
        Some("gemini") => !words.trim().is_empty() || len("toolCalls") > 0 || len("thoughts") > 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn records_are_told_apart_in_the_clients_order() {
        assert_eq!(
            kind(&obj(json!({"$rewindTo": "m1", "id": "x"}))),
            Kind::Rewind
        );
        assert_eq!(
            kind(&obj(json!({"id": "m1", "type": "user"}))),
            Kind::Message
        );
        assert_eq!(kind(&obj(json!({"$set": {"lastUpdated": "t"}}))), Kind::Set);
        assert_eq!(
            kind(&obj(json!({"sessionId": "s", "projectHash": "h"}))),
            Kind::Metadata
        );
        assert_eq!(kind(&obj(json!({"sessionId": "s"}))), Kind::Unknown);
    }

    #[test]
    fn the_picker_counts_prompts_and_replies_only() {
        assert!(is_resumable(&obj(
            json!({"type": "user", "content": [{"text": "hi"}]})
        )));
        assert!(!is_resumable(&obj(
            json!({"type": "user", "content": [{"text": "<session_context>\n…"}]})
        )));
        assert!(!is_resumable(&obj(
            json!({"type": "user", "content": "/help"})
        )));
        assert!(!is_resumable(&obj(
            json!({"type": "gemini", "content": ""})
        )));
        assert!(is_resumable(&obj(
            json!({"type": "gemini", "content": "", "toolCalls": [{"id": "c"}]})
        )));
        assert!(!is_resumable(&obj(json!({"type": "info", "content": "x"}))));
    }

    #[test]
    fn the_legacy_file_starts_with_a_brace_alone() {
        assert!(is_legacy("{"));
        assert!(!is_legacy(r#"{"sessionId":"s","projectHash":"h"}"#));
        assert!(!is_legacy(r#"{"sessionId":"s","proj"#));
    }
}
