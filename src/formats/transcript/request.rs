//! What the rebuilt next requests of Claude Code and Codex share (each client's rebuild is in
//! its own folder: `claude_code/request.rs`, `codex/request.rs`), and the test that holds both
//! against what the real clients sent.

use crate::request::{ModelMessage, ModelRequest, Provider};
use crate::session::Analysis;

/// The next request of a transcript's session, of `messages` rebuilt from its history.
pub fn rebuilt(
    analysis: &Analysis,
    provider: Provider,
    messages: Vec<ModelMessage>,
) -> ModelRequest {
    ModelRequest {
        provider,
        messages,
        span: None,
        origin: "the next request (rebuilt from the active history)".to_owned(),
        // Claude Code 2.1.197 asks for adaptive thinking, under which the model may answer
        // without thinking, so a message using tools need not start with it; the thinking
        // there is, `thinking-modified` compares with the stored response.
        thinking: false,
        response: None,
        session_id: analysis.sessions.first().map(|s| s.id.clone()),
    }
}

/// Stored histories for the rebuilds' unit tests.
#[cfg(test)]
pub mod test_history {
    use crate::request::{Block, BlockKind, ModelMessage, Role};

    /// A stored message of `role` with `blocks`, stored as `id`.
    pub fn msg(role: Role, blocks: Vec<BlockKind>, id: &str) -> ModelMessage {
        ModelMessage {
            role,
            content: blocks.into_iter().map(Block::new).collect(),
            span: None,
            message_id: Some(id.into()),
        }
    }

    /// A `Bash` call `id`.
    pub fn call(id: &str) -> BlockKind {
        BlockKind::ToolCall {
            id: id.into(),
            name: "Bash".into(),
        }
    }
}
