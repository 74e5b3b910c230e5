use crate::FastMap;

use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{Analysis, EventKind, Seq};

declare_check! {
    /// ## What it does
    /// Reports a step for which the agent recorded zero (or no) token usage while the provider's
    /// own answer in the same log carried usage: the provider metadata the agent logged, a logged
    /// response body, or a logged stream with a `usage` object.
    ///
    /// ## Why it matters
    /// Usage drives more than the bill: the agent decides to compact the context, and (in
    /// link-assistant/agent) whether a step that finished with an unknown reason really produced
    /// nothing, from the tokens it recorded. Usage lost between the provider and the step makes
    /// the agent overflow its context or end the session with "zero tokens" although the model
    /// answered. The agent's own "provider returned zero tokens" message is the symptom; the
    /// provider's usage in the same log is the evidence.
    ///
    /// ## Example
    /// ```text
    /// "providerMetadata": "{\"anthropic\":{\"usage\":{\"input_tokens\":14533,\"output_tokens\":164}}}"
    /// "type": "step_finish", "part": { "tokens": { "input": 0, "output": 0, … }, "cost": 0 }
    /// ```
    ///
    /// ## How to fix
    /// Read usage from where the provider puts it when the SDK's normalised usage is empty
    /// (provider metadata, the stream's last `usage` chunk), and do not treat zero recorded usage
    /// as proof that the model produced nothing.
    pub struct UsageMismatch {
        name: "usage-mismatch",
        severity: Warning,
        summary: "The agent recorded zero usage for a step while the provider's answer in the same log carried usage",
    }
}

impl Check for UsageMismatch {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // The latest step finish of each session so far.
        let mut previous: FastMap<&str, Seq> = FastMap::default();
        let sessions = analysis.sessions_by_id();
        let mut index = super::loop_exited_early::SessionIndex::default();
        // The events a zero-usage step is compared with, by session, gathered when one asks.
        let lookups = std::cell::OnceCell::new();
        let lookups = || {
            lookups.get_or_init(|| {
                use super::incidents::EventIndex;
                let usage = |e: &crate::session::Event| {
                    matches!(&e.kind, EventKind::ProviderUsage(u) if u.input.saturating_add(u.output) > 0)
                };
                let step = |e: &crate::session::Event| matches!(e.kind, EventKind::StepFinished(_));
                let consequence = |e: &crate::session::Event| {
                    matches!(e.kind, EventKind::LoopExit | EventKind::SessionError(_))
                };
                (
                    EventIndex::new(analysis, usage),
                    EventIndex::new(analysis, step),
                    EventIndex::new(analysis, consequence),
                )
            })
        };
        for e in &analysis.events {
            let EventKind::StepFinished(step) = &e.kind else {
                continue;
            };
            let Some(session) = e.session.as_deref() else {
                continue;
            };
            let after = previous.insert(session, e.seq).unwrap_or(0);
            if !step.zero_usage {
                continue;
            }
            let in_session = sessions.get(session).copied();
            let until = index.next_part_write(in_session, e.seq);
            let (usages, steps, consequences) = lookups();
            let usage = (usages.first(session, true, after, until)).and_then(|x| match &x.kind {
                EventKind::ProviderUsage(u) => Some((x, u.input, u.output, &u.source, u.span)),
                _ => None,
            });
            let Some((x, input, output, source, span)) = usage else {
                continue;
            };
            // The zero usage ended the session: no later step.
            let last_step = steps.first(session, false, e.seq, None).is_none();
            let consequence = (consequences.first(session, true, e.seq, until))
                .and_then(|y| match &y.kind {
                    EventKind::LoopExit => {
                        Some("the prompt loop exited after this step".to_owned())
                    }
                    EventKind::SessionError(i) => {
                        Some(format!("the session then failed: {}", i.title()))
                    }
                    _ => None,
                });
            let severity = if last_step && consequence.is_some() {
                Severity::Error
            } else {
                Severity::Warning
            };
            let mut f = UsageMismatch::META
                .finding(format!(
                    "the agent recorded zero tokens for the step of message {}, but the provider sent usage of {} input and {} output tokens ({source})",
                    step.message_id,
                    thousands(input),
                    thousands(output)
                ))
                .severity(severity)
                .at(
                    step.tokens_span.unwrap_or(e.span.head()),
                    "what the agent recorded: 0 tokens",
                )
                .also(
                    Some(span.unwrap_or(x.span.head())),
                    format!(
                        "what the provider sent: {} input, {} output tokens",
                        thousands(input),
                        thousands(output)
                    ),
                )
                .ids(Ids {
                    session_id: Some(session.to_owned()),
                    message_id: Some(step.message_id.clone()),
                    part_id: Some(step.part_id.clone()),
                    call_id: None,
                });
            if super::loop_exited_early::unusable(step) {
                f = f.note(format!(
                    "the step's finish reason was lost too (`{}`): the provider's answer did not reach the step as the provider sent it",
                    step.reason
                ));
            }
            if let Some(c) = consequence {
                f = f.note(c);
            }
            out.push(f.help("read usage from the provider's metadata or stream when the SDK's usage is empty; zero recorded usage does not mean the model produced nothing"));
        }
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
