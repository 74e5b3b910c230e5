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

/// What the processor did to tool parts, by part id, gathered in one walk of the timeline (a
/// walk per part was quadratic in a stream of many tools).
pub struct ToolOutcomes<'a> {
    /// Parts whose tool error the processor dropped.
    dropped: crate::FastSet<&'a str>,
    /// The first cleanup event that closed each part.
    cleanup: crate::FastMap<&'a str, &'a crate::session::Event>,
}

impl<'a> ToolOutcomes<'a> {
    pub fn of(a: &'a Analysis) -> Self {
        let mut out = ToolOutcomes {
            dropped: crate::FastSet::default(),
            cleanup: crate::FastMap::default(),
        };
        for e in &a.events {
            match &e.kind {
                EventKind::ProcessorDropped(d) if d.what == "tool-error" => {
                    out.dropped.insert(d.part_id.as_str());
                }
                EventKind::ProcessorCleanup { part_ids } => {
                    for id in part_ids {
                        out.cleanup.entry(id.as_str()).or_insert(e);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Whether the processor dropped a tool error for this part.
    pub fn dropped_error(&self, part_id: &str) -> bool {
        self.dropped.contains(part_id)
    }

    /// The cleanup event that closed this part, if any.
    pub fn closed_by_cleanup(&self, part_id: &str) -> Option<&'a crate::session::Event> {
        self.cleanup.get(part_id).copied()
    }
}
