//! A Codex rollout is recognised by a line that is one of its records (`session_meta`,
//! `response_item`, `event_msg` … with a timestamp), also when the line is cut by the end of the
//! head.

use crate::core::Format;
use crate::formats::recognize::{Claim, Head, RecordLine, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    first_record(
        head,
        Format::CodexRollout,
        "a Codex rollout record",
        |line| match line {
            RecordLine::Object(obj) => super::read::is_record(obj),
            RecordLine::Cut(compact) => super::read::looks_like_record(compact),
            RecordLine::Other => false,
        },
    )
    .into_iter()
    .collect()
}
