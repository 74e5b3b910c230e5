use super::incidents::Endings;
use super::Check;
use crate::FastMap;
use crate::checks::diagnostic::{Finding, Ids};
use crate::model::{TOOL_ABORTED, ToolState};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Finds evidence that a tool's error was lost: a tool part that ended `error`
    /// "Tool execution aborted" with input `{}` — it never left `pending`, so whatever ended it
    /// (a tool error, a stream error) was dropped and only the processor's cleanup closed it.
    ///
    /// ## Why it matters
    /// The classic OpenCode processor applies `tool-error` only to `running` tools: an error that
    /// arrives while the tool is still `pending` is silently dropped (PR #16751, layer 1). The
    /// session then records "Tool execution aborted" with an empty input — the model never learns
    /// what went wrong, and the empty input is replayed to the provider on every later turn.
    ///
    /// ## Example
    /// ```text
    /// "tool": "read",
    /// "state": { "status": "error", "input": {}, "error": "Tool execution aborted",
    ///            "time": { "start": 1771058052213, "end": 1771058052213 } }
    /// ```
    ///
    /// ## How to fix
    /// Make the processor accept `tool-error` for `pending` tools (PR #16751 layer 1) and skip
    /// unparseable stream events instead of dying. The lost error text cannot be recovered from
    /// the session; the related label shows what ended the step.
    pub struct ToolErrorDropped {
        name: "tool-error-dropped",
        severity: Error,
        summary: "A tool ended \"Tool execution aborted\" with input {}: its real error was dropped while it was pending",
    }
}

impl Check for ToolErrorDropped {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // What ended each step or tool, looked up once something asks.
        let endings = std::cell::OnceCell::new();
        if analysis.stream.is_some() {
            stream_level(analysis, out);
            return;
        }
        for (session, message, part) in analysis.parts() {
            let Some(tool) = part.part.tool() else {
                continue;
            };
            let aborted_empty = matches!(tool.state, ToolState::Error(_))
                && tool.state.error_text() == Some(TOOL_ABORTED)
                && tool.state.input_is_empty();
            if !aborted_empty {
                continue;
            }
            let path = part.status_path();
            if path.contains(&"running") {
                continue;
            }
            let Some(at) = part.status_span() else {
                continue;
            };
            let mut f = Self::META
                .finding(format!(
                    "tool `{}` ({}) ended \"{TOOL_ABORTED}\" with input {{}}: it never left `pending`, so whatever ended it was dropped",
                    tool.tool, part.part.id
                ))
                .at(at, "closed by cleanup with an empty input")
                .help("the processor ignores tool errors for pending tools (PR #16751 layer 1); the real error is not in the session — the related label shows what ended the step");
            let pending = part
                .history
                .iter()
                .find(|o| o.status.as_deref() == Some("pending"));
            if let Some(p) = pending {
                f = f.also(p.status_span, "it was pending here");
                let final_seq = part.last().map(|o| o.seq);
                for (event, label) in endings.get_or_init(|| Endings::new(analysis)).what_ended(&session.id, p.seq, final_seq) {
                    f = f.also(Some(event.span.head()), label);
                }
            }
            if path.len() > 1 {
                f = f.note(format!("status history: {}", path.join(" → ")));
            }
            if let Some(n) = super::fix::repair_note(tool.state.fields().metadata.as_ref()) {
                f = f.note(n);
            }
            out.push(
                f.ids(
                    Ids::default()
                        .session(session.id.clone())
                        .message(message.id.clone())
                        .part(part.part.id.clone())
                        .call(tool.call_id.clone()),
                ),
            );
        }
    }
}

/// In a replayed stream the processor's drops are known exactly: report each tool error it
/// ignored, at the event that carried it.
fn stream_level(analysis: &Analysis, out: &mut Vec<Finding>) {
    let profile = analysis
        .stream
        .as_ref()
        .map(|f| f.profile.clone())
        .unwrap_or_default();
    // The parts and the processor's own states by id, built at the first dropped error.
    let mut parts = None;
    let mut natives: Option<FastMap<&str, _>> = None;
    for e in &analysis.events {
        let crate::session::EventKind::ProcessorDropped(dropped) = &e.kind else {
            continue;
        };
        let crate::session::DroppedOutcome {
            part_id,
            call_id,
            tool,
            what,
            reason,
        } = &**dropped;
        if what != "tool-error" {
            continue;
        }
        let parts = parts.get_or_insert_with(|| {
            crate::first_of(analysis.parts().map(|(s, m, p)| (p.part.id.as_str(), (s, m, p))))
        });
        let found = parts.get(part_id.as_str()).copied();
        let mut f = ToolErrorDropped::META
            .finding(format!(
                "`{profile}` drops the error of tool `{tool}` ({call_id}) at event {}: {reason}",
                e.seq + 1
            ))
            .at(
                e.span.head(),
                "the tool's error arrives here and is dropped",
            );
        let mut ids = Ids::default().call(call_id.clone()).part(part_id.clone());
        if let Some((session, message, part)) = found {
            let state = part
                .part
                .tool()
                .map(|t| t.state.status().to_owned())
                .unwrap_or_default();
            let native = natives
                .get_or_insert_with(|| {
                    crate::first_of(
                        (analysis.stream.iter())
                            .flat_map(|f| &f.native_states)
                            .map(|(id, h)| (id.as_str(), h)),
                    )
                })
                .get(part_id.as_str())
                .and_then(|h| h.last().map(|(_, s)| s.clone()));
            let shown = native.unwrap_or(state);
            f = f.also(
                part.status_span(),
                format!("the tool part is left `{shown}`"),
            );
            let path = part.status_path();
            if path.len() > 1 {
                f = f.note(format!("status history: {}", path.join(" → ")));
            }
            ids = ids.session(session.id.clone()).message(message.id.clone());
        }
        if profile.starts_with("tanstack") {
            f = f.help("upgrade TanStack AI to a version with PR #727 (`ToolCallState` gains `error`), or render tool state from the tool-result part");
        } else {
            f = f.help("apply tool errors to `pending` tools too (PR #16751 layer 1); the model never learns what went wrong otherwise");
        }
        out.push(f.ids(ids));
    }
}
