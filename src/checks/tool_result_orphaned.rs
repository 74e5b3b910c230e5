use std::collections::HashSet;

use super::Check;
use crate::FastMap;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::protocols::provider::{self, ViolationKind};
use crate::request::ModelMessage;
use crate::session::{Analysis, TranscriptFacts};
use crate::source::Span;

declare_check! {
    /// ## What it does
    /// Reports a tool result whose call is not where the provider looks for it: in a request the
    /// model receives (recorded, or rebuilt from any stored session), a `tool_result` whose
    /// `tool_use` is not in the previous assistant message (Anthropic) or a
    /// `function_call_output` with no call before it (OpenAI). In a client's transcript it also
    /// reports a stored result that answers no call of the history the client resumes from,
    /// when the client leaves it out of the request itself (a warning). It says where the call
    /// is when the file still has it: before a compaction (Claude Code's `compact_boundary`,
    /// Codex's `compacted` record), or on another branch.
    ///
    /// ## Why it matters
    /// The provider rejects the whole request, and the history is rebuilt the same way on every
    /// turn, so the session cannot go on: Anthropic answers 400 "unexpected `tool_use_id` found
    /// in `tool_result` blocks" (anthropics/claude-code#8484, #14416, #40305: a compaction kept
    /// the result and dropped its call), OpenAI "No tool call found for function call output
    /// with call_id …". Codex 0.169.0 drops such an output from the prompt it rebuilds (and logs
    /// "Orphan function call output"); other readers of the rollout send it.
    ///
    /// ## Example
    /// ```text
    /// {"type":"system","subtype":"compact_boundary","parentUuid":null,…}
    /// {"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_01",…}]},…}
    /// → 400 messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01
    /// ```
    ///
    /// ## How to fix
    /// Remove the orphan result from the active history (back the transcript up first), or
    /// restore its call in the assistant message right before it. For Claude Code, deleting
    /// the one line holding the orphan `tool_result` (and re-linking its child's `parentUuid`
    /// to its parent) keeps the work done after the compaction.
    pub struct ToolResultOrphaned {
        name: "tool-result-orphaned",
        severity: Error,
        summary: "A tool result answers no call the provider can see (quotes the provider's 400)",
    }
}

impl Check for ToolResultOrphaned {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let facts = analysis.transcript.as_deref();
        let off = off_history(facts);
        let mut sent: HashSet<String> = HashSet::new();
        for req in &analysis.requests {
            for m in &req.messages {
                sent.extend(
                    m.content
                        .iter()
                        .filter_map(|b| b.tool_result_id().map(str::to_owned)),
                );
            }
            for v in provider::check(req) {
                if v.kind != ViolationKind::OrphanResult {
                    continue;
                }
                let Some(span) = v.span.or(req.span) else {
                    continue;
                };
                let id = v.ids.first().cloned().unwrap_or_default();
                let mut f = Self::META
                    .finding(format!(
                        "{} sends a result for tool call {id} that {}; {} answers 400: \"{}\"",
                        req.origin,
                        match req.provider {
                            crate::request::Provider::Anthropic =>
                                "the previous assistant message does not make",
                            crate::request::Provider::OpenAi => "no earlier call makes",
                            crate::request::Provider::Google =>
                                "the model turn before it does not make",
                        },
                        req.provider.name(),
                        v.error
                    ))
                    .at(span, "this result answers no call");
                if let Some(r) = req.response.as_ref().filter(|r| {
                    r.status >= 400 && r.error.as_deref().is_some_and(|e| e.contains(&id))
                }) {
                    f = f.also(
                        r.span,
                        format!("the recorded response confirms it: HTTP {}", r.status),
                    );
                }
                f = where_the_call_is(f, &off, &id);
                let mut ids = Ids::default();
                ids.session_id.clone_from(&req.session_id);
                ids.message_id = v.message_id.clone();
                ids.part_id = v.part_id.clone();
                ids.call_id = Some(id);
                out.push(f.help("remove the orphan result from the stored history, or restore its call right before it; `rewind explain tool-result-orphaned` says how"). ids(ids));
            }
        }
        let Some(facts) = facts else {
            return;
        };
        // Stored results the client itself leaves out of the request it rebuilds.
        let session = analysis.sessions.first().map(|s| s.id.clone());
        for (id, span) in orphans(&facts.history) {
            if sent.contains(&id) || analysis.requests.is_empty() {
                continue;
            }
            let f = Self::META
                .finding(format!(
                    "the stored history holds a result for tool call {id}, which no call before it makes; {} leaves it out of the request it rebuilds",
                    facts.client
                ))
                .severity(Severity::Warning)
                .at(span, "this result answers no call")
                .note(if analysis.format.is_codex() {
                    "Codex 0.169.0 removes an output whose call is not in the history when it builds the prompt, and logs \"Orphan function call output\"; a client or tool that sends the rollout as it is gets 400 \"No tool call found for function call output with call_id …\""
                } else {
                    "a client or tool that sends this history as it is gets a 400 from the provider"
                })
                .help("nothing breaks with this client; remove the orphan output to keep the rollout valid for other readers");
            let f = where_the_call_is(f, &off, &id);
            let mut ids = Ids::default().call(id);
            ids.session_id.clone_from(&session);
            out.push(f.ids(ids));
        }
    }
}

/// Results in `history` whose call is in no earlier message, with where they are.
fn orphans(history: &[ModelMessage]) -> Vec<(String, Span)> {
    let mut calls: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for m in history {
        for b in &m.content {
            if let Some(id) = b.tool_call_id() {
                calls.insert(id);
            }
            if let Some(id) = b.tool_result_id()
                && !calls.contains(id)
                && let Some(span) = b.span.or(m.span)
            {
                out.push((id.to_owned(), span));
            }
        }
    }
    out
}

/// The calls the transcript has off the history the client rebuilds, by id (the first of an
/// id), with where they are and why they are off it.
fn off_history(facts: Option<&TranscriptFacts>) -> FastMap<&str, (Span, &str)> {
    crate::first_of(
        (facts.iter())
            .flat_map(|t| &t.off_history_calls)
            .map(|(id, span, why)| (id.as_str(), (*span, why.as_str()))),
    )
}

/// Points at the call, when the transcript still has it off the history the client rebuilds.
fn where_the_call_is(f: Finding, off: &FastMap<&str, (Span, &str)>, id: &str) -> Finding {
    let Some((span, why)) = off.get(id) else {
        return f;
    };
    f.also(Some(*span), format!("its call is still in the file, {why}"))
        .note(format!(
            "the call is not on the history the client rebuilds its request from: it lies {why}"
        ))
}
