//! A Codex rollout is recognised by a line that is one of its records (`session_meta`,
//! `response_item`, `event_msg` … with a timestamp), also when the line is cut by the end of the
//! head; Codex's state database by its schema, a Codex home by its folders.

use crate::core::Format;
use std::path::Path;

use crate::formats::recognize::{Claim, Evidence, Head, RecordLine, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    if super::index::is_state_db(head.path, head.bytes) {
        return vec![Claim::new(
            Format::CodexState,
            Evidence::Magic,
            "SQLite's file header and Codex's `threads` table with `rollout_path`",
        )];
    }
    first_record(
        head,
        Format::CodexRollout,
        "a Codex rollout record",
        |line| match line {
            RecordLine::Object(obj) => super::read::is_record(obj),
            RecordLine::Cut(compact) => super::read::looks_like_record(compact),
            RecordLine::Other => false,
        },
    )
    .into_iter()
    .collect()
}

/// A folder is a Codex home when its `sessions/` holds rollouts or its `state_5.sqlite` is
/// Codex's state database.
pub fn recognize_folder(path: &Path) -> Vec<Claim> {
    super::index::is_home(path)
        .then(|| {
            Claim::new(
                Format::CodexState,
                Evidence::Folder,
                "a Codex home (`sessions/` with rollouts, or `state_5.sqlite`)",
            )
        })
        .into_iter()
        .collect()
}
