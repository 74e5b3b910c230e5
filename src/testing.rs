//! Helpers for the crate's unit tests.

/// A reproducible stream of pseudo-random numbers (xorshift64).
pub fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// Input kinds for unit tests that build a session model by hand.
pub mod formats {
    use crate::core::Format;

    pub const AGENT_LOG: Format = Format::AgentLog;
    pub const SSE: Format = Format::Sse;
    pub const OPENCODE_EXPORT: Format = Format::OpencodeExport;
    pub const CLAUDE_CODE: Format = Format::ClaudeTranscript;
    pub const CODEX: Format = Format::CodexRollout;
}
