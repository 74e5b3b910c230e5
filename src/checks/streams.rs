//! Helpers for the checks of replayed streams.

use crate::session::{Analysis, EventKind, PayloadProblem, Seq, StreamFacts};
use crate::source::Span;

/// The stream facts of an analysis, if it is a replayed stream.
pub fn facts(a: &Analysis) -> Option<&StreamFacts> {
    a.stream.as_deref()
}

/// Event number (1-based) of a seq, for messages.
pub fn event_no(seq: Seq) -> u64 {
    seq + 1
}

/// What the other profile did with the event at `seq`, as a note, when it differs.
pub fn alternative_note(a: &Analysis, seq: Seq) -> Option<String> {
    let f = facts(a)?;
    let alt = f.alternative.as_ref()?;
    if f.outcome.failed_at() == Some(seq) && alt.outcome.failed_at() == Some(seq) {
        return None;
    }
    if alt.outcome.failed_at() == Some(seq) {
        let mut note = format!(
            "under `{}` this event ends the session: {}",
            alt.profile,
            alt.outcome.words()
        );
        let later: Vec<&str> = alt
            .differences
            .iter()
            .filter(|(s, _)| *s > seq)
            .map(|(_, t)| t.as_str())
            .collect();
        if !later.is_empty() {
            note.push_str(&format!("; then {}", later.join("; ")));
        }
        return Some(note);
    }
    let start = alt.differences.partition_point(|(s, _)| *s < seq);
    alt.differences[start..]
        .iter()
        .take_while(|(s, _)| *s == seq)
        .next()
        .map(|(_, t)| format!("under `{}` the processor {t}", alt.profile))
}

/// What the processor of this analysis did with the event at `seq`.
pub fn reaction(a: &Analysis, seq: Seq) -> Option<String> {
    let profile = facts(a).map(|f| f.profile.clone()).unwrap_or_default();
    // Events are in `seq` order: find this one's without scanning them all (one finding per
    // event would make that quadratic).
    let start = a.events.partition_point(|e| e.seq < seq);
    a.events[start..]
        .iter()
        .take_while(|e| e.seq == seq)
        .find_map(|e| match &e.kind {
            EventKind::ProcessorSkipped { .. } => {
                Some(format!("`{profile}` skips this event and reads on"))
            }
            EventKind::SessionError(i) => Some(format!(
                "under `{profile}` it ends the session ({})",
                i.title()
            )),
            _ => None,
        })
}

/// Payload problems, with their event.
pub fn payload_problems(a: &Analysis) -> impl Iterator<Item = (Seq, Span, &PayloadProblem)> {
    a.events.iter().filter_map(|e| match &e.kind {
        EventKind::StreamPayload(p) => Some((e.seq, e.span, p.as_ref())),
        _ => None,
    })
}

/// Whether the processor dropped a tool error for this part.
pub fn dropped_error(a: &Analysis, part_id: &str) -> bool {
    a.events.iter().any(|e| {
        matches!(&e.kind, EventKind::ProcessorDropped(d) if d.part_id == part_id && d.what == "tool-error")
    })
}

/// The cleanup event that closed this part, if any.
pub fn closed_by_cleanup<'a>(a: &'a Analysis, part_id: &str) -> Option<&'a crate::session::Event> {
    a.events.iter().find(|e| {
        matches!(&e.kind, EventKind::ProcessorCleanup { part_ids } if part_ids.iter().any(|p| p == part_id))
    })
}
