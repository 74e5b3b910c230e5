//! Planning the repair of a Copilot CLI session (`events.jsonl`) on its lines
//! (`formats::transcript::repair` applies the plan: backup, temporary file, verification by
//! diagnosing, atomic rename).
//!
//! Copilot CLI 1.0.102 skips every line that is not one JSON event and, on resume, rewrites the
//! file without it: what the line held is lost for good. So the mechanical damage is undone
//! before the client sees it:
//!
//! * NUL bytes (a crash zero-filled the file's end): a line of nothing else is removed, NULs
//!   before an event are stripped;
//! * an event split across lines by raw line breaks inside a string: the pieces are joined
//!   with each break written as `\n` (the event the client wrote, byte for byte otherwise);
//! * events written on one line: each is put on its own line;
//! * a torn last line (the writer was cut off mid-append): trimmed, its bytes kept in the backup;
//! * a call left without a result at the end (the client was killed while the tool ran): a
//!   `tool.execution_complete` is appended, shaped as the one the client writes for it on resume
//!   (`model` "resumed", `interactionId` "resume", `success` false, the error message and code
//!   `interrupted` it uses), linked by `parentId` to the last event.
//!
//! A line that is none of these is left alone and named as not repaired.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::formats::copilot::read::{concatenated, is_record, leading_nuls};
use crate::formats::copilot::replay::INTERRUPTED;
use crate::formats::transcript::repair::{
    Change, Edit, Line, Plan, Problem, now_iso, obj, time_ms, uuid_v4,
};
use crate::json::value::str_of;

/// Parses `text` as one event.
fn event(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text.trim_end_matches('\r')) {
        Ok(Value::Object(o)) if is_record(&o) => Some(o),
        _ => None,
    }
}

/// Lines `i..=j` joined into one event, each raw line break written as an escape.
fn rejoined(lines: &[Line<'_>], i: usize) -> Option<(usize, String, Map<String, Value>)> {
    let mut text = String::new();
    for (j, l) in lines
        .iter()
        .enumerate()
        .skip(i)
        .take(super::read::MAX_PIECES)
    {
        let piece = std::str::from_utf8(l.raw).ok()?;
        if j > i {
            if let Some(cut) = text.strip_suffix('\r') {
                text.truncate(cut.len());
                text.push_str("\\r");
            }
            text.push_str("\\n");
        }
        text.push_str(piece);
        if j > i
            && let Some(o) = event(&text)
        {
            return Some((j, text, o));
        }
    }
    None
}

/// Plans the repair of the session's lines (`newline_at_end`: the last one has its newline).
pub(crate) fn plan(lines: &[Line<'_>], newline_at_end: bool, plan: &mut Plan) {
    let n = lines.len();
    // The events as they are once the lines are mended, with the file line each is on.
    let mut events: Vec<Map<String, Value>> = Vec::new();
    let mut out_lines = 0u64;
    let mut i = 0;
    while i < n {
        let l = &lines[i];
        let no = i as u64 + 1;
        if let Some(o) = obj(&l.value).filter(|o| is_record(o)) {
            events.push(o.clone());
            out_lines += 1;
            i += 1;
            continue;
        }
        let blank = l.raw.iter().all(u8::is_ascii_whitespace);
        if l.value.is_some() || blank {
            out_lines += 1;
            i += 1;
            continue;
        }
        let last = i + 1 == n;
        let text = std::str::from_utf8(l.raw).ok();
        if let Some((k, all)) = leading_nuls(l.raw) {
            if all {
                plan.edits.push(Edit::Drop(i));
                plan.changes.push(Change {
                    line: no,
                    problem: Problem::NulBytes,
                    call_id: None,
                    change: format!("remove the line of {} NUL bytes", l.raw.len()),
                });
                i += 1;
                continue;
            }
            if let Some(rest) = text.and_then(|t| t.get(k..))
                && let Some(o) = event(rest)
            {
                plan.edits
                    .push(Edit::Replace(i, rest.trim_end_matches('\r').to_owned()));
                plan.changes.push(Change {
                    line: no,
                    problem: Problem::NulBytes,
                    call_id: None,
                    change: format!(
                        "strip the {k} NUL bytes before the `{}` event",
                        str_of(&o, "type").unwrap_or("?")
                    ),
                });
                events.push(o);
                out_lines += 1;
                i += 1;
                continue;
            }
        }
        if let Some(t) = text
            && let Some(parts) = concatenated(t.trim_end_matches('\r'))
        {
            let t = t.trim_end_matches('\r');
            let pieces: Vec<&str> = parts.iter().map(|(a, b, _)| &t[*a..*b]).collect();
            let types: Vec<String> = parts
                .iter()
                .map(|(_, _, o)| format!("`{}`", str_of(o, "type").unwrap_or("?")))
                .collect();
            plan.edits.push(Edit::Replace(i, pieces.join("\n")));
            plan.changes.push(Change {
                line: no,
                problem: Problem::ConcatenatedRecords,
                call_id: None,
                change: format!(
                    "put the {} events written on one line ({}) on lines of their own",
                    parts.len(),
                    types.join(", ")
                ),
            });
            out_lines += parts.len() as u64;
            events.extend(parts.into_iter().map(|(_, _, o)| o));
            i += 1;
            continue;
        }
        if let Some((j, joined, o)) = rejoined(lines, i) {
            plan.edits.push(Edit::Replace(i, joined));
            for k in i + 1..=j {
                plan.edits.push(Edit::Drop(k));
            }
            plan.changes.push(Change {
                line: no,
                problem: Problem::SplitRecord,
                call_id: o
                    .get("data")
                    .and_then(|d| d.get("toolCallId"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                change: format!(
                    "join lines {no}–{} into the `{}` event they are pieces of, writing the {} raw line break{} inside its string as \\n",
                    j + 1,
                    str_of(&o, "type").unwrap_or("?"),
                    j - i,
                    if j - i == 1 { "" } else { "s" }
                ),
            });
            events.push(o);
            out_lines += 1;
            i = j + 1;
            continue;
        }
        if last && !newline_at_end {
            plan.edits.push(Edit::Trim);
            plan.changes.push(Change {
                line: no,
                problem: Problem::TornLastLine,
                call_id: None,
                change: format!(
                    "trim the torn last line ({} bytes; they stay in the backup)",
                    l.raw.len()
                ),
            });
            i += 1;
            continue;
        }
        plan.unfixable.push(format!(
            "line {no} is not an event and is none of the damage rewind mends: rewind does not guess what it held"
        ));
        out_lines += 1;
        i += 1;
    }
    answer_open_calls(&events, out_lines, plan);
}

/// Appends the client's own interruption result for each call that ends the session without
/// one (nothing the model or the user said came after it).
fn answer_open_calls(events: &[Map<String, Value>], out_lines: u64, plan: &mut Plan) {
    let data = |o: &Map<String, Value>| o.get("data").and_then(Value::as_object).cloned();
    let mut calls: Vec<(String, usize, Option<i64>)> = Vec::new();
    let mut answered: HashMap<String, ()> = HashMap::new();
    let mut last_turn = 0;
    for (k, o) in events.iter().enumerate() {
        let ty = str_of(o, "type").unwrap_or_default();
        let Some(d) = data(o) else { continue };
        let at = str_of(o, "timestamp").and_then(time_ms);
        match ty {
            "session.start" if plan.session_id.is_none() => {
                plan.session_id = str_of(&d, "sessionId").map(str::to_owned);
            }
            "user.message" => last_turn = k,
            "assistant.message" => {
                last_turn = k;
                for r in d
                    .get("toolRequests")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(id) = r.get("toolCallId").and_then(Value::as_str)
                        && !calls.iter().any(|c| c.0 == id)
                    {
                        calls.push((id.to_owned(), k, at));
                    }
                }
            }
            "tool.execution_start" => {
                if let Some(id) = str_of(&d, "toolCallId")
                    && !calls.iter().any(|c| c.0 == id)
                {
                    calls.push((id.to_owned(), k, at));
                }
            }
            "tool.execution_complete" => {
                if let Some(id) = str_of(&d, "toolCallId") {
                    answered.insert(id.to_owned(), ());
                }
            }
            _ => {}
        }
    }
    let mut parent = events
        .last()
        .and_then(|o| str_of(o, "id"))
        .map(str::to_owned);
    let mut line = out_lines + 1;
    for (id, k, at) in calls {
        if answered.contains_key(&id) || k < last_turn {
            continue;
        }
        let record_id = uuid_v4();
        let record = json!({
            "type": "tool.execution_complete",
            "data": {
                "toolCallId": id,
                "model": "resumed",
                "interactionId": "resume",
                "success": false,
                "error": {"message": INTERRUPTED, "code": "interrupted"},
            },
            "id": record_id,
            "timestamp": now_iso(),
            "parentId": parent,
        });
        let Value::Object(record) = record else {
            continue;
        };
        plan.unanswered_at_ms = plan.unanswered_at_ms.max(at);
        plan.answer(
            line,
            id.clone(),
            record,
            format!(
                "answer {id} with the interruption result Copilot CLI writes for a call it finds unanswered on resume (an error, code `interrupted`)"
            ),
        );
        parent = Some(record_id);
        line += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::transcript::repair::{Client, split};
    use std::collections::BTreeSet;

    fn planned(bytes: &[u8]) -> Plan {
        let (lines, nl) = split(bytes);
        let mut p = Plan {
            client: Client::Copilot,
            session_id: None,
            changes: Vec::new(),
            unfixable: Vec::new(),
            edits: Vec::new(),
            calls: BTreeSet::new(),
            unanswered_at_ms: None,
        };
        plan(&lines, nl, &mut p);
        p
    }

    const CALL: &str = r#"{"type":"session.start","data":{"sessionId":"s1"},"id":"e1","timestamp":"2026-01-01T00:00:00.000Z","parentId":null}
{"type":"assistant.message","data":{"messageId":"a1","content":"","toolRequests":[{"toolCallId":"c1","name":"bash"}]},"id":"e2","timestamp":"2026-01-01T00:00:00.000Z","parentId":"e1"}
"#;

    #[test]
    fn an_open_call_is_answered_as_the_client_does() {
        let p = planned(CALL.as_bytes());
        let problems: Vec<Problem> = p.changes.iter().map(|c| c.problem).collect();
        assert_eq!(problems, vec![Problem::UnansweredCall]);
        assert_eq!(p.changes[0].line, 3);
        assert_eq!(p.session_id.as_deref(), Some("s1"));
        let Some(Edit::Append(s)) = p.edits.first() else {
            panic!("no record appended");
        };
        let v: Value = serde_json::from_str(s).unwrap_or(Value::Null);
        assert_eq!(v["data"]["error"]["code"], "interrupted");
        assert_eq!(v["parentId"], "e2");
    }

    #[test]
    fn line_damage_is_mended() {
        let done = r#"{"type":"tool.execution_complete","data":{"toolCallId":"c1","result":{"content":"a
b"}},"id":"e3","timestamp":"t","parentId":"e2"}"#;
        let end =
            r#"{"type":"session.shutdown","data":{},"id":"e4","timestamp":"t","parentId":"e3"}"#;
        let text = format!("{CALL}{done}\n{end}{end}\n\0\0\0");
        let p = planned(text.as_bytes());
        let problems: Vec<Problem> = p.changes.iter().map(|c| c.problem).collect();
        assert_eq!(
            problems,
            vec![
                Problem::SplitRecord,
                Problem::ConcatenatedRecords,
                Problem::NulBytes
            ]
        );
        assert_eq!(p.changes[0].call_id.as_deref(), Some("c1"));
        assert!(p.unfixable.is_empty());
    }
}
