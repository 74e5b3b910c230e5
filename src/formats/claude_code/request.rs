//! The next request of a Claude Code session, rebuilt from its transcript's stored history the
//! way Claude Code 2.1.197 does it: consecutive messages of one role are one message (the
//! Messages API wants them alternating), and a `tool_use` that the next message does not answer
//! is left out (an assistant message left empty goes with it) — on resume the client branches
//! from the record before it, so the call is never sent.
//!
//! Attachments, system reminders, instructions and tool definitions are not rebuilt: the request
//! holds the conversation's roles, block order and ids.

use crate::formats::transcript::request::rebuilt;
use crate::request::{Block, ModelMessage, ModelRequest, Provider};
use crate::session::Analysis;

/// The request Claude Code sends next, when `analysis` is its transcript's.
pub fn next_request(analysis: &Analysis) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    Some(rebuilt(
        analysis,
        Provider::Anthropic,
        rebuild(&facts.history),
    ))
}

/// Merges runs of one role and drops unanswered `tool_use` blocks.
pub fn rebuild(history: &[ModelMessage]) -> Vec<ModelMessage> {
    let mut merged: Vec<ModelMessage> = Vec::new();
    for m in history {
        match merged.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(m.content.iter().cloned()),
            _ => merged.push(m.clone()),
        }
    }
    // The call ids each message answers, for its previous message's calls.
    let results: Vec<crate::FastSet<&str>> = merged
        .iter()
        .map(|m| m.content.iter().filter_map(Block::tool_result_id).collect())
        .collect();
    let answered = |i: usize, id: &str| results.get(i + 1).is_some_and(|r| r.contains(id));
    let keep: Vec<Vec<bool>> = merged
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.content
                .iter()
                .map(|b| b.tool_call_id().is_none_or(|id| answered(i, id)))
                .collect()
        })
        .collect();
    let mut out: Vec<ModelMessage> = Vec::new();
    for (m, keep) in merged.into_iter().zip(keep) {
        let content: Vec<Block> = m
            .content
            .into_iter()
            .zip(keep)
            .filter_map(|(b, k)| k.then_some(b))
            .collect();
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == m.role => last.content.extend(content),
            _ => out.push(ModelMessage { content, ..m }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{BlockKind, Role};

    fn msg(role: Role, blocks: Vec<BlockKind>, id: &str) -> ModelMessage {
        ModelMessage {
            role,
            content: blocks.into_iter().map(Block::new).collect(),
            span: None,
            message_id: Some(id.into()),
        }
    }

    fn call(id: &str) -> BlockKind {
        BlockKind::ToolCall {
            id: id.into(),
            name: "Bash".into(),
        }
    }

    fn shape(ms: &[ModelMessage]) -> Vec<(Role, Vec<BlockKind>)> {
        ms.iter()
            .map(|m| (m.role, m.content.iter().map(|b| b.kind.clone()).collect()))
            .collect()
    }

    #[test]
    fn claude_code_drops_an_unanswered_tool_use() {
        let history = vec![
            msg(Role::User, vec![BlockKind::Text], "u1"),
            msg(Role::Assistant, vec![BlockKind::Text, call("t1")], "m1"),
            msg(Role::User, vec![BlockKind::Text], "u2"),
        ];
        assert_eq!(
            shape(&rebuild(&history)),
            vec![
                (Role::User, vec![BlockKind::Text]),
                (Role::Assistant, vec![BlockKind::Text]),
                (Role::User, vec![BlockKind::Text]),
            ]
        );
    }
}
