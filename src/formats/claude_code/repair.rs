//! Planning the repair of a Claude Code transcript on its records: which unanswered calls at the
//! end of the active history to answer, which orphan results to drop, which changed thinking to
//! take out, and the records to relink (`formats::transcript::repair` applies the plan).

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::formats::transcript::repair::{
    CLAUDE_INTERRUPTED, Change, Edit, Line, Plan, Problem, now_iso, obj, time_ms, uuid_v4,
};
use crate::json::value::str_of;

/// A response whose signed thinking the next request would send changed: its id, and the call
/// whose absence is the change when answering that call sends the response whole.
pub(crate) struct ChangedThinking {
    message_id: String,
    answer: Option<String>,
}

/// What `thinking-modified` reports in a Claude Code transcript (read from `bytes`, the lines
/// the repair keeps), as responses to act on.
pub(crate) fn changed_thinking(bytes: &[u8]) -> Vec<ChangedThinking> {
    use crate::checks::thinking::{Change, modified};
    let Ok(mut analysis) =
        crate::formats::claude_code::replay::replay(bytes, crate::source::FileId(0))
    else {
        return Vec::new();
    };
    let next = crate::formats::claude_code::request::next_request(&analysis);
    analysis.requests.extend(next);
    let Some(facts) = analysis.transcript.as_deref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for req in &analysis.requests {
        for m in modified(req, facts) {
            let id = |r: usize| facts.thinking[r].message_id.clone();
            let answer = match m.change {
                Change::LeftOut {
                    on_history: true, ..
                } if !m.has_blank(facts) => m.left_out_call(facts).map(str::to_owned),
                _ => None,
            };
            if let Change::Joined { earlier } = m.change {
                out.push(ChangedThinking {
                    message_id: id(earlier),
                    answer: None,
                });
            }
            out.push(ChangedThinking {
                message_id: id(m.response),
                answer,
            });
        }
    }
    out
}

/// Takes the blocks `remove` picks out of record `i` (`o`, whose blocks are `content`): the
/// record is dropped when nothing would be left of it (its children are re-linked to its parent
/// afterwards), else rewritten without them. Whether it was dropped.
fn take_blocks(
    i: usize,
    o: &Map<String, Value>,
    content: Vec<Value>,
    remove: &dyn Fn(&Value) -> bool,
    dropped: &mut HashMap<usize, Option<String>>,
    edited: &mut HashMap<usize, Map<String, Value>>,
) -> bool {
    let kept: Vec<Value> = content.into_iter().filter(|b| !remove(b)).collect();
    if kept.is_empty() {
        dropped.insert(i, str_of(o, "parentUuid").map(str::to_owned));
        return true;
    }
    let mut record = o.clone();
    if let Some(m) = record.get_mut("message").and_then(Value::as_object_mut) {
        m.insert("content".into(), Value::Array(kept));
    }
    edited.insert(i, record);
    false
}

/// Claude Code: the active history is the path from the leaf (the last `last-prompt`'s
/// `leafUuid`, or the newest conversation record after it) back through `parentUuid`.
pub(crate) fn plan(
    lines: &[Line<'_>],
    next_line: u64,
    thinking: &[ChangedThinking],
    plan: &mut Plan,
) {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let (mut main_leaf, mut side_leaf): (Option<&str>, Option<&str>) = (None, None);
    let mut last_uuid = None;
    for (i, l) in lines.iter().enumerate() {
        let Some(o) = obj(&l.value) else { continue };
        if plan.session_id.is_none() {
            plan.session_id = str_of(o, "sessionId").map(str::to_owned);
        }
        if str_of(o, "type") == Some("last-prompt") {
            if let Some(leaf) = str_of(o, "leafUuid") {
                main_leaf = Some(leaf);
            }
            continue;
        }
        let Some(uuid) = str_of(o, "uuid") else {
            continue;
        };
        index.insert(uuid, i);
        last_uuid = Some(uuid);
        if o.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            side_leaf = Some(uuid);
        } else {
            main_leaf = Some(uuid);
        }
    }
    let leaf = main_leaf
        .filter(|l| index.contains_key(l))
        .or(side_leaf)
        .or(last_uuid);
    let mut path = Vec::new();
    let mut at = leaf.and_then(|l| index.get(l)).copied();
    while let Some(i) = at {
        if path.len() > lines.len() {
            break; // a cycle
        }
        path.push(i);
        at = obj(&lines[i].value)
            .and_then(|o| str_of(o, "parentUuid"))
            .and_then(|p| index.get(p))
            .copied();
    }
    path.reverse();
    let compacted = path.iter().any(|&i| {
        obj(&lines[i].value).is_some_and(|o| str_of(o, "subtype") == Some("compact_boundary"))
    });

    // Orphan results: a `tool_result` whose `tool_use` is not before it on the path (after a
    // compaction, anywhere before it in the file: what the summary kept is not checked).
    let blocks = |i: usize| -> Vec<Value> {
        obj(&lines[i].value)
            .and_then(|o| o.get("message"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let uses_in = |i: usize| -> Vec<String> {
        blocks(i)
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut dropped: HashMap<usize, Option<String>> = HashMap::new();
    // Records rewritten whole: an orphan block removed, a parent relinked (or both).
    let mut edited: HashMap<usize, Map<String, Value>> = HashMap::new();
    let mut file_seen_upto = 0;
    for &i in &path {
        if compacted {
            while file_seen_upto < i {
                seen.extend(uses_in(file_seen_upto));
                file_seen_upto += 1;
            }
        }
        let Some(o) = obj(&lines[i].value) else {
            continue;
        };
        if str_of(o, "type") == Some("user") {
            let content = blocks(i);
            let orphan = |b: &Value| {
                b.get("type").and_then(Value::as_str) == Some("tool_result")
                    && !b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| seen.contains(id))
            };
            let orphans: Vec<String> = content
                .iter()
                .filter(|b| orphan(b))
                .map(|b| {
                    b.get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_owned()
                })
                .collect();
            if !orphans.is_empty() {
                let ids = orphans.join(", ");
                plan.calls.extend(orphans.iter().cloned());
                if take_blocks(i, o, content, &orphan, &mut dropped, &mut edited) {
                    plan.changes.push(Change {
                        line: i as u64 + 1,
                        problem: Problem::OrphanResult,
                        call_id: Some(ids.clone()),
                        change: format!(
                            "drop this record: it holds only the result of {ids}, whose call is not before it (its children now hang on its parent)"
                        ),
                    });
                } else {
                    plan.changes.push(Change {
                        line: i as u64 + 1,
                        problem: Problem::OrphanResult,
                        call_id: Some(ids.clone()),
                        change: format!(
                            "remove the result of {ids} from this record: its call is not before it"
                        ),
                    });
                }
            }
        }
        seen.extend(uses_in(i));
    }
    // Changed signed thinking: the calls the tail below answers make a response whole again;
    // any other change is undone by taking the response's thinking out of the active history.
    let tail_calls: HashSet<String> = path
        .iter()
        .rev()
        .take_while(|&&i| {
            obj(&lines[i].value).is_some_and(|o| str_of(o, "type") == Some("assistant"))
        })
        .flat_map(|&i| uses_in(i))
        .collect();
    let strip: BTreeSet<&str> = thinking
        .iter()
        .filter(|t| !t.answer.as_ref().is_some_and(|c| tail_calls.contains(c)))
        .map(|t| t.message_id.as_str())
        .collect();
    let is_thinking = |b: &Value| {
        matches!(
            b.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    };
    for &i in &path {
        let Some(o) = obj(&lines[i].value) else {
            continue;
        };
        let Some(id) = o
            .get("message")
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .filter(|id| str_of(o, "type") == Some("assistant") && strip.contains(id))
        else {
            continue;
        };
        let content = blocks(i);
        if !content.iter().any(is_thinking) {
            continue;
        }
        if take_blocks(i, o, content, &is_thinking, &mut dropped, &mut edited) {
            plan.changes.push(Change {
                line: i as u64 + 1,
                problem: Problem::ChangedThinking,
                call_id: None,
                change: format!(
                    "drop this record: it holds only thinking of response {id}, which the next request would send changed (its children now hang on its parent; the text stays in the backup)"
                ),
            });
        } else {
            plan.changes.push(Change {
                line: i as u64 + 1,
                problem: Problem::ChangedThinking,
                call_id: None,
                change: format!(
                    "remove the thinking of response {id} from this record: the next request would send it changed (the text stays in the backup)"
                ),
            });
        }
    }
    if !dropped.is_empty() {
        // The parent a dropped record's children get: the nearest ancestor that stays.
        let resolve = |mut p: Option<String>| {
            let mut hops = 0;
            while let Some(id) = p.as_deref() {
                match index.get(id).and_then(|i| dropped.get(i)) {
                    Some(up) if hops <= lines.len() => {
                        p = up.clone();
                        hops += 1;
                    }
                    _ => break,
                }
            }
            p
        };
        for (i, l) in lines.iter().enumerate() {
            if dropped.contains_key(&i) {
                plan.edits.push(Edit::Drop(i));
                continue;
            }
            let Some(o) = obj(&l.value) else { continue };
            let relink = |key: &str| {
                str_of(o, key)
                    .and_then(|p| index.get(p))
                    .filter(|j| dropped.contains_key(j))
                    .is_some()
            };
            for key in ["parentUuid", "leafUuid"] {
                if relink(key) {
                    let to = resolve(str_of(o, key).map(str::to_owned));
                    edited
                        .entry(i)
                        .or_insert_with(|| o.clone())
                        .insert(key.into(), to.map_or(Value::Null, Value::String));
                }
            }
        }
    }
    let mut edited: Vec<(usize, Map<String, Value>)> = edited.into_iter().collect();
    edited.sort_by_key(|(i, _)| *i);
    for (i, record) in edited {
        plan.edits.push(Edit::Replace(
            i,
            serde_json::to_string(&record).unwrap_or_default(),
        ));
    }

    // Unanswered calls: the `tool_use` blocks of the assistant records that end the path.
    let mut tail = Vec::new();
    for &i in path.iter().rev() {
        let Some(o) = obj(&lines[i].value) else { break };
        if str_of(o, "type") != Some("assistant") || dropped.contains_key(&i) {
            break;
        }
        tail.push(i);
    }
    tail.reverse();
    let mut parent = tail
        .last()
        .and_then(|&i| obj(&lines[i].value))
        .and_then(|o| str_of(o, "uuid"))
        .map(str::to_owned);
    // Fields copied from the conversation, as the client writes them on a tool result.
    let prompt_id = path
        .iter()
        .rev()
        .filter_map(|&i| obj(&lines[i].value))
        .find_map(|o| str_of(o, "promptId"))
        .map(str::to_owned);
    let mut line = next_line;
    for &i in &tail {
        let Some(o) = obj(&lines[i].value) else {
            continue;
        };
        let Some(record_uuid) = str_of(o, "uuid") else {
            continue;
        };
        for id in uses_in(i) {
            if let Some(t) = str_of(o, "timestamp").and_then(time_ms) {
                plan.unanswered_at_ms = Some(plan.unanswered_at_ms.map_or(t, |m| m.max(t)));
            }
            let uuid = uuid_v4();
            let mut r = Map::new();
            r.insert("parentUuid".into(), json!(parent));
            r.insert(
                "isSidechain".into(),
                o.get("isSidechain").cloned().unwrap_or(json!(false)),
            );
            if let Some(a) = o.get("agentId") {
                r.insert("agentId".into(), a.clone());
            }
            if let Some(p) = &prompt_id {
                r.insert("promptId".into(), json!(p));
            }
            r.insert("type".into(), json!("user"));
            r.insert(
                "message".into(),
                json!({"role": "user", "content": [{
                    "type": "tool_result",
                    "content": CLAUDE_INTERRUPTED,
                    "is_error": true,
                    "tool_use_id": id,
                }]}),
            );
            r.insert("uuid".into(), json!(uuid));
            r.insert("timestamp".into(), json!(now_iso()));
            r.insert(
                "toolUseResult".into(),
                json!(format!("Error: {CLAUDE_INTERRUPTED}")),
            );
            r.insert("sourceToolAssistantUUID".into(), json!(record_uuid));
            for k in [
                "userType",
                "entrypoint",
                "cwd",
                "sessionId",
                "version",
                "gitBranch",
            ] {
                if let Some(v) = o.get(k) {
                    r.insert(k.into(), v.clone());
                }
            }
            let words = format!(
                "answer {id} (line {}) with an error tool_result \"{CLAUDE_INTERRUPTED}\"",
                i + 1
            );
            plan.answer(line, id, r, words);
            parent = Some(uuid);
            line += 1;
        }
    }
}
