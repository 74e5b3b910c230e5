use super::Check;
use super::thread_index_drift::index_finding;
use crate::checks::diagnostic::Finding;
use crate::session::Analysis;
use crate::session::thread_index::IndexProblemKind;

declare_check! {
    /// ## What it does
    /// Reports a Codex home whose state database (`state_5.sqlite`) cannot be read: "file is
    /// not a database", a corrupt page, a `threads` table that is missing. `codex doctor`
    /// reports it under `state.paths` ("state database integrity check failed") and
    /// `state.rollout_db_parity` ("state DB thread rows could not be queried"). The home's
    /// rollouts are still diagnosed, one by one.
    ///
    /// ## Why it matters
    /// Codex lists, resumes and archives threads through this database: while it cannot be
    /// read, every session seems gone although the rollouts are intact.
    ///
    /// ## Example
    /// ```text
    /// ~/.codex/state_5.sqlite  SQLite: file is not a database
    /// ```
    ///
    /// ## How to fix
    /// As `codex doctor` advises: close Codex, move the damaged database aside (with its `-wal`
    /// and `-shm`), then start the interactive CLI, which rebuilds it from the rollouts. Keep
    /// the damaged copy until the sessions are back.
    pub struct StateDbUnreadable {
        name: "state-db-unreadable",
        severity: Error,
        summary: "Codex's state database (state_5.sqlite) cannot be read",
    }
}

impl Check for StateDbUnreadable {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(index) = analysis.thread_index.as_deref() else {
            return;
        };
        for p in &index.problems {
            if p.kind != IndexProblemKind::Unreadable {
                continue;
            }
            out.push(
                index_finding(&Self::META, p)
                    .note("codex doctor: state.paths (state DB integrity) and state.rollout_db_parity (thread rows could not be queried)")
                    .help("`rewind explain state-db-unreadable` says how Codex rebuilds it"),
            );
        }
    }
}
