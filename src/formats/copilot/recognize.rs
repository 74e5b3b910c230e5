//! A GitHub Copilot CLI session is recognised by a line that is one of its events (the envelope
//! `{type, data, id, timestamp, parentId}` with a type of the client's schema, or a plausible
//! newer one), also when the session's first event is cut by the end of the head.

use crate::core::Format;
use crate::formats::recognize::{Claim, Head, RecordLine, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    first_record(
        head,
        Format::CopilotSession,
        "a GitHub Copilot CLI session event",
        |line| match line {
            RecordLine::Object(obj) => super::read::is_record(obj),
            RecordLine::Cut(compact) => super::read::looks_like_record(compact),
            RecordLine::Other => false,
        },
    )
    .into_iter()
    .collect()
}
