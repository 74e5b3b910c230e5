use super::streams::{facts, payload_problems};
use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{Analysis, StreamOutcome};

declare_check! {
    /// ## What it does
    /// Reports a stream that ends without its protocol's terminal event: no `finish_reason` and
    /// no `data: [DONE]` (Chat Completions), no `response.completed|incomplete|failed`
    /// (Responses), no `message_stop` (Anthropic), no `finish` (AI SDK UI stream), no
    /// `RUN_FINISHED|RUN_ERROR` (AG-UI). It names what was still open — a content block, a tool
    /// call still streaming its arguments. A stream whose `event:` lines name its protocol but
    /// which ends before any `data:` arrived (`event: message_start` and nothing else, or a body
    /// cut right after its first event line) is truncated too. A body its logger cut short (an
    /// agent log's `bodyPreview`) is said to be cut, not reported as a truncated stream.
    ///
    /// ## Why it matters
    /// A truncated stream looks like a short answer: several clients accept it silently
    /// (finishing with reason `other`), and a tool call cut mid-arguments may be executed with an
    /// empty or partial input.
    ///
    /// ## Example
    /// ```text
    /// data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"src/"}}]}}]}
    /// <end of capture: no finish_reason, no [DONE]>
    /// ```
    ///
    /// When an HTTP recording or HAR shows the response came through a relay — an LLM gateway
    /// (OpenRouter, LiteLLM, Cloudflare AI Gateway, Helicone, Portkey) or a proxy (a `Via`
    /// header, Kong, Envoy), named by the request's host or a header only the relay sets — the
    /// finding names it and points at that evidence.
    ///
    /// ## How to fix
    /// Look for what closed the connection (a proxy timeout, a 120 s cap, a crash). Treat a
    /// stream without its terminal event as failed and retry; never execute a tool call whose
    /// arguments did not complete.
    pub struct StreamTruncated {
        name: "stream-truncated",
        severity: Error,
        summary: "The stream ends without its protocol's terminal event",
    }
}

impl Check for StreamTruncated {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(f) = facts(analysis) else {
            return;
        };
        if (f.events == 0 && f.without_data.is_none()) || f.not_understood.is_some() {
            return;
        }
        let session = analysis.sessions.first().map(|s| s.id.clone());
        let ids = Ids {
            session_id: session,
            ..Ids::default()
        };
        if let Some(cut) = &f.body_cut {
            let total = cut.total.map(|t| format!(" of {t}")).unwrap_or_default();
            out.push(
                Self::META
                    .finding(format!(
                        "the log kept only the first {} characters{total} of this response body: whether the stream completed cannot be told from it",
                        cut.kept
                    ))
                    .severity(Severity::Info)
                    .at(cut.span, "the logger cut the body here")
                    .note("its last, cut event is not checked; the events before it are")
                    .help("to check the end of the stream, capture the whole body (a proxy capture or an HTTP recording)")
                    .ids(ids),
            );
            return;
        }
        if f.terminal.is_some() {
            return;
        }
        // A terminal event that arrived corrupt is reported by sse-invalid-json.
        if payload_problems(analysis).any(|(_, _, p)| p.terminal) {
            return;
        }
        let Some(last) = f.last_event else {
            return;
        };
        let mut finding = match &f.without_data {
            Some((ty, _)) if f.events == 0 => Self::META
                .finding(format!(
                    "the {} stream ends without its terminal event ({}) before any data: its `event:` lines (the last `event: {ty}`) carry no `data:`",
                    f.protocol, f.expected_terminal,
                ))
                .at(last, "the stream ends after this event line, with no data")
                .note("an event without data dispatches nothing: no client saw any of this response"),
            _ => Self::META
                .finding(format!(
                    "the {} stream ends without its terminal event ({}) after {} event{}",
                    f.protocol,
                    f.expected_terminal,
                    f.events,
                    if f.events == 1 { "" } else { "s" }
                ))
                .at(last, "the stream ends after this event"),
        };
        for open in &f.open_at_end {
            finding = finding.also(Some(open.span.head()), open.what.clone());
        }
        if f.unterminated_last.is_some() {
            finding = finding.note(
                "the last event is not even closed by a blank line: the capture was cut mid-event",
            );
        }
        if let Some(relay) = &f.relay {
            finding = finding
                .also(relay.span, format!("{} relayed this response", relay.name))
                .note(format!(
                    "the response came through {} ({}): a relay that ends the stream on its own timeout or buffer limit, or loses the upstream connection, closes it just like this; its logs say which",
                    relay.name, relay.evidence
                ));
        }
        if let StreamOutcome::Failed { error, .. } = &f.outcome {
            finding = finding.note(format!(
                "the processor (`{}`) ended the session: {error}",
                f.profile
            ));
        }
        out.push(
            finding
                .help("treat the response as failed and retry; never execute a tool call whose arguments did not complete")
                .ids(ids),
        );
    }
}
