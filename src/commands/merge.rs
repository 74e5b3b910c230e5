//! `rewind merge REPORT…`: joins the reports of `rewind check --shard K/N` (one per shard, all
//! JSON, JSON Lines, SARIF or JUnit) into the report one `rewind check` over every file prints,
//! byte for byte, then drops the findings of `--baseline`. The exit status is the one that run
//! would have: 2 when a file could not be read, 1 when a finding reaches the shards' `--fail-on`.
//! People's formats are not merged: their snippets come from the recordings.

use std::io::Write;
use std::path::PathBuf;

use crate::core::{ExitStatus, RewindError};
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Every shard's report, one format (written by `rewind check --shard K/N --format
    /// json|jsonl|sarif|junit`), in any order.
    #[arg(value_name = "REPORT", required = true)]
    pub reports: Vec<PathBuf>,

    /// Report only findings that are not in this baseline (applied after the merge).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,

    /// Write the merged report to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub output_file: Option<PathBuf>,

    /// Exit 0 even when there are findings (still 2 when the run could not read a file).
    #[arg(long)]
    pub exit_zero: bool,

    /// Print no warning (an empty run) on standard error.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn run(args: Args, choice: crate::report::ColorChoice) -> Result<ExitStatus, RewindError> {
    let err_color = choice.enabled_on_stderr();
    let baseline = args
        .baseline
        .as_deref()
        .map(crate::baseline::read)
        .transpose()?;
    let mut inputs = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        let shown = InputText::from(&path.display().to_string()).for_terminal();
        let bytes = std::fs::read(path)
            .map_err(|e| RewindError::Usage(format!("cannot read the report `{shown}`: {e}")))?;
        inputs.push((path.display().to_string(), bytes));
    }
    let merged = crate::report::merge::merge(&inputs, baseline.as_ref())
        .map_err(|e| RewindError::Usage(e.to_string()))?;
    let mut out = super::report_sink(
        args.output_file.as_deref(),
        crate::report::OutputFormat::Json,
        &args.reports,
    )?;
    let written = out.write_all(&merged.bytes).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Clean),
        other => other?,
    }
    // As `check` prints them: an argument's error names the argument.
    for (i, (file, error)) in merged.errors.iter().enumerate() {
        let line = if i < merged.arguments {
            format!("`{file}`: {error}")
        } else {
            error.clone()
        };
        super::print_error(&RewindError::Usage(line), err_color);
    }
    if merged.checked == 0 && merged.errors.is_empty() && !args.quiet {
        super::err_line("warning: no recording was checked in any shard: were the paths right?");
    }
    Ok(if !merged.errors.is_empty() {
        ExitStatus::Error
    } else if merged.totals.fails(merged.fail_on) && !args.exit_zero {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}
