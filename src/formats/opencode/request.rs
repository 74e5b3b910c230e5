//! What OpenCode sends the model when a stored session is resumed: its `toModelMessages`
//! (stored messages → AI SDK UI messages) followed by the AI SDK's `convertToModelMessages`
//! (UI messages → model messages), as `opencode-storage.md` §2.5–2.7 describe them.
//!
//! * `filterCompacted`: only the history from the last completed compaction on is replayed; a
//!   compaction with a `tail_start_id` also keeps the messages from that one on (from 1.14 on,
//!   [`version::COMPACTION_TAIL_SINCE`]), sent after the summary from 1.14.41 on
//!   (`[compaction, summary, tail…, newer…]`, [`version::COMPACTION_SUMMARY_FIRST_SINCE`]) and
//!   where they are stored before (`[tail…, compaction, summary, newer…]`).
//! * Sessions of the v2 runtime (`Session::runtime_v2`) follow its `toLLMMessages`: history from
//!   the latest `compaction` row on, failed steps sent, unfinished calls sent without a result.
//! * Messages with no parts are skipped. An assistant message with an `error` is skipped, unless
//!   the error is `MessageAbortedError` and the message has a part other than `step-start` or
//!   `reasoning`.
//! * User parts: text (not `ignored`), files (not `text/plain` or directories), compaction and
//!   subtask (both become text). Assistant parts, in stored (id) order: text, reasoning,
//!   `step-start` (the only block separator) and tools; the others are not sent.
//! * Tool states: `completed` → a result; `error` → an error result (or the partial output of an
//!   interrupted call); `pending`/`running` → an "[Tool execution was interrupted]" error result
//!   from OpenCode 1.1 on ([`version::INTERRUPTED_RESULT_SINCE`]), nothing before; an invalid
//!   status → nothing. Provider-executed tools carry their result inline and are not paired.
//! * Each block of an assistant message becomes one `assistant` model message followed by one
//!   `tool` message with the results of the block's tools.
//! * Empty text is not always sent: OpenCode drops empty text and reasoning blocks for Anthropic
//!   (and the messages left empty), and the AI SDK drops an assistant's empty text that carries
//!   no provider metadata, for every provider. Whitespace is sent.
//!
//! The provider is chosen from the model the next prompt would use (the last user message's
//! model, else the last assistant's): Anthropic for `anthropic` providers or Claude models (a
//! gateway such as `openrouter` or `opencode` forwards a Claude model to Anthropic), OpenAI's rules
//! for every other named model (`openai`, `azure`, an OpenAI-compatible provider, a gateway's
//! other models: none of them goes through Anthropic's API), and both rule sets when the session
//! names no model. For Anthropic the messages are grouped the way its API receives them:
//! consecutive assistant messages merge, and `tool` messages merge into the following user turn;
//! from OpenCode 1.18.26 on ([`version::ANTHROPIC_TOOL_USE_LAST_SINCE`]) the bundled
//! `@ai-sdk/anthropic` then moves each assistant message's `tool_use` blocks after its other
//! blocks (up to the next thinking block), so a stored step `[tool, text]` is sent as
//! `[text, tool_use]` and is well-formed. OpenAI's rules never need that: text and tool calls
//! share an assistant message, the reasoning in its `reasoning_content`, the text in its
//! `content` and the calls in its `tool_calls`, which is how the OpenAI view lists them (in that
//! order); each tool result is a `tool` message of its own.
//!
//! [`version::INTERRUPTED_RESULT_SINCE`]: crate::model::version::INTERRUPTED_RESULT_SINCE
//! [`version::ANTHROPIC_TOOL_USE_LAST_SINCE`]: crate::model::version::ANTHROPIC_TOOL_USE_LAST_SINCE
//! [`version::COMPACTION_TAIL_SINCE`]: crate::model::version::COMPACTION_TAIL_SINCE
//! [`version::COMPACTION_SUMMARY_FIRST_SINCE`]: crate::model::version::COMPACTION_SUMMARY_FIRST_SINCE

use std::collections::HashSet;

use serde_json::Value;

use crate::formats::opencode::db::Schema;
use crate::model::{MessageBody, PartBody, ToolState, version};
use crate::request::{Block, BlockKind, ModelMessage, ModelRequest, Provider, Role};
use crate::session::{Analysis, Compaction, Message, Session};

/// Which provider rules the rebuilt requests are checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderChoice {
    /// From the session's model (both rule sets when the provider is neither).
    #[default]
    Auto,
    Anthropic,
    #[value(name = "openai")]
    OpenAi,
    /// Both rule sets.
    Both,
}

/// How the request is rebuilt.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Pending/running tools get an "[Tool execution was interrupted]" result (OpenCode ≥ 1.1).
    pub interrupted_results: bool,
    /// Anthropic requests carry each assistant message's `tool_use` blocks after its other
    /// blocks (OpenCode ≥ 1.18.26, [`version::ANTHROPIC_TOOL_USE_LAST_SINCE`]).
    pub tool_use_last: bool,
    pub provider: ProviderChoice,
    /// The session is the v2 runtime's (`session_message`): its failed steps are sent, and its
    /// unfinished tools are calls without a result.
    pub runtime_v2: bool,
    /// A compaction's retained tail is kept ([`version::COMPACTION_TAIL_SINCE`]).
    pub compaction_tail: bool,
    /// The summary is sent before the retained tail
    /// ([`version::COMPACTION_SUMMARY_FIRST_SINCE`]).
    pub summary_first: bool,
    /// The store is Kilo's (`kilo.db`): its sessions are rebuilt by the OpenCode rules its
    /// version follows (Kilo's own numbering, 7.x, compares above every OpenCode release), and
    /// the request says Kilo sends it.
    pub kilo: bool,
}

impl Options {
    /// How a store's sessions are rebuilt: as `version` (given, else the store's newest session
    /// version) does; with neither, from what the store's migration journal says (the
    /// `migration` journal came with the core package, after the interrupted-result change).
    /// Without a version, `tool_use` blocks stay where they are stored (the older behaviour).
    pub fn for_store(
        version: Option<&str>,
        schema: Option<&Schema>,
        provider: ProviderChoice,
    ) -> Options {
        let parsed = version.and_then(version::parse);
        let core = schema.is_none_or(|s| s.journal.table != Some("__drizzle_migrations"));
        let since = |v: (u64, u64, u64)| parsed.map_or(core, |p| p >= v);
        Options {
            interrupted_results: since(version::INTERRUPTED_RESULT_SINCE),
            tool_use_last: parsed.is_some_and(|v| v >= version::ANTHROPIC_TOOL_USE_LAST_SINCE),
            provider,
            runtime_v2: false,
            compaction_tail: since(version::COMPACTION_TAIL_SINCE),
            summary_first: since(version::COMPACTION_SUMMARY_FIRST_SINCE),
            kilo: schema.is_some_and(|s| s.kilo),
        }
    }

    /// The releases whose behaviour these options follow, for the request's origin.
    fn releases(&self) -> &'static str {
        if self.runtime_v2 {
            return if self.kilo {
                "Kilo, by OpenCode's v2 runtime,"
            } else {
                "OpenCode's v2 runtime"
            };
        }
        match (self.kilo, self.interrupted_results, self.tool_use_last) {
            (false, _, true) => "OpenCode ≥ 1.18.26",
            (false, true, false) => "OpenCode 1.1 to 1.18.25",
            (false, false, false) => "OpenCode < 1.1",
            (true, _, true) => "Kilo, by the rules of OpenCode ≥ 1.18.26,",
            (true, true, false) => "Kilo, by the rules of OpenCode 1.1 to 1.18.25,",
            (true, false, false) => "Kilo, by the rules of OpenCode < 1.1,",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            interrupted_results: true,
            tool_use_last: true,
            provider: ProviderChoice::Auto,
            runtime_v2: false,
            compaction_tail: true,
            summary_first: true,
            kilo: false,
        }
    }
}

/// Adds to `analysis.requests` the request each session would send next.
pub fn rebuild(analysis: &mut Analysis, options: &Options) {
    let mut requests = Vec::new();
    let mut compactions = Vec::with_capacity(analysis.sessions.len());
    for session in &analysis.sessions {
        let history = history(session, options);
        compactions.push(compacted_away(session, &history));
        let runtime = Options {
            runtime_v2: true,
            interrupted_results: false,
            ..*options
        };
        let options = if session.runtime_v2 {
            &runtime
        } else {
            options
        };
        let version = options.releases();
        for provider in providers(session, options.provider) {
            let messages = to_model_messages_for(&history, options, Some(provider));
            if messages.is_empty() {
                continue;
            }
            let msgs = match provider {
                Provider::Anthropic => {
                    let grouped = group_for_anthropic(messages);
                    if options.tool_use_last {
                        grouped.into_iter().map(tool_use_last).collect()
                    } else {
                        grouped
                    }
                }
                // OpenCode's requests are rebuilt for the two providers above only.
                Provider::OpenAi | Provider::Google => {
                    messages.into_iter().flat_map(as_chat_completions).collect()
                }
            };
            requests.push(ModelRequest {
                provider,
                messages: msgs,
                span: None,
                origin: format!(
                    "the request rebuilt from session {} (as {version} sends it)",
                    session.id
                ),
                thinking: provider == Provider::Anthropic && thinking(&history),
                response: None,
                session_id: Some(session.id.clone()),
            });
        }
    }
    analysis.requests.extend(requests);
    for (session, compaction) in analysis.sessions.iter_mut().zip(compactions) {
        session.compaction = compaction;
    }
}

/// What `@ai-sdk/anthropic` (≥ 3.0.86) does to an assistant message: within each run of blocks
/// between thinking blocks, the `tool_use` blocks move after the others, in their order.
fn tool_use_last(mut m: ModelMessage) -> ModelMessage {
    if m.role != Role::Assistant {
        return m;
    }
    let mut out = Vec::with_capacity(m.content.len());
    let mut calls = Vec::new();
    for b in m.content.drain(..) {
        match b.kind {
            BlockKind::ToolCall { .. } => calls.push(b),
            BlockKind::Reasoning => {
                out.append(&mut calls);
                out.push(b);
            }
            _ => out.push(b),
        }
    }
    out.append(&mut calls);
    m.content = out;
    m
}

/// A model message as Chat Completions carries it. An assistant message holds its reasoning in
/// `reasoning_content`, its text in `content` and its calls in `tool_calls`, which the wire
/// format lists in that order whatever order the parts were stored in. Each tool result is a
/// `tool` message of its own.
fn as_chat_completions(mut m: ModelMessage) -> Vec<ModelMessage> {
    match m.role {
        Role::Assistant => {
            let rank = |b: &Block| match b.kind {
                BlockKind::Reasoning => 0,
                BlockKind::ToolCall { .. } => 2,
                _ => 1,
            };
            // A stable sort: blocks of one kind keep their order.
            m.content.sort_by_key(rank);
            vec![m]
        }
        Role::Tool if m.content.len() > 1 => m
            .content
            .drain(..)
            .map(|b| ModelMessage {
                role: Role::Tool,
                content: vec![b],
                span: m.span,
                message_id: m.message_id.clone(),
            })
            .collect(),
        _ => vec![m],
    }
}

/// The messages OpenCode replays (§2.7), in the order it sends them. Walking from the newest
/// message back, it stops at the user message of the last completed compaction (one whose
/// summary answered it with a `finish` and no `error`). A compaction part with a
/// `tail_start_id` keeps the uncompacted tail from that message on (`options.compaction_tail`):
/// the walk goes on back to it, and with `options.summary_first` the summary is then sent before
/// the tail (`[compaction, summary, tail…, newer…]`). A `tail_start_id` that is not in the
/// history keeps everything.
pub fn filter_compacted<'m>(messages: &'m [Message], options: &Options) -> Vec<&'m Message> {
    fn compaction(m: &Message) -> Option<&crate::model::CompactionPart> {
        m.parts.iter().find_map(|p| match &p.part.body {
            PartBody::Compaction(c) => Some(c.as_ref()),
            _ => None,
        })
    }
    let mut summarized: HashSet<&str> = HashSet::new();
    let mut retain: Option<&str> = None;
    let mut start = 0;
    for (i, m) in messages.iter().enumerate().rev() {
        if let Some(r) = retain {
            if m.id == r {
                start = i;
                break;
            }
            continue;
        }
        let Some(info) = &m.info else {
            continue;
        };
        match &info.body {
            MessageBody::User(_) if summarized.contains(m.id.as_str()) => {
                let Some(c) = compaction(m) else {
                    continue;
                };
                // An empty id is no tail (OpenCode tests it for truth).
                let tail = c
                    .tail_start_id
                    .as_deref()
                    .filter(|_| options.compaction_tail);
                match tail.filter(|t| !t.is_empty()) {
                    Some(tail) if tail != m.id => retain = Some(tail),
                    _ => {
                        start = i;
                        break;
                    }
                }
            }
            MessageBody::Assistant(a)
                if a.summary == Some(true) && a.finish.is_some() && a.error.is_none() =>
            {
                summarized.insert(a.parent_id.as_str());
            }
            _ => {}
        }
    }
    let result: Vec<&Message> = messages[start..].iter().collect();
    if !(options.compaction_tail && options.summary_first) {
        return result;
    }
    // The summary goes before the retained tail.
    let has_tail = |m: &Message| {
        matches!(&m.info, Some(i) if matches!(i.body, MessageBody::User(_)))
            && compaction(m).is_some_and(|c| c.tail_start_id.is_some())
    };
    let Some(at) = result.iter().rposition(|m| has_tail(m)) else {
        return result;
    };
    let marker = result[at];
    let summary = result.iter().enumerate().skip(at + 1).position(|(_, m)| {
        matches!(&m.info, Some(i) if matches!(&i.body, MessageBody::Assistant(a)
            if a.summary == Some(true) && a.parent_id == marker.id))
    });
    let tail = compaction(marker)
        .and_then(|c| c.tail_start_id.as_deref())
        .and_then(|t| result.iter().position(|m| m.id == t));
    match (tail, summary.map(|k| k + at + 1)) {
        (Some(tail), Some(summary)) if tail < at => {
            let mut out = Vec::with_capacity(result.len());
            out.extend_from_slice(&result[at..=summary]);
            out.extend_from_slice(&result[tail..at]);
            out.extend_from_slice(&result[summary + 1..]);
            out
        }
        _ => result,
    }
}

/// The messages the v2 runtime replays: from its latest `compaction` row on, in row order.
fn history_v2(messages: &[Message]) -> Vec<&Message> {
    let start = messages
        .iter()
        .rposition(|m| {
            m.parts
                .iter()
                .any(|p| matches!(p.part.body, PartBody::Compaction(_)))
        })
        .unwrap_or(0);
    messages[start..].iter().collect()
}

/// The messages of a session the next request sends, as OpenCode replays them.
pub fn history<'s>(session: &'s Session, options: &Options) -> Vec<&'s Message> {
    if session.runtime_v2 {
        history_v2(&session.messages)
    } else {
        filter_compacted(&session.messages, options)
    }
}

/// What a compaction leaves out of the next request (`history`): the message holding the
/// compaction and the messages stored before it that are not sent. `None` when nothing is
/// left out.
fn compacted_away(session: &Session, history: &[&Message]) -> Option<Compaction> {
    if history.len() == session.messages.len() {
        return None;
    }
    let sent: HashSet<&str> = history.iter().map(|m| m.id.as_str()).collect();
    let is_compaction = |m: &Message| {
        m.parts
            .iter()
            .any(|p| matches!(p.part.body, PartBody::Compaction(_)))
    };
    // The compaction that cut the history: the last one among the messages sent.
    let at = session
        .messages
        .iter()
        .rposition(|m| sent.contains(m.id.as_str()) && is_compaction(m))?;
    let left_out: HashSet<String> = session.messages[..at]
        .iter()
        .filter(|m| !sent.contains(m.id.as_str()))
        .map(|m| m.id.clone())
        .collect();
    (!left_out.is_empty()).then(|| Compaction {
        at: session.messages[at].id.clone(),
        left_out,
    })
}

/// The model the next prompt would use: `(providerID, modelID)`.
fn target_model(session: &Session) -> Option<(&str, &str)> {
    session
        .messages
        .iter()
        .rev()
        .find_map(|m| match &m.info.as_ref()?.body {
            MessageBody::User(u) => u
                .model
                .as_ref()
                .map(|r| (r.provider_id.as_str(), r.model_id.as_str())),
            MessageBody::Assistant(a) => Some((a.provider_id.as_str(), a.model_id.as_str())),
            MessageBody::Unknown { .. } => None,
        })
}

fn providers(session: &Session, choice: ProviderChoice) -> Vec<Provider> {
    match choice {
        ProviderChoice::Anthropic => vec![Provider::Anthropic],
        ProviderChoice::OpenAi => vec![Provider::OpenAi],
        ProviderChoice::Both => vec![Provider::Anthropic, Provider::OpenAi],
        ProviderChoice::Auto => match target_model(session).and_then(|(p, m)| classify(p, m)) {
            Some(p) => vec![p],
            None => vec![Provider::Anthropic, Provider::OpenAi],
        },
    }
}

/// Which rules a provider/model follows: Anthropic's for Anthropic providers and Claude models,
/// OpenAI's for any other named model; none when neither is named.
pub fn classify(provider: &str, model: &str) -> Option<Provider> {
    let p = provider.to_ascii_lowercase();
    let m = model.to_ascii_lowercase();
    if p.contains("anthropic") || m.contains("claude") {
        return Some(Provider::Anthropic);
    }
    (!p.trim().is_empty() || !m.trim().is_empty()).then_some(Provider::OpenAi)
}

/// Extended thinking is on when reasoning parts carry Anthropic signatures.
fn thinking(history: &[&Message]) -> bool {
    history
        .iter()
        .flat_map(|m| &m.parts)
        .any(|p| match &p.part.body {
            PartBody::Reasoning(r) => r
                .metadata
                .as_ref()
                .and_then(|md| md.get("anthropic"))
                .and_then(|a| a.get("signature"))
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty()),
            _ => false,
        })
}

/// A UI message part, as far as pairing is concerned.
enum UiPart {
    StepStart,
    Block(Block),
    /// An assistant's empty text that the AI SDK leaves out of the message's content when it
    /// builds the prompt: the message itself is still sent (OpenAI-compatible providers get
    /// `"content": ""`).
    EmptyText,
    Tool {
        call: Block,
        result: Option<Block>,
    },
}

/// OpenCode's `toModelMessages` and the AI SDK's `convertToModelMessages`, for no provider in
/// particular (empty text is dropped only where every provider's path drops it).
#[cfg(test)]
pub fn to_model_messages(history: &[Message], options: &Options) -> Vec<ModelMessage> {
    let history: Vec<&Message> = history.iter().collect();
    to_model_messages_for(&history, options, None)
}

/// Whether a text or reasoning part's empty text is dropped before the request is sent:
/// OpenCode drops empty text and reasoning blocks for Anthropic (`ProviderTransform`'s
/// `normalizeMessages`, with the messages they leave empty), and the AI SDK's
/// `convertToLanguageModelPrompt` drops an assistant's empty text that carries no provider
/// options (OpenCode passes the part's `metadata` as those). Only `""` is dropped: text of
/// whitespace is sent.
fn dropped_empty(
    text: &str,
    metadata: Option<&serde_json::Map<String, Value>>,
    assistant_text: bool,
    provider: Option<Provider>,
) -> bool {
    if !text.is_empty() {
        return false;
    }
    provider == Some(Provider::Anthropic) || (assistant_text && metadata.is_none())
}

/// [`to_model_messages`] as it reaches `provider`.
fn to_model_messages_for(
    history: &[&Message],
    options: &Options,
    provider: Option<Provider>,
) -> Vec<ModelMessage> {
    let mut out = Vec::new();
    for m in history {
        if m.parts.is_empty() {
            continue;
        }
        let Some(info) = &m.info else {
            continue;
        };
        let span = m.span.map(|s| s.head());
        match &info.body {
            MessageBody::User(_) => {
                let content: Vec<Block> = m
                    .parts
                    .iter()
                    .filter_map(|p| {
                        let kind = match &p.part.body {
                            PartBody::Text(t)
                                if t.ignored != Some(true)
                                    && !dropped_empty(
                                        &t.text,
                                        t.metadata.as_ref(),
                                        false,
                                        provider,
                                    ) =>
                            {
                                BlockKind::Text
                            }
                            PartBody::File(f)
                                if f.mime != "text/plain"
                                    && f.mime != "application/x-directory" =>
                            {
                                BlockKind::Other("file".into())
                            }
                            PartBody::Compaction(_) | PartBody::Subtask(_) => BlockKind::Text,
                            _ => return None,
                        };
                        Some(block(kind, p))
                    })
                    .collect();
                if !content.is_empty() {
                    out.push(ModelMessage {
                        role: Role::User,
                        content,
                        span,
                        message_id: Some(m.id.clone()),
                    });
                }
            }
            MessageBody::Assistant(a) => {
                // The v2 runtime sends a failed step's content too.
                if let Some(err) = a.error.as_ref().filter(|_| !options.runtime_v2) {
                    let has_content = m.parts.iter().any(|p| {
                        !matches!(p.part.body, PartBody::StepStart(_) | PartBody::Reasoning(_))
                    });
                    if !(err.name == "MessageAbortedError" && has_content) {
                        continue;
                    }
                }
                let ui: Vec<UiPart> = m
                    .parts
                    .iter()
                    .filter_map(|p| ui_part(p, options, provider))
                    .collect();
                if ui.iter().all(|u| matches!(u, UiPart::StepStart)) {
                    continue;
                }
                convert_assistant(&m.id, span, ui, &mut out);
            }
            MessageBody::Unknown { .. } => {}
        }
    }
    out
}

fn block(kind: BlockKind, p: &crate::session::PartRecord) -> Block {
    Block {
        kind,
        span: p.last().map(|o| o.span.head()),
        part_id: Some(p.part.id.clone()),
    }
}

fn ui_part(
    p: &crate::session::PartRecord,
    options: &Options,
    provider: Option<Provider>,
) -> Option<UiPart> {
    match &p.part.body {
        PartBody::Text(t) if dropped_empty(&t.text, t.metadata.as_ref(), true, provider) => {
            // OpenCode drops it, and the message it empties, for Anthropic; elsewhere only the
            // AI SDK drops the block.
            (provider != Some(Provider::Anthropic)).then_some(UiPart::EmptyText)
        }
        PartBody::Reasoning(r) if dropped_empty(&r.text, r.metadata.as_ref(), false, provider) => {
            None
        }
        PartBody::Text(_) => Some(UiPart::Block(block(BlockKind::Text, p))),
        PartBody::Reasoning(_) => Some(UiPart::Block(block(BlockKind::Reasoning, p))),
        PartBody::StepStart(_) => Some(UiPart::StepStart),
        PartBody::Tool(t) => {
            let provider_executed = t
                .metadata
                .as_ref()
                .and_then(|m| m.get("providerExecuted"))
                .and_then(Value::as_bool)
                == Some(true);
            let result = |is_error: bool| {
                Some(block(
                    BlockKind::ToolResult {
                        id: t.call_id.clone(),
                        is_error,
                    },
                    p,
                ))
            };
            let result = match &t.state {
                ToolState::Completed(_) => result(false),
                ToolState::Error(f) => {
                    let partial = f.metadata.as_ref().is_some_and(|md| {
                        md.get("interrupted").and_then(Value::as_bool) == Some(true)
                            && md.get("output").is_some_and(Value::is_string)
                    });
                    result(!partial)
                }
                ToolState::Pending(_) | ToolState::Running(_) if options.interrupted_results => {
                    result(true)
                }
                // The v2 runtime sends an unfinished call, without a result.
                ToolState::Pending(_) | ToolState::Running(_) if options.runtime_v2 => None,
                ToolState::Pending(_) | ToolState::Running(_) | ToolState::Invalid { .. } => {
                    return None;
                }
            };
            if provider_executed {
                return Some(UiPart::Block(block(
                    BlockKind::Other("provider-executed tool".into()),
                    p,
                )));
            }
            Some(UiPart::Tool {
                call: block(
                    BlockKind::ToolCall {
                        id: t.call_id.clone(),
                        name: t.tool.clone(),
                    },
                    p,
                ),
                result,
            })
        }
        _ => None,
    }
}

/// Splits an assistant UI message at each `step-start`: one assistant message per block, then
/// one tool message with the block's results.
fn convert_assistant(
    id: &str,
    span: Option<crate::source::Span>,
    ui: Vec<UiPart>,
    out: &mut Vec<ModelMessage>,
) {
    let mut content: Vec<Block> = Vec::new();
    let mut results: Vec<Block> = Vec::new();
    let mut has_tools = false;
    let mut emptied = false;
    let flush = |content: &mut Vec<Block>,
                 results: &mut Vec<Block>,
                 has_tools: &mut bool,
                 emptied: &mut bool,
                 out: &mut Vec<ModelMessage>| {
        if content.is_empty() && !std::mem::take(emptied) {
            return;
        }
        *emptied = false;
        out.push(ModelMessage {
            role: Role::Assistant,
            content: std::mem::take(content),
            span,
            message_id: Some(id.to_owned()),
        });
        // A block whose calls all went unanswered (the v2 runtime's) has no tool message.
        if *has_tools && !results.is_empty() {
            out.push(ModelMessage {
                role: Role::Tool,
                content: std::mem::take(results),
                span,
                message_id: Some(id.to_owned()),
            });
        }
        results.clear();
        *has_tools = false;
    };
    for u in ui {
        match u {
            UiPart::StepStart => flush(
                &mut content,
                &mut results,
                &mut has_tools,
                &mut emptied,
                out,
            ),
            UiPart::Block(b) => content.push(b),
            UiPart::EmptyText => emptied = true,
            UiPart::Tool { call, result } => {
                content.push(call);
                has_tools = true;
                results.extend(result);
            }
        }
    }
    flush(
        &mut content,
        &mut results,
        &mut has_tools,
        &mut emptied,
        out,
    );
}

/// Groups model messages the way Anthropic's API receives them: consecutive assistant messages
/// merge; tool results and user content merge into one user message.
pub fn group_for_anthropic(messages: Vec<ModelMessage>) -> Vec<ModelMessage> {
    let mut out: Vec<ModelMessage> = Vec::with_capacity(messages.len());
    for mut m in messages {
        let role = match m.role {
            Role::Tool => Role::User,
            r => r,
        };
        if role == Role::System {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.append(&mut m.content),
            _ => {
                m.role = role;
                out.push(m);
            }
        }
    }
    out.retain(|m| !m.content.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MessageInfo, Part};
    use crate::protocols::provider;
    use crate::session::{Observation, PartRecord};
    use crate::source::{FileId, Span};
    use serde_json::json;

    fn part(id: &str, v: Value) -> PartRecord {
        let mut part = Part::from_value(&v);
        part.id = id.into();
        PartRecord {
            part,
            history: vec![Observation {
                seq: 0,
                span: Span::new(FileId(0), 0, 1),
                status: None,
                status_span: None,
            }],
        }
    }

    fn message(id: &str, info: Value, parts: Vec<PartRecord>) -> Message {
        Message {
            id: id.into(),
            info: Some(Box::new(MessageInfo::from_value(&info))),
            parts,
            ..Message::default()
        }
    }

    fn user(id: &str) -> Message {
        message(
            id,
            json!({"role": "user", "model": {"providerID": "anthropic", "modelID": "claude"}}),
            vec![part("prt_u", json!({"type": "text", "text": "hi"}))],
        )
    }

    fn tool(id: &str, call: &str, status: &str) -> PartRecord {
        part(
            id,
            json!({"type": "tool", "tool": "read", "callID": call, "state": {"status": status, "input": {}}}),
        )
    }

    fn assistant(id: &str, parts: Vec<PartRecord>) -> Message {
        message(
            id,
            json!({"role": "assistant", "providerID": "anthropic", "modelID": "claude"}),
            parts,
        )
    }

    fn text(id: &str) -> PartRecord {
        part(id, json!({"type": "text", "text": "t"}))
    }

    fn step() -> PartRecord {
        part("prt_s", json!({"type": "step-start"}))
    }

    fn shape(msgs: &[ModelMessage]) -> Vec<String> {
        msgs.iter()
            .map(|m| {
                let blocks: Vec<String> = m
                    .content
                    .iter()
                    .map(|b| match &b.kind {
                        BlockKind::Text => "text".to_owned(),
                        BlockKind::Reasoning => "reasoning".to_owned(),
                        BlockKind::ToolCall { id, .. } => format!("call {id}"),
                        BlockKind::ToolResult { id, is_error } => {
                            format!("{} {id}", if *is_error { "error" } else { "result" })
                        }
                        BlockKind::Other(o) => o.clone(),
                    })
                    .collect();
                format!("{:?}: {}", m.role, blocks.join(", "))
            })
            .collect()
    }

    #[test]
    fn pr_16751_message_puts_text_after_tool_use() {
        let history = vec![
            user("msg_1"),
            assistant(
                "msg_2",
                vec![
                    step(),
                    text("prt_a"),
                    tool("prt_b", "toolu_A", "error"),
                    text("prt_c"),
                    tool("prt_d", "toolu_B", "completed"),
                    part("prt_e", json!({"type": "step-finish"})),
                ],
            ),
        ];
        let msgs = to_model_messages(&history, &Options::default());
        assert_eq!(
            shape(&msgs),
            [
                "User: text",
                "Assistant: text, call toolu_A, text, call toolu_B",
                "Tool: error toolu_A, result toolu_B"
            ]
        );
        let req = ModelRequest {
            provider: Provider::Anthropic,
            messages: group_for_anthropic(msgs.clone()),
            span: None,
            origin: "t".into(),
            thinking: false,
            response: None,
            session_id: None,
        };
        let v = provider::check(&req);
        assert_eq!(v.len(), 1);
        assert!(v[0].error.starts_with("messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_A."));
        assert_eq!(v[0].part_id.as_deref(), Some("prt_c"));
    }

    #[test]
    fn step_starts_split_blocks_and_pending_depends_on_version() {
        let history = vec![
            user("msg_1"),
            assistant(
                "msg_2",
                vec![
                    step(),
                    tool("prt_b", "c1", "completed"),
                    step(),
                    text("prt_c"),
                    tool("prt_d", "c2", "pending"),
                ],
            ),
        ];
        let new = to_model_messages(&history, &Options::default());
        assert_eq!(
            shape(&group_for_anthropic(new.clone())),
            [
                "User: text",
                "Assistant: call c1",
                "User: result c1",
                "Assistant: text, call c2",
                "User: error c2"
            ]
        );
        let old = to_model_messages(
            &history,
            &Options {
                interrupted_results: false,
                ..Options::default()
            },
        );
        assert_eq!(
            shape(&old),
            [
                "User: text",
                "Assistant: call c1",
                "Tool: result c1",
                "Assistant: text"
            ]
        );
    }

    #[test]
    fn chat_completions_carries_the_content_before_the_calls() {
        // A step that streamed its text after its call: `tool_calls` follow `content` on the
        // wire, so the OpenAI view lists the text first.
        let history = vec![
            user("msg_1"),
            assistant(
                "msg_2",
                vec![step(), tool("prt_b", "call_A", "completed"), text("prt_c")],
            ),
        ];
        let msgs = to_model_messages(&history, &Options::default());
        assert_eq!(shape(&msgs)[1], "Assistant: call call_A, text");
        let sent: Vec<ModelMessage> = msgs.into_iter().flat_map(as_chat_completions).collect();
        assert_eq!(
            shape(&sent),
            [
                "User: text",
                "Assistant: text, call call_A",
                "Tool: result call_A"
            ]
        );
    }

    #[test]
    fn chat_completions_sends_one_tool_message_per_result() {
        let history = vec![
            user("msg_1"),
            assistant(
                "msg_2",
                vec![
                    step(),
                    tool("prt_a", "call_A", "completed"),
                    tool("prt_b", "call_B", "error"),
                ],
            ),
        ];
        let sent: Vec<ModelMessage> = to_model_messages(&history, &Options::default())
            .into_iter()
            .flat_map(as_chat_completions)
            .collect();
        assert_eq!(
            shape(&sent),
            [
                "User: text",
                "Assistant: call call_A, call call_B",
                "Tool: result call_A",
                "Tool: error call_B"
            ]
        );
    }

    #[test]
    fn errored_assistants_are_skipped_unless_aborted_with_content() {
        let mut failed = assistant("msg_2", vec![step(), text("prt_a")]);
        let mut aborted = assistant("msg_3", vec![step(), text("prt_b")]);
        let err = |name: &str| json!({"role": "assistant", "error": {"name": name, "data": {}}, "providerID": "anthropic"});
        failed.info = Some(Box::new(MessageInfo::from_value(&err("APIError"))));
        aborted.info = Some(Box::new(MessageInfo::from_value(&err(
            "MessageAbortedError",
        ))));
        let history = vec![user("msg_1"), failed, aborted];
        let msgs = to_model_messages(&history, &Options::default());
        assert_eq!(shape(&msgs), ["User: text", "Assistant: text"]);
        assert_eq!(msgs[1].message_id.as_deref(), Some("msg_3"));
    }

    #[test]
    fn compaction_keeps_the_summary_and_what_follows() {
        let old = user("msg_0");
        let compaction = message(
            "msg_1",
            json!({"role": "user"}),
            vec![part("prt_c", json!({"type": "compaction", "auto": true}))],
        );
        let summary = message(
            "msg_2",
            json!({"role": "assistant", "summary": true, "finish": "stop", "parentID": "msg_1"}),
            vec![text("prt_s")],
        );
        let history = vec![old, compaction, summary, user("msg_3")];
        let kept: Vec<&str> = filter_compacted(&history, &Options::default())
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(kept, ["msg_1", "msg_2", "msg_3"]);
    }

    #[test]
    fn a_retained_tail_is_sent_after_the_summary() {
        let compaction = |tail: &str| {
            message(
                "msg_4",
                json!({"role": "user"}),
                vec![part(
                    "prt_c",
                    json!({"type": "compaction", "auto": true, "tail_start_id": tail}),
                )],
            )
        };
        let summary = message(
            "msg_5",
            json!({"role": "assistant", "summary": true, "finish": "stop", "parentID": "msg_4"}),
            vec![text("prt_s")],
        );
        let history = vec![
            user("msg_0"),
            assistant("msg_1", vec![step(), text("prt_a")]),
            user("msg_2"),
            assistant("msg_3", vec![step(), text("prt_b")]),
            compaction("msg_2"),
            summary,
            user("msg_6"),
        ];
        let ids_as = |h: &[Message], o: &Options| -> Vec<String> {
            filter_compacted(h, o)
                .iter()
                .map(|m| m.id.clone())
                .collect()
        };
        let ids = |h: &[Message]| ids_as(h, &Options::default());
        // Before 1.14.41 the tail is sent where it is stored; before 1.14 it is not kept.
        let as_of = |v: &str| Options::for_store(Some(v), None, ProviderChoice::Auto);
        assert_eq!(
            ids_as(&history, &as_of("1.14.34")),
            ["msg_2", "msg_3", "msg_4", "msg_5", "msg_6"]
        );
        assert_eq!(
            ids_as(&history, &as_of("1.3.2")),
            ["msg_4", "msg_5", "msg_6"]
        );
        assert_eq!(ids(&history), ["msg_4", "msg_5", "msg_2", "msg_3", "msg_6"]);
        // A tail that is not in the history keeps everything.
        let mut lost = history;
        lost[4] = compaction("msg_gone");
        assert_eq!(ids(&lost).len(), 7);
        // An empty tail id is no tail.
        lost[4] = compaction("");
        assert_eq!(ids(&lost), ["msg_4", "msg_5", "msg_6"]);
    }

    #[test]
    fn providers_from_the_model() {
        assert_eq!(classify("anthropic", "x"), Some(Provider::Anthropic));
        assert_eq!(
            classify("openrouter", "anthropic/claude-4"),
            Some(Provider::Anthropic)
        );
        assert_eq!(classify("openai", "gpt-5.4"), Some(Provider::OpenAi));
        // An OpenAI-compatible provider, a gateway's other models: not Anthropic's API.
        assert_eq!(classify("opencode", "big-pickle"), Some(Provider::OpenAi));
        assert_eq!(classify("mock", "mock-model"), Some(Provider::OpenAi));
        assert_eq!(classify("", ""), None);
    }
}
