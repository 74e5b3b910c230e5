use super::incidents::Endings;
use super::fix::{Fix, FixContext};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::model::PartBody;
use crate::session::{Analysis, Message, PartRecord};

declare_check! {
    /// ## What it does
    /// Reports every `step-start` part that no `step-finish` closes before the next step starts or
    /// the message ends, and points at what interrupted the step when the input shows it (a stream
    /// abort, the session's error, a crash).
    ///
    /// ## Why it matters
    /// The processor writes no `step-finish` on error or abort paths, so an unclosed step is the
    /// signature of an interrupted one: its usage and cost are lost, and when a retry continues in
    /// the same message the two steps merge — the next rebuilt request can then put text after a
    /// `tool_use`, which providers reject.
    ///
    /// ## Example
    /// ```text
    /// "type": "step_start",  "part": { "id": "prt_…q0Ys6Z", "messageID": "msg_c5b490d94001…", "type": "step-start" }
    /// … an error ends the stream; no "step_finish" for msg_c5b490d94001…
    /// ```
    ///
    /// ## How to fix
    /// A reply the user stopped (`MessageAbortedError`) ends its last step this way by design:
    /// that is no finding (the session summary counts the replies stopped by the user). Nor is a
    /// step of an attempt the processor retried in the same message (no tool ran in it, and a
    /// later step of the message finished): OpenCode retries a failed stream that way.
    ///
    /// Fix what interrupted the step (see the related label). For a stored session,
    /// `rewind repair` adds a recovery `step-finish` (reason `error`, zero tokens and cost).
    pub struct StepUnclosed {
        name: "step-unclosed",
        severity: Error,
        summary: "A step-start has no step-finish: the step was interrupted",
        fix: "a recovery `step-finish` (reason `error`, zero tokens and cost)",
    }
}

impl Check for StepUnclosed {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        super::step_merged::plan_boundaries(f, ctx)
    }

    fn fix_phase(&self) -> u8 {
        1
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // What ended each step or tool, and the records that could not be read, looked up
        // once something asks.
        let endings = std::cell::OnceCell::new();
        let unread = std::cell::OnceCell::new();
        if analysis
            .stream
            .as_ref()
            .is_some_and(|f| f.body_cut.is_some())
        {
            // A stream body its logger cut: the step went on past what was kept.
            return;
        }
        for session in &analysis.sessions {
            for message in &session.messages {
                let starts = message.count("step-start");
                let finishes = message.count("step-finish");
                let unclosed = unclosed(message);
                let aborted = message
                    .info
                    .as_ref()
                    .and_then(|i| i.error())
                    .is_some_and(|e| e.name == "MessageAbortedError");
                for (start, next) in unclosed {
                    let Some(obs) = start.last() else {
                        continue;
                    };
                    if aborted && next.is_none() {
                        // The last step of a reply the user stopped: OpenCode writes no
                        // step-finish for it, and replays the message as it is. Nothing is
                        // wrong; the session's summary counts the stop.
                        continue;
                    }
                    let mut f = Self::META
                        .finding(format!(
                            "a step of message {} started and never finished ({starts} step-start, {finishes} step-finish)",
                            message.id
                        ))
                        .at(obs.span.head(), "step started here")
                        .help(format!(
                            "the step was interrupted before its step-finish was written; {}",
                            super::repair_help(
                                analysis.format,
                                session.recorded_from,
                                "closes it with a recovery step-finish",
                                None
                            )
                        ));
                    let before = next.and_then(|n| n.last()).map(|o| o.seq);
                    for (event, label) in endings.get_or_init(|| Endings::new(analysis)).what_ended(&session.id, obs.seq, before) {
                        f = f.also(Some(event.span.head()), label);
                    }
                    if let Some(n) = next.and_then(|n| n.last()) {
                        f = f.also(
                            Some(n.span.head()),
                            "the next step starts here, in the same message",
                        );
                    }
                    // Absence is a claim: a record after the step's start that could not be
                    // read may hold its finish (a last step only: a next one shows it ended).
                    if next.is_none()
                        && let Some(may) = (unread.get_or_init(|| {
                            super::unread::Unread::new(analysis, &["step_finish", "step-finish"])
                        }))
                        .may_hold(obs.span, &[&message.id])
                    {
                        f.message = format!(
                            "a step of message {} started and no finish of it could be read ({starts} step-start, {finishes} step-finish); {}",
                            message.id,
                            may.words("its step-finish")
                        ).into();
                        f = f
                            .severity(Severity::Warning)
                            .also(
                                Some(may.record.span.head()),
                                "this record could not be decoded",
                            )
                            .help("read the record rewind could not decode: if it holds the step's finish, the step finished and nothing is wrong; if not, the step was interrupted");
                    }
                    if next.is_none()
                        && analysis.format.is_opencode_store()
                        && session.went_on_after(&message.id)
                    {
                        // The client resumed past the message: its last step stays open on
                        // disk, and the session lives.
                        f = f.severity(crate::checks::diagnostic::Severity::Warning).note(
                            "the session went on after it (a later user message): OpenCode resumed past the unfinished step, which stays open on disk",
                        );
                    }
                    out.push(
                        f.ids(
                            Ids::default()
                                .session(session.id.clone())
                                .message(message.id.clone())
                                .part(start.part.id.clone()),
                        ),
                    );
                }
            }
        }
    }
}

/// The steps of `message` no `step-finish` closes, each with the step-start that follows it in
/// the message (if any), in part order: what the rule reports, before it leaves out the last step
/// of a reply the user stopped. Depends on the message alone.
pub(super) fn unclosed(message: &Message) -> Vec<(&PartRecord, Option<&PartRecord>)> {
    // Each step-start with where it is in the message: steps are put in part order by that, not
    // by looking each part up again (a merged message of many steps made that quadratic).
    let mut open: Option<(usize, &PartRecord)> = None;
    let mut open_has_tools = false;
    let mut unclosed = Vec::new();
    // Steps left open by an attempt the processor retried in the same message: no
    // tool ran in them, and a later step of the message finished. (OpenCode retries
    // a failed stream this way, keeping the attempt's step-start and partial text.) Each with
    // the step-start that followed it: the one that replaced it as the open step.
    let mut attempts = Vec::new();
    for (at, part) in message.parts.iter().enumerate() {
        match part.part.body {
            PartBody::StepStart(_) => {
                if let Some((prev_at, prev)) = open.replace((at, part)) {
                    if open_has_tools {
                        unclosed.push((prev_at, prev, Some(part)));
                    } else {
                        attempts.push((prev_at, prev, Some(part)));
                    }
                }
                open_has_tools = false;
            }
            PartBody::StepFinish(_) => {
                open = None;
                attempts.clear();
            }
            PartBody::Tool(_) => open_has_tools = true,
            _ => {}
        }
    }
    // Attempts no finished step followed were interruptions after all.
    unclosed.append(&mut attempts);
    unclosed.sort_by_key(|(at, ..)| *at);
    let mut unclosed: Vec<_> = (unclosed.into_iter())
        .map(|(_, part, next)| (part, next))
        .collect();
    if let Some((_, prev)) = open {
        unclosed.push((prev, None));
    }
    unclosed
}
