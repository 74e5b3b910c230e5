//! An agent log is recognised by a wrapper's line prefixes or header, by a line that is an
//! agent's record, or by an agent's objects after a preamble (a shell transcript, a command log's
//! header, test-runner output).

use serde_json::{Map, Value};

use crate::core::Format;
use crate::formats::recognize::{Claim, Evidence, Head, RecordLine, first_record, scan_values};

/// Types of the objects an agent writes (`agent-log-format.md` §2.2).
const AGENT_TYPES: &[&str] = &[
    "log",
    "status",
    "input",
    "step_start",
    "step_finish",
    "tool_use",
    "text",
    "reasoning",
    "session_idle",
    "permission_request",
    "model_resolved",
];

/// Markers of provider stream events, which a cut line of a stream capture still shows.
pub const STREAM_MARKERS: &[&str] = &[
    "\"object\":\"chat.completion.chunk\"",
    "\"type\":\"response.",
    "\"type\":\"message_",
    "\"type\":\"content_block_",
];

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    let Some(text) = head.text else {
        return Vec::new();
    };
    let mut claims = Vec::new();
    if head
        .lines
        .iter()
        .any(|l| super::read::prefix_len(l.as_bytes()).is_some())
        || text.starts_with("Solution draft log")
        || text.starts_with("# Solve.mjs Log")
    {
        claims.push(Claim::new(
            Format::AgentLog,
            Evidence::Wrapper,
            "a wrapper's timestamped line prefixes",
        ));
    }
    claims.extend(first_record(
        head,
        Format::AgentLog,
        "an agent's log entry or event",
        |line| match line {
            RecordLine::Object(obj) => agent_object(obj),
            // A cut line that names a session and is no stream event.
            RecordLine::Cut(compact) => {
                !STREAM_MARKERS.iter().any(|m| compact.contains(m))
                    && compact.contains("\"sessionID\"")
            }
            RecordLine::Other => false,
        },
    ));
    if let Some(claim) = array_of_records(text) {
        claims.push(claim);
    }
    if scan_values(text, agent_object).found > 0 {
        claims.push(Claim::new(
            Format::AgentLog,
            Evidence::Objects,
            "an agent's object after a preamble",
        ));
    }
    // Mentions stand for records only where no record can be read whole: a pretty-printed
    // document, a line cut by the head's end. A first line that is a whole object not an
    // agent's (a recorded request whose messages hold `"type":"text"`) is no agent log.
    let first_is_whole = matches!(head.records.first(), Some(RecordLine::Object(_)));
    if head.first_is_object() && !first_is_whole {
        let compact = &head.probe_compact;
        let mentions = head.probe_has("sessionID")
            || (head.probe_has("service") && head.probe_has("message"))
            || AGENT_TYPES
                .iter()
                .any(|t| compact.contains(&format!("\"type\":\"{t}\"")));
        if mentions {
            claims.push(Claim::new(
                Format::AgentLog,
                Evidence::Mentions,
                "an agent's keys in a pretty-printed document",
            ));
        }
    }
    claims
}

/// Elements of a JSON array looked at in the head.
const ARRAY_ELEMENTS: usize = 50;

/// An agent's records as the elements of one JSON array: what `claude-code-action` keeps of a
/// Claude Code run (`claude-execution-output.json`, the `stream-json` messages collected into an
/// array), compact or pretty-printed. The array claims the input as records do, with how many
/// of the elements in the head fit.
fn array_of_records(text: &str) -> Option<Claim> {
    if !crate::protocols::array::starts_array_of_objects(text) {
        return None;
    }
    let elements = crate::protocols::array::head_elements(text, ARRAY_ELEMENTS);
    let fit: Vec<bool> = elements
        .iter()
        .map(|e| serde_json::from_str::<Map<String, Value>>(e).is_ok_and(|o| agent_object(&o)))
        .collect();
    let fitting = fit.iter().filter(|&&f| f).count();
    let at = fit.iter().position(|&f| f)?;
    Some(Claim::record(
        Format::AgentLog,
        at,
        fitting,
        format!(
            "an agent's records as a JSON array (element {}; {fitting} of {} elements fit)",
            at + 1,
            elements.len()
        ),
    ))
}

/// An object an agent writes: a logger or bus entry (also as `{"log": {…}}`), an output event,
/// an error event, or a Claude Code `stream-json` record.
pub fn agent_object(obj: &Map<String, Value>) -> bool {
    let ty = obj.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    let logger = |o: &Map<String, Value>| o.contains_key("service") && o.contains_key("message");
    obj.contains_key("sessionID")
        || logger(obj)
        || AGENT_TYPES.contains(&ty)
        || (ty == "error" && (obj.contains_key("errorType") || obj.contains_key("exitCode")))
        || (obj.len() == 1
            && obj
                .get("log")
                .and_then(|l| l.as_object())
                .is_some_and(logger))
        || (obj.contains_key("session_id")
            && matches!(ty, "system" | "assistant" | "user" | "result"))
}
