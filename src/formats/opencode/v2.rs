//! OpenCode's v2 session store: the `session_message` table of the v2 runtime (the "next"
//! channel, `packages/core/src/session/message.ts`).
//!
//! A row holds one whole message: its `type` column (`user`, `synthetic`, `system`, `shell`,
//! `assistant`, `compaction`, `agent-switched`, `model-switched`) and its `data` (the message
//! minus `id` and `type`; times are epoch milliseconds). An assistant message is one model step:
//! its `content` lists text, reasoning and tool items, each tool with its state (`pending` with
//! the raw input text, `running`, `completed` with `content`/`structured`/`result`, `error` with
//! `{type, message}`).
//!
//! rewind reads each row into the session model as the message-v2 records it corresponds to
//! (an info, then one part per content item), so that replay, the checks and the rebuilt request
//! treat both stores alike. A part is named `<row id>.content.<index>`: it points at its row.
//! What the v2 runtime sends differs from the v1 `toModelMessages` and is rebuilt as such
//! (`crate::formats::opencode::request`, `Session::runtime_v2`):
//! * history starts at the latest `compaction` row (read as a user message with a `compaction`
//!   part), the rows before it are not sent;
//! * an assistant message with an `error` is still sent;
//! * a tool that is neither `completed` nor `error` is sent as a call without a result.
//!
//! `system` rows become the system prompt and agent/model switches send nothing: they are not
//! read as messages, nor is a compaction whose `status` (later versions) is not `completed`.
//! Rows of a type rewind does not know are skipped.

use serde_json::{Map, Value, json};

use super::stored::{StoredMessage, StoredRecord};

/// One `session_message` row: its id, `type` column and `data` text.
pub struct Row<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub data: &'a str,
}

/// Reads a session's rows, in order, into stored messages. `directory` is the session's folder
/// (the v2 store does not repeat it per message). `record` makes a stored record of an id and
/// a JSON text (kept as text, or read into the model).
pub struct Reader<'d> {
    directory: &'d str,
    agent: String,
    /// `(providerID, modelID)` of the model in use.
    model: (String, String),
    /// The last message that prompted the model (a user, synthetic, shell or compaction row).
    parent: String,
}

impl<'d> Reader<'d> {
    pub fn new(directory: &'d str) -> Self {
        Reader {
            directory,
            agent: String::new(),
            model: (String::new(), String::new()),
            parent: String::new(),
        }
    }

    /// The model a session starts with: its first model switch or assistant, so that user
    /// messages before either still name the model they prompted.
    pub fn prime(&mut self, kind: &str, data: &str) {
        if !self.model.0.is_empty() || !matches!(kind, "model-switched" | "assistant") {
            return;
        }
        if let Ok(v) = serde_json::from_str::<Value>(data)
            && let Some(m) = v.get("model")
        {
            self.model = model_ref(m);
            if let Some(a) = v.get("agent").and_then(Value::as_str) {
                self.agent = a.to_owned();
            }
        }
    }

    /// The stored message a row is read as, or `None` for a row that is not a message the
    /// model receives in the conversation (switches, system text, unknown types).
    pub fn read(
        &mut self,
        row: &Row<'_>,
        record: &mut dyn FnMut(String, String, super::stored::Kind) -> StoredRecord,
    ) -> Option<StoredMessage> {
        use super::stored::Kind;
        let v: Value = match serde_json::from_str(row.data) {
            Ok(v @ Value::Object(_)) => v,
            // Kept as it is: replay reports it as undecodable, pointing at the row.
            _ => {
                return Some(StoredMessage {
                    id: row.id.to_owned(),
                    info: Some(record(row.id.to_owned(), row.data.to_owned(), Kind::Info)),
                    parts: Vec::new(),
                });
            }
        };
        let time = v.get("time").cloned().unwrap_or(Value::Null);
        let created = time.get("created").cloned().unwrap_or(json!(0));
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
        let mut parts: Vec<(String, Value)> = Vec::new();
        let part_id = |i: usize| format!("{}.content.{i}", row.id);
        let info = match row.kind {
            "agent-switched" => {
                self.agent = s("agent").to_owned();
                return None;
            }
            "model-switched" => {
                if let Some(m) = v.get("model") {
                    self.model = model_ref(m);
                }
                return None;
            }
            // Later versions write a compaction row before its summary is done (`status`): only
            // a completed one is sent, and only a completed one cuts the history.
            "compaction"
                if v.get("status")
                    .and_then(Value::as_str)
                    .is_some_and(|st| st != "completed") =>
            {
                return None;
            }
            "user" | "synthetic" | "shell" | "compaction" => {
                let text = match row.kind {
                    "user" => Some(json!({"type": "text", "text": s("text")})),
                    "synthetic" => {
                        Some(json!({"type": "text", "text": s("text"), "synthetic": true}))
                    }
                    "shell" => Some(json!({
                        "type": "text",
                        "text": format!("Shell command: {}\n\n{}", s("command"), s("output")),
                    })),
                    _ => None,
                };
                if let Some(t) = text {
                    parts.push((part_id(0), t));
                }
                if row.kind == "user"
                    && let Some(files) = v.get("files").and_then(Value::as_array)
                {
                    for (i, f) in files.iter().enumerate() {
                        parts.push((format!("{}.files.{i}", row.id), file_part(f)));
                    }
                }
                if row.kind == "compaction" {
                    parts.push((
                        part_id(0),
                        json!({"type": "compaction", "auto": s("reason") == "auto"}),
                    ));
                }
                self.parent = row.id.to_owned();
                json!({
                    "role": "user",
                    "time": {"created": created},
                    "agent": self.agent,
                    "model": {"providerID": self.model.0, "modelID": self.model.1},
                })
            }
            "assistant" => {
                if let Some(m) = v.get("model") {
                    self.model = model_ref(m);
                }
                if let Some(a) = v.get("agent").and_then(Value::as_str) {
                    self.agent = a.to_owned();
                }
                parts.extend(content_parts(&v, &created, row.id));
                self.assistant_info(&v, created, &time)
            }
            _ => return None,
        };
        Some(StoredMessage {
            id: row.id.to_owned(),
            info: Some(record(row.id.to_owned(), info.to_string(), Kind::Info)),
            parts: parts
                .into_iter()
                .map(|(id, p)| record(id, p.to_string(), Kind::Part))
                .collect(),
        })
    }

    /// The info of an `assistant` row `v` created at `created` (its `time` is `time`), with the
    /// model, agent and parent the rows before it set.
    fn assistant_info(&self, v: &Value, created: Value, time: &Value) -> Value {
        let mut info = Map::new();
        info.insert("role".into(), json!("assistant"));
        let mut t = Map::new();
        t.insert("created".into(), created);
        if let Some(c) = time.get("completed") {
            t.insert("completed".into(), c.clone());
        }
        info.insert("time".into(), Value::Object(t));
        info.insert("parentID".into(), json!(self.parent));
        info.insert("modelID".into(), json!(self.model.1));
        info.insert("providerID".into(), json!(self.model.0));
        info.insert("mode".into(), json!(self.agent));
        info.insert("agent".into(), json!(self.agent));
        info.insert(
            "path".into(),
            json!({"cwd": self.directory, "root": self.directory}),
        );
        info.insert("cost".into(), v.get("cost").cloned().unwrap_or(json!(0)));
        info.insert(
            "tokens".into(),
            v.get("tokens").cloned().unwrap_or(json!({
                "input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}
            })),
        );
        if let Some(f) = v.get("finish") {
            info.insert("finish".into(), f.clone());
        }
        if let Some(e) = v.get("error") {
            info.insert("error".into(), named_error(e));
        }
        Value::Object(info)
    }
}

/// The parts of the `content` of an assistant row `v` (of id `row_id`, created at `created`),
/// each with its id.
fn content_parts<'v>(
    v: &'v Value,
    created: &'v Value,
    row_id: &'v str,
) -> impl Iterator<Item = (String, Value)> + 'v {
    let content = v.get("content").and_then(Value::as_array).into_iter();
    content.flatten().enumerate().filter_map(move |(i, item)| {
        content_part(item, created).map(|p| (format!("{row_id}.content.{i}"), p))
    })
}

/// A file attached to a user row, as a `file` part.
fn file_part(f: &Value) -> Value {
    let mut file = Map::new();
    file.insert("type".into(), json!("file"));
    file.insert("mime".into(), f.get("mime").cloned().unwrap_or(json!("")));
    file.insert("url".into(), f.get("uri").cloned().unwrap_or(json!("")));
    if let Some(n) = f.get("name").filter(|n| n.is_string()) {
        file.insert("filename".into(), n.clone());
    }
    Value::Object(file)
}

/// `(providerID, modelID)` of a v2 model reference (`{id, providerID}`).
fn model_ref(m: &Value) -> (String, String) {
    let s = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (s("providerID"), s("id"))
}

/// A v2 error (`{type, message}`) as a message-v2 named error.
fn named_error(e: &Value) -> Value {
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| e.to_string(), str::to_owned);
    let mut data = Map::new();
    data.insert("message".into(), json!(message));
    if let Some(t) = e
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| *t != "unknown")
    {
        data.insert("type".into(), json!(t));
    }
    json!({"name": "UnknownError", "data": data})
}

/// The text of a tool's output content (its `text` items, one after the other).
fn content_text(state: &Value) -> String {
    state
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One assistant content item as a message-v2 part.
fn content_part(item: &Value, created: &Value) -> Option<Value> {
    let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
    match s("type") {
        "text" => Some(json!({"type": "text", "text": s("text")})),
        "reasoning" => {
            let mut r = Map::new();
            r.insert("type".into(), json!("reasoning"));
            r.insert("text".into(), json!(s("text")));
            let start = item
                .get("time")
                .and_then(|t| t.get("created"))
                .unwrap_or(created);
            r.insert("time".into(), json!({"start": start}));
            if let Some(m) = item.get("providerMetadata").filter(|m| m.is_object()) {
                r.insert("metadata".into(), m.clone());
            }
            Some(Value::Object(r))
        }
        "tool" => {
            let state = item.get("state").cloned().unwrap_or(Value::Null);
            let time = item.get("time").cloned().unwrap_or(Value::Null);
            let at = |k: &str| time.get(k).cloned();
            let start = at("ran")
                .or_else(|| at("created"))
                .unwrap_or_else(|| created.clone());
            let end = at("completed").unwrap_or_else(|| start.clone());
            let input = state
                .get("input")
                .filter(|i| i.is_object())
                .cloned()
                .unwrap_or(json!({}));
            let st = match state.get("status").and_then(Value::as_str) {
                Some("pending" | "streaming") => json!({
                    "status": "pending",
                    "input": {},
                    "raw": state.get("input").and_then(Value::as_str).unwrap_or_default(),
                }),
                Some("running") => json!({
                    "status": "running", "input": input, "time": {"start": start},
                }),
                Some("completed") => json!({
                    "status": "completed",
                    "input": input,
                    "output": content_text(&state),
                    "title": "",
                    "metadata": state.get("structured").filter(|m| m.is_object()).cloned().unwrap_or(json!({})),
                    "time": {"start": start, "end": end},
                }),
                Some("error") => json!({
                    "status": "error",
                    "input": input,
                    "error": state.get("error").map(|e| e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned)).unwrap_or_default(),
                    "time": {"start": start, "end": end},
                }),
                // A status of another version: kept as it is, for the schema check to report.
                _ => state,
            };
            let mut t = Map::new();
            t.insert("type".into(), json!("tool"));
            t.insert("callID".into(), json!(s("id")));
            t.insert("tool".into(), json!(s("name")));
            t.insert("state".into(), st);
            let executed = item
                .get("provider")
                .and_then(|p| p.get("executed"))
                .and_then(Value::as_bool)
                == Some(true);
            if executed {
                t.insert("metadata".into(), json!({"providerExecuted": true}));
            }
            Some(Value::Object(t))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::opencode::stored::{Kind, Place};

    fn read_all(rows: &[(&str, &str, &str)]) -> Vec<StoredMessage> {
        let mut r = Reader::new("/w");
        for (_, kind, data) in rows {
            r.prime(kind, data);
        }
        let mut rec = |id: String, text: String, _: Kind| StoredRecord::new(id, text, Place::Row);
        rows.iter()
            .filter_map(|(id, kind, data)| r.read(&Row { id, kind, data }, &mut rec))
            .collect()
    }

    #[test]
    fn rows_read_as_message_v2_records() {
        let got = read_all(&[
            ("msg_1", "user", r#"{"text":"hi","time":{"created":1}}"#),
            (
                "msg_2",
                "agent-switched",
                r#"{"agent":"plan","time":{"created":2}}"#,
            ),
            (
                "msg_3",
                "assistant",
                r#"{"agent":"build","model":{"id":"m","providerID":"p"},"time":{"created":3,"completed":4},
                   "content":[{"type":"text","id":"t","text":"ok"},
                              {"type":"tool","id":"call_1","name":"bash","state":{"status":"running","input":{"c":1},"structured":{},"content":[]},"time":{"created":3}}]}"#,
            ),
            ("msg_4", "future-kind", "{}"),
            (
                "msg_6",
                "compaction",
                r#"{"reason":"auto","summary":"","recent":"","status":"running","time":{"created":5}}"#,
            ),
            ("msg_5", "user", "not json"),
        ]);
        assert_eq!(got.len(), 3);
        let user = got[0].info.as_ref().unwrap();
        assert!(user.text.contains(r#""providerID":"p""#), "{}", user.text);
        assert_eq!(got[0].parts[0].id, "msg_1.content.0");
        let a: Value = serde_json::from_str(&got[1].info.as_ref().unwrap().text).unwrap();
        assert_eq!(a["parentID"], "msg_1");
        assert_eq!(a["time"]["completed"], 4);
        let tool: Value = serde_json::from_str(&got[1].parts[1].text).unwrap();
        assert_eq!(tool["callID"], "call_1");
        assert_eq!(tool["state"]["status"], "running");
        assert!(crate::model::schema::validate_part(&tool).is_empty());
        assert!(crate::model::schema::validate_message(&a).is_empty());
        assert_eq!(got[2].info.as_ref().unwrap().text, "not json");
    }
}
