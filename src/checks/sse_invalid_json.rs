use super::streams::{alternative_note, event_no, payload_problems, reaction};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports stream events whose payload is not JSON (a `data:` that is not `[DONE]`, a line of
    /// a JSON-lines capture): where the parser stopped, what it expected, and what the processor
    /// does with the event — skip it, or die of it. A payload that is not JSON because a second
    /// event begins inside it is reported as `sse-concatenated-events` instead.
    ///
    /// ## Why it matters
    /// The AI SDK turns an unparseable event into an `error` stream part. A processor that
    /// re-throws it (OpenCode, link-assistant/agent before 0.12.2) loses the session to one bad
    /// event; one that skips it (codex) loses only that event — which may still matter when it
    /// was the terminal event that carried the usage and the final status.
    ///
    /// ## Example
    /// ```text
    /// {"type":"response.completed","response":{"id":"resp_parallel",…,"metadata":{}}
    ///                                                                               ^ EOF while parsing an object
    /// ```
    ///
    /// ## How to fix
    /// Find what cut or corrupted the event (a proxy, a logger, a gateway retry). On the client,
    /// skip events that do not parse and keep reading (`rewind replay --compare opencode
    /// opencode-fixed` shows the difference).
    pub struct SseInvalidJson {
        name: "sse-invalid-json",
        severity: Error,
        summary: "A stream event's payload is not JSON (other than `[DONE]`)",
    }
}

impl Check for SseInvalidJson {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let session = analysis.sessions.first().map(|s| s.id.clone());
        for (seq, span, p) in payload_problems(analysis) {
            if p.schema || p.embedded.is_some() {
                continue;
            }
            let what = match &p.looks_like {
                Some(t) => format!("event {} (`{t}`)", event_no(seq)),
                None => format!("event {}", event_no(seq)),
            };
            let mut f = Self::META
                .finding(format!("{what} is not JSON: {}", p.reason))
                .at(p.at.unwrap_or(p.payload.1.head()), "the JSON parser stopped here")
                .also(Some(p.payload.1.head()), "the payload starts here")
                .help("find what cut or corrupted the event; a client should skip an event that does not parse and keep reading");
            if p.at.is_none() {
                f.related.clear();
            }
            if p.terminal {
                f = f.note(format!(
                    "this was the stream's terminal event (`{}`): the stream did end, but what that event carried (final status, usage) is lost",
                    p.looks_like.as_deref().unwrap_or("finish")
                ));
            }
            if let Some(r) = reaction(analysis, seq) {
                f = f.note(r);
            }
            if let Some(n) = alternative_note(analysis, seq) {
                f = f.note(n);
            }
            let _ = span;
            out.push(f.ids(Ids {
                session_id: session.clone(),
                ..Ids::default()
            }));
        }
    }
}
