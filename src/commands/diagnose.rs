//! `rewind diagnose FILE…`: replay each input and report every finding.

use std::io::Write;
use std::path::PathBuf;

use super::{make_printer, print_error};
use crate::core::ExitStatus;
use crate::core::Format;
use crate::core::RewindError;
use crate::formats::opencode::request::ProviderChoice;
use crate::pipeline::{self, Options};
use crate::protocols::stream::Profile;
use crate::report::ColorChoice;
use crate::report::human::{Renderer, Summary};
use crate::report::{OutputFormat, RunSummary, Totals};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent logs, SSE captures, HTTP recordings or OpenCode stores to diagnose; `-` reads
    /// standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Human)]
    pub format: OutputFormat,

    #[command(flatten)]
    pub report: super::ReportArgs,

    #[command(flatten)]
    pub rules: super::check::RuleArgs,

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

    #[command(flatten)]
    pub store: StoreArgs,

    /// Live parts from which a large agent log's diagnosis forgets quiet messages (testing: 0
    /// forgets from the start).
    #[arg(long, hide = true, value_name = "PARTS")]
    pub forget_from_parts: Option<usize>,
}

/// Options for OpenCode session stores (a database, a storage folder, an export).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// Only this session of a session store (repeat for more; default: all).
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// Rebuild requests as this OpenCode version does (default: the newest version that created
    /// a session in the store). From 1.1 on, pending/running tools are sent as interrupted;
    /// from 1.18.26 on, Anthropic requests carry each step's tool calls after its text.
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

pub fn run(args: Args, choice: ColorChoice) -> Result<ExitStatus, RewindError> {
    let color = choice.enabled();
    // Error lines go to standard error, which may be a terminal when standard output is not.
    let err_color = choice.enabled_on_stderr();
    let policy = args.rules.policy()?;
    let mut options = Options {
        input: args.input,
        profiles: vec![args.processor, pipeline::counterpart(args.processor)],
        forget_logs_from: pipeline::forget_logs_from(
            args.report.rendered(args.format),
            args.forget_from_parts,
        ),
        ..Options::default()
    };
    args.store.apply(&mut options);
    let summary = if args.no_summary {
        Summary::None
    } else {
        Summary::Sessions
    };
    let out = super::report_sink(
        args.report.output_file.as_deref(),
        args.report.rendered(args.format),
        &args.files,
    )?;
    let color = color && args.report.output_file.is_none();
    let mut printer = make_printer(
        out,
        args.format,
        color,
        summary,
        policy.help_uri_base.clone(),
        &args.report,
    );
    let renderer = Renderer::for_format(args.report.rendered(args.format), color);
    let mut run = RunSummary {
        fail_on: Some(policy.fail_on),
        ..RunSummary::default()
    };
    let mut totals = Totals::default();
    // A folder of transcripts with `--session`: the transcripts of those sessions.
    let mut files = Vec::new();
    for file in &args.files {
        match super::transcript_sessions(file, &options.sessions)? {
            Some(found) => files.extend(found),
            None => files.push(file.clone()),
        }
    }
    for (n, file) in files.iter().enumerate() {
        options.exit_after = crate::core::exits_after() && n + 1 == files.len();
        let file_policy = policy.for_path(file);
        let progress = crate::progress::Progress::input(file, args.report.for_people(args.format));
        let result = pipeline::diagnose_file(
            file,
            &options,
            &file_policy,
            None,
            renderer.as_ref(),
            &mut |unit| {
                totals.merge(Totals::of(&unit.records));
                progress.inc();
                progress.suspend(|| printer.unit(unit))?;
                Ok(())
            },
        );
        progress.finish();
        match result {
            Ok(()) => run.files_checked += 1,
            Err(e) if e.is_broken_pipe() => return Ok(ExitStatus::Clean),
            Err(e) => {
                super::Out.flush().ok();
                print_error(&e, err_color);
                run.errors
                    .push((file.display().to_string().into(), e.message().into()));
            }
        }
    }
    match printer.finish(&run) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Clean),
        other => other?,
    }
    Ok(if !run.errors.is_empty() {
        ExitStatus::Error
    } else if totals.fails(policy.fail_on) {
        ExitStatus::Findings
    } else {
        ExitStatus::Clean
    })
}
