//! The replay's state: the model being built and its indexes of sessions, messages and parts.

// The replay's indexes are looked up once or more per record, keyed by ids the log names, where
// std's SipHash costs more than the lookups need.
use crate::FastMap;
use std::hash::BuildHasher;

use super::window::{Window, fit, hashed_position};
use crate::core::Format;
use crate::model::{Part, TOOL_ABORTED};
use crate::session::forgetting::Verdict;
use crate::session::{Analysis, Event, EventKind, Message, Observation, PartRecord, Seq, Session};
use crate::source::{FileId, Span};

/// The number of parts from which a message's parts are found by the part index rather than by
/// comparing ids.
pub(super) const INDEXED_FROM: usize = 16;

pub(super) struct State {
    pub(super) analysis: Analysis,
    session_index: FastMap<String, usize>,
    /// Per session index: hash of a message id → message index (see [`State::message_slot`]).
    pub(super) message_index: Vec<FastMap<u64, usize>>,
    /// (session index, message index, hash of the part id) → part index, for the parts of
    /// messages with at least [`INDEXED_FROM`] parts: a part's id is not copied into the index
    /// (see [`State::file_part`]).
    pub(super) part_index: FastMap<(usize, usize, u64), usize>,
    pub(super) id_hasher: foldhash::fast::RandomState,
    pub(super) current_session: Option<String>,
    pub(super) bus_events: u64,
    /// The last `retry-after` the agent parsed, until the sleep it leads to.
    pub(super) retry_after: Option<(u64, Span)>,
    /// The model the prompt loop failed to initialise before falling back to the agent's
    /// default (`Failed to initialize specified model, falling back to default model`), and
    /// where it is: the default the agent picks next is the model that runs.
    pub(super) falling_back: Option<(String, Option<Span>)>,
    /// The agent's last record, whether it had work in hand there, and a word after it that
    /// the run was stopped from outside (see [`crate::session::RunTail`]).
    pub(super) last_record: Option<(Seq, Span, bool)>,
    pub(super) busy: bool,
    pub(super) stop: Option<(Seq, crate::session::RunStop)>,
    /// The retry sleeps announced so far: their position and time (ms, when the entry had a
    /// timestamp), and whether a part was written after each.
    pub(super) waits: Vec<(Seq, Option<u64>, bool)>,
    /// The latest timestamp of a logger entry after the first retry sleep was announced.
    pub(super) last_log_ms: Option<u64>,
    /// Informational stderr lines a wrapper wrapped as errors (see [`informational`]).
    pub(super) informational: Vec<String>,
    /// The tool results of the last user turn of a Claude Code session: what the next request
    /// carried (where, words).
    pub(super) last_results: Vec<(Span, String)>,
    /// Tool results that carried media (images, documents): every later request resends them.
    pub(super) media_results: Vec<(Span, String)>,
    /// Per session index: how many events there were at the session's last part write (a
    /// cleanup's "Tool execution aborted" write aside). See [`State::file_part`].
    events_at_write: Vec<usize>,
    /// Events so far, forgotten ones included.
    events_seen: usize,
    /// Per session index: the positions of its part writes that came first in it after an
    /// event, in order: the writes [`PartRecord::history`] keeps whatever else it drops.
    pub(super) first_after_event: Vec<Vec<Seq>>,
    /// What a diagnosis's replay may forget (see [`replay_forgetting`]).
    pub(super) window: Option<Window>,
    /// Per session index: where each tool call id is first held (message, part), for a session a
    /// Claude Code tool result has asked about (see [`State::claude_call`]).
    pub(super) claude_calls: Vec<Option<FastMap<String, (usize, usize)>>>,
}

impl State {
    pub(super) fn new(file: FileId) -> Self {
        Self {
            analysis: Analysis::new(file, Format::AgentLog),
            session_index: FastMap::default(),
            message_index: Vec::new(),
            part_index: FastMap::default(),
            id_hasher: foldhash::fast::RandomState::default(),
            current_session: None,
            bus_events: 0,
            retry_after: None,
            falling_back: None,
            last_record: None,
            busy: false,
            stop: None,
            waits: Vec::new(),
            last_log_ms: None,
            informational: Vec::new(),
            last_results: Vec::new(),
            media_results: Vec::new(),
            events_at_write: Vec::new(),
            events_seen: 0,
            first_after_event: Vec::new(),
            window: None,
            claude_calls: Vec::new(),
        }
    }

    /// `span` at `seq` is a record of the agent's: its last so far.
    pub(super) fn agent_record(&mut self, seq: Seq, span: Span) {
        self.last_record = Some((seq, span, self.busy));
    }

    /// Whether the agent has work in hand, after an event: a prompt or a step begins work, and
    /// work ends when the loop exits, the session goes idle or is cancelled, an error strikes or
    /// the wrapper gives its verdict.
    fn note_progress(&mut self, kind: &EventKind) {
        match kind {
            EventKind::Prompt | EventKind::StepFinished(_) | EventKind::RetryWait(_) => {
                self.busy = true;
            }
            EventKind::LoopExit
            | EventKind::Idle
            | EventKind::Cancel
            | EventKind::SessionError(_)
            | EventKind::ProcessCrash(_)
            | EventKind::BusSessionError
            | EventKind::RawError(_)
            | EventKind::WrapperStatus { .. }
            | EventKind::WrapperError { .. } => self.busy = false,
            _ => {}
        }
    }

    /// The agent's last run, as it ended (see [`crate::session::RunTail`]).
    fn tail(&self) -> Option<crate::session::RunTail> {
        let (seq, span, busy) = self.last_record?;
        Some(crate::session::RunTail {
            last_record: span,
            busy,
            stop: (self.stop.as_ref())
                .filter(|(at, _)| *at > seq)
                .map(|(_, stop)| stop.clone()),
            quiet_ms: None,
        })
    }

    /// The model, or, when the log must be read again, from which record on it must be kept
    /// (`None`: all of it; see [`Forgot::Again`]).
    pub(super) fn finish(mut self) -> Result<Analysis, Option<Seq>> {
        // What is left after forgetting must not be loud either: it would be reported with what
        // was forgotten around it.
        if self.window.as_ref().is_some_and(|w| w.forgetting) {
            'sessions: for si in 0..self.analysis.sessions.len() {
                for mi in 0..self.analysis.sessions[si].messages.len() {
                    match self.verdict(si, mi) {
                        Verdict::Loud => {
                            self.not_quiet();
                            break 'sessions;
                        }
                        Verdict::Needs(from) => self.needs(from),
                        Verdict::Quiet | Verdict::Kept => {}
                    }
                }
            }
        }
        if let Some(again) = self.window.as_ref().and_then(|w| w.again) {
            return Err(again);
        }
        // The kept messages go back into their sessions.
        if let Some(w) = &mut self.window {
            for (si, kept) in w.kept.iter_mut().enumerate() {
                if let Some(session) = self.analysis.sessions.get_mut(si) {
                    session.messages.append(kept);
                }
            }
        }
        // A session's message ids are distinct, and so are a message's part ids (the indexes
        // file each id once), so an unstable sort orders them as a stable one would, without
        // the stable sort's scratch copy: a copy of every message of the session, at the time
        // the model is largest.
        for session in &mut self.analysis.sessions {
            session.messages.sort_unstable_by(|a, b| a.id.cmp(&b.id));
            for m in &mut session.messages {
                m.parts.sort_unstable_by(|a, b| a.part.id.cmp(&b.part.id));
            }
        }
        self.analysis.tail = self.tail();
        self.analysis.counts.insert("bus events", self.bus_events);
        self.note_wait_afters();
        Ok(self.analysis)
    }

    pub(super) fn event(&mut self, seq: Seq, span: Span, session: Option<String>, kind: EventKind) {
        self.note_progress(&kind);
        let session = session.or_else(|| self.current_session.clone());
        let event = Event {
            seq,
            span,
            session,
            kind,
        };
        self.events_seen += 1;
        let State {
            window,
            analysis,
            session_index,
            message_index,
            id_hasher,
            ..
        } = self;
        if let Some(w) = window {
            let find = |session: &str, id: &str| {
                let si = *session_index.get(session)?;
                let messages = &analysis.sessions.get(si)?.messages;
                let hit = message_index.get(si)?.get(&id_hasher.hash_one(id)).copied();
                hashed_position(hit, messages, |m| m.id == id).map(|mi| &messages[mi])
            };
            match w.rules.event(&event, &find) {
                Verdict::Loud => self.not_quiet(),
                // Other events of this record may have been forgotten already.
                Verdict::Kept => self.freeze(seq + 1),
                Verdict::Needs(from) => self.needs(from),
                Verdict::Quiet => {
                    if w.forgetting && w.frozen.is_none() && !w.rules.kept_event(&event.kind) {
                        return;
                    }
                }
            }
        }
        self.analysis.events.push(event);
    }

    /// Makes `id` the current session (without a copy when it already is).
    pub(super) fn enter_session(&mut self, id: &str) {
        if self.current_session.as_deref() != Some(id) {
            self.current_session = Some(id.to_owned());
        }
    }

    /// Records a write of `part` in message `mi` of session `si`: a new part, or the latest
    /// write of one the message has.
    ///
    /// A part's history keeps the first and the last write of each run of one status, and every
    /// write that came first in its session after an event; the writes in between (a text part
    /// streamed delta by delta, rewritten hundreds of times) are dropped, so a log's model grows
    /// with its parts, not with its writes. Nothing the checks read changes: the status path, the
    /// first `pending` and last `running` write, the first and last write, and the first write
    /// of a session after any event (what `incidents` and `loop-exited-early` ask for: a
    /// cleanup's write does not count as activity there, so the write after it is kept too).
    /// Tells each retry sleep what the log shows after it (see [`crate::session::WaitAfter`]).
    fn note_wait_afters(&mut self) {
        if self.waits.is_empty() {
            return;
        }
        for e in &mut self.analysis.events {
            let EventKind::RetryWait(wait) = &mut e.kind else {
                continue;
            };
            if let Some(&(_, at, work)) = self.waits.iter().find(|(seq, _, _)| *seq == e.seq) {
                wait.after = crate::session::WaitAfter {
                    work,
                    log_went_on_ms: at
                        .zip(self.last_log_ms)
                        .map(|(at, last)| last.saturating_sub(at)),
                };
            }
        }
    }

    pub(super) fn file_part(&mut self, si: usize, mi: usize, part: Part, observation: Observation) {
        // Work after a retry sleep was announced.
        if let Some(last) = self.waits.last_mut()
            && !last.2
        {
            for w in self.waits.iter_mut().rev() {
                if w.2 {
                    break;
                }
                w.2 = true;
            }
        }
        if self.events_at_write.len() <= si {
            self.events_at_write.resize(si + 1, 0);
            self.first_after_event.resize_with(si + 1, Vec::new);
        }
        let events = self.events_seen;
        let first_after_event = &mut self.first_after_event[si];
        if self.events_at_write[si] != events && first_after_event.last() != Some(&observation.seq)
        {
            first_after_event.push(observation.seq);
        }
        let cleanup = part.tool().and_then(|t| t.state.error_text()) == Some(TOOL_ABORTED);
        if !cleanup {
            self.events_at_write[si] = events;
        }
        let tool = part.tool().is_some();
        let message = &mut self.analysis.sessions[si].messages[mi];
        let is_it = |r: &PartRecord| r.part.id == part.id;
        // Most messages have a few parts, found faster by their ids than by a hash, and without
        // an index entry for each: only a message with many parts is indexed.
        let indexed = message.parts.len() >= INDEXED_FROM;
        let hash = |id: &str| (si, mi, self.id_hasher.hash_one(id));
        let at = if indexed {
            let hit = self.part_index.get(&hash(&part.id)).copied();
            hashed_position(hit, &message.parts, is_it)
        } else {
            message.parts.iter().position(is_it)
        };
        let pi = match at {
            Some(pi) => {
                let record = &mut message.parts[pi];
                record.part = part;
                let history = &mut record.history;
                let kept =
                    |o: &Observation| self.first_after_event[si].binary_search(&o.seq).is_ok();
                match history.as_mut_slice() {
                    // The last write is neither the first of its status run nor one to keep.
                    [.., before, last]
                        if before.status == last.status
                            && last.status == observation.status
                            && !kept(last) =>
                    {
                        *last = observation;
                    }
                    _ => history.push(observation),
                }
                pi
            }
            None => {
                if let Some(w) = &mut self.window {
                    w.live_parts += 1;
                    w.filed += 1;
                }
                message.parts.push(PartRecord {
                    part,
                    history: vec![observation],
                });
                let n = message.parts.len();
                // The message reaches the size that is indexed: every part so far goes in.
                let new = if n == INDEXED_FROM { 0 } else { n - 1 };
                if n >= INDEXED_FROM {
                    for (pi, record) in message.parts.iter().enumerate().skip(new) {
                        self.part_index.entry(hash(&record.part.id)).or_insert(pi);
                    }
                }
                n - 1
            }
        };
        // A session whose tool calls are indexed keeps its index (the first place wins).
        if let Some(Some(calls)) = self.claude_calls.get_mut(si)
            && let Some(t) = message.parts[pi].part.tool()
        {
            (calls.entry(t.call_id.clone()))
                .and_modify(|at| *at = (*at).min((mi, pi)))
                .or_insert((mi, pi));
        }
        if let Some(w) = &mut self.window {
            let session = &self.analysis.sessions[si];
            if !w.rules.written(&session.id, &session.messages[mi].id, tool) {
                self.not_quiet();
            }
        }
    }

    pub(super) fn session_slot(&mut self, id: &str) -> usize {
        if let Some(&i) = self.session_index.get(id) {
            return i;
        }
        let i = self.analysis.sessions.len();
        self.analysis.sessions.push(Session {
            id: id.to_owned(),
            ..Session::default()
        });
        self.session_index.insert(id.to_owned(), i);
        i
    }

    pub(super) fn message_slot(&mut self, si: usize, id: &str) -> usize {
        if self.message_index.len() <= si {
            self.message_index.resize_with(si + 1, FastMap::default);
        }
        // As the part index: a 64-bit hash of the id, not a copy of it.
        let key = self.id_hasher.hash_one(id);
        let index = &mut self.message_index[si];
        let messages = &mut self.analysis.sessions[si].messages;
        if let Some(i) = hashed_position(index.get(&key).copied(), messages, |m| m.id == id) {
            return i;
        }
        if self.window.is_some() {
            self.closing(si, id);
        }
        let index = &mut self.message_index[si];
        let messages = &mut self.analysis.sessions[si].messages;
        let i = messages.len();
        // The session's previous message is, as a rule, complete: its parts and their histories
        // give back the room they grew into (up to a quarter of what a session keeps).
        if let Some(previous) = messages.last_mut() {
            fit(&mut previous.parts);
            for record in &mut previous.parts {
                fit(&mut record.history);
            }
        }
        messages.push(Message {
            id: id.to_owned(),
            ..Message::default()
        });
        match index.entry(key) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(i);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                if let Some(w) = &mut self.window {
                    w.collided.insert(key);
                }
            }
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_whose_id_hashes_collide_stay_apart() {
        let mut state = State::new(FileId(0));
        let part = |id: &str, status: &str| {
            Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
                "callID": id, "tool": "read", "state": {"status": status, "input": {}},
            }))
        };
        let write = |seq: Seq, status: &'static str| Observation {
            seq,
            span: Span::new(FileId(0), seq, 1),
            status: Some(status.into()),
            status_span: None,
        };
        let si = state.session_slot("ses_1");
        let mi = state.message_slot(si, "msg_1");
        state.file_part(si, mi, part("prt_a", "pending"), write(0, "pending"));
        // Enough parts for the message to be indexed.
        let n = INDEXED_FROM as u64;
        for k in 1..n {
            let id = format!("prt_filler{k:02}");
            state.file_part(si, mi, part(&id, "pending"), write(k, "pending"));
        }
        assert_eq!(state.part_index.len(), INDEXED_FROM);
        // A collision: prt_b's key names prt_a's slot.
        let b_key = (si, mi, state.id_hasher.hash_one("prt_b"));
        state.part_index.insert(b_key, 0);
        state.file_part(si, mi, part("prt_b", "pending"), write(n, "pending"));
        state.file_part(
            si,
            mi,
            part("prt_b", "completed"),
            write(n + 1, "completed"),
        );
        state.file_part(si, mi, part("prt_a", "error"), write(n + 2, "error"));
        let parts = &state.analysis.sessions[si].messages[mi].parts;
        assert_eq!(parts.len(), INDEXED_FROM + 1);
        assert_eq!(parts[0].part.id, "prt_a");
        assert_eq!(parts[0].status_path(), ["pending", "error"]);
        assert_eq!(parts[INDEXED_FROM].part.id, "prt_b");
        assert_eq!(parts[INDEXED_FROM].status_path(), ["pending", "completed"]);
    }

    /// The index of tool calls finds what a walk of the session finds, as parts are filed
    /// after it is built: a call filed again in an earlier message, a part rewritten with another
    /// call id, calls that never were.
    #[test]
    fn the_call_index_finds_what_a_walk_finds() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let mut seq = 0;
        let mut file = |state: &mut State, msg: &str, id: &str, call: &str| {
            seq += 1;
            let part = Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": msg, "type": "tool",
                "callID": call, "tool": "read", "state": {"status": "running", "input": {}},
            }));
            let span = Span::new(FileId(0), seq, 1);
            let observation = Observation {
                seq,
                span,
                status: None,
                status_span: None,
            };
            let mi = state.message_slot(si, msg);
            state.file_part(si, mi, part, observation);
        };
        let walk = |state: &State, call: &str| {
            let messages = &state.analysis.sessions[si].messages;
            messages.iter().enumerate().find_map(|(mi, m)| {
                let pi = (m.parts.iter())
                    .position(|p| p.part.tool().is_some_and(|t| t.call_id == call))?;
                Some((mi, pi))
            })
        };
        let calls = ["c1", "c2", "c3", "c4", "none"];
        file(&mut state, "msg_1", "prt_1", "c1");
        file(&mut state, "msg_2", "prt_2", "c2");
        for call in calls {
            assert_eq!(state.claude_call(si, call), walk(&state, call), "{call}");
        }
        file(&mut state, "msg_2", "prt_3", "c1");
        file(&mut state, "msg_3", "prt_4", "c3");
        file(&mut state, "msg_1", "prt_5", "c3");
        file(&mut state, "msg_1", "prt_1", "c4");
        for call in calls {
            assert_eq!(state.claude_call(si, call), walk(&state, call), "{call}");
        }
    }

    #[test]
    fn fit_leaves_no_room_and_keeps_the_items() {
        let mut v = vec![1u64];
        v.push(2);
        assert!(v.capacity() > 2);
        fit(&mut v);
        assert_eq!((v.as_slice(), v.capacity()), (&[1, 2][..], 2));
        let mut empty: Vec<u64> = Vec::with_capacity(8);
        fit(&mut empty);
        assert_eq!(empty.capacity(), 0);
    }

    #[test]
    fn a_message_is_indexed_once_it_has_many_parts() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let mi = state.message_slot(si, "msg_1");
        let write = |k: usize, status: &'static str| {
            let id = format!("prt_{k:03}");
            let part = Part::from_value(&serde_json::json!({
                "id": id, "sessionID": "ses_1", "messageID": "msg_1", "type": "tool",
                "callID": id, "tool": "read", "state": {"status": status, "input": {}},
            }));
            let seq = k as Seq;
            let span = Span::new(FileId(0), seq, 1);
            (
                part,
                Observation {
                    seq,
                    span,
                    status: Some(status.into()),
                    status_span: None,
                },
            )
        };
        for k in 0..INDEXED_FROM + 3 {
            let (part, observation) = write(k, "pending");
            state.file_part(si, mi, part, observation);
            let indexed = if k + 1 >= INDEXED_FROM { k + 1 } else { 0 };
            assert_eq!(state.part_index.len(), indexed);
        }
        // Every part, indexed or found by its id, is written again in its own place.
        for k in 0..INDEXED_FROM + 3 {
            let (part, observation) = write(k, "completed");
            state.file_part(si, mi, part, observation);
        }
        let parts = &state.analysis.sessions[si].messages[mi].parts;
        assert_eq!(parts.len(), INDEXED_FROM + 3);
        for (k, record) in parts.iter().enumerate() {
            assert_eq!(record.part.id, format!("prt_{k:03}"));
            assert_eq!(record.status_path(), ["pending", "completed"]);
        }
    }
}
