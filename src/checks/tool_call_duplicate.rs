use crate::FastMap;

use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, Message, PartRecord};

declare_check! {
    /// ## What it does
    /// Reports a tool call id (`callID`) carried by more than one tool part of a session.
    ///
    /// ## Why it matters
    /// The provider pairs each result with its call by this id. With two parts on one id, the
    /// rebuilt request sends two `tool_use` blocks with the same id — and both results, e.g.
    /// "Tool execution aborted" and the real output (opencode#1211) — which the provider rejects
    /// or pairs with the wrong call. Anthropic refuses any request that uses a `tool_use` id
    /// twice (`messages.N.content.M: tool_use ids must be unique`), so a Claude Code transcript
    /// that reuses one fails on every later turn (`rewind request` shows where).
    ///
    /// ## Example
    /// ```text
    /// // part prt_…01  { "type": "tool", "callID": "toolu_01A…", "state": { "status": "error", … } }
    /// // part prt_…02  { "type": "tool", "callID": "toolu_01A…", "state": { "status": "completed", … } }
    /// ```
    ///
    /// ## How to fix
    /// Decide which part is the real call and remove or re-id the other (with OpenCode closed and
    /// a backup made). rewind does not repair this: choosing which to keep needs a person.
    pub struct ToolCallDuplicate {
        name: "tool-call-duplicate",
        severity: Error,
        summary: "One tool call id is carried by two tool parts",
    }
}

impl Check for ToolCallDuplicate {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for session in &analysis.sessions {
            let mut first: FastMap<&str, (&Message, &PartRecord)> = FastMap::default();
            for message in &session.messages {
                for part in &message.parts {
                    let Some(tool) = part.part.tool() else {
                        continue;
                    };
                    if tool.call_id.is_empty() {
                        continue;
                    }
                    let Some(&(m0, p0)) = first.get(tool.call_id.as_str()) else {
                        first.insert(&tool.call_id, (message, part));
                        continue;
                    };
                    let Some(obs) = part.last() else {
                        continue;
                    };
                    let place = if m0.id == message.id {
                        "in the same message".to_owned()
                    } else {
                        format!("in message {}", m0.id)
                    };
                    let f = Self::META
                        .finding(format!(
                            "tool call id {} is on two tool parts: {} (`{}`, {}) and {} (`{}`, {}) {place}",
                            tool.call_id,
                            part.part.id,
                            tool.tool,
                            tool.state.status(),
                            p0.part.id,
                            p0.part.tool().map_or("", |t| t.tool.as_str()),
                            p0.part.tool().map_or("", |t| t.state.status()),
                        ))
                        .at(part.status_span().unwrap_or(obs.span.head()), "the second part with this call id")
                        .also(p0.status_span(), "the first part with this call id")
                        .help("the provider pairs results with calls by this id; keep one part per call id (rewind does not choose which)");
                    out.push(
                        f.ids(
                            Ids::default()
                                .session(session.id.clone())
                                .message(message.id.clone())
                                .part(part.part.id.clone())
                                .call(tool.call_id.clone()),
                        ),
                    );
                }
            }
        }
    }
}
