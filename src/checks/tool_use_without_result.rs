use std::collections::HashSet;

use super::Check;
use super::step_merged::with_request_view;
use crate::checks::diagnostic::{Finding, Ids};
use crate::protocols::provider;
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Checks every request the model receives — a recorded request body, or the request the
    /// agent rebuilds from a stored session — against the provider's pairing rules, and quotes the
    /// error the provider answers: a `tool_use` not answered by `tool_result` blocks at the start
    /// of the next message (or followed by text in its own message), a function call without
    /// output, an assistant message using tools without the thinking block extended thinking
    /// requires. A result that answers no call is `tool-result-orphaned`'s.
    ///
    /// ## Why it matters
    /// The request is rebuilt from the store on every turn, so one broken pair answers 400 on
    /// every later prompt: the session is dead until the history is fixed ("messages.N:
    /// `tool_use` ids were found without `tool_result` blocks immediately after").
    ///
    /// ## Example
    /// ```text
    /// {"role":"assistant","content":[{"type":"tool_use","id":"call_1",…},{"type":"text",…}]},
    /// {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1",…}]}
    /// → 400 messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: call_1.
    /// ```
    ///
    /// ## How to fix
    /// Keep each step's text before its tool calls (close the step with a `step-finish` and start
    /// a new one before more text), and answer every call. For a stored OpenCode session,
    /// `rewind repair` inserts the missing step boundary so the rebuilt request splits there.
    pub struct ToolUseWithoutResult {
        name: "tool-use-without-result",
        severity: Error,
        summary: "A request breaks the provider's tool_use/tool_result pairing (quotes the provider's 400)",
    }
}

impl Check for ToolUseWithoutResult {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // A session checked against two providers' rules reports a broken part once.
        let mut reported: HashSet<(Option<String>, String)> = HashSet::new();
        for req in &analysis.requests {
            for v in provider::check(req) {
                // Reported by their own rules: `tool-result-orphaned`, and for a request rebuilt
                // from a session `tool-call-duplicate` (on the session's parts).
                let rebuilt = req.span.is_none();
                if v.kind == provider::ViolationKind::OrphanResult
                    || (rebuilt && v.kind == provider::ViolationKind::DuplicateCallId)
                {
                    continue;
                }
                let Some(span) = v.span.or(req.span) else {
                    continue;
                };
                if let Some(part) = &v.part_id
                    && !reported.insert((req.session_id.clone(), part.clone()))
                {
                    continue;
                }
                let confirmed = req.response.as_ref().filter(|r| {
                    r.status >= 400
                        && r.error.as_deref().is_some_and(|e| {
                            e.contains(&v.error) || v.ids.iter().all(|id| e.contains(id.as_str()))
                        })
                });
                let mut f = Self::META
                    .finding(format!(
                        "{} breaks {}'s tool pairing: {}; {} answers 400: \"{}\"",
                        req.origin,
                        req.provider.name(),
                        v.explanation,
                        req.provider.name(),
                        v.error
                    ))
                    .at(span, "this block breaks the pairing")
                    .help({
                        let help = "each tool call must be answered by its result right after it; `rewind explain tool-use-without-result` says how to fix the history";
                        match req.session_id.as_deref().filter(|_| req.span.is_none()) {
                            Some(session) => with_request_view(help, analysis.format, session),
                            None => help.to_owned(),
                        }
                    });
                if let Some(r) = confirmed {
                    f = f.also(
                        r.span,
                        format!("the recorded response confirms it: HTTP {}", r.status),
                    );
                }
                let mut ids = Ids::default();
                ids.session_id.clone_from(&req.session_id);
                ids.message_id = v.message_id.clone();
                ids.part_id = v.part_id.clone();
                ids.call_id = v.ids.first().cloned();
                out.push(f.ids(ids));
            }
        }
    }
}
