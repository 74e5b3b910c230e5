use super::incidents::what_ended;
use super::{Check, CheckMeta, declare_check};
use crate::diagnostic::{Finding, Ids, Severity};
use crate::ingest::Format;
use crate::model::{TOOL_ABORTED, ToolState};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports tool parts that never reached an outcome of their own: parts left `pending` or
    /// `running` when their step, message or session ended, and parts that were still running when
    /// the stream died and were only closed by the processor's cleanup ("Tool execution aborted").
    ///
    /// ## Why it matters
    /// A tool part left `pending`/`running` at rest means the process died or lost the runner: the
    /// UI spins forever, and older OpenCode versions drop the call from the next request (newer
    /// ones send "[Tool execution was interrupted]"). A running tool closed by cleanup lost its
    /// real result: the model is told it was aborted, not what it did.
    ///
    /// ## Example
    /// ```text
    /// "tool": "edit",
    /// "state": { "status": "running", "input": {…}, "time": { "start": 1769949028414 } }
    /// … the session ends; no later write of this part
    /// ```
    ///
    /// ## How to fix
    /// Find out what ended the step (the related label points at it) and fix that. For a stored
    /// session, `rewind repair` marks the tool `error` "Tool execution aborted" with
    /// `metadata.interrupted: true`, as OpenCode's own cleanup would have.
    pub struct ToolNeverFinished {
        name: "tool-never-finished",
        severity: Error,
        summary: "A tool part was left pending/running, or only closed by cleanup after the stream died",
    }
}

impl Check for ToolNeverFinished {
    fn meta(&self) -> &'static CheckMeta {
        &Self::META
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for (session, message, part) in analysis.parts() {
            let Some(tool) = part.part.tool() else {
                continue;
            };
            if tool.state.repaired_by_rewind() {
                continue;
            }
            let Some(at) = part.status_span() else {
                continue;
            };
            let path = part.status_path();
            let ids = Ids::default()
                .session(session.id.clone())
                .message(message.id.clone())
                .part(part.part.id.clone())
                .call(tool.call_id.clone());
            let last_seq = part.last().map_or(0, |o| o.seq);
            let mut f = match &tool.state {
                ToolState::Pending(_) | ToolState::Running(_) => Self::META
                    .finding(format!(
                        "tool `{}` ({}) was last seen `{}` and never completed or errored",
                        tool.tool,
                        part.part.id,
                        tool.state.status()
                    ))
                    .at(at, format!("last write: `{}`", tool.state.status()))
                    .help("nothing closed this tool: the process died or lost the runner; `rewind repair` marks it aborted so the session can resume"),
                ToolState::Error(_)
                    if tool.state.error_text() == Some(TOOL_ABORTED)
                        && !tool.state.input_is_empty()
                        && path.contains(&"running") =>
                {
                    Self::META
                        .finding(format!(
                            "tool `{}` ({}) was still running when its step was cut short; cleanup closed it as \"{TOOL_ABORTED}\" and its real result was never recorded",
                            tool.tool, part.part.id
                        ))
                        .severity(Severity::Warning)
                        .at(at, "closed by cleanup, not by the tool")
                        .also(
                            part.history
                                .iter()
                                .rev()
                                .find(|o| o.status.as_deref() == Some("running"))
                                .and_then(|o| o.status_span),
                            "it was running here",
                        )
                        .help("the model will be told the tool was aborted; re-run it if its effect matters")
                }
                _ => continue,
            };
            if path.len() > 1 {
                f = f.note(format!("status history: {}", path.join(" → ")));
            }
            let at_rest = matches!(
                analysis.format,
                Format::OpencodeDb | Format::OpencodeExport | Format::OpencodeStorage
            );
            if at_rest && !matches!(tool.state, ToolState::Error(_)) {
                f = f.note("at rest in a session store this means the OpenCode process died (or lost its runner) while the tool ran; OpenCode only closes tools at the end of its own prompt loop");
            }
            if !matches!(tool.state, ToolState::Error(_)) {
                for (event, label) in what_ended(analysis, &session.id, last_seq, None) {
                    f = f.also(Some(event.span.head()), label);
                }
            }
            out.push(f.ids(ids));
        }
    }
}
