use serde_json::{Value, json};

use super::fix::{Fix, FixContext, marker};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::model::{MessageBody, REPAIR_MARKER};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports assistant messages with no `time.completed` and no `error`: replies that never
    /// finished. In a Claude Code transcript or a Codex rollout, reports a user turn that got no
    /// reply at all: the client writes a reply only once it is complete, so a reply cut off
    /// mid-stream leaves the user's prompt dangling (a warning; an info when the session was
    /// resumed after it, with what the client did about it). Likewise a turn that stops after
    /// tool results the model was to answer (Codex: no `task_complete` after the last output). A
    /// turn the user interrupted (Claude Code's `[Request interrupted by user]`, Codex's
    /// `turn_aborted`) ends on purpose and is no finding; so does a turn whose last tool results
    /// are all the client's own output for a call it stopped (Claude Code's error result
    /// `[Request interrupted by user for tool use]`, Codex's `"aborted"`), which is also what
    /// `rewind repair` writes for a call the client was killed in.
    ///
    /// ## Why it matters
    /// OpenCode sets `time.completed` when the prompt loop ends, on every exit path. A message
    /// without it at rest means the process died mid-reply (opencode#19023: "there is no startup
    /// recovery"): the UI shows the session as busy ("Thinking") forever, and its unfinished
    /// tool parts stay `pending`/`running`. (A reply that is streaming right now looks the same:
    /// close OpenCode before trusting this finding.)
    ///
    /// ## Example
    /// ```text
    /// { "role": "assistant", "time": { "created": 1790589701000 }, "cost": 0, … }
    ///                        no "completed", no "error", no "finish"
    /// ```
    ///
    /// ## How to fix
    /// `rewind repair` sets `time.completed` and records a `MessageAbortedError`, which is what
    /// OpenCode writes for an aborted reply; the message is then replayed as aborted.
    pub struct MessageIncomplete {
        name: "message-incomplete",
        severity: Warning,
        summary: "An assistant message has no time.completed and no error: the reply never finished",
        fix: "`time.completed` set and a `MessageAbortedError` recorded",
    }
}

impl Check for MessageIncomplete {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let Some(mid) = f.ids.message_id.as_deref() else {
            return Fix::Skipped;
        };
        let Some(mut v) = ctx.raw_message(mid) else {
            return Fix::Skipped;
        };
        let Some(o) = v.as_object_mut() else {
            return Fix::Skipped;
        };
        let now = ctx.now;
        if let Some(t) = o.get_mut("time").and_then(Value::as_object_mut) {
            t.insert("completed".into(), json!(now));
        } else {
            o.insert("time".into(), json!({ "created": now, "completed": now }));
        }
        o.insert(
            "error".into(),
            json!({ "name": "MessageAbortedError", "data": { "message": "The reply never finished; closed by rewind repair" } }),
        );
        o.insert(
            REPAIR_MARKER.into(),
            marker(Self::RULE, json!({ "completed": null, "error": null })),
        );
        ctx.update_message(
            f,
            mid,
            v,
            "set time.completed and error MessageAbortedError".into(),
        );
        Fix::Planned
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        if let Some(facts) = analysis.transcript.as_deref() {
            unanswered(facts, out);
        }
        for session in &analysis.sessions {
            for message in &session.messages {
                let Some(MessageBody::Assistant(a)) = message.info.as_ref().map(|i| &i.body) else {
                    continue;
                };
                if a.time.completed.is_some() || a.error.is_some() {
                    continue;
                }
                let Some(at) = message.time_span.or(message.span.map(|s| s.head())) else {
                    continue;
                };
                let parts = message.parts.len();
                let f = Self::META
                    .finding(format!(
                        "assistant message {} never finished: no `time.completed` and no error ({parts} part{}, finish {})",
                        message.id,
                        if parts == 1 { "" } else { "s" },
                        a.finish.as_deref().map_or("unset".to_owned(), |f| format!("`{f}`"))
                    ))
                    .at(at, "no `completed` time")
                    .note("at rest this means the OpenCode process died mid-reply; a reply streaming right now looks the same")
                    .help(super::repair_help(
                        analysis.format,
                        session.recorded_from,
                        "marks it completed with a MessageAbortedError, as OpenCode does for an aborted reply",
                        None,
                    ));
                out.push(
                    f.ids(
                        Ids::default()
                            .session(session.id.clone())
                            .message(message.id.clone()),
                    ),
                );
            }
        }
    }
}

/// User turns of a client's transcript that never got a reply.
fn unanswered(facts: &crate::session::TranscriptFacts, out: &mut Vec<Finding>) {
    for turn in &facts.unanswered {
        let mut f = match &turn.resumed {
            None if turn.results => MessageIncomplete::META
                .finding("the turn stops after tool results: the model's answer to them was never written")
                .at(turn.span, "no reply follows this result")
                .help("the client was stopped while the model answered, and the partial reply was not written; resume the session to go on"),
            None => MessageIncomplete::META
                .finding("the last user turn was never answered: the transcript ends with the user's message and no reply")
                .at(turn.span, "no reply follows this message")
                .help("the client was stopped while the reply streamed, and the partial reply was not written; resume the session to ask again"),
            Some((span, words)) => MessageIncomplete::META
                .finding("this user turn was never answered; the session was resumed after it")
                .severity(crate::checks::diagnostic::Severity::Info)
                .at(turn.span, "no reply follows this message")
                .also(Some(*span), words.clone())
                .help("nothing to do: the resumed request is valid; the reply that was cut off is lost"),
        };
        for (span, words) in &turn.inserted {
            f = f.also(Some(*span), words.clone());
        }
        if turn.resumed.is_some() && !turn.inserted.is_empty() {
            f = f.note("records with `isMeta` and replies with model `<synthetic>` are the client's own: they keep the history alternating user/assistant and are no model output");
        }
        for note in &turn.notes {
            f = f.note(note.clone());
        }
        out.push(f.ids(
            Ids::default()
                .session(turn.session.clone())
                .message(turn.message_id.clone()),
        ));
    }
}
