//! What a processor writes: one session, one assistant message, its parts with every write.

use std::collections::HashMap;
use std::mem::{Discriminant, discriminant};

use serde_json::{Value, json};

use crate::core::Format;
use crate::json::value::{MAX_KEPT_STRING, cap_strings};
use crate::model::Part;
use crate::session::{Analysis, Event, EventKind, Message, Observation, PartRecord, Seq, Session};
use crate::source::{FileId, Span};

/// A synthetic clock: every write is "now" = an instant derived from the event's position, so
/// stored times are ordered like the stream without pretending to know wall-clock times.
pub fn now(seq: Seq) -> u64 {
    1_700_000_000_000 + seq
}

/// Events of one kind a processor records: past this, the rest of that kind are only counted
/// (`events not recorded`), so an input of endless bad events keeps memory, findings and the
/// report bounded.
pub const MAX_EVENTS_PER_KIND: u64 = 1000;

/// The count of events over [`MAX_EVENTS_PER_KIND`] that were not recorded.
pub const NOT_RECORDED: &str = "events not recorded";

/// The session a processor builds.
pub struct Store {
    pub analysis: Analysis,
    session_id: String,
    next_part: u32,
    /// Events recorded, by kind.
    recorded: HashMap<Discriminant<EventKind>, u64>,
}

impl Store {
    pub fn new(file: FileId, format: Format, session_id: &str) -> Self {
        let mut analysis = Analysis::new(file, format);
        analysis.sessions.push(Session {
            id: session_id.to_owned(),
            title: None,
            messages: vec![Message {
                id: "msg_0001".into(),
                ..Message::default()
            }],
            ..Session::default()
        });
        Self {
            analysis,
            session_id: session_id.to_owned(),
            next_part: 0,
            recorded: HashMap::new(),
        }
    }

    fn message(&mut self) -> &mut Message {
        // The session and its message are created in `new` and never removed.
        &mut self.analysis.sessions[0].messages[0]
    }

    pub fn message_id(&self) -> &str {
        self.analysis
            .sessions
            .first()
            .and_then(|s| s.messages.first())
            .map_or("", |m| m.id.as_str())
    }

    /// Names the message after the response's id, while it has no parts.
    pub fn name_message(&mut self, id: &str) {
        if !id.is_empty() && self.message().parts.is_empty() {
            id.clone_into(&mut self.message().id);
        }
    }

    /// Writes a part: `idx` None creates it. `body` holds the type-specific fields.
    pub fn write(
        &mut self,
        idx: Option<usize>,
        mut body: Value,
        seq: Seq,
        span: Span,
        status_span: Option<Span>,
    ) -> usize {
        let message_id = self.message_id().to_owned();
        let part_id = match idx {
            Some(i) => self.message().parts[i].part.id.clone(),
            None => {
                self.next_part += 1;
                format!("prt_{:04}", self.next_part)
            }
        };
        if let Value::Object(map) = &mut body {
            map.insert("id".into(), json!(part_id));
            map.insert("sessionID".into(), json!(self.session_id));
            map.insert("messageID".into(), json!(message_id));
        }
        let part = Part::from_value(&cap_strings(&body, MAX_KEPT_STRING));
        let status = part.tool().map(|t| t.state.status_name());
        let observation = Observation {
            seq,
            span,
            status,
            status_span,
        };
        let message = self.message();
        match idx {
            Some(i) => {
                let rec = &mut message.parts[i];
                rec.part = part;
                rec.history.push(observation);
                i
            }
            None => {
                message.parts.push(PartRecord {
                    part,
                    history: vec![observation],
                });
                message.parts.len() - 1
            }
        }
    }

    pub fn part(&self, idx: usize) -> Option<&PartRecord> {
        self.analysis
            .sessions
            .first()
            .and_then(|s| s.messages.first())
            .and_then(|m| m.parts.get(idx))
    }

    /// Records an event (up to [`MAX_EVENTS_PER_KIND`] of its kind; the others are counted).
    pub fn event(&mut self, seq: Seq, span: Span, kind: EventKind) {
        let n = self.recorded.entry(discriminant(&kind)).or_insert(0);
        if *n >= MAX_EVENTS_PER_KIND {
            *self.analysis.counts.entry(NOT_RECORDED).or_insert(0) += 1;
            return;
        }
        *n += 1;
        let session = Some(self.session_id.clone());
        self.analysis.events.push(Event {
            seq,
            span,
            session,
            kind,
        });
    }
}

/// A text or reasoning part being streamed: only its start and end are recorded as writes, so
/// memory does not grow with the number of deltas; the text is kept up to the usual cap.
#[derive(Debug, Default)]
pub struct Streaming {
    pub idx: Option<usize>,
    pub text: String,
    pub len: u64,
    pub start: u64,
}

impl Streaming {
    pub fn push(&mut self, delta: &str) {
        self.len += delta.len() as u64;
        if self.text.len() < MAX_KEPT_STRING {
            let room = MAX_KEPT_STRING - self.text.len();
            let mut end = delta.len().min(room);
            while !delta.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&delta[..end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_of_one_kind_are_capped_and_counted() {
        let mut store = Store::new(FileId(0), crate::testing::formats::SSE, "s");
        let span = Span::new(FileId(0), 0, 0);
        let n = MAX_EVENTS_PER_KIND + 250;
        for seq in 0..n {
            let reason = "skipped".to_owned();
            store.event(seq, span, EventKind::ProcessorSkipped { reason });
        }
        store.event(n, span, EventKind::ProcessorStopped { remaining: 0 });
        let events = &store.analysis.events;
        assert_eq!(events.len() as u64, MAX_EVENTS_PER_KIND + 1);
        assert!(matches!(
            events.last().map(|e| &e.kind),
            Some(EventKind::ProcessorStopped { .. })
        ));
        assert_eq!(store.analysis.counts.get(NOT_RECORDED), Some(&250));
    }
}
