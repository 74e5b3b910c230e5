//! OpenCode's stream processor (and link-assistant/agent's, which shares it), as state machines.
//!
//! The classic processor (`opencode-storage.md` §3.1, `agent-log-format.md` §3.9):
//! * `start-step` writes a `step-start` part, `finish-step` a `step-finish`;
//! * text and reasoning are written from their first delta and again at their end;
//! * `tool-input-start` writes the tool `pending`, `tool-call` (for a known call) `running`;
//! * `tool-result` / `tool-error` are applied only to a `running` tool: for a `pending` one they
//!   are dropped silently (PR #16751 layer 1);
//! * an `error` part is thrown: the session gets the error (`UnknownError` unless it is a
//!   retryable API error, which is retried on the same message *without* a `step-finish` for the
//!   interrupted step — layer 2);
//! * cleanup, on every exit, marks each tool that is not `completed`/`error` as `error` "Tool
//!   execution aborted".
//!
//! Profiles change that: `opencode-fixed` accepts tool errors for `pending` tools, writes a
//! recovery `step-finish` before a retry, and skips events that could not be decoded (JSON or
//! shape) and reads on, as codex does; `agent-0.8` writes a tool error as `status: "failed"`,
//! which its own schema rejects — the write throws a `ZodError`, and the tool stays `running`.
//!
//! A replay stops where the capture stops: a tool that got its `tool-call` in a stream that ended
//! normally is *awaiting execution* (the SDK runs it after the model asked for it), not aborted.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::part::{ErrorKind, PartKind, StreamError};
use super::store::{Store, Streaming, now};
use super::{Applied, Processor, Profile};
use crate::core::Format;
use crate::model::{TOOL_ABORTED, schema};
use crate::session::{Analysis, ErrorInfo, EventKind, LogLevel, Seq, StreamOutcome};
use crate::source::{FileId, Span};

#[derive(Clone, Copy, Debug)]
struct Flags {
    accept_pending_error: bool,
    recovery_step_finish: bool,
    skip_parse_errors: bool,
    failed_status: bool,
}

#[derive(Clone, Debug)]
struct Tool {
    idx: usize,
    call_id: String,
    name: String,
    input: Value,
    status: &'static str,
    start: u64,
    /// The provider runs it (and streams its result): stored as `metadata.providerExecuted`.
    provider_executed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Reading,
    /// Threw a retryable error: the rest of this stream is never read; a new model call in the
    /// capture (the retry) is.
    Retrying,
    /// Threw: nothing more is read.
    Stopped,
}

/// The processor.
pub struct Opencode {
    profile: Profile,
    flags: Flags,
    store: Store,
    /// `toolcalls`: by call id, removed once the tool is terminal.
    calls: HashMap<String, usize>,
    tools: Vec<Tool>,
    text: Option<Streaming>,
    reasoning: HashMap<String, Streaming>,
    run: Run,
    outcome: StreamOutcome,
    step_open: bool,
    /// Where the processor threw, and the tool whose rejected write made it throw (agent-0.8).
    threw: Option<(Seq, Span)>,
    rejected_tool: Option<usize>,
    stopped_event: Option<usize>,
}

impl Opencode {
    pub fn new(profile: Profile, file: FileId, format: Format, session_id: &str) -> Self {
        let flags = match profile {
            Profile::OpencodeFixed => Flags {
                accept_pending_error: true,
                recovery_step_finish: true,
                skip_parse_errors: true,
                failed_status: false,
            },
            Profile::Agent08 => Flags {
                accept_pending_error: false,
                recovery_step_finish: false,
                skip_parse_errors: false,
                failed_status: true,
            },
            _ => Flags {
                accept_pending_error: false,
                recovery_step_finish: false,
                skip_parse_errors: false,
                failed_status: false,
            },
        };
        Self {
            profile,
            flags,
            store: Store::new(file, format, session_id),
            calls: HashMap::new(),
            tools: Vec::new(),
            text: None,
            reasoning: HashMap::new(),
            run: Run::Reading,
            outcome: StreamOutcome::Ended,
            step_open: false,
            threw: None,
            rejected_tool: None,
            stopped_event: None,
        }
    }

    fn tool_state(t: &Tool, status: &str, extra: Value, seq: Seq) -> Value {
        let mut state = json!({"status": status, "input": t.input});
        match status {
            "pending" => state["raw"] = json!(""),
            "running" => state["time"] = json!({"start": t.start}),
            _ => state["time"] = json!({"start": t.start, "end": now(seq)}),
        }
        if let (Value::Object(s), Value::Object(e)) = (&mut state, extra) {
            s.extend(e);
        }
        let mut body = json!({"type": "tool", "callID": t.call_id, "tool": t.name, "state": state});
        if t.provider_executed {
            body["metadata"] = json!({"providerExecuted": true});
        }
        body
    }

    fn write_tool(&mut self, k: usize, status: &'static str, extra: Value, a: &Applied<'_>) {
        let body = Self::tool_state(&self.tools[k], status, extra, a.seq);
        let idx = self.tools[k].idx;
        self.store.write(
            Some(idx),
            body,
            a.seq,
            a.span,
            a.focus.or(Some(a.span.head())),
        );
        self.tools[k].status = status;
    }

    fn dropped(&mut self, a: &Applied<'_>, k: Option<usize>, call_id: &str, what: &str) {
        let (part_id, tool, reason) = match k {
            Some(k) => {
                let t = &self.tools[k];
                let part_id = self
                    .store
                    .part(t.idx)
                    .map(|p| p.part.id.clone())
                    .unwrap_or_default();
                let reason = format!(
                    "the tool was `{}`: this processor applies `{what}` only to a `running` tool",
                    t.status
                );
                (part_id, t.name.clone(), reason)
            }
            None => (
                String::new(),
                String::new(),
                format!("no tool part has call id {call_id} (no `tool-input-start` came first)"),
            ),
        };
        self.store.event(
            a.seq,
            a.span,
            EventKind::ProcessorDropped(Box::new(crate::session::DroppedOutcome {
                part_id,
                call_id: call_id.to_owned(),
                tool,
                what: what.to_owned(),
                reason,
            })),
        );
    }

    /// The processor throws `info` at `a`.
    fn throw(&mut self, a: &Applied<'_>, info: ErrorInfo, retryable: bool) {
        self.store.event(
            a.seq,
            a.span,
            EventKind::Log {
                level: LogLevel::Error,
                service: "session.processor".into(),
                message: "process".into(),
                error: Some(Box::new(info.clone())),
            },
        );
        self.threw = Some((a.seq, a.span));
        let name = info.name.clone().unwrap_or_else(|| "Error".into());
        if retryable {
            if self.flags.recovery_step_finish && self.step_open {
                self.finish_step("error", 0, 0, a);
            }
            self.outcome = StreamOutcome::Retrying {
                seq: a.seq,
                span: a.span,
                error: format!("APIError: {}", headline(&info.message)),
            };
            self.run = Run::Retrying;
            return;
        }
        // `MessageV2.fromError`: anything that is not an API error is an `UnknownError` whose
        // message is the thrown error's `toString()`.
        let message = if info.message.starts_with(&name) {
            info.message.clone()
        } else {
            format!("{name}: {}", info.message)
        };
        let session_error = ErrorInfo {
            name: Some("UnknownError".into()),
            message: message.clone(),
            retryable: Some(false),
            data: json!({"name": "UnknownError", "data": {"message": crate::session::first_line(&message, 400)}}),
            message_span: info.message_span,
            payload: info.payload.clone(),
            embedded_event: info.embedded_event,
            ..ErrorInfo::default()
        };
        self.store.event(
            a.seq,
            a.span,
            EventKind::SessionError(Box::new(session_error)),
        );
        self.outcome = StreamOutcome::Failed {
            seq: a.seq,
            span: a.span,
            error: format!("UnknownError: {}", headline(&message)),
        };
        self.run = Run::Stopped;
        self.stopped_event = Some(self.store.analysis.events.len());
        self.store
            .event(a.seq, a.span, EventKind::ProcessorStopped { remaining: 0 });
    }

    fn finish_step(&mut self, reason: &str, input: u64, output: u64, a: &Applied<'_>) {
        let body = json!({
            "type": "step-finish", "reason": reason, "cost": 0,
            "tokens": {"input": input, "output": output, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        });
        self.store.write(None, body, a.seq, a.span, None);
        self.step_open = false;
    }

    fn text_write(&mut self, a: &Applied<'_>, reasoning: Option<&str>, end: bool) {
        let state = match reasoning {
            Some(id) => self.reasoning.get_mut(id),
            None => self.text.as_mut(),
        };
        let Some(st) = state else {
            return;
        };
        let mut time = json!({"start": st.start});
        if end {
            time["end"] = json!(now(a.seq));
        }
        let text = if end {
            st.text.trim_end().to_owned()
        } else {
            st.text.clone()
        };
        let ty = if reasoning.is_some() {
            "reasoning"
        } else {
            "text"
        };
        let body = json!({"type": ty, "text": text, "time": time});
        let idx = st.idx;
        let written = self.store.write(idx, body, a.seq, a.span, None);
        if let Some(st) = match reasoning {
            Some(id) => self.reasoning.get_mut(id),
            None => self.text.as_mut(),
        } {
            st.idx = Some(written);
        }
    }

    fn start_step(&mut self, a: &Applied<'_>) {
        self.store
            .write(None, json!({"type": "step-start"}), a.seq, a.span, None);
        self.step_open = true;
    }

    fn text_start(&mut self, a: &Applied<'_>) {
        self.text = Some(Streaming {
            start: now(a.seq),
            ..Streaming::default()
        });
    }

    /// Text is written from its first (non-empty) delta.
    fn text_delta(&mut self, delta: &str, a: &Applied<'_>) {
        let Some(t) = self.text.as_mut() else {
            return;
        };
        t.push(delta);
        if t.idx.is_none() && !delta.is_empty() {
            self.text_write(a, None, false);
        }
    }

    fn text_end(&mut self, a: &Applied<'_>) {
        self.text_write(a, None, true);
        self.text = None;
    }

    fn reasoning_start(&mut self, id: &str, a: &Applied<'_>) {
        self.reasoning.entry(id.to_owned()).or_insert(Streaming {
            start: now(a.seq),
            ..Streaming::default()
        });
    }

    /// Reasoning is written from its first (non-empty) delta.
    fn reasoning_delta(&mut self, id: &str, delta: &str, a: &Applied<'_>) {
        let Some(r) = self.reasoning.get_mut(id) else {
            return;
        };
        r.push(delta);
        if r.idx.is_none() && !delta.is_empty() {
            self.text_write(a, Some(id), false);
        }
    }

    fn reasoning_end(&mut self, id: &str, a: &Applied<'_>) {
        self.text_write(a, Some(id), true);
        self.reasoning.remove(id);
    }

    /// The tool part is written `pending` (again, for a call id already known); a tool the
    /// provider executes is marked `providerExecuted` in the part's metadata.
    fn tool_input_start(&mut self, id: &str, name: &str, provider_executed: bool, a: &Applied<'_>) {
        let existing = self.calls.get(id).copied();
        let k = match existing {
            Some(k) => k,
            None => {
                self.tools.push(Tool {
                    idx: usize::MAX,
                    call_id: id.to_owned(),
                    name: name.to_owned(),
                    input: json!({}),
                    status: "pending",
                    start: now(a.seq),
                    provider_executed,
                });
                self.tools.len() - 1
            }
        };
        let body = Self::tool_state(&self.tools[k], "pending", json!({}), a.seq);
        let idx = (existing.is_some()).then_some(self.tools[k].idx);
        let written = self
            .store
            .write(idx, body, a.seq, a.span, a.focus.or(Some(a.span.head())));
        self.tools[k].idx = written;
        self.tools[k].status = "pending";
        self.calls.insert(id.to_owned(), k);
    }

    /// A known call goes `running` with its input.
    fn tool_call(&mut self, id: &str, input: &str, a: &Applied<'_>) {
        match self.calls.get(id).copied() {
            None => self.dropped(a, None, id, "tool-call"),
            Some(k) => {
                self.tools[k].input = serde_json::from_str(input).unwrap_or(json!({}));
                self.tools[k].start = now(a.seq);
                self.write_tool(k, "running", json!({}), a);
            }
        }
    }

    /// A result applies only to a `running` tool.
    fn tool_result(&mut self, id: &str, output: &str, a: &Applied<'_>) {
        let k = self.calls.get(id).copied();
        match k {
            Some(k) if self.tools[k].status == "running" => {
                let extra = json!({"output": output, "title": "", "metadata": {}});
                self.write_tool(k, "completed", extra, a);
                self.calls.remove(id);
            }
            _ => self.dropped(a, k, id, "tool-result"),
        }
    }

    /// A tool error applies to a `running` tool (and, fixed, a `pending` one); agent-0.8's
    /// `failed` status is rejected by its own schema, which throws.
    fn tool_error(&mut self, id: &str, error: &str, a: &Applied<'_>) {
        let k = self.calls.get(id).copied();
        let applies = k.is_some_and(|k| {
            self.tools[k].status == "running"
                || (self.flags.accept_pending_error && self.tools[k].status == "pending")
        });
        let Some(k) = k.filter(|_| applies) else {
            self.dropped(a, k, id, "tool-error");
            return;
        };
        if self.flags.failed_status {
            let body = Self::tool_state(&self.tools[k], "failed", json!({"error": error}), a.seq);
            let issues = schema::validate_part(&body);
            if !issues.is_empty() {
                self.rejected_tool = Some(k);
                let zod = zod_message(&issues);
                let info = ErrorInfo {
                    name: Some("ZodError".into()),
                    message: zod,
                    message_span: a.focus.or(Some(a.span.head())),
                    ..ErrorInfo::default()
                };
                self.throw(a, info, false);
                return;
            }
        }
        if self.tools[k].status == "pending" {
            self.tools[k].start = now(a.seq);
        }
        self.write_tool(k, "error", json!({"error": error}), a);
        self.calls.remove(id);
    }

    /// A stream error is thrown (a decode error is skipped by `opencode-fixed`).
    fn error(&mut self, e: &StreamError, a: &Applied<'_>) {
        let info = a.error.cloned().unwrap_or_else(|| ErrorInfo {
            name: Some(e.name.clone()),
            message: e.message.clone(),
            message_span: a.focus.or(Some(a.span.head())),
            ..ErrorInfo::default()
        });
        if self.flags.skip_parse_errors && e.is_parse_error() {
            self.store.event(
                a.seq,
                a.span,
                EventKind::ProcessorSkipped {
                    reason: format!("skipped the malformed event ({}) and read on", e.name),
                },
            );
            return;
        }
        let retryable = e.kind == ErrorKind::Provider && e.retryable;
        self.throw(a, info, retryable);
    }
}

impl Processor for Opencode {
    fn profile(&self) -> Profile {
        self.profile
    }

    fn event(&mut self, seq: Seq, span: Span, kind: EventKind) {
        self.store.event(seq, span, kind);
    }

    fn apply(&mut self, a: &Applied<'_>) {
        match self.run {
            Run::Stopped => return,
            Run::Retrying => {
                if matches!(a.part, PartKind::StartStep) {
                    self.run = Run::Reading;
                } else {
                    return;
                }
            }
            Run::Reading => {}
        }
        match a.part {
            PartKind::ResponseMetadata { id } => {
                if let Some(id) = id {
                    self.store.name_message(id);
                }
            }
            PartKind::StartStep => self.start_step(a),
            PartKind::FinishStep {
                reason,
                input_tokens,
                output_tokens,
            } => self.finish_step(reason, *input_tokens, *output_tokens, a),
            PartKind::TextStart { .. } => self.text_start(a),
            PartKind::TextDelta { delta, .. } => self.text_delta(delta, a),
            PartKind::TextEnd { .. } => self.text_end(a),
            PartKind::ReasoningStart { id } => self.reasoning_start(id, a),
            PartKind::ReasoningDelta { id, delta } => self.reasoning_delta(id, delta, a),
            PartKind::ReasoningEnd { id } => self.reasoning_end(id, a),
            PartKind::ToolInputStart {
                id,
                name,
                provider_executed,
            } => self.tool_input_start(id, name, *provider_executed, a),
            PartKind::ToolInputDelta { .. } | PartKind::ToolInputEnd { .. } => {}
            PartKind::ToolCall { id, input, .. } => self.tool_call(id, input, a),
            PartKind::ToolResult { id, output, .. } => self.tool_result(id, output, a),
            PartKind::ToolError { id, error, .. } => self.tool_error(id, error, a),
            PartKind::Error(e) => self.error(e, a),
            PartKind::Finish { reason } => {
                self.outcome = StreamOutcome::Completed {
                    finish: Some(reason.clone()),
                };
            }
            PartKind::Abort { reason } => {
                self.store.event(
                    a.seq,
                    a.span,
                    EventKind::StreamUnhandled {
                        event_type: "abort".into(),
                        reason: reason.clone(),
                    },
                );
            }
        }
    }

    fn finish(mut self: Box<Self>, last: (Seq, Span), total: u64, cut: bool) -> Analysis {
        let (last_seq, last_span) = last;
        if cut {
            // The stream went on past the capture: nothing ended, nothing is cleaned up.
            let mut analysis = self.store.analysis;
            let facts = analysis.stream.get_or_insert_with(Default::default);
            facts.profile = self.profile.name().into();
            facts.outcome = self.outcome;
            return analysis;
        }
        let (at_seq, at_span) = self.threw.unwrap_or((last_seq, last_span));
        let threw = self.threw.is_some();
        let mut closed = Vec::new();
        let mut awaiting = Vec::new();
        let mut rejected_again = false;
        for k in 0..self.tools.len() {
            let t = &self.tools[k];
            if matches!(t.status, "completed" | "error") {
                continue;
            }
            let part_id = self
                .store
                .part(t.idx)
                .map(|p| p.part.id.clone())
                .unwrap_or_default();
            if !threw && t.status == "running" {
                awaiting.push(part_id);
                continue;
            }
            if self.rejected_tool == Some(k) {
                // agent-0.8 (#149): the cleanup write of the tool whose terminal write was
                // rejected fails too; the part is left `running`.
                rejected_again = true;
                continue;
            }
            let body = Self::tool_state(t, "error", json!({"error": TOOL_ABORTED}), last_seq);
            let mut body = body;
            body["state"]["time"] = json!({"start": now(last_seq), "end": now(last_seq)});
            let idx = t.idx;
            self.store.write(Some(idx), body, last_seq, at_span, None);
            self.tools[k].status = "error";
            closed.push(part_id);
        }
        if rejected_again {
            let info = ErrorInfo {
                name: Some("ZodError".into()),
                message: "the cleanup's write of the same tool part was rejected again".into(),
                message_span: Some(at_span.head()),
                ..ErrorInfo::default()
            };
            self.store
                .event(last_seq, at_span, EventKind::RawError(Box::new(info)));
        }
        if !closed.is_empty() {
            self.store.event(
                last_seq,
                at_span,
                EventKind::ProcessorCleanup { part_ids: closed },
            );
        }
        if let Some(i) = self.stopped_event
            && let Some(ev) = self.store.analysis.events.get_mut(i)
        {
            ev.kind = EventKind::ProcessorStopped {
                remaining: total.saturating_sub(at_seq + 1),
            };
        }
        let mut analysis = self.store.analysis;
        let facts = analysis.stream.get_or_insert_with(Default::default);
        facts.profile = self.profile.name().into();
        facts.outcome = self.outcome;
        facts.awaiting_execution = awaiting;
        analysis
    }
}

/// A ZodError message as the agent logs it for a rejected part write: the issues of the part's
/// own union (the validation-crash check decodes it).
fn zod_message(issues: &[schema::SchemaIssue]) -> String {
    let items: Vec<Value> = issues
        .iter()
        .map(|i| {
            let path: Vec<Value> = i
                .path
                .0
                .iter()
                .map(|seg| match seg {
                    schema::PathSeg::Key(k) => json!(k),
                    schema::PathSeg::Index(n) => json!(n),
                })
                .collect();
            match &i.kind {
                schema::IssueKind::UnknownVariant { tag, .. } => json!({
                    "code": "invalid_union",
                    "errors": [],
                    "note": "No matching discriminator",
                    "discriminator": tag,
                    "path": path,
                    "message": "Invalid input"
                }),
                _ => json!({"code": "invalid_type", "path": path, "message": i.to_string()}),
            }
        })
        .collect();
    serde_json::to_string_pretty(&items).unwrap_or_default()
}

/// The first words of an error message: up to the quoted payload (`…: Text: {…}`), one line.
pub fn headline(message: &str) -> String {
    let cut = ["Text:", "Value:"]
        .iter()
        .filter_map(|m| message.find(m))
        .min()
        .map_or(message, |k| &message[..k]);
    crate::session::first_line(
        cut.trim_end().trim_end_matches(':').trim_end_matches('.'),
        160,
    )
}
