//! What a Codex home's thread index (`state_5.sqlite`, with the thread-history projection of
//! `thread_history_1.sqlite`) says against the rollouts on disk: read by the Codex format,
//! checked by `thread-index-drift`, `thread-projection-drift` and `state-db-unreadable`.

use crate::source::Span;

/// The index and the rollouts compared.
#[derive(Debug, Clone, Default)]
pub struct ThreadIndex {
    /// `threads` rows.
    pub rows: usize,
    /// Rollout files under `sessions/` and `archived_sessions/`.
    pub rollouts: usize,
    /// Each disagreement, in the order found.
    pub problems: Vec<IndexProblem>,
}

/// One disagreement between the index and the rollouts.
#[derive(Debug, Clone)]
pub struct IndexProblem {
    pub kind: IndexProblemKind,
    /// The thread it is about, when known.
    pub thread_id: Option<String>,
    /// The index's side: the row (a rendered `threads` or projection row), or the database.
    pub row: Option<Span>,
    /// The rollout's side (its `session_meta` line, or the record at a cursor), when the file
    /// exists.
    pub rollout: Option<Span>,
    /// What is wrong, in Codex's words where `codex doctor` has them.
    pub words: String,
    /// What was measured (paths, offsets, counts).
    pub detail: String,
}

/// The kinds of [`IndexProblem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexProblemKind {
    /// A row whose `rollout_path` names no file (`codex doctor`: stale rows).
    StaleRow,
    /// A rollout with no row (`codex doctor`: rollout files missing from the state DB); the
    /// resume picker does not list it.
    MissingRow,
    /// Two rollouts carry one thread id, or two rows name one rollout.
    Duplicate,
    /// A row's `archived` flag disagrees with where its rollout is.
    ArchiveMismatch,
    /// `thread_history_projection_state`'s cursor does not match the rollout.
    ProjectionDrift,
    /// The state database cannot be read.
    Unreadable,
}
