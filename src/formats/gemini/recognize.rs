//! A Gemini CLI session is recognised by its first key: both dialects start with the session's
//! metadata, `{"sessionId": …, "projectHash": …}` (the JSON-lines file's first line, the legacy
//! file's whole document). No other format rewind reads starts with `sessionId` and has a
//! `projectHash`. A JSON-lines file whose metadata line is lost is recognised by its records:
//! a message record (`id`, `timestamp`, a `type` Gemini CLI writes, and only the keys its
//! messages have) or a `$set` of the metadata.

use crate::core::Format;
use crate::formats::recognize::{Claim, Evidence, Head, RecordLine, first_key, first_record};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    let Some(text) = head.text else {
        return Vec::new();
    };
    let text = text.trim_start();
    if first_key(text) != Some("sessionId") || !head.probe_compact.contains("\"projectHash\":\"") {
        return first_record(
            head,
            Format::GeminiSession,
            "a Gemini CLI session record",
            |line| match line {
                RecordLine::Object(obj) => super::read::is_message_record(obj),
                _ => false,
            },
        )
        .into_iter()
        .collect();
    }
    let what = if head.first.trim_end() == "{" {
        "a Gemini CLI session (the legacy whole-file JSON)"
    } else {
        "a Gemini CLI session (its metadata line)"
    };
    vec![Claim::new(Format::GeminiSession, Evidence::FirstKey, what)]
}
