//! Applying a record to the model: JSON records, part events and parts.

use serde_json::Value;

use super::decode::{prepare_part, step_finish_of};
use super::events::{error_info, informational};
use super::state::State;
use super::{MAX_ERROR_MESSAGE, PartEvent, PreparedPart};
use crate::formats::agent_log::read::{BusEvent, JsonRecord, LogRecord};
use crate::json::scan::Seg;
use crate::json::value::{MAX_KEPT_STRING, cap_strings};
use crate::protocols::capture;
use crate::session::{ErrorInfo, EventKind, Observation, PayloadIssues, Salvage, Seq, Undecodable};
use crate::source::Span;
use crate::text::capped;

impl State {
    pub(super) fn apply(&mut self, seq: Seq, record: LogRecord) {
        if let Some(span) = record.agent_span() {
            // Recorded after the record is applied (it may end the agent's work).
            self.apply_record(seq, record);
            self.agent_record(seq, span);
        } else {
            self.apply_record(seq, record);
        }
    }

    fn apply_record(&mut self, seq: Seq, record: LogRecord) {
        match record {
            LogRecord::Json(rec) => self.apply_json(seq, &rec),
            // What `apply_json` does with a plain logger entry or a bus event.
            LogRecord::Light { span, light } => {
                if let Some(id) = light.session {
                    self.current_session = Some(id);
                }
                if let Some(bus) = light.bus {
                    self.bus_events += 1;
                    match bus {
                        BusEvent::SessionError => {
                            self.event(seq, span, None, EventKind::BusSessionError);
                        }
                        BusEvent::Idle => self.event(seq, span, None, EventKind::Idle),
                        BusEvent::Other => {}
                    }
                }
            }
            LogRecord::RawError { name, record } => {
                let mut info = ErrorInfo {
                    name: Some(name),
                    message: capped(&record.text, MAX_ERROR_MESSAGE),
                    message_span: Some(record.span),
                    ..ErrorInfo::default()
                };
                info.data = cap_strings(&record.value, MAX_KEPT_STRING);
                self.event(seq, record.span, None, EventKind::RawError(Box::new(info)));
            }
            // Only a deferred reader yields these, and they are decoded before they get here.
            LogRecord::Text(_) | LogRecord::Pending(_) => {}
            LogRecord::Uncaught {
                name,
                message,
                span,
            } => {
                let info = ErrorInfo {
                    name: Some(name),
                    message: capped(&message, MAX_ERROR_MESSAGE),
                    message_span: Some(span),
                    ..ErrorInfo::default()
                };
                self.event(seq, span, None, EventKind::RawError(Box::new(info)));
            }
            LogRecord::Status {
                span,
                success,
                words,
            } => self.event(seq, span, None, EventKind::WrapperStatus { success, words }),
            LogRecord::Stopped {
                span,
                words,
                timeout,
            } => {
                let stop = crate::session::RunStop {
                    span,
                    words,
                    timeout,
                };
                self.stop = Some((seq, stop));
            }
            LogRecord::Command { spec, span } => {
                let kind = EventKind::ModelRequested {
                    spec,
                    by_wrapper: true,
                };
                self.event(seq, span, None, kind);
            }
            LogRecord::Undecodable { .. } | LogRecord::Mangled { .. } => self.unread(seq, record),
        }
    }

    /// A record that did not decode: kept among the undecodable ones, with what a lenient
    /// reading got out of it; one read leniently is applied as any other.
    fn unread(&mut self, seq: Seq, record: LogRecord) {
        let (undecodable, salvage) = match record {
            LogRecord::Undecodable {
                span,
                reason,
                at,
                truncated,
                mentions: (mentions, kinds),
            } => {
                let salvage = Salvage {
                    span,
                    recovered: false,
                    mentions,
                    kinds,
                };
                (
                    Undecodable {
                        span,
                        reason,
                        at,
                        truncated,
                    },
                    salvage,
                )
            }
            LogRecord::Mangled { record, reason, at } => {
                self.apply_json(seq, &record);
                let span = record.span;
                let salvage = Salvage {
                    span,
                    recovered: true,
                    mentions: Vec::new(),
                    kinds: Vec::new(),
                };
                let undecodable = Undecodable {
                    span,
                    reason,
                    at: Some(at),
                    truncated: false,
                };
                (undecodable, salvage)
            }
            _ => return,
        };
        self.analysis.undecodable.push(undecodable);
        self.analysis.salvaged.push(salvage);
    }

    /// Applies a JSON object. A part event is, as a rule, read ahead on the decoding pool and
    /// applied by [`State::apply_part_event`]; one that reaches this is read here.
    fn apply_json(&mut self, seq: Seq, rec: &JsonRecord) {
        let Some(obj) = rec.value.as_object() else {
            return;
        };
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        let ty = s("type").unwrap_or_default();
        let service = s("service").unwrap_or_default();
        let message = s("message").unwrap_or_default();
        // `sessionID` of a logger entry can be something else (`retry-fetch` logs the provider id
        // there): only OpenCode's `ses_…` ids, or a part event's, name a session.
        let session_id = s("sessionID")
            .filter(|id| id.starts_with("ses") || obj.get("part").is_some_and(Value::is_object))
            .map(str::to_owned);
        if let Some(id) = &session_id {
            self.current_session = Some(id.clone());
        }
        // `{"log": {…}}`: a logger entry in the agent's early compact form.
        if obj.len() == 1
            && let Some(inner) = obj.get("log").and_then(Value::as_object)
        {
            if let Some(id) = inner
                .get("sessionID")
                .and_then(Value::as_str)
                .filter(|id| id.starts_with("ses"))
            {
                self.current_session = Some(id.to_owned());
            }
            let s = |k: &str| inner.get(k).and_then(Value::as_str).unwrap_or_default();
            self.apply_log(seq, rec, inner, &["log"], s("service"), s("message"));
            return;
        }

        if service == "bus" && message == "publishing" {
            self.bus_events += 1;
            match ty {
                "session.error" => self.event(seq, rec.span, None, EventKind::BusSessionError),
                "session.idle" => self.event(seq, rec.span, None, EventKind::Idle),
                _ => {}
            }
            return;
        }
        if message == "unhandled" {
            let kind = EventKind::StreamUnhandled {
                event_type: ty.to_owned(),
                reason: s("reason").map(str::to_owned),
            };
            self.event(seq, rec.span, None, kind);
            return;
        }
        if let Some(id) = s("session_id")
            && matches!(ty, "system" | "assistant" | "user" | "result")
        {
            self.apply_claude(seq, rec, obj, ty, id);
            return;
        }
        match ty {
            "log" => self.apply_log(seq, rec, obj, &[], service, message),
            "step_start" | "step_finish" | "tool_use" | "text" | "reasoning"
                if obj.get("part").is_some_and(Value::is_object) =>
            {
                let prepared = prepare_part(rec, rec.value["part"].clone());
                self.apply_part(seq, rec.span, prepared, session_id.as_deref());
                self.busy = true;
                if ty == "step_finish" {
                    self.step_finished(seq, rec, session_id);
                }
            }
            "error" => self.apply_error(seq, rec, obj, session_id),
            "status" if obj.contains_key("mode") => {
                self.current_session = None;
                self.event(seq, rec.span, None, EventKind::RunStart);
            }
            "input" => self.event(seq, rec.span, None, EventKind::Prompt),
            "session_idle" => self.event(seq, rec.span, session_id, EventKind::Idle),
            _ => {}
        }
    }

    /// An `error` record: the wrapper's (an agent failure, or an informational stderr line it
    /// wrapped), a process crash, or a session error.
    fn apply_error(
        &mut self,
        seq: Seq,
        rec: &JsonRecord,
        obj: &serde_json::Map<String, Value>,
        session_id: Option<String>,
    ) {
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        if obj.contains_key("exitCode") || obj.contains_key("errorDetectedInOutput") {
            let matched = s("errorMatch").or(s("message")).unwrap_or_default();
            if self.informational.iter().any(|i| i == matched.trim()) {
                // The wrapper matched an informational stderr line: not a failure.
                return;
            }
            let kind = EventKind::WrapperError {
                error_type: s("errorType").unwrap_or_default().to_owned(),
                message: s("errorMatch").or(s("message")).unwrap_or_default().into(),
            };
            self.event(seq, rec.span, None, kind);
        } else if obj.contains_key("errorType") && informational(obj) {
            // A stderr line the wrapper wrapped as an error: a banner, not a crash.
            let line = s("message").unwrap_or_default().trim().to_owned();
            if self.informational.len() < 64 && !self.informational.contains(&line) {
                self.informational.push(line);
            }
        } else if obj.contains_key("errorType") {
            let mut info = error_info(rec, &[], &rec.value);
            info.name = s("errorType").map(str::to_owned);
            if let Some(stack) = s("stack") {
                // `AI_RetryError: Failed after …` names the thrown class.
                info.wrapped = stack
                    .split_once(':')
                    .map(|(n, _)| n.trim().to_owned())
                    .filter(|n| !n.contains(' '));
            }
            self.event(
                seq,
                rec.span,
                session_id,
                EventKind::ProcessCrash(Box::new(info)),
            );
        } else if let Some(err) = obj.get("error") {
            let info = error_info(rec, &["error"], err);
            self.event(
                seq,
                rec.span,
                session_id,
                EventKind::SessionError(Box::new(info)),
            );
        }
    }

    /// A verbose HTTP entry whose `bodyPreview` is an SSE body: kept to be replayed as a stream.
    pub(super) fn embedded_stream(&mut self, rec: &JsonRecord) {
        let Some(preview) = rec.value.get("bodyPreview").and_then(Value::as_str) else {
            return;
        };
        if capture::sniff_envelope(preview) != Some(capture::Envelope::Sse) {
            return;
        }
        let Some((s, e)) = crate::json::scan::locate(&rec.text, &[Seg::Key("bodyPreview")]) else {
            return;
        };
        let Some(raw) = rec.text.get(s + 1..e.saturating_sub(1)) else {
            return;
        };
        let Ok((mut text, anchors)) = crate::json::string::decode(raw.as_bytes()) else {
            return;
        };
        let locator = capture::Locator::JsonString {
            file: rec.span.file,
            anchors,
            base: (s + 1) as u64,
            segments: rec
                .segments()
                .iter()
                .map(|(t, f)| (*t as u64, *f))
                .collect(),
        };
        let mut cut = None;
        if let Some(k) = text.rfind("... [truncated") {
            let marker = &text[k..];
            let total = marker
                .split("total ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok());
            cut = Some(crate::session::BodyCut {
                kept: text[..k].chars().count() as u64,
                total,
                span: locator.span(k as u64, text.len() as u64),
            });
            text.truncate(k);
        }
        let call = rec
            .value
            .get("callNum")
            .map(Value::to_string)
            .unwrap_or_default();
        self.analysis
            .embedded_streams
            .push(crate::session::EmbeddedStream {
                label: format!("HTTP response body (stream) of call {call}"),
                text,
                locator,
                cut,
                url: rec
                    .value
                    .get("url")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
    }

    fn step_finished(&mut self, seq: Seq, rec: &JsonRecord, session_id: Option<String>) {
        let finish = step_finish_of(rec);
        self.event(
            seq,
            rec.span,
            session_id,
            EventKind::StepFinished(Box::new(finish)),
        );
    }

    /// A part event read on the decoding thread: what [`State::apply_json`] does with one.
    pub(super) fn apply_part_event(&mut self, seq: Seq, event: PartEvent) {
        let at = event.span;
        self.apply_part_event_inner(seq, event);
        // A part written is work in hand, until the loop ends it.
        self.busy = true;
        self.agent_record(seq, at);
    }

    fn apply_part_event_inner(&mut self, seq: Seq, event: PartEvent) {
        let PartEvent {
            span,
            session,
            prepared,
            step,
        } = event;
        // Copied for the step's event only (events are kept).
        let step_session = step
            .as_ref()
            .and_then(|_| session.get(&prepared.part.session_id).map(str::to_owned));
        if let Some(id) = session.get(&prepared.part.session_id) {
            self.enter_session(id);
        }
        // `apply_part` reads the record's session only where the part has none: when the
        // record's is the part's, empty as well.
        self.apply_part(seq, span, prepared, session.get(""));
        if let Some(step) = step {
            self.event(seq, span, step_session, EventKind::StepFinished(step));
        }
    }

    fn apply_part(
        &mut self,
        seq: Seq,
        span: Span,
        prepared: PreparedPart,
        session_id: Option<&str>,
    ) {
        let PreparedPart {
            part,
            issues,
            part_span,
            status_span,
        } = prepared;
        // The part's own session, else the record's, else the current one.
        let fallback = part.session_id.is_empty().then(|| {
            (session_id.map(str::to_owned))
                .or_else(|| self.current_session.clone())
                .unwrap_or_default()
        });
        let session_id = fallback.as_deref().unwrap_or(&part.session_id);
        self.enter_session(session_id);

        if !issues.is_empty() {
            self.analysis.schema_issues.push(PayloadIssues {
                seq,
                what: format!("{} part {}", part.type_name(), part.id),
                span: part_span,
                issues,
                session_id: Some(session_id.to_owned()),
                message_id: Some(part.message_id.clone()),
                part_id: Some(part.id.clone()),
            });
        }

        let status = part.tool().map(|t| t.state.status_name());
        let observation = Observation {
            seq,
            span,
            status,
            status_span,
        };

        let si = self.session_slot(session_id);
        let mi = self.message_slot(si, &part.message_id);
        self.file_part(si, mi, part, observation);
    }
}
