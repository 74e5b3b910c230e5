//! One folder per input format: its recognition, reading with byte spans, replay into the
//! session model, the rebuilt request and its repair.
//!
//! The `formats!` list registers every format family once, in the order that breaks ties
//! between equally strong claims on the same record (`recognize.rs`). Adding a format is one
//! folder with a `recognize.rs`, one line here, and its fixtures (DEVELOPERS.md, "Adding an input
//! format").

/// Declares a folder's unit in the `formats!` registry: its struct and the formats it reads, with
/// its `recognize.rs` and the `analyze` function of its `mod.rs` as its [`Family`]
/// (`; folders recognize_folder` adds the claims on folders).
macro_rules! family {
    ($(#[$doc:meta])* $name:ident: $($format:ident)|+ $(; folders $folders:ident)?) => {
        $(#[$doc])*
        pub struct $name;

        impl $crate::formats::Family for $name {
            fn formats(&self) -> &'static [$crate::core::Format] {
                &[$($crate::core::Format::$format),+]
            }

            fn recognize(
                &self,
                head: &$crate::formats::recognize::Head<'_>,
            ) -> Vec<$crate::formats::recognize::Claim> {
                recognize::recognize(head)
            }

            $(fn recognize_folder(
                &self,
                path: &std::path::Path,
            ) -> Vec<$crate::formats::recognize::Claim> {
                recognize::$folders(path)
            })?

            fn analyze(
                &self,
                input: &$crate::formats::unit::Input<'_>,
                sources: &mut $crate::source::SourceMap,
                each: &mut $crate::formats::unit::UnitSink<'_>,
            ) -> Result<(), $crate::core::RewindError> {
                analyze(input, sources, each)
            }
        }
    };
}

pub mod agent_log;
pub mod claude_code;
pub mod codex;
pub mod copilot;
pub mod gemini;
pub mod opencode;
pub mod recognize;
pub mod recording;
pub mod redact;
pub mod store;
pub mod stream;
pub mod transcript;
pub mod unit;
pub mod write;

use std::path::{Path, PathBuf};

use crate::core::{Format, RewindError};
use crate::source::SourceMap;
use recognize::{Claim, Head};
use unit::{Input, UnitSink};

/// A family of formats read by one folder: which formats it reads and how it recognises them.
pub trait Family: Sync {
    /// The formats it reads.
    fn formats(&self) -> &'static [Format];
    /// Its claims on the head of a file (none when nothing in the head is its own).
    fn recognize(&self, head: &Head<'_>) -> Vec<Claim>;
    /// Its claims on a folder.
    fn recognize_folder(&self, _path: &Path) -> Vec<Claim> {
        Vec::new()
    }
    /// Reads `input` (one of its formats) and replays it into units of diagnosis, handing each
    /// to `each` as soon as it is ready.
    fn analyze(
        &self,
        input: &Input<'_>,
        sources: &mut SourceMap,
        each: &mut UnitSink<'_>,
    ) -> Result<(), RewindError>;
}

/// Registers the format families: each `module::Type` is a unit struct implementing [`Family`],
/// declared in its module's `mod.rs`.
macro_rules! formats {
    ($($module:ident :: $family:ident),* $(,)?) => {
        /// Every family, in the registry's order.
        pub const FAMILIES: &[&dyn Family] = &[$(&$module::$family,)*];
    };
}

formats! {
    claude_code::ClaudeCode,
    codex::Codex,
    copilot::Copilot,
    gemini::Gemini,
    opencode::OpenCode,
    agent_log::AgentLogs,
    stream::StreamCaptures,
    recording::Recordings,
}

/// Every family's claims on a file's head, in the registry's order.
fn claims_on(head: &Head<'_>) -> Vec<Claim> {
    FAMILIES.iter().flat_map(|f| f.recognize(head)).collect()
}

/// Every family's claims on a folder, in the registry's order.
fn claims_on_folder(path: &Path) -> Vec<Claim> {
    FAMILIES
        .iter()
        .flat_map(|f| f.recognize_folder(path))
        .collect()
}

/// The transcript of session `id` when `dir` is a folder of client transcripts (Claude Code's
/// projects folder or one project's folder, Codex's sessions folder, Gemini CLI's `tmp`, project
/// or `chats` folder); `None` otherwise.
pub fn session_in_folder(dir: &Path, id: &str) -> Option<PathBuf> {
    claude_code::store::session_file(dir, id)
        .or_else(|| codex::store::session_file(dir, id))
        .or_else(|| gemini::store::session_file(dir, id))
        .or_else(|| copilot::store::session_file(dir, id))
}

/// Whether `dir` holds client transcripts (and is no OpenCode storage folder nor a Codex home,
/// whose `archived_sessions/` would read as a folder of transcripts).
pub fn is_transcript_folder(dir: &Path) -> bool {
    opencode::storage::root(dir).is_none()
        && !codex::index::is_home(dir)
        && (!claude_code::store::transcripts(dir).is_empty()
            || !codex::store::rollouts(dir).is_empty()
            || !gemini::store::sessions(dir).is_empty()
            || !copilot::store::sessions(dir).is_empty()
            || std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    e.path().extension().is_some_and(|x| x == "jsonl")
                        && crate::formats::recognize::detect(&e.path())
                            .is_ok_and(|f| f.is_client_transcript())
                }))
}

/// The family that reads `format`.
pub fn family_of(format: Format) -> Option<&'static dyn Family> {
    FAMILIES
        .iter()
        .copied()
        .find(|f| f.formats().contains(&format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_read_by_exactly_one_family() {
        use clap::ValueEnum;
        for format in Format::value_variants() {
            let n = FAMILIES
                .iter()
                .filter(|f| f.formats().contains(format))
                .count();
            assert_eq!(n, 1, "{format:?} is read by {n} families");
        }
        assert!(family_of(Format::CodexRollout).is_some_and(|f| f.formats().len() == 2));
    }
}
