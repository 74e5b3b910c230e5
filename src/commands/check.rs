//! `rewind check [PATH…]`: gate CI on recorded sessions.
//!
//! Walks files, folders and glob patterns (respecting `.gitignore`), recognises each file's
//! format, skips what is not a recording, diagnoses the rest in parallel on every core, and prints
//! them in a stable order with a summary. Reads `rewind.toml` (found upward from the working
//! directory); flags override it. Exit status: 0 clean, 1 findings at or above `--fail-on`,
//! 2 when an input could not be read or the configuration is wrong.

use std::collections::HashSet;
use std::path::PathBuf;

use super::{make_printer, print_error};
use crate::checks::diagnostic::Severity;
use crate::config::{self, Flags, Policy};
use crate::core::ExitStatus;
use crate::core::RewindError;
use crate::ingest::DetectError;
use crate::pipeline;
use crate::report::ColorChoice;
use crate::report::human::{Renderer, Summary};
use crate::report::{OutputFormat, RunSummary, Totals, UnitOutput};
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files, folders or glob patterns to check (default: the current directory); `-` reads
    /// standard input.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,

    #[command(flatten)]
    pub report: super::ReportArgs,

    #[command(flatten)]
    pub rules: RuleArgs,

    /// Exit 0 even when there are findings (still 2 when an input cannot be read).
    #[arg(long)]
    pub exit_zero: bool,

    /// Report only findings that are not in this baseline.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Record every current finding in this baseline file, then exit 0.
    #[arg(long, value_name = "FILE", conflicts_with = "baseline")]
    pub write_baseline: Option<PathBuf>,

    /// Diagnose files on this many threads [default: all cores].
    #[arg(long, short = 'j', value_name = "N")]
    pub threads: Option<usize>,

    /// List the files skipped because they are not recordings.
    #[arg(long, short)]
    pub verbose: bool,

    /// Exit with status 2 when no file was checked (a CI gate aimed at the wrong folder); without
    /// it, such a run only warns.
    #[arg(long)]
    pub fail_on_empty: bool,
    /// Check only shard K of N (K from 0 to N-1, as Kubernetes' JOB_COMPLETION_INDEX): the files
    /// whose path below the folder they were found in hashes to K. N workers with 0/N … N-1/N
    /// check every file once; `rewind merge` joins their JSON, JSON Lines, SARIF or JUnit reports.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,

    /// Live parts from which a large agent log's diagnosis forgets quiet messages (testing: 0
    /// forgets from the start).
    #[arg(long, hide = true, value_name = "PARTS")]
    pub forget_from_parts: Option<usize>,
}

/// Which rules run and how severe their findings are: flags over `rewind.toml`, the same for
/// every command that diagnoses (`check`, `diagnose`).
#[derive(Debug, Clone, clap::Args)]
pub struct RuleArgs {
    /// Exit with status 1 when a finding has this severity or a higher one [default: error].
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,

    /// Run only these rules (comma-separated or repeated); replaces `select` of rewind.toml.
    #[arg(long, value_delimiter = ',', value_name = "RULE", value_parser = RuleName, hide_possible_values = true)]
    pub select: Vec<String>,

    /// Skip these rules (comma-separated or repeated); added to `ignore` of rewind.toml.
    #[arg(long, value_delimiter = ',', value_name = "RULE", value_parser = RuleName, hide_possible_values = true)]
    pub ignore: Vec<String>,

    /// Change a rule's severity, e.g. `--severity session-error=info` (repeatable).
    #[arg(long, value_name = "RULE=SEVERITY", value_parser = parse_severity)]
    pub severity: Vec<(String, Severity)>,

    /// Use this configuration file instead of looking for rewind.toml (in the current folder
    /// and its parents).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,

    /// Ignore any rewind.toml.
    #[arg(long)]
    pub no_config: bool,
}

impl RuleArgs {
    /// The policy these flags and the configuration file they name (or the rewind.toml found
    /// from the current folder) make.
    pub fn policy(&self) -> Result<Policy, RewindError> {
        let cwd = std::env::current_dir().unwrap_or_default();
        let config_path = match (&self.config, self.no_config) {
            (Some(p), _) => Some(p.clone()),
            (None, true) => None,
            (None, false) => config::find(&cwd),
        };
        Policy::new(
            config_path.as_deref(),
            &Flags {
                select: self.select.clone(),
                ignore: self.ignore.clone(),
                fail_on: self.fail_on,
                severity: self.severity.clone(),
            },
        )
    }
}

/// A rule's name as typed: any text (an unknown name is refused later, with a suggestion), with
/// every rule's name offered to shell completion.
#[derive(Clone, Copy, Debug)]
pub struct RuleName;

impl clap::builder::TypedValueParser for RuleName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(crate::checks::Rule::ALL.iter().map(|r| {
            clap::builder::PossibleValue::new(r.as_str()).help(r.meta().summary)
        })))
    }
}

fn parse_severity(s: &str) -> Result<(String, Severity), String> {
    let (rule, level) = s
        .split_once('=')
        .ok_or_else(|| format!("expected RULE=SEVERITY, got `{}`", crate::text::clip(s)))?;
    let sev = match level {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "info" => Severity::Info,
        other => {
            return Err(format!(
                "unknown severity `{other}` (error, warning or info)"
            ));
        }
    };
    Ok((rule.to_owned(), sev))
}

/// What happened to one file.
enum Outcome {
    Checked(Vec<UnitOutput>),
    Skipped(String),
    Failed(String),
}

/// Detection failures that mean "not a recording" rather than "broken recording".
fn not_a_recording(e: &RewindError) -> Option<String> {
    match e {
        RewindError::Detect(
            d @ (DetectError::Unknown { .. }
            | DetectError::Empty { .. }
            | DetectError::Binary { .. }
            | DetectError::InvalidUtf8 { .. }),
        ) => Some(match d {
            DetectError::Unknown { .. } => "not a recording".to_owned(),
            DetectError::Empty { .. } => "empty".to_owned(),
            DetectError::Binary { .. } => "binary".to_owned(),
            _ => "not UTF-8 text".to_owned(),
        }),
        RewindError::Unsupported { format, .. } => {
            Some(format!("{} (not supported yet)", format.describe()))
        }
        _ => None,
    }
}

pub fn run(args: Args, choice: ColorChoice) -> Result<ExitStatus, RewindError> {
    let color = choice.enabled();
    // Error lines go to standard error, which may be a terminal when standard output is not.
    let err_color = choice.enabled_on_stderr();
    let shard = args
        .shard
        .as_deref()
        .map(crate::shard::Shard::parse)
        .transpose()?;
    if shard.is_some() {
        if args.paths.iter().any(|p| crate::ingest::input::is_stdin(p)) {
            return Err(RewindError::Usage(
                "`--shard` splits files among workers: standard input (`-`) cannot be split; give files or folders".to_owned(),
            ));
        }
        if args.write_baseline.is_some() {
            return Err(RewindError::Usage(
                "`--shard` with `--write-baseline` would record one shard's findings only: write the baseline from one run over every file".to_owned(),
            ));
        }
    }
    let policy = args.rules.policy()?;
    let baseline_path = if args.write_baseline.is_some() {
        None
    } else {
        args.baseline.clone().or_else(|| policy.baseline.clone())
    };
    let baseline: Option<HashSet<String>> = baseline_path
        .as_deref()
        .map(crate::baseline::read)
        .transpose()?;

    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let found = crate::discover::discover(&paths);
    let asked = paths;
    let mut candidates: Vec<(crate::discover::Candidate, bool)> = found
        .explicit
        .into_iter()
        .map(|c| (c, true))
        .chain(found.walked.into_iter().map(|c| (c, false)))
        .filter(|(c, _)| !policy.excluded(&c.path))
        .collect();
    candidates.dedup_by(|a, b| a.0.path == b.0.path);
    let whole = candidates.len();
    // Each file's place in the whole list: a shard's report carries it for `rewind merge`.
    let (files, positions, ledger) = match shard {
        None => (
            candidates.into_iter().map(|(c, e)| (c.path, e)).collect(),
            (0..whole).collect(),
            None,
        ),
        Some(shard) => {
            let shown: Vec<String> = candidates
                .iter()
                .map(|(c, _)| crate::report::record::display_path(&c.path))
                .collect();
            let list = crate::shard::digest(
                candidates
                    .iter()
                    .zip(&shown)
                    .map(|((c, _), s)| (c.key.as_str(), s.as_str())),
            );
            // A file listed twice (named, and found in a folder) goes where its first listing
            // goes, so that its report is whole in one shard.
            let mut owner: crate::FastMap<&str, bool> = crate::FastMap::default();
            let mut files = Vec::new();
            let mut positions = Vec::new();
            for (position, ((c, explicit), s)) in candidates.iter().zip(&shown).enumerate() {
                let mine = *owner
                    .entry(s.as_str())
                    .or_insert_with(|| shard.holds(&c.key));
                if mine {
                    files.push((c.path.clone(), *explicit));
                    positions.push(position);
                }
            }
            let mut ledger = crate::report::ledger::Ledger::new(
                shard.index,
                shard.count,
                whole,
                list,
                policy.fail_on,
            );
            ledger.arguments = found.missing.len();
            (files, positions, Some(ledger))
        }
    };
    let files: Vec<(PathBuf, bool)> = files;
    let positions: Vec<usize> = positions;

    let out = super::report_sink(
        args.report.output_file.as_deref(),
        args.report.rendered(args.format),
        &files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
    )?;
    let report_color = color && args.report.output_file.is_none();
    let renderer = Renderer::for_format(args.report.rendered(args.format), report_color);
    let diagnose_one = |path: &PathBuf, explicit: bool| -> Outcome {
        if !explicit && crate::core::is_rewind_copy(path) {
            return Outcome::Skipped("a copy rewind made when repairing (a backup)".to_owned());
        }
        let format = match crate::formats::recognize::detect(path) {
            Ok(f) => f,
            Err(e) => {
                let e = RewindError::from(e);
                return match not_a_recording(&e) {
                    Some(why) if !explicit => Outcome::Skipped(why),
                    _ => Outcome::Failed(e.message()),
                };
            }
        };
        let file_policy = policy.for_path(path);
        let options = pipeline::Options {
            input: Some(format),
            forget_logs_from: pipeline::forget_logs_from(
                args.report.rendered(args.format),
                args.forget_from_parts,
            ),
            ..pipeline::Options::default()
        };
        let mut units = Vec::new();
        let result = pipeline::diagnose_file(
            path,
            &options,
            &file_policy,
            baseline.as_ref(),
            renderer.as_ref(),
            &mut |unit| {
                units.push(unit);
                Ok(())
            },
        );
        match result {
            Ok(()) => Outcome::Checked(units),
            Err(e) => match not_a_recording(&e) {
                Some(why) if !explicit => Outcome::Skipped(why),
                _ => Outcome::Failed(e.message()),
            },
        }
    };
    let threads = args.threads.unwrap_or(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| RewindError::Usage(format!("cannot start worker threads: {e}")))?;
    let progress =
        crate::progress::Progress::files(files.len(), args.report.for_people(args.format));

    let mut printer = make_printer(
        out,
        args.format,
        report_color,
        Summary::Rules,
        policy.help_uri_base.clone(),
        &args.report,
    );
    if ledger.is_some() {
        printer.for_shard();
    }
    let mut run = RunSummary {
        fail_on: Some(policy.fail_on),
        verbose: args.verbose,
        shard: ledger,
        ..RunSummary::default()
    };
    for (arg, why) in &found.missing {
        let e = RewindError::Usage(format!("`{arg}`: {why}"));
        print_error(&e, err_color);
        run.errors.push((arg.into(), why.into()));
    }
    let mut totals = Totals::default();
    let mut all_records = Vec::new();
    // Each file is printed as soon as it and every file before it are diagnosed; only a few
    // files' results wait for their turn at any time.
    let mut paths = files.iter().map(|(path, _)| path).zip(&positions);
    let mut print = |outcome: Outcome| -> Result<(), RewindError> {
        let Some((path, &position)) = paths.next() else {
            return Ok(());
        };
        let shown = crate::report::record::display_path(path);
        if let Some(ledger) = run.shard.as_mut() {
            use crate::report::ledger::{Entry, Outcome as Ledgered, UnitEntry};
            ledger.entries.push(Entry {
                position,
                outcome: match &outcome {
                    Outcome::Checked(_) => Ledgered::Checked,
                    Outcome::Skipped(_) => Ledgered::Skipped,
                    Outcome::Failed(_) => Ledgered::Failed,
                },
                units: match &outcome {
                    Outcome::Checked(units) => units
                        .iter()
                        .map(|u| UnitEntry {
                            file: u.file.unescaped().to_owned(),
                            sessions: u.sessions.len(),
                            findings: u.records.len(),
                        })
                        .collect(),
                    _ => Vec::new(),
                },
            });
        }
        match outcome {
            Outcome::Checked(units) => {
                run.files_checked += 1;
                for unit in units {
                    totals.merge(Totals::of(&unit.records));
                    if args.write_baseline.is_some() {
                        all_records.extend(unit.records.iter().cloned());
                    }
                    // The human printer writes (and flushes) each file's findings at once:
                    // they show while later files are still being read.
                    progress
                        .suspend(|| printer.unit(unit))
                        .map_err(RewindError::Output)?;
                }
            }
            Outcome::Skipped(why) => run.files_skipped.push((shown.into(), why.into())),
            Outcome::Failed(error) => {
                print_error(&RewindError::Usage(error.clone()), err_color);
                run.errors.push((shown.into(), error.into()));
            }
        }
        Ok(())
    };
    let work = |(path, explicit): &(PathBuf, bool)| {
        // A bug in rewind on one file must not end the whole run: that file is reported as an
        // error (the panic message is printed once, by the panic hook).
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            diagnose_one(path, *explicit)
        }))
        .unwrap_or_else(|_| {
            Outcome::Failed(format!(
                "`{}`: rewind failed on this file (a bug: please report it with the file)",
                path.display()
            ))
        });
        progress.inc();
        outcome
    };
    let window = 4 * pool.current_num_threads();
    let printed = pool.in_place_scope(|scope| {
        crate::core::in_order(
            scope,
            window,
            &work,
            |push| files.iter().try_for_each(push),
            &mut print,
        )
    });
    progress.finish();
    match printed {
        Err(e) if e.is_broken_pipe() => return Ok(ExitStatus::Clean),
        other => other?,
    }
    match printer.finish(&run) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Clean),
        other => other.map_err(RewindError::Output)?,
    }
    // A shard may get no file of a list that has some: only an empty list is worth a word.
    let empty = run.files_checked == 0 && run.errors.is_empty() && (shard.is_none() || whole == 0);
    if empty && (!args.report.quiet || args.fail_on_empty) {
        let skipped = run.files_skipped.len();
        super::err_line(&format!(
            "{}: no recording was checked in {} ({skipped} file{} skipped as not recordings; `-v` lists them): is the path right?",
            if args.fail_on_empty {
                "error"
            } else {
                "warning"
            },
            asked
                .iter()
                .map(|p| format!("`{}`", InputText::from(&p.to_string_lossy()).for_terminal()))
                .collect::<Vec<_>>()
                .join(", "),
            if skipped == 1 { "" } else { "s" },
        ));
    }
    if empty && args.fail_on_empty {
        return Ok(ExitStatus::Error);
    }
    if let Some(path) = &args.write_baseline {
        crate::baseline::write(path, &all_records)?;
        if !args.report.quiet {
            super::err_line(&format!(
                "wrote {} finding{} to the baseline {}",
                all_records.len(),
                if all_records.len() == 1 { "" } else { "s" },
                path.display()
            ));
        }
        return Ok(if run.errors.is_empty() {
            ExitStatus::Clean
        } else {
            ExitStatus::Error
        });
    }
    Ok(if !run.errors.is_empty() {
        ExitStatus::Error
    } else if totals.fails(policy.fail_on) && !args.exit_zero {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}
