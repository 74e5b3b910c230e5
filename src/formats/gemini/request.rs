//! The next request of a Gemini CLI session, rebuilt the way Gemini CLI 0.61.0 builds it on
//! `--resume`: the stored messages converted to contents (`convertSessionToClientHistory`, done
//! in `replay.rs`: a Gemini message is a model turn of its thoughts, text and `functionCall`s,
//! followed by a user turn of its calls' results), then consecutive turns of one role sent as
//! one content (observed in the requests 0.61.0 sent to a scripted provider).
//!
//! The context the client adds in front of the history (`<session_context>`), the system
//! instruction and the tools are not rebuilt: the request holds the conversation's roles, parts
//! and call ids.

use crate::formats::transcript::request::rebuilt;
use crate::request::{ModelMessage, ModelRequest, Provider};
use crate::session::Analysis;

/// The request Gemini CLI sends next, when `analysis` is its session's.
pub fn next_request(analysis: &Analysis) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    Some(rebuilt(analysis, Provider::Google, merge(&facts.history)))
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
    use crate::request::{BlockKind, Role};

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
