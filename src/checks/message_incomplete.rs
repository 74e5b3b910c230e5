use super::{Check, CheckMeta, declare_check};
use crate::diagnostic::{Finding, Ids};
use crate::model::MessageBody;
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports assistant messages with no `time.completed` and no `error`: replies that never
    /// finished.
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
    }
}

impl Check for MessageIncomplete {
    fn meta(&self) -> &'static CheckMeta {
        &Self::META
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
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
                    .help("`rewind repair` marks it completed with a MessageAbortedError, as OpenCode does for an aborted reply");
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
