use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{Analysis, TreeDamageKind};

declare_check! {
    /// ## What it does
    /// Checks the tree a Claude Code transcript is: every conversation record names its parent
    /// (`parentUuid`), and the history the client resumes from is the path from the leaf (the
    /// last `last-prompt`'s `leafUuid`, or the newest record) back to a root or a compaction.
    /// Reports a `parentUuid` that names no record of the file (an error when the active
    /// history stops there, a warning elsewhere), links that go round in a circle (an error), a
    /// `uuid` two records share (a warning), and, as information, a branch the active history
    /// leaves behind, saying which one is live.
    ///
    /// ## Why it matters
    /// Claude Code walks `parentUuid` back from the leaf to rebuild the conversation: a gap
    /// silently truncates it, and the model goes on without everything above the gap
    /// (anthropics/claude-code#22107, #24304, #58554: "5.2% reachable"). Branches are normal —
    /// the client branches when a turn is resumed after an interruption or rewound — but the
    /// records on them are not sent, which explains why work "disappeared" from a resumed
    /// session.
    ///
    /// ## Example
    /// ```text
    /// {"parentUuid":"4b1c…","type":"user","uuid":"9f2e…",…}   ← no record has uuid 4b1c…
    /// ```
    ///
    /// ## How to fix
    /// For a missing parent, set the record's `parentUuid` to the record that precedes it in
    /// the conversation (back the file up first); for a duplicated `uuid`, give one of the
    /// records a fresh one. An abandoned branch needs nothing: resume from it by choosing its
    /// last record, or leave it.
    pub struct TranscriptTreeBroken {
        name: "transcript-tree-broken",
        severity: Error,
        summary: "A transcript's parentUuid tree is broken (missing parent, cycle, duplicate uuid) or branches off",
    }
}

impl Check for TranscriptTreeBroken {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        for d in &facts.tree {
            let (severity, label) = match d.kind {
                TreeDamageKind::MissingParent { live: true } => {
                    (Severity::Error, "no record has this uuid")
                }
                TreeDamageKind::MissingParent { live: false } => {
                    (Severity::Warning, "no record has this uuid")
                }
                TreeDamageKind::Cycle => (Severity::Error, "the circle closes here"),
                TreeDamageKind::DuplicateUuid => (Severity::Warning, "this uuid is taken"),
                TreeDamageKind::Abandoned => (Severity::Info, "the branch starts here"),
            };
            let help = match d.kind {
                TreeDamageKind::Abandoned => {
                    "nothing to do; the branch's records stay on disk and are not sent"
                }
                _ => "`rewind explain transcript-tree-broken` says how to mend the links",
            };
            let mut f = Self::META
                .finding(d.message.clone())
                .severity(severity)
                .at(d.span, label)
                .help(help);
            for (span, text) in &d.related {
                f = f.also(Some(*span), text.clone());
            }
            for note in &d.notes {
                f = f.note(note.clone());
            }
            out.push(f.ids(Ids::default().session(d.session.clone())));
        }
    }
}
