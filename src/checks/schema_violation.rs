use super::{Check, CheckMeta, declare_check};
use crate::diagnostic::{Finding, Ids};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Validates every recorded payload — parts, messages, stream events — against the schema the
    /// agent enforces (OpenCode's message-v2, the provider's event shapes) and reports each one
    /// that does not satisfy it: an unknown discriminator value (a tool `status` of `failed`, a part
    /// `type` of `thinking`), a missing required field, a field of the wrong type.
    ///
    /// ## Why it matters
    /// OpenCode and its forks validate every write with Zod. A payload outside the schema either
    /// crashed the session when it was written or will crash whatever reads it next — the
    /// reconstruction of the next request, an import, the UI.
    ///
    /// ## Example
    /// ```text
    /// "state": { "status": "failed", "input": {…}, "error": "…" }
    ///            ^^^^^^^^ not a tool state the schema allows (pending | running | completed | error)
    /// ```
    ///
    /// ## How to fix
    /// Fix the writer: map the value onto one the schema allows (`failed` → `error`) and fill
    /// required fields. For a stored session, `rewind repair` rewrites invalid tool states to
    /// `error`, keeping the original value in `metadata`.
    pub struct SchemaViolation {
        name: "schema-violation",
        severity: Error,
        summary: "A recorded payload does not satisfy the schema (unknown discriminator, missing field, wrong type)",
    }
}

impl Check for SchemaViolation {
    fn meta(&self) -> &'static CheckMeta {
        &Self::META
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for payload in &analysis.schema_issues {
            let Some((first, first_span)) = payload.issues.first() else {
                continue;
            };
            let more = payload.issues.len() - 1;
            let message = if more == 0 {
                format!("{} does not satisfy the schema: {first}", payload.what)
            } else {
                format!(
                    "{} does not satisfy the schema: {first} (and {more} more)",
                    payload.what
                )
            };
            let mut f = Self::META
                .finding(message)
                .at(first_span.unwrap_or(payload.span.head()), "received here")
                .help("the value must be one the schema allows; `rewind explain schema-violation` shows how to fix it");
            for (issue, span) in &payload.issues[1..] {
                f = match span {
                    Some(s) if Some(*s) != *first_span => f.also(Some(*s), issue.to_string()),
                    _ => f.note(issue.to_string()),
                };
            }
            if analysis.stream.is_some() {
                if let Some(r) = super::streams::reaction(analysis, payload.seq) {
                    f = f.note(r);
                }
                if let Some(n) = super::streams::alternative_note(analysis, payload.seq) {
                    f = f.note(n);
                }
            }
            let mut ids = Ids::default();
            ids.session_id.clone_from(&payload.session_id);
            ids.message_id.clone_from(&payload.message_id);
            ids.part_id.clone_from(&payload.part_id);
            out.push(f.ids(ids));
        }
    }
}
