use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;
use crate::session::thread_index::{IndexProblem, IndexProblemKind};

declare_check! {
    /// ## What it does
    /// Compares a Codex home's thread index (`state_5.sqlite`, table `threads`) with the
    /// rollouts under `sessions/` and `archived_sessions/`, as `codex doctor` does in its
    /// `state.rollout_db_parity` check (Codex 0.171.0), and reports each disagreement with both
    /// sides, in Codex's words:
    ///
    /// * a row whose `rollout_path` names no file ("state DB rows point at missing or unusable
    ///   rollout files": a dangling row);
    /// * a rollout no row names ("rollout files are missing from the state DB": the resume
    ///   picker and `codex resume --last` list threads from the index, so the session is
    ///   invisible there);
    /// * two rollouts with one thread id, or two rows naming one file ("duplicate thread
    ///   inventory entries found");
    /// * a row whose `archived` flag disagrees with the folder its rollout is in ("state DB
    ///   archive flags disagree with rollout file locations").
    ///
    /// A `rollout_path` that does not exist but names a file below `sessions/` or
    /// `archived_sessions/` that exists in this home is the home folder moved or copied: it is
    /// matched there, not reported.
    ///
    /// ## Why it matters
    /// "My sessions are gone": the rollouts are intact, but Codex lists threads from the index,
    /// so a rollout without a row is never offered to resume, and a row without its rollout
    /// lists a thread that fails to open. Crashes during a write, hand-moved files and
    /// interrupted migrations leave the two out of step.
    ///
    /// ## Example
    /// ```text
    /// state_5.sqlite › threads › id = '01a2…'  rollout_path = '…/rollout-…-01a2….jsonl'
    /// (no such file)
    /// ```
    ///
    /// ## How to fix
    /// Close Codex, then `rewind repair ~/.codex` (`--dry-run` first): it backs
    /// `state_5.sqlite` up and drops each dangling row. A rollout without a row is re-indexed by
    /// Codex itself: move `state_5.sqlite` aside (with its `-wal` and `-shm`) and start Codex,
    /// which rebuilds the index from the rollouts (as `codex doctor` advises). Duplicates need a choice: keep the rollout
    /// the row names and move the other aside. A single invisible session comes back with
    /// `codex resume ID`: Codex 0.171.0 finds the rollout by its id and inserts its row.
    pub struct ThreadIndexDrift {
        name: "thread-index-drift",
        severity: Warning,
        summary: "Codex's thread index (state_5.sqlite) and its rollout files disagree",
    }
}

/// The finding for one problem of a Codex thread index: the row's side and the rollout's.
pub fn index_finding(meta: &'static super::CheckMeta, p: &IndexProblem) -> Finding {
    let mut ids = Ids::default();
    ids.session_id.clone_from(&p.thread_id);
    let mut f = meta.finding(p.words.clone());
    f = match (p.row, p.rollout) {
        (Some(row), rollout) => f.at(row, p.detail.clone()).also(rollout, "the rollout"),
        (None, Some(rollout)) => f.at(rollout, p.detail.clone()),
        (None, None) => f.note(p.detail.clone()),
    };
    f.ids(ids)
}

impl Check for ThreadIndexDrift {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(index) = analysis.thread_index.as_deref() else {
            return;
        };
        for p in &index.problems {
            let note = match p.kind {
                IndexProblemKind::StaleRow => {
                    "codex doctor: state.rollout_db_parity (stale rows); the thread is listed but its rollout cannot be opened"
                }
                IndexProblemKind::MissingRow => {
                    "codex doctor: state.rollout_db_parity (missing rows); the resume picker does not list this rollout"
                }
                IndexProblemKind::Duplicate => {
                    "codex doctor: state.rollout_db_parity (duplicate rollout thread ids or DB paths)"
                }
                IndexProblemKind::ArchiveMismatch => {
                    "codex doctor: state.rollout_db_parity (archive mismatches)"
                }
                _ => continue,
            };
            out.push(
                index_finding(&Self::META, p)
                    .note(note)
                    .help("`rewind explain thread-index-drift` says how to repair the index"),
            );
        }
    }
}
