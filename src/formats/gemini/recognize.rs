//! A Gemini CLI session is recognised by its first key: both dialects start with the session's
//! metadata, `{"sessionId": …, "projectHash": …}` (the JSON-lines file's first line, the legacy
//! file's whole document). No other format rewind reads starts with `sessionId` and has a
//! `projectHash`.

use crate::core::Format;
use crate::formats::recognize::{Claim, Evidence, Head, first_key};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    let Some(text) = head.text else {
        return Vec::new();
    };
    let text = text.trim_start();
    if first_key(text) != Some("sessionId") || !head.probe_compact.contains("\"projectHash\":\"")
    {
        return Vec::new();
    }
    let what = if head.first.trim_end() == "{" {
        "a Gemini CLI session (the legacy whole-file JSON)"
    } else {
        "a Gemini CLI session (its metadata line)"
    };
    vec![Claim::new(Format::GeminiSession, Evidence::FirstKey, what)]
}
