//! GitHub Copilot CLI's session: `~/.copilot/session-state/<sessionId>/events.jsonl`, one event
//! per line, `{type, data, id, timestamp, parentId}` (and `ephemeral`, `agentId` on some), each
//! event's `parentId` the id of the one before it.
//!
//! The event types are those of the client's own schema (`schemas/session-events.schema.json`
//! in the package of Copilot CLI 1.0.102). The client's reader (native, `events_jsonl_scan`)
//! splits on `\n` only: a U+2028 inside a string is read as part of it (checked with the real
//! client), so it is no damage here. What a crash or a faulty writer leaves, and the client
//! drops on resume (it then rewrites the file without those lines), is told apart here so that
//! replay can name it and repair can undo it: NUL bytes, an event split across lines by a raw
//! line break inside a string, two events on one line.

use std::io::BufRead;

use serde_json::{Map, Value};

use crate::core::IngestError;
use crate::json::lines::{self as jsonl, Line};
use crate::source::FileId;

/// The client version whose schema [`TYPES`] is.
pub const SCHEMA_VERSION: &str = "1.0.102";

/// The event types of Copilot CLI 1.0.102's schema.
pub const TYPES: &[&str] = &[
    "abort",
    "agent.interrupted",
    "assistant.fusion_phase_activity",
    "assistant.fusion_phase_completed",
    "assistant.fusion_phase_failed",
    "assistant.fusion_phase_started",
    "assistant.idle",
    "assistant.intent",
    "assistant.message",
    "assistant.message_delta",
    "assistant.message_start",
    "assistant.reasoning",
    "assistant.reasoning_delta",
    "assistant.server_tool_progress",
    "assistant.streaming_delta",
    "assistant.tool_call_delta",
    "assistant.turn_end",
    "assistant.turn_retry",
    "assistant.turn_start",
    "assistant.usage",
    "auto_mode_switch.completed",
    "auto_mode_switch.requested",
    "capabilities.changed",
    "command.completed",
    "command.execute",
    "command.queued",
    "commands.changed",
    "elicitation.completed",
    "elicitation.requested",
    "exit_plan_mode.completed",
    "exit_plan_mode.requested",
    "external_tool.completed",
    "external_tool.requested",
    "hook.end",
    "hook.progress",
    "hook.start",
    "human_response.recorded",
    "mcp.headers_refresh_completed",
    "mcp.headers_refresh_required",
    "mcp.oauth_completed",
    "mcp.oauth_recovery_completed",
    "mcp.oauth_required",
    "mcp.prompts.list_changed",
    "mcp.resources.list_changed",
    "mcp.tools.list_changed",
    "mcp_app.tool_call_complete",
    "model.call_failure",
    "model.call_final_result",
    "model.call_finished",
    "model.call_start",
    "pending_messages.modified",
    "permission.assentDetected",
    "permission.carriedForward",
    "permission.completed",
    "permission.contextualAuthorization",
    "permission.messageAuthorization",
    "permission.messageAuthorizationDegraded",
    "permission.messageAuthorizationRead",
    "permission.requested",
    "prompt_cache_break",
    "sampling.completed",
    "sampling.requested",
    "sandbox.decision",
    "session.auto_mode_resolved",
    "session.auto_tier_recommendation",
    "session.auto_tier_switch_failed",
    "session.autopilot_objective_changed",
    "session.autopilot_stopped",
    "session.background_tasks_changed",
    "session.binary_asset",
    "session.canvas.closed",
    "session.canvas.opened",
    "session.canvas.recorded",
    "session.canvas.registry_changed",
    "session.canvas.removed",
    "session.canvas.unavailable",
    "session.compaction_complete",
    "session.compaction_start",
    "session.completion_receipt",
    "session.context_changed",
    "session.context_cleared",
    "session.custom_agents_updated",
    "session.custom_notification",
    "session.error",
    "session.extensions.attachments_pushed",
    "session.extensions_loaded",
    "session.fusion_change_checkpoint",
    "session.fusion_commit_started",
    "session.fusion_completed",
    "session.fusion_handoff",
    "session.fusion_resolved",
    "session.fusion_route_failed",
    "session.fusion_route_started",
    "session.handoff",
    "session.idle",
    "session.indexed_search",
    "session.info",
    "session.managed_plugin_progress",
    "session.managed_settings_enforced",
    "session.managed_settings_resolved",
    "session.mcp_server_needs_reconnect",
    "session.mcp_server_removed",
    "session.mcp_server_status_changed",
    "session.mcp_server_tools_loaded",
    "session.mcp_servers_loaded",
    "session.memory_changed",
    "session.mode_changed",
    "session.mode_notice_delivered",
    "session.model_change",
    "session.model_deselected",
    "session.permission_recovery",
    "session.permissions_changed",
    "session.plan_changed",
    "session.quota_observation",
    "session.remote_steerable_changed",
    "session.request_body_compression_disabled",
    "session.resume",
    "session.schedule_cancelled",
    "session.schedule_created",
    "session.schedule_rearmed",
    "session.session_limits_changed",
    "session.shutdown",
    "session.skills_loaded",
    "session.snapshot_rewind",
    "session.start",
    "session.task_complete",
    "session.title_changed",
    "session.todos_changed",
    "session.tools_updated",
    "session.truncation",
    "session.usage_checkpoint",
    "session.usage_info",
    "session.usage_record",
    "session.warning",
    "session.workspace_file_changed",
    "session_limits_exhausted.completed",
    "session_limits_exhausted.requested",
    "skill.context_delivered",
    "skill.context_delivered_ref",
    "skill.invoked",
    "skill.invoked_ref",
    "subagent.completed",
    "subagent.configured",
    "subagent.deselected",
    "subagent.failed",
    "subagent.selected",
    "subagent.started",
    "system.message",
    "system.notification",
    "tool.execution_complete",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "tool.execution_start",
    "tool.shell_output",
    "tool.user_requested",
    "tool_search.activated",
    "ui.ephemeral_query",
    "user.message",
    "user_input.completed",
    "user_input.requested",
    "workflow.run_settled",
    "workflow.run_started",
    "workflow.run_updated",
];

/// The envelope's keys in the schema.
const ENVELOPE: &[&str] = &[
    "type",
    "data",
    "id",
    "timestamp",
    "parentId",
    "ephemeral",
    "agentId",
];

/// Whether `ty` is an event type of the schema.
pub fn is_known_type(ty: &str) -> bool {
    TYPES.binary_search(&ty).is_ok()
}

/// Whether `ty` looks like an event type of a newer client: a known type's namespace (`session.`,
/// `tool.` …) and a name of lowercase letters and underscores.
pub fn is_plausible_type(ty: &str) -> bool {
    let Some((ns, name)) = ty.split_once('.') else {
        return false;
    };
    let word = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    word(ns)
        && name
            .split('.')
            .all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        && TYPES
            .iter()
            .any(|t| t.split_once('.').is_some_and(|(n, _)| n == ns))
}

/// Whether `key` is one of the envelope's keys in the schema.
pub fn is_envelope_key(key: &str) -> bool {
    ENVELOPE.contains(&key)
}

/// Whether `obj` is a Copilot CLI event: the envelope's required keys (a string `type` of the
/// schema or a plausible newer one, an object `data`, a string `id` and `timestamp`, a string or
/// null `parentId`). A key the envelope does not have is a newer client's (replay notes it), as
/// long as the required ones are there.
pub fn is_record(obj: &Map<String, Value>) -> bool {
    let ty = obj.get("type").and_then(Value::as_str);
    ty.is_some_and(|t| is_known_type(t) || is_plausible_type(t))
        && obj.get("data").is_some_and(Value::is_object)
        && obj.get("id").is_some_and(Value::is_string)
        && obj.get("timestamp").is_some_and(Value::is_string)
        && obj
            .get("parentId")
            .is_some_and(|p| p.is_string() || p.is_null())
}

/// Whether a line cut by the end of the head looks like the session's first event.
pub fn looks_like_record(compact: &str) -> bool {
    compact.starts_with("{\"type\":\"session.start\",\"data\":{")
        && compact.contains("\"producer\":\"copilot-agent\"")
}

/// Reads the events line by line.
pub fn read<R: BufRead>(
    input: R,
    file: FileId,
    each: &mut dyn FnMut(Line),
) -> Result<(), IngestError> {
    jsonl::read(input, file, each)
}

/// How many NUL bytes start `text`, and whether it is nothing else (with blanks).
pub fn leading_nuls(text: &[u8]) -> Option<(usize, bool)> {
    let n = text.iter().take_while(|&&b| b == 0).count();
    (n > 0).then(|| {
        let rest = &text[n..];
        (n, rest.iter().all(|&b| b == 0 || b.is_ascii_whitespace()))
    })
}

/// An event of a line that holds several: its start and end in the line's text, and itself.
pub type Piece = (usize, usize, Map<String, Value>);

/// The events of a line that holds more than one, each with its byte range in `text`; `None`
/// when the line is not two or more events one after the other.
pub fn concatenated(text: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut start = 0;
    while let Some(next) = stream.next() {
        let Ok(Value::Object(o)) = next else {
            return None;
        };
        let end = stream.byte_offset();
        let from = start + text[start..end].len() - text[start..end].trim_start().len();
        if !is_record(&o) {
            return None;
        }
        out.push((from, end, o));
        start = end;
    }
    (out.len() > 1 && text[start..].trim().is_empty()).then_some(out)
}

/// Whether a line's parser error says the line ended inside the value (a string or an object
/// left open): the first piece of an event a raw line break split.
pub fn ends_open(reason: &str) -> bool {
    reason.starts_with("EOF while parsing")
}

/// The event `pieces` make when joined with `\n` written as an escape (the raw line breaks
/// that split it), if they make one.
pub fn rejoin(pieces: &[&str]) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(&pieces.join("\\n")) {
        Ok(Value::Object(o)) if is_record(&o) => Some(o),
        _ => None,
    }
}

/// Longest run of lines rejoined into one event.
pub const MAX_PIECES: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_schema_types_are_sorted_for_the_search() {
        assert!(TYPES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn recognises_events_and_not_their_neighbours() {
        let ev = |ty: &str| {
            obj(json!({"type": ty, "data": {}, "id": "a", "timestamp": "t", "parentId": null}))
        };
        assert!(is_record(&ev("session.start")));
        assert!(is_record(&ev("tool.execution_complete")));
        // A newer client's event in a known namespace.
        assert!(is_record(&ev("session.future_thing")));
        // Responses API stream events and agent-log events are not Copilot's.
        assert!(!is_record(&ev("response.created")));
        assert!(!is_record(&ev("tool_use")));
        // A newer client's envelope key does not make it another format's.
        let mut extra = ev("session.start");
        extra.insert("sessionId".into(), json!("s1"));
        assert!(is_record(&extra));
        assert!(!is_envelope_key("sessionId"));
        assert!(!is_record(&obj(
            json!({"type": "session.start", "data": {}, "id": "a", "timestamp": "t"})
        )));
    }

    #[test]
    fn splits_concatenated_events_and_rejoins_split_ones() {
        let a = r#"{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"a","timestamp":"t","parentId":null}"#;
        let b = r#"{"type":"session.shutdown","data":{},"id":"b","timestamp":"t","parentId":"a"}"#;
        let both = format!("{a}{b}");
        let pieces = concatenated(&both).unwrap_or_default();
        assert_eq!(pieces.len(), 2);
        assert_eq!(&both[pieces[1].0..pieces[1].1], b);
        assert!(concatenated(a).is_none());
        let split = r#"{"type":"tool.execution_complete","data":{"result":{"content":"hi"#;
        let rest = r#"there"}},"id":"c","timestamp":"t","parentId":"b"}"#;
        let joined = rejoin(&[split, rest]);
        assert_eq!(
            joined
                .as_ref()
                .and_then(|o| o.get("data"))
                .and_then(|d| d.pointer("/result/content"))
                .and_then(Value::as_str),
            Some("hi\nthere")
        );
        assert_eq!(leading_nuls(b"\0\0\0"), Some((3, true)));
        assert_eq!(leading_nuls(b"\0{}"), Some((1, false)));
        assert_eq!(leading_nuls(b"{}"), None);
    }
}
