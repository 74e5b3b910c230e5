use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::{Analysis, ErrorInfo, Event, EventKind};

declare_check! {
    /// ## What it does
    /// Finds a second SSE event that begins inside the first one's JSON: a `data:` (or `event:`)
    /// field embedded in a payload, where the first event's line was never ended. The label points
    /// at the embedded `data:`.
    ///
    /// ## Why it matters
    /// This is how a gateway that retried upstream after a partial write corrupts a stream: the
    /// first event is cut mid-value and the next one is appended on the same line. The SSE layer
    /// sees one line; only the JSON parser fails — and a processor that does not skip unparseable
    /// events dies on it.
    ///
    /// ## Example
    /// ```text
    /// "text": "{\"id\":\"chatcmpl-jQugNdata:{\"id\":\"chatcmpl-iU6vkr3fItZ0Y4rTCmIyAnXO\",…"
    ///                              ^^^^^ a second event starts inside the first one's `id`
    /// ```
    ///
    /// ## How to fix
    /// Report it to the gateway (OpenCode Zen / Kilo Gateway have had this bug). On the client,
    /// skip the unparseable event and continue; the stream usually recovers with the next event.
    pub struct SseConcatenatedEvents {
        name: "sse-concatenated-events",
        severity: Error,
        summary: "A second SSE event begins inside the first one's JSON (concatenated chunks)",
    }
}

impl Check for SseConcatenatedEvents {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // Payloads already reported (a log repeats one per retry); a set, as a log may hold many.
        let mut seen: crate::FastSet<&str> = crate::FastSet::default();
        for (seq, _, p) in super::streams::payload_problems(analysis) {
            let Some(at) = p.embedded else {
                continue;
            };
            let payload = p.payload.0.as_str();
            if !seen.insert(payload) {
                continue;
            }
            out.push(stream_finding(analysis, seq, p, at));
        }
        let candidates: Vec<(&Event, &ErrorInfo)> = analysis
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Log { error: Some(i), .. }
                | EventKind::SessionError(i)
                | EventKind::ProcessCrash(i) => Some((e, &**i)),
                _ => None,
            })
            .filter(|(_, i)| i.embedded_event.is_some() && i.payload.is_some())
            .collect();
        // Prefer the processor's own record of the payload; fall back to the first one.
        let mut ordered = candidates.clone();
        ordered.sort_by_key(|(e, _)| {
            !matches!(&e.kind, EventKind::Log { service, .. } if service == "session.processor")
        });
        for (event, info) in ordered {
            let (Some((payload, _)), Some(at)) = (&info.payload, info.embedded_event) else {
                continue;
            };
            if !seen.insert(payload.as_str()) {
                continue;
            }
            out.push(concatenation(payload, at, "the first one's JSON").ids(Ids {
                session_id: event.session.clone(),
                ..Ids::default()
            }));
        }
    }
}

/// The finding for a payload in which a second event (`data:` or `event:`) begins, at `at`.
fn concatenation(payload: &str, at: crate::source::Span, whose: &str) -> Finding {
    let field = payload
        .find("data:")
        .into_iter()
        .chain(payload.find("event:"))
        .filter(|k| *k > 0)
        .min();
    let Some(cut) = field else {
        // No second field: two JSON values written back to back.
        let cut = crate::json::value::second_json_value(payload).unwrap_or(0);
        let (first, second) = payload.split_at(cut);
        let second_short: String = second.chars().take(48).collect();
        return SseConcatenatedEvents::META
            .finding(format!(
                "two JSON values were written as one event: {first:?} ({} bytes, complete) is followed by {second_short:?}…",
                first.len(),
            ))
            .at(at, "the second JSON value starts here")
            .help("two events were written as one (a missing blank line, or two `data:` lines joined); the client should skip the unparseable event and continue");
    };
    let (first, second) = payload.split_at(cut);
    let inside = enclosing_key(first)
        .map(|k| format!(" inside the first event's `{k}` value"))
        .unwrap_or_default();
    let second_short: String = second.chars().take(48).collect();
    let field = &second[..second.find(':').map_or(0, |k| k + 1)];
    let mut f = SseConcatenatedEvents::META
        .finding(format!(
            "a second SSE event begins inside {whose}: {first:?} (cut after {} bytes) is followed by {second_short:?}…",
            first.len(),
        ))
        .at(at, format!("the next event's `{field}` starts here{inside}"))
        .help("two events were concatenated on one line (a gateway wrote a partial event, then the next one); the client should skip the unparseable event and continue");
    if let Some(gap) = created_gap(first, second) {
        f = f.note(format!("the two fragments' `created` times differ by {gap} s: the second stream started later (a retry)"));
    }
    f
}

/// A concatenation found in a stream payload.
fn stream_finding(
    analysis: &Analysis,
    seq: crate::session::Seq,
    p: &crate::session::PayloadProblem,
    at: crate::source::Span,
) -> Finding {
    let payload = p.payload.0.as_str();
    let session = analysis.sessions.first().map(|s| s.id.clone());
    let mut f = if p.second_value {
        SseConcatenatedEvents::META
            .finding(format!(
                "event {} holds two JSON values: a second one begins right after the first ends",
                seq + 1
            ))
            .at(at, "the second JSON value starts here")
            .help("two events were written as one (a missing blank line, or two `data:` lines joined); split at the value boundary or skip the event")
    } else {
        concatenation(payload, at, &format!("event {}'s JSON", seq + 1))
    };
    if let Some(r) = super::streams::reaction(analysis, seq) {
        f = f.note(r);
    }
    if let Some(n) = super::streams::alternative_note(analysis, seq) {
        f = f.note(n);
    }
    f.ids(Ids {
        session_id: session,
        ..Ids::default()
    })
}

/// The key whose value the fragment was cut in: `{"id":"chatcmpl-jQugN` → `id`.
fn enclosing_key(fragment: &str) -> Option<&str> {
    let k = fragment.rfind("\":")?;
    let start = fragment[..k].rfind('"')?;
    let key = &fragment[start + 1..k];
    (!key.is_empty() && !key.contains(['{', '}', ','])).then_some(key)
}

/// Difference of the `created` fields of the two fragments, when both have one.
fn created_gap(first: &str, second: &str) -> Option<i64> {
    let created = |s: &str| -> Option<i64> {
        let k = s.find("\"created\":")? + "\"created\":".len();
        let digits: String = s[k..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    Some(created(second)? - created(first)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_key_the_cut_fell_in() {
        assert_eq!(enclosing_key(r#"{"id":"chatcmpl-jQugN"#), Some("id"));
        assert_eq!(enclosing_key(r#"{"a":1,"delta":{"role":"a"#), Some("role"));
        assert_eq!(enclosing_key("{"), None);
    }

    #[test]
    fn gap_needs_both_created() {
        assert_eq!(
            created_gap(r#"{"created":100,"x"#, r#"data:{"created":190}"#),
            Some(90)
        );
        assert_eq!(created_gap(r#"{"id":"x"#, r#"data:{"created":190}"#), None);
    }
}
