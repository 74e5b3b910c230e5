use crate::FastMap;

use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{
    Analysis, Event, EventKind, Message, SDK_FINISH_REASONS, Seq, Session, StepFinish,
};

declare_check! {
    /// ## What it does
    /// Reports a step that called tools and finished with a reason that does not ask for another
    /// step — `unknown`, or a value that is not one of the AI SDK's finish reasons (`stop`,
    /// `length`, `content-filter`, `tool-calls`, `error`, `other`, `unknown`), such as an object
    /// stored as JSON text — after which the prompt loop logged `exiting loop`. It names the tool
    /// calls whose results never went back to the model: a call that completed, one still
    /// running, and one that failed (its error is the result the model needed), whatever token
    /// counts the step recorded.
    ///
    /// ## Why it matters
    /// The prompt loop continues only while the last step finished with `tool-calls`. When the
    /// provider's finish reason is lost on the way (the SDK reports it undefined and the agent
    /// stores `unknown`, or the raw reason is an object), the loop ends right after the tools ran:
    /// the model never sees their results, the task stops half done, and the run still looks
    /// successful. A failed call is owed too: link-assistant/agent's guard against a lost
    /// reason continues the loop only for calls that completed or still run, so a step whose
    /// `edit` failed ends the run with the error unseen, even when the step recorded its tokens.
    /// When only a lookup failed (`grep`, `read`: nothing the model meant to change was lost) and
    /// the step recorded its tokens, the finding is information: what the run lost by stopping
    /// cannot be told from the log.
    /// Zero tokens alone are not this finding: a synthetic model legitimately reports zero usage
    /// with reason `stop`.
    ///
    /// ## Example
    /// ```text
    /// "type": "tool_use",    "part": { "callID": "todowrite:0", "state": { "status": "completed", … } }
    /// "type": "step_finish", "part": { "reason": "unknown", "cost": 0, "tokens": { "input": 0, "output": 0, … } }
    /// "service": "session.prompt", "message": "exiting loop"
    /// ```
    ///
    /// ## How to fix
    /// Map the provider's finish reason correctly (`tool_calls` → `tool-calls`; read `unified`
    /// from a `{unified, raw}` object), and keep the loop going while a step has tool calls
    /// whose results or errors the model has not seen, whatever the finish reason says.
    pub struct LoopExitedEarly {
        name: "loop-exited-early",
        severity: Error,
        summary: "A step with tool calls finished with an unusable reason and the prompt loop exited: the tool results never reached the model",
    }
}

impl Check for LoopExitedEarly {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // The latest step finish of each message so far: one walk, not one walk back per step.
        let mut last_finish: FastMap<&str, Seq> = FastMap::default();
        let sessions = analysis.sessions_by_id();
        let mut index = SessionIndex::default();
        for e in &analysis.events {
            let EventKind::StepFinished(step) = &e.kind else {
                continue;
            };
            let previous = last_finish.insert(step.message_id.as_str(), e.seq);
            if !unusable(step) {
                continue;
            }
            let Some(session) = e.session.as_deref() else {
                continue;
            };
            let in_session = sessions.get(session).copied();
            // The loop exits before the session writes again; looked for first, as it is rare
            // and the step's calls are many in a message of many steps.
            let next_write = index.next_part_write(in_session, e.seq);
            let Some(exit) = analysis
                .events_after(e.seq)
                .take_while(|x| next_write.is_none_or(|n| x.seq < n))
                .find(|x| {
                    matches!(x.kind, EventKind::LoopExit)
                        && x.session.as_deref().is_none_or(|s| s == session)
                })
            else {
                continue;
            };
            // Every call the step made is owed to the model: a result, or an error (which the
            // model would answer by trying again), whatever tokens the step recorded. (The
            // agent's own guard continues only for calls that completed or still run, so a
            // step whose only tool failed stops there.)
            let calls = tool_calls(index.message(in_session, &step.message_id), previous);
            if calls.is_empty() {
                continue;
            }
            let mut f = finding(analysis, e, step, exit, &calls);
            if lookup_failed_only(step, &calls) {
                f = f.severity(Severity::Info).note(
                    "only a lookup failed (a tool that changes nothing in the workspace), and the step recorded its tokens: the model never saw the error, but what the run lost by stopping there cannot be told from the log",
                );
            }
            // What the provider itself said, when the log kept its response.
            let start = previous.unwrap_or(0);
            // The events of the step, from its end back (events are in sequence order).
            let events = &analysis.events;
            let step_events = &events[events.partition_point(|x| x.seq <= start)
                ..events.partition_point(|x| x.seq < e.seq)];
            if let Some((x, finish)) = step_events
                .iter()
                .rev()
                .filter(|x| x.session.as_deref().is_none_or(|s| s == session))
                .find_map(|x| match &x.kind {
                    EventKind::ProviderUsage(usage) => usage.finish.as_ref().map(|r| (x, r)),
                    _ => None,
                })
            {
                f = f
                    .also(Some(x.span.head()), format!("the provider's response ended with `{finish}`"))
                    .note(format!(
                        "the provider's own response ended with `{finish}`: the reason was lost between the stream and the step"
                    ));
            }
            out.push(f);
        }
    }
}

/// A finish reason that does not continue the loop and should not have ended a step with tools.
pub(super) fn unusable(step: &StepFinish) -> bool {
    step.reason_not_string
        || step.reason == "unknown"
        || !SDK_FINISH_REASONS.contains(&step.reason.as_str())
}

/// The tools that change the workspace: when one of them failed, the change the model asked for
/// was not made, and the run ended without the model knowing.
const WRITING_TOOLS: &[&str] = &["edit", "write", "patch", "multiedit", "apply_patch"];

/// Every call of the step failed, none of a tool that writes, and the step recorded its usage:
/// the loop left with an error unseen, but the provider's answer reached the step and nothing
/// the model meant to change was lost.
fn lookup_failed_only(step: &StepFinish, calls: &[Call]) -> bool {
    !step.zero_usage
        && calls
            .iter()
            .all(|c| c.3 == "error" && !WRITING_TOOLS.contains(&c.0.as_str()))
}

/// A tool call of the step: (tool, call id, part id, status, where its status is).
type Call = (String, String, String, String, Option<crate::source::Span>);

/// The tool parts of the step's message written during the step.
fn tool_calls(message: Option<&Message>, after: Option<Seq>) -> Vec<Call> {
    let Some(message) = message else {
        return Vec::new();
    };
    message
        .parts
        .iter()
        .filter_map(|p| {
            let tool = p.part.tool()?;
            let first = p.history.first()?.seq;
            if after.is_some_and(|a| first <= a) {
                return None;
            }
            Some((
                tool.tool.clone(),
                tool.call_id.clone(),
                p.part.id.clone(),
                tool.state.status_name().into_owned(),
                p.status_span(),
            ))
        })
        .collect()
}

/// Per session, built when first asked for: its messages by id, and the sequence numbers of all
/// its part writes in order. A check that asks for every step does not walk the session each time
/// (which was quadratic in a long session).
#[derive(Default)]
pub(super) struct SessionIndex<'a> {
    sessions: FastMap<&'a str, Indexed<'a>>,
}

struct Indexed<'a> {
    messages: FastMap<&'a str, &'a Message>,
    writes: Vec<Seq>,
}

impl<'a> SessionIndex<'a> {
    fn of(&mut self, session: &'a Session) -> &Indexed<'a> {
        self.sessions.entry(session.id.as_str()).or_insert_with(|| {
            // The first of a repeated id, as `Session::message` finds it.
            let messages = crate::first_of(session.messages.iter().map(|m| (m.id.as_str(), m)));
            let mut writes: Vec<Seq> = session
                .messages
                .iter()
                .flat_map(|m| m.parts.iter())
                .flat_map(|p| p.history.iter().map(|o| o.seq))
                .collect();
            writes.sort_unstable();
            Indexed { messages, writes }
        })
    }

    /// The message `id` of `session`.
    pub(super) fn message(&mut self, session: Option<&'a Session>, id: &str) -> Option<&'a Message> {
        let session = session?;
        self.of(session).messages.get(id).copied()
    }

    /// The first part write of `session` after `seq`.
    pub(super) fn next_part_write(&mut self, session: Option<&'a Session>, seq: Seq) -> Option<Seq> {
        let writes = &self.of(session?).writes;
        writes.get(writes.partition_point(|s| *s <= seq)).copied()
    }
}

fn finding(a: &Analysis, e: &Event, step: &StepFinish, exit: &Event, calls: &[Call]) -> Finding {
    let names: Vec<String> = calls
        .iter()
        .map(|(tool, call, _, status, _)| format!("`{tool}` ({call}, {status})"))
        .collect();
    let reason = if step.reason.is_empty() {
        "no finish reason".to_owned()
    } else {
        format!("finish reason `{}`", step.reason)
    };
    let zeros = if step.zero_usage {
        " and zero tokens"
    } else {
        ""
    };
    let s = if calls.len() == 1 { "" } else { "s" };
    let message = format!(
        "the step of message {} called {} and finished with {reason}{zeros}; the prompt loop then exited, so the tool result{s} never went back to the model",
        step.message_id,
        names.join(", ")
    );
    let primary = step.reason_span.unwrap_or(e.span.head());
    let mut f = LoopExitedEarly::META
        .finding(message)
        .at(primary, format!("{reason}, not `tool-calls`"))
        .also(Some(exit.span.head()), "the prompt loop exited here")
        .ids(Ids {
            session_id: e.session.clone(),
            message_id: Some(step.message_id.clone()),
            part_id: Some(step.part_id.clone()),
            call_id: calls.first().map(|c| c.1.clone()),
        });
    for (tool, call, _, status, span) in calls {
        f = f.also(
            *span,
            format!("`{tool}` ({call}) {status} here; the model never saw its result"),
        );
    }
    if step.reason_not_string {
        f = f.note("the finish reason was stored as JSON text of an object; the loop compares it with `tool-calls` as a string and stops");
    } else {
        f = f.note(if step.reason == "unknown" {
            "`unknown` means no finish reason reached the agent (the AI SDK's placeholder); a step whose tools ran should have finished with `tool-calls`".to_owned()
        } else {
            format!(
                "`{}` is none of the AI SDK's finish reasons ({}); a step whose tools ran should have finished with `tool-calls`",
                step.reason,
                SDK_FINISH_REASONS.join(", ")
            )
        });
    }
    if let Some((tool, ..)) = calls.iter().find(|c| c.3 == "error") {
        f = f.note(format!(
            "`{tool}` failed: its error is a result too, which the model would have answered (a retry, another approach); the loop stopped with it unseen"
        ));
    }
    if step.zero_usage {
        f = f.note("the step also recorded zero tokens and zero cost: the provider's finish and usage were both lost between the stream and the step");
    }
    if let Some(w) = a.events_after(exit.seq).find_map(|x| match &x.kind {
        EventKind::WrapperStatus {
            success: true,
            words,
        } => Some((x, words)),
        _ => None,
    }) {
        f = f
            .also(Some(w.0.span), "the wrapper still reported success")
            .note(format!("the wrapper still reported success (`{}`)", w.1));
    }
    f.help("map the provider's finish reason to `tool-calls` when the step has tool calls, and continue the loop while tool results or errors are unanswered")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::session::{Observation, PartRecord};
    use crate::source::{FileId, Span};

    #[test]
    fn the_index_finds_what_a_walk_of_the_session_finds() {
        // Writes out of order across messages, parts written several times, a repeated message id.
        let write = |seq| Observation {
            seq,
            span: Span::new(FileId(0), 0, 0),
            status: None,
            status_span: None,
        };
        let part = |id: &str, seqs: &[Seq]| PartRecord {
            part: Part::from_value(&serde_json::json!({"id": id, "type": "text", "text": "t"})),
            history: seqs.iter().map(|&s| write(s)).collect(),
        };
        let message = |id: &str, parts| Message {
            id: id.into(),
            parts,
            ..Message::default()
        };
        let session = Session {
            id: "ses_1".into(),
            messages: vec![
                message("msg_b", vec![part("prt_1", &[9, 14]), part("prt_2", &[3])]),
                message("msg_a", vec![part("prt_3", &[20, 5, 11])]),
                message("msg_b", vec![part("prt_4", &[1])]),
            ],
            ..Session::default()
        };
        let walk = |seq: Seq| {
            session
                .messages
                .iter()
                .flat_map(|m| m.parts.iter())
                .flat_map(|p| p.history.iter().map(|o| o.seq))
                .filter(|s| *s > seq)
                .min()
        };
        let mut index = SessionIndex::default();
        for seq in 0..25 {
            assert_eq!(index.next_part_write(Some(&session), seq), walk(seq), "{seq}");
        }
        for id in ["msg_a", "msg_b", "msg_c"] {
            let found = index.message(Some(&session), id).map(|m| m as *const Message);
            let walked = session.message(id).map(|m| m as *const Message);
            assert_eq!(found, walked, "{id}");
        }
        assert_eq!(index.next_part_write(None, 0), None);
    }
}
