//! `rewind diagnose FILE…`: replay each input and report every finding.

use std::io::Write;
use std::path::PathBuf;

use super::{human_stdout, print_error};
use crate::cli::ExitStatus;
use crate::diagnostic::Severity;
use crate::error::RewindError;
use crate::ingest::Format;
use crate::pipeline::{self, Options, Selection};
use crate::replay::stream::Profile;
use crate::report::json::JsonPrinter;
use crate::report::{OutputFormat, Printer};
use crate::source::SourceMap;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent logs, SSE captures, HTTP recordings or OpenCode stores to diagnose.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,

    /// Exit with status 1 when a finding has this severity or a higher one.
    #[arg(long, value_enum, default_value_t = Severity::Error, value_name = "SEVERITY")]
    pub fail_on: Severity,

    /// Run only these rules (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub select: Vec<String>,

    /// Skip these rules (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    pub ignore: Vec<String>,

    /// Do not print the per-session summary table.
    #[arg(long)]
    pub no_summary: bool,

    /// Read the files as this kind of input instead of recognising it from their content.
    #[arg(long, value_enum, value_name = "KIND")]
    pub input: Option<Format>,

    /// Stream captures: the processor to replay them with (what `opencode` or the fixed processor
    /// would have done differently is reported too).
    #[arg(long, value_enum, default_value_t = Profile::OpencodeFixed, value_name = "PROFILE")]
    pub processor: Profile,
}

pub fn run(args: Args, color: bool) -> Result<ExitStatus, RewindError> {
    let options = Options {
        selection: Selection {
            select: args.select,
            ignore: args.ignore,
        },
        input: args.input,
        profiles: vec![args.processor, pipeline::counterpart(args.processor)],
        protocol: None,
    };
    options.selection.validate()?;
    let mut printer: Box<dyn Printer> = match args.format {
        OutputFormat::Human => Box::new(human_stdout(color).with_table(!args.no_summary)),
        OutputFormat::Json => {
            Box::new(JsonPrinter::new(std::io::BufWriter::new(std::io::stdout())))
        }
    };
    let mut sources = SourceMap::new();
    let mut failed = false;
    let mut worst = None;
    for file in &args.files {
        match pipeline::diagnose(file, &options, &mut sources, printer.as_mut()) {
            Ok(outcome) => worst = worst.max(outcome.worst),
            Err(e) if e.is_broken_pipe() => return Ok(ExitStatus::Clean),
            Err(e) => {
                std::io::stdout().flush().ok();
                print_error(&e, color);
                failed = true;
            }
        }
    }
    match printer.finish(&sources) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Clean),
        other => other?,
    }
    drop(printer);
    Ok(if failed {
        ExitStatus::Error
    } else if worst.is_some_and(|w| w >= args.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}
