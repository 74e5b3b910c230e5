use super::{Check, CheckMeta, declare_check};
use crate::diagnostic::{Finding, Ids};
use crate::model::{MessageBody, PartBody};
use crate::session::{Analysis, Message, PartRecord};

declare_check! {
    /// ## What it does
    /// Walks each assistant message's parts in stored (id) order, step by step (a `step-start`
    /// starts a step), and reports text or reasoning that comes after a tool part in the same
    /// step: two model steps were stored as one, with no `step-finish`/`step-start` between them.
    /// Messages OpenCode does not replay (an error other than `MessageAbortedError`) are skipped.
    ///
    /// ## Why it matters
    /// When a stream error interrupts a step, OpenCode retries on the same message without writing
    /// the step's `step-finish` or the next `step-start` (PR #16751, layer 2). `step-start` is the
    /// only block separator when the history is rebuilt, so the next request puts text after a
    /// `tool_use` in one assistant message, before its `tool_result`. Anthropic answers 400
    /// "`tool_use` ids were found without `tool_result` blocks immediately after" on every later
    /// prompt (reasoning after a tool gives "Expected `thinking` or `redacted_thinking`").
    ///
    /// ## Example
    /// ```text
    /// step-start · text · tool (error "Tool execution aborted") · text · tool (completed) · step-finish
    ///                                                             ^^^^ a second step, no boundary
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair` inserts a recovery `step-finish` (reason `error`, zero tokens and cost)
    /// and a `step-start` between the tool part and the text, with ids that sort between them, so
    /// each step is closed and the rebuilt request splits there. The processor fix is to write a
    /// recovery `step-finish` before retrying (PR #16751 layer 2).
    pub struct StepMerged {
        name: "step-merged",
        severity: Error,
        summary: "Text or reasoning follows a tool part in the same step: two steps were stored as one",
    }
}

/// A merge point: the tool part and the text or reasoning part after it in the same step.
pub struct Merge<'a> {
    pub tool: &'a PartRecord,
    /// The part just before `next` (where a boundary must go after).
    pub before: &'a PartRecord,
    pub next: &'a PartRecord,
}

/// Whether OpenCode replays this message (assistants with an error other than
/// `MessageAbortedError` are skipped).
pub fn replayed(message: &Message) -> bool {
    match message.info.as_ref().map(|i| &i.body) {
        Some(MessageBody::Assistant(a)) => a
            .error
            .as_ref()
            .is_none_or(|e| e.name == "MessageAbortedError"),
        Some(MessageBody::User(_)) => false,
        _ => true,
    }
}

/// The merge points of a message.
pub fn merges(message: &Message) -> Vec<Merge<'_>> {
    let mut out = Vec::new();
    let mut tool: Option<&PartRecord> = None;
    let mut prev: Option<&PartRecord> = None;
    for part in &message.parts {
        match &part.part.body {
            PartBody::StepStart(_) => tool = None,
            PartBody::Tool(_) => tool = Some(part),
            PartBody::Text(_) | PartBody::Reasoning(_) => {
                if let (Some(t), Some(b)) = (tool.take(), prev) {
                    out.push(Merge {
                        tool: t,
                        before: b,
                        next: part,
                    });
                }
            }
            _ => {}
        }
        prev = Some(part);
    }
    out
}

impl Check for StepMerged {
    fn meta(&self) -> &'static CheckMeta {
        &Self::META
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for session in &analysis.sessions {
            for message in session.messages.iter().filter(|m| replayed(m)) {
                for m in merges(message) {
                    let (Some(next), Some(tool)) = (m.next.last(), m.tool.part.tool()) else {
                        continue;
                    };
                    let what = m.next.part.type_name();
                    let f = Self::META
                        .finding(format!(
                            "message {} merges two steps: {what} part {} follows tool part {} (`{}`, {}) with no step-start between them",
                            message.id,
                            m.next.part.id,
                            m.tool.part.id,
                            tool.tool,
                            tool.call_id
                        ))
                        .at(next.span.head(), format!("{what} after a tool call, in the same step"))
                        .also(
                            m.tool.last().map(|o| o.span.head()),
                            "the tool call this step ended with",
                        )
                        .note("the rebuilt request puts this text after the `tool_use` in one assistant message, before its result")
                        .help("a retry continued in the same message without closing the step (PR #16751 layer 2); `rewind repair` inserts a recovery step-finish and a step-start here");
                    out.push(
                        f.ids(
                            Ids::default()
                                .session(session.id.clone())
                                .message(message.id.clone())
                                .part(m.next.part.id.clone())
                                .call(tool.call_id.clone()),
                        ),
                    );
                }
            }
        }
    }
}
