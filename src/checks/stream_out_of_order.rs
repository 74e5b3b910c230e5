use super::streams::event_no;
use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{Analysis, EventKind};

declare_check! {
    /// ## What it does
    /// Checks the order of a stream's events against its protocol: a `message_start` repeated, or
    /// a second one while a message (and its content blocks) is still open; a delta for a block
    /// or item that ended or never started; events after the terminal event; a tool's result or
    /// error before its call. It points at the offending event and at what it conflicts with.
    ///
    /// ## Why it matters
    /// Out-of-order events are how spliced generations and replayed retries show up: a gateway
    /// that restarted a generation mid-stream glues two responses together. Clients react
    /// differently — the AI SDK stops reading at a second `message_start` for another message,
    /// TanStack drops tool arguments for an unknown call — so a tool call can be left without its
    /// input, or a tool error can be lost.
    ///
    /// ## Example
    /// ```text
    /// {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_first",…}}
    /// {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"value\":\"Spark"}}
    /// {"type":"message_start","message":{"id":"msg_second",…}}   ← while toolu_first is still open
    /// ```
    ///
    /// ## How to fix
    /// Report it to the gateway or provider: the stream it served is not one generation. A
    /// duplicate `message_start` for the same message is harmless (a warning); the others lose
    /// data. Retry the request rather than trusting the partial output.
    pub struct StreamOutOfOrder {
        name: "stream-out-of-order",
        severity: Error,
        summary: "A stream event breaks its protocol's order (spliced messages, deltas after the end, events after the terminal event)",
    }
}

impl Check for StreamOutOfOrder {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let session = analysis.sessions.first().map(|s| s.id.clone());
        let mut seen: Vec<&str> = Vec::new();
        for e in &analysis.events {
            let EventKind::StreamOutOfOrder {
                problem,
                benign,
                related,
            } = &e.kind
            else {
                continue;
            };
            // One finding per kind of problem per stream (a hundred deltas after the end are one).
            if seen.contains(&problem.as_str()) {
                continue;
            }
            seen.push(problem);
            let mut f = Self::META
                .finding(format!("event {}: {problem}", event_no(e.seq)))
                .at(e.span, "this event is out of order");
            if *benign {
                f = f
                    .severity(Severity::Warning)
                    .help("the clients in use tolerate this, but the stream is not what the protocol promises");
            } else {
                f = f.help("the stream is not one well-formed generation (spliced or replayed events); retry rather than trust its output");
            }
            for (span, label) in related {
                f = f.also(Some(span.head()), label.clone());
            }
            out.push(f.ids(Ids {
                session_id: session.clone(),
                ..Ids::default()
            }));
        }
    }
}
