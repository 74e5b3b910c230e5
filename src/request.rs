//! The model's input as data: [`ModelRequest`]s made of [`ModelMessage`]s with the roles and
//! blocks of the AI SDK's model messages (system, user, assistant, tool; text, reasoning,
//! tool-call, tool-result), in a provider-neutral shape.
//!
//! The reconstruct stage builds them (from recorded request bodies, or by rebuilding a session the
//! way the agent does) and adds them to the session's `Analysis`;
//! checks read them. This module only defines the shape, so the session model does not depend on
//! the stage that fills it in.

use crate::source::Span;

/// Which provider's rules a request is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions or Responses.
    OpenAi,
    /// Google's Gemini API (`generateContent`'s `contents`).
    Google,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "Anthropic",
            Provider::OpenAi => "OpenAI",
            Provider::Google => "Google",
        }
    }
}

/// A request as the model receives it.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    pub provider: Provider,
    pub messages: Vec<ModelMessage>,
    /// Where the request is (a recorded body), if anywhere.
    pub span: Option<Span>,
    /// What the request is, in words: "recorded request 1", "request rebuilt from ses_…".
    pub origin: String,
    /// Extended thinking is on (Anthropic then requires thinking before tool use).
    pub thinking: bool,
    /// The response that was recorded for it, if any.
    pub response: Option<RecordedResponse>,
    /// The session the request was rebuilt from.
    pub session_id: Option<String>,
}

/// A recorded HTTP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedResponse {
    pub status: u16,
    /// The provider's error message, when the body is an error.
    pub error: Option<String>,
    pub span: Option<Span>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of a request.
#[derive(Clone, Debug)]
pub struct ModelMessage {
    pub role: Role,
    pub content: Vec<Block>,
    pub span: Option<Span>,
    /// The stored message it was rebuilt from.
    pub message_id: Option<String>,
}

/// One content block.
#[derive(Clone, Debug)]
pub struct Block {
    pub kind: BlockKind,
    pub span: Option<Span>,
    /// The stored part it was rebuilt from.
    pub part_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Text,
    Reasoning,
    /// A tool call (`tool_use`, `function_call`).
    ToolCall {
        id: String,
        name: String,
    },
    /// A tool's result (`tool_result`, `function_call_output`).
    ToolResult {
        id: String,
        is_error: bool,
    },
    /// Anything else (images, files, server tools…), by its type name.
    Other(String),
}

impl Block {
    pub fn new(kind: BlockKind) -> Self {
        Self {
            kind,
            span: None,
            part_id: None,
        }
    }

    pub fn tool_call_id(&self) -> Option<&str> {
        match &self.kind {
            BlockKind::ToolCall { id, .. } => Some(id),
            _ => None,
        }
    }

    pub fn tool_result_id(&self) -> Option<&str> {
        match &self.kind {
            BlockKind::ToolResult { id, .. } => Some(id),
            _ => None,
        }
    }
}
