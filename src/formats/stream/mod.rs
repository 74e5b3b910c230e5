//! Stream captures: a raw `text/event-stream` body, one provider stream event per line, or the
//! events as one JSON array (Gemini without `alt=sse`). They
//! are read by the shared protocol decoders (`protocols::stream`) and replayed through the
//! agents' stream processors.

pub mod recognize;

use crate::core::{Format, RewindError};
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::protocols::capture::{Envelope, Locator};
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    StreamCaptures: Sse | JsonLines | EventStream
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let file = sources.add_file(input.path);
    let mut reader = crate::ingest::open_counted(input.path)?;
    if input.format == Format::EventStream {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut bytes)
            .map_err(|e| input.ingest_err(crate::ingest::IngestError::Io(e)))?;
        let units = crate::protocols::stream::replay_eventstream(
            &bytes,
            Locator::File(file),
            input.stream_options(),
        );
        return each(sources, Unit::profiles(units));
    }
    let envelope = if input.format == Format::Sse {
        Envelope::Sse
    } else {
        // One event per line, or the events as one JSON array.
        let head = std::io::BufRead::fill_buf(&mut reader)
            .map_err(|e| input.ingest_err(crate::ingest::IngestError::Io(e)))?;
        let head = String::from_utf8_lossy(&head[..head.len().min(4096)]);
        if crate::protocols::array::starts_array_of_objects(&head) {
            Envelope::JsonArray
        } else {
            Envelope::JsonLines
        }
    };
    let units = crate::protocols::stream::replay_reader(
        reader,
        envelope,
        Locator::File(file),
        input.stream_options(),
    )
    .map_err(|e| input.ingest_err(e))?;
    each(sources, Unit::profiles(units))
}
