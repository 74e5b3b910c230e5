//! Claude Code transcripts (`~/.claude/projects/<project>/<sessionId>.jsonl`).

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
    ClaudeCode: ClaudeTranscript
}

/// Reads an input of this family and replays it into units of diagnosis.
fn analyze(
    input: &Input<'_>,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let path = input.path;
    let file = sources.add_file(path);
    let reader = crate::ingest::open_counted(path)?;
    let mut analysis = replay::replay(reader, file).map_err(|e| input.ingest_err(e))?;
    if let Some(facts) = analysis.transcript.as_deref_mut() {
        for meta in read::subagent_metas(path) {
            let id = sources.add_file(&meta.path);
            let span = |(s, e): (usize, usize)| {
                crate::source::Span::new(id, s as u64, e.saturating_sub(s) as u64)
            };
            facts.subagents.push(crate::session::Subagent {
                agent_id: meta.agent_id,
                tool_use_id: meta.tool_use_id.map(|(t, at)| (t, span(at))),
                span: crate::source::Span::new(id, 0, 1),
                transcript: meta.transcript,
            });
        }
    }
    analysis.requests.extend(request::next_request(&analysis));
    each(sources, Unit::ready(analysis))
}
