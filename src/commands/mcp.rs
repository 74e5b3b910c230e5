//! `rewind mcp`: a Model Context Protocol server on standard input and output, so that an agent
//! can diagnose its own sessions. Each tool runs the command of the same name in process (its
//! arguments parsed by the command's own `Args`, so paths and values are checked as on the
//! command line) and returns the document that command's `--format json` prints, as the result's
//! structured content. An error is a tool result with `isError`, never the end of the server.
//!
//! Read-only unless asked: `repair` plans (`--dry-run`) unless the call says `apply: true`.
//! Standard input carries the protocol, so no tool reads it (`-`, pipes and devices are refused).

use std::ffi::OsString;
use std::path::Path;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::core::{ExitStatus, RewindError};
use crate::report::ColorChoice;
use crate::text::InputText;

#[derive(Debug, clap::Args)]
pub struct Args {}

/// What a client is told about the server when it connects.
const INSTRUCTIONS: &str = "rewind diagnoses AI coding-agent sessions (OpenCode/Kilo stores, Claude Code and Codex transcripts, agent logs, SSE captures, HTTP recordings): `diagnose` reports every finding with the rule and the exact place, `explain` documents a rule, `rules` lists them, `sessions` lists a store's sessions, `request` shows the request the client sends for a session's next turn, `repair` plans a fix (and applies it only with `apply: true`). Relative paths are resolved from the server's working folder.";

/// The commands a tool runs, parsed as on the command line.
#[derive(Debug, clap::Parser)]
#[command(no_binary_name = true)]
enum Call {
    Diagnose(super::diagnose::Args),
    Sessions(super::sessions::Args),
    Request(super::request::Args),
    Repair(super::repair::Args),
    Rules(super::rules::Args),
}

/// `diagnose`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiagnoseInput {
    #[schemars(
        description = "Agent logs, SSE captures, HTTP recordings, OpenCode/Kilo stores, Claude Code \
         transcripts or Codex rollouts to diagnose (files or folders)."
    )]
    pub paths: Vec<String>,
    /// Only these sessions of a session store (default: all).
    #[serde(default)]
    pub sessions: Vec<String>,
    /// Run only these rules (names as `rules` lists them).
    #[serde(default)]
    pub select: Vec<String>,
    /// Skip these rules.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// A rewind.toml to use (default: the one found from the server's working folder up).
    pub config: Option<String>,
}

/// `explain`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainInput {
    /// The rule's name, as `rules` lists it (e.g. `tool-use-without-result`).
    pub rule: String,
}

/// `rules`' input: none.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RulesInput {}

/// `sessions`' input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SessionsInput {
    #[schemars(
        description = "An OpenCode database, storage folder or export, OpenCode's data folder, or a \
         folder of Claude Code or Codex transcripts. Without it, this machine's stores \
         are listed."
    )]
    pub store: Option<String>,
}

/// `request`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RequestInput {
    #[schemars(
        description = "An OpenCode database, SQL dump, export or storage folder; or a Claude Code \
         transcript or a Codex rollout."
    )]
    pub store: String,
    /// The session to rebuild (default: the store's only session).
    pub session: Option<String>,
    /// Whose rules to check the request by: `auto` (default), `anthropic` or `openai`.
    pub provider: Option<String>,
}

/// `repair`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RepairInput {
    #[schemars(
        description = "An OpenCode database or export, a legacy storage folder, a Claude Code \
         transcript or a Codex rollout."
    )]
    pub store: String,
    /// Only these sessions (default: every session with a fixable finding).
    #[serde(default)]
    pub sessions: Vec<String>,
    #[schemars(
        description = "Write the repair (the store is changed in place, a backup kept). Without it, \
         the plan is returned and nothing is written."
    )]
    #[serde(default)]
    pub apply: bool,
}

/// The server: its tools.
#[derive(Debug, Clone)]
pub struct Server {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Server {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Diagnose sessions: every finding with its rule, severity and location.
    #[tool(
        description = "Diagnose agent logs, SSE captures, HTTP recordings, OpenCode/Kilo stores, Claude Code transcripts or Codex rollouts: every finding with its rule, severity, message and location (the document of `rewind diagnose --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn diagnose(&self, Parameters(input): Parameters<DiagnoseInput>) -> CallToolResult {
        let mut argv = args(&["diagnose", "--format", "json", "--no-summary"]);
        for (flag, values) in [
            ("--session", &input.sessions),
            ("--select", &input.select),
            ("--ignore", &input.ignore),
        ] {
            argv.extend(values.iter().map(|value| option(flag, value)));
        }
        argv.extend(input.config.iter().map(|c| option("--config", c)));
        if input.paths.is_empty() {
            return failure("give at least one path to diagnose");
        }
        argv.push("--".into());
        argv.extend(input.paths.iter().map(OsString::from));
        run_call(argv, input.paths.iter().chain(&input.config)).await
    }

    /// A rule's documentation.
    #[tool(
        description = "A rule's documentation: what it reports, why it matters, an example and how to fix it (the entry of `rewind rules --format json` for that rule).",
        annotations(read_only_hint = true)
    )]
    async fn explain(&self, Parameters(input): Parameters<ExplainInput>) -> CallToolResult {
        match input.rule.parse::<crate::checks::Rule>() {
            Ok(rule) => CallToolResult::structured(super::envelope(super::rules::entry(rule))),
            Err(_) => failure(
                &RewindError::UnknownRule {
                    hint: crate::checks::unknown_rule_hint(&input.rule),
                    rule: input.rule,
                }
                .message(),
            ),
        }
    }

    /// The rule catalogue.
    #[tool(
        description = "Every rule rewind checks, with its default severity, summary, fix and documentation (`rewind rules --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn rules(&self, Parameters(_): Parameters<RulesInput>) -> CallToolResult {
        run_call(args(&["rules", "--format", "json"]), std::iter::empty()).await
    }

    /// The sessions of a store.
    #[tool(
        description = "List the sessions of a store (or of this machine's OpenCode, Claude Code and Codex stores) with their size and findings (`rewind sessions --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn sessions(&self, Parameters(input): Parameters<SessionsInput>) -> CallToolResult {
        let mut argv = args(&["sessions", "--format", "json"]);
        if let Some(store) = &input.store {
            argv.push("--".into());
            argv.push(store.into());
        }
        run_call(argv, input.store.iter()).await
    }

    /// The request of a session's next turn.
    #[tool(
        description = "The request the client sends for a session's next turn, as rewind rebuilds it, block by block, with the provider rules it breaks (`rewind request --format json`).",
        annotations(read_only_hint = true)
    )]
    async fn request(&self, Parameters(input): Parameters<RequestInput>) -> CallToolResult {
        let mut argv = args(&["request", "--format", "json"]);
        argv.extend(input.session.iter().map(|s| option("--session", s)));
        argv.extend(input.provider.iter().map(|p| option("--provider", p)));
        argv.push("--".into());
        argv.push((&input.store).into());
        run_call(argv, std::iter::once(&input.store)).await
    }

    /// Repair a store: a plan, applied only when asked.
    #[tool(
        description = "Plan a fix for every fixable finding of an OpenCode store, a Claude Code transcript or a Codex rollout (`rewind repair --format json`). A dry run unless `apply` is true: only then is the store changed (in place, a backup kept).",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn repair(&self, Parameters(input): Parameters<RepairInput>) -> CallToolResult {
        let mut argv = args(&["repair", "--format", "json"]);
        if !input.apply {
            argv.push("--dry-run".into());
        }
        argv.extend(input.sessions.iter().map(|s| option("--session", s)));
        argv.push("--".into());
        argv.push((&input.store).into());
        run_call(argv, std::iter::once(&input.store)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rewind", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

fn args(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// `--flag=value`: one word, so that a value starting with `-` is not read as an option.
fn option(flag: &str, value: &str) -> OsString {
    format!("{flag}={value}").into()
}

/// A tool result that is an error: one line.
fn failure(message: &str) -> CallToolResult {
    let line = crate::text::cap_line(message, crate::core::MAX_MESSAGE);
    CallToolResult::error(vec![ContentBlock::text(format!("error: {line}"))])
}

/// Runs a command on a thread of the blocking pool (a diagnosis may take a while; the server
/// keeps answering meanwhile) after refusing the paths that would read standard input.
async fn run_call<'a>(
    argv: Vec<OsString>,
    paths: impl Iterator<Item = &'a String>,
) -> CallToolResult {
    for path in paths {
        if crate::ingest::input::is_one_shot(Path::new(path)) {
            return failure(&format!(
                "`{}` is standard input, a pipe or a device: standard input carries the protocol, so give a file or a folder",
                InputText::from(path).for_terminal()
            ));
        }
    }
    match tokio::task::spawn_blocking(move || call(argv)).await {
        Ok(result) => result,
        Err(e) => failure(&format!("the command stopped: {e}")),
    }
}

/// Parses `argv` as the command line would and runs the command with its output captured; the
/// JSON document it printed is the result.
fn call(argv: Vec<OsString>) -> CallToolResult {
    use clap::Parser;
    let parsed = match Call::try_parse_from(argv) {
        Ok(parsed) => parsed,
        Err(e) => {
            // clap's message: its first line says what is wrong.
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            return failure(first.trim_start_matches("error: "));
        }
    };
    let (status, out, err) = super::capture(|| {
        let result = match parsed {
            Call::Diagnose(a) => super::diagnose::run(a, ColorChoice::Never),
            Call::Sessions(a) => super::sessions::run(a),
            Call::Request(a) => super::request::run(a),
            Call::Repair(a) => super::repair::run(a),
            Call::Rules(a) => super::rules::run(a),
        };
        match result {
            Ok(status) => status,
            Err(e) => {
                super::print_error(&e, false);
                ExitStatus::Error
            }
        }
    });
    outcome(status, &out, &err)
}

/// The result of a command that exited with `status` after printing `out` and `err`: its JSON
/// document (an error result when the status is 2), with the lines it printed on standard error
/// as a second text block.
fn outcome(status: ExitStatus, out: &[u8], err: &[u8]) -> CallToolResult {
    let err = String::from_utf8_lossy(err);
    let err = err.trim_end();
    match serde_json::from_slice::<serde_json::Value>(out) {
        Ok(doc @ serde_json::Value::Object(_)) => {
            let mut result = if status == ExitStatus::Error {
                CallToolResult::structured_error(doc)
            } else {
                CallToolResult::structured(doc)
            };
            if !err.is_empty() {
                result.content.push(ContentBlock::text(err.to_owned()));
            }
            result
        }
        _ if !err.is_empty() => CallToolResult::error(vec![ContentBlock::text(err.to_owned())]),
        _ => failure("the command printed no JSON document"),
    }
}

/// Serves until the client closes standard input.
pub fn run(_args: Args) -> Result<ExitStatus, RewindError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(async {
        let service = Server::new()
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .map_err(|e| RewindError::Usage(format!("MCP: the client did not initialise: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| RewindError::Usage(format!("MCP: the server stopped: {e}")))?;
        Ok(ExitStatus::Clean)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(result: &CallToolResult) -> Vec<String> {
        result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect()
    }

    #[test]
    fn a_document_is_the_structured_result() {
        let result = outcome(ExitStatus::Findings, br#"{"version":1,"findings":[]}"#, b"");
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(serde_json::json!({"version": 1, "findings": []}))
        );
    }

    #[test]
    fn status_2_is_an_error_with_the_error_lines() {
        let result = outcome(
            ExitStatus::Error,
            br#"{"errors":[1]}"#,
            b"error: cannot read\n",
        );
        assert_eq!(result.is_error, Some(true));
        assert!(result.structured_content.is_some());
        assert_eq!(
            text(&result).last().map(String::as_str),
            Some("error: cannot read")
        );

        let result = outcome(ExitStatus::Error, b"", b"error: no such session\n");
        assert_eq!(result.is_error, Some(true));
        assert_eq!(text(&result), ["error: no such session"]);

        let result = outcome(ExitStatus::Clean, b"not json", b"");
        assert_eq!(result.is_error, Some(true));
    }

    #[test]
    fn options_are_one_word() {
        assert_eq!(option("--session", "-x"), OsString::from("--session=-x"));
    }

    #[test]
    fn arguments_are_parsed_as_the_command_line_parses_them() {
        let parsed = call(args(&[
            "repair",
            "--format",
            "json",
            "--dry-run",
            "--",
            "-",
        ]));
        // `-` reaches the command, which refuses standard input for a repair.
        assert_eq!(parsed.is_error, Some(true));
        let unknown = call(args(&["rules", "--format", "yaml"]));
        assert_eq!(unknown.is_error, Some(true));
        assert!(text(&unknown)[0].contains("yaml"), "{:?}", text(&unknown));
    }
}
