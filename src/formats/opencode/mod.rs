//! OpenCode's stores: the SQLite database (and its SQL dump), an `opencode export` document,
//! the legacy JSON storage folder and the v2 runtime's store; their sessions replayed, the next
//! request rebuilt as the observed OpenCode version does, and repaired.

pub mod analyze;
pub mod data;
pub mod db;
pub mod export;
pub mod git_project;
pub mod recognize;
pub mod redact;
pub mod repair;
pub mod replay;
pub mod request;
pub mod storage;
pub mod stored;
pub mod v2;

use crate::core::RewindError;
use crate::formats::unit::{Input, UnitSink};
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    OpenCode: OpencodeDb | OpencodeExport | OpencodeStorage | OpencodeSqlDump; folders recognize_folder
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    analyze::analyze(input, sources, each)
}
