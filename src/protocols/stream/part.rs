//! The normalized stream: what every protocol decoder produces and every processor consumes.
//!
//! The parts have the shape of the AI SDK's LanguageModel stream parts as `streamText` hands them
//! to an agent's processor (`fullStream`): text and reasoning start/delta/end, tool input
//! start/delta/end, tool-call, tool-result, tool-error, start-step/finish-step, error, finish and
//! abort. Each decoder reproduces what the SDK's provider adapter emits for its protocol.

/// Why a stream `error` part was emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The payload is not JSON (`AI_JSONParseError`).
    JsonParse,
    /// The payload is JSON but not the protocol's shape (`AI_TypeValidationError`).
    TypeValidation,
    /// The provider reported an error in the stream.
    Provider,
    /// The stream broke the protocol (`AI_InvalidResponseDataError`).
    InvalidResponse,
}

/// An `error` part's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamError {
    pub kind: ErrorKind,
    /// The error class as the agent logs it (`AI_JSONParseError`, `overloaded_error`, …).
    pub name: String,
    pub message: String,
    /// Whether the agent's retry logic would retry it (provider errors only).
    pub retryable: bool,
}

impl StreamError {
    /// A payload decode error: the kind of failure a skip-and-continue processor skips.
    pub fn is_parse_error(&self) -> bool {
        matches!(self.kind, ErrorKind::JsonParse | ErrorKind::TypeValidation)
    }
}

/// One normalized stream part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// The response's metadata (its id), once per model call.
    ResponseMetadata {
        id: Option<String>,
    },
    StartStep,
    FinishStep {
        reason: String,
        input_tokens: u64,
        output_tokens: u64,
    },
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    ReasoningStart {
        id: String,
    },
    ReasoningDelta {
        id: String,
        delta: String,
    },
    ReasoningEnd {
        id: String,
    },
    ToolInputStart {
        id: String,
        name: String,
        provider_executed: bool,
    },
    ToolInputDelta {
        id: String,
        delta: String,
    },
    ToolInputEnd {
        id: String,
    },
    ToolCall {
        id: String,
        name: String,
        input: String,
        provider_executed: bool,
    },
    ToolResult {
        id: String,
        name: String,
        output: String,
    },
    ToolError {
        id: String,
        name: String,
        error: String,
    },
    Error(StreamError),
    Finish {
        reason: String,
    },
    Abort {
        reason: Option<String>,
    },
}

impl PartKind {
    #[cfg(test)]
    /// The AI SDK's name of the part type.
    pub fn type_name(&self) -> &'static str {
        match self {
            PartKind::ResponseMetadata { .. } => "response-metadata",
            PartKind::StartStep => "start-step",
            PartKind::FinishStep { .. } => "finish-step",
            PartKind::TextStart { .. } => "text-start",
            PartKind::TextDelta { .. } => "text-delta",
            PartKind::TextEnd { .. } => "text-end",
            PartKind::ReasoningStart { .. } => "reasoning-start",
            PartKind::ReasoningDelta { .. } => "reasoning-delta",
            PartKind::ReasoningEnd { .. } => "reasoning-end",
            PartKind::ToolInputStart { .. } => "tool-input-start",
            PartKind::ToolInputDelta { .. } => "tool-input-delta",
            PartKind::ToolInputEnd { .. } => "tool-input-end",
            PartKind::ToolCall { .. } => "tool-call",
            PartKind::ToolResult { .. } => "tool-result",
            PartKind::ToolError { .. } => "tool-error",
            PartKind::Error(_) => "error",
            PartKind::Finish { .. } => "finish",
            PartKind::Abort { .. } => "abort",
        }
    }
}

/// Maps a provider's finish reason onto the AI SDK's unified values.
pub fn unified_finish(raw: &str) -> &'static str {
    match raw {
        "stop" | "end_turn" | "stop_sequence" | "pause_turn" | "completed" => "stop",
        "length" | "max_tokens" | "max_output_tokens" | "model_context_window_exceeded" => "length",
        "content_filter" | "refusal" | "content-filter" => "content-filter",
        "tool_calls" | "function_call" | "tool_use" | "tool-calls" => "tool-calls",
        "error" => "error",
        _ => "other",
    }
}
