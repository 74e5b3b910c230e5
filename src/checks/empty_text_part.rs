use std::collections::{HashMap, HashSet};

use super::fix::{Fix, FixContext};
use super::Check;
use super::step_merged::{rebuilt, with_request_view};
use crate::checks::diagnostic::{Finding, Ids};
use crate::model::PartBody;
use crate::session::{Analysis, Session};

declare_check! {
    /// ## What it does
    /// Reports text parts whose text is empty (or only whitespace) and that reach the model.
    /// In a stored session the part must be in the request rebuilt from it: OpenCode drops empty
    /// text blocks (and the messages they leave empty) before sending to Anthropic, the AI SDK
    /// drops an assistant's empty text that carries no provider metadata, and messages that ended
    /// in an error are not replayed at all. A dropped part is an oddity on disk the model never
    /// sees, and no release sends it, so it is not reported. Text of whitespace is sent and
    /// reported where the request goes to Anthropic, which refuses a text block without
    /// non-whitespace text; OpenAI's Chat Completions takes an empty or blank content.
    ///
    /// ## Why it matters
    /// Cancelling mid-response, or a `text-start` persisted before any text arrived, leaves a
    /// `{"type":"text","text":""}` part (opencode#16220, #29647). Providers reject empty text
    /// blocks, so versions that replay it send a request that fails on every later prompt
    /// ("permanently bricking the session"); the UI shows a blank message.
    ///
    /// ## Example
    /// ```text
    /// // part prt_…
    /// { "type": "text", "text": "" }
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair` deletes the empty part (after the backup, in its transaction): that is
    /// what OpenCode does with an empty text block when it builds a request itself, and nothing
    /// is put in the model's mouth. A message left with no parts is kept: OpenCode leaves such
    /// a message out of the requests it rebuilds. By hand: `DELETE FROM part WHERE id = '…'`,
    /// with OpenCode closed and a backup made.
    pub struct EmptyTextPart {
        name: "empty-text-part",
        severity: Warning,
        summary: "A text part has empty text: providers reject the empty block",
        fix: "the empty part is deleted (what OpenCode does with an empty text block; the row is in the backup, and the plan quotes it); a message left with no parts is kept",
    }
}

impl Check for EmptyTextPart {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let part_id = f.ids.part_id.as_deref().unwrap_or_default();
        let message_id = f.ids.message_id.as_deref().unwrap_or_default();
        let Some(original) = ctx.raw_part(part_id) else {
            return Fix::Skipped;
        };
        let mut words = format!(
            "delete the empty text part: {}",
            crate::text::clip(&original.to_string())
        );
        if ctx.parts_left(message_id) == 1 {
            words.push_str(
                "; the message is left with no parts, which OpenCode leaves out of its requests",
            );
        }
        ctx.delete_part(f, words)
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // The parts each stored session's next request carries to Anthropic, where it was
        // rebuilt: OpenAI's Chat Completions takes an empty or blank content, Anthropic refuses
        // a text block without non-whitespace text.
        let sent: HashMap<&str, HashSet<&str>> = analysis
            .sessions
            .iter()
            .filter(|s| rebuilt(analysis, &s.id).next().is_some())
            .map(|s| {
                let parts = rebuilt(analysis, &s.id)
                    .filter(|r| r.provider == crate::request::Provider::Anthropic)
                    .flat_map(|r| &r.messages)
                    .flat_map(|m| &m.content)
                    .filter_map(|b| b.part_id.as_deref())
                    .collect();
                (s.id.as_str(), parts)
            })
            .collect();
        // Per session, when first needed: the highest id of a message with a finished step
        // (one walk of the session, not one per empty part).
        let mut last_finished: Option<(*const Session, Option<&str>)> = None;
        for (session, message, part) in analysis.parts() {
            let PartBody::Text(t) = &part.part.body else {
                continue;
            };
            if !t.text.trim().is_empty() {
                continue;
            }
            if sent
                .get(session.id.as_str())
                .is_some_and(|parts| !parts.contains(part.part.id.as_str()))
            {
                // Dropped before the request is sent, or sent where it is accepted.
                continue;
            }
            // A later step of the session finished: the requests that carried this part went
            // through, so the provider (or the agent's conversion) accepted it.
            let highest = match last_finished {
                Some((s, highest)) if std::ptr::eq(s, session) => highest,
                _ => {
                    let highest = (session.messages.iter())
                        .filter(|m| {
                            (m.parts.iter()).any(|p| matches!(p.part.body, PartBody::StepFinish(_)))
                        })
                        .map(|m| m.id.as_str())
                        .chain(session.forgotten.highest_finished.as_deref())
                        .max();
                    last_finished = Some((session, highest));
                    highest
                }
            };
            if highest.is_some_and(|h| h > message.id.as_str()) {
                continue;
            }
            let Some(obs) = part.last() else {
                continue;
            };
            let f = Self::META
                .finding(format!(
                    "text part {} of message {} is empty",
                    part.part.id, message.id
                ))
                .at(obs.span.head(), "this text part has no text")
                .help(with_request_view(
                    &format!(
                        "an empty text block is rejected by providers; {}",
                        super::repair_help(analysis.format, session.recorded_from, "deletes the empty part", None)
                    ),
                    analysis.format,
                    &session.id,
                ));
            out.push(
                f.ids(
                    Ids::default()
                        .session(session.id.clone())
                        .message(message.id.clone())
                        .part(part.part.id.clone()),
                ),
            );
        }
    }
}
