//! The one-way pipeline, end to end: detect → ingest → replay → checks → printer.
//!
//! [`diagnose`] streams: each unit (a log, a capture, one session of a database) is checked and
//! handed to the printer as soon as it is replayed, so nothing accumulates across units.

use std::path::Path;

use crate::checks::{self, CheckMeta};
use crate::diagnostic::{Finding, Severity};
use crate::error::RewindError;
use crate::ingest::{self, Format};
use crate::replay;
use crate::report::Printer;
use crate::session::Analysis;
use crate::source::SourceMap;

/// Which rules run.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only these rules (all when empty).
    pub select: Vec<String>,
    /// Never these rules.
    pub ignore: Vec<String>,
}

impl Selection {
    /// Fails on a rule name that does not exist.
    pub fn validate(&self) -> Result<(), RewindError> {
        for name in self.select.iter().chain(&self.ignore) {
            if checks::find(name).is_none() {
                return Err(RewindError::UnknownRule(name.clone()));
            }
        }
        Ok(())
    }

    pub fn enabled(&self, meta: &CheckMeta) -> bool {
        (self.select.is_empty() || self.select.iter().any(|s| s == meta.name))
            && !self.ignore.iter().any(|s| s == meta.name)
    }
}

/// Options shared by the commands that diagnose.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub selection: Selection,
}

/// What a run found, for the exit status.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    pub worst: Option<Severity>,
    pub findings: usize,
}

impl Outcome {
    fn add(&mut self, findings: &[Finding]) {
        self.findings += findings.len();
        for f in findings {
            self.worst = self.worst.max(Some(f.severity));
        }
    }
}

/// Replays `path` into analysis units, calling `each` for every one.
pub fn analyze(
    path: &Path,
    sources: &mut SourceMap,
    each: &mut dyn FnMut(&SourceMap, Analysis) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let format = ingest::detect(path)?;
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

/// Diagnoses `path` and prints each unit with `printer`.
pub fn diagnose(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    printer: &mut dyn Printer,
) -> Result<Outcome, RewindError> {
    let mut outcome = Outcome::default();
    analyze(path, sources, &mut |sources, analysis| {
        let findings = checks::run(&analysis, &|m| options.selection.enabled(m));
        outcome.add(&findings);
        printer.unit(sources, &analysis, &findings)?;
        Ok(())
    })?;
    Ok(outcome)
}
