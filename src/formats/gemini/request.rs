//! The next request of a Gemini CLI session, rebuilt the way Gemini CLI 0.61.0 builds it on
//! `--resume`: the stored messages converted to contents (`convertSessionToClientHistory`, done
//! in `replay.rs`: a Gemini message is a model turn of its thoughts, text and `functionCall`s,
//! followed by a user turn of its calls' results), then consecutive turns of one role sent as
//! one content (observed in the requests 0.61.0 sent to a scripted provider). A history that
//! ends with a user turn of `functionResponse`s gets a closing model turn
//! (`closeUnansweredToolResponseTurn`: "[The previous response was interrupted before it
//! completed.]"), so the next prompt stays a turn of its own.
//!
//! The context the client adds in front of the history (`<session_context>`), the system
//! instruction and the tools are not rebuilt: the request holds the conversation's roles, parts
//! and call ids.

use crate::formats::transcript::request::rebuilt;
use crate::request::{Block, BlockKind, ModelMessage, ModelRequest, Provider, Role};
use crate::session::Analysis;

/// The request Gemini CLI sends next, when `analysis` is its session's.
pub fn next_request(analysis: &Analysis) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    let mut messages = merge(&facts.history);
    let ends_in_results = messages.last().is_some_and(|m| {
        m.role == Role::User && m.content.iter().any(|b| b.tool_result_id().is_some())
    });
    if ends_in_results {
        messages.push(ModelMessage {
            role: Role::Assistant,
            content: vec![Block::new(BlockKind::Text)],
            span: None,
            message_id: None,
        });
    }
    Some(rebuilt(analysis, Provider::Google, messages))
}

/// Consecutive contents of one role as one.
pub fn merge(history: &[ModelMessage]) -> Vec<ModelMessage> {
    let mut out: Vec<ModelMessage> = Vec::with_capacity(history.len());
    for m in history {
        match out.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(m.content.iter().cloned()),
            _ => out.push(m.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::transcript::request::test_history::{call, msg};

    #[test]
    fn turns_of_one_role_are_one_content() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(Role::User, vec![BlockKind::Text], "u2"),
            msg(Role::Assistant, vec![BlockKind::Text, call("c1")], "g1"),
            msg(
                Role::User,
                vec![BlockKind::ToolResult {
                    id: "c1".into(),
                    is_error: false,
                }],
                "g1_response",
            ),
        ];
        let out = merge(&history);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].content.len(), 2);
        assert_eq!(out[0].message_id.as_deref(), Some("u1"));
    }
}
