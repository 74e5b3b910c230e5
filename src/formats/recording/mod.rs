//! HTTP recordings (`{version, metadata, interactions}`) and HAR files: each exchange's request
//! and, when its response is a stream, the stream replayed.

pub mod read;
pub mod recognize;
pub mod units;

use crate::core::RewindError;
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    Recordings: HttpRecording | Har
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let file = sources.add_file(input.path);
    let reader = crate::ingest::open_counted(input.path)?;
    let mut failure: Option<RewindError> = None;
    let opts = input.stream_options();
    read::read(reader, file, input.format, &mut |ex| {
        if failure.is_some() {
            return Ok(());
        }
        let units = units::exchange_units(&ex, file, input.format, &opts)?;
        if let Err(e) = each(sources, Unit::profiles(units)) {
            failure = Some(e);
        }
        Ok(())
    })
    .map_err(|e| input.ingest_err(e))?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
