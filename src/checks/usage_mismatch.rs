use crate::FastMap;

use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use super::incidents::EventIndex;
use crate::session::{Analysis, Event, EventKind, Seq, StepFinish};

declare_check! {
    /// ## What it does
    /// Reports a step for which the agent recorded zero (or no) token usage while the provider's
    /// own answer in the same log carried usage: the provider metadata the agent logged, the
    /// usage the SDK handed it (`rawUsage`), a logged response body, or a logged stream with a
    /// `usage` object. Also a step that recorded its tokens but no cache reads (`cache.read`) or
    /// no reasoning tokens while the provider's usage states them, flat (`cachedInputTokens`,
    /// `prompt_tokens_details.cached_tokens` …) or nested inside the input and output counts as
    /// the AI SDK v5/v6 usage shapes have them (`inputTokens: {total, noCache, cacheRead}`,
    /// `outputTokens: {total, text, reasoning}`).
    ///
    /// ## Why it matters
    /// Usage drives more than the bill: the agent decides to compact the context, and (in
    /// link-assistant/agent) whether a step that finished with an unknown reason really produced
    /// nothing, from the tokens it recorded. Usage lost between the provider and the step makes
    /// the agent overflow its context or end the session with "zero tokens" although the model
    /// answered. The agent's own "provider returned zero tokens" message is the symptom; the
    /// provider's usage in the same log is the evidence. Cache reads and reasoning tokens dropped
    /// on the way (an agent reading only flat counts finds none in nested ones) make the step's
    /// cost and the counts the agent keeps wrong, silently.
    ///
    /// ## Example
    /// ```text
    /// "providerMetadata": "{\"anthropic\":{\"usage\":{\"input_tokens\":14533,\"output_tokens\":164}}}"
    /// "type": "step_finish", "part": { "tokens": { "input": 0, "output": 0, … }, "cost": 0 }
    ///
    /// "rawUsage": "{\"inputTokens\":{\"total\":12703,\"noCache\":12511,\"cacheRead\":192},\"outputTokens\":{\"total\":412,\"text\":97,\"reasoning\":315}}"
    /// "type": "step_finish", "part": { "tokens": { "input": 12703, "output": 412, "reasoning": 0, "cache": { "read": 0, … } } }
    /// ```
    ///
    /// ## How to fix
    /// Read usage from where the provider puts it when the SDK's normalised usage is empty
    /// (provider metadata, the stream's last `usage` chunk), and do not treat zero recorded usage
    /// as proof that the model produced nothing. Read cache reads and reasoning tokens nested
    /// inside the input and output counts as well as flat ones.
    pub struct UsageMismatch {
        name: "usage-mismatch",
        severity: Warning,
        summary: "The agent recorded zero usage, or dropped cache reads or reasoning tokens, for a step while the provider's answer in the same log carried them",
    }
}

/// The events a step is compared with, by session: usage the provider sent, usage that states
/// cache reads or reasoning tokens, step finishes, and what follows a step (a loop exit, the
/// session's error).
struct Lookups<'a> {
    usage: EventIndex<'a>,
    details: EventIndex<'a>,
    steps: EventIndex<'a>,
    consequences: EventIndex<'a>,
}

impl<'a> Lookups<'a> {
    fn new(analysis: &'a Analysis) -> Self {
        let usage = |e: &Event| match &e.kind {
            EventKind::ProviderUsage(u) => u.input.saturating_add(u.output) > 0,
            _ => false,
        };
        let details = |e: &Event| match &e.kind {
            EventKind::ProviderUsage(u) => {
                u.input.saturating_add(u.output) > 0 && (u.cache_read > 0 || u.reasoning > 0)
            }
            _ => false,
        };
        let step = |e: &Event| matches!(e.kind, EventKind::StepFinished(_));
        let consequence = |e: &Event| matches!(e.kind, EventKind::LoopExit | EventKind::SessionError(_));
        Lookups {
            usage: EventIndex::new(analysis, usage),
            details: EventIndex::new(analysis, details),
            steps: EventIndex::new(analysis, step),
            consequences: EventIndex::new(analysis, consequence),
        }
    }
}

/// A step of a session, with the window of events that belong to it: after the session's step
/// before, and before the session writes a part again.
struct Step<'a> {
    event: &'a Event,
    finish: &'a StepFinish,
    session: &'a str,
    after: Seq,
    until: Option<Seq>,
}

impl Check for UsageMismatch {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // The latest step finish of each session so far.
        let mut previous: FastMap<&str, Seq> = FastMap::default();
        let sessions = analysis.sessions_by_id();
        let mut index = super::loop_exited_early::SessionIndex::default();
        // Gathered when a step first asks.
        let lookups = std::cell::OnceCell::new();
        for e in &analysis.events {
            let EventKind::StepFinished(finish) = &e.kind else {
                continue;
            };
            let Some(session) = e.session.as_deref() else {
                continue;
            };
            let after = previous.insert(session, e.seq).unwrap_or(0);
            // A step that recorded both counts dropped neither.
            if !finish.zero_usage && finish.cache_read > 0 && finish.reasoning > 0 {
                continue;
            }
            let step = Step {
                event: e,
                finish,
                session,
                after,
                until: index.next_part_write(sessions.get(session).copied(), e.seq),
            };
            let lookups = lookups.get_or_init(|| Lookups::new(analysis));
            let found = if finish.zero_usage {
                zero(&step, lookups)
            } else {
                dropped(&step, lookups)
            };
            out.extend(found);
        }
    }
}

/// A step that recorded zero tokens while the provider sent usage.
fn zero(step: &Step<'_>, lookups: &Lookups<'_>) -> Option<Finding> {
    let Step {
        event: e,
        finish: step,
        session,
        after,
        until,
    } = *step;
    let x = lookups.usage.first(session, true, after, until)?;
    let EventKind::ProviderUsage(u) = &x.kind else {
        return None;
    };
    let (input, output) = (u.input, u.output);
    // The zero usage ended the session: no later step.
    let last_step = lookups.steps.first(session, false, e.seq, None).is_none();
    let consequence = (lookups.consequences.first(session, true, e.seq, until))
        .and_then(|y| match &y.kind {
            EventKind::LoopExit => Some("the prompt loop exited after this step".to_owned()),
            EventKind::SessionError(i) => Some(format!("the session then failed: {}", i.title())),
            _ => None,
        });
    let severity = if last_step && consequence.is_some() {
        Severity::Error
    } else {
        Severity::Warning
    };
    let mut f = UsageMismatch::META
        .finding(format!(
            "the agent recorded zero tokens for the step of message {}, but the provider sent usage of {} input and {} output tokens ({})",
            step.message_id,
            thousands(input),
            thousands(output),
            u.source
        ))
        .severity(severity)
        .at(
            step.tokens_span.unwrap_or(e.span.head()),
            "what the agent recorded: 0 tokens",
        )
        .also(
            Some(u.span.unwrap_or(x.span.head())),
            format!(
                "what the provider sent: {} input, {} output tokens",
                thousands(input),
                thousands(output)
            ),
        )
        .ids(ids(session, step));
    if super::loop_exited_early::unusable(step) {
        f = f.note(format!(
            "the step's finish reason was lost too (`{}`): the provider's answer did not reach the step as the provider sent it",
            step.reason
        ));
    }
    if let Some(c) = consequence {
        f = f.note(c);
    }
    Some(f.help("read usage from the provider's metadata or stream when the SDK's usage is empty; zero recorded usage does not mean the model produced nothing"))
}

/// A step that recorded its tokens but no cache reads or no reasoning tokens, while the usage the
/// provider sent for it states some.
fn dropped(step: &Step<'_>, lookups: &Lookups<'_>) -> Option<Finding> {
    let Step {
        event: e,
        finish: step,
        session,
        after,
        until,
    } = *step;
    let x = lookups.details.first(session, true, after, until)?;
    let EventKind::ProviderUsage(u) = &x.kind else {
        return None;
    };
    let mut lost = Vec::new();
    if u.cache_read > 0 && step.cache_read == 0 {
        lost.push((thousands(u.cache_read), "cache-read"));
    }
    if u.reasoning > 0 && step.reasoning == 0 {
        lost.push((thousands(u.reasoning), "reasoning"));
    }
    if lost.is_empty() {
        return None;
    }
    let recorded: Vec<String> = lost.iter().map(|(_, what)| format!("0 {what}")).collect();
    let sent: Vec<String> = lost.iter().map(|(n, what)| format!("{n} {what}")).collect();
    let (recorded, sent) = (recorded.join(" and "), sent.join(" and "));
    let mut f = UsageMismatch::META
        .finding(format!(
            "the agent recorded {recorded} tokens for the step of message {}, but the provider sent {sent} tokens ({})",
            step.message_id, u.source
        ))
        .at(
            step.tokens_span.unwrap_or(e.span.head()),
            format!("what the agent recorded: {recorded} tokens"),
        )
        .also(
            Some(u.span.unwrap_or(x.span.head())),
            format!("what the provider sent: {sent} tokens"),
        )
        .ids(ids(session, step));
    if u.nested {
        f = f.note("the provider nested them inside its input and output counts (`inputTokens: {total, noCache, cacheRead}`, `outputTokens: {total, text, reasoning}`, as the AI SDK v5/v6 usage shapes do): an agent that reads only the flat `cachedInputTokens` and `reasoningTokens` finds none");
    }
    f = f.note("the step's cost and the token counts the agent keeps (which its context limits are judged by) were computed without them");
    Some(f.help("read cache reads and reasoning tokens where the provider puts them, nested inside the input and output counts too"))
}

fn ids(session: &str, step: &StepFinish) -> Ids {
    Ids {
        session_id: Some(session.to_owned()),
        message_id: Some(step.message_id.clone()),
        part_id: Some(step.part_id.clone()),
        call_id: None,
    }
}

/// `14533` → `14,533`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
