//! `rewind request STORE --session ID`: the request OpenCode sends for a stored session's next
//! turn, as rewind rebuilds it (`crate::formats::opencode::request`), one line per message with the stored
//! message and part ids each block comes from, and the provider rules it breaks
//! (`crate::protocols::provider`), each with the provider's error, verbatim. Given a Claude Code
//! transcript or a Codex rollout, the request that client sends on resume
//! (`crate::formats::claude_code::request`, `crate::formats::codex::request`), with the blocks' record ids, and, for Claude Code, the signed
//! thinking it would send changed (`thinking-modified`).

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use super::HumanOrJson;
use crate::core::ExitStatus;
use crate::core::Format;
use crate::core::RewindError;
use crate::formats::opencode::request::ProviderChoice;
use crate::pipeline::{self, Options};
use crate::protocols::provider::{self, Violation};
use crate::request::{Block, BlockKind, ModelRequest, Provider, Role};
use crate::text::InputText;

/// The rule that reports a broken provider rule in `rewind diagnose`.
/// The rule a violation is reported under by `diagnose`.
fn rule_of(v: &Violation) -> &'static str {
    match v.kind {
        provider::ViolationKind::OrphanResult => "tool-result-orphaned",
        provider::ViolationKind::ThinkingModified => "thinking-modified",
        provider::ViolationKind::DuplicateCallId => "tool-call-duplicate",
        _ => "tool-use-without-result",
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An OpenCode database, SQL dump, export or legacy storage folder; or a Claude Code
    /// transcript or a Codex rollout.
    #[arg(value_name = "STORE")]
    pub store: PathBuf,

    /// The session to rebuild (default: the store's only session).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    /// Whose rules to rebuild and check the request by (auto: from the session's model;
    /// Anthropic's, the stricter, when the model does not tell).
    #[arg(long, value_enum, default_value_t = ProviderArg::Auto)]
    pub provider: ProviderArg,

    /// Rebuild the request as this OpenCode version does (default: the store's newest). From 1.1 on,
    /// pending/running tools are sent as interrupted.
    #[arg(long, value_name = "VERSION")]
    pub opencode_version: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = HumanOrJson::Human)]
    pub format: HumanOrJson,
}

/// The providers a request can be shown for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderArg {
    Auto,
    Anthropic,
    #[value(name = "openai")]
    OpenAi,
}

/// A session of the store, as far as choosing one is concerned.
struct Listed {
    id: String,
    title: Option<String>,
}

/// The chosen session and its rebuilt request.
struct Chosen {
    id: String,
    title: Option<String>,
    /// The version given, else the one that created the session.
    version: Option<String>,
    request: Option<ModelRequest>,
    /// Auto found no provider in the session's model: Anthropic's request is shown.
    undecided: bool,
    /// The rules the request breaks.
    violations: Vec<Violation>,
    /// It is a client's transcript (one session, no `--session`).
    transcript: bool,
    /// The client that wrote it: `opencode`, `claude-code` or `codex`.
    client: &'static str,
}

/// The JSON document.
#[derive(Serialize)]
struct Document {
    session: String,
    provider: Option<&'static str>,
    /// `opencode`, `claude-code` or `codex`.
    client: &'static str,
    /// The version whose behaviour the rebuild follows.
    client_version: Option<String>,
    /// The same, for an OpenCode store only (kept for the readers of earlier output).
    opencode_version: Option<String>,
    messages: Vec<MessageDoc>,
    problems: Vec<ProblemDoc>,
}

#[derive(Serialize)]
struct MessageDoc {
    role: Role,
    message_id: Option<String>,
    blocks: Vec<BlockDoc>,
}

#[derive(Serialize)]
struct BlockDoc {
    #[serde(rename = "type")]
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    part_id: Option<String>,
}

#[derive(Serialize)]
struct ProblemDoc {
    rule: &'static str,
    message_index: usize,
    /// The offending block, when the rule points at one.
    block_index: Option<usize>,
    message_id: Option<String>,
    part_id: Option<String>,
    /// The tool call ids involved.
    ids: Vec<String>,
    explanation: String,
    /// The provider's error, verbatim.
    error: String,
}

pub fn run(mut args: Args) -> Result<ExitStatus, RewindError> {
    let named: Vec<String> = args.session.iter().cloned().collect();
    if let Some(mut found) = super::transcript_sessions(&args.store, &named)? {
        args.store = found.swap_remove(0);
    }
    let format = crate::formats::recognize::detect(&args.store)?;
    let transcript = format.is_client_transcript();
    if !is_store(format) && !transcript {
        return Err(RewindError::Usage(format!(
            "`{}` is {}, not an OpenCode session store (a database, SQL dump, export or storage folder) or a Claude Code or Codex transcript",
            args.store.display(),
            format.describe()
        )));
    }
    if transcript && (args.opencode_version.is_some() || args.provider != ProviderArg::Auto) {
        return Err(RewindError::Usage(format!(
            "`{}` is {}: its request is rebuilt as the client that wrote it does; --opencode-version and --provider are for OpenCode stores",
            args.store.display(),
            format.describe()
        )));
    }
    let mut options = Options {
        input: Some(format),
        provider: match args.provider {
            ProviderArg::Auto => ProviderChoice::Auto,
            ProviderArg::Anthropic => ProviderChoice::Anthropic,
            ProviderArg::OpenAi => ProviderChoice::OpenAi,
        },
        opencode_version: args.opencode_version.clone(),
        ..Options::default()
    };
    options.sessions.extend(args.session.iter().cloned());
    let mut listed: Vec<Listed> = Vec::new();
    let mut chosen: Option<Chosen> = None;
    let mut sources = crate::source::SourceMap::new();
    pipeline::analyze(&args.store, &options, &mut sources, &mut |_, unit| {
        let Some(analysis) = unit.primary() else {
            return Ok(());
        };
        for session in &analysis.sessions {
            listed.push(Listed {
                id: session.id.clone(),
                title: session.title.clone(),
            });
            // Without --session only a store's first session is kept: it is shown only when it
            // is the only one.
            if listed.len() > 1 && args.session.is_none() {
                chosen = None;
                continue;
            }
            if args.session.as_ref().is_some_and(|s| *s != session.id) {
                continue;
            }
            let mut requests: Vec<&ModelRequest> = analysis
                .requests
                .iter()
                .filter(|r| r.session_id.as_deref() == Some(session.id.as_str()))
                .collect();
            let undecided = args.provider == ProviderArg::Auto && requests.len() > 1;
            if undecided {
                requests.retain(|r| r.provider == Provider::Anthropic);
            }
            let request = requests.first().map(|r| (*r).clone());
            let mut violations = request.as_ref().map(provider::check).unwrap_or_default();
            if let (Some(req), Some(facts)) = (&request, analysis.transcript.as_deref()) {
                violations.extend(crate::checks::thinking::violations(req, facts));
            }
            chosen = Some(Chosen {
                id: session.id.clone(),
                title: session.title.clone(),
                version: args
                    .opencode_version
                    .clone()
                    .or_else(|| session.version.clone()),
                request,
                undecided,
                violations,
                transcript,
                client: if format.is_claude_code() {
                    "claude-code"
                } else if format.is_codex() {
                    "codex"
                } else if format.is_copilot() {
                    "copilot"
                } else if format.is_gemini() {
                    "gemini-cli"
                } else {
                    "opencode"
                },
            });
        }
        Ok(())
    })?;
    let Some(mut chosen) = chosen else {
        return choose(&args, &listed);
    };
    let violations = std::mem::take(&mut chosen.violations);
    // The command's standard output (captured when run in process, as `rewind mcp` does).
    let mut out = super::stdout();
    match args.format {
        HumanOrJson::Human => {
            // Lines wrapped to the terminal's width (see `report::layout`).
            let width = Some(crate::report::layout::width());
            let mut fitted = crate::report::layout::Fitted::new(&mut out, width);
            human(&mut fitted, &args, &chosen, &violations)?;
            fitted.flush()?;
        }
        HumanOrJson::Json => {
            let doc = serde_json::to_value(document(&chosen, &violations))
                .map_err(std::io::Error::from)?;
            crate::report::safe_json::to_writer_pretty(&mut out, &super::envelope(doc))?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitStatus::Clean)
}

fn is_store(format: Format) -> bool {
    format.is_opencode_store()
}

/// No session was chosen: the store has none, or several and no --session says which.
fn choose(args: &Args, listed: &[Listed]) -> Result<ExitStatus, RewindError> {
    let store = args.store.display();
    if listed.is_empty() {
        return Err(RewindError::Usage(format!("`{store}` has no sessions")));
    }
    Err(RewindError::Listed {
        message: format!(
            "`{store}` has {} sessions; choose one with --session ID:",
            listed.len()
        ),
        items: listed
            .iter()
            .map(|s| format!("{}  {}", s.id, s.title.as_deref().unwrap_or("-")))
            .collect(),
    })
}

/// A block's type, as the provider-neutral name the view uses.
fn kind_name(kind: &BlockKind) -> &str {
    match kind {
        BlockKind::Text => "text",
        BlockKind::Reasoning => "reasoning",
        BlockKind::ToolCall { .. } => "tool_use",
        BlockKind::ToolResult { .. } => "tool_result",
        BlockKind::Other(name) => name,
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The block a violation points at, in its message.
fn offending_block(req: &ModelRequest, v: &Violation) -> Option<usize> {
    let part = v.part_id.as_deref()?;
    req.messages
        .get(v.message_index)?
        .content
        .iter()
        .position(|b| b.part_id.as_deref() == Some(part))
}

/// A block in words: `tool_use toolu_1 read [prt_…]`.
fn describe_block(b: &Block) -> String {
    let mut s = kind_name(&b.kind).to_owned();
    match &b.kind {
        BlockKind::ToolCall { id, name } => {
            s.push_str(&format!(
                " {} {}",
                InputText::from(id).for_terminal(),
                InputText::from(name).for_terminal()
            ));
        }
        BlockKind::ToolResult { id, is_error } => {
            s.push_str(&format!(" {}", InputText::from(id).for_terminal()));
            if *is_error {
                s.push_str(" error");
            }
        }
        _ => {}
    }
    if let Some(p) = &b.part_id {
        s.push_str(&format!(" [{}]", InputText::from(p).for_terminal()));
    }
    s
}

fn human(
    out: &mut impl Write,
    args: &Args,
    chosen: &Chosen,
    violations: &[Violation],
) -> Result<(), RewindError> {
    let title = chosen
        .title
        .as_deref()
        .map(|t| format!(" \"{}\"", InputText::from(t).for_terminal()))
        .unwrap_or_default();
    writeln!(
        out,
        "session {}{title}",
        InputText::from(&chosen.id).for_terminal()
    )?;
    let Some(req) = &chosen.request else {
        writeln!(
            out,
            "the rebuilt request has no messages: OpenCode sends no history for this session"
        )?;
        return Ok(());
    };
    let note = if chosen.undecided {
        " (the session's model does not tell the provider: Anthropic's rules, the stricter, are shown; `--provider openai` shows OpenAI's)"
    } else {
        ""
    };
    // The origin says which OpenCode behaviour the rebuild followed, as the findings do.
    writeln!(
        out,
        "{}, for {}{note}",
        InputText::from(&req.origin).for_terminal(),
        req.provider.name()
    )?;
    let marked: Vec<(usize, Option<usize>)> = violations
        .iter()
        .map(|v| (v.message_index, offending_block(req, v)))
        .collect();
    for (i, m) in req.messages.iter().enumerate() {
        let blocks: Vec<String> = m
            .content
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let mark = if marked.contains(&(i, Some(k))) {
                    "✗ "
                } else {
                    ""
                };
                format!("{mark}{}", describe_block(b))
            })
            .collect();
        let mid = m
            .message_id
            .as_deref()
            .map(|id| InputText::from(id).for_terminal())
            .unwrap_or_else(|| "-".to_owned());
        writeln!(
            out,
            "{i:>3}  {:<9}  {mid}  {}",
            role_name(m.role),
            blocks.join(", ")
        )?;
        for (v, (_, at)) in violations
            .iter()
            .zip(&marked)
            .filter(|(_, (mi, _))| *mi == i)
        {
            let at = at.map(|k| format!("block {k}: ")).unwrap_or_default();
            writeln!(
                out,
                "     ✗ {at}{}: {}",
                rule_of(v),
                InputText::from(&v.explanation).for_terminal()
            )?;
            writeln!(
                out,
                "       {} answers 400: \"{}\"",
                req.provider.name(),
                InputText::from(&v.error).for_terminal()
            )?;
        }
    }
    let store = InputText::from(&args.store.display().to_string()).for_terminal();
    match violations.len() {
        0 => writeln!(
            out,
            "{} messages; the request keeps {}'s rules",
            req.messages.len(),
            req.provider.name()
        )?,
        n => writeln!(
            out,
            "{} messages; {n} broken rule{}: `rewind diagnose {store}{}` reports them, {}",
            req.messages.len(),
            if n == 1 { "" } else { "s" },
            if chosen.transcript {
                String::new()
            } else {
                format!(" --session {}", InputText::from(&chosen.id).for_terminal())
            },
            // A reused call id is left to a person: which call is the real one is a choice.
            if violations
                .iter()
                .all(|v| v.kind == provider::ViolationKind::DuplicateCallId)
            {
                "`rewind explain tool-call-duplicate` says how to fix it (rewind does not choose which call to keep)"
            } else {
                "`rewind repair` plans the fixes"
            },
        )?,
    }
    Ok(())
}

fn document(chosen: &Chosen, violations: &[Violation]) -> Document {
    let messages = chosen
        .request
        .iter()
        .flat_map(|r| &r.messages)
        .map(|m| MessageDoc {
            role: m.role,
            message_id: m.message_id.clone(),
            blocks: m
                .content
                .iter()
                .map(|b| {
                    let (id, name, is_error) = match &b.kind {
                        BlockKind::ToolCall { id, name } => {
                            (Some(id.clone()), Some(name.clone()), None)
                        }
                        BlockKind::ToolResult { id, is_error } => {
                            (Some(id.clone()), None, Some(*is_error))
                        }
                        _ => (None, None, None),
                    };
                    BlockDoc {
                        kind: kind_name(&b.kind).to_owned(),
                        id,
                        name,
                        is_error,
                        part_id: b.part_id.clone(),
                    }
                })
                .collect(),
        })
        .collect();
    let problems = violations
        .iter()
        .map(|v| ProblemDoc {
            rule: rule_of(v),
            message_index: v.message_index,
            block_index: chosen.request.as_ref().and_then(|r| offending_block(r, v)),
            message_id: v.message_id.clone(),
            part_id: v.part_id.clone(),
            ids: v.ids.clone(),
            explanation: v.explanation.clone(),
            error: v.error.clone(),
        })
        .collect();
    Document {
        session: chosen.id.clone(),
        provider: chosen.request.as_ref().map(|r| match r.provider {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Google => "google",
        }),
        client: chosen.client,
        client_version: chosen.version.clone(),
        opencode_version: chosen.version.clone().filter(|_| !chosen.transcript),
        messages,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: BlockKind, part: &str) -> Block {
        Block {
            kind,
            span: None,
            part_id: Some(part.into()),
        }
    }

    fn chosen(messages: Vec<crate::request::ModelMessage>) -> Chosen {
        Chosen {
            id: "ses_1".into(),
            title: None,
            version: None,
            request: Some(ModelRequest {
                provider: Provider::Anthropic,
                messages,
                span: None,
                origin: "test".into(),
                thinking: false,
                response: None,
                session_id: Some("ses_1".into()),
            }),
            undecided: false,
            violations: Vec::new(),
            transcript: false,
            client: "opencode",
        }
    }

    fn message(role: Role, content: Vec<Block>) -> crate::request::ModelMessage {
        crate::request::ModelMessage {
            role,
            content,
            span: None,
            message_id: Some("msg_1".into()),
        }
    }

    #[test]
    fn problems_point_at_the_offending_block() {
        let c = chosen(vec![
            message(
                Role::Assistant,
                vec![
                    block(
                        BlockKind::ToolCall {
                            id: "call_1".into(),
                            name: "read".into(),
                        },
                        "prt_1",
                    ),
                    block(BlockKind::Text, "prt_2"),
                ],
            ),
            message(
                Role::User,
                vec![block(
                    BlockKind::ToolResult {
                        id: "call_1".into(),
                        is_error: true,
                    },
                    "prt_1",
                )],
            ),
        ]);
        let violations = c.request.as_ref().map(provider::check).unwrap_or_default();
        let doc = serde_json::to_value(document(&c, &violations)).unwrap();
        assert_eq!(doc["provider"], "anthropic");
        assert_eq!(doc["messages"][0]["blocks"][0]["type"], "tool_use");
        assert_eq!(doc["messages"][1]["blocks"][0]["is_error"], true);
        assert_eq!(doc["problems"][0]["message_index"], 0);
        assert_eq!(
            doc["problems"][0]["block_index"], 1,
            "the text after the call"
        );
        assert_eq!(doc["problems"][0]["part_id"], "prt_2");
        // Fields a block does not have are left out.
        assert!(doc["messages"][0]["blocks"][1].get("id").is_none());
    }

    #[test]
    fn an_empty_request_has_no_provider() {
        let mut c = chosen(Vec::new());
        c.request = None;
        let doc = serde_json::to_value(document(&c, &[])).unwrap();
        assert_eq!(doc["provider"], serde_json::Value::Null);
        assert_eq!(doc["messages"], serde_json::json!([]));
    }
}
