//! The forgetting window: what a diagnosis's replay may forget, and when.

use std::hash::BuildHasher;

use super::state::{INDEXED_FROM, State};
use crate::session::forgetting::{Forgetting, Verdict};
use crate::session::{Message, Seq};

impl State {
    /// Something a rule may report with what surrounds it: nothing may be forgotten, and the log
    /// is read again, whole, when something was.
    pub(super) fn not_quiet(&mut self) {
        match &mut self.window {
            Some(w) if w.forgetting => w.again = Some(None),
            _ => self.window = None,
        }
    }

    /// Something the rules report from what is kept and what comes after: nothing more may be
    /// forgotten from record `at` on, but what was is not needed.
    pub(super) fn freeze(&mut self, at: Seq) {
        match &mut self.window {
            Some(w) if w.forgetting => {
                w.frozen.get_or_insert(at);
            }
            _ => self.window = None,
        }
    }

    /// Something the rules report from what the log holds from record `from` on: fine when
    /// forgetting stopped at or before it (or never began: then nothing more is forgotten);
    /// otherwise the log is read again, keeping everything from there on.
    pub(super) fn needs(&mut self, from: Seq) {
        match &mut self.window {
            Some(w) if w.forgetting => {
                if w.frozen.is_some_and(|at| at <= from) {
                    return;
                }
                w.again = match w.again {
                    // Whole already.
                    Some(None) => Some(None),
                    Some(Some(n)) => Some(Some(n.min(from))),
                    None => Some(Some(from)),
                };
            }
            // Nothing was forgotten: keep everything from here on.
            _ => self.window = None,
        }
    }

    /// Record `seq` is next: from the record a reading again must keep everything from, nothing
    /// more is forgotten.
    pub(super) fn reach(&mut self, seq: Seq) {
        if let Some(w) = &self.window
            && w.frozen.is_none()
            && w.keep_from.is_some_and(|k| k <= seq)
        {
            self.freeze(seq);
        }
    }

    /// Whether the log must be read again without forgetting.
    pub(super) fn again(&self) -> bool {
        self.window.as_ref().is_some_and(|w| w.again.is_some())
    }

    /// What message `mi` of session `si` is to the rules, its tool calls counted as the
    /// session's.
    pub(super) fn verdict(&mut self, si: usize, mi: usize) -> Verdict {
        let Some(w) = &mut self.window else {
            return Verdict::Loud;
        };
        if w.calls.len() <= si {
            w.calls.resize_with(si + 1, crate::FastMap::default);
        }
        let calls = &mut w.calls[si];
        let hasher = &self.id_hasher;
        let message = &mut self.analysis.sessions[si].messages[mi];
        // The rules read a message's parts in id order, as `finish` sorts them (parts arrive out
        // of it). The message leaves the model next, or the replay stops: the part index, which
        // holds positions, is not asked about it again.
        message
            .parts
            .sort_unstable_by(|a, b| a.part.id.cmp(&b.part.id));
        let mut new_call = |call: &str, at: Seq| match calls.entry(hasher.hash_one(call)) {
            std::collections::hash_map::Entry::Occupied(first) => Some(*first.get()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(at);
                None
            }
        };
        (w.rules).message(message, &mut new_call)
    }

    /// A message is starting in session `si`: forgets the session's messages that are closed and
    /// quiet, and puts aside those that are kept, once the model is large enough (see
    /// [`replay_forgetting`]).
    pub(super) fn closing(&mut self, si: usize, new_id: &str) {
        let Some(w) = &mut self.window else {
            return;
        };
        if !w.forgetting {
            if w.live_parts < w.from {
                return;
            }
            w.forgetting = true;
            // Every other session's messages but its newest are closed, if their tools are.
            let rules = &w.rules;
            self.analysis.events.retain(|e| rules.kept_event(&e.kind));
            for other in 0..self.analysis.sessions.len() {
                if other != si {
                    self.forget_closed(other, 1);
                }
            }
        }
        if self.again() {
            return;
        }
        let closed_before = |w: &Window| {
            let forgotten = (w.highest.get(si))
                .and_then(Option::as_deref)
                .is_some_and(|h| new_id <= h);
            let kept =
                (w.kept_ids.get(si)).is_some_and(|k| k.contains(&self.id_hasher.hash_one(new_id)));
            forgotten || kept
        };
        if self.window.as_ref().is_some_and(closed_before) {
            // Maybe a message that was closed written again.
            self.not_quiet();
            return;
        }
        self.forget_closed(si, 0);
    }

    /// Forgets the closed messages of session `si` that are quiet, but its `newest` messages.
    fn forget_closed(&mut self, si: usize, newest: usize) {
        let messages = &self.analysis.sessions[si].messages;
        let n = messages.len().saturating_sub(newest);
        let closed: Vec<usize> = (0..n).filter(|&mi| !has_open_tool(&messages[mi])).collect();
        // Messages whose tools never end are looked at again at every new message: past a
        // bound (in number, and in parts against all the parts filed), forgetting would cost
        // more than the square of the log.
        let open_parts: usize = (0..n)
            .filter(|mi| closed.binary_search(mi).is_err())
            .map(|mi| messages[mi].parts.len())
            .sum();
        let too_costly = self.window.as_mut().is_some_and(|w| {
            w.looked_again += open_parts;
            w.looked_again > 4 * w.filed + (1 << 16)
        });
        if n - closed.len() > MAX_OPEN_MESSAGES || too_costly {
            self.not_quiet();
            return;
        }
        // From the last, so that what `swap_remove` moves is never one of them.
        for mi in closed.into_iter().rev() {
            match self.verdict(si, mi) {
                Verdict::Loud => {
                    self.not_quiet();
                    return;
                }
                Verdict::Needs(from) => {
                    self.needs(from);
                    if self.window.as_ref().is_none_or(|w| w.again.is_some()) {
                        return;
                    }
                    self.keep(si, mi);
                }
                Verdict::Quiet if self.window.as_ref().is_some_and(|w| w.frozen.is_none()) => {
                    self.forget(si, mi);
                }
                // Looked at once: its tool calls are the session's now.
                Verdict::Quiet | Verdict::Kept => self.keep(si, mi),
            }
        }
        self.forget_writes(si);
    }

    /// Forgets message `mi` of session `si`, counting it in the session's summary.
    fn forget(&mut self, si: usize, mi: usize) {
        let message = self.take(si, mi);
        let Some(w) = &mut self.window else {
            return;
        };
        let session = &mut self.analysis.sessions[si];
        session.forgotten.add(&message);
        w.rules.forget(&session.id, &message.id);
        if w.highest.len() <= si {
            w.highest.resize(si + 1, None);
        }
        if w.highest[si]
            .as_deref()
            .is_none_or(|h| h < message.id.as_str())
        {
            w.highest[si] = Some(message.id);
        }
    }

    /// Puts message `mi` of session `si` aside until the end: a rule reports it, from what it
    /// holds alone.
    fn keep(&mut self, si: usize, mi: usize) {
        let message = self.take(si, mi);
        let Some(w) = &mut self.window else {
            return;
        };
        if w.kept.len() <= si {
            w.kept.resize_with(si + 1, Vec::new);
            w.kept_ids.resize_with(si + 1, crate::FastSet::default);
        }
        w.kept_ids[si].insert(self.id_hasher.hash_one(&message.id));
        w.kept[si].push(message);
    }

    /// Takes message `mi` out of session `si` and out of the indexes; the session's last message
    /// takes its place.
    pub(super) fn take(&mut self, si: usize, mi: usize) -> Message {
        let hasher = &self.id_hasher;
        let session = &mut self.analysis.sessions[si];
        let message = session.messages.swap_remove(mi);
        let moved_from = session.messages.len();
        if let Some(w) = &mut self.window {
            w.live_parts = w.live_parts.saturating_sub(message.parts.len());
        }
        let index = &mut self.message_index[si];
        // The message leaves the indexes; the one that took its place moves in them.
        let key = hasher.hash_one(&message.id);
        if index.get(&key) == Some(&mi) {
            index.remove(&key);
        }
        if message.parts.len() >= INDEXED_FROM {
            for p in &message.parts {
                self.part_index
                    .remove(&(si, mi, hasher.hash_one(&p.part.id)));
            }
        }
        if let Some(moved) = session.messages.get(mi) {
            let moved_key = hasher.hash_one(&moved.id);
            if index.get(&moved_key) == Some(&moved_from) {
                index.insert(moved_key, mi);
            }
            if moved.parts.len() >= INDEXED_FROM {
                for p in &moved.parts {
                    let h = hasher.hash_one(&p.part.id);
                    if let Some(pi) = self.part_index.remove(&(si, moved_from, h)) {
                        self.part_index.insert((si, mi, h), pi);
                    }
                }
            }
        }
        // Another message with the same hash (a collision) is found by the index again.
        let collided = self
            .window
            .as_ref()
            .is_some_and(|w| w.collided.contains(&key));
        if collided
            && !index.contains_key(&key)
            && let Some(j) = (session.messages.iter()).position(|m| hasher.hash_one(&m.id) == key)
        {
            index.insert(key, j);
        }
        message
    }

    /// Drops the writes of session `si` that only forgotten parts can ask about (see
    /// [`State::file_part`]): those before the first write of every part it still has. Once the
    /// list has doubled since, so that the walk of the session's parts is paid for.
    fn forget_writes(&mut self, si: usize) {
        let (Some(w), Some(writes)) = (&mut self.window, self.first_after_event.get_mut(si)) else {
            return;
        };
        if w.writes_kept.len() <= si {
            w.writes_kept.resize(si + 1, 0);
        }
        if writes.len() < 2 * w.writes_kept[si] + 64 {
            return;
        }
        let live = (self.analysis.sessions[si].messages.iter())
            .flat_map(|m| m.parts.iter().filter_map(|p| p.history.first()))
            .map(|o| o.seq)
            .min();
        let gone = writes.partition_point(|s| live.is_none_or(|first| *s < first));
        writes.drain(..gone);
        w.writes_kept[si] = writes.len();
    }
}

/// Messages of a session looked at again at every new message while forgetting, at most: past
/// that, nothing is forgotten (see [`State::forget_closed`]).
const MAX_OPEN_MESSAGES: usize = 256;

/// What a diagnosis's replay may forget, and what it has (see [`replay_forgetting`]).
pub(super) struct Window {
    /// Live parts from which closed messages are forgotten.
    pub(super) from: usize,
    /// Parts of the messages the model holds, and parts filed in all.
    pub(super) live_parts: usize,
    pub(super) filed: usize,
    /// Parts of messages with a tool still open looked at again when another message started.
    looked_again: usize,
    /// Something was forgotten.
    pub(super) forgetting: bool,
    /// Something not quiet came after something was forgotten: the log must be read again,
    /// keeping everything from this record on, or whole (`Some(None)`; see [`Forgot::Again`]).
    pub(super) again: Option<Option<Seq>>,
    /// Something the rules report from what is kept came after something was forgotten: every
    /// message and event is kept from this record on.
    pub(super) frozen: Option<Seq>,
    /// A reading again keeps everything from this record on.
    pub(super) keep_from: Option<Seq>,
    /// What the rules need.
    pub(super) rules: Box<dyn Forgetting>,
    /// Per session index: hashes of the tool call ids of the messages looked at so far, each
    /// with the record the first message that had it starts at.
    calls: Vec<crate::FastMap<u64, Seq>>,
    /// Per session index: the highest id of a forgotten message.
    highest: Vec<Option<String>>,
    /// Per session index: the messages put aside until the end, and hashes of their ids.
    pub(super) kept: Vec<Vec<Message>>,
    kept_ids: Vec<crate::FastSet<u64>>,
    /// Hashes of message ids that another message of its session has too (see
    /// [`State::take`]).
    pub(super) collided: crate::FastSet<u64>,
    /// Per session index: how many of its first-after-event writes were left at its last pruning.
    writes_kept: Vec<usize>,
}

impl Window {
    pub(super) fn new(from: usize, rules: Box<dyn Forgetting>) -> Self {
        Self {
            from,
            live_parts: 0,
            filed: 0,
            looked_again: 0,
            forgetting: false,
            again: None,
            frozen: None,
            keep_from: None,
            rules,
            calls: Vec::new(),
            highest: Vec::new(),
            kept: Vec::new(),
            kept_ids: Vec::new(),
            collided: crate::FastSet::default(),
            writes_kept: Vec::new(),
        }
    }
}

/// Whether a tool of `message` is still pending or running.
fn has_open_tool(message: &Message) -> bool {
    (message.parts.iter()).any(|p| p.part.tool().is_some_and(|t| t.state.is_open()))
}

/// Gives back the room a vector grew into: its items move to an allocation of their size.
/// (`shrink_to_fit` asks the allocator to shrink in place, which mimalloc declines when the block
/// would stay at least half used: a message's two parts would keep the block of four that the
/// first push made.)
pub(super) fn fit<T>(items: &mut Vec<T>) {
    if items.capacity() > items.len() {
        let mut fitted = Vec::with_capacity(items.len());
        fitted.append(items);
        *items = fitted;
    }
}

/// Where an item is, from an index of 64-bit hashes of ids that holds the first item with each
/// hash (`hit`): checked with `is_it`, and searched for when another item has the same hash (a
/// collision).
pub(super) fn hashed_position<T>(
    hit: Option<usize>,
    items: &[T],
    is_it: impl Fn(&T) -> bool,
) -> Option<usize> {
    match hit {
        Some(i) if items.get(i).is_some_and(&is_it) => Some(i),
        Some(_) => items.iter().position(is_it),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::*;
    use crate::model::Part;
    use crate::model::TOOL_ABORTED;
    use crate::session::EventKind;
    use crate::session::Observation;
    use crate::source::FileId;
    use crate::source::Span;

    /// Checks the history kept of part `p` of session `s` against every write made to it
    /// (`(seq, status, cleanup)`): the same path of statuses, the same first and last writes, and
    /// the first and last write of each status. Returns how many writes the history keeps.
    fn check_part_history(
        state: &State,
        s: usize,
        p: usize,
        writes: &[(Seq, &str, bool)],
        statuses: &[&str],
    ) -> usize {
        let session = state.analysis.session(&format!("ses_{s}")).into_iter();
        let record = session
            .flat_map(|x| x.messages.iter().flat_map(|m| &m.parts))
            .find(|r| r.part.id == format!("prt_{p}"));
        let Some(record) = record else {
            panic!("prt_{p} of ses_{s} is missing");
        };
        let kept: Vec<(Seq, &str)> = record
            .history
            .iter()
            .map(|o| (o.seq, o.status.as_deref().unwrap_or_default()))
            .collect();
        let mut path: Vec<&str> = writes.iter().map(|w| w.1).collect();
        path.dedup();
        assert_eq!(record.status_path(), path);
        assert_eq!(kept.first(), writes.first().map(|w| (w.0, w.1)).as_ref());
        assert_eq!(kept.last(), writes.last().map(|w| (w.0, w.1)).as_ref());
        for &status in statuses {
            let first = writes.iter().find(|w| w.1 == status).map(|w| w.0);
            let last = writes.iter().rev().find(|w| w.1 == status).map(|w| w.0);
            assert_eq!(kept.iter().find(|k| k.1 == status).map(|k| k.0), first);
            assert_eq!(kept.iter().rev().find(|k| k.1 == status).map(|k| k.0), last);
        }
        kept.len()
    }

    /// Histories keep what the checks read of every write, whatever the order of writes and
    /// events: random runs of writes (three parts, two sessions, cleanups among them) and events,
    /// each compared with every write kept.
    #[test]
    fn histories_drop_only_writes_nothing_reads() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let statuses = ["pending", "running", "completed", "error"];
        let (mut writes_made, mut writes_kept) = (0, 0);
        for _ in 0..300 {
            let mut state = State::new(FileId(0));
            // (session, part) → every write: (seq, status, cleanup).
            type Writes<'a> = Vec<(Seq, &'a str, bool)>;
            let mut all: std::collections::BTreeMap<(usize, usize), Writes<'_>> =
                std::collections::BTreeMap::new();
            let mut events: Vec<Seq> = Vec::new();
            for seq in 0..60 {
                if next(8) == 0 {
                    state.event(seq, Span::new(FileId(0), seq, 1), None, EventKind::Idle);
                    events.push(seq);
                    continue;
                }
                let (s, p) = (next(2) as usize, next(3) as usize);
                // A part keeps its status for a run of writes, as a streamed one does.
                let previous = all.get(&(s, p)).and_then(|w| w.last()).map(|w| w.1);
                let status = match previous {
                    Some(status) if next(4) != 0 => status,
                    _ => statuses[next(4) as usize],
                };
                let cleanup = status == "error" && next(2) == 0;
                let error = if cleanup { TOOL_ABORTED } else { "boom" };
                let part = Part::from_value(&serde_json::json!({
                    "id": format!("prt_{p}"), "sessionID": format!("ses_{s}"),
                    "messageID": "msg_1", "type": "tool", "callID": "c", "tool": "read",
                    "state": {"status": status, "input": {}, "error": error},
                }));
                let si = state.session_slot(&format!("ses_{s}"));
                let mi = state.message_slot(si, "msg_1");
                let write = Observation {
                    seq,
                    span: Span::new(FileId(0), seq, 1),
                    status: Some(status.into()),
                    status_span: None,
                };
                state.file_part(si, mi, part, write);
                all.entry((s, p)).or_default().push((seq, status, cleanup));
            }
            for ((s, p), writes) in &all {
                writes_made += writes.len();
                writes_kept += check_part_history(&state, *s, *p, writes, &statuses);
            }
            // The first write of each session after each event, with and without the cleanups'
            // last writes (what `incidents` and `loop-exited-early` ask).
            for s in 0..2 {
                for skip_cleanup in [false, true] {
                    let counted = |writes: &[(Seq, &str, bool)], i: usize| {
                        !(skip_cleanup && i + 1 == writes.len() && writes[i].2)
                    };
                    let full: Vec<Seq> = all
                        .iter()
                        .filter(|((x, _), _)| *x == s)
                        .flat_map(|(_, w)| (0..w.len()).filter(|&i| counted(w, i)).map(|i| w[i].0))
                        .collect();
                    let kept: Vec<Seq> = state
                        .analysis
                        .session(&format!("ses_{s}"))
                        .into_iter()
                        .flat_map(|x| x.messages.iter().flat_map(|m| &m.parts))
                        .flat_map(|r| {
                            let writes = &all[&(s, r.part.id[4..].parse::<usize>().unwrap_or(9))];
                            let cleanup = writes.last().is_some_and(|w| w.2);
                            let n = r.history.len();
                            r.history.iter().enumerate().filter_map(move |(i, o)| {
                                (!(skip_cleanup && cleanup && i + 1 == n)).then_some(o.seq)
                            })
                        })
                        .collect();
                    for &e in &events {
                        let after = |v: &[Seq]| v.iter().copied().filter(|&x| x > e).min();
                        assert_eq!(after(&kept), after(&full), "session {s}, event {e}");
                    }
                }
            }
        }
        // Writes were dropped: the runs above are not all kept by chance.
        assert!(
            writes_kept * 4 < writes_made * 3,
            "{writes_kept} of {writes_made}"
        );
    }

    #[test]
    fn messages_whose_id_hashes_collide_stay_apart() {
        let mut state = State::new(FileId(0));
        let si = state.session_slot("ses_1");
        let a = state.message_slot(si, "msg_a");
        // A collision: msg_b's hash names msg_a's slot.
        let b_key = state.id_hasher.hash_one("msg_b");
        state.message_index[si].insert(b_key, a);
        let b = state.message_slot(si, "msg_b");
        assert_ne!(a, b);
        assert_eq!(state.message_slot(si, "msg_b"), b);
        assert_eq!(state.message_slot(si, "msg_a"), a);
        let ids: Vec<&str> = (state.analysis.sessions[si].messages.iter())
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, ["msg_a", "msg_b"]);
    }

    #[test]
    fn a_new_message_gives_back_the_room_of_the_one_before() {
        let log = (0..3)
            .map(|n| {
                format!(
                    r#"{{"type":"step_start","timestamp":{n},"sessionID":"ses_1","part":{{"id":"prt_{n}","sessionID":"ses_1","messageID":"msg_{}","type":"step-start"}}}}"#,
                    n / 2
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let a = run(&log);
        let messages = &a.sessions[0].messages;
        assert_eq!(messages[0].parts.len(), 2);
        assert_eq!(messages[0].parts.capacity(), 2);
        assert_eq!(messages[1].parts.len(), 1);
    }
}
