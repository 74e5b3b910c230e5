use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Checks a Codex rollout's record order: the file must start with its `session_meta`
    /// header, and once records carry an `ordinal` (paginated rollouts number every record 0,
    /// 1, 2, … per file, as observed with Codex 0.169.0), each later record must carry a
    /// greater one. Reports a missing or
    /// misplaced header, a repeated or decreasing ordinal, a record without one after numbered
    /// records, and an ordinal that is not a whole number. Rollouts written before ordinals
    /// existed have none at all: that is no finding, and neither is a gap (Codex's recorder
    /// allows one: a fork's page may start at an inherited ordinal).
    ///
    /// ## Why it matters
    /// Codex refuses to resume such a thread or silently drops records: "rollout … has no usable
    /// header record" (openai/codex#38341), "final paginated rollout record … is missing an
    /// ordinal" (#45150), paginated history that stops at a reused ordinal ("expected ordinal
    /// 43707, got 43706", #35746, #44417), and the session missing from listings.
    ///
    /// ## Example
    /// ```text
    /// {"timestamp":"…","ordinal":41,"type":"event_msg","payload":{"type":"token_count",…}}
    /// {"timestamp":"…","ordinal":41,"type":"event_msg","payload":{"type":"thread_settings_applied",…}}
    /// ```
    ///
    /// ## How to fix
    /// Back the rollout up, then renumber the records from the first numbered one on (each one
    /// more than the one before) and give unnumbered records after them their number; move the
    /// `session_meta` line to the top (or restore it from a copy of the rollout).
    pub struct RolloutOrderBroken {
        name: "rollout-order-broken",
        severity: Error,
        summary: "A Codex rollout's header is missing or misplaced, or its ordinals repeat, go back or stop",
    }
}

impl Check for RolloutOrderBroken {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        if !analysis.format.is_codex() {
            return;
        }
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        let session = analysis.sessions.first().map(|s| s.id.clone());
        for (span, what, before) in &facts.order {
            let mut ids = Ids::default();
            ids.session_id.clone_from(&session);
            out.push(
                Self::META
                    .finding(what.clone())
                    .at(*span, "here")
                    .also(*before, "the last numbered record before it")
                    .note(format!(
                        "written by {}; Codex checks the header and the ordinals when it resumes a thread or pages its history",
                        facts.client
                    ))
                    .help("`rewind explain rollout-order-broken` says how to renumber the records")
                    .ids(ids),
            );
        }
    }
}
