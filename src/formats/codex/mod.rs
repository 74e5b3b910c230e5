//! Codex rollouts (`~/.codex/sessions/…/rollout-*.jsonl`) and Codex's home folder (`~/.codex`):
//! its thread index (`state_5.sqlite`) against the rollouts (`index`).

pub mod index;
pub mod index_repair;
pub mod read;
pub mod recognize;
pub mod redact;
pub mod repair;
pub mod replay;
pub mod request;
pub mod store;

use crate::core::{Format, RewindError};
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    Codex: CodexRollout | CodexState; folders recognize_folder
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    if input.format == Format::CodexState {
        return analyze_home(input, sources, each);
    }
    let file = sources.add_file(input.path);
    let reader = crate::ingest::open_counted(input.path)?;
    let mut analysis = replay::replay(reader, file).map_err(|e| input.ingest_err(e))?;
    analysis.requests.extend(request::next_request(&analysis));
    each(sources, Unit::ready(analysis))
}

/// A Codex home folder (or its `state_5.sqlite`): one unit for the thread index against the
/// rollouts, then, for a folder, each rollout as a unit of its own.
fn analyze_home(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let folder = input.path.is_dir();
    let (home, db) = if folder {
        (input.path.to_path_buf(), input.path.join(index::STATE_DB))
    } else {
        let home = match input.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        (home, input.path.to_path_buf())
    };
    if db.exists() {
        let file = sources.add_file(&db);
        let mut analysis = crate::session::Analysis::new(file, Format::CodexState);
        let facts = index::compare(&home, &db, sources);
        analysis.counts.insert("threads rows", facts.rows as u64);
        analysis
            .counts
            .insert("rollout files", facts.rollouts as u64);
        analysis.thread_index = Some(Box::new(facts));
        each(sources, Unit::ready(analysis))?;
    }
    if folder {
        for f in index::rollout_files(&home) {
            let rollout = Input {
                path: &f.path,
                format: Format::CodexRollout,
                options: input.options,
                forgetting: input.forgetting,
            };
            analyze(&rollout, sources, each)?;
        }
    }
    Ok(())
}
