use super::incidents::{incidents, is_stream_parse_error};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, EventKind};

declare_check! {
    /// ## What it does
    /// Reports sessions that died because of one bad stream event: an unparseable SSE event
    /// (`AI_JSONParseError`) that the processor re-threw and the session never recovered from,
    /// instead of skipping it and reading on.
    ///
    /// ## Why it matters
    /// The AI SDK turns an unparseable event into an `error` stream part and keeps streaming. A
    /// processor that throws on every `error` part turns one corrupted chunk — a gateway
    /// concatenating two events is enough — into a dead session, a pending tool marked "Tool
    /// execution aborted" and a lost step.
    ///
    /// ## Example
    /// ```text
    /// "service": "session.processor",
    /// "error": { "name": "AI_JSONParseError", "text": "{\"id\":\"chatcmpl-jQugNdata:{\"id\":…" },
    /// "message": "process"
    /// … then { "type": "error", "error": { "name": "UnknownError", … } } and the session stops
    /// ```
    ///
    /// ## How to fix
    /// Skip and continue on stream parse errors, as codex does and link-assistant/agent does since
    /// 0.12.2: log the bad event and keep reading. `rewind replay CAPTURE --compare opencode
    /// opencode-fixed` shows the same stream under both behaviours.
    pub struct StreamErrorFatal {
        name: "stream-error-fatal",
        severity: Error,
        summary: "One bad stream event ended the session instead of being skipped",
    }
}

impl Check for StreamErrorFatal {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for incident in incidents(analysis) {
            if !incident.fatal || !incident.errors().any(|(_, i)| is_stream_parse_error(i)) {
                continue;
            }
            let (event, info) = incident.primary();
            let mut f = Self::META
                .finding(format!(
                    "one unparseable stream event ended the session ({}) instead of being skipped",
                    info.name.as_deref().unwrap_or("error")
                ))
                .at(info.message_span.unwrap_or(event.span.head()), "the session died of it")
                .help("skip and continue on stream parse errors (as codex does): log the bad event and keep reading")
                .ids(Ids {
                    session_id: event.session.clone(),
                    ..Ids::default()
                });
            for (other, other_info) in incident.errors() {
                if let EventKind::Log { service, .. } = &other.kind
                    && service == "session.processor"
                {
                    f = f.also(
                        Some(other_info.message_span.unwrap_or(other.span.head())),
                        "the processor re-threw the stream's `error` part here",
                    );
                }
            }
            if !incident.aftermath.is_empty() {
                f = f.note(format!("then: {}", incident.aftermath_words()));
            }
            out.push(f);
        }
    }
}
