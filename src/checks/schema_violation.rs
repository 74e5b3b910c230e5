use serde_json::{Value, json};

use super::fix::{Fix, FixContext, into_error, marker, time_of};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::model::{REPAIR_MARKER, ToolState};
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
        fix: "an invalid tool status (e.g. `failed`): state `error`; the original status kept in `metadata.rewind`",
    }
}

impl Check for SchemaViolation {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let Some(part_id) = f.ids.part_id.as_deref().filter(|p| !p.is_empty()) else {
            return Fix::Skipped;
        };
        let Some(tool) = ctx.part(part_id).and_then(|r| r.part.tool()) else {
            return Fix::Skipped;
        };
        let ToolState::Invalid { status, .. } = &tool.state else {
            return Fix::Skipped;
        };
        let words = format!(
            "tool `{}`: status `{}` → `error` (original kept in metadata.rewind)",
            tool.tool,
            status.as_deref().unwrap_or("(none)")
        );
        let data = ctx.raw_part(part_id).and_then(|v| fix_status(&v, ctx.now));
        ctx.update_part(f, data, words)
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

/// Turns an invalid tool status into `error`, keeping the original in the marker.
fn fix_status(part: &Value, now: i64) -> Option<Value> {
    let mut v = part.clone();
    let state = v.get_mut("state")?.as_object_mut()?;
    let status = state.get("status").cloned().unwrap_or(Value::Null);
    let error = match state.get("error").and_then(Value::as_str) {
        Some(e) => e.to_owned(),
        None => format!("Tool ended with status {status} (not a status OpenCode knows)"),
    };
    let start = time_of(state, "start").unwrap_or(json!(now));
    let end = time_of(state, "end").unwrap_or(json!(now));
    let meta = into_error(state, error, start, end)?;
    meta.insert(
        REPAIR_MARKER.into(),
        marker(SchemaViolation::RULE, json!({ "status": status })),
    );
    Some(v)
}
