//! OpenCode's stores: the SQLite database (and its SQL dump), an `opencode export` document,
//! the legacy JSON storage folder and the v2 runtime's store; their sessions replayed, the next
//! request rebuilt as the observed OpenCode version does, and repaired.

pub mod analyze;
pub mod data;
pub mod db;
pub mod export;
pub mod git_project;
pub mod recognize;
pub mod repair;
pub mod replay;
pub mod request;
pub mod storage;
pub mod stored;
pub mod v2;

use crate::core::{Format, RewindError};
use crate::formats::Family;
use crate::formats::recognize::{Claim, Head};
use crate::formats::unit::{Input, UnitSink};
use crate::source::SourceMap;

/// This folder's unit in the `formats!` registry.
pub struct OpenCode;

impl Family for OpenCode {
    fn formats(&self) -> &'static [Format] {
        &[
            Format::OpencodeDb,
            Format::OpencodeExport,
            Format::OpencodeStorage,
            Format::OpencodeSqlDump,
        ]
    }

    fn recognize(&self, head: &Head<'_>) -> Vec<Claim> {
        recognize::recognize(head)
    }
    fn recognize_folder(&self, path: &std::path::Path) -> Vec<Claim> {
        recognize::recognize_folder(path)
    }

    fn analyze(
        &self,
        input: &Input<'_>,
        sources: &mut SourceMap,
        each: &mut UnitSink<'_>,
    ) -> Result<(), RewindError> {
        analyze::analyze(input, sources, each)
    }
}
