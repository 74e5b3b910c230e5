//! Protocols, their detection, and what a decoder reports for one payload.

use serde_json::Value;

use super::part::{ErrorKind, PartKind, StreamError};
use crate::json::scan::{Seg, locate};
use crate::model::schema::SchemaIssue;
use crate::source::Span;

/// The stream protocols rewind decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    /// The Vercel AI SDK UI message stream (v5+).
    UiStream,
    /// AG-UI events (TanStack AI).
    AgUi,
    /// Google Gemini `streamGenerateContent` chunks.
    Gemini,
    /// Cohere v2 chat stream events (hyphenated types).
    Cohere,
    /// Amazon Bedrock ConverseStream events (single-key objects).
    Bedrock,
}

impl Protocol {
    /// The stream protocol a request URL implies.
    pub fn of_url(url: &str) -> Option<Protocol> {
        if url.contains("/chat/completions") {
            Some(Protocol::OpenAiChat)
        } else if url.contains("/responses") {
            Some(Protocol::OpenAiResponses)
        } else if url.trim_end_matches('/').ends_with("/messages") {
            Some(Protocol::Anthropic)
        } else if url.contains(":streamGenerateContent") {
            Some(Protocol::Gemini)
        } else if url.contains("/converse-stream") {
            Some(Protocol::Bedrock)
        } else {
            None
        }
    }
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "OpenAI Chat Completions",
            Protocol::OpenAiResponses => "OpenAI Responses",
            Protocol::Anthropic => "Anthropic Messages",
            Protocol::UiStream => "AI SDK UI message stream",
            Protocol::AgUi => "AG-UI (TanStack AI)",
            Protocol::Gemini => "Gemini streamGenerateContent",
            Protocol::Cohere => "Cohere v2 chat",
            Protocol::Bedrock => "Bedrock ConverseStream",
        }
    }

    /// The terminal event(s), in words.
    pub fn terminal_words(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "a `finish_reason` or `data: [DONE]`",
            Protocol::OpenAiResponses => {
                "`response.completed`, `response.incomplete` or `response.failed`"
            }
            Protocol::Anthropic => "`message_stop`",
            Protocol::UiStream => "a `finish` chunk",
            Protocol::AgUi => "`RUN_FINISHED` or `RUN_ERROR`",
            Protocol::Gemini => "a candidate's `finishReason`",
            Protocol::Cohere => "`message-end`",
            Protocol::Bedrock => "`messageStop`",
        }
    }

    pub fn from_name(name: &str) -> Option<Protocol> {
        Some(match name {
            "openai-chat" => Protocol::OpenAiChat,
            "openai-responses" => Protocol::OpenAiResponses,
            "anthropic" => Protocol::Anthropic,
            "ui-stream" => Protocol::UiStream,
            "ag-ui" => Protocol::AgUi,
            "gemini" => Protocol::Gemini,
            "cohere" => Protocol::Cohere,
            "bedrock" => Protocol::Bedrock,
            _ => return None,
        })
    }
}

const ANTHROPIC_TYPES: [&str; 6] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
];

const UI_TYPES: [&str; 24] = [
    "start",
    "start-step",
    "finish-step",
    "text-start",
    "text-delta",
    "text-end",
    "reasoning-start",
    "reasoning-delta",
    "reasoning-end",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-input-error",
    "tool-output-available",
    "tool-output-error",
    "tool-output-denied",
    "tool-approval-request",
    "finish",
    "abort",
    "message-metadata",
    "source-url",
    "source-document",
    "file",
    "error",
];

/// Cohere v2 chat stream event types: hyphenated like the UI stream's, none of them the same.
pub const COHERE_TYPES: [&str; 11] = [
    "message-start",
    "content-start",
    "content-delta",
    "content-end",
    "tool-plan-delta",
    "tool-call-start",
    "tool-call-delta",
    "tool-call-end",
    "citation-start",
    "citation-end",
    "message-end",
];

/// Bedrock ConverseStream events: an object with one of these keys alone (`metadata` too, but
/// that word alone tells nothing), or an exception (`throttlingException`, …).
pub const BEDROCK_KEYS: [&str; 5] = [
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
];

/// The first key of a JSON object, read without parsing: `{ "messageStart": …` → `messageStart`.
pub fn first_key(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    let key = &rest[..end];
    rest[end + 1..].trim_start().starts_with(':').then_some(key)
}

/// A Bedrock ConverseStream event, by its first key.
pub fn is_bedrock_event(text: &str) -> bool {
    first_key(text).is_some_and(|k| BEDROCK_KEYS.contains(&k) || k.ends_with("Exception"))
}

/// A Gemini `streamGenerateContent` chunk: an object whose first key is one of the response's.
pub fn is_gemini_chunk(text: &str) -> bool {
    matches!(
        first_key(text),
        Some("candidates" | "usageMetadata" | "modelVersion" | "promptFeedback")
    )
}

/// The string value of the first `"type"` key in `text`, read without parsing (works on cut
/// JSON): `{"type":"response.completed","response":{…` → `response.completed`.
pub fn sniff_type(text: &str) -> Option<String> {
    let k = text.find("\"type\"")?;
    let rest = text[k + 6..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_owned())
}

/// Recognises the protocol of a payload, if it tells. `ping` and `error` do not.
pub fn detect(data: &str, event_type: Option<&str>) -> Option<Protocol> {
    let ty = sniff_type(data);
    let by_type = |t: &str| -> Option<Protocol> {
        if t.starts_with("response.") {
            return Some(Protocol::OpenAiResponses);
        }
        if ANTHROPIC_TYPES.contains(&t) {
            return Some(Protocol::Anthropic);
        }
        if COHERE_TYPES.contains(&t) {
            return Some(Protocol::Cohere);
        }
        if t != "error" && (UI_TYPES.contains(&t) || t.starts_with("data-")) {
            return Some(Protocol::UiStream);
        }
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            return Some(Protocol::AgUi);
        }
        None
    };
    if data.contains("\"chat.completion.chunk\"") || (ty.is_none() && data.contains("\"choices\""))
    {
        return Some(Protocol::OpenAiChat);
    }
    if let Some(p) = ty.as_deref().and_then(by_type) {
        return Some(p);
    }
    // By the first key (a nested `"type"` does not hide it).
    if is_gemini_chunk(data) {
        return Some(Protocol::Gemini);
    }
    if is_bedrock_event(data) {
        return Some(Protocol::Bedrock);
    }
    event_type.and_then(by_type)
}

/// Where to point inside the payload: a byte range of the data, or a JSON path to locate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Focus {
    None,
    #[allow(
        dead_code,
        reason = "for problems found at a byte range rather than a JSON path"
    )]
    Range(usize, usize),
    Path(Vec<String>),
}

impl Focus {
    pub fn path(segs: &[&str]) -> Focus {
        Focus::Path(segs.iter().map(|s| (*s).to_owned()).collect())
    }

    /// The data range the focus names, if it can be found.
    pub fn resolve(&self, data: &str) -> Option<(usize, usize)> {
        match self {
            Focus::None => None,
            Focus::Range(s, e) => Some((*s, *e)),
            Focus::Path(p) => {
                let segs: Vec<Seg<'_>> = p
                    .iter()
                    .map(|s| match s.parse::<usize>() {
                        Ok(i) => Seg::Index(i),
                        Err(_) => Seg::Key(s),
                    })
                    .collect();
                locate(data, &segs)
            }
        }
    }
}

/// A protocol rule an event breaks.
#[derive(Clone, Debug)]
pub struct Anomaly {
    pub problem: String,
    pub benign: bool,
    pub focus: Focus,
    pub related: Vec<(Span, String)>,
}

/// An error the provider reported in the stream.
#[derive(Clone, Debug)]
pub struct ProviderError {
    /// `overloaded_error`, `insufficient_quota`, `response.failed`…
    pub name: String,
    pub message: String,
    pub focus: Focus,
    pub data: Value,
}

/// What decoding one payload produced.
#[derive(Debug, Default)]
pub struct Out {
    pub parts: Vec<(PartKind, Focus)>,
    pub anomalies: Vec<Anomaly>,
    pub provider_errors: Vec<ProviderError>,
    /// This event is the protocol's terminal event (its name).
    pub terminal: Option<String>,
    /// A new message or response started: an earlier terminal event no longer ends the stream.
    pub reopened: bool,
    /// The provider's finish reason, when this event gives it.
    pub finish_reason: Option<String>,
    /// The SDK's stream errors here: nothing after this event is decoded.
    pub fatal: bool,
    /// The payload was read without complaint but holds nothing of this protocol's (an object
    /// none of whose keys the protocol has): evidence that the stream is another protocol's.
    pub foreign: bool,
}

impl Out {
    pub fn clear(&mut self) {
        self.parts.clear();
        self.anomalies.clear();
        self.provider_errors.clear();
        self.terminal = None;
        self.reopened = false;
        self.finish_reason = None;
        self.fatal = false;
        self.foreign = false;
    }

    pub fn part(&mut self, kind: PartKind) {
        self.parts.push((kind, Focus::None));
    }

    pub fn part_at(&mut self, kind: PartKind, focus: Focus) {
        self.parts.push((kind, focus));
    }

    /// An error the provider reported in the stream: recorded as such, and handed to the
    /// processors as a stream error part labelled at `part_focus`.
    pub fn provider_error(&mut self, error: ProviderError, retryable: bool, part_focus: Focus) {
        let part = PartKind::Error(StreamError {
            kind: ErrorKind::Provider,
            name: error.name.clone(),
            message: error.message.clone(),
            retryable,
        });
        self.provider_errors.push(error);
        self.part_at(part, part_focus);
    }

    pub fn anomaly(&mut self, problem: impl Into<String>, benign: bool, focus: Focus) {
        self.anomalies.push(Anomaly {
            problem: problem.into(),
            benign,
            focus,
            related: Vec::new(),
        });
    }
}

/// Why a payload was not decoded.
#[derive(Debug)]
pub enum Rejected {
    /// Not JSON.
    Json(serde_json::Error),
    /// JSON, but not the protocol's shape.
    Schema(Vec<SchemaIssue>),
}

/// A protocol decoder: one payload at a time, then `flush` at the end of the stream.
pub trait Decoder {
    fn protocol(&self) -> Protocol;
    /// Decodes one payload (`[DONE]` included).
    fn decode(&mut self, data: &str, at: Span, out: &mut Out) -> Result<(), Rejected>;
    /// The stream ended (the SDK's `flush`).
    fn flush(&mut self, out: &mut Out);
    /// What is still open (blocks, items, tool calls), with where each started.
    fn open_at_end(&self) -> Vec<crate::session::OpenAtEnd>;
}

/// A string field of a JSON object.
pub fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A field rendered as JSON text (strings as they are).
pub fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Decodes `lines` then flushes: the part types, and how many payloads were rejected.
#[cfg(test)]
pub fn run_lines(d: &mut dyn Decoder, lines: &[&str]) -> (Vec<String>, usize) {
    let mut out = Out::default();
    let mut parts = Vec::new();
    let mut rejected = 0;
    let at = Span::new(crate::source::FileId(0), 0, 0);
    for l in lines {
        out.clear();
        if d.decode(l, at, &mut out).is_err() {
            rejected += 1;
        }
        parts.extend(out.parts.iter().map(|(p, _)| p.type_name().to_owned()));
    }
    out.clear();
    d.flush(&mut out);
    parts.extend(out.parts.iter().map(|(p, _)| p.type_name().to_owned()));
    (parts, rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_protocol() {
        assert_eq!(
            detect(
                r#"{"id":"x","object":"chat.completion.chunk","choices":[]}"#,
                None
            ),
            Some(Protocol::OpenAiChat)
        );
        assert_eq!(
            detect(r#"{"choices":[{"delta":{"content":123}}]}"#, None),
            Some(Protocol::OpenAiChat)
        );
        assert_eq!(
            detect(r#"{"type":"response.created","response":{"id":"r""#, None),
            Some(Protocol::OpenAiResponses)
        );
        assert_eq!(
            detect(r#"{"type": "message_start"}"#, None),
            Some(Protocol::Anthropic)
        );
        assert_eq!(
            detect(r#"{"type":"text-delta","id":"1","delta":"x"}"#, None),
            Some(Protocol::UiStream)
        );
        assert_eq!(
            detect(r#"{"type":"RUN_STARTED","threadId":"t"}"#, None),
            Some(Protocol::AgUi)
        );
        assert_eq!(
            detect(r#"{"type":"content-delta","index":0}"#, None),
            Some(Protocol::Cohere)
        );
        assert_eq!(
            detect(r#"{"delta":{}}"#, Some("tool-plan-delta")),
            Some(Protocol::Cohere)
        );
        assert_eq!(
            detect(r#"{"candidates":[{"content":{"parts":[]}}]}"#, None),
            Some(Protocol::Gemini)
        );
        assert_eq!(
            detect(r#"{ "contentBlockDelta": {"contentBlockIndex":0}}"#, None),
            Some(Protocol::Bedrock)
        );
        assert_eq!(
            detect(r#"{"metadata":{"serviceTier":{"type":"default"}}}"#, None),
            None
        );
        assert_eq!(detect(r#"{"type":"ping"}"#, None), None);
        assert_eq!(detect(r#"{"type":"error"}"#, None), None);
        assert_eq!(
            detect(r#"{"type":"ping"}"#, Some("message_start")),
            Some(Protocol::Anthropic)
        );
        assert_eq!(
            sniff_type(r#"{"type" : "response.completed","x""#).as_deref(),
            Some("response.completed")
        );
    }
}
