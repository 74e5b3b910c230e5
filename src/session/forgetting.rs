//! What the rules need of an agent log, for a replay that forgets the rest: the agent-log
//! format asks, the checks answer (`checks::quiet`).

use super::{Event, EventKind, Message, Seq};

/// What a closed message or an event is to the rules (see [`Forgetting`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No rule reports anything about it or because of it: it may be forgotten.
    Quiet,
    /// Rules report it from what it holds, what is kept and what follows: a message is put
    /// aside whole; after an event, nothing more is forgotten.
    Kept,
    /// A rule may report it with what surrounds it: nothing may be forgotten.
    Loud,
    /// Rules report it from what the log holds from this record on: everything from there on
    /// must be kept (the log is read again to keep it when forgetting had begun and had not
    /// stopped by then).
    Needs(Seq),
}

/// What the rules need of a log, for a replay that forgets the rest (implemented by the
/// checks, which know what each rule reads: `checks::quiet`).
pub trait Forgetting: Send {
    /// What `message`, closed, is to the rules. `new_call` is told each of its tool call ids with
    /// the record the message starts at, and answers where the message of the session that had
    /// the id first starts (`None`: the id is new to the session).
    fn message(
        &mut self,
        message: &Message,
        new_call: &mut dyn FnMut(&str, Seq) -> Option<Seq>,
    ) -> Verdict;

    /// What `event` is to the rules, given the events before it. `find` finds a message the
    /// model holds by session and id.
    fn event<'m>(
        &mut self,
        event: &Event,
        find: &dyn Fn(&str, &str) -> Option<&'m Message>,
    ) -> Verdict;

    /// A part of message `message` of `session` was written (`tool`: a tool part): whether the
    /// rules stay quiet.
    fn written(&mut self, session: &str, message: &str, tool: bool) -> bool;

    /// Message `message` of `session` was forgotten.
    fn forget(&mut self, session: &str, message: &str);

    /// Whether a finding may point at an event of this kind whatever the rest of the log holds:
    /// such events are kept when the others are forgotten.
    fn kept_event(&self, kind: &EventKind) -> bool;
}
