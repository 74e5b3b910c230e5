//! Command-line interface: the argument definitions and the dispatch to one module per command.

use clap::{Parser, Subcommand};

use crate::commands;
use crate::core::ExitStatus;
use crate::core::RewindError;
use crate::report::ColorChoice;

/// rewind: forensics and repair for AI coding-agent sessions.
///
/// Reads agent logs, SSE captures, HTTP recordings, OpenCode session stores, Claude Code
/// transcripts and Codex rollouts, replays them through the agent's stream processor and its
/// history reconstruction, and reports what broke — pointing at the exact bytes. Checked against
/// Claude Code 1.0.128–2.1.332, Codex 0.40.0–0.171.0, OpenCode 1.0.185–1.18.33 and Kilo 7.7.7.
#[derive(Debug, Parser)]
#[command(name = "rewind", version, about, long_about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// When to colour the output (auto: on a terminal, unless NO_COLOR or CLICOLOR=0; FORCE_COLOR
    /// or CLICOLOR_FORCE colour even in a pipe).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Diagnose logs, captures or session stores and report every finding.
    Diagnose(commands::diagnose::Args),
    /// Check recordings in CI: many files, rewind.toml, baselines, SARIF/GitHub/JUnit/JSON Lines.
    Check(commands::check::Args),
    /// Join the JSON, JSON Lines, SARIF or JUnit reports of `check --shard K/N` into the report
    /// one run prints, then apply a baseline.
    ///
    /// The merged report is the shards' format, byte for byte what one `rewind check` over every
    /// file prints; the exit status is that run's. People's formats (human, concise, github,
    /// html) are not merged: their snippets come from the recordings. See docs/fleet.md.
    Merge(commands::merge::Args),
    /// Replay a stream capture through an agent's processor: the timeline, then the diagnosis;
    /// `--compare P1 P2` shows where two processors' outcomes differ.
    Replay(commands::replay::Args),
    /// List the sessions of an OpenCode store with their size and findings.
    Sessions(commands::sessions::Args),
    /// Show the request OpenCode sends for a stored session's next turn, block by block, with
    /// the provider rules it breaks.
    Request(commands::request::Args),
    /// Repair an OpenCode store, a Claude Code transcript or a Codex rollout: plan a fix for every
    /// fixable finding, then apply it.
    Repair(commands::repair::Args),
    /// Write a copy of logs, transcripts, captures, recordings or session stores with their
    /// secrets (API keys, tokens, e-mail addresses, home folders…) replaced by placeholders,
    /// still diagnosable: `rewind diagnose` finds the same things on the copy.
    Redact(commands::redact::Args),
    /// List every rule with its default severity.
    Rules(commands::rules::Args),
    /// Print a rule's documentation: what it does, why it matters, an example, how to fix.
    Explain(commands::explain::Args),
    /// Serve rewind's commands to an agent over the Model Context Protocol (stdio): diagnose,
    /// explain, rules, sessions, request and repair (a dry run unless the call says `apply`).
    Mcp(commands::mcp::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(commands::completions::Args),
    /// Print the man page (roff): `rewind man > rewind.1`, or a command's: `rewind man diagnose`.
    Man(commands::completions::ManArgs),
}

/// Runs a parsed command line, as the last thing the process does.
pub fn run(cli: Cli) -> Result<ExitStatus, RewindError> {
    // A server runs command after command: each frees what it built.
    if !matches!(cli.command, Command::Mcp(_)) {
        crate::core::set_exits_after();
    }
    let result = dispatch(cli);
    // A signal ends the run with its own status, quietly, whatever the run came to meanwhile.
    crate::ingest::private::wait_if_signalled();
    crate::ingest::input::forget_all();
    result
}

/// Runs a parsed command line without the process-wide clean-up of [`run`] (removing the copies
/// of inputs read once).
pub fn dispatch(cli: Cli) -> Result<ExitStatus, RewindError> {
    let color = cli.color;
    match cli.command {
        Command::Diagnose(args) => commands::diagnose::run(args, color),
        Command::Check(args) => commands::check::run(args, color),
        Command::Merge(args) => commands::merge::run(args, color),
        Command::Replay(args) => commands::replay::run(args, color),
        Command::Sessions(args) => commands::sessions::run(args),
        Command::Request(args) => commands::request::run(args),
        Command::Repair(args) => commands::repair::run(args),
        Command::Redact(args) => commands::redact::run(args),
        Command::Rules(args) => commands::rules::run(args),
        Command::Explain(args) => commands::explain::run(args),
        Command::Mcp(args) => commands::mcp::run(args),
        Command::Completions(args) => commands::completions::run(args),
        Command::Man(args) => commands::completions::man(args),
    }
}
