//! Repair of stored OpenCode sessions: the minimal change that makes a session resumable, with
//! the original preserved.
//!
//! [`plan`] turns a session's findings into [`Change`]s on its stored JSON (never a
//! re-serialisation of the lenient model: keys keep their order, unknown fields survive):
//!
//! | finding | change |
//! |---|---|
//! | `tool-never-finished` (pending/running) | state → `error` "Tool execution aborted", `metadata.interrupted: true` |
//! | `schema-violation` (invalid tool status) | state → `error`, the original status kept in `metadata.rewind` |
//! | `step-merged` | a recovery `step-finish` and a `step-start` between the tool part and the text |
//! | `step-unclosed` | a recovery `step-finish` (reason `error`, zero tokens and cost) |
//! | `empty-text-part` | a short placeholder text |
//! | `message-incomplete` | `time.completed` and a `MessageAbortedError` |
//!
//! Every changed or added record carries a `rewind` marker (in the tool state's `metadata`, the
//! part's `metadata`, or the message's top level) so checks skip what rewind repaired. Rows are
//! never deleted. [`db`] applies a plan to a database safely; [`export`] writes a repaired copy
//! of an `opencode export` document.

pub mod db;
pub mod export;

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::checks::step_merged;
use crate::diagnostic::Finding;
use crate::model::{PartBody, REPAIR_MARKER, TOOL_ABORTED, ToolState, ids, schema};
use crate::replay::opencode::StoredSession;
use crate::session::Analysis;

/// The text given to an empty text part.
pub const PLACEHOLDER_TEXT: &str = "[empty]";

/// The rules whose findings repair fixes (some only in part: see [`plan`]).
pub const FIXABLE: [&str; 6] = [
    "tool-never-finished",
    "schema-violation",
    "step-merged",
    "step-unclosed",
    "empty-text-part",
    "message-incomplete",
];

/// One change to a stored record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Change {
    pub session_id: String,
    pub message_id: String,
    /// The part changed or added (none for a message change).
    pub part_id: Option<String>,
    pub rule: &'static str,
    /// What changes, in words.
    pub change: String,
    #[serde(skip)]
    pub edit: Edit,
}

/// The edit itself: the record's new JSON.
#[derive(Clone, Debug)]
pub enum Edit {
    UpdatePart { data: Value },
    InsertPart { data: Value },
    UpdateMessage { data: Value },
}

/// A session's plan.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SessionPlan {
    pub session_id: String,
    pub changes: Vec<Change>,
    /// Findings of fixable rules this plan cannot fix, in words.
    pub unfixable: Vec<String>,
    /// The findings the plan fixes (rule, message, part), checked after applying it.
    #[serde(skip)]
    pub fixes: BTreeSet<FindingKey>,
}

/// What identifies a finding across two diagnoses.
pub type FindingKey = (String, Option<String>, Option<String>, Option<String>);

pub fn key(f: &Finding) -> FindingKey {
    (
        f.rule.to_owned(),
        f.ids.message_id.clone(),
        f.ids.part_id.clone(),
        f.ids.call_id.clone(),
    )
}

fn marker(rule: &str, original: Value) -> Value {
    json!({ "rule": rule, "original": original })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// Aborts a pending/running tool state the way OpenCode's cleanup does.
fn abort_tool(part: &Value, now: i64) -> Option<Value> {
    let mut v = part.clone();
    let state = obj(v.get_mut("state")?)?;
    let status = state.get("status").cloned().unwrap_or(Value::Null);
    let start = time_of(state, "start").unwrap_or(json!(now));
    let meta = into_error(state, TOOL_ABORTED.to_owned(), start, json!(now))?;
    meta.insert("interrupted".into(), json!(true));
    meta.insert(
        REPAIR_MARKER.into(),
        marker("tool-never-finished", json!({ "status": status })),
    );
    Some(v)
}

/// Turns an invalid tool status into `error`, keeping the original in the marker.
fn fix_status(part: &Value, now: i64) -> Option<Value> {
    let mut v = part.clone();
    let state = obj(v.get_mut("state")?)?;
    let status = state.get("status").cloned().unwrap_or(Value::Null);
    let error = match state.get("error").and_then(Value::as_str) {
        Some(e) => e.to_owned(),
        None => format!("Tool ended with status {status} (not a status OpenCode knows)"),
    };
    let start = time_of(state, "start").unwrap_or(json!(now));
    let end = time_of(state, "end").unwrap_or(json!(now));
    let meta = into_error(state, error, start, end)?;
    meta.insert(
        REPAIR_MARKER.into(),
        marker("schema-violation", json!({ "status": status })),
    );
    Some(v)
}

/// `state.time.<key>` when it is a number.
fn time_of(state: &Map<String, Value>, key: &str) -> Option<Value> {
    state
        .get("time")
        .and_then(|t| t.get(key))
        .filter(|x| x.is_number())
        .cloned()
}

/// Makes `state` a valid `error` state (status, error, time, an object input) and returns its
/// metadata object, created when missing, for the caller's markers.
fn into_error(
    state: &mut Map<String, Value>,
    error: String,
    start: Value,
    end: Value,
) -> Option<&mut Map<String, Value>> {
    state.insert("status".into(), json!("error"));
    state.insert("error".into(), json!(error));
    state.insert("time".into(), json!({ "start": start, "end": end }));
    if !state.get("input").is_some_and(Value::is_object) {
        state.insert("input".into(), json!({}));
    }
    state
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

fn recovery_finish(rule: &str) -> Value {
    json!({
        "type": "step-finish",
        "reason": "error",
        "cost": 0,
        "tokens": { "input": 0, "output": 0, "reasoning": 0, "cache": { "read": 0, "write": 0 } },
        "metadata": { REPAIR_MARKER: marker(rule, Value::Null) },
    })
}

fn recovery_start(rule: &str) -> Value {
    json!({ "type": "step-start", "metadata": { REPAIR_MARKER: marker(rule, Value::Null) } })
}

/// Plans the repair of one session from its stored records, its analysis and its findings.
pub fn plan(stored: &StoredSession, analysis: &Analysis, findings: &[Finding]) -> SessionPlan {
    let now = now_ms();
    let mut out = SessionPlan {
        session_id: stored.id.clone(),
        ..SessionPlan::default()
    };
    let Some(session) = analysis.sessions.first() else {
        return out;
    };
    // Raw JSON by part id and message id.
    let mut raw_parts: HashMap<&str, (&str, &str)> = HashMap::new();
    let mut raw_messages: HashMap<&str, &str> = HashMap::new();
    for m in &stored.messages {
        if let Some(info) = &m.info {
            raw_messages.insert(&m.id, &info.text);
        }
        for p in &m.parts {
            raw_parts.insert(&p.id, (&m.id, &p.text));
        }
    }
    let parse = |t: &str| serde_json::from_str::<Value>(t).ok();
    let push_part = |out: &mut SessionPlan, f: &Finding, data: Option<Value>, words: String| {
        let (Some(part_id), Some(data)) = (f.ids.part_id.clone(), data) else {
            out.unfixable.push(format!("{}: {}", f.rule, f.message));
            return;
        };
        if !schema::validate_part(&data).is_empty() {
            out.unfixable.push(format!(
                "{} on part {part_id}: the part has other schema problems; fix it by hand",
                f.rule
            ));
            return;
        }
        out.fixes.insert(key(f));
        out.changes.push(Change {
            session_id: stored.id.clone(),
            message_id: f.ids.message_id.clone().unwrap_or_default(),
            part_id: Some(part_id),
            rule: f.rule,
            change: words,
            edit: Edit::UpdatePart { data },
        });
    };
    let part_record = |id: &str| {
        session
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .find(|p| p.part.id == id)
    };
    for f in findings {
        let part_id = f.ids.part_id.as_deref().unwrap_or_default();
        let raw = raw_parts.get(part_id).and_then(|(_, t)| parse(t));
        match f.rule {
            "tool-never-finished" => {
                let Some(rec) = part_record(part_id) else {
                    continue;
                };
                let Some(tool) = rec.part.tool() else {
                    continue;
                };
                if !matches!(tool.state, ToolState::Pending(_) | ToolState::Running(_)) {
                    continue;
                }
                let words = format!(
                    "tool `{}`: `{}` → `error` \"{TOOL_ABORTED}\", metadata.interrupted",
                    tool.tool,
                    tool.state.status()
                );
                push_part(&mut out, f, raw.and_then(|v| abort_tool(&v, now)), words);
            }
            "schema-violation" if !part_id.is_empty() => {
                let Some(tool) = part_record(part_id).and_then(|r| r.part.tool()) else {
                    continue;
                };
                let ToolState::Invalid { status, .. } = &tool.state else {
                    continue;
                };
                let words = format!(
                    "tool `{}`: status `{}` → `error` (original kept in metadata.rewind)",
                    tool.tool,
                    status.as_deref().unwrap_or("(none)")
                );
                push_part(&mut out, f, raw.and_then(|v| fix_status(&v, now)), words);
            }
            "empty-text-part" => {
                let data = raw.map(|mut v| {
                    if let Some(o) = obj(&mut v) {
                        let original = o.get("text").cloned().unwrap_or(Value::Null);
                        o.insert("text".into(), json!(PLACEHOLDER_TEXT));
                        let meta = o.entry("metadata").or_insert_with(|| json!({}));
                        if let Some(m) = meta.as_object_mut() {
                            m.insert(
                                REPAIR_MARKER.into(),
                                marker("empty-text-part", json!({ "text": original })),
                            );
                        }
                    }
                    v
                });
                push_part(
                    &mut out,
                    f,
                    data,
                    format!("text \"\" → \"{PLACEHOLDER_TEXT}\""),
                );
            }
            "message-incomplete" => {
                let Some(mid) = f.ids.message_id.as_deref() else {
                    continue;
                };
                let Some(mut v) = raw_messages.get(mid).and_then(|t| parse(t)) else {
                    continue;
                };
                let Some(o) = obj(&mut v) else {
                    continue;
                };
                if let Some(t) = o.get_mut("time").and_then(Value::as_object_mut) {
                    t.insert("completed".into(), json!(now));
                } else {
                    o.insert("time".into(), json!({ "created": now, "completed": now }));
                }
                o.insert(
                    "error".into(),
                    json!({ "name": "MessageAbortedError", "data": { "message": "The reply never finished; closed by rewind repair" } }),
                );
                o.insert(
                    REPAIR_MARKER.into(),
                    marker(
                        "message-incomplete",
                        json!({ "completed": null, "error": null }),
                    ),
                );
                out.fixes.insert(key(f));
                out.changes.push(Change {
                    session_id: stored.id.clone(),
                    message_id: mid.to_owned(),
                    part_id: None,
                    rule: f.rule,
                    change: "set time.completed and error MessageAbortedError".into(),
                    edit: Edit::UpdateMessage { data: v },
                });
            }
            _ => {}
        }
    }
    plan_steps(stored, analysis, findings, &mut out);
    out
}

/// Kinds in a message's simulated part sequence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Start,
    Finish,
    Other,
}

/// Plans step boundaries: splits of merged steps first, then closes of the steps still open.
fn plan_steps(
    stored: &StoredSession,
    analysis: &Analysis,
    findings: &[Finding],
    out: &mut SessionPlan,
) {
    let Some(session) = analysis.sessions.first() else {
        return;
    };
    for message in &session.messages {
        let about = |rule: &str| {
            findings
                .iter()
                .filter(|f| f.rule == rule && f.ids.message_id.as_deref() == Some(&message.id))
                .collect::<Vec<_>>()
        };
        let merged = about("step-merged");
        let unclosed = about("step-unclosed");
        if merged.is_empty() && unclosed.is_empty() {
            continue;
        }
        // The sequence: real parts, with insertions (rule, kind) after part index i.
        let kinds: Vec<Kind> = message
            .parts
            .iter()
            .map(|p| match p.part.body {
                PartBody::StepStart(_) => Kind::Start,
                PartBody::StepFinish(_) => Kind::Finish,
                _ => Kind::Other,
            })
            .collect();
        let mut inserts: Vec<(usize, Vec<(&'static str, Kind)>)> = Vec::new();
        if step_merged::replayed(message) {
            for m in step_merged::merges(message) {
                let Some(i) = message
                    .parts
                    .iter()
                    .position(|p| p.part.id == m.before.part.id)
                else {
                    continue;
                };
                inserts.push((
                    i,
                    vec![("step-merged", Kind::Finish), ("step-merged", Kind::Start)],
                ));
            }
        }
        // Walk the simulated sequence; a step still open at the next start, or at the end, gets
        // a recovery step-finish before it.
        let mut open = false;
        let mut closes: Vec<usize> = Vec::new();
        let mut ends_open = false;
        for (i, kind) in kinds.iter().enumerate() {
            if *kind == Kind::Start && open && i > 0 {
                closes.push(i - 1);
            }
            match kind {
                Kind::Start => open = true,
                Kind::Finish => open = false,
                Kind::Other => {}
            }
            for (_, ins) in inserts.iter().filter(|(at, _)| *at == i) {
                for (_, k) in ins {
                    match k {
                        Kind::Start => open = true,
                        Kind::Finish => open = false,
                        Kind::Other => {}
                    }
                }
            }
            if i + 1 == kinds.len() && open {
                ends_open = true;
            }
        }
        for i in closes {
            match inserts.iter_mut().find(|(at, _)| *at == i) {
                Some((_, ins)) => ins.insert(0, ("step-unclosed", Kind::Finish)),
                None => inserts.push((i, vec![("step-unclosed", Kind::Finish)])),
            }
        }
        if ends_open && let Some(last) = kinds.len().checked_sub(1) {
            match inserts.iter_mut().find(|(at, _)| *at == last) {
                Some((_, ins)) => ins.push(("step-unclosed", Kind::Finish)),
                None => inserts.push((last, vec![("step-unclosed", Kind::Finish)])),
            }
        }
        inserts.sort_by_key(|(at, _)| *at);
        for (at, ins) in inserts {
            let after = &message.parts[at].part.id;
            let before = message.parts.get(at + 1).map(|p| p.part.id.as_str());
            let Some(new_ids) = ids::between(after, before, ins.len()) else {
                out.unfixable.push(format!(
                    "message {}: no part id fits between {after} and {}; insert the step boundary by hand",
                    message.id,
                    before.unwrap_or("the end")
                ));
                continue;
            };
            for ((rule, kind), id) in ins.iter().zip(new_ids) {
                let (data, words) = match kind {
                    Kind::Finish => (
                        recovery_finish(rule),
                        format!(
                            "insert step-finish (reason `error`, zero tokens and cost) after {after}"
                        ),
                    ),
                    _ => (
                        recovery_start(rule),
                        format!("insert step-start after {after}"),
                    ),
                };
                out.changes.push(Change {
                    session_id: stored.id.clone(),
                    message_id: message.id.clone(),
                    part_id: Some(id),
                    rule,
                    change: words,
                    edit: Edit::InsertPart { data },
                });
            }
        }
        for f in merged.iter().chain(unclosed.iter()) {
            out.fixes.insert(key(f));
        }
    }
}

/// Checks a re-diagnosis: every finding the plans fix is gone, and nothing new appeared.
pub fn verify(
    before: &[Finding],
    after: &[Finding],
    fixes: &BTreeSet<FindingKey>,
) -> Result<(), String> {
    let before: BTreeSet<FindingKey> = before.iter().map(key).collect();
    let mut problems = Vec::new();
    for f in after {
        let k = key(f);
        if fixes.contains(&k) {
            problems.push(format!(
                "still reported after the repair: [{}] {}",
                f.rule, f.message
            ));
        } else if !before.contains(&k) {
            problems.push(format!("new after the repair: [{}] {}", f.rule, f.message));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
