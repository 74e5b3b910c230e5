use super::Check;
use super::thread_index_drift::index_finding;
use crate::checks::diagnostic::Finding;
use crate::session::Analysis;
use crate::session::thread_index::IndexProblemKind;

declare_check! {
    /// ## What it does
    /// Checks each cursor of a Codex home's thread-history projection
    /// (`thread_history_1.sqlite`, table `thread_history_projection_state`:
    /// `next_rollout_byte_offset`, `next_rollout_ordinal`) against the thread's rollout. Codex
    /// projects a rollout's records into `thread_items` and `thread_turns` and keeps where the
    /// next unprojected record starts. A healthy cursor (as Codex 0.171.0 writes it) is either at
    /// the rollout's end with the ordinal after its last record, or at the start of a later
    /// record carrying that ordinal (a projection behind the rollout catches up). Reports a
    /// cursor past the rollout's end, one inside a record, and an ordinal that is not the
    /// record's at the cursor.
    ///
    /// ## Why it matters
    /// After a crash or a rollout restored from a backup, the cursor no longer points where the
    /// records are: the projection skips records or reads from the middle of a line, and the
    /// thread's history shows turns missing or fails to load.
    ///
    /// ## Example
    /// ```text
    /// thread_history_projection_state  next_rollout_byte_offset = 39239  (rollout: 38239 bytes)
    /// ```
    ///
    /// ## How to fix
    /// Close Codex. After a backup of `thread_history_1.sqlite` (with its `-wal` and `-shm`),
    /// delete the thread's projection so Codex rebuilds it from the rollout:
    /// `DELETE FROM thread_items WHERE thread_id = '<id>'; DELETE FROM thread_turns WHERE
    /// thread_id = '<id>'; DELETE FROM thread_history_projection_state WHERE thread_id = '<id>';`
    /// The rollout itself is not changed.
    pub struct ThreadProjectionDrift {
        name: "thread-projection-drift",
        severity: Warning,
        summary: "Codex's thread-history projection cursor does not match the thread's rollout",
    }
}

impl Check for ThreadProjectionDrift {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(index) = analysis.thread_index.as_deref() else {
            return;
        };
        for p in &index.problems {
            if p.kind != IndexProblemKind::ProjectionDrift {
                continue;
            }
            out.push(index_finding(&Self::META, p).help(
                "`rewind explain thread-projection-drift` says how to have Codex project the thread again",
            ));
        }
    }
}
