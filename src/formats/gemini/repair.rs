//! Planning the repair of a Gemini CLI session on its records (`formats::transcript::repair`
//! applies the plan: backup, torn last line, temporary file, verification, atomic rename).
//!
//! A call without a result is answered the way Gemini CLI answers a call it cancels
//! (`createCancelledResult`): its `toolCalls` entry gets `status: "cancelled"` and a `result`
//! of one `functionResponse` whose response is `{"error": "[Operation Cancelled] Operation
//! cancelled."}`. The message is written again with the same `id`, as the client writes a
//! message whose tool calls changed (the later record replaces the earlier in place), so the
//! file stays append-only. A call written in a message's `content` (the form a `$set` of
//! `messages` has) is answered by a user message of the same `functionResponse`, appended when
//! that message is the last one; elsewhere it is left alone.
//!
//! The legacy whole-file JSON is not rewritten: Gemini CLI 0.61.0 converts it to JSON lines on
//! `--resume`, and that file can be repaired.

use serde_json::{Map, Value, json};

use crate::formats::gemini::read::{self as gemini, Kind};
use crate::formats::transcript::repair::{Line, Plan, now_iso, obj, time_ms, uuid_v4};
use crate::json::value::str_of;

/// The error Gemini CLI gives the result of a call it cancelled (its own words).
pub const GEMINI_CANCELLED: &str = "[Operation Cancelled] Operation cancelled.";

/// Whether the file is the legacy whole-file JSON (its first non-blank line is `{` alone).
pub(crate) fn is_legacy(lines: &[Line<'_>]) -> bool {
    lines
        .iter()
        .filter_map(|l| std::str::from_utf8(l.raw).ok())
        .find(|t| !t.trim().is_empty())
        .is_some_and(gemini::is_legacy)
}

/// What a legacy whole-file JSON session needs that rewind leaves alone, in words (nothing for
/// a healthy one).
pub(crate) fn legacy(bytes: &[u8]) -> Option<String> {
    let how = "rewind does not rewrite the legacy whole-file JSON";
    let Ok(doc) = serde_json::from_slice::<Value>(bytes) else {
        return Some(format!(
            "the legacy session document does not parse (it was cut short while Gemini CLI rewrote it): {how}, and does not guess what the rest held; the messages before the cut are in the file"
        ));
    };
    let open = doc
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|m| {
            m.get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .any(|c| !truthy(c.get("result")));
    open.then(|| format!(
        "a call has no result: {how}; resume it once with Gemini CLI 0.61.0 or later (`gemini --resume`), which converts it to a JSON-lines file beside it, and repair that file"
    ))
}

/// The result Gemini CLI writes for a call it cancelled.
fn cancelled(id: &str, name: &str) -> Value {
    json!([{ "functionResponse": {
        "id": id, "name": name, "response": { "error": GEMINI_CANCELLED }
    }}])
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

/// The messages as the client loads them: (id, record, line it was last written on).
fn messages(lines: &[Line<'_>]) -> Vec<(String, Map<String, Value>, usize)> {
    let mut list: Vec<(String, Map<String, Value>, usize)> = Vec::new();
    let mut index: crate::FastMap<String, usize> = crate::FastMap::default();
    let set = |list: &mut Vec<(String, Map<String, Value>, usize)>,
               index: &mut crate::FastMap<String, usize>,
               m: &Map<String, Value>,
               i: usize| {
        let id = str_of(m, "id").unwrap_or_default().to_owned();
        match index.get(&id) {
            Some(&k) => list[k] = (id, m.clone(), i),
            None => {
                index.insert(id.clone(), list.len());
                list.push((id, m.clone(), i));
            }
        }
    };
    for (i, l) in lines.iter().enumerate() {
        let Some(o) = obj(&l.value) else { continue };
        let from_array = |v: Option<&Value>| -> Vec<Map<String, Value>> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .filter(|m| gemini::kind(m) == Kind::Message)
                .cloned()
                .collect()
        };
        match gemini::kind(o) {
            Kind::Rewind => {
                let id = str_of(o, "$rewindTo").unwrap_or_default();
                match index.get(id) {
                    Some(&k) => list.truncate(k),
                    None => list.clear(),
                }
                index = list
                    .iter()
                    .enumerate()
                    .map(|(k, m)| (m.0.clone(), k))
                    .collect();
            }
            Kind::Message => set(&mut list, &mut index, o, i),
            Kind::Set => {
                let set_obj = o.get("$set").and_then(Value::as_object);
                if let Some(items) = set_obj
                    .and_then(|s| s.get("messages"))
                    .filter(|v| v.is_array())
                {
                    list.clear();
                    index.clear();
                    for m in from_array(Some(items)) {
                        set(&mut list, &mut index, &m, i);
                    }
                }
            }
            Kind::Metadata => {
                for m in from_array(o.get("messages")) {
                    set(&mut list, &mut index, &m, i);
                }
            }
            Kind::Unknown => {}
        }
    }
    list
}

/// Gemini CLI: answers every call of the loaded messages that has no result.
pub(crate) fn plan(lines: &[Line<'_>], next_line: u64, plan: &mut Plan) {
    for l in lines {
        if let Some(o) = obj(&l.value)
            && let Some(s) = str_of(o, "sessionId")
        {
            plan.session_id = Some(s.to_owned());
        }
    }
    let list = messages(lines);
    // Every functionResponse id of a user message, and where (index in the list).
    let mut responded: crate::FastMap<String, usize> = crate::FastMap::default();
    for (k, (_, m, _)) in list.iter().enumerate() {
        if str_of(m, "type") != Some("user") {
            continue;
        }
        for p in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(id) = p
                .get("functionResponse")
                .and_then(|f| f.get("id"))
                .and_then(Value::as_str)
            {
                responded.insert(id.to_owned(), k);
            }
        }
    }
    let mut line = next_line;
    let last = list.len().checked_sub(1);
    for (k, (id, m, at)) in list.iter().enumerate() {
        if str_of(m, "type") != Some("gemini") {
            continue;
        }
        let when = str_of(m, "timestamp").and_then(time_ms);
        // Calls in `toolCalls` without a result: the message again, each answered.
        let mut record = m.clone();
        let mut answered: Vec<String> = Vec::new();
        if let Some(calls) = record.get_mut("toolCalls").and_then(Value::as_array_mut) {
            for c in calls.iter_mut() {
                let Some(c) = c.as_object_mut() else { continue };
                if truthy(c.get("result")) {
                    continue;
                }
                let cid = str_of(c, "id").unwrap_or_default().to_owned();
                let name = str_of(c, "name").unwrap_or_default().to_owned();
                c.insert("result".into(), cancelled(&cid, &name));
                c.insert("status".into(), json!("cancelled"));
                answered.push(cid);
            }
        }
        if !answered.is_empty() {
            if let Some(t) = when {
                plan.unanswered_at_ms = Some(plan.unanswered_at_ms.map_or(t, |m| m.max(t)));
            }
            let first = answered[0].clone();
            let words = format!(
                "write message {id} (line {}) again with its call{} {} answered as Gemini CLI answers a cancelled call: status \"cancelled\", error \"{GEMINI_CANCELLED}\"",
                at + 1,
                if answered.len() == 1 { "" } else { "s" },
                answered.join(", ")
            );
            plan.answer(line, first, record, words);
            for c in answered.into_iter().skip(1) {
                plan.calls.insert(c);
            }
            line += 1;
        }
        // Calls in `content`: answered by the user message after it.
        let content_calls: Vec<(String, String)> = m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("functionCall"))
            .map(|f| {
                (
                    f.get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    f.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .filter(|(cid, _)| responded.get(cid).is_none_or(|&r| r < k))
            .collect();
        if content_calls.is_empty() {
            continue;
        }
        if Some(k) != last {
            plan.unfixable.push(format!(
                "message {id} (line {}) makes the call {} in its content with no response after it, and the conversation went on: rewind does not insert a message into the middle",
                at + 1,
                content_calls[0].0
            ));
            continue;
        }
        if let Some(t) = when {
            plan.unanswered_at_ms = Some(plan.unanswered_at_ms.map_or(t, |m| m.max(t)));
        }
        let parts: Vec<Value> = content_calls
            .iter()
            .flat_map(|(cid, name)| cancelled(cid, name).as_array().cloned().unwrap_or_default())
            .collect();
        let mut r = Map::new();
        r.insert("id".into(), json!(uuid_v4()));
        r.insert("timestamp".into(), json!(now_iso()));
        r.insert("type".into(), json!("user"));
        r.insert("content".into(), Value::Array(parts));
        let ids: Vec<&str> = content_calls.iter().map(|(c, _)| c.as_str()).collect();
        let words = format!(
            "answer {} (message {id}, line {}) with a user message of a cancelled `functionResponse`, as Gemini CLI answers a cancelled call",
            ids.join(", "),
            at + 1
        );
        plan.answer(line, content_calls[0].0.clone(), r, words);
        for (c, _) in content_calls.into_iter().skip(1) {
            plan.calls.insert(c);
        }
        line += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::transcript::repair::{Client, split};
    use std::collections::BTreeSet;

    fn plan_of(text: &str) -> Plan {
        let (lines, _) = split(text.as_bytes());
        let mut p = Plan {
            client: Client::Gemini,
            session_id: None,
            changes: Vec::new(),
            unfixable: Vec::new(),
            edits: Vec::new(),
            calls: BTreeSet::new(),
            unanswered_at_ms: None,
        };
        plan(&lines, lines.len() as u64 + 1, &mut p);
        p
    }

    #[test]
    fn a_call_without_a_result_is_answered_by_its_message_written_again() {
        let text = r#"{"sessionId":"s1","projectHash":"h"}
{"id":"u1","type":"user","content":"run"}
{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"run_shell_command","args":{},"status":"executing"}]}
"#;
        let p = plan_of(text);
        assert_eq!(p.changes.len(), 1);
        assert_eq!(p.session_id.as_deref(), Some("s1"));
        assert!(p.calls.contains("c1"));
        let answered = format!(
            "{text}{}\n",
            match &p.edits[0] {
                crate::formats::transcript::repair::Edit::Append(s) => s.clone(),
                _ => String::new(),
            }
        );
        assert!(answered.contains(GEMINI_CANCELLED));
        assert!(plan_of(&answered).changes.is_empty());
    }

    #[test]
    fn answered_calls_and_the_legacy_file_need_nothing() {
        let text = r#"{"sessionId":"s1","projectHash":"h"}
{"id":"g1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"x","result":[{"functionResponse":{"id":"c1","name":"x","response":{"output":"ok"}}}]}]}
"#;
        assert!(plan_of(text).changes.is_empty());
        let (lines, _) = split(b"{\n  \"sessionId\": \"s\"\n}\n");
        assert!(is_legacy(&lines));
    }
}
