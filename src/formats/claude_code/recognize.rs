//! A Claude Code transcript is recognised by a line that is one of its records (a message of the
//! record tree, or a bookkeeping record), also when the line is cut by the end of the head.

use crate::core::Format;
use crate::formats::recognize::{Claim, Head, RecordLine, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    first_record(
        head,
        Format::ClaudeTranscript,
        "a Claude Code transcript record",
        |line| match line {
            RecordLine::Object(obj) => super::read::is_record(obj),
            RecordLine::Cut(compact) => super::read::looks_like_record(compact),
            RecordLine::Other => false,
        },
    )
    .into_iter()
    .collect()
}
