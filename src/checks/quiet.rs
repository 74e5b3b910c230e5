//! What a diagnosis of an agent log may forget as it reads.
//!
//! The checks read the replayed model whole at the end, so a log's model would grow with its
//! parts. A large log's replay (the agent-log format's `replay_forgetting`) therefore forgets each
//! closed message that is *quiet* — no rule that runs on an agent log reports anything about it,
//! nor about anything else because of it — and every quiet event. A closed message that a rule
//! reports on its own is *kept* whole: the findings about it depend on nothing but the message,
//! the events [`Quiet`] keeps and what the session summary holds; so are all messages and events
//! after an event the rules report from what is kept and what follows (an error). The conditions
//! below mirror the rules they name; a differential test (whole model against forgetting model,
//! on every log of the project and the corpus and on thousands of mutations of them) holds them
//! to it. A message or event that rules report from what the log holds from some earlier record
//! on (a tool call id another message had first, a step of zero tokens next to the provider's
//! usage, a loop exit owed a tool result) *needs* that record: the replay keeps everything from
//! there on, reading the log again to do so when it may have forgotten some of it. Anything
//! else — a *loud* message or event — makes the replay keep everything, or read the log again
//! without forgetting, so the output never depends on what was forgotten.

use super::step_unclosed;
use super::{incidents, loop_exited_early, model_substituted, reply_truncated, step_merged};
use crate::model::{PartBody, TOOL_ABORTED};
use crate::session::forgetting::{Forgetting, Verdict};
use crate::session::{Event, EventKind, Message, Seq};

/// The earlier of two records a rule needs, either of them possibly none.
fn earlier(a: Option<Seq>, b: Seq) -> Option<Seq> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// What a message, with no part written again, is to the rules. `new_call` is told each tool
/// call id of the message with the record the message starts at, and answers where the message
/// of the session that had it first starts (`None`: it is new to the session).
fn message(message: &Message, new_call: &mut dyn FnMut(&str, Seq) -> Option<Seq>) -> Verdict {
    let mut kept = false;
    // tool-call-duplicate reads the two messages that have a call id: a second part of the
    // message itself keeps the message; one of another message needs everything from the
    // earlier of the two on.
    let start = (message.parts.iter())
        .filter_map(|p| p.history.first().map(|o| o.seq))
        .min()
        .unwrap_or(0);
    let mut needs: Option<Seq> = None;
    let mut own_calls: crate::FastSet<&str> = crate::FastSet::default();
    for p in &message.parts {
        match &p.part.body {
            // empty-text-part (which also asks whether a later message finished a step: the
            // forgotten ones are counted in the session's summary)
            PartBody::Text(t) if t.text.trim().is_empty() => kept = true,
            PartBody::Tool(t) => {
                // tool-never-finished, tool-error-dropped (whose labels are the message's own
                // writes and the stream aborts that `kept_event` keeps)
                if t.state.is_open() || t.state.error_text() == Some(TOOL_ABORTED) {
                    kept = true;
                }
                if !t.call_id.is_empty() {
                    if !own_calls.insert(&t.call_id) {
                        kept = true;
                    } else if let Some(first) = new_call(&t.call_id, start) {
                        needs = earlier(needs, first.min(start));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(from) = needs {
        return Verdict::Needs(from);
    }
    // step-unclosed (labelled with the stream aborts too), reply-truncated, step-merged
    if kept
        || !step_unclosed::unclosed(message).is_empty()
        || reply_truncated::cut_off(message)
        || (step_merged::replayed(message) && !step_merged::merges(message).is_empty())
    {
        Verdict::Kept
    } else {
        Verdict::Quiet
    }
}

/// A step whose finish reason does not continue the loop: its message and the message's step
/// finish before it.
type Unusable = (String, Option<Seq>);

/// `usage-mismatch`, for one kind of count a step may lack (all of them, cache reads, reasoning
/// tokens): the usage with such counts the provider sent, and the steps that lack them.
#[derive(Debug, Default)]
struct Short {
    /// Per session, the latest usage with such counts sent in it; the latest sent with none.
    last_sent: crate::FastMap<String, Seq>,
    sessionless_sent: Option<Seq>,
    /// The sessions whose step lacks them and that have written no part since, each with the
    /// record the rule starts reading at (the step's step before).
    steps: crate::FastMap<String, Seq>,
    /// At or before the least of `steps` (the least of those put there since it was last
    /// empty): what usage sent with no session needs, found without a walk of `steps`.
    floor: Option<Seq>,
}

impl Short {
    /// A step of `session` lacks the counts; its step before is `previous`, and the rule reads
    /// from `reading`. Whether the provider sent such counts since `previous`.
    fn step(&mut self, session: &String, previous: Seq, reading: Seq) -> bool {
        let sent = (self.last_sent.get(session).copied())
            .max(self.sessionless_sent)
            .is_some_and(|u| u > previous);
        match self.steps.get_mut(session) {
            Some(r) => *r = reading,
            None => {
                self.steps.insert(session.clone(), reading);
            }
        }
        self.floor = Some(self.floor.map_or(reading, |f| f.min(reading)));
        sent
    }

    /// The provider sent such counts at `seq` (for `session`, or with none): where the rule
    /// then reads from, when a step lacks them.
    fn sent(&mut self, session: Option<&String>, seq: Seq) -> Option<Seq> {
        match session {
            Some(s) => {
                match self.last_sent.get_mut(s) {
                    Some(last) => *last = seq,
                    None => {
                        self.last_sent.insert(s.clone(), seq);
                    }
                }
                self.steps.get(s).copied()
            }
            None => {
                self.sessionless_sent = Some(seq);
                self.floor
            }
        }
    }

    /// `session` wrote a part: its step is no longer compared with what is sent after.
    fn written(&mut self, session: &str) {
        if !self.steps.is_empty() {
            self.steps.remove(session);
            if self.steps.is_empty() {
                self.floor = None;
            }
        }
    }
}

/// What the rules that run on an agent log need of it, following its events in order.
#[derive(Debug, Default)]
pub struct Quiet {
    /// The model the user asked for in this run, and on the last wrapper command line
    /// (`model-substituted`).
    requested: Option<String>,
    wrapper_requested: Option<String>,
    /// `loop-exited-early`: the latest step finish of each message held (by id)...
    last_finish: crate::FastMap<String, Seq>,
    /// ... the steps with a finish reason that does not continue the loop whose session has not
    /// written a part since, by session: (message, the message's step finish before) ...
    unusable: crate::FastMap<String, Vec<Unusable>>,
    /// ... and the messages (ids by session) a loop exit followed such a step of, with no tool
    /// call the rule reports yet: a tool part written in one of them later may be one. (By
    /// session, so that a write is looked up without building a key.)
    exited: crate::FastMap<String, crate::FastSet<String>>,
    /// `usage-mismatch`: per session, its latest step finish; steps that recorded zero tokens,
    /// and steps that recorded tokens but no cache reads, or no reasoning tokens, against the
    /// usage the provider sent with those counts.
    last_step: crate::FastMap<String, Seq>,
    zero: Short,
    no_cache: Short,
    no_reasoning: Short,
    /// The first event of each session, and the first usage the provider sent with no session:
    /// where `usage-mismatch` and `loop-exited-early` start reading for a session's first step.
    session_first: crate::FastMap<String, Seq>,
    first_sessionless_usage: Option<Seq>,
}

impl Quiet {
    /// Where the rules start reading the events of the step of `session` whose step before (of
    /// the session, or of the message) is `before`: there, or, for a first step, from the
    /// session's first event and the first usage sent with no session (which the rules read
    /// with the session's).
    fn step_reading(&self, session: &str, before: Option<Seq>, now: Seq) -> Seq {
        match before {
            Some(b) if b > 0 => b,
            _ => {
                let first = self.session_first.get(session).copied().unwrap_or(now);
                self.first_sessionless_usage.map_or(first, |u| u.min(first))
            }
        }
    }

    /// loop-exited-early: a loop exit after steps that do not continue the loop (of its session,
    /// or of every session when it has none). Needs the steps whose message got a tool call the
    /// rule reports; the messages of the others are remembered as exited.
    fn loop_exit<'m>(
        &mut self,
        e: &Event,
        find: &dyn Fn(&str, &str) -> Option<&'m Message>,
    ) -> Verdict {
        use Verdict::{Loud, Needs, Quiet};
        // A loop exit with no session ends the steps of every session.
        let steps: Vec<(&String, &Unusable)> = match &e.session {
            Some(s) => (self.unusable.get_key_value(s).into_iter())
                .flat_map(|(s, steps)| steps.iter().map(move |step| (s, step)))
                .collect(),
            None => (self.unusable.iter())
                .flat_map(|(s, steps)| steps.iter().map(move |step| (s, step)))
                .collect(),
        };
        let mut exited = Vec::new();
        let mut needs = None;
        for (session, (message, before)) in steps {
            let Some(m) = find(session, message) else {
                return Loud;
            };
            // Reported when the step made a tool call, whatever its status or the tokens.
            let owed = (m.parts.iter()).any(|p| {
                p.part.tool().is_some()
                    && p.history
                        .first()
                        .is_some_and(|o| before.is_none_or(|b| o.seq > b))
            });
            // The rule reads the message (which the model holds) and the events from its
            // step before on.
            if owed {
                needs = earlier(needs, self.step_reading(session, *before, e.seq));
            } else {
                exited.push((session.clone(), message.clone()));
            }
        }
        for (session, message) in exited {
            self.exited.entry(session).or_default().insert(message);
        }
        needs.map_or(Quiet, Needs)
    }
    /// usage-mismatch and loop-exited-early on a step's finish (see [`Forgetting::event`]).
    fn step_finished(&mut self, e: &Event, step: &crate::session::StepFinish) -> Verdict {
        use Verdict::{Needs, Quiet};
        let before = (self.last_finish).insert(step.message_id.clone(), e.seq);
        let Some(session) = &e.session else {
            return Quiet;
        };
        // usage-mismatch: a step that recorded zero tokens when the provider sent usage
        // after the session's step before and before its next part write. The rule reads
        // the events from the step before on (and the session's writes after).
        // A session's key is built once, not at each of its steps.
        let before_step = match self.last_step.get_mut(session) {
            Some(last) => Some(std::mem::replace(last, e.seq)),
            None => self.last_step.insert(session.clone(), e.seq),
        };
        let previous = before_step.unwrap_or(0);
        let mut verdict = Quiet;
        // ... and a step that recorded tokens but no cache reads or no reasoning tokens,
        // when the provider sent some.
        let lacks = [
            step.zero_usage,
            !step.zero_usage && step.cache_read == 0,
            !step.zero_usage && step.reasoning == 0,
        ];
        if lacks.contains(&true) {
            let reading = self.step_reading(session, before_step, e.seq);
            let shorts = [&mut self.zero, &mut self.no_cache, &mut self.no_reasoning];
            for (lacks, short) in lacks.into_iter().zip(shorts) {
                if lacks && short.step(session, previous, reading) {
                    verdict = Needs(reading);
                }
            }
        }
        // loop-exited-early: reported when the loop exits after the step before its
        // session writes a part, for the tool calls its message got after its step
        // before.
        if loop_exited_early::unusable(step) {
            (self.unusable.entry(session.clone()).or_default())
                .push((step.message_id.clone(), before));
        }
        verdict
    }

    /// usage-mismatch on usage the provider sent: what a step before it lacks (see
    /// [`Forgetting::event`]).
    fn usage_sent(&mut self, e: &Event, u: &crate::session::ProviderUsage) -> Verdict {
        use Verdict::{Needs, Quiet};
        if u.input.saturating_add(u.output) == 0 {
            return Quiet;
        }
        let session = e.session.as_ref();
        let mut from = self.zero.sent(session, e.seq);
        if u.cache_read > 0 {
            from = from
                .into_iter()
                .chain(self.no_cache.sent(session, e.seq))
                .min();
        }
        if u.reasoning > 0 {
            from = from
                .into_iter()
                .chain(self.no_reasoning.sent(session, e.seq))
                .min();
        }
        from.map_or(Quiet, Needs)
    }
}

impl Forgetting for Quiet {
    fn message(
        &mut self,
        m: &Message,
        new_call: &mut dyn FnMut(&str, Seq) -> Option<Seq>,
    ) -> Verdict {
        message(m, new_call)
    }

    /// [`Verdict::Kept`]: the rules report the event from itself, the events `kept_event` keeps,
    /// the events after it and the messages held from then on.
    fn event<'m>(
        &mut self,
        e: &Event,
        find: &dyn Fn(&str, &str) -> Option<&'m Message>,
    ) -> Verdict {
        use Verdict::{Kept, Loud, Quiet};
        match &e.session {
            Some(s) => {
                if !self.session_first.contains_key(s) {
                    self.session_first.insert(s.clone(), e.seq);
                }
            }
            None => {
                if matches!(e.kind, EventKind::ProviderUsage(_)) {
                    self.first_sessionless_usage.get_or_insert(e.seq);
                }
            }
        }
        // session-error, stream-error-fatal, validation-crash: incidents are made of these. What
        // they read of the model is the part writes after an error and the tools still open at
        // the end, which no forgotten message has.
        if incidents::error_of(e).is_some() {
            return Kept;
        }
        match &e.kind {
            EventKind::RunStart => {
                self.requested = None;
                Quiet
            }
            EventKind::ModelRequested { spec, by_wrapper } => {
                let slot = match by_wrapper {
                    true => &mut self.wrapper_requested,
                    false => &mut self.requested,
                };
                *slot = Some(spec.clone());
                Quiet
            }
            // model-substituted (which reads the run's kept model events and the steps after)
            EventKind::ModelResolved(r) => {
                let same = (self.requested.as_deref())
                    .or(self.wrapper_requested.as_deref())
                    .is_none_or(|spec| model_substituted::same_model(spec, &r.provider, &r.model));
                if same { Quiet } else { Kept }
            }
            EventKind::StepFinished(step) => self.step_finished(e, step),
            // usage-mismatch: usage sent after a step that recorded zero tokens, or none of the
            // cache reads or reasoning tokens it states, before its session wrote a part.
            EventKind::ProviderUsage(u) => self.usage_sent(e, u),
            EventKind::LoopExit => self.loop_exit(e, find),
            // sse-concatenated-events (which reads the event itself)
            EventKind::Log { error, .. } => {
                let concatenated = error
                    .as_ref()
                    .is_some_and(|i| i.embedded_event.is_some() && i.payload.is_some());
                if concatenated { Kept } else { Quiet }
            }
            // Words and labels of findings that the events above set off.
            EventKind::Prompt
            | EventKind::Cancel
            | EventKind::Idle
            | EventKind::BusSessionError
            | EventKind::RetryWait(_)
            | EventKind::StreamUnhandled { .. }
            | EventKind::WrapperError { .. }
            | EventKind::WrapperStatus { .. } => Quiet,
            // Stream payloads, the processor's own records: what rules report, or what they read
            // when they report.
            _ => Loud,
        }
    }

    /// A part of message `message` of `session` was written (`tool`: a tool part): whether every
    /// rule stays quiet.
    fn written(&mut self, session: &str, message: &str, tool: bool) -> bool {
        if !self.unusable.is_empty() {
            self.unusable.remove(session);
        }
        self.zero.written(session);
        self.no_cache.written(session);
        self.no_reasoning.written(session);
        !(tool && (self.exited.get(session)).is_some_and(|messages| messages.contains(message)))
    }

    /// Message `message` of `session` was forgotten: nothing is asked about it any more.
    fn forget(&mut self, session: &str, message: &str) {
        self.last_finish.remove(message);
        if let Some(messages) = self.exited.get_mut(session) {
            messages.remove(message);
            if messages.is_empty() {
                self.exited.remove(session);
            }
        }
    }

    /// Retry waits (`retry-wait-excessive` reports each on its own, `session-error` notes
    /// the last before a timeout), stream aborts (what ended a step or tool that a kept message
    /// holds open), new runs and the models asked for and resolved (`model-substituted`, and
    /// `session-error`'s notes).
    fn kept_event(&self, kind: &EventKind) -> bool {
        match kind {
            EventKind::RetryWait(_)
            | EventKind::RunStart
            | EventKind::ModelRequested { .. }
            | EventKind::ModelResolved(_) => true,
            EventKind::StreamUnhandled { event_type, .. } => event_type == "abort",
            _ => false,
        }
    }
}
