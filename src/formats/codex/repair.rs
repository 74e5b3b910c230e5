//! Planning the repair of a Codex rollout on its records: which unanswered calls to answer and
//! which orphan outputs to drop (`formats::transcript::repair` applies the plan).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::formats::transcript::repair::{
    CODEX_ABORTED, Change, Edit, Line, Plan, Problem, now_iso, now_utc, obj, time_ms, uuid_v7,
};
use crate::json::value::str_of;

/// Codex: the rollout is read in order; a call's output is the later item with its `call_id`.
pub(crate) fn plan(lines: &[Line<'_>], next_line: u64, plan: &mut Plan) {
    let item = |i: usize| -> Option<&Map<String, Value>> {
        let o = obj(&lines[i].value)?;
        if str_of(o, "type") != Some("response_item") {
            return None;
        }
        o.get("payload").and_then(Value::as_object)
    };
    let output_of = |ty: &str| match ty {
        "function_call" | "local_shell_call" => Some("function_call_output"),
        "custom_tool_call" => Some("custom_tool_call_output"),
        _ => None,
    };
    let is_output = |ty: &str| matches!(ty, "function_call_output" | "custom_tool_call_output");
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    let (mut max_ordinal, mut uses_ordinals, mut max_history) = (None::<u64>, false, None::<u64>);
    let mut last_message = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(o) = obj(&l.value) else { continue };
        if let Some(n) = o.get("ordinal").and_then(Value::as_u64) {
            uses_ordinals = true;
            max_ordinal = Some(max_ordinal.map_or(n, |m| m.max(n)));
        }
        if let Some(n) = o
            .get("metadata")
            .and_then(|m| m.get("history_sequence"))
            .and_then(Value::as_u64)
        {
            max_history = Some(max_history.map_or(n, |m| m.max(n)));
        }
        if str_of(o, "type") == Some("session_meta") && plan.session_id.is_none() {
            plan.session_id = o
                .get("payload")
                .and_then(|p| p.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        let Some(p) = item(i) else { continue };
        let ty = str_of(p, "type").unwrap_or_default();
        let call_id = str_of(p, "call_id").map(str::to_owned);
        if ty == "message" {
            last_message = Some(i);
        } else if output_of(ty).is_some() {
            if let Some(c) = call_id {
                calls.insert(c, i);
            }
        } else if is_output(ty) {
            match call_id {
                Some(c) if calls.contains_key(&c) => {
                    answered.insert(c);
                }
                c => {
                    let id = c.unwrap_or_else(|| "?".into());
                    plan.edits.push(Edit::Drop(i));
                    plan.changes.push(Change {
                        line: i as u64 + 1,
                        problem: Problem::OrphanResult,
                        call_id: Some(id.clone()),
                        change: format!(
                            "drop the {ty} for {id}: no call with that id is before it"
                        ),
                    });
                    plan.calls.insert(id);
                }
            }
        }
    }
    // Codex numbers a rollout's lines 0, 1, 2, …, and warns about a gap ("skipping missing
    // rollout ordinal range"): the lines after a dropped one move up.
    let dropped: Vec<usize> = plan
        .edits
        .iter()
        .filter_map(|e| match e {
            Edit::Drop(i) => Some(*i),
            _ => None,
        })
        .collect();
    let mut renumbered = 0;
    if uses_ordinals && let Some(&first) = dropped.first() {
        for (i, l) in lines.iter().enumerate().skip(first + 1) {
            let shift = dropped.iter().filter(|&&d| d < i).count() as u64;
            if dropped.contains(&i) || shift == 0 {
                continue;
            }
            if let Some(text) = with_ordinal(l, shift) {
                plan.edits.push(Edit::Replace(i, text));
                renumbered += 1;
            }
        }
        if renumbered > 0 {
            plan.changes.push(Change {
                line: first as u64 + 2,
                problem: Problem::OrphanResult,
                call_id: None,
                change: format!(
                    "renumber the `ordinal` of the {renumbered} lines after the dropped one (Codex numbers its lines 0, 1, 2, …); nothing else in them changes"
                ),
            });
        }
        max_ordinal = max_ordinal.map(|m| m.saturating_sub(dropped.len() as u64));
    }
    let mut unanswered: Vec<(usize, String)> = calls
        .into_iter()
        .filter(|(c, _)| !answered.contains(c))
        .map(|(c, i)| (i, c))
        .collect();
    unanswered.sort();
    let mut ordinal = max_ordinal.map_or(0, |m| m + 1);
    let mut history = max_history.map(|m| m + 1);
    let mut line = next_line;
    for (i, call_id) in unanswered {
        if last_message.is_some_and(|m| m > i) {
            plan.unfixable.push(format!(
                "the call {call_id} (line {}) has no output, but the conversation went on after it: Codex sends \"aborted\" for it on resume, so rewind leaves it",
                i + 1
            ));
            continue;
        }
        let (Some(o), Some(p)) = (obj(&lines[i].value), item(i)) else {
            continue;
        };
        if let Some(t) = str_of(o, "timestamp").and_then(time_ms) {
            plan.unanswered_at_ms = Some(plan.unanswered_at_ms.map_or(t, |m| m.max(t)));
        }
        let ty = output_of(str_of(p, "type").unwrap_or_default()).unwrap_or("function_call_output");
        let mut payload = Map::new();
        payload.insert("type".into(), json!(ty));
        payload.insert("id".into(), json!(format!("fco_{}", uuid_v7())));
        payload.insert("call_id".into(), json!(call_id));
        payload.insert("output".into(), json!(CODEX_ABORTED));
        if let Some(turn) = p
            .get("internal_chat_message_metadata_passthrough")
            .and_then(|m| m.get("turn_id"))
        {
            let secs = now_utc().timestamp_micros() as f64 / 1e6;
            payload.insert(
                "internal_chat_message_metadata_passthrough".into(),
                json!({"turn_id": turn, "create_time": secs}),
            );
        }
        let mut r = Map::new();
        r.insert("timestamp".into(), json!(now_iso()));
        if uses_ordinals {
            r.insert("ordinal".into(), json!(ordinal));
            ordinal += 1;
        }
        r.insert("type".into(), json!("response_item"));
        r.insert("payload".into(), Value::Object(payload));
        if let Some(meta) = o.get("metadata").and_then(Value::as_object) {
            let mut m = Map::new();
            if let Some(h) = history {
                m.insert("history_sequence".into(), json!(h));
                history = Some(h + 1);
            }
            if let Some(s) = meta.get("sampled_through_sequence") {
                m.insert("sampled_through_sequence".into(), s.clone());
            }
            m.insert("client_authored".into(), json!(false));
            r.insert("metadata".into(), Value::Object(m));
        }
        let words = format!(
            "answer {call_id} (line {}) with a {ty} \"{CODEX_ABORTED}\"",
            i + 1
        );
        plan.answer(line, call_id, r, words);
        line += 1;
    }
}

/// The line with its top-level `ordinal` lowered by `shift`, changing only those digits; `None`
/// when the line does not read back as the same record with that one change.
fn with_ordinal(line: &Line<'_>, shift: u64) -> Option<String> {
    let record = obj(&line.value)?;
    let old = record.get("ordinal")?.as_u64()?;
    let new = old.checked_sub(shift)?;
    let text = std::str::from_utf8(line.raw).ok()?;
    let key = format!("\"ordinal\":{old}");
    let at = text.find(&key)?;
    let end = at + key.len();
    if text[end..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let edited = format!("{}\"ordinal\":{new}{}", &text[..at], &text[end..]);
    let mut want = record.clone();
    want.insert("ordinal".into(), json!(new));
    let got: Value = serde_json::from_str(edited.trim_end_matches('\r')).ok()?;
    (got == Value::Object(want)).then_some(edited)
}
