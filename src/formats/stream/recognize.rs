//! A stream capture is recognised by its first line being an SSE field, or by a line that is a
//! provider's or a UI's stream event; a binary AWS event-stream capture by its first frame's
//! prelude (lengths that hold together and a matching CRC).

use serde_json::{Map, Value};

use crate::core::Format;
use crate::formats::agent_log::recognize::STREAM_MARKERS;
use crate::formats::recognize::{Claim, Evidence, Head, RecordLine, first_record};
use crate::protocols::stream::protocol::BEDROCK_KEYS;

pub fn recognize(head: &Head<'_>) -> Vec<Claim> {
    if head.text.is_none() {
        if crate::protocols::eventstream::starts_with_frame(head.bytes) {
            return vec![Claim::new(
                Format::EventStream,
                Evidence::Magic,
                "an AWS event-stream frame (its prelude's CRC matches)",
            )];
        }
        return Vec::new();
    }
    let first = head.first;
    let mut claims = Vec::new();
    if ["data:", "event:", "id:", "retry:", ":"]
        .iter()
        .any(|f| first.starts_with(f))
    {
        claims.push(Claim::new(
            Format::Sse,
            Evidence::SseField,
            "a text/event-stream field on the first line",
        ));
    }
    // Gemini without `alt=sse` streams its chunks as one JSON array.
    let text = head.text.unwrap_or_default();
    let gemini_array = crate::protocols::array::starts_array_of_objects(text)
        && crate::protocols::array::first_element(text)
            .and_then(|e| serde_json::from_str::<Map<String, Value>>(&e).ok())
            .is_some_and(|obj| is_gemini_chunk(&obj));
    if gemini_array {
        claims.push(Claim::new(
            Format::JsonLines,
            Evidence::Record,
            "a JSON array of Gemini stream chunks",
        ));
    }
    claims.extend(first_record(
        head,
        Format::JsonLines,
        "a provider's or a UI's stream event",
        |line| match line {
            RecordLine::Object(obj) => stream_object(obj),
            RecordLine::Cut(compact) => STREAM_MARKERS.iter().any(|m| compact.contains(m)),
            RecordLine::Other => false,
        },
    ));
    claims
}

/// A Gemini `streamGenerateContent` chunk, the only provider that streams a JSON array.
fn is_gemini_chunk(obj: &Map<String, Value>) -> bool {
    ["candidates", "usageMetadata", "modelVersion"]
        .iter()
        .any(|k| obj.contains_key(*k))
}

/// A provider or UI stream event: Chat Completions chunks, Responses and Anthropic events, AI SDK
/// UI chunks and Cohere events (hyphenated types), AG-UI events (UPPER_CASE types), Gemini
/// chunks (`candidates`, `usageMetadata`, `modelVersion`), Bedrock ConverseStream events (an
/// object with one key, the event's name).
fn stream_object(obj: &Map<String, Value>) -> bool {
    let ty = obj.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    let bedrock = obj.len() == 1
        && obj.keys().all(|k| {
            BEDROCK_KEYS.contains(&k.as_str()) || k == "metadata" || k.ends_with("Exception")
        })
        && obj.values().all(Value::is_object);
    bedrock
        || is_gemini_chunk(obj)
        || obj.contains_key("choices")
        || obj.get("object").and_then(|o| o.as_str()) == Some("chat.completion.chunk")
        || ty.starts_with("response.")
        || ty.starts_with("message_")
        || ty.starts_with("content_block_")
        || ty.contains('-')
        || matches!(ty, "ping" | "error" | "start" | "finish" | "abort")
        || (!ty.is_empty() && ty.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
}
