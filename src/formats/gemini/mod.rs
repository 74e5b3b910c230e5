//! Gemini CLI sessions (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the legacy
//! whole-file `session-*.json`). What was checked against the real client, and how, is in this
//! folder's `README.md`.

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
    Gemini: GeminiSession
}

/// Reads a Gemini CLI session and replays it into one unit of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let file = sources.add_file(input.path);
    let reader = crate::ingest::open_counted(input.path)?;
    let mut analysis = replay::replay(reader, file).map_err(|e| input.ingest_err(e))?;
    analysis.requests.extend(request::next_request(&analysis));
    each(sources, Unit::ready(analysis))
}
