use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports a compaction that the history a client resumes from starts at, whose summary is
    /// missing or empty while the messages before it are no longer sent: Claude Code's
    /// `compact_boundary` with no `isCompactSummary` record after it (or an empty one), Codex's
    /// `compacted` record with an empty `message` and no replacement history (Codex then keeps
    /// only the user's messages). A compaction whose replacement history carries the summary,
    /// or one that left nothing behind, is not reported.
    ///
    /// ## Why it matters
    /// The client rebuilds every request from the compaction on: without its summary the model
    /// continues with none of the work before it, and nothing says so. Users report it as a
    /// session that "forgot everything" or re-does the previous turn after `/compact`
    /// (anthropics/claude-code#57636, openai/codex#36642).
    ///
    /// ## Example
    /// ```text
    /// {"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"…",…}
    /// {"type":"user","message":{"role":"user","content":"go on"},"parentUuid":"<boundary>",…}
    /// ```
    ///
    /// ## How to fix
    /// The messages are still in the file, before the compaction. Resume from before it (Claude
    /// Code's `/rewind`, a fork of the session), or start a new session and give it the missing
    /// context; rewind does not write a summary.
    pub struct CompactionSummaryLost {
        name: "compaction-summary-lost",
        severity: Warning,
        summary: "A compaction the session resumes from has no summary, so the history before it is silently gone",
    }
}

impl Check for CompactionSummaryLost {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        for lost in &facts.lost_summaries {
            let (n, verb) = match lost.dropped {
                1 => ("1 message record".to_owned(), "is"),
                n => (format!("{n} message records"), "are"),
            };
            out.push(
                Self::META
                    .finding(format!(
                        "the history {} resumes from starts at a compaction, but {}: {n} written before it {verb} no longer sent to the model",
                        facts.client, lost.what
                    ))
                    .at(lost.span, lost.label)
                    .note("the messages are still in the file, before this record")
                    .help("resume from before the compaction (Claude Code: `/rewind`) or give a new session the lost context; `rewind request` shows what the next request carries")
                    .ids(Ids {
                        session_id: analysis.sessions.first().map(|s| s.id.clone()),
                        ..Ids::default()
                    }),
            );
        }
    }
}
