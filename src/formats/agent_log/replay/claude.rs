//! Claude Code `stream-json` records.

use serde_json::Value;

use super::MAX_ERROR_MESSAGE;
use super::events::api_error;
use super::state::State;
use crate::formats::agent_log::read::JsonRecord;
use crate::json::scan::Seg;
use crate::model::Part;
use crate::session::{ErrorInfo, EventKind, Observation, Seq};
use crate::source::Span;
use crate::text::capped;

impl State {
    /// A Claude Code `--output-format stream-json` record: a session per `session_id`, a tool
    /// part per `tool_use` (running until its `tool_result`), the synthetic "API Error"
    /// assistant message and a `result` with `is_error` as the session's errors.
    pub(super) fn apply_claude(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        ty: &str,
        session: &str,
    ) {
        // Its tool results are filed into older messages (see `claude_tool`).
        self.not_quiet();
        self.current_session = Some(session.to_owned());
        let si = self.session_slot(session);
        self.analysis.sessions[si].recorded_from = Some(crate::core::Format::ClaudeTranscript);
        let blocks = obj
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array);
        match ty {
            "assistant" => {
                let message = obj.get("message");
                let msg_id = message
                    .and_then(|m| m.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let synthetic = message.and_then(|m| m.get("model")).and_then(Value::as_str)
                    == Some("<synthetic>");
                // Each block's place, found in one walk of the array.
                let places = rec.items(&["message".into(), "content".into()]);
                for (k, block) in blocks.into_iter().flatten().enumerate() {
                    let at = |key: &str| rec.locate_from(places.get(k), &[Seg::Key(key)]);
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_use") => {
                            let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                            let part = serde_json::json!({
                                "id": id, "sessionID": session, "messageID": msg_id,
                                "type": "tool", "callID": id,
                                "tool": block.get("name").and_then(Value::as_str).unwrap_or_default(),
                                "state": {"status": "running", "input": {}, "time": {"start": 0}},
                            });
                            self.claude_part(si, seq, rec.span, at("id"), &part);
                        }
                        Some("text") if synthetic => {
                            let text = block
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default();
                            if let Some(mut info) = api_error(text, at("text")) {
                                let mut context = self.media_results.clone();
                                for c in std::mem::take(&mut self.last_results) {
                                    if !context.iter().any(|m| m.0 == c.0) {
                                        context.push(c);
                                    }
                                }
                                info.context = context;
                                let span = at("text").unwrap_or(rec.span);
                                self.event(
                                    seq,
                                    span,
                                    Some(session.to_owned()),
                                    EventKind::SessionError(Box::new(info)),
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                if blocks.is_some_and(|b| {
                    b.iter()
                        .any(|x| x.get("type").and_then(Value::as_str) == Some("tool_result"))
                }) {
                    self.last_results.clear();
                }
                // Each block's place, found in one walk of the array.
                let places = rec.items(&["message".into(), "content".into()]);
                for (k, block) in blocks.into_iter().flatten().enumerate() {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let id = block
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                    let Some((mi, tool)) = self.claude_tool(si, id) else {
                        continue;
                    };
                    let msg_id = self.analysis.sessions[si].messages[mi].id.clone();
                    let state = if failed {
                        serde_json::json!({"status": "error", "input": {}, "error": "tool_result is_error", "time": {"start": 0, "end": 0}})
                    } else {
                        serde_json::json!({"status": "completed", "input": {}, "output": "", "title": "", "metadata": {}, "time": {"start": 0, "end": 0}})
                    };
                    let part = serde_json::json!({
                        "id": id, "sessionID": session, "messageID": msg_id,
                        "type": "tool", "callID": id, "tool": tool, "state": state,
                    });
                    let span = rec.locate_from(places.get(k), &[Seg::Key("tool_use_id")]);
                    let kinds: Vec<&str> = match block.get("content") {
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(|c| c.get("type").and_then(Value::as_str))
                            .collect(),
                        _ => vec!["text"],
                    };
                    if let Some(at) = span
                        && self.last_results.len() < 16
                    {
                        let media = kinds.iter().find(|k| matches!(**k, "image" | "document"));
                        let tool_use = self.claude_use_span(si, id);
                        let mut found = Vec::new();
                        if let Some(u) = tool_use {
                            found.push((u, format!("`{tool}` called here")));
                        }
                        match media {
                            Some(m) => {
                                found.push((at, format!("the result of `{tool}` ({id}) is an {m} block; every later request resends it")));
                                if self.media_results.len() < 16 {
                                    self.media_results.extend(found);
                                }
                            }
                            None => {
                                found.push((at, format!("the result of `{tool}` ({id}): the last turn before the failed request")));
                                self.last_results.extend(found);
                            }
                        }
                    }
                    self.claude_part(si, seq, rec.span, span, &part);
                }
            }
            "result" if obj.get("is_error").and_then(Value::as_bool) == Some(true) => {
                let text = obj
                    .get("result")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let span = rec.locate(&["is_error".into()]);
                let mut info =
                    api_error(text, rec.locate(&["result".into()])).unwrap_or(ErrorInfo {
                        message: capped(text, MAX_ERROR_MESSAGE),
                        message_span: span,
                        ..ErrorInfo::default()
                    });
                info.data = serde_json::json!({
                    "is_error": true,
                    "subtype": obj.get("subtype").cloned().unwrap_or(Value::Null),
                });
                self.event(
                    seq,
                    span.unwrap_or(rec.span),
                    Some(session.to_owned()),
                    EventKind::SessionError(Box::new(info)),
                );
            }
            _ => {}
        }
    }

    /// The message index and tool name of the tool part with call id `id` in session `si`.
    fn claude_tool(&mut self, si: usize, id: &str) -> Option<(usize, String)> {
        let (mi, pi) = self.claude_call(si, id)?;
        let tool = self.analysis.sessions[si].messages[mi].parts[pi]
            .part
            .tool()?;
        Some((mi, tool.tool.clone()))
    }

    /// Where the tool part with call id `id` was first written (its `tool_use`).
    fn claude_use_span(&mut self, si: usize, id: &str) -> Option<Span> {
        let (mi, pi) = self.claude_call(si, id)?;
        let part = &self.analysis.sessions[si].messages[mi].parts[pi];
        part.history.first().map(|o| o.span)
    }

    /// The first tool part of the session (in message order, then part order) with call id
    /// `id`: from the session's index of calls, built on the first question (Claude Code
    /// stream-json logs only) and kept by [`State::file_part`]; an entry that no longer holds
    /// the call (its part was rewritten with another) is searched for again.
    pub(super) fn claude_call(&mut self, si: usize, id: &str) -> Option<(usize, usize)> {
        let messages = &self.analysis.sessions[si].messages;
        let holds = |(mi, pi): (usize, usize)| {
            let part = messages.get(mi).and_then(|m| m.parts.get(pi));
            part.and_then(|p| p.part.tool())
                .is_some_and(|t| t.call_id == id)
        };
        if self.claude_calls.len() <= si {
            self.claude_calls.resize_with(si + 1, || None);
        }
        let index = self.claude_calls[si].get_or_insert_with(|| {
            crate::first_of(messages.iter().enumerate().flat_map(|(mi, m)| {
                (m.parts.iter().enumerate())
                    .filter_map(move |(pi, p)| Some((p.part.tool()?.call_id.clone(), (mi, pi))))
            }))
        });
        match index.get(id).copied() {
            Some(at) if holds(at) => Some(at),
            Some(_) => messages.iter().enumerate().find_map(|(mi, m)| {
                let pi = m
                    .parts
                    .iter()
                    .position(|p| p.part.tool().is_some_and(|t| t.call_id == id))?;
                Some((mi, pi))
            }),
            None => None,
        }
    }

    fn claude_part(&mut self, si: usize, seq: Seq, span: Span, at: Option<Span>, raw: &Value) {
        let part = Part::from_value(raw);
        let observation = Observation {
            seq,
            span: at.unwrap_or(span),
            status: part.tool().map(|t| t.state.status_name()),
            status_span: at,
        };
        let mi = self.message_slot(si, &part.message_id);
        self.file_part(si, mi, part, observation);
    }
}
