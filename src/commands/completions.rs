//! `rewind completions SHELL` and `rewind man`: shell completions and the man page, generated
//! from the command-line definitions so they never drift from them.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::core::ExitStatus;
use crate::core::RewindError;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// A subcommand's page (`rewind-diagnose(1)`) instead of rewind's.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// Prints the completion script for a shell.
pub fn run(args: Args) -> Result<ExitStatus, RewindError> {
    let mut out = super::stdout();
    clap_complete::generate(args.shell, &mut Cli::command(), "rewind", &mut out);
    out.flush()?;
    Ok(ExitStatus::Clean)
}

/// Prints the man page (roff): rewind's, or a subcommand's.
pub fn man(args: ManArgs) -> Result<ExitStatus, RewindError> {
    let cmd = Cli::command().version(env!("CARGO_PKG_VERSION"));
    let page = match &args.command {
        None => cmd,
        Some(name) => {
            let sub = cmd
                .find_subcommand(name)
                .filter(|s| !s.is_hide_set())
                .ok_or_else(|| {
                    RewindError::Usage(format!(
                        "no command `{}` (`rewind --help` lists them)",
                        crate::text::clip(name)
                    ))
                })?;
            sub.clone()
                .name(format!("rewind-{name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut out = super::stdout();
    clap_mangen::Man::new(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitStatus::Clean)
}
