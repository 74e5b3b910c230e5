//! Codex rollouts (`~/.codex/sessions/…/rollout-*.jsonl`).

pub mod read;
pub mod recognize;
pub mod replay;
pub mod store;

use crate::core::{Format, RewindError};
use crate::formats::Family;
use crate::formats::recognize::{Claim, Head};
use crate::formats::unit::{Input, Unit, UnitSink};
use crate::source::SourceMap;

/// This folder's unit in the `formats!` registry.
pub struct Codex;

impl Family for Codex {
    fn formats(&self) -> &'static [Format] {
        &[Format::CodexRollout]
    }

    fn recognize(&self, head: &Head<'_>) -> Vec<Claim> {
        recognize::recognize(head)
    }

    fn analyze(
        &self,
        input: &Input<'_>,
        sources: &mut SourceMap,
        each: &mut UnitSink<'_>,
    ) -> Result<(), RewindError> {
        let file = sources.add_file(input.path);
        let reader = crate::ingest::open(input.path)?;
        let mut analysis = replay::replay(reader, file).map_err(|e| input.ingest_err(e))?;
        analysis
            .requests
            .extend(crate::formats::transcript::request::next_request(&analysis));
        each(sources, Unit::ready(analysis))
    }
}
