//! The engine: recognise → read and replay (the input's format family) → check → prepared
//! output.
//!
//! [`diagnose_file`] streams: each unit (a log, a capture, one recorded exchange, one session of
//! a store) is checked and prepared for printing as soon as it is replayed, and handed over at
//! once, so nothing accumulates across units. Every file gets its own [`SourceMap`], so files can
//! be diagnosed on several threads.

use std::collections::HashSet;
use std::path::Path;

use crate::checks;
use crate::checks::diagnostic::Finding;
use crate::config::FilePolicy;
use crate::core::RewindError;
use crate::ingest;
use crate::protocols::stream::Profile;
use crate::report::human::Renderer;
use crate::report::{self, UnitOutput};
use crate::session::Analysis;
use crate::source::SourceMap;

pub use crate::formats::unit::{Input, Options, UnitSink};

/// Replays `path` into analysis units, calling `each` for every one.
pub fn analyze(
    path: &Path,
    options: &Options,
    sources: &mut SourceMap,
    each: &mut UnitSink<'_>,
) -> Result<(), RewindError> {
    let format = match options.input {
        Some(f) => {
            if !f.is_folder() && std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
                return Err(ingest::DetectError::Directory {
                    path: path.to_path_buf(),
                }
                .into());
            }
            f
        }
        None => crate::formats::recognize::detect(path)?,
    };
    let Some(family) = crate::formats::family_of(format) else {
        return Err(RewindError::Unsupported {
            path: path.to_path_buf(),
            format,
            hint: String::new(),
        });
    };
    let forgetting = || -> Box<dyn crate::session::forgetting::Forgetting> {
        Box::<checks::quiet::Quiet>::default()
    };
    let input = Input {
        path,
        format,
        options,
        forgetting: Some(&forgetting),
    };
    family.analyze(&input, sources, each)
}

/// The profile compared with `primary` by default: the classic processor for the fixed one and
/// the other way round; TanStack before and after #727.
pub fn counterpart(primary: Profile) -> Profile {
    match primary {
        Profile::OpencodeFixed => Profile::Opencode,
        Profile::Opencode | Profile::Agent08 => Profile::OpencodeFixed,
        Profile::Tanstack => Profile::TanstackPre727,
        Profile::TanstackPre727 => Profile::Tanstack,
    }
}

/// From how many live parts a diagnosis printed as `format` forgets what it no longer needs of
/// an agent log (`given`, else [`crate::formats::agent_log::replay::FORGET_FROM_PARTS`]): never for HTML, whose
/// report shows each session's timeline.
pub fn forget_logs_from(
    format: crate::report::OutputFormat,
    given: Option<usize>,
) -> Option<usize> {
    (format != crate::report::OutputFormat::Html)
        .then(|| given.unwrap_or(crate::formats::agent_log::replay::FORGET_FROM_PARTS))
}

/// Runs the checks `policy` enables on one unit, with its severity overrides applied.
pub fn check(analysis: &Analysis, policy: &FilePolicy) -> Vec<Finding> {
    let mut findings = checks::run(analysis, &|m| policy.selection.enabled(m));
    policy.apply(&mut findings);
    findings
}

/// Diagnoses one file (with the first processor profile for streams) and hands each prepared
/// unit to `each`. Rows of a store are rendered only for units with findings.
pub fn diagnose_file(
    path: &Path,
    options: &Options,
    policy: &FilePolicy,
    baseline: Option<&HashSet<String>>,
    renderer: Option<&Renderer>,
    each: &mut dyn FnMut(UnitOutput) -> Result<(), RewindError>,
) -> Result<(), RewindError> {
    let mut sources = SourceMap::new();
    // With `exit_after`, the last unit's model is left to the operating system; every earlier one
    // is freed as the next arrives, so a store of many sessions holds one at a time.
    let mut last = LeaveLast::default();
    let result = analyze(path, options, &mut sources, &mut |sources, unit| {
        let Some(primary) = unit.primary() else {
            return Ok(());
        };
        let mut findings = check(primary, policy);
        let must_render = !findings.is_empty() && unit.renders();
        let Some(analysis) = unit.rendered_if(must_render, sources)? else {
            return Ok(());
        };
        if must_render {
            findings = check(&analysis, policy);
        }
        let reported = each(report::prepare(
            sources, &analysis, &findings, baseline, renderer,
        ));
        if options.exit_after {
            last.keep(analysis);
        }
        reported
    });
    last.leave();
    result
}

/// Holds the latest of a series of values and frees the one before as each arrives; the last
/// one is left unfreed ([`LeaveLast::leave`]), for a process about to exit.
struct LeaveLast<T>(Option<T>);

impl<T> Default for LeaveLast<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> LeaveLast<T> {
    /// Keeps `value`, freeing the one kept before.
    fn keep(&mut self, value: T) {
        drop(self.0.replace(value));
    }

    /// Leaves the value kept to the operating system instead of freeing it.
    fn leave(self) {
        std::mem::forget(self);
    }
}

#[cfg(test)]
mod forgetting_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_value_is_left_unfreed() {
        // A store's units arrive one by one: each is freed when the next arrives, so memory
        // holds one; only the last is left to the operating system.
        let alive = std::rc::Rc::new(());
        let mut last = LeaveLast::default();
        for _ in 0..100 {
            last.keep(std::rc::Rc::clone(&alive));
            assert_eq!(std::rc::Rc::strong_count(&alive), 2);
        }
        last.leave();
        assert_eq!(std::rc::Rc::strong_count(&alive), 2);
    }

    #[test]
    fn checks_side_by_side_find_what_they_find_one_after_the_other() {
        // Every input of the project and the corpus: the same findings, in the same order.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let corpus = std::env::var_os("REWIND_CORPUS")
            .map_or_else(|| root.join("../shared/corpus"), std::path::PathBuf::from);
        let mut dirs = vec![root.join("tests/fixtures"), root.join("samples"), corpus];
        let (mut files, mut found) = (0, 0);
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for path in entries.flatten().map(|e| e.path()) {
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let mut sources = SourceMap::new();
                let _ = analyze(&path, &Options::default(), &mut sources, &mut |_, unit| {
                    for analysis in &unit.analyses {
                        let serial = checks::run_in(analysis, &|_| true, false);
                        let parallel = checks::run_in(analysis, &|_| true, true);
                        assert_eq!(
                            format!("{serial:?}"),
                            format!("{parallel:?}"),
                            "{}",
                            path.display()
                        );
                        files += 1;
                        found += serial.len();
                    }
                    Ok(())
                });
            }
        }
        // The project's fixtures and samples alone give about 180 analyses and 130 findings;
        // the corpus adds more.
        let (files_least, found_least) = if cfg!(rewind_corpus) {
            (200, 200)
        } else {
            (150, 100)
        };
        assert!(
            files >= files_least && found >= found_least,
            "{files} analyses, {found} findings"
        );
    }
}
