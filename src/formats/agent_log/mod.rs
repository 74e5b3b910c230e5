//! Agent logs: link-assistant/agent and OpenCode JSON output, alone or under a wrapper.

pub mod read;
pub mod recognize;
pub mod replay;

use crate::core::RewindError;
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::protocols::capture::Envelope;
use crate::protocols::stream::protocol::Protocol;
use crate::source::SourceMap;

family! {
    /// This folder's unit in the `formats!` registry.
    AgentLogs: AgentLog
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let path = input.path;
    let file = sources.add_file(path);
    let err = |e| input.ingest_err(e);
    let mut analysis = match (input.options.forget_logs_from, input.forgetting) {
        (Some(from), Some(rules)) => {
            let open = || crate::ingest::open_counted(path).map_err(RewindError::from);
            replay::replay_forgetting_again(open, file, from, rules, err)?.0
        }
        _ => replay::replay(crate::ingest::open_counted(path)?, file).map_err(err)?,
    };
    let embedded = std::mem::take(&mut analysis.embedded_streams);
    each(sources, Unit::ready(analysis))?;
    for (n, body) in embedded.into_iter().enumerate() {
        let mut o = input.stream_options();
        o.session_id = format!("http-stream-{}", n + 1);
        o.hint = body.url.as_deref().and_then(Protocol::of_url);
        let units = crate::protocols::stream::replay_text(
            &body.text,
            Envelope::Sse,
            body.locator,
            o,
            body.cut,
        )
        .map_err(err)?;
        each(sources, Unit::profiles(units))?;
    }
    Ok(())
}
