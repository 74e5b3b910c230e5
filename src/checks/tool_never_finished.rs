use super::incidents::Endings;
use serde_json::{Value, json};

use super::fix::{Fix, FixContext, into_error, marker, time_of};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::model::{REPAIR_MARKER, TOOL_ABORTED, ToolState};
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
    /// session, `rewind repair` closes the tool as an `error` whose text says it was interrupted
    /// and closed by rewind, so the model is sent an error result, not the tool's partial output
    /// as a success (OpenCode sends an `error` tool with `metadata.interrupted: true` and a
    /// `metadata.output` as that output; rewind leaves `interrupted` unset).
    pub struct ToolNeverFinished {
        name: "tool-never-finished",
        severity: Error,
        summary: "A tool part was left pending/running, or only closed by cleanup after the stream died",
        fix: "a tool `pending`/`running` at rest: state `error` with the text \"[Tool execution was interrupted: …; closed by rewind repair]\", so the model gets an error result; any partial output stays in `metadata`",
    }
}

impl Check for ToolNeverFinished {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let part_id = f.ids.part_id.as_deref().unwrap_or_default();
        let Some(tool) = ctx.part(part_id).and_then(|r| r.part.tool()) else {
            return Fix::Skipped;
        };
        if !tool.state.is_open() {
            return Fix::Skipped;
        }
        let words = format!(
            "tool `{}`: `{}` → `error` \"{}\"",
            tool.tool,
            tool.state.status(),
            interrupted_text(tool.state.status())
        );
        let data = ctx.raw_part(part_id).and_then(|v| abort_tool(&v, ctx.now));
        ctx.update_part(f, data, words)
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // What ended each step or tool, and the records that could not be read, looked up
        // once something asks.
        let endings = std::cell::OnceCell::new();
        let unread = std::cell::OnceCell::new();
        if analysis.stream.is_some() {
            stream_level(analysis, out);
            return;
        }
        if let Some(facts) = analysis.transcript.as_deref() {
            stranded(facts, out);
        }
        for (session, message, part) in analysis.parts() {
            let Some(tool) = part.part.tool() else {
                continue;
            };
            // Most tools completed: rule them out before anything is looked up or copied.
            let open = tool.state.is_open();
            let aborted = tool.state.error_text() == Some(TOOL_ABORTED);
            if !(open || aborted) {
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
                    .help(format!(
                        "nothing closed this tool: the process died or lost the runner; {}",
                        super::repair_help(
                            analysis.format,
                            session.recorded_from,
                            "closes it as an error that tells the model it was interrupted, so the session can resume",
                            Some("answers the call with the client's own interruption result, so the session can resume"),
                        )
                    )),
                ToolState::Error(_)
                    if tool.state.error_text() == Some(TOOL_ABORTED)
                        && !tool.state.input_is_empty()
                        && path.contains(&"running") =>
                {
                    closed_by_cleanup(tool, part, at)
                }
                _ => continue,
            };
            // Absence is a claim: a record after the last write that could not be read may
            // hold the result.
            if tool.state.is_open() {
                // A tool's result is in an update of its part, or a client's result record.
                let unread = unread.get_or_init(|| {
                    super::unread::Unread::new(analysis, &["tool_use", "tool", "tool_result"])
                });
                f = unread_may_hold(f, unread, part, tool);
            }
            if path.len() > 1 {
                f = f.note(format!("status history: {}", path.join(" → ")));
            }
            if let Some(n) = super::fix::repair_note(tool.state.fields().metadata.as_ref()) {
                f = f.note(n);
            }
            if analysis.format.is_opencode_store() && !matches!(tool.state, ToolState::Error(_)) {
                f = at_rest(f, session, &message.id);
            }
            if let Some(facts) = analysis.transcript.as_deref() {
                f = f.help(facts.open_call_help.clone().unwrap_or_else(|| "the call ends the active history with no result: the client was killed while the tool ran; resume with a client that repairs it on its own, or remove the unanswered call".into()));
                for note in &facts.open_call_notes {
                    f = f.note(note.clone());
                }
            }
            if !matches!(tool.state, ToolState::Error(_)) {
                for (event, label) in endings.get_or_init(|| Endings::new(analysis)).what_ended(&session.id, last_seq, None) {
                    f = f.also(Some(event.span.head()), label);
                }
            }
            out.push(f.ids(ids));
        }
    }
}

/// A tool still running when its step was cut short, closed by the processor's cleanup.
fn closed_by_cleanup(
    tool: &crate::model::ToolPart,
    part: &crate::session::PartRecord,
    at: crate::source::Span,
) -> Finding {
    ToolNeverFinished::META
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

/// An open tool whose result a record that could not be read may hold: the finding says so and
/// is a warning (see [`super::unread`]).
fn unread_may_hold(
    f: Finding,
    unread: &super::unread::Unread<'_>,
    part: &crate::session::PartRecord,
    tool: &crate::model::ToolPart,
) -> Finding {
    let Some(may) = part
        .last()
        .and_then(|last| unread.may_hold(last.span, &[&tool.call_id, &part.part.id]))
    else {
        return f;
    };
    let mut f = f
        .severity(Severity::Warning)
        .also(Some(may.record.span.head()), "this record could not be decoded")
        .help("read the record rewind could not decode: if it holds the tool's result, the tool finished and nothing is wrong; if not, nothing closed the tool");
    f.message = format!(
        "tool `{}` ({}) was last seen `{}`, and no later write of it could be read; {}",
        tool.tool,
        part.part.id,
        tool.state.status(),
        may.words("its result")
    ).into();
    f
}

/// An open tool at rest in a session store: what that means, and whether the session went on.
fn at_rest(f: Finding, session: &crate::session::Session, message: &str) -> Finding {
    let mut f = f.note("at rest in a session store this means the OpenCode process died (or lost its runner) while the tool ran; OpenCode only closes tools at the end of its own prompt loop");
    if session.went_on_after(message) {
        // The client resumed past it (OpenCode from 1.1 on sends the call with an
        // interrupted result): the store still holds it open, the session lives.
        f = f.severity(Severity::Warning).note(
            "the session went on after it (a later user message): OpenCode resumed past the open call, which stays open on disk",
        );
    }
    f
}

/// In a client's transcript: calls with no result that the active history has moved past. The
/// next request is valid, but the call is still unanswered on disk: a warning.
fn stranded(facts: &crate::session::TranscriptFacts, out: &mut Vec<Finding>) {
    for call in &facts.stranded_calls {
        let mut f = ToolNeverFinished::META
            .finding(format!(
                "tool `{}` ({}) never got a result, and {}",
                call.tool, call.call_id, call.why
            ))
            .severity(Severity::Warning)
            .at(call.span, "called here; no result anywhere in the file");
        for (span, label) in &call.related {
            f = f.also(Some(*span), label.clone());
        }
        for note in &call.notes {
            f = f.note(note.clone());
        }
        out.push(
            f.help("nothing to do while the client keeps leaving the call out (or answers it) when it rebuilds the request; an older client, or a tool that replays the file, may send it and get a 400")
                .ids(
                    Ids::default()
                        .session(call.session.clone())
                        .call(call.call_id.clone()),
                ),
        );
    }
}

/// In a replayed stream: tools left open when the stream ended, and tools the processor's cleanup
/// closed after it stopped. A tool that asked for execution in a stream that ended normally is
/// complete (the tool runs after the stream), and one whose error was dropped is
/// `tool-error-dropped`'s.
fn stream_level(analysis: &Analysis, out: &mut Vec<Finding>) {
    let Some(facts) = analysis.stream.as_deref() else {
        return;
    };
    if facts.body_cut.is_some() {
        // The capture stops where its logger cut it; the stream went on.
        return;
    }
    let outcomes = super::streams::ToolOutcomes::of(analysis);
    // What was still open when the stream ended, by tool call, in order.
    let mut open_calls: crate::FastMap<&str, Vec<&crate::session::OpenAtEnd>> =
        crate::FastMap::default();
    for open in &facts.open_at_end {
        if let Some(id) = &open.call_id {
            open_calls.entry(id.as_str()).or_default().push(open);
        }
    }
    let awaiting: crate::FastSet<&str> = (facts.awaiting_execution.iter())
        .map(String::as_str)
        .collect();
    for (session, message, part) in analysis.parts() {
        let Some(tool) = part.part.tool() else {
            continue;
        };
        let id = &part.part.id;
        if awaiting.contains(id.as_str()) || outcomes.dropped_error(id) {
            continue;
        }
        let ids = Ids::default()
            .session(session.id.clone())
            .message(message.id.clone())
            .part(id.clone())
            .call(tool.call_id.clone());
        let path = part.status_path();
        let cleanup = outcomes.closed_by_cleanup(id);
        let before_cleanup = path
            .iter()
            .rev()
            .find(|s| **s != "error")
            .copied()
            .unwrap_or("pending");
        let mut f = match (&tool.state, cleanup) {
            (ToolState::Pending(_) | ToolState::Running(_), _) => ToolNeverFinished::META
                .finding(format!(
                    "tool `{}` ({}) was left `{}` when the stream ended: {}",
                    tool.tool,
                    tool.call_id,
                    tool.state.status(),
                    if matches!(tool.state, ToolState::Pending(_)) {
                        "its input never completed"
                    } else {
                        "it never completed or errored"
                    }
                ))
                .at(
                    part.status_span().unwrap_or(part.history[0].span),
                    format!("last write: `{}`", tool.state.status()),
                ),
            (ToolState::Error(_), Some(ev)) => {
                let input = if before_cleanup == "pending" {
                    "its input never completed"
                } else {
                    "its real result was never recorded"
                };
                let first = part
                    .history
                    .first()
                    .map(|o| o.status_span.unwrap_or(o.span));
                let when = if facts.outcome.failed_at().is_some() {
                    "the processor stopped"
                } else {
                    "the stream ended"
                };
                let mut f = ToolNeverFinished::META
                    .finding(format!(
                        "tool `{}` ({}) was `{before_cleanup}` when {when}, and the processor's cleanup closed it as \"{TOOL_ABORTED}\": {input}",
                        tool.tool, tool.call_id
                    ))
                    .at(first.unwrap_or(ev.span), format!("the tool call starts here ({before_cleanup})"))
                    .also(Some(ev.span.head()), "the processor stopped here; cleanup closed the tool");
                if before_cleanup == "running" {
                    f = f.severity(Severity::Warning);
                }
                f
            }
            _ => continue,
        };
        if path.len() > 1 {
            f = f.note(format!("status history: {}", path.join(" → ")));
        }
        for open in open_calls.get(tool.call_id.as_str()).into_iter().flatten() {
            f = f.also(Some(open.span.head()), open.what.clone());
        }
        out.push(f.help("the tool call never reached an outcome of its own; re-run it if its effect matters").ids(ids));
    }
}

/// The error text a repaired tool is given: what OpenCode sends the model for a tool it finds
/// unfinished ("[Tool execution was interrupted]"), with what happened and who closed it.
pub fn interrupted_text(status: &str) -> String {
    format!(
        "[Tool execution was interrupted: the tool was still `{status}` when the agent stopped, and its result was never recorded; closed by rewind repair]"
    )
}

/// Closes a pending/running tool state as an `error` the model is sent as an error. OpenCode's
/// cleanup writes "Tool execution aborted" with `metadata.interrupted: true`, and its history
/// rebuild sends an interrupted tool's `metadata.output` (a running tool's partial output) as a
/// successful result: the model would not learn the tool was cut short. So `interrupted` is
/// not set (a stored one is removed and kept in the marker), and the partial output stays in
/// `metadata` for people to read.
fn abort_tool(part: &Value, now: i64) -> Option<Value> {
    let mut v = part.clone();
    let state = v.get_mut("state")?.as_object_mut()?;
    let status = state.get("status").cloned().unwrap_or(Value::Null);
    let start = time_of(state, "start").unwrap_or(json!(now));
    let text = interrupted_text(status.as_str().unwrap_or("pending"));
    let meta = into_error(state, text, start, json!(now))?;
    let mut original = json!({ "status": status });
    if let Some(was) = meta.remove("interrupted") {
        original["metadata.interrupted"] = was;
    }
    meta.insert(
        REPAIR_MARKER.into(),
        marker(ToolNeverFinished::RULE, original),
    );
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repaired_tool_is_an_error_the_model_is_sent_as_one() {
        let part = json!({"type": "tool", "tool": "bash", "callID": "c", "state": {
            "status": "running", "input": {"command": "sleep 60"}, "time": {"start": 5},
            "metadata": {"output": "partial", "interrupted": false}}});
        let v = abort_tool(&part, 9).unwrap_or_default();
        let state = &v["state"];
        assert_eq!(state["status"], "error");
        let text = state["error"].as_str().unwrap_or_default();
        assert!(text.starts_with("[Tool execution was interrupted"), "{text}");
        assert!(text.contains("`running`") && text.contains("rewind repair"), "{text}");
        assert_eq!(state["time"], json!({"start": 5, "end": 9}));
        // No `interrupted`: OpenCode would send `metadata.output` as a successful result.
        assert!(state["metadata"].get("interrupted").is_none(), "{state}");
        assert_eq!(state["metadata"]["output"], "partial", "kept for people");
        assert_eq!(
            state["metadata"][REPAIR_MARKER]["original"],
            json!({"status": "running", "metadata.interrupted": false})
        );
        assert!(crate::model::schema::validate_part(&v).is_empty());
    }

    #[test]
    fn a_pending_tool_gets_a_start_time_and_an_object_input() {
        let part = json!({"type": "tool", "tool": "read", "callID": "c",
            "state": {"status": "pending", "input": {}, "raw": ""}});
        let v = abort_tool(&part, 9).unwrap_or_default();
        assert_eq!(v["state"]["time"], json!({"start": 9, "end": 9}));
        assert!(v["state"]["error"].as_str().unwrap_or_default().contains("`pending`"));
        assert!(crate::model::schema::validate_part(&v).is_empty());
    }
}
