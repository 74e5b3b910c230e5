//! GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>/events.jsonl`).

pub mod read;
pub mod recognize;
pub mod repair;
pub mod replay;
pub mod request;
pub mod store;

use crate::core::RewindError;
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    Copilot: CopilotSession
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let file = sources.add_file(input.path);
    let reader = crate::ingest::open_counted(input.path)?;
    let (mut analysis, model) = replay::replay(reader, file).map_err(|e| input.ingest_err(e))?;
    analysis
        .requests
        .extend(request::next_request(&analysis, model.as_deref()));
    each(sources, Unit::ready(analysis))
}
