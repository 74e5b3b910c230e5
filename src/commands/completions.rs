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
    clap_complete::generate(args.shell, &mut shown(&Cli::command()), "rewind", &mut out);
    out.flush()?;
    Ok(ExitStatus::Clean)
}

/// `cmd` without its hidden arguments and subcommands (options for tests): the completion
/// generators offer every argument they are given, hidden or not. Only what completion reads is
/// kept: names, help, values.
fn shown(cmd: &clap::Command) -> clap::Command {
    let mut out = clap::Command::new(cmd.get_name().to_owned());
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(version.to_owned());
    }
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        out = out.arg(arg.clone());
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(shown(sub));
    }
    out
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
