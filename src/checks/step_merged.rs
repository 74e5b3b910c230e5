use std::collections::{BTreeMap, HashSet};

use super::fix::{Fix, FixContext, recovery_finish, recovery_start};
use super::step_unclosed::StepUnclosed;
use super::{Check, Rule};
use crate::FastMap;
use crate::checks::diagnostic::{Finding, Ids};
use crate::core::Format;
use crate::model::{MessageBody, PartBody, ids};
use crate::protocols::provider;
use crate::session::{Analysis, Message, PartRecord};

declare_check! {
    /// ## What it does
    /// Walks each assistant message's parts in stored (id) order, step by step (a `step-start`
    /// starts a step), and reports text or reasoning that comes after a tool part in the same
    /// step: two model steps were stored as one, with no `step-finish`/`step-start` between them.
    /// Messages OpenCode does not replay (an error other than `MessageAbortedError`) are skipped.
    /// A tool the provider executed (`metadata.providerExecuted`: Anthropic's web search, web
    /// fetch, code execution, MCP tools) ends no step: its result arrives in the same message and
    /// the model goes on writing after it.
    /// Streams replayed under a TanStack profile have no OpenCode step parts, so the rule does
    /// not apply to them. In a stored session, whose next request is rebuilt, a merge is reported
    /// only where that request breaks the provider's rules: OpenAI takes text and tool calls in
    /// one message, and OpenCode 1.18.26 and newer send a step `[tool, text]` to Anthropic as
    /// `[text, tool_use]` (its `@ai-sdk/anthropic` moves `tool_use` blocks last).
    ///
    /// ## Why it matters
    /// When a stream error interrupts a step, OpenCode retries on the same message without writing
    /// the step's `step-finish` or the next `step-start` (PR #16751, layer 2). `step-start` is the
    /// only block separator when the history is rebuilt, so the next request puts text after a
    /// `tool_use` in one assistant message, before its `tool_result`. Anthropic answers 400
    /// "`tool_use` ids were found without `tool_result` blocks immediately after" on every later
    /// prompt (reasoning after a tool gives "Expected `thinking` or `redacted_thinking`").
    ///
    /// ## Example
    /// ```text
    /// step-start · text · tool (error "Tool execution aborted") · text · tool (completed) · step-finish
    ///                                                             ^^^^ a second step, no boundary
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair` inserts a recovery `step-finish` (reason `error`, zero tokens and cost)
    /// and a `step-start` between the tool part and the text, with ids that sort between them, so
    /// each step is closed and the rebuilt request splits there. The processor fix is to write a
    /// recovery `step-finish` before retrying (PR #16751 layer 2).
    pub struct StepMerged {
        name: "step-merged",
        severity: Error,
        summary: "Text or reasoning follows a tool part in the same step: two steps were stored as one",
        fix: "a recovery `step-finish` (reason `error`, zero tokens and cost) and a `step-start`, with ids that sort between the tool part and the next text/reasoning part",
    }
}

/// The pointer to `rewind request`, which shows the request rebuilt from a stored session, for
/// the findings about that request. A check does not know the store's path: `<store>` stands for
/// it. `None` outside session stores (nothing is rebuilt from an agent log or a capture).
pub(super) fn request_view(format: Format, session: &str) -> Option<String> {
    format.is_opencode_store()
    .then(|| format!("see `rewind request <store> --session {session}` for the rebuilt request"))
}

/// Appends the pointer to `rewind request` to a help text, when there is one.
pub(super) fn with_request_view(help: &str, format: Format, session: &str) -> String {
    match request_view(format, session) {
        Some(view) => format!("{help}; {view}"),
        None => help.to_owned(),
    }
}

/// The requests rebuilt from a stored session (none for logs and captures).
pub(super) fn rebuilt<'a>(
    analysis: &'a Analysis,
    session: &'a str,
) -> impl Iterator<Item = &'a crate::request::ModelRequest> + 'a {
    analysis
        .requests
        .iter()
        .filter(move |r| r.span.is_none() && r.session_id.as_deref() == Some(session))
}

/// A merge point: the tool part and the text or reasoning part after it in the same step.
pub struct Merge<'a> {
    pub tool: &'a PartRecord,
    /// The part just before `next` (where a boundary must go after).
    pub before: &'a PartRecord,
    pub next: &'a PartRecord,
}

/// Whether OpenCode replays this message (assistants with an error other than
/// `MessageAbortedError` are skipped).
pub fn replayed(message: &Message) -> bool {
    match message.info.as_ref().map(|i| &i.body) {
        Some(MessageBody::Assistant(a)) => a
            .error
            .as_ref()
            .is_none_or(|e| e.name == "MessageAbortedError"),
        Some(MessageBody::User(_)) => false,
        _ => true,
    }
}

/// A tool the provider executed: the same message carries its result.
fn provider_executed(t: &crate::model::ToolPart) -> bool {
    t.metadata
        .as_ref()
        .and_then(|m| m.get("providerExecuted"))
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// The merge points of a message.
pub fn merges(message: &Message) -> Vec<Merge<'_>> {
    let mut out = Vec::new();
    let mut tool: Option<&PartRecord> = None;
    let mut prev: Option<&PartRecord> = None;
    for part in &message.parts {
        match &part.part.body {
            PartBody::StepStart(_) => tool = None,
            PartBody::Tool(t) if provider_executed(t) => {}
            PartBody::Tool(_) => tool = Some(part),
            PartBody::Text(_) | PartBody::Reasoning(_) => {
                if let (Some(t), Some(b)) = (tool.take(), prev) {
                    out.push(Merge {
                        tool: t,
                        before: b,
                        next: part,
                    });
                }
            }
            _ => {}
        }
        prev = Some(part);
    }
    out
}

impl Check for StepMerged {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        plan_boundaries(f, ctx)
    }

    fn fix_phase(&self) -> u8 {
        1
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        if analysis.transcript.is_some() || opencode_steps_absent(analysis) {
            // A client's transcript stores API messages as they were (a step is a request, and a
            // message's blocks are what the model sent, in its order); other processors than
            // OpenCode's have no step parts.
            return;
        }
        for session in &analysis.sessions {
            // Where the session's next request is known, a merge matters only where that request
            // breaks the provider's rules there: a step `[tool, text]` is sent as `[text,
            // tool_use]` to Anthropic by newer releases, and OpenAI takes text and calls in one
            // message.
            let rebuilt: Vec<_> = rebuilt(analysis, &session.id).collect();
            let broken: HashSet<String> = rebuilt
                .iter()
                .flat_map(|r| provider::check(r))
                .filter(|v| v.kind != provider::ViolationKind::DuplicateCallId)
                .filter_map(|v| v.part_id)
                .collect();
            for message in session.messages.iter().filter(|m| replayed(m)) {
                for m in merges(message) {
                    let (Some(next), Some(tool)) = (m.next.last(), m.tool.part.tool()) else {
                        continue;
                    };
                    if !rebuilt.is_empty() && !broken.contains(&m.next.part.id) {
                        continue;
                    }
                    let what = m.next.part.type_name();
                    let f = Self::META
                        .finding(format!(
                            "message {} merges two steps: {what} part {} follows tool part {} (`{}`, {}) with no step-start between them",
                            message.id,
                            m.next.part.id,
                            m.tool.part.id,
                            tool.tool,
                            tool.call_id
                        ))
                        .at(next.span.head(), format!("{what} after a tool call, in the same step"))
                        .also(
                            m.tool.last().map(|o| o.span.head()),
                            "the tool call this step ended with",
                        )
                        .note("the rebuilt request puts this text after the `tool_use` in one assistant message, before its result")
                        .help(with_request_view(
                            &format!(
                                "a retry continued in the same message without closing the step (PR #16751 layer 2); {}",
                                super::repair_help(
                                    analysis.format,
                                    session.recorded_from,
                                    "inserts a recovery step-finish and a step-start here",
                                    None
                                )
                            ),
                            analysis.format,
                            &session.id,
                        ));
                    out.push(
                        f.ids(
                            Ids::default()
                                .session(session.id.clone())
                                .message(message.id.clone())
                                .part(m.next.part.id.clone())
                                .call(tool.call_id.clone()),
                        ),
                    );
                }
            }
        }
    }
}

/// A stream replayed under a TanStack profile: TanStack AI stores no OpenCode step parts.
fn opencode_steps_absent(analysis: &Analysis) -> bool {
    analysis.stream.as_ref().is_some_and(|f| {
        use crate::protocols::stream::Profile;
        [Profile::Tanstack, Profile::TanstackPre727]
            .iter()
            .any(|p| f.profile == p.name())
    })
}

/// Kinds in a message's simulated part sequence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Start,
    Finish,
    Other,
}

/// Walks the sequence of `kinds` with the `inserts` planned after each part index: a step still
/// open at the next start, or at the end, gets a recovery step-finish (`step-unclosed`) before it.
fn close_open_steps(kinds: &[Kind], inserts: &mut BTreeMap<usize, Vec<(Rule, Kind)>>) {
let mut open = false;
let mut closes: Vec<usize> = Vec::new();
let mut ends_open = false;
for (i, kind) in kinds.iter().enumerate() {
    if *kind == Kind::Start && open && i > 0 {
        closes.push(i - 1);
    }
    match kind {
        Kind::Start => open = true,
        Kind::Finish => open = false,
        Kind::Other => {}
    }
    if let Some(ins) = inserts.get(&i) {
        for (_, k) in ins {
            match k {
                Kind::Start => open = true,
                Kind::Finish => open = false,
                Kind::Other => {}
            }
        }
    }
    if i + 1 == kinds.len() && open {
        ends_open = true;
    }
}
for i in closes {
    inserts
        .entry(i)
        .or_default()
        .insert(0, (StepUnclosed::RULE, Kind::Finish));
}
if ends_open && let Some(last) = kinds.len().checked_sub(1) {
    inserts
        .entry(last)
        .or_default()
        .push((StepUnclosed::RULE, Kind::Finish));
}
}

/// Plans the step boundaries of the finding's message, once per message, for both rules that
/// need them: splits of merged steps (`step-merged`) first, then a recovery step-finish for every
/// step still open at the next step-start or at the end (`step-unclosed`). Both rules' fixes call
/// this; the message's `step-merged` and `step-unclosed` findings are all fixed by it.
pub(super) fn plan_boundaries(f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
    let Some(mid) = f.ids.message_id.as_deref() else {
        return Fix::Skipped;
    };
    if ctx.once(StepMerged::RULE, mid) {
        return Fix::Planned;
    }
    let Some(message) = ctx.message(mid) else {
        return Fix::Skipped;
    };
    let about: Vec<&Finding> = ctx
        .findings_on(mid)
        .filter(|g| matches!(g.rule, Rule::StepMerged | Rule::StepUnclosed))
        .collect();
    // The sequence: real parts, with insertions (rule, kind) after part index i.
    let kinds: Vec<Kind> = message
        .parts
        .iter()
        .map(|p| match p.part.body {
            PartBody::StepStart(_) => Kind::Start,
            PartBody::StepFinish(_) => Kind::Finish,
            _ => Kind::Other,
        })
        .collect();
    // Insertions after part index i, by i.
    let mut inserts: BTreeMap<usize, Vec<(Rule, Kind)>> = BTreeMap::new();
    if replayed(message) {
        let merged = merges(message);
        let position: FastMap<&str, usize> = if merged.is_empty() {
            FastMap::default()
        } else {
            crate::first_of(
                (message.parts.iter().enumerate()).map(|(i, p)| (p.part.id.as_str(), i)),
            )
        };
        for m in merged {
            let Some(&i) = position.get(m.before.part.id.as_str()) else {
                continue;
            };
            inserts.entry(i).or_default().extend([
                (StepMerged::RULE, Kind::Finish),
                (StepMerged::RULE, Kind::Start),
            ]);
        }
    }
    close_open_steps(&kinds, &mut inserts);
    for (at, ins) in inserts {
        let after = &message.parts[at].part.id;
        let before = message.parts.get(at + 1).map(|p| p.part.id.as_str());
        let Some(new_ids) = ids::between(after, before, ins.len()) else {
            ctx.unfixable(format!(
                "message {}: no part id fits between {after} and {}; insert the step boundary by hand",
                message.id,
                before.unwrap_or("the end")
            ));
            continue;
        };
        for ((rule, kind), id) in ins.iter().zip(new_ids) {
            let (data, words) = match kind {
                Kind::Finish => (
                    recovery_finish(*rule),
                    format!(
                        "insert step-finish (reason `error`, zero tokens and cost) after {after}"
                    ),
                ),
                _ => (
                    recovery_start(*rule),
                    format!("insert step-start after {after}"),
                ),
            };
            ctx.insert_part(*rule, &message.id, id, data, words);
        }
    }
    for g in about {
        ctx.fixed(g);
    }
    Fix::Planned
}
