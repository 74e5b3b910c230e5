//! An HTTP recording is recognised by its `interactions` key, a HAR file by the `log` object
//! that holds its `entries`, wherever in the document those keys lie.

use crate::core::Format;
use crate::formats::recognize::{Claim, Evidence, Head, object_keys};

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    let Some(text) = head.text else {
        return Vec::new();
    };
    if !head.first_is_object() {
        return Vec::new();
    }
    let (top, log) = object_keys(text.trim_start());
    if top.contains(&"interactions") {
        return vec![Claim::new(
            Format::HttpRecording,
            Evidence::DocumentKeys,
            "a top-level `interactions` key",
        )];
    }
    if top.first() == Some(&"log")
        && log
            .iter()
            .any(|k| matches!(*k, "entries" | "creator" | "pages"))
    {
        return vec![Claim::new(
            Format::Har,
            Evidence::DocumentKeys,
            "a top-level `log` object with HAR keys",
        )];
    }
    if head.probe_has("interactions") {
        return vec![Claim::new(
            Format::HttpRecording,
            Evidence::DocumentProbe,
            "an `interactions` key",
        )];
    }
    if head.probe_has("log") && head.probe_has("entries") && !head.probe_has("sessionID") {
        return vec![Claim::new(
            Format::Har,
            Evidence::DocumentProbe,
            "`log` and `entries` keys",
        )];
    }
    Vec::new()
}
