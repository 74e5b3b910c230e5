//! The one-way pipeline, end to end: detect → ingest → replay → checks → prepared output.
//!
//! [`diagnose_file`] streams: each unit (a log, a capture, one session of a database) is checked
//! and prepared for printing as soon as it is replayed, and handed over at once, so nothing
//! accumulates across units. Every file gets its own [`SourceMap`], so files can be diagnosed
//! on several threads.

use std::collections::HashSet;
use std::path::Path;

use crate::checks;
use crate::config::FilePolicy;
use crate::error::RewindError;
use crate::ingest::{self, Format};
use crate::replay;
use crate::report::human::Renderer;
use crate::report::{self, UnitOutput};
use crate::session::Analysis;
use crate::source::SourceMap;

/// Replays `path` into analysis units, calling `each` for every one.
pub fn analyze(
    path: &Path,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&SourceMap, Analysis) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let format = ingest::detect(path)?;
    analyze_as(path, format, sources, each)
}

/// [`analyze`] for a format already known.
pub fn analyze_as(
    path: &Path,
    format: Format,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&SourceMap, Analysis) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let ingest_err = |source| RewindError::Ingest {
        path: path.to_path_buf(),
        source,
    };
    match format {
        Format::AgentLog => {
            let file = sources.add_file(path);
            let reader = ingest::open(path)?;
            let analysis = replay::agent_log::replay(reader, file).map_err(ingest_err)?;
            each(sources, analysis)
        }
        other => Err(RewindError::Unsupported {
            path: path.to_path_buf(),
            format: other,
            hint: String::new(),
        }),
    }
}

/// Runs the checks `policy` enables on one unit, with its severity overrides applied.
pub fn check(analysis: &Analysis, policy: &FilePolicy) -> Vec<crate::diagnostic::Finding> {
    let mut findings = checks::run(analysis, &|m| policy.selection.enabled(m));
    policy.apply(&mut findings);
    findings
}

/// Diagnoses one file and hands each prepared unit to `each`.
pub fn diagnose_file(
    path: &Path,
    format: Option<Format>,
    policy: &FilePolicy,
    baseline: Option<&HashSet<String>>,
    renderer: Option<&Renderer>,
    each: &mut dyn FnMut(UnitOutput) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let mut sources = SourceMap::new();
    let format = match format {
        Some(f) => f,
        None => ingest::detect(path)?,
    };
    analyze_as(path, format, &mut sources, &mut |sources, analysis| {
        let findings = check(&analysis, policy);
        each(report::prepare(
            sources, &analysis, &findings, baseline, renderer,
        ))
    })
}
