//! TanStack AI's `StreamProcessor` (`packages/ai/src/activities/chat/stream/processor.ts`), as a
//! state machine over the normalized parts.
//!
//! `ToolCallState`: `awaiting-input` on `TOOL_CALL_START`, `input-streaming` on the first
//! non-empty args, `input-complete` on `TOOL_CALL_END` (or the safety net at `RUN_FINISHED` and at
//! the end of the stream), `complete` when a result arrives. A failed tool's result
//! (`output-error`): before PR #727 the tool-call part stays `input-complete` — only the sibling
//! tool-result part reaches `error`, and the UI spins forever (#718); since #727 the tool-call
//! part goes to `error`, and the safety net no longer downgrades it. `RUN_ERROR` is reported, not
//! thrown; an event that is not JSON makes the client's line parser throw, which ends the stream.
//!
//! In the shared model the states are stored as `pending` (awaiting-input, input-streaming),
//! `running` (input-complete), `completed` and `error`; TanStack's own names are kept for the
//! timeline.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::part::{PartKind, StreamError};
use super::store::{Store, Streaming, now};
use super::{Applied, Processor, Profile};
use crate::core::Format;
use crate::session::{Analysis, ErrorInfo, EventKind, Seq, StreamOutcome};
use crate::source::{FileId, Span};

#[derive(Clone, Debug)]
struct Call {
    idx: usize,
    call_id: String,
    name: String,
    args: String,
    state: &'static str,
    /// The sibling tool-result part's state.
    result: Option<&'static str>,
    start: u64,
}

/// The processor.
pub struct Tanstack {
    profile: Profile,
    store: Store,
    calls: HashMap<String, usize>,
    list: Vec<Call>,
    texts: HashMap<String, Streaming>,
    native: Vec<(String, Vec<(Seq, String)>)>,
    /// Where each part's states are in `native`.
    native_at: HashMap<String, usize>,
    outcome: StreamOutcome,
    stopped: bool,
    errored: bool,
}

fn shared(state: &str) -> &'static str {
    match state {
        "awaiting-input" | "input-streaming" => "pending",
        "input-complete" | "approval-requested" | "approval-responded" => "running",
        "complete" => "completed",
        _ => "error",
    }
}

impl Tanstack {
    pub fn new(profile: Profile, file: FileId, format: Format, session_id: &str) -> Self {
        Self {
            profile,
            store: Store::new(file, format, session_id),
            calls: HashMap::new(),
            list: Vec::new(),
            texts: HashMap::new(),
            native: Vec::new(),
            native_at: HashMap::new(),
            outcome: StreamOutcome::Ended,
            stopped: false,
            errored: false,
        }
    }

    fn post_727(&self) -> bool {
        self.profile == Profile::Tanstack
    }

    fn set(
        &mut self,
        k: usize,
        state: &'static str,
        extra: Value,
        seq: Seq,
        span: Span,
        focus: Option<Span>,
    ) {
        let c = &self.list[k];
        let status = shared(state);
        let mut st = json!({"status": status, "input": serde_json::from_str::<Value>(&c.args).unwrap_or(json!({}))});
        match status {
            "pending" => st["raw"] = json!(c.args),
            "running" => st["time"] = json!({"start": c.start}),
            _ => st["time"] = json!({"start": c.start, "end": now(seq)}),
        }
        if let (Value::Object(s), Value::Object(e)) = (&mut st, extra) {
            s.extend(e);
        }
        let mut body = json!({"type": "tool", "callID": c.call_id, "tool": c.name, "state": st,
                              "metadata": {"tanstack": {"state": state}}});
        if let Some(r) = c.result {
            body["metadata"]["tanstack"]["result"] = json!(r);
        }
        let idx = (c.idx != usize::MAX).then_some(c.idx);
        let written = self
            .store
            .write(idx, body, seq, span, focus.or(Some(span.head())));
        let part_id = self
            .store
            .part(written)
            .map(|p| p.part.id.clone())
            .unwrap_or_default();
        self.list[k].idx = written;
        self.list[k].state = state;
        match self.native_at.get(&part_id) {
            Some(&i) => {
                let h = &mut self.native[i].1;
                if h.last().map(|(_, s)| s.as_str()) != Some(state) {
                    h.push((seq, state.to_owned()));
                }
            }
            None => {
                self.native_at.insert(part_id.clone(), self.native.len());
                self.native.push((part_id, vec![(seq, state.to_owned())]));
            }
        }
    }

    /// `completeAllToolCalls` / `finalizeStream`: every call not yet `input-complete` is forced
    /// there, except (since #727) one that already failed.
    fn complete_all(&mut self, seq: Seq, span: Span) {
        for k in 0..self.list.len() {
            let st = self.list[k].state;
            let terminal = matches!(st, "complete" | "error");
            if st == "input-complete" || terminal {
                continue;
            }
            self.set(k, "input-complete", json!({}), seq, span, None);
        }
    }

    fn text_write(&mut self, id: &str, a: &Applied<'_>, end: bool) {
        let Some(st) = self.texts.get(id) else {
            return;
        };
        let mut time = json!({"start": st.start});
        if end {
            time["end"] = json!(now(a.seq));
        }
        let body = json!({"type": "text", "text": st.text, "time": time});
        let idx = st.idx;
        let written = self.store.write(idx, body, a.seq, a.span, None);
        if let Some(st) = self.texts.get_mut(id) {
            st.idx = Some(written);
        }
    }

    /// A delta for an unknown text starts it; the text is written from its first delta.
    fn text_delta(&mut self, id: &str, delta: &str, a: &Applied<'_>) {
        let st = self.texts.entry(id.to_owned()).or_insert(Streaming {
            start: now(a.seq),
            ..Streaming::default()
        });
        st.push(delta);
        if st.idx.is_none() && !delta.is_empty() {
            self.text_write(id, a, false);
        }
    }

    /// `TOOL_CALL_START`: `awaiting-input` (a repeated start is ignored).
    fn tool_input_start(&mut self, id: &str, name: &str, a: &Applied<'_>) {
        if self.calls.contains_key(id) {
            return;
        }
        self.list.push(Call {
            idx: usize::MAX,
            call_id: id.to_owned(),
            name: name.to_owned(),
            args: String::new(),
            state: "awaiting-input",
            result: None,
            start: now(a.seq),
        });
        let k = self.list.len() - 1;
        self.calls.insert(id.to_owned(), k);
        self.set(k, "awaiting-input", json!({}), a.seq, a.span, a.focus);
    }

    /// The first non-empty args: `input-streaming`.
    fn tool_input_delta(&mut self, id: &str, delta: &str, a: &Applied<'_>) {
        let Some(&k) = self.calls.get(id) else {
            return;
        };
        self.list[k].args.push_str(delta);
        if self.list[k].state == "awaiting-input" && !delta.is_empty() {
            self.set(k, "input-streaming", json!({}), a.seq, a.span, a.focus);
        }
    }

    /// `TOOL_CALL_END`: `input-complete` (since #727, not over an `error`).
    fn tool_call(&mut self, id: &str, input: &str, a: &Applied<'_>) {
        let Some(&k) = self.calls.get(id) else {
            return;
        };
        if self.list[k].args.is_empty() {
            input.clone_into(&mut self.list[k].args);
        }
        let st = self.list[k].state;
        if st != "input-complete" && !(self.post_727() && st == "error") {
            self.set(k, "input-complete", json!({}), a.seq, a.span, a.focus);
        }
    }

    fn tool_result(&mut self, id: &str, output: &str, a: &Applied<'_>) {
        let Some(&k) = self.calls.get(id) else {
            return;
        };
        self.list[k].result = Some("complete");
        self.set(
            k,
            "complete",
            json!({"output": output, "title": "", "metadata": {}}),
            a.seq,
            a.span,
            a.focus,
        );
    }

    /// A failed tool: `error` since #727; before, the tool-call part stays `input-complete`.
    fn tool_error(&mut self, id: &str, error: &str, a: &Applied<'_>) {
        let Some(&k) = self.calls.get(id) else {
            return;
        };
        self.list[k].result = Some("error");
        if self.post_727() {
            self.set(k, "error", json!({"error": error}), a.seq, a.span, a.focus);
            return;
        }
        self.set(k, "input-complete", json!({}), a.seq, a.span, a.focus);
        let part_id = self
            .store
            .part(self.list[k].idx)
            .map(|p| p.part.id.clone())
            .unwrap_or_default();
        self.store.event(
            a.seq,
            a.span,
            EventKind::ProcessorDropped(Box::new(crate::session::DroppedOutcome {
                part_id,
                call_id: id.to_owned(),
                tool: self.list[k].name.clone(),
                what: "tool-error".into(),
                reason: "`ToolCallState` has no `error` before TanStack/ai #727: the tool-call part stays `input-complete` while its tool-result part is `error`".into(),
            })),
        );
    }

    /// A chunk that is not JSON makes the client's line parser throw, which ends the stream;
    /// `RUN_ERROR` and other stream errors are reported, not thrown.
    fn error(&mut self, e: &StreamError, a: &Applied<'_>) {
        if e.is_parse_error() {
            let mut info = a.error.cloned().unwrap_or_default();
            info.name = Some("SyntaxError".into());
            if !info.message.starts_with("JSON parsing failed") {
                info.message = format!("JSON parsing failed: {}", info.message);
            }
            self.store.event(
                a.seq,
                a.span,
                EventKind::SessionError(Box::new(info.clone())),
            );
            self.outcome = StreamOutcome::Failed {
                seq: a.seq,
                span: a.span,
                error: format!(
                    "SyntaxError: {}",
                    crate::session::first_line(&info.message, 160)
                ),
            };
            self.stopped = true;
            self.store
                .event(a.seq, a.span, EventKind::ProcessorStopped { remaining: 0 });
            return;
        }
        self.errored = true;
        let info = a.error.cloned().unwrap_or_else(|| ErrorInfo {
            name: Some(e.name.clone()),
            message: e.message.clone(),
            ..ErrorInfo::default()
        });
        self.store
            .event(a.seq, a.span, EventKind::SessionError(Box::new(info)));
    }
}

impl Processor for Tanstack {
    fn profile(&self) -> Profile {
        self.profile
    }

    fn event(&mut self, seq: Seq, span: Span, kind: EventKind) {
        self.store.event(seq, span, kind);
    }

    fn apply(&mut self, a: &Applied<'_>) {
        if self.stopped {
            return;
        }
        match a.part {
            PartKind::ResponseMetadata { id: Some(id) } => self.store.name_message(id),
            PartKind::TextStart { id } => {
                self.texts.entry(id.clone()).or_insert(Streaming {
                    start: now(a.seq),
                    ..Streaming::default()
                });
            }
            PartKind::TextDelta { id, delta } => self.text_delta(id, delta, a),
            PartKind::TextEnd { id } => {
                self.text_write(id, a, true);
                self.texts.remove(id);
            }
            PartKind::ToolInputStart { id, name, .. } => self.tool_input_start(id, name, a),
            PartKind::ToolInputDelta { id, delta } => self.tool_input_delta(id, delta, a),
            PartKind::ToolCall { id, input, .. } => self.tool_call(id, input, a),
            PartKind::ToolInputEnd { .. } => {}
            PartKind::ToolResult { id, output, .. } => self.tool_result(id, output, a),
            PartKind::ToolError { id, error, .. } => self.tool_error(id, error, a),
            PartKind::FinishStep { reason, .. } => {
                self.complete_all(a.seq, a.span);
                self.outcome = StreamOutcome::Completed {
                    finish: Some(reason.clone()),
                };
            }
            PartKind::Finish { reason } => {
                self.outcome = StreamOutcome::Completed {
                    finish: Some(reason.clone()),
                };
            }
            PartKind::Error(e) => self.error(e, a),
            _ => {}
        }
    }

    fn finish(mut self: Box<Self>, last: (Seq, Span), total: u64, cut: bool) -> Analysis {
        let (seq, span) = last;
        if !self.stopped && !cut {
            self.complete_all(seq, span);
        }
        let mut awaiting = Vec::new();
        for c in &self.list {
            if c.state == "input-complete"
                && c.result.is_none()
                && !self.stopped
                && let Some(p) = self.store.part(c.idx)
            {
                awaiting.push(p.part.id.clone());
            }
        }
        if self.stopped {
            let stop_seq = self.outcome.failed_at().unwrap_or(seq);
            for ev in &mut self.store.analysis.events {
                if let EventKind::ProcessorStopped { remaining } = &mut ev.kind {
                    *remaining = total.saturating_sub(stop_seq + 1);
                }
            }
        }
        let mut analysis = self.store.analysis;
        let facts = analysis.stream.get_or_insert_with(Default::default);
        facts.profile = self.profile.name().into();
        facts.outcome = self.outcome;
        facts.awaiting_execution = awaiting;
        facts.native_states = self.native;
        analysis
    }
}
