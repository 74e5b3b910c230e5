//! rewind: forensics and repair for AI coding-agent sessions.
//!
//! The crate is a one-way pipeline, one module per stage:
//!
//! * [`ingest`]: bytes → records with byte spans (agent logs, SSE captures, recordings, stores);
//! * [`replay`]: records → the session model ([`session`]), re-running the agent's processor;
//! * [`reconstruct`]: sessions → the requests the model receives, and the providers' rules;
//! * [`checks`]: the session model → [`diagnostic::Finding`]s, one check per file;
//! * [`report`]: findings → people and machines (annotated snippets, JSON).
//!
//! [`pipeline`] wires the stages together; [`cli`] and [`commands`] are the binary's front end.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod baseline;
pub mod checks;
pub mod cli;
pub mod commands;
pub mod config;
pub mod diagnostic;
pub mod discover;
pub mod error;
pub mod ingest;
pub mod model;
pub mod pipeline;
pub mod progress;
pub mod reconstruct;
pub mod repair;
pub mod replay;
pub mod report;
pub mod session;
pub mod source;
pub mod text;

/// Runs rewind in this process as the binary would with `args` (the first one is the program
/// name), writing what it would print to `stdout` and `stderr`; returns the exit status. For
/// tests and the fuzz harness; the process-wide signal handler is not installed.
pub fn run_args<I, T>(
    args: I,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = write!(stderr, "{}", e.render());
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let color = cli.color.enabled();
    let (status, out, err) = commands::capture(|| match cli::dispatch(cli) {
        Ok(status) => status,
        Err(err) if err.is_broken_pipe() => cli::ExitStatus::Clean,
        Err(err) => {
            commands::print_error(&err, color);
            cli::ExitStatus::Error
        }
    });
    let _ = stdout.write_all(&out);
    let _ = stderr.write_all(&err);
    status as u8
}
