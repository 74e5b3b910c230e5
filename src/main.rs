use std::process::ExitCode;

use clap::Parser;
use rewind::{Cli, ExitStatus, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = cli.color.enabled_on_stderr();
    match run(cli) {
        Ok(status) => status.into(),
        Err(err) if err.is_broken_pipe() => ExitStatus::Clean.into(),
        Err(err) => {
            rewind::print_error(&err, color);
            ExitStatus::Error.into()
        }
    }
}

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
