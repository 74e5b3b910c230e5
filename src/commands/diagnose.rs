//! `rewind diagnose FILE…`: replay each input and report every finding.

use std::io::Write;
use std::path::PathBuf;

use super::{human_stdout, print_error};
use crate::cli::ExitStatus;
use crate::diagnostic::Severity;
use crate::error::RewindError;
use crate::pipeline::{self, Options, Selection};
use crate::reconstruct::opencode::ProviderChoice;
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

    #[command(flatten)]
    pub store: StoreArgs,
}

/// Options for OpenCode session stores (a database, a storage folder, an export).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// Only this session of a session store (repeat for more; default: all).
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// Rebuild requests as this OpenCode version does (default: the newest version that created
    /// a session in the store). From 1.14 on, pending/running tools are sent as interrupted.
    #[arg(long, value_name = "VERSION")]
    pub opencode_version: Option<String>,

    /// Check rebuilt requests against these provider rules (auto: from the session's model).
    #[arg(long, value_enum, default_value_t = ProviderChoice::Auto)]
    pub provider: ProviderChoice,
}

impl StoreArgs {
    pub fn apply(self, options: &mut Options) {
        options.sessions = self.sessions;
        options.opencode_version = self.opencode_version;
        options.provider = self.provider;
    }
}

pub fn run(args: Args, color: bool) -> Result<ExitStatus, RewindError> {
    let mut options = Options {
        selection: Selection {
            select: args.select,
            ignore: args.ignore,
        },
        ..Options::default()
    };
    args.store.apply(&mut options);
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
